"""The lock is what it claims, targets are replaced only when that loses nothing (issue 21)."""

from __future__ import annotations

import copy
import errno
import importlib
import json
import importlib.util
import os
import pickle
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import bob
import bob.arrays
import bob.lock
import bob.run
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CORPUS, PROMPTS

BIN = Path(sys.executable).parent


@pytest.fixture
def work(tmp_path: Path) -> Path:
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    return tmp_path


def argv(work: Path, ck: str = "ck.bin", pred: str = "pred.bin") -> list[str]:
    return ["--input", str(work / "rec.bin"), "--checkpoint", str(work / ck), "--predictions", str(work / pred)]


def step_of(path: Path) -> int:
    return bob.read_checkpoint_file(path).step


def test_a_lock_file_deleted_while_held_stops_the_holder_from_committing(work: Path, monkeypatch, capsys) -> None:
    """A deletes the lock file of a run that holds it; a second run takes a new
    lock and commits; the first run sees at its commit that its lock is gone
    and refuses, so no update is lost."""
    assert bob.run.main(argv(work)) == 0
    real_advance = bob.invocation.advance
    second = {}

    def advance_then_meddle(*args, **kwargs):
        result = real_advance(*args, **kwargs)
        os.unlink(work / ".ck.bin.bob-lock")  # someone "cleans up" while this run holds it
        second["rc"] = subprocess.run([str(BIN / "bob-run"), *argv(work, pred="pred2.bin")],
                                      capture_output=True).returncode
        return result

    monkeypatch.setattr(bob.invocation, "advance", advance_then_meddle)
    before = (work / "pred.bin").read_bytes()
    assert bob.run.main(argv(work)) == 75
    assert "was deleted or replaced while this run held it" in capsys.readouterr().err
    assert second["rc"] == 0 and step_of(work / "ck.bin") == 2 * U  # the second run's update stands alone
    assert (work / "pred.bin").read_bytes() == before


def test_a_lock_file_replaced_after_flock_is_retried(work: Path, monkeypatch) -> None:
    """After flock, the descriptor must still be the lock path's file: a
    holder that removed it (as every holder does) makes the waiter lock anew."""
    real = bob.lock.TargetLock._wait_for
    calls = []

    def swap_then_wait(self, fd, deadline):
        real(self, fd, deadline)
        if self.option != "--checkpoint":  # (the predictions' lock is taken as it was)
            return
        if not calls:
            os.unlink(self.path)  # as a finishing holder removes it, after we opened it
            Path(self.path).write_bytes(b"")
        calls.append(fd)

    monkeypatch.setattr(bob.lock.TargetLock, "_wait_for", swap_then_wait)
    assert bob.run.main(argv(work)) == 0
    assert len(calls) == 2 and not (work / ".ck.bin.bob-lock").exists()


def test_a_lock_path_hard_linked_to_the_checkpoint_is_refused_never_truncated(work: Path, capsys) -> None:
    assert bob.run.main(argv(work)) == 0
    good = (work / "ck.bin").read_bytes()
    os.link(work / "ck.bin", work / ".ck.bin.bob-lock")
    assert bob.run.main(argv(work)) == 2
    err = capsys.readouterr().err
    assert "its lock file" in err and "hard links" in err and "nothing was changed" in err
    assert (work / "ck.bin").read_bytes() == good


def test_predictions_may_not_name_the_checkpoints_lock_file(work: Path, capsys) -> None:
    assert bob.run.main(argv(work, pred=".ck.bin.bob-lock")) == 2
    err = capsys.readouterr().err
    assert err == f"bob-run: refused: --predictions {work / '.ck.bin.bob-lock'}: names the checkpoint's lock file; " \
                  "choose another path\n"
    assert not (work / "ck.bin").exists()


@pytest.mark.parametrize("option", ["--predictions", "--checkpoint"])
def test_no_output_may_name_another_runs_lock_file(work: Path, capsys, option: str) -> None:
    """--predictions .other.bin.bob-lock wrote predictions over a lock another run held (exit 0), and that
    checkpoint's next run was refused for ever ("holds 24 bytes that are not a pid")."""
    lock = work / ".other.bin.bob-lock"
    lock.write_bytes(b"4242\n")
    args = argv(work, pred=lock.name) if option == "--predictions" else [
        "--input", str(work / "rec.bin"), "--checkpoint", str(lock), "--predictions", str(work / "pred.bin")]
    assert bob.run.main(args) == 2
    assert capsys.readouterr().err == f"bob-run: refused: {option} {lock}: names a bob-run lock file " \
                                      "(.NAME.bob-lock); choose another path\n"
    assert lock.read_bytes() == b"4242\n"


def test_two_targets_whose_lock_files_are_one_are_locked_once(work: Path) -> None:
    """A long name's lock is `.PREFIX~HASH.bob-lock`, which is also the lock of the name `PREFIX~HASH`: a run
    replacing both takes that lock once (it waited for itself, exit 75), and two such runs order it by place."""
    long = "c" * 250
    short = os.path.basename(bob.lock.lock_path_for(str(work / long)))[1:-len(bob.lock.LOCK_TAG)]
    assert bob.lock.lock_path_for(str(work / short)) == bob.lock.lock_path_for(str(work / long))
    assert bob.run.main(argv(work, ck=long, pred=short)) == 0 and step_of(work / long) == U
    assert sorted(p.name for p in work.iterdir()) == sorted([long, short, "rec.bin"])


def test_readme_s_long_name_figures_are_where_the_lock_name_changes() -> None:
    """README: a name over 214 bytes gets `.PREFIX~HASH.bob-lock`, PREFIX its first 197 bytes."""
    import re

    from conftest import ROOT

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    longest, kept = (int(n) for n in re.search(r"name over (\d+) bytes.*?first (\d+) bytes", readme, re.S).groups())
    assert bob.lock.lock_path_for("/d/" + "c" * longest) == f"/d/.{'c' * longest}.bob-lock"
    hashed = os.path.basename(bob.lock.lock_path_for("/d/" + "c" * (longest + 1)))
    assert re.fullmatch(rf"\.c{{{kept}}}~[0-9a-f]{{16}}\.bob-lock", hashed), hashed


def test_a_checkpoint_name_of_250_bytes_has_a_lock_within_name_max(work: Path) -> None:
    name = "c" * 250
    assert bob.run.main(argv(work, ck=name)) == 0
    assert step_of(work / name) == U
    lock = bob.lock.lock_path_for(str(work / name))
    assert len(os.path.basename(lock).encode()) <= 255
    other = bob.lock.lock_path_for(str(work / ("c" * 249 + "d")))
    assert other != lock  # a long name is hashed whole, not cut to a shared prefix
    assert bob.run.main(argv(work, ck=name)) == 0 and step_of(work / name) == 2 * U


