"""Broken outputs and failed writes (issue 9, classes 5 and 6).

After the checkpoint is committed, a closed, full or broken stdout is not a
failed invocation: exit 0, one line on stderr. When the checkpoint cannot be
written, the predictions bob had already replaced are put back exactly."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

import bob
from bob.formats.constants import UPDATES_PER_INVOCATION as U
from conftest import CORPUS, PROMPTS, tmpfs

BIN = Path(sys.executable).parent


@pytest.fixture
def work(tmp_path: Path) -> Path:
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    return tmp_path


def run_args(work: Path, *extra: str) -> list[str]:
    return [str(BIN / "bob-run"), "--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"),
            "--predictions", str(work / "pred.bin"), *extra]


def assert_committed_quietly(err: bytes, work: Path, step: int) -> None:
    text = err.decode()
    assert "Traceback" not in text and text.count("\n") == 1, text
    assert f"committed step {step}" in text and "could not be printed" in text
    assert bob.read_checkpoint_file(work / "ck.bin").step == step


def fail_writes_to(monkeypatch, name: str, code: int) -> None:
    """Make bob.fileio.stage (the writing of a new file) fail with OSError ``code`` for the file ``name``, and only it."""
    import bob.fileio

    real = bob.fileio.stage

    def failing(path, data, *args, **kwargs):
        if str(path).endswith(name):
            raise OSError(code, os.strerror(code))
        return real(path, data, *args, **kwargs)

    monkeypatch.setattr(bob.fileio, "stage", failing)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_closed_stdout_after_the_commit(work: Path, json_flag: list[str]) -> None:
    out = subprocess.run(run_args(work, *json_flag), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: os.close(1), timeout=30)
    assert out.returncode == 0
    assert_committed_quietly(out.stderr, work, U)


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_full_stdout_after_the_commit(work: Path, json_flag: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        out = subprocess.run(run_args(work, *json_flag), stdout=full, stderr=subprocess.PIPE, timeout=30)
    assert out.returncode == 0
    assert_committed_quietly(out.stderr, work, U)


def test_broken_pipe_after_the_commit(work: Path) -> None:
    proc = subprocess.Popen(run_args(work), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before bob-run prints (like `| head -0`)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert_committed_quietly(err, work, U)
    # a supervisor that retries on a non-zero exit would have trained twice; it does not retry
    again = subprocess.run(run_args(work), capture_output=True, timeout=30)
    assert again.returncode == 0 and bob.read_checkpoint_file(work / "ck.bin").step == 2 * U


def test_json_summary_is_one_line_in_one_piece(work: Path) -> None:
    out = subprocess.run(run_args(work, "--json"), capture_output=True, timeout=30)
    assert out.returncode == 0 and out.stdout.count(b"\n") == 1 and out.stdout.endswith(b"\n")
    assert json.loads(out.stdout)["step_after"] == U


EXIT_NOW = ("import sys; from bob.text import exit_now; sys.stdout.write('x' * 200_000); "
            "sys.stderr.write('last words'); exit_now(3)")


def test_skipping_the_teardown_still_flushes_every_byte_and_keeps_the_exit_code(tmp_path: Path) -> None:
    # bob-run and bob-fixture end with exit_now (os._exit after a flush):
    # output still buffered in the interpreter must not be lost with it.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # buffered, as users run it

    def run(code: str, redirect: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(f"exec {sys.executable} -c \"{code}\" {redirect}", shell=True, env=env,
                              capture_output=True)

    done = run(EXIT_NOW)
    assert (done.returncode, len(done.stdout), done.stderr) == (3, 200_000, b"last words")
    done = run(EXIT_NOW, f"> {tmp_path / 'out'}")
    assert done.returncode == 3 and (tmp_path / "out").read_bytes() == b"x" * 200_000
    no_stdout = EXIT_NOW.replace("sys.stdout.write('x' * 200_000); ", "")  # sys.stdout is None
    assert (run(no_stdout, ">&-").returncode, run(no_stdout, ">&-").stderr) == (3, b"last words")
    # A short write waits in the buffer; its flush fails on a full device, quietly (the summary's own
    # failure is emit()'s to report, and it has).
    full = run(EXIT_NOW.replace("200_000", "10"), ">/dev/full")
    assert (full.returncode, full.stderr) == (3, b"last words")


def test_bob_inspect_with_a_closed_stdout_is_one_line_not_a_traceback(work: Path) -> None:
    out = subprocess.run([str(BIN / "bob-inspect"), str(work / "rec.bin")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1), timeout=30)
    # as bob-run: the report's exit status stands; one line says it could not be printed
    assert out.returncode == 0 and b"Traceback" not in out.stderr and out.stderr.count(b"\n") == 1


def test_a_command_started_without_its_standard_descriptors_keeps_its_files_off_their_numbers(work: Path) -> None:
    """Started with 0, 1 and 2 closed, bob-run's lock file took fd 2, where a native panic's message or the
    out-of-memory report is written: /dev/null holds the three numbers now, inherited by a child as streams."""
    script = ("import os, sys, bob.invocation, bob.run\n"
              "real = bob.invocation.advance\n"
              "def seen(*a, **k):\n"
              "    with open(sys.argv[1], 'w') as f:\n"
              "        f.write(' '.join(os.readlink(f'/proc/self/fd/{n}') + str(os.get_inheritable(n)) for n in (0, 1, 2)))\n"
              "    return real(*a, **k)\n"
              "bob.invocation.advance = seen\n"
              "sys.exit(bob.run.main(sys.argv[2:]))")
    closed = subprocess.run([sys.executable, "-c", script, str(work / "seen.txt"), *run_args(work)[1:]],
                            preexec_fn=lambda: [os.close(n) for n in (0, 1, 2)], timeout=60)
    assert closed.returncode == 0 and bob.read_checkpoint_file(work / "ck.bin").step == U
    assert (work / "seen.txt").read_text() == "/dev/nullTrue /dev/nullTrue /dev/nullTrue"


def test_a_closed_descriptor_is_held_whatever_stream_python_has_for_it(tmp_path: Path) -> None:
    """A caller's stdout a StringIO (redirect_stdout) over a closed fd 1: the probe of its fileno raised, and fd 1
    stayed free for the next file bob opened (a target's print from C then went into it)."""
    script = ("import io, os, sys; os.close(1); sys.stdout = io.StringIO()\n"
              "from bob.text import tolerant_streams; tolerant_streams()\n"
              "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT)\n"
              "os.write(2, f'{fd} {os.readlink(\"/proc/self/fd/1\")} {type(sys.stdout).__name__}'.encode())")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "f")], capture_output=True, text=True, timeout=30)
    assert done.stderr == "3 /dev/null StringIO", done.stderr