@pytest.mark.parametrize("which", ["ck.bin", "pred.bin"])
def test_a_target_with_two_hard_links_is_refused(work: Path, capsys, which: str) -> None:
    assert bob.run.main(argv(work)) == 0
    os.link(work / which, work / "second-name")
    before = {p: (work / p).read_bytes() for p in ("ck.bin", "pred.bin")}
    assert bob.run.main(argv(work)) == 2
    option = "--checkpoint" if which == "ck.bin" else "--predictions"
    err = capsys.readouterr().err
    assert f"refused: {option} " in err and "2 hard links" in err
    assert {p: (work / p).read_bytes() for p in before} == before


@pytest.mark.parametrize("which", ["ck.bin", "pred.bin"])
def test_a_read_only_target_is_refused(work: Path, capsys, which: str) -> None:
    assert bob.run.main(argv(work)) == 0
    os.chmod(work / which, 0o444)
    before = (work / which).read_bytes()
    assert bob.run.main(argv(work)) == 2
    assert "read-only (mode 0444)" in capsys.readouterr().err
    assert (work / which).read_bytes() == before
    with pytest.raises(bob.fileio.NotReplaceable):
        bob.write_atomic(work / which, b"x")


def test_paths_are_resolved_by_the_kernel_not_as_strings(work: Path, capsys) -> None:
    assert bob.run.main(["--input", str(work / "rec.bin"), "--checkpoint", str(work / "nope" / ".." / "ck"),
                         "--predictions", str(work / "pred.bin")]) == 2
    assert "--checkpoint" in capsys.readouterr().err and not (work / "ck").exists()
    (work / "file").write_bytes(b"")
    assert bob.run.main(["--input", str(work / "rec.bin"), "--checkpoint", str(work / "file" / ".." / "ck"),
                         "--predictions", str(work / "pred.bin")]) == 2
    assert not (work / "ck").exists()


def test_a_deleted_working_directory_is_refused_naming_the_option(work: Path) -> None:
    gone = work / "gone"
    gone.mkdir()
    script = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from bob.run import main; "
              "sys.exit(main(['--input', sys.argv[2], '--checkpoint', 'ck', '--predictions', 'pred']))")
    out = subprocess.run([sys.executable, "-c", script, str(gone), str(work / "rec.bin")], capture_output=True,
                         text=True)
    assert out.returncode == 2, out.stderr
    assert out.stderr == ("bob-run: refused: --checkpoint ck: a relative path, and the working directory no "
                          "longer exists\n")


@pytest.mark.parametrize("command", [["bob-inspect", "ck"], ["bob-inspect", "checkpoint", "ck"],
                                     ["bob-inspect", "diff", "ck", "ck"], ["bob-fuzz", "replay", "ck"],
                                     ["bob-fuzz", "conformance", "ck"],
                                     ["bob-fuzz", "check", "--format", "input", "--corpus", "ck", "--", "true"],
                                     ["bob-fuzz", "check", "--format", "input", "--", "./ck", "{}"],
                                     ["bob-fuzz", "run", "input", "--engine", "loop", "--runs", "1", "--artifacts", "ck"],
                                     pytest.param(["bob-fuzz", "run", "input", "--runs", "1", "--corpus", "ck"], marks=pytest.mark.skipif(
                                         importlib.util.find_spec("atheris") is None, reason="the fuzz extra"))])
def test_a_deleted_working_directory_is_named_by_every_reader(work: Path, command: "list[str]") -> None:
    """Not "no such file": the file may well be there, in the directory that was deleted."""
    gone = work / "gone"
    gone.mkdir()
    script = ("import os, subprocess, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
              "sys.exit(subprocess.run(sys.argv[2:]).returncode)")
    out = subprocess.run([sys.executable, "-c", script, str(gone), str(Path(sys.executable).parent / command[0]),
                          *command[1:]], capture_output=True, text=True)
    assert out.returncode == 2 and "ck: a relative path, and the working directory no longer exists\n" in out.stderr, \
        out.stderr


def test_out_of_memory_is_unexpected_not_refused(work: Path) -> None:
    """ulimit -v: the machine's shortage says nothing about the files (exit 1, not 2)."""
    script = ("import sys, bob.invocation, bob.run\n"
              "def hungry(*a, **k): raise MemoryError()\n"
              "bob.invocation.advance = hungry\n"
              "sys.exit(bob.run.main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", script, *argv(work)], capture_output=True, text=True)
    assert out.returncode == 1 and "bob-run: out of memory" in out.stderr, out.stderr
    assert not (work / "ck.bin").exists()
    # An errno of the machine's (ENOMEM, EMFILE) from a file operation is exit 1 too, not "refused".
    script = ("import errno, os, sys, bob.fileio, bob.run\n"
              "def stage(target, data, *args, **kwargs): raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))\n"
              "bob.fileio.stage = stage\nsys.exit(bob.run.main(sys.argv[1:]))")
    out = subprocess.run([sys.executable, "-c", script, *argv(work)], capture_output=True, text=True)
    assert out.returncode == 1 and out.stderr == f"bob-run: --predictions {work / 'pred.bin'}: too many open files\n", \
        out.stderr  # (the option and the path named: it was "unexpected error: OSError: [Errno 24] …", repr and all)
    assert not (work / "ck.bin").exists()


OUT_OF_MEMORY = """
import fcntl, resource, sys
import bob.commit, bob.lock, bob.core, bob.formats.canonical, bob.formats.checkpoint.header, bob.invocation
import bob.run, bob.signals
def address_space():
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
# ulimit -v, a little above what the process holds once bob is imported
resource.setrlimit(resource.RLIMIT_AS, (address_space() + 200_000, resource.RLIM_INFINITY))
sys.exit(bob.run.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("resumed", [False, True], ids=["fresh", "resumed"])
def test_an_address_space_shortage_is_exit_1_and_changes_nothing(work: Path, resumed: bool) -> None:
    if resumed:
        assert bob.run.main(argv(work)) == 0
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    out = subprocess.run([sys.executable, "-c", OUT_OF_MEMORY, *argv(work)], capture_output=True, text=True)
    assert out.returncode == 1, out.stderr
    assert "refused" not in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert {p.name: p.read_bytes() for p in work.iterdir()} == before


@pytest.fixture
def request_cleanup():
    made: list[Path] = []
    yield made
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def test_a_stale_lock_of_another_user_in_a_sticky_directory_does_not_lock_the_owner_out(request_cleanup) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second user")
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="bob-sticky-", dir="/tmp"))  # tmp_path's parents are root's alone
    request_cleanup.append(shared)
    os.chmod(shared, 0o1777)
    bob.build_input(CORPUS, PROMPTS).write(shared / "rec.bin")
    os.chmod(shared / "rec.bin", 0o644)
    # another user's run was killed holding the lock: its file stays, theirs, 0644
    lock = shared / ".ck.bin.bob-lock"
    lock.write_bytes(b"12345\n")
    os.chown(lock, 65534, 65534)
    os.chmod(lock, 0o644)
    owner = 4242
    args = ["--input", str(shared / "rec.bin"), "--checkpoint", str(shared / "ck.bin"),
            "--predictions", str(shared / "pred.bin")]
    for module in ("bob.formats.canonical", "bob.formats.checkpoint.header", "bob.invocation", "bob.formats.constants"):
        importlib.import_module(module)  # what the run imports lazily, loaded before the fork

    child = os.fork()  # a second user in a forked child: root's interpreter is not theirs to execute
    if child == 0:
        code = 99
        try:
            os.setgid(owner)
            os.setuid(owner)
            code = bob.run.main(args)
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert os.stat(shared / "ck.bin").st_uid == owner and step_of(shared / "ck.bin") == U
    assert lock.read_bytes() == b"12345\n"  # theirs, opened read-only: flock needs no write access


def run_as(uid: int, args: list[str], out: Path) -> int:
    """``bob-run --json ARGS`` as user ``uid`` in a forked child (root's interpreter is not theirs to
    execute), its stdout in ``out``; the exit code."""
    for module in ("bob.formats.canonical", "bob.formats.checkpoint.header", "bob.invocation", "bob.formats.constants"):
        importlib.import_module(module)  # what the run imports lazily, loaded before the fork
    child = os.fork()
    if child == 0:
        code = 99
        try:
            with open(out, "w", encoding="utf-8") as sys.stdout:
                os.setgid(uid)
                os.setuid(uid)
                code = bob.run.main(["--json", *args])
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])


@pytest.mark.parametrize("sticky", [True, False])
@pytest.mark.parametrize("option", ["--predictions", "--checkpoint", "--trace"])
def test_another_users_file_is_refused_before_anything_is_written(request_cleanup, sticky: bool,
                                                                   option: str) -> None:
    """Another user's file that this user may write (0666) but, in a sticky directory, not rename over,
    or one this user may not write (0644): refused naming the option, nothing written, nothing left."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second user")
    import json
    import tempfile

    shared = Path(tempfile.mkdtemp(prefix="bob-sticky-", dir="/tmp"))
    request_cleanup.append(shared)
    os.chmod(shared, 0o1777 if sticky else 0o777)
    bob.build_input(CORPUS, PROMPTS).write(shared / "rec.bin")
    theirs = shared / "theirs.bin"
    if option == "--checkpoint":
        bob.invoke(bob.build_input(CORPUS, PROMPTS).to_bytes(), b"").checkpoint.write(theirs)
    else:
        theirs.write_bytes(b"their file")
    os.chown(theirs, 65534, 65534)
    os.chmod(theirs, 0o666 if sticky else 0o644)
    files = {"--input": "rec.bin", "--checkpoint": "ck.bin", "--predictions": "pred.bin", "--trace": "run.trace",
             option: theirs.name}
    before = theirs.read_bytes()
    out = Path(tempfile.mkdtemp(prefix="bob-out-", dir="/tmp")) / "out.json"
    request_cleanup.append(out.parent)
    assert run_as(4242, [a for o, name in files.items() for a in (o, str(shared / name))], out) == 2
    error = json.loads(out.read_text())["error"]
    assert error["option"] == option and error["path"] == str(theirs)
    why = "another user's (uid 65534) in a sticky directory" if sticky else "this user (uid 4242) cannot write it"
    assert why in error["message"]
    assert theirs.read_bytes() == before and os.stat(theirs).st_nlink == 1
    assert sorted(p.name for p in shared.iterdir()) == ["rec.bin", "theirs.bin"]


@pytest.mark.parametrize("option", ["--predictions", "--checkpoint"])
def test_a_directory_bob_can_write_but_not_read_is_refused_before_the_commit(request_cleanup, option: str) -> None:
    """In a directory of mode 0300 the directory could not be opened to sync it, and bob-run said nothing:
    exit 0, the predictions' rename not durable before the checkpoint's (a power loss could leave the new
    checkpoint beside the old predictions), or, the checkpoint alone there, its rename never made durable.
    Now refused, nothing changed."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second user")
    import json
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="bob-write-only-", dir="/tmp"))
    request_cleanup.append(home)
    bob.build_input(CORPUS, PROMPTS).write(home / "rec.bin")
    for name, mode in (("out", 0o300), ("other", 0o755)):
        (home / name).mkdir(mode=mode)
        os.chown(home / name, 4242, 4242)
    os.chmod(home, 0o755)
    paths = {"--checkpoint": home / "other" / "ck.bin", "--predictions": home / "other" / "pred.bin"}
    paths[option] = home / "out" / paths[option].name
    files = ["--input", str(home / "rec.bin"), *(a for o, path in paths.items() for a in (o, str(path)))]
    assert run_as(4242, files, home / "out.json") == 2
    error = json.loads((home / "out.json").read_text())["error"]
    assert error["option"] == option and error["message"] == ("its directory could not be synced before the "
                                                             "commit (permission denied); the checkpoint was not replaced")
    assert sorted(p.name for p in (home / "out").iterdir()) == [] == sorted(p.name for p in (home / "other").iterdir())


@pytest.mark.parametrize("option", ["--predictions", "--trace"])
def test_a_file_this_user_may_write_but_not_read_is_replaced(request_cleanup, option: str) -> None:
    """A 0200 predictions file or trace (writable, not readable): the check that the renamed file still holds
    this run's bytes could not read it, called it another process's, exit 75, and left the new file beside
    the old checkpoint (its backup dropped). Its inode, mtime and size tell instead: committed, exit 0."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as a second user")
    import json
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="bob-write-only-file-", dir="/tmp"))
    request_cleanup.append(home)
    bob.build_input(CORPUS, PROMPTS).write(home / "rec.bin")
    (home / "out").mkdir()
    os.chown(home / "out", 4242, 4242)
    os.chmod(home, 0o755)
    files = {"--input": home / "rec.bin", "--checkpoint": home / "out" / "ck.bin",
             "--predictions": home / "out" / "pred.bin", "--trace": home / "out" / "run.trace"}
    argv = [a for o, path in files.items() for a in (o, str(path))]
    assert run_as(4242, argv, home / "first.json") == 0
    os.chmod(files[option], 0o200)
    assert run_as(4242, argv, home / "second.json") == 0, (home / "second.json").read_text()
    record = bob.build_input(CORPUS, PROMPTS)
    second = bob.invoke(record, bob.invoke(record, b"", threads=1).checkpoint, threads=1, trace=True)
    assert [files[o].read_bytes() for o in ("--checkpoint", "--predictions", "--trace")] == [
        second.checkpoint_bytes(), second.predictions_bytes(), second.trace_bytes()]
    assert sorted(p.name for p in (home / "out").iterdir()) == ["ck.bin", "pred.bin", "run.trace"]