# ------------------------------------------------------------------ rollback ---
def test_failed_checkpoint_write_restores_old_predictions_exactly(work: Path, monkeypatch, capsys) -> None:
    """The predictions are replaced first; if the checkpoint then cannot be
    written, the old predictions file comes back byte for byte — here a
    100 KiB file, larger than any buffer bob might have kept it in."""
    import errno

    from bob.run import main

    first = bob.invoke(bob.read_input_file(work / "rec.bin"))
    first.checkpoint.write(work / "ck.bin")
    old_predictions = os.urandom(100 * 1024)
    (work / "pred.bin").write_bytes(old_predictions)
    os.chmod(work / "pred.bin", 0o640)
    old_checkpoint = (work / "ck.bin").read_bytes()
    fail_writes_to(monkeypatch, "ck.bin", errno.ENOSPC)
    code = main(run_args(work)[1:])
    err = capsys.readouterr().err
    assert code == 2
    assert err == (f"bob-run: refused: --checkpoint {work / 'ck.bin'}: its new file could not be written: no space "
                   "left on device; nothing was changed\n")
    assert (work / "pred.bin").read_bytes() == old_predictions
    assert os.stat(work / "pred.bin").st_mode & 0o777 == 0o640
    assert (work / "ck.bin").read_bytes() == old_checkpoint
    assert not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


def test_failed_checkpoint_write_removes_predictions_that_did_not_exist(work: Path, monkeypatch, capsys) -> None:
    import errno

    from bob.run import main

    fail_writes_to(monkeypatch, "ck.bin", errno.EIO)
    assert main(run_args(work)[1:]) == 2
    assert not (work / "pred.bin").exists() and not (work / "ck.bin").exists()


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 1.6 MB tmpfs: room for one checkpoint and a large predictions file, not for a second checkpoint."""
    with tmpfs(tmp_path / f"disk-{uuid.uuid4().hex[:6]}", "1600k") as mount:
        yield mount


def test_a_full_disk_loses_nothing(small_disk: Path) -> None:
    work = small_disk
    bob.build_input(CORPUS, PROMPTS).write(work / "rec.bin")
    bob.invoke(bob.read_input_file(work / "rec.bin")).checkpoint.write(work / "ck.bin")
    old_predictions = os.urandom(100 * 1024)
    (work / "pred.bin").write_bytes(old_predictions)
    old_checkpoint = (work / "ck.bin").read_bytes()
    out = subprocess.run(run_args(work, "--json"), capture_output=True, timeout=30)
    err = out.stderr.decode()
    assert out.returncode == 2 and "Traceback" not in err and "--checkpoint" in err, err
    assert "no space left on device" in err and json.loads(out.stdout)["error"]["option"] == "--checkpoint"
    assert (work / "ck.bin").read_bytes() == old_checkpoint
    assert (work / "pred.bin").read_bytes() == old_predictions
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.skipif(__import__("importlib.util").util.find_spec("atheris") is None, reason="the fuzz extra")
def test_a_campaigns_artifacts_on_a_full_disk_are_refused_and_leave_no_directory(small_disk: Path) -> None:
    """Exit 2 naming --artifacts and the file that could not be written in it (the fuzzer's dictionary),
    and none of the directories it had made for it left behind."""
    with open(small_disk / "fill", "wb", buffering=0) as fill, contextlib.suppress(OSError):  # the whole disk
        while True:
            fill.write(bytes(64 * 1024))
    done = subprocess.run([str(BIN / "bob-fuzz"), "run", "input", "--runs", "10", "--artifacts",
                           str(small_disk / "art"), "--corpus", str(small_disk.parent / "corpus"), "--json"],
                          capture_output=True, timeout=120)
    written = small_disk / "art" / ".logs" / "bob.dict"
    assert done.returncode == 2 and json.loads(done.stdout)["error"]["option"] == "--artifacts", done
    assert json.loads(done.stdout)["error"]["path"] == str(written)
    assert done.stderr.decode() == f"bob-fuzz: refused: --artifacts {written}: no space left on device\n"
    assert sorted(p.name for p in small_disk.iterdir()) == ["fill"]


def test_a_failed_predictions_write_leaves_no_backup_behind(work: Path, monkeypatch, capsys) -> None:
    import errno

    import bob.fileio
    from bob.run import main

    (work / "pred.bin").write_bytes(b"old")

    def failing(path, data, *args, **kwargs):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(bob.fileio, "stage", failing)
    assert main(run_args(work)[1:]) == 2
    assert "--predictions" in capsys.readouterr().err
    assert (work / "pred.bin").read_bytes() == b"old" and not (work / "ck.bin").exists()
    assert not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


def test_a_directory_that_refuses_renames_and_removals_is_refused_by_name(work: Path, monkeypatch, capsys) -> None:
    """An append-only predictions directory (chattr +a): the rename fails, and so does removing the
    backup link. The second failure was raised over the refusal (exit 1 naming a temporary), and the
    checkpoint's temporary elsewhere was left behind."""
    import errno

    from bob.run import main

    (work / "pred.bin").write_bytes(b"old")
    real_replace, real_unlink = os.replace, os.unlink

    def append_only(real):
        def call(path, *rest, **at):
            if os.path.basename(os.fspath(rest[0] if rest else path)).startswith(".pred.bin.bob-tmp-") or \
                    (rest and os.fspath(rest[0]).endswith("pred.bin")):
                raise PermissionError(errno.EPERM, os.strerror(errno.EPERM), path)
            return real(path, *rest, **at)
        return call

    monkeypatch.setattr(os, "replace", append_only(real_replace))
    monkeypatch.setattr(os, "unlink", append_only(real_unlink))
    assert main(run_args(work)[1:]) == 2
    assert capsys.readouterr().err == (f"bob-run: refused: --predictions {work / 'pred.bin'}: its new file could not "
                                       "be renamed over it (operation not permitted); the checkpoint was not replaced\n")
    monkeypatch.undo()
    assert (work / "pred.bin").read_bytes() == b"old" and not (work / "ck.bin").exists()
    assert [p.name for p in work.iterdir() if ".bob-tmp-" in p.name and not p.name.startswith(".pred.bin")] == []


def test_a_failed_predictions_write_leaves_the_checkpoint_unchanged(work: Path, monkeypatch, capsys) -> None:
    """The predictions are committed before the checkpoint: when they cannot
    be written, the checkpoint is not advanced (a later run must not skip the
    10 updates whose predictions nobody saw)."""
    import errno

    from bob.run import main

    bob.invoke(bob.read_input_file(work / "rec.bin")).checkpoint.write(work / "ck.bin")
    (work / "pred.bin").write_bytes(b"old")
    old_checkpoint = (work / "ck.bin").read_bytes()
    fail_writes_to(monkeypatch, "pred.bin", errno.ENOSPC)
    assert main(run_args(work)[1:]) == 2
    err = capsys.readouterr().err
    assert err == (f"bob-run: refused: --predictions {work / 'pred.bin'}: its new file could not be written: no space "
                   "left on device; nothing was changed\n")
    assert (work / "ck.bin").read_bytes() == old_checkpoint
    assert (work / "pred.bin").read_bytes() == b"old"
    assert not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


def _eio_on_directories(monkeypatch) -> None:
    """``os.fsync`` of a directory fails with EIO (a disk going bad); of a file it works."""
    import errno
    import stat

    real = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_an_io_error_syncing_a_directory_is_said_not_swallowed(work: Path, monkeypatch, capsys) -> None:
    """Only a filesystem that refuses fsync on directories (EINVAL) is passed over: an I/O error syncing the
    predictions' directory before the commit is a refusal (the pair put back, the checkpoint not replaced);
    it was ignored, and the commit's order on disk with it."""
    import errno

    import bob.fileio
    from bob.run import main

    first = bob.invoke(bob.read_input_file(work / "rec.bin"))
    first.checkpoint.write(work / "ck.bin")
    first.predictions.write(work / "pred.bin")
    before = {p.name: p.read_bytes() for p in work.iterdir()}
    _eio_on_directories(monkeypatch)
    with pytest.raises(OSError):
        bob.fileio.fsync_directory(str(work), strict=True)
    bob.fileio.fsync_directory(str(work))  # after a rename (write_atomic): the file is replaced whatever it says
    assert main(run_args(work, "--json")[1:]) == 2
    assert "input/output error" in json.loads(capsys.readouterr().out)["error"]["message"]
    assert {p.name: p.read_bytes() for p in work.iterdir()} == before
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(errno.EINVAL, "refused")))
    bob.fileio.fsync_directory(str(work), strict=True)  # a filesystem that refuses it: nothing to say


def test_a_rollback_puts_back_every_file_it_can_and_says_which_it_could_not(work: Path, monkeypatch) -> None:
    """The trace's backup is gone (another process removed it): the predictions are still put back, and
    the refusal says the trace could not be, rather than the bare OS error of the first failure."""
    from bob.commands import about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin", "run.trace"):
        (work / name).write_bytes(b"old " + name.encode())
    paths = {name: str(work / name) for name in ("ck.bin", "pred.bin", "run.trace")}
    commit = Commit(paths["ck.bin"], b"new", about("--checkpoint", "ck.bin"), paths["pred.bin"], b"new",
                    about("--predictions", "pred.bin"), ((paths["run.trace"], b"new", about("--trace", "run.trace")),))

    def stopped() -> None:
        trace_backup = next(b for b in commit.backups if b.target == paths["run.trace"])
        os.unlink(trace_backup.link)
        raise KeyboardInterrupt

    refused = _stopped_before_its_commit(commit, stopped)
    assert (refused.option, refused.path) == ("--trace", "run.trace")
    assert refused.message.startswith("the run stopped before its commit (stopped), and this file could not "
                                            "be put back (no such file or directory)")
    assert (work / "pred.bin").read_bytes() == b"old pred.bin" and (work / "ck.bin").read_bytes() == b"old ck.bin"


def _committed(commit) -> None:
    """``commit`` staged and applied, nothing stopping it (closed after)."""
    try:
        commit.stage()
        commit.apply(lambda: None)
    finally:
        commit.close()


def _stopped_before_its_commit(commit, stopped):
    """The refusal of ``commit`` staged and applied with ``stopped`` raising before its commit (closed after)."""
    from bob.commands import Refused

    try:
        commit.stage()
        with pytest.raises(Refused) as refused:
            commit.apply(stopped)
    finally:
        commit.close()
    return refused.value


def test_every_file_that_cannot_be_put_back_is_kept_and_named(work: Path, monkeypatch) -> None:
    """The predictions and the trace could not be put back (a directory made immutable, a bind mount over
    them): each backup link, the only copy of an old file, was removed with the temporaries; then the
    refusal named the predictions alone, and said nothing of the trace's old bytes under a temporary name."""
    import errno

    import bob.commit
    from bob.commands import about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin", "run.trace"):
        (work / name).write_bytes(b"old " + name.encode())
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"), ((str(work / "run.trace"), b"new", about("--trace", "t")),))
    real = os.replace

    def busy(source, target, **at):
        if any(os.path.basename(b.link or "") == os.fspath(source) for b in commit.backups):
            raise OSError(errno.EPERM, os.strerror(errno.EPERM), source)
        return real(source, target, **at)

    def stopped() -> None:
        monkeypatch.setattr(bob.commit.os, "replace", busy)
        raise KeyboardInterrupt

    refused = _stopped_before_its_commit(commit, stopped)
    [pred] = [p for p in work.iterdir() if p.name.startswith(".pred.bin.bob-tmp-")]
    [trace] = [p for p in work.iterdir() if p.name.startswith(".run.trace.bob-tmp-")]
    assert (refused.option, pred.read_bytes(), trace.read_bytes()) == ("--predictions", b"old pred.bin", b"old run.trace")
    assert refused.message == (
        "the run stopped before its commit (stopped), and this file could not be put back (operation not permitted); "
        f"its old bytes are kept in {pred}, which the next bob-run on it removes; --trace t could not be put back "
        f"(operation not permitted); its old bytes are kept in {trace}, which the next bob-run on it removes; the "
        "checkpoint was not replaced")
    assert (work / "ck.bin").read_bytes() == b"old ck.bin"