def test_a_file_at_the_lock_path_that_holds_more_than_a_pid_is_refused_never_removed(work: Path, capsys) -> None:
    """A checkpoint once written at ``.ck.bin.bob-lock`` (by the library: bob-run refuses that name) is not
    ck.bin's lock: refused, kept whole."""
    bob.invoke((work / "rec.bin").read_bytes(), b"").checkpoint.write(work / ".ck.bin.bob-lock")
    kept = (work / ".ck.bin.bob-lock").read_bytes()
    assert bob.run.main(argv(work)) == 2
    err = capsys.readouterr().err
    assert f"bytes that are not a pid" in err and "nothing was changed" in err
    assert (work / ".ck.bin.bob-lock").read_bytes() == kept and not (work / "ck.bin").exists()
    (work / ".ck.bin.bob-lock").write_bytes(b"12345\n")  # a killed holder's lock: taken, then removed
    assert bob.run.main(argv(work)) == 0 and not (work / ".ck.bin.bob-lock").exists()
    (work / ".ck.bin.bob-lock").write_bytes(b"\0" * 6)  # its pid lost to a power cut (the size kept, not the data)
    assert bob.run.main(argv(work)) == 0 and not (work / ".ck.bin.bob-lock").exists()


def test_a_sigkill_inside_a_pid_namespace_leaves_nothing_after_the_next_run(work: Path) -> None:
    if shutil.which("unshare") is None or subprocess.run(["unshare", "--pid", "--fork", "true"],
                                                         capture_output=True).returncode != 0:
        pytest.skip("unshare --pid --fork is not permitted here")
    script = ("import os, signal, sys\nreal = os.replace\n"
              "def replace(*a, **k):\n    os.kill(os.getpid(), signal.SIGKILL)\n"
              "os.replace = replace\nfrom bob.run import main\nsys.exit(main(sys.argv[1:]))")
    # sh is pid 1 of the namespace (which no signal of its own can kill), python a child of it
    out = subprocess.run(["unshare", "--pid", "--fork", "sh", "-c", 'exec 3>&1; "$@"; exit $?', "sh",
                          sys.executable, "-c", script, *argv(work)], capture_output=True)
    assert out.returncode != 0
    left = [p.name for p in work.iterdir() if ".bob-tmp-" in p.name]
    assert left  # the killed run (pid 2 or so in its namespace) left its staged files
    assert bob.run.main(argv(work)) == 0
    assert [p.name for p in work.iterdir() if p.name.startswith(".")] == []


# --------------------------------------------------------------------------- #
# The library across processes, and interruptible
# --------------------------------------------------------------------------- #


def test_public_objects_and_errors_pickle_and_copy_to_equal_objects() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    done = bob.invoke(record)
    for obj in (record, done, done.checkpoint, done.predictions):
        for twin in (pickle.loads(pickle.dumps(obj)), copy.copy(obj), copy.deepcopy(obj)):
            assert type(twin) is type(obj) and twin == obj
    from bob.commands import Refused
    from bob.signals import Interrupted

    errors = [bob.FormatError("magic", "wrong", expected=b"A", actual=b"B", offset=0),
              bob.BadValue("step", "too big", actual=3, index=None), bob.StateRefused("V", "negative", index=7),
              bob.errors.ContractMismatch("seed", "differs"), bob.errors.IntegrityError("p_digest", "bad"),
              bob.errors.NotABobFile("magic", "no"), bob.errors.Truncated("size", "short"),
              bob.fileio.NotARegularFile("/dev/null", 0o20666), bob.fileio.FileTooLarge(9, b"BOB"),
              bob.fileio.NotReplaceable("/x", "read-only"), bob.core.CoreError("P"),
              bob.core.NativeCoreUnavailable("gone"), Refused("m", option="--checkpoint", path="/p", field="f"),
              Interrupted(15), bob.arrays.NotAnArray("P", "on cuda:0")]
    for error in errors:
        for twin in (pickle.loads(pickle.dumps(error)), copy.copy(error), copy.deepcopy(error)):
            assert type(twin) is type(error) and str(twin) == str(error) and twin.args == error.args
            assert vars(twin) == vars(error)


def test_invoke_runs_in_a_process_pool_after_the_parent_trained() -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    first = bob.invoke(record, threads=2)  # the parent's thread pool is started: a fork has none of its threads
    with ProcessPoolExecutor(2) as pool:
        results = list(pool.map(bob.invoke, [record] * 3, [first.checkpoint] * 3, timeout=120))
    assert all(r == bob.invoke(record, first.checkpoint) for r in results)


def test_ctrl_c_ends_a_long_train_within_a_second_with_whole_updates_done() -> None:
    p = np.zeros(65536, np.float32)
    bob.core.initialize(p)
    m, v = np.zeros_like(p), np.zeros_like(p)
    ctx, tgt = bytes(range(10)), bytes(range(1, 11))
    # Ctrl-C raises here even where the suite was started with SIGINT ignored (a background job's)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Timer(0.2, os.kill, [os.getpid(), signal.SIGINT]).start()
    started = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt) as caught:
            bob.core.train(p, m, v, ctx, tgt, 0, 10**9)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 1.2
    done = caught.value.updates_done
    assert 0 < done < 10**9
    # the planes hold exactly the state after `done` whole updates
    q = np.zeros(65536, np.float32)
    bob.core.initialize(q)
    qm, qv = np.zeros_like(q), np.zeros_like(q)
    bob.core.train(q, qm, qv, ctx, tgt, 0, done)
    assert q.tobytes() == p.tobytes() and qm.tobytes() == m.tobytes() and qv.tobytes() == v.tobytes()


def test_chunked_training_is_bit_identical_to_one_update_at_a_time() -> None:
    planes = [np.zeros(65536, np.float32) for _ in range(6)]
    bob.core.initialize(planes[0])
    bob.core.initialize(planes[3])
    ctx, tgt = b"abcab", b"bcabc"
    losses = bob.core.train(*planes[:3], ctx, tgt, 5, 70)  # 70 > one chunk (32 at V = 256)
    single = [bob.core.train(*planes[3:], ctx, tgt, 5 + k, 1)[0] for k in range(70)]
    assert losses == single and all(a.tobytes() == b.tobytes() for a, b in zip(planes[:3], planes[3:]))