def test_a_rollback_out_of_descriptors_keeps_and_names_every_old_file(work: Path, monkeypatch) -> None:
    """Out of descriptors before the commit (EMFILE: another process lowered the limit), the rollback cannot read
    the new files to see they are still this run's, and a stat cannot tell (a same-size write in place within one
    timestamp tick keeps inode, size and mtime): nothing is put back over a file that may be another process's;
    each old file is kept and named, as README says of a rollback that could not put one back."""
    import errno

    import bob.commit
    from bob.commands import about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin", "run.trace"):
        (work / name).write_bytes(b"old " + name.encode())
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"), ((str(work / "run.trace"), b"new", about("--trace", "t")),))

    def no_descriptor(*args, **kwargs):
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    def stopped() -> None:
        monkeypatch.setattr(bob.commit.os, "open", no_descriptor)
        raise OSError(errno.EMFILE, os.strerror(errno.EMFILE))

    refused = _stopped_before_its_commit(commit, stopped)
    monkeypatch.undo()
    kept = {p.name.split(".bob-tmp-")[0]: p.read_bytes() for p in work.iterdir() if ".bob-tmp-" in p.name}
    assert kept == {".pred.bin": b"old pred.bin", ".run.trace": b"old run.trace"}
    assert (work / "ck.bin").read_bytes() == b"old ck.bin" and refused.message.count("could not be put back") == 2


@pytest.mark.parametrize("stop, code, cause", [(KeyboardInterrupt, 130, "stopped"), ("busy", 75, "busy")])
def test_a_rollback_whose_directory_cannot_be_synced_says_so(work: Path, monkeypatch, stop, code, cause) -> None:
    """The old predictions were put back, but their directory's sync failed (EIO): the run said "the
    checkpoint was not replaced" and nothing of a rollback that a power loss may undo. Said now, with the
    stop's own exit code (the files are back): 130 for a Ctrl-C, 75 for a lock lost, not 2."""
    import errno

    import bob.backup
    from bob.commands import Refused, about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin"):
        (work / name).write_bytes(b"old " + name.encode())
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))

    def failing(directory, strict=False):
        raise OSError(errno.EIO, os.strerror(errno.EIO), directory)

    def stopped() -> None:
        monkeypatch.setattr(bob.backup, "fsync_directory", failing)  # (the rollback's: bob.backup.Backup.restore)
        raise stop() if stop is KeyboardInterrupt else Refused("busy", code=75)

    refused = _stopped_before_its_commit(commit, stopped)
    assert refused.message == (f"the run stopped before its commit ({cause}), and this file was rolled back, but its "
                               "directory could not be synced (input/output error): the rollback may not survive a "
                               "power loss; the checkpoint was not replaced")
    assert (refused.option, refused.code) == ("--predictions", code)
    assert sorted(p.name for p in work.iterdir() if p.name != "rec.bin") == ["ck.bin", "pred.bin"]
    assert (work / "pred.bin").read_bytes() == b"old pred.bin" and (work / "ck.bin").read_bytes() == b"old ck.bin"


@pytest.mark.parametrize("failing", [0, 1])
@pytest.mark.parametrize("err", ["EBUSY", "ENOMEM"])
def test_files_replaced_together_say_which_were_replaced_when_a_rename_fails(work: Path, monkeypatch, failing,
                                                                             err: str) -> None:
    """bob.commit.replace_all (a report, a heatmap with its export): a rename failing (EBUSY) was an
    unexpected error naming a temporary, and said nothing of the file renamed before it; the machine's shortage
    (ENOMEM) at the first is raised as it is (the runner's to tell), at a later one said with what it left."""
    import errno

    import bob.commit
    from bob.commands import Refused, about
    from bob.refusals import the_machine_ran_out

    names, code = ["a.json", "b.png"], getattr(errno, err)
    real = os.replace

    def busy(source, target, **at):
        if os.fspath(target).endswith(names[failing]):
            raise OSError(code, os.strerror(code), source, target)
        return real(source, target, **at)

    monkeypatch.setattr(bob.commit.os, "replace", busy)
    with pytest.raises(Refused) as refused:
        bob.commit.replace_all([(str(work / n), b"new", about("--report", work / n)) for n in names])
    said = "device or resource busy: a mount point, which no rename replaces" if err == "EBUSY" else \
        "cannot allocate memory"
    assert refused.value.path == str(work / names[failing])
    assert the_machine_ran_out(refused.value) == (err == "ENOMEM")  # (then exit 70, the runner's)
    assert refused.value.message == ("cannot allocate memory" if (err, failing) == ("ENOMEM", 0) else
                                     f"its new file could not be renamed over it ({said}); " + (
                                         f"{work / 'a.json'} replaced already" if failing else "nothing was changed"))
    assert not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


@pytest.mark.parametrize("failing", ["pred.bin", "ck.bin"])
def test_bob_run_says_a_rename_refused_by_a_mount_point_and_what_it_left(work: Path, monkeypatch, capsys,
                                                                           failing: str) -> None:
    """A checkpoint or predictions that is a mount point (EBUSY at the rename) was refused as a bare "device or
    resource busy", not saying that nothing was committed (the predictions renamed first are put back)."""
    import errno

    import bob.commit
    from bob.run import main

    real = os.replace

    def busy(source, target, **kwargs):
        if os.fspath(target) == failing:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), source, target)
        return real(source, target, **kwargs)

    (work / "ck.bin").write_bytes(b"")
    (work / "pred.bin").write_bytes(b"old pred.bin")
    monkeypatch.setattr(bob.commit.os, "replace", busy)
    assert main(["--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions",
                 str(work / "pred.bin")]) == 2
    option = "--checkpoint" if failing == "ck.bin" else "--predictions"
    assert capsys.readouterr().err == (f"bob-run: refused: {option} {work / failing}: its new file could not be renamed "
                                       "over it (device or resource busy: a mount point, which no rename replaces); "
                                       "the checkpoint was not replaced\n")
    assert (work / "pred.bin").read_bytes() == b"old pred.bin" and (work / "ck.bin").read_bytes() == b""
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


@pytest.mark.parametrize("error", ["ENOENT", "EIO", "ENOMEM"])
@pytest.mark.parametrize("failing", ["pred.bin", "ck.bin"])
def test_a_rename_made_but_said_to_fail_is_made(work: Path, monkeypatch, capsys, failing: str, error: str) -> None:
    """An NFS client's retried rename (ENOENT: the first one was made, its reply lost) or a FUSE daemon's late
    error: bob-run said "nothing was changed" (75, 2) while the new file was in place and the old one gone
    (the predictions' backup dropped), or the new checkpoint beside the old predictions put back. The file
    at the target is looked at: this run's new file there is a rename made, and the run commits (exit 0)."""
    import errno

    import bob.commit
    from bob.run import main

    real = os.replace

    def made_then_failed(source, target, **kwargs):
        real(source, target, **kwargs)
        if os.fspath(target) == failing:
            raise OSError(getattr(errno, error), os.strerror(getattr(errno, error)), source, target)

    bob.invoke(bob.read_input_file(work / "rec.bin")).checkpoint.write(work / "ck.bin")
    (work / "pred.bin").write_bytes(b"old pred.bin")
    want = bob.invoke(bob.read_input_file(work / "rec.bin"), (work / "ck.bin").read_bytes())
    monkeypatch.setattr(bob.commit.os, "replace", made_then_failed)
    assert main(["--input", str(work / "rec.bin"), "--checkpoint", str(work / "ck.bin"), "--predictions",
                 str(work / "pred.bin")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("bob-run: step 10 -> 20") and err == ""
    assert (work / "ck.bin").read_bytes() == want.checkpoint_bytes()
    assert (work / "pred.bin").read_bytes() == want.predictions_bytes()
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


def test_files_replaced_together_whose_rename_was_made_but_said_to_fail_are_replaced(work: Path, monkeypatch) -> None:
    """bob.commit.replace_all (reports, exports, a fixture): its second rename made, then said to fail, was
    refused as "a.json replaced already", b.png's new bytes there all the same. The same look: replaced."""
    import errno

    import bob.commit
    from bob.commands import about

    real = os.replace

    def made_then_failed(source, target, **kwargs):
        real(source, target, **kwargs)
        if os.path.basename(target) == "b.png":
            raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), source, target)

    monkeypatch.setattr(bob.commit.os, "replace", made_then_failed)
    names = ("a.json", "b.png")
    assert bob.commit.replace_all([(str(work / n), n.encode(), about("--report", work / n)) for n in names])
    assert [(work / n).read_bytes() for n in names] == [b"a.json", b"b.png"]
    assert not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


def test_files_replaced_together_are_refused_when_two_name_one_file(work: Path) -> None:
    """bob.commit.replace_all: two of its paths, links to one file, each wrote over the other (one file
    lost); refused naming the second, before anything is staged."""
    import bob.commit
    from bob.commands import Refused, about

    (work / "shared").write_bytes(b"mine")
    for name in ("a.json", "b.png"):
        (work / name).symlink_to("shared")
    with pytest.raises(Refused) as refused:
        bob.commit.replace_all([(str(work / n), n.encode(), about("--report", work / n)) for n in ("a.json", "b.png")])
    assert (refused.value.option, refused.value.path) == ("--report", str(work / "b.png"))
    assert (work / "shared").read_bytes() == b"mine" and not [p for p in work.iterdir() if ".bob-tmp-" in p.name]


def test_a_backup_copied_where_hard_links_fail_is_on_disk_before_it_is_needed(work: Path, monkeypatch) -> None:
    """On a filesystem without hard links the backup is a copy: fsynced, so a power loss after a rollback
    does not leave a truncated file where the old one was put back."""
    from bob.commands import Refused
    from bob.commit import Backup

    (work / "pred.bin").write_bytes(b"old predictions")
    synced: list[str] = []
    real = os.fsync
    monkeypatch.setattr(os, "link", lambda *a, **k: (_ for _ in ()).throw(PermissionError(1, "no hard links")))
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real(fd)))
    backup = Backup(str(work / "pred.bin"))
    assert backup.link is not None and backup.link in synced
    backup.discard()


def test_a_refusal_raised_inside_about_names_its_option_and_path() -> None:
    from bob.commands import Refused, about

    with pytest.raises(Refused) as named:
        with about("--predictions", "p.bin"):
            raise Refused("another process is at work on it", code=75)
    assert (named.value.option, named.value.path, named.value.code) == ("--predictions", "p.bin", 75)
    with pytest.raises(Refused) as kept:
        with about("--predictions", "p.bin"):
            raise Refused("names its own", option="--trace", path="t")
    assert (kept.value.option, kept.value.path) == ("--trace", "t")


@pytest.mark.parametrize("given, failed, named", [
    ("corp", "corp/locked", "corp/locked"), ("corp/", "corp/locked", "corp/locked"),
    ("ck.bin", ".ck.bin.bob-tmp-1-x", "ck.bin"), ("corp", "corpus/x", "corp"), ("corp", None, "corp"),
    ("art", "art/.x.bin.bob-tmp-1-x", "art")])
def test_an_os_error_inside_a_directory_given_names_the_path_inside(given, failed, named) -> None:
    """bob-fuzz replay DIR named DIR for a subdirectory it could not list (os.walk's error)."""
    from bob.commands import Refused, about

    with pytest.raises(Refused) as refused:
        with about("PATH", given):
            raise PermissionError(13, "Permission denied", failed)
    assert (refused.value.option, refused.value.path) == ("PATH", named)