def test_an_allocation_failure_in_the_core_is_memory_error() -> None:
    script = ("import resource, numpy as np, bob.core as core\n"
              "p = np.zeros(65536, np.float32); m = np.zeros_like(p); v = np.zeros_like(p)\n"
              "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
              "try:\n    core.train(p, m, v, b'ab', b'bc', 0, 10**9)\n"
              "except MemoryError as e:\n    print('MemoryError', int(p.any() or m.any() or v.any()))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout == "MemoryError 0\n", out.stderr


@pytest.mark.parametrize("path", ["a/../b", "n/..", "x/y/", "./q/r", "L/../z", "a/../keep/z", "x//y//z"])
def test_the_directories_made_for_an_output_are_the_ones_removed(tmp_path: Path, monkeypatch, path: str) -> None:
    """make_directory names every directory os.makedirs makes, on the path as given (``..``, a trailing
    slash, a link): a command that fails removes them all, and nothing that was there before."""
    from bob.fileio import make_directory, remove_empty_directories

    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep" / "inner").mkdir(parents=True)
    (tmp_path / "keep").mkdir()  # empty, and the user's: "a/../keep" is not made by the command
    (tmp_path / "L").symlink_to("deep/inner")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    made = make_directory(path)
    assert os.path.isdir(path) and made
    remove_empty_directories(made)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_directory_made_part_way_is_removed_when_the_next_cannot_be(tmp_path: Path, monkeypatch) -> None:
    """bob-fuzz conformance a/b/<a name too long>: mkdir made a and a/b, then refused; neither stays."""
    monkeypatch.chdir(tmp_path)
    out = subprocess.run([str(Path(sys.executable).parent / "bob-fuzz"), "conformance", "a/b/" + "x" * 300],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "file name too long" in out.stderr, out.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("after", [1, 2])
def test_a_signal_as_a_directory_is_made_never_leaves_it_off_the_cleanups_list(tmp_path: Path, monkeypatch,
                                                                               after: int) -> None:
    """bob-fuzz conformance left corpus/checkpoint/refused/magic behind: a SIGTERM between make_directory's
    return and the caller's record of what it made. The record is now kept as each directory is made."""
    from bob import fileio, signals

    calls = []

    def mkdir(name, real=os.mkdir):
        real(name)
        calls.append(name)
        if len(calls) == after:
            os.kill(os.getpid(), signal.SIGTERM)  # bob's handler runs as this call returns

    monkeypatch.chdir(tmp_path)
    os.mkdir("kept")
    made = ["kept"]  # the caller's list: what an earlier call made stays on it
    monkeypatch.setattr(fileio.os, "mkdir", mkdir)
    replaced = signals.install()
    try:
        with pytest.raises(signals.Interrupted):
            fileio.make_directory("a/b", made)
    finally:
        signals.restore(replaced)
    assert calls == ["a", "a/b"][:after] and made == ["kept"] and os.listdir() == ["kept"]


@pytest.mark.parametrize("error", [errno.EEXIST, errno.ENOSPC])
def test_a_signal_as_a_mkdir_fails_is_not_dropped(tmp_path: Path, monkeypatch, error: int) -> None:
    """A SIGTERM that arrived while mkdir ran into an OUTDIR already there (or a full disk) was dropped with
    mkdir's error: bob-fuzz conformance on an existing directory went on and exited 0."""
    from bob import fileio, signals

    def mkdir(name, real=os.mkdir):
        os.kill(os.getpid(), signal.SIGTERM)  # recorded as the call runs
        if error == errno.ENOSPC:
            raise OSError(error, os.strerror(error), name)
        real(name)  # (FileExistsError)

    monkeypatch.chdir(tmp_path)
    os.mkdir("out")
    monkeypatch.setattr(fileio.os, "mkdir", mkdir)
    replaced = signals.install()
    try:
        with pytest.raises(signals.Interrupted):
            fileio.make_directory("out" if error == errno.EEXIST else "new", [])
    finally:
        signals.restore(replaced)
    assert os.listdir() == ["out"]


def test_a_signal_while_a_command_ends_or_prints_is_only_recorded_as_a_directory_is_made(tmp_path: Path) -> None:
    """Once a command is ending on a signal or printing its outcome, another is only recorded (bob.signals):
    step_and_record raised it at its end all the same."""
    from bob import fileio, signals

    replaced = signals.install()
    try:
        for phase in (signals._ending, signals.printing):
            phase()
            with signals.step_and_record():
                os.kill(os.getpid(), signal.SIGHUP)
                fileio.make_directory(tmp_path / phase.__name__)
    finally:
        signals.restore(replaced)
        signals._phase = None
    assert signals.taken()[-2:] == (signal.SIGHUP, signal.SIGHUP)


def test_a_library_caller_of_output_directory_keeps_what_it_made(tmp_path: Path) -> None:
    """Outside a command nothing is removed later, so nothing is remembered (it used to pile up)."""
    import bob.commands

    for name in ("one", "two/three"):
        bob.commands.output_directory("--report", tmp_path / name)
    assert (tmp_path / "two" / "three").is_dir() and bob.commands._made == []


def test_an_output_directory_that_is_a_link_loop_or_leads_nowhere_is_refused_for_that(tmp_path: Path) -> None:
    """--report on a link loop said "exists and is not a directory", where --export names the loop; a link to
    nothing is named with its end (mkdir's "no such file or directory" was of the end, for a path that is there)."""
    from bob.commands import Refused, output_directory

    (tmp_path / "loop").symlink_to("loop")
    (tmp_path / "nowhere").symlink_to("missing/x")
    (tmp_path / "file").write_bytes(b"")
    for name, reason in (("loop", "too many levels of symbolic links"),
                         ("nowhere", f"is a symbolic link to {tmp_path / 'missing' / 'x'}, which does not exist"),
                         ("file", "exists and is not a directory")):
        with pytest.raises(Refused) as info:
            output_directory("--report", tmp_path / name)
        assert info.value.text == f"--report {tmp_path / name}: {reason}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "loop", "nowhere"]


def test_a_path_through_a_link_loop_or_a_file_is_refused_for_what_it_is(tmp_path: Path, monkeypatch) -> None:
    import errno

    from bob.fileio import check_directory, make_directory

    monkeypatch.chdir(tmp_path)
    os.symlink("loop", "loop")
    (tmp_path / "afile").write_bytes(b"")
    with pytest.raises(OSError) as caught:
        make_directory("loop/x")
    assert caught.value.errno == errno.ELOOP  # not "file exists"
    with pytest.raises(FileNotFoundError, match="its directory is not a directory"):
        check_directory("afile/x.bin")
    with pytest.raises(FileNotFoundError, match="a part of its directory is not a directory"):
        check_directory("afile/sub/x.bin")
    out = subprocess.run([str(Path(sys.executable).parent / "bob-fuzz"), "minimize", str(tmp_path / "afile"),
                          "--target", "input", "--output", ""], capture_output=True, text=True)
    assert out.returncode == 2 and "--output" in out.stderr and not list(tmp_path.glob("*.min")), out.stderr


def test_a_directory_a_thousand_levels_deep_is_made_or_refused_by_name(tmp_path: Path, monkeypatch) -> None:
    """make_directory walked up a path by recursion: 1,500 levels (3,000 characters, under PATH_MAX) were a
    RecursionError, exit 70, for bob-fuzz conformance OUTDIR, --artifacts, --corpus and bob-qualify --report."""
    from bob.fileio import make_directory

    monkeypatch.chdir(tmp_path)
    deep = "d/" * 1500 + "./x"
    made = make_directory(deep)
    assert os.path.isdir(deep) and len(made) == 1501 and made[0] == "d"
    for directory in reversed(made):  # (pytest's own removal of old temporary directories recurses)
        os.rmdir(directory)
    out = subprocess.run([str(Path(sys.executable).parent / "bob-fuzz"), "conformance", "e/" * 3000],
                         capture_output=True, text=True, cwd=tmp_path)  # past PATH_MAX: the kernel's refusal
    assert out.returncode == 2 and out.stderr.startswith("bob-fuzz: refused: OUTDIR e/e/") and \
        out.stderr.endswith(": file name too long (a path of 6000 bytes; the system allows 4095)\n") and \
        not (tmp_path / "e").exists(), out.stderr[-200:]


def test_a_lock_file_its_holder_removed_since_it_was_opened_is_opened_again(tmp_path: Path, monkeypatch) -> None:
    """A waiter that opened the lock file just before its holder removed it found 0 links and refused
    (exit 2, "it has 0 hard links"), where the holder had done nothing wrong."""
    target = str(tmp_path / "ck.bin")
    lock = bob.lock.TargetLock(target, 0.0)
    real = bob.lock.TargetLock._open
    calls = []

    def opened_then_removed(self):
        fd, writable, created = real(self)
        if not calls:
            os.unlink(self.path)  # its holder's __exit__, between this open and the checks
        calls.append(fd)
        return fd, writable, created

    monkeypatch.setattr(bob.lock.TargetLock, "_open", opened_then_removed)
    with lock:
        assert os.path.exists(lock.path) and len(calls) == 2
    assert not os.path.exists(lock.path)


@pytest.mark.parametrize("failure", ["EOPNOTSUPP", "signal", "ENOLCK", "EIO", "no fcntl"])
def test_a_lock_file_this_run_made_is_removed_only_where_no_other_run_can_hold_it(work: Path, monkeypatch, capsys,
                                                                                 failure: str) -> None:
    """A run refused or interrupted between creating its lock file and locking it left the file, saying nothing was
    changed: it is removed where this run can lock it now or the file system has no flock. Where flock may fail for
    this run alone (ENOLCK, EIO: an NFS client without lockd; fcntl not importable) another run may hold it: left."""
    import fcntl

    def failing(fd: int, operation: int) -> None:
        raise OSError(getattr(errno, failure), os.strerror(getattr(errno, failure)))

    def interrupted(self, fd: int, deadline: float) -> None:
        raise KeyboardInterrupt

    if failure == "signal":
        monkeypatch.setattr(bob.lock.TargetLock, "_wait_for", interrupted)
        with pytest.raises(KeyboardInterrupt):
            bob.lock.TargetLock(str(work / "ck.bin"), 0.0).__enter__()
    else:
        monkeypatch.setattr(fcntl, "flock", failing) if failure != "no fcntl" else \
            monkeypatch.setitem(sys.modules, "fcntl", None)
        assert bob.run.main(argv(work)) == (1 if failure == "no fcntl" else 2), capsys.readouterr().err
    left = sorted(os.listdir(work))
    assert left == (["rec.bin"] if failure in ("EOPNOTSUPP", "signal") else [".ck.bin.bob-lock", "rec.bin"]), left


def test_a_lock_file_another_run_locked_first_is_left_to_it(work: Path, monkeypatch) -> None:
    """The lock file this run created, opened and locked by another run before this one failed: never removed."""
    import fcntl

    lock, theirs = bob.lock.TargetLock(str(work / "ck.bin"), 0.0), []

    def locked_by_another_run_then_failing(self, fd: int, deadline: float) -> None:
        theirs.append(os.open(self.path, os.O_RDONLY))  # another run opened the new file and locked it first
        fcntl.flock(theirs[0], fcntl.LOCK_EX)
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(bob.lock.TargetLock, "_wait_for", locked_by_another_run_then_failing)
    with pytest.raises(bob.commands.Refused, match="input/output error"):
        lock.__enter__()
    assert os.path.exists(lock.path)  # theirs now: never removed under them
    os.close(theirs[0])


def test_a_lock_file_deleted_as_it_is_taken_is_taken_again(work: Path, monkeypatch) -> None:
    """Deleted between the check that it is still the path's file and the check of its links, a lock file was
    refused as having "0 hard links (a lock file has one ...)", exit 2, where the run should lock the next one."""
    real, calls = bob.lock.identity, []

    def deleted_right_after(path, **kwargs):
        found = real(path, **kwargs)
        calls.append(path)
        if len(calls) == 1:
            os.unlink(path)  # as another process would, after this run compared it with the file it locked
        return found

    monkeypatch.setattr(bob.lock, "identity", deleted_right_after)
    lock = bob.lock.TargetLock(str(work / "ck.bin"), 0.0).__enter__()
    try:
        assert os.path.exists(lock.path) and lock.found  # (the file it created and let go of: its directory found)
        assert bob.lock.identity(lock.path, follow_symlinks=False) == lock.identity
    finally:
        lock.__exit__()
    assert sorted(os.listdir(work)) == ["rec.bin"]


def test_a_directory_moved_as_its_lock_is_taken_is_busy_and_keeps_no_lock_file(tmp_path: Path, monkeypatch) -> None:
    """The directory moved as the run locked the file it had created there: the run let go of that file without
    removing it (left in the moved directory), then refused "no such file or directory", exit 2 (75 when the same
    move came a moment later)."""
    here, moved = tmp_path / "here", tmp_path / "moved"
    here.mkdir()
    real = bob.lock.identity

    def moved_first(path, **kwargs):
        if here.exists():
            here.rename(moved)
        return real(path, **kwargs)

    monkeypatch.setattr(bob.lock, "identity", moved_first)
    with pytest.raises(bob.commands.Refused) as refused:
        bob.lock.TargetLock(str(here / "ck.bin"), 0.0).__enter__()
    assert refused.value.code == 75 and refused.value.message.startswith(
        "its directory was moved or removed by another process while bob-run took its lock ")
    assert os.listdir(moved) == []


def test_a_directory_gone_after_another_run_s_lock_was_let_go_of_is_no_move(tmp_path: Path, monkeypatch) -> None:
    """A lock file another run made, let go of (its holder removed it), then its directory removed: "went with its
    directory while bob-run took it" (75), though nothing moved. As a run that found no directory: exit 2."""
    import shutil

    here = tmp_path / "here"
    here.mkdir()
    lock_file = here / ".ck.bin.bob-lock"
    lock_file.write_bytes(b"")  # another run's
    real = bob.lock.identity

    def gone(path, **kwargs):
        shutil.rmtree(here, ignore_errors=True)
        return real(path, **kwargs)

    monkeypatch.setattr(bob.lock, "identity", gone)
    with pytest.raises(bob.commands.Refused) as refused:
        bob.lock.TargetLock(str(here / "ck.bin"), 0.0).__enter__()
    assert refused.value.code == 2 and refused.value.message.endswith("cannot be used: no such file or directory; "
                                                                      "nothing was changed")


def test_a_directory_removed_while_bob_run_takes_its_locks_is_busy(tmp_path: Path, monkeypatch, capsys) -> None:
    """The predictions' directory removed once the checkpoint's lock was taken (or the other way round): exit 2,
    "its lock file ... cannot be used: no such file or directory", where bob-run had found it a moment before."""
    import shutil

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    paths = {"--checkpoint": tmp_path / "a" / "ck.bin", "--predictions": tmp_path / "b" / "pred.bin"}
    real = bob.lock.TargetLock.__enter__

    def the_other_directory_removed(self):
        taken = real(self)
        other = next(p for option, p in paths.items() if option != self.option)
        shutil.rmtree(other.parent, ignore_errors=True)
        return taken

    monkeypatch.setattr(bob.lock.TargetLock, "__enter__", the_other_directory_removed)
    code = bob.run.main(["--input", str(tmp_path / "rec.bin"), "--checkpoint", str(paths["--checkpoint"]),
                         "--predictions", str(paths["--predictions"])])
    err = capsys.readouterr().err
    assert code == 75 and "its directory was moved or removed by another process while bob-run took its lock" in err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) in (["a", "rec.bin"], ["b", "rec.bin"])


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="no /proc here")
@pytest.mark.parametrize("option, path", [("--trace", "/proc/version"), ("--trace", "/proc/bob-none.trace"),
                                          ("--predictions", "/proc/version")])