def test_a_traced_run_failing_at_any_os_call_keeps_the_old_trio_or_writes_the_new(work: Path, capsys) -> None:
    """With --trace over the last run's trace: the k-th os call of the commit fails, for every k. bob-run
    then exits 0 with the new checkpoint, predictions and trace, or refuses with the old three put back
    (the trace's backup included, which no power-loss state can test: a power loss never rolls back)."""
    from bob.fuzz.faults import OsFaults
    from bob.run import main

    record = bob.read_input_file(work / "rec.bin")
    first = bob.invoke(record, trace=True)
    old = {"ck.bin": first.checkpoint_bytes(), "pred.bin": first.predictions_bytes(), "run.trace": first.trace_bytes()}
    new = bob.invoke(record, first.checkpoint_bytes(), trace=True)
    new_files = {"ck.bin": new.checkpoint_bytes(), "pred.bin": new.predictions_bytes(), "run.trace": new.trace_bytes()}
    for k in range(1, 80):
        for name, data in old.items():
            (work / name).write_bytes(data)
        with OsFaults("fail", k) as faults:
            code = main(run_args(work, "--trace", str(work / "run.trace"))[1:])
        capsys.readouterr()
        files = {name: (work / name).read_bytes() if (work / name).exists() else None for name in old}
        assert files == (new_files if code == 0 else old), (k, faults.failed, code)
        if code == 0:  # (a backup link or the lock it could not remove after the commit: said, and the next
            assert main(run_args(work, "--trace", str(work / "run.trace"))[1:]) == 0  # run removes it)
            capsys.readouterr()
        assert not [p.name for p in work.iterdir() if ".bob-" in p.name], (k, faults.failed)
        if faults.calls < k:  # the run made fewer calls: every one has failed once
            break
    assert faults.calls < k, "the run made more than 79 os calls"


class _BackupOs:
    """``os`` for bob.backup on a file system without hard links (EPERM), its copy's writes made by ``write``."""

    def __init__(self, write) -> None:
        self.write = write

    def link(self, *args, **kwargs):
        raise PermissionError(1, "no hard links")

    def __getattr__(self, name: str):
        return getattr(os, name)


def test_a_backup_copy_that_fails_leaves_no_part_of_itself(work: Path, monkeypatch) -> None:
    """Where hard links fail, the backup is a copy; a copy cut short (a file size limit, a full disk)
    left its temporary, 800 KB of it under `ulimit -f`."""
    import errno

    import bob.backup
    from bob.commands import Refused
    from bob.commit import Backup

    (work / "pred.bin").write_bytes(b"old predictions")

    def cut_short(fd: int, data) -> int:
        os.write(fd, data)
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(bob.backup, "os", _BackupOs(cut_short))
    with pytest.raises(Refused, match=r"^its old file could not be kept for a rollback \(a copy, where a hard link "
                       r"failed: file too large \(the file-size limit, .*\)\); nothing was changed$"):
        Backup(str(work / "pred.bin"))
    assert sorted(p.name for p in work.iterdir()) == ["pred.bin", "rec.bin"]


def test_a_run_whose_backup_can_be_neither_linked_nor_copied_says_nothing_was_changed(work: Path, monkeypatch,
                                                                                    capsys) -> None:
    """A hard link refused and a full disk for the copy: the refusal named the file and the disk, not the outcome."""
    import errno

    import bob.backup
    from bob.run import main

    assert main(run_args(work)[1:]) == 0
    before = sorted((p.name, p.read_bytes()) for p in work.iterdir())
    capsys.readouterr()
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(bob.backup, "os", _BackupOs(lambda fd, data: (_ for _ in ()).throw(full)))
    assert main(run_args(work)[1:]) == 2
    assert capsys.readouterr().err.endswith(": its old file could not be kept for a rollback (a copy, where a hard "
                                            "link failed: no space left on device); nothing was changed\n")
    assert sorted((p.name, p.read_bytes()) for p in work.iterdir()) == before


@pytest.mark.parametrize("option", ["--predictions", "--checkpoint"])
def test_a_proc_fd_link_to_a_deleted_file_replaces_no_file_named_after_it(work: Path, capsys, option: str) -> None:
    """/proc/self/fd/N of a deleted file reads as the path "NAME (deleted)": bob-run replaced (and, as the
    checkpoint, trained from) an unrelated file of that name, exit 0. Now refused, that file untouched."""
    from bob.run import main

    (work / "gone").write_bytes(b"x")
    (work / "gone (deleted)").write_bytes(b"precious")
    fd = os.open(work / "gone", os.O_RDONLY)
    try:
        (work / "gone").unlink()
        args = run_args(work)[1:]
        args[args.index(option) + 1] = f"/proc/self/fd/{fd}"
        assert main(args) == 2
    finally:
        os.close(fd)
    assert "names a deleted file" in capsys.readouterr().err
    assert (work / "gone (deleted)").read_bytes() == b"precious"


def test_a_rollback_removes_no_file_another_process_made_where_none_was(work: Path, monkeypatch) -> None:
    """No predictions before the run; the new ones removed by another process, which then made its own there
    while the run rolled back: the rollback (whose backup is "no file") removed the other process's file."""
    import bob.commit
    from bob.commands import Refused, about
    from bob.commit import Commit

    (work / "ck.bin").write_bytes(b"old ck.bin")
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    real = bob.commit.holds

    def made_since(*args):
        held = real(*args)
        if held is None:  # the rollback's look: then the other process's file
            (work / "pred.bin").write_bytes(b"theirs")
        return held

    def stopped() -> None:
        (work / "pred.bin").unlink()
        monkeypatch.setattr(bob.commit, "holds", made_since)
        raise Refused("busy", code=75)

    assert _stopped_before_its_commit(commit, stopped).code == 75
    assert (work / "pred.bin").read_bytes() == b"theirs" and (work / "ck.bin").read_bytes() == b"old ck.bin"