def test_a_directory_where_no_file_is_made_is_no_race(tmp_path: Path, capsys, option: str, path: str) -> None:
    """A target in /proc: creating its lock file there fails with ENOENT, and bob-run said "its directory was moved
    or removed by another process" (exit 75, try again later), though nothing had moved: exit 2, the lock named."""
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    argv = {"--input": str(tmp_path / "rec.bin"), "--checkpoint": str(tmp_path / "ck.bin"),
            "--predictions": str(tmp_path / "pred.bin"), option: path}
    code = bob.run.main([word for pair in argv.items() for word in pair])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"bob-run: refused: {option} {path}: its lock file /proc/.") and err.endswith(
        "cannot be used: its directory makes no new file (no such file or directory); nothing was changed\n"), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rec.bin"]


@pytest.mark.parametrize("through", ["ck.bin", "link"])
def test_a_path_renamed_over_while_it_is_resolved_is_no_changed_link(tmp_path: Path, monkeypatch,
                                                                     through: str) -> None:
    """Another run's commit renamed between replace_target's two stats: "it changed while its links were
    resolved" (exit 2), where no link had changed (a plain path, or one through a link)."""
    from bob import fileio

    path = tmp_path / "ck.bin"
    path.write_bytes(b"old")
    (tmp_path / "link").symlink_to("ck.bin")
    real, stats = os.stat, []

    def renamed_after_the_first_stat(p, *a, **k):
        st = real(p, *a, **k)
        if os.fspath(p) == str(tmp_path / through) and not stats:
            stats.append(st)
            (tmp_path / "new").write_bytes(b"new")
            os.replace(tmp_path / "new", path)  # a concurrent commit
        return st

    monkeypatch.setattr(os, "stat", renamed_after_the_first_stat)
    assert fileio.replace_target(str(tmp_path / through)) == str(path) and stats


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_no_output_may_be_the_file_the_command_s_own_output_goes_to(work: Path, stream: str) -> None:
    """--trace /dev/stdout >> runs.log replaced runs.log with the trace (exit 0): the log's lines and the --json
    object, written into the file it replaced, were gone. Every command's targets are checked so (bob-fixture's too)."""
    log = work / "runs.log"
    log.write_bytes(b"earlier run\n")
    fd = 1 if stream == "stdout" else 2
    for command, args in (("bob-run", [*argv(work), "--trace", f"/dev/{stream}", "--json"]),
                          ("bob-fixture", ["--text", "ab", "--prompt", "a", "--prompt", "b", "--prompt", "",
                                           "--output", f"/dev/{stream}"])):
        with open(log, "ab") as out:
            done = subprocess.run([str(BIN / command), *args], **{stream: out}, timeout=120)  # type: ignore[call-overload]
        assert done.returncode == 2 and log.read_bytes().startswith(b"earlier run\n"), command
        said = log.read_text() if fd == 2 else ""
        assert stream == "stdout" or f"is the file this command's standard error goes to" in said
    assert not (work / "ck.bin").exists()