def test_removed_predictions_are_put_back_where_hard_links_fail(work: Path, monkeypatch) -> None:
    """Where hard links fail the backup is a copy; the new predictions removed by another process, the old
    ones were to go back by a hard link, which fails there: not put back, the next run removing the copy."""
    from bob.commands import Refused, about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin"):
        (work / name).write_bytes(b"old " + name.encode())
    monkeypatch.setattr(os, "link", lambda *a, **k: (_ for _ in ()).throw(PermissionError(1, "no hard links")))
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))

    def stopped() -> None:
        (work / "pred.bin").unlink()
        raise Refused("busy", code=75)

    assert _stopped_before_its_commit(commit, stopped).code == 75
    assert (work / "pred.bin").read_bytes() == b"old pred.bin"
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "pred.bin", "rec.bin"]


def test_a_backup_copy_keeps_the_owner_times_and_attributes(work: Path, monkeypatch) -> None:
    """The copy made where hard links fail was the running user's (root's: a setuid file of another user's
    became setuid root), with the copy's access time and no extended attributes."""
    from bob.commit import Backup

    target = work / "pred.bin"
    target.write_bytes(b"old bytes")
    attributes = True
    try:
        os.setxattr(target, "user.tag", b"kept")
    except OSError:  # (a file system without user attributes: the rest still holds)
        attributes = False
    if os.geteuid() == 0:
        os.chown(target, 4242, 4242)
    os.chmod(target, 0o4750)
    os.utime(target, ns=(10**18, 2 * 10**18))
    before = os.stat(target)
    monkeypatch.setattr(os, "link", lambda *a, **k: (_ for _ in ()).throw(PermissionError(1, "no hard links")))
    backup = Backup(str(target))
    target.write_bytes(b"new bytes")
    backup.restore()
    after = os.stat(target)
    assert target.read_bytes() == b"old bytes"
    assert (after.st_uid, after.st_gid, after.st_mode, after.st_atime_ns, after.st_mtime_ns) == (
        before.st_uid, before.st_gid, before.st_mode, before.st_atime_ns, before.st_mtime_ns)
    assert not attributes or os.getxattr(target, "user.tag") == b"kept"


def test_an_old_file_not_put_back_is_named_where_its_moved_directory_is(work: Path, monkeypatch) -> None:
    """The predictions' directory moved, then the old predictions could not be put back: the refusal said
    nothing of where they are kept (it looked for the backup at the old path)."""
    import errno

    from bob.backup import Backup
    from bob.commands import Refused, about
    from bob.commit import Commit

    (work / "out").mkdir()
    for path in (work / "ck.bin", work / "out" / "pred.bin"):
        path.write_bytes(b"old")
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "out" / "pred.bin"),
                    b"new", about("--predictions", "pred.bin"))

    def stopped() -> None:
        os.rename(work / "out", work / "moved")
        monkeypatch.setattr(Backup, "restore", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.EPERM, "no")))
        raise Refused("busy", code=75)

    message = _stopped_before_its_commit(commit, stopped).message
    [kept] = [p for p in (work / "moved").iterdir() if p.name.startswith(".pred.bin.bob-tmp-")]
    assert f"its old bytes are kept in {kept}," in message and kept.read_bytes() == b"old"


def test_a_checkpoint_removed_as_it_is_committed_is_said_removed(work: Path, monkeypatch) -> None:
    from bob.commands import about
    from bob.commit import Commit

    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    real = Commit._rename

    def renamed_then_removed(self, tmp: str, target: str, *placed) -> None:
        real(self, tmp, target, *placed)
        if target.endswith("ck.bin"):
            os.unlink(target)

    monkeypatch.setattr(Commit, "_rename", renamed_then_removed)
    _committed(commit)
    assert commit.problems[0].startswith("the new checkpoint was removed by another process as it was committed")


def test_a_commit_closed_by_an_exception_closes_its_directories(work: Path, monkeypatch) -> None:
    """An exception while close() removed a temporary (a signal's, in the library) left every directory
    descriptor the commit had opened."""
    from bob.commands import about
    from bob.commit import Commit

    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    commit.stage()
    [directory] = commit.directories.values()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "unlink", interrupted)
    with pytest.raises(KeyboardInterrupt):
        commit.close()
    monkeypatch.undo()
    with pytest.raises(OSError):
        os.fstat(directory)
    assert commit.directories == {}
    commit.close()  # (idempotent: the temporaries, by their paths)
    assert sorted(p.name for p in work.iterdir()) == ["rec.bin"]


def test_a_rollback_that_cannot_look_at_a_file_keeps_the_old_one(work: Path, monkeypatch) -> None:
    """A look during the rollback that failed (EIO, EACCES) was taken for another process's file: nothing put
    back, and the backup, the only copy of the old predictions, removed with the temporaries, the refusal
    saying nothing of it. Now said, and the old bytes kept."""
    import errno

    from bob.commands import Refused, about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin"):
        (work / name).write_bytes(b"old " + name.encode())
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    real = os.open

    def failing_once(path, *args, **kwargs):
        if os.fspath(path) == "pred.bin" and kwargs.get("dir_fd") is not None:
            monkeypatch.setattr(os, "open", real)
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        return real(path, *args, **kwargs)

    def stopped() -> None:
        monkeypatch.setattr(os, "open", failing_once)
        raise Refused("busy", code=75)

    message = _stopped_before_its_commit(commit, stopped).message
    [kept] = [p for p in work.iterdir() if p.name.startswith(".pred.bin.bob-tmp-")]
    assert f"could not be put back (input/output error); its old bytes are kept in {kept}," in message
    assert kept.read_bytes() == b"old pred.bin"


def test_a_checkpoint_that_cannot_be_read_back_is_said_so(work: Path, monkeypatch) -> None:
    """The read-back after the commit failing (EIO) was said as another process's write."""
    import errno

    from bob.commands import about
    from bob.commit import Commit

    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    real, renamed = os.open, []
    real_rename = Commit._rename

    def failing(path, *args, **kwargs):
        if renamed and os.fspath(path) == "ck.bin":
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        return real(path, *args, **kwargs)

    def rename(self, tmp: str, target: str, *placed) -> None:  # (from the checkpoint's rename on, its open fails)
        real_rename(self, tmp, target, *placed)
        if target.endswith("ck.bin"):
            renamed.append(target)

    monkeypatch.setattr(os, "open", failing)
    monkeypatch.setattr(Commit, "_rename", rename)
    _committed(commit)
    assert commit.committed and commit.problems == ["reading the new checkpoint back failed (input/output error)"]