@pytest.mark.parametrize("name", [".ck.bin.bob-tmp-1-aaaaaaaaaaaa", ".x.bob-tmp-77-0123456789ab"])
def test_no_output_may_be_named_as_a_temporary_a_later_run_removes(work: Path, capsys, name: str) -> None:
    """--trace .ck.bin.bob-tmp-1-aaaaaaaaaaaa was written (exit 0), and the next run on ck.bin removed it as stale."""
    assert bob.run.main([*argv(work), "--trace", str(work / name)]) == 2
    assert capsys.readouterr().err == f"bob-run: refused: --trace {work / name}: names a bob temporary file " \
                                      "(.NAME.bob-tmp-PID-HEX), which a later run removes; choose another path\n"
    from bob.fixture import main as fixture_main

    assert fixture_main(["--text", "ab", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                         str(work / name)]) == 2
    assert "names a bob temporary file" in capsys.readouterr().err and not (work / name).exists()
    for fine in (".bob-tmp-1-aaaaaaaaaaaa", "x.bob-tmp-1-aaaaaaaaaaaa", ".x.bob-tmp-1-AAAAAAAAAAAA"):  # no temporary's
        assert fixture_main(["--text", "ab", "--prompt", "a", "--prompt", "b", "--prompt", "", "--output",
                             str(work / fine)]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("name, code", [(".ck.bin.bob-lock", 2), (".ck.bin.bob-tmp-999999-aaaaaaaaaaaa", 0)])
def test_bob_run_never_removes_the_file_its_output_goes_to(work: Path, name: str, code: int) -> None:
    """(A review of 3bc64dd.) bob-run --json >> .ck.bin.bob-lock took that file as its lock and removed it when
    done, and >> a dead run's temporary's name removed it as stale: exit 0, the summary gone with the file."""
    with open(work / name, "ab") as out:
        done = subprocess.run([str(BIN / "bob-run"), *argv(work), "--json"], stdout=out, timeout=120)
    said = (work / name).read_text()
    assert done.returncode == code and json.loads(said)["exit_code"] == code
    assert code == 0 or "it is the file this command's standard output goes to" in said


def test_a_directory_is_refused_as_one_even_when_descriptors_run_out(work: Path, monkeypatch, capsys) -> None:
    """Out of descriptors, --input DIR was "a directory, not a regular file" with the unexpected exit (1), where
    --checkpoint DIR was refused (2): the open's EMFILE was the refusal's context. A directory is one either way."""
    import errno

    real_open = os.open

    def out_of_descriptors(path, *args, **kwargs):
        if os.fspath(path) == str(work / "dir"):
            raise OSError(errno.EMFILE, "Too many open files", path)
        return real_open(path, *args, **kwargs)

    (work / "dir").mkdir()
    monkeypatch.setattr(os, "open", out_of_descriptors)
    code = bob.run.main(["--input", str(work / "dir"), "--checkpoint", str(work / "ck.bin"), "--predictions",
                         str(work / "pred.bin")])
    assert (code, capsys.readouterr().err) == (2, f"bob-run: refused: --input {work / 'dir'}: a directory, not a "
                                                  "regular file\n")


def _a_dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.parametrize("held, shown", [(b"LIVE\n", " (pid LIVE)"), (b"20", ""), (b"", ""), (b"\0\0\0", ""),
                                         (b"DEAD\n", ""), (b"4194305\n", ""), (b"0\n", ""), (b"9" * 31 + b"\n", "")])
def test_a_busy_lock_names_its_holder_only_from_a_whole_pid(tmp_path: Path, held: bytes, shown: str) -> None:
    """A holder's pid cut short (a file size limit of 2 bytes left "20" of 20351) was named as pid 20,
    which may be another live process; a pid of no live process (a holder that may only read the file writes
    none, and the one there is an earlier holder's) was named as the holder's."""
    import fcntl

    import bob.commands

    live = str(os.getpid())
    held = held.replace(b"LIVE", live.encode()).replace(b"DEAD", b"%d" % _a_dead_pid())
    shown = shown.replace("LIVE", live)
    target = str(tmp_path / "ck.bin")
    fd = os.open(bob.lock.lock_path_for(target), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.write(fd, held)
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(bob.commands.Refused) as refused:
            bob.lock.TargetLock(target, 0).__enter__()
    finally:
        os.close(fd)
    assert refused.value.code == 75
    assert refused.value.message == f"in use by another bob-run{shown}; nothing was changed (use --wait SECONDS to " \
        "wait for it)"


def test_a_read_only_mount_is_said_as_one_not_as_a_want_of_rights(tmp_path: Path, monkeypatch) -> None:
    """os.access only says no: a directory or a file on a file system mounted read-only was refused as
    "permission denied" (bob-qualify --report) or "this user (uid 0) cannot write it", sending root after rights."""
    from bob import fileio

    (tmp_path / "ck.bin").write_bytes(b"x")
    read_only = os.statvfs_result((4096,) * 8 + (os.ST_RDONLY, 255))
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)  # (as on such a mount)
    monkeypatch.setattr(os, "statvfs", lambda path: read_only)
    with pytest.raises(OSError) as refused:
        fileio.make_directory(tmp_path / "report")
    assert refused.value.errno == errno.EROFS and not (tmp_path / "report").exists()
    with pytest.raises(fileio.NotReplaceable) as unreplaceable:
        fileio.replace_target(tmp_path / "ck.bin")
    assert unreplaceable.value.strerror == "its file system is mounted read-only"


def test_a_close_that_fails_after_the_commit_changes_nothing_that_was_said(work: Path, monkeypatch, capsys) -> None:
    """close(2) may report a deferred write's error (EDQUOT, EIO: NFS, FUSE) yet frees the descriptor: a lock's
    or a commit directory's close failing after the checkpoint's rename was exit 1, 'unexpected error', with the
    invocation committed and the locks not yet released left behind."""
    import stat

    assert bob.run.main(argv(work, pred="p0.bin")) == 0
    capsys.readouterr()
    real_close, failed, before = os.close, [], (work / "ck.bin").stat().st_ino

    def close_then_fail(fd: int) -> None:
        committed = (work / "ck.bin").stat().st_ino != before  # (a close before it is the refusal's to tell)
        ours = committed and (stat.S_ISDIR(os.fstat(fd).st_mode) or os.readlink(f"/proc/self/fd/{fd}").endswith("lock"))
        real_close(fd)
        if ours:
            failed.append(fd)
            raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(os, "close", close_then_fail)
    code = bob.run.main(["--json", *argv(work)])
    monkeypatch.undo()
    said = capsys.readouterr()
    assert code == 0, said
    out = json.loads(said.out)
    assert out["ok"] is True and failed and step_of(work / "ck.bin") == 2 * U
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "p0.bin", "pred.bin", "rec.bin"]  # no lock left


def test_a_lock_file_written_over_in_place_while_held_is_kept_whole(work: Path, monkeypatch) -> None:
    """A checkpoint copied over a held lock file in place (cp keeps the inode): the holder removed it as its
    own when it ended, and a waiter truncated it to write its pid. Neither does now: the file is kept whole."""
    import fcntl

    assert bob.run.main(argv(work)) == 0
    lock = work / ".ck.bin.bob-lock"
    other = (work / "ck.bin").read_bytes()
    real_advance = bob.invocation.advance

    def advance_then_overwrite(*args, **kwargs):
        result = real_advance(*args, **kwargs)
        with open(lock, "r+b") as f:  # in place: the very file this run holds
            f.write(other)
        return result

    monkeypatch.setattr(bob.invocation, "advance", advance_then_overwrite)
    assert bob.run.main(argv(work)) == 0  # the run stands; its lock file, written over, is not removed
    assert lock.read_bytes() == other
    monkeypatch.undo()
    # a waiter: the holder's file is written over while the waiter waits, then let go
    lock.write_bytes(b"12345\n")
    holder = os.open(lock, os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    outcome: dict = {}

    def wait() -> None:
        try:
            with bob.lock.TargetLock(str(work / "ck.bin"), 20.0):
                outcome["took"] = True
        except bob.commands.Refused as exc:
            outcome["refused"] = str(exc)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)  # (it found a pid and waits on the flock)
    os.pwrite(holder, other, 0)
    os.close(holder)
    waiter.join(30)
    assert "bytes that are not a pid" in outcome.get("refused", "") and lock.read_bytes() == other