def test_a_backup_copy_sets_its_attributes_after_its_owner(work: Path, monkeypatch) -> None:
    """The copy's extended attributes were set before its owner: a chown clears security.capability."""
    from bob.commit import Backup

    target = work / "pred.bin"
    target.write_bytes(b"old bytes")
    os.setxattr(target, "user.tag", b"kept")
    calls: list[str] = []
    monkeypatch.setattr(os, "geteuid", lambda: 4242)  # (another user's file, as root would see it)
    for name in ("fchown", "setxattr"):
        monkeypatch.setattr(os, name, lambda *a, _name=name, _real=getattr(os, name): (calls.append(_name),
                                                                                       _real(*a))[1])
    monkeypatch.setattr(os, "link", lambda *a, **k: (_ for _ in ()).throw(PermissionError(1, "no hard links")))
    Backup(str(target)).discard()
    assert calls == ["fchown", "setxattr"]


def test_a_look_before_the_commit_that_fails_is_refused_naming_its_file(work: Path, monkeypatch) -> None:
    """The check of the renamed predictions failing (EIO) raised a bare OSError naming no option."""
    import errno

    from bob.commands import Refused, about
    from bob.commit import Commit

    for name in ("ck.bin", "pred.bin"):
        (work / name).write_bytes(b"old " + name.encode())
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    real_open, real_rename = os.open, Commit._rename

    def failing_once(path, *args, **kwargs):
        if os.fspath(path) == "pred.bin":
            monkeypatch.setattr(os, "open", real_open)
            raise OSError(errno.EIO, os.strerror(errno.EIO), path)
        return real_open(path, *args, **kwargs)

    def rename(self, tmp: str, target: str, *placed) -> None:  # (the predictions renamed: their check's open fails)
        real_rename(self, tmp, target, *placed)
        if target.endswith("pred.bin"):
            monkeypatch.setattr(os, "open", failing_once)

    monkeypatch.setattr(Commit, "_rename", rename)
    with pytest.raises(Refused) as refused:
        _committed(commit)
    assert (refused.value.option, refused.value.message) == ("--predictions", "input/output error")
    assert [(work / name).read_bytes() for name in ("ck.bin", "pred.bin")] == [b"old ck.bin", b"old pred.bin"]


@pytest.mark.parametrize("error, said", [(MemoryError("no room"), "MemoryError: no room"),
                                         (MemoryError(), "MemoryError")])  # (it was "MemoryError: ")
def test_a_read_back_that_runs_out_of_memory_after_the_commit_is_recorded(work: Path, monkeypatch, error, said) -> None:
    """The read-back of the committed checkpoint raised what is not an OSError (MemoryError: it allocates the
    checkpoint's size) out of a run that had committed: exit 1, where a caller retrying on it advances twice."""
    import bob.commit
    from bob.commands import about
    from bob.commit import Commit

    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    real = Commit._rename

    def rename(self, tmp: str, target: str, *placed) -> None:  # (the checkpoint renamed: its read-back runs out)
        real(self, tmp, target, *placed)
        if target.endswith("ck.bin"):
            monkeypatch.setattr(bob.commit, "holds", lambda *a: (_ for _ in ()).throw(error))

    monkeypatch.setattr(Commit, "_rename", rename)
    _committed(commit)
    assert commit.committed and commit.problems == [f"reading the new checkpoint back failed ({said})",  # each said
                                                    f"reading the new --predictions pred.bin back failed ({said})"]


def test_a_temporary_removed_as_it_is_staged_is_said_removed(work: Path, monkeypatch) -> None:
    """The predictions' temporary removed by another process just after it was written: bob-run said its
    directory was moved or replaced, which it was not."""
    import bob.commit
    from bob.commands import Refused, about
    from bob.commit import Commit

    real = bob.commit.fileio.stage

    def staged_then_removed(target, data, *args, **kwargs):
        tmp = real(target, data, *args, **kwargs)
        if target.endswith("pred.bin"):
            os.unlink(tmp)
        return tmp

    monkeypatch.setattr(bob.commit.fileio, "stage", staged_then_removed)
    commit = Commit(str(work / "ck.bin"), b"new", about("--checkpoint", "ck.bin"), str(work / "pred.bin"), b"new",
                    about("--predictions", "pred.bin"))
    with pytest.raises(Refused) as refused:
        _committed(commit)
    assert refused.value.message == "its new file was removed by another process while this run wrote it; nothing " \
        "was changed"
    assert sorted(p.name for p in work.iterdir()) == ["rec.bin"]


def test_a_directory_is_synced_by_any_path_given(tmp_path: Path) -> None:
    """fsync_directory took anything but a str for a descriptor: a pathlib path raised TypeError."""
    from bob.fileio import fsync_directory

    fsync_directory(tmp_path, strict=True)
    fsync_directory(os.fsencode(tmp_path), strict=True)


def test_a_run_under_a_file_size_limit_says_its_new_file_could_not_be_written(work: Path) -> None:
    """`ulimit -f 100`: "--checkpoint ck.bin: file too large", which read as if the user's checkpoint were."""
    import resource

    first = bob.invoke(bob.read_input_file(work / "rec.bin"))
    first.checkpoint.write(work / "ck.bin")
    done = subprocess.run(run_args(work, "--json"), capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (100 << 10, 100 << 10)))
    error = json.loads(done.stdout)["error"]
    assert (done.returncode, error["option"], error["message"]) == (2, "--checkpoint", (
        "its new file could not be written: file too large (the file-size limit, ulimit -f, or the largest file its "
        "file system holds); nothing was changed"))
    assert (work / "ck.bin").read_bytes() == first.checkpoint_bytes() and not (work / "pred.bin").exists()
    assert sorted(p.name for p in work.iterdir()) == ["ck.bin", "rec.bin"]
