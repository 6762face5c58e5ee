"""Hostile paths (issue 9, classes 1, 2, 7, 8): devices, FIFOs, sockets,
directories and symbolic links given to every path option of every command.

Each refusal: exit 2, one line naming the option and the path (escaped), no
traceback, nothing created or changed on disk, and no waiting."""

from __future__ import annotations

import fcntl
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import bob
from conftest import CKPT_10_SHA256, CORPUS, PROMPTS, make_special, sha

BIN = Path(sys.executable).parent
TIMEOUT = 10  # seconds: a hang fails the test instead of stalling the suite


def command(name: str, *args: str, stdout=subprocess.PIPE) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / name), *map(str, args)], stdout=stdout, stderr=subprocess.PIPE,
                          timeout=TIMEOUT)


KINDS = ["directory", "fifo", "socket", "char-device"]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    bob.build_input(CORPUS, PROMPTS).write(tmp_path / "rec.bin")
    bob.invoke(bob.read_input_file(tmp_path / "rec.bin")).checkpoint.write(tmp_path / "ck.bin")
    (tmp_path / "pred.bin").write_bytes(b"old predictions")
    return tmp_path


def snapshot(directory: Path) -> dict[str, object]:
    out: dict[str, object] = {}
    for p in sorted(directory.iterdir()):
        st = p.lstat()
        out[p.name] = (stat.S_IFMT(st.st_mode), p.read_bytes() if stat.S_ISREG(st.st_mode) else None)
    return out


def assert_refused(out: subprocess.CompletedProcess, option: str, path: Path) -> str:
    err = out.stderr.decode()
    assert out.returncode == 2, err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert option in err and str(path) in err, err
    return err


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("option", ["--input", "--checkpoint", "--predictions"])
def test_bob_run_refuses_special_files(work: Path, kind: str, option: str) -> None:
    special = work / f"special-{kind}"
    make_special(kind, special)
    paths = {"--input": work / "rec.bin", "--checkpoint": work / "ck.bin", "--predictions": work / "pred.bin"}
    paths[option] = special
    before = snapshot(work)
    t0 = time.monotonic()
    out = command("bob-run", *[x for k, v in paths.items() for x in (k, v)])
    assert time.monotonic() - t0 < TIMEOUT / 2
    assert_refused(out, option, special)
    assert snapshot(work) == before  # nothing changed, nothing created (no lock file, no temporary)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("option", ["--corpus", "--output"])
def test_bob_fixture_refuses_special_files(work: Path, kind: str, option: str) -> None:
    special = work / f"special-{kind}"
    make_special(kind, special)
    (work / "corpus.txt").write_bytes(CORPUS)
    paths = {"--corpus": work / "corpus.txt", "--output": work / "out.bin"}
    paths[option] = special
    before = snapshot(work)
    out = command("bob-fixture", *[x for k, v in paths.items() for x in (k, v)], "--prompt", "a", "--prompt", "b",
                  "--prompt", "")
    assert_refused(out, option, special)
    assert snapshot(work) == before


@pytest.mark.parametrize("kind", KINDS)
def test_bob_inspect_refuses_special_files_and_heatmap_targets(work: Path, kind: str) -> None:
    special = work / f"special-{kind}"
    make_special(kind, special)
    before = snapshot(work)
    out = command("bob-inspect", special)
    assert out.returncode == 2 and str(special) in out.stderr.decode() and b"Traceback" not in out.stderr
    out = command("bob-inspect", "ckpt", work / "ck.bin", "--heatmap", special)
    assert out.returncode == 2 and str(special) in out.stderr.decode() and b"Traceback" not in out.stderr
    assert snapshot(work) == before


@pytest.mark.parametrize("where", ["--input", "the lock", "inspect"])
def test_a_fifo_someone_waits_on_is_refused_without_being_opened(work: Path, where: str) -> None:
    """bob refuses a FIFO by the path's stat, never opening it: an open woke the process waiting at its other end,
    whose data was lost (a writer got SIGPIPE) or which read an empty file. It waits on, then gets all of it."""
    fifo, record = work / "fifo", (work / "rec.bin").read_bytes()
    if where == "the lock":
        fifo = work / ".ck.bin.bob-lock"
    os.mkfifo(fifo)
    other = (["sh", "-c", f"cat '{work / 'rec.bin'}' > '{fifo}'"] if where != "the lock" else
             ["sh", "-c", f"cat '{fifo}' > '{work / 'read'}'"])  # (a writer to a file bob reads, else a reader)
    proc = subprocess.Popen(other, stderr=subprocess.DEVNULL)
    try:
        if where == "inspect":
            out = command("bob-inspect", fifo)
            assert out.returncode == 2 and b"not a regular file" in out.stderr, out
        else:
            paths = {"--input": work / "rec.bin", "--checkpoint": work / "ck.bin", "--predictions": work / "pred.bin"}
            paths.update({where: fifo} if where == "--input" else {})  # (the lock: the checkpoint's, beside it)
            out = command("bob-run", *(x for name, path in paths.items() for x in (name, path)))
            assert out.returncode == 2 and f"{fifo}".encode() in out.stderr and b"not a regular file" in out.stderr
            assert (work / "pred.bin").read_bytes() == b"old predictions"
        time.sleep(0.2)
        assert proc.poll() is None, "the process at the FIFO's other end was woken"
        if where == "the lock":
            fd = os.open(fifo, os.O_WRONLY)
            os.write(fd, b"ours")
            os.close(fd)
            assert proc.wait(timeout=TIMEOUT) == 0 and (work / "read").read_bytes() == b"ours"
        else:
            with open(fifo, "rb") as pipe:
                assert pipe.read() == record
            assert proc.wait(timeout=TIMEOUT) == 0
    finally:
        proc.kill()
        proc.wait()


def test_predictions_on_a_device_node_never_replaces_it(work: Path) -> None:
    """The regression that opened issue 9: as root, bob-run --predictions /dev/null
    replaced the system's /dev/null with a regular file. (Our own node, not the system's.)"""
    node = work / "null"
    make_special("null-device", node)
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "ck.bin", "--predictions", node)
    assert_refused(out, "--predictions", node)
    assert stat.S_ISCHR(node.lstat().st_mode)


def test_no_lock_file_beside_a_device(work: Path) -> None:
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", "/dev/zero", "--predictions",
                  work / "p2.bin")
    assert_refused(out, "--checkpoint", Path("/dev/zero"))
    assert not os.path.lexists("/dev/.zero.bob-lock")


# ----------------------------------------------------------- symbolic links ---
def test_links_are_followed_the_target_is_replaced_and_the_link_stays(work: Path) -> None:
    store = work / "store"
    store.mkdir()
    (store / "real.ckpt").write_bytes(b"")  # empty: a fresh run
    (work / "link.ckpt").symlink_to(store / "real.ckpt")
    (store / "real.pred").write_bytes(b"")
    (work / "link.pred").symlink_to(store / "real.pred")
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "link.ckpt", "--predictions",
                  work / "link.pred")
    assert out.returncode == 0, out.stderr
    assert (work / "link.ckpt").is_symlink() and (work / "link.pred").is_symlink()
    assert sha((store / "real.ckpt").read_bytes()) == CKPT_10_SHA256
    assert len((store / "real.pred").read_bytes()) == 24
    # the lock file (beside the target, next test) is removed at the end, and no temporary file is left anywhere
    assert not (store / ".real.ckpt.bob-lock").exists() and not (work / ".link.ckpt.bob-lock").exists()
    leftovers = [p.name for d in (work, store) for p in d.iterdir() if ".bob-tmp-" in p.name]
    assert not leftovers


def test_two_links_to_one_checkpoint_exclude_each_other(work: Path) -> None:
    (work / "a.ckpt").symlink_to(work / "ck.bin")
    (work / "b.ckpt").symlink_to(work / "ck.bin")
    lock = os.open(work / ".ck.bin.bob-lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)  # what a bob-run working through a.ckpt holds
    try:
        before = (work / "ck.bin").read_bytes()
        out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "b.ckpt", "--predictions",
                      work / "pred2.bin")
        assert out.returncode == 75, out.stderr
        assert (work / "ck.bin").read_bytes() == before and not (work / "pred2.bin").exists()
    finally:
        os.close(lock)


def test_a_dangling_link_is_a_fresh_run_written_at_its_target(work: Path) -> None:
    (work / "dangling.ckpt").symlink_to(work / "new.ckpt")
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "dangling.ckpt",
                  "--predictions", work / "p.bin")
    assert out.returncode == 0, out.stderr
    assert (work / "dangling.ckpt").is_symlink() and sha((work / "new.ckpt").read_bytes()) == CKPT_10_SHA256


@pytest.mark.parametrize("link, error", [("nope/../y.bin", FileNotFoundError), ("sub/x.bin/", IsADirectoryError),
                                         ("hop", FileNotFoundError)])
def test_a_dangling_link_is_resolved_as_the_kernel_resolves_it(work: Path, link: str, error: type) -> None:
    """A dangling link's text was resolved as a string: nope/../y.bin created y.bin beside it (the kernel
    refuses it: nope is missing), sub/x.bin/ created sub/x.bin (the kernel: a directory path), for the
    library and bob-run alike; through a second link too."""
    (work / "sub").mkdir()
    if link == "hop":
        (work / "hop").symlink_to("nope/../y.bin")
    (work / "dl").symlink_to(link)
    with pytest.raises(error):
        bob.invoke(bob.read_input_file(work / "rec.bin")).predictions.write(work / "dl")
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "ck.bin", "--predictions", work / "dl")
    assert out.returncode == 2 and os.fsencode(f"--predictions {work / 'dl'}: ") in out.stderr, out.stderr
    assert sorted(p.name for p in work.iterdir() if not p.is_symlink()) == ["ck.bin", "pred.bin", "rec.bin", "sub"]
    assert list((work / "sub").iterdir()) == []


@pytest.mark.parametrize("option", ["--checkpoint", "--predictions"])
def test_a_link_to_the_input_is_a_collision_named_by_the_option_of_the_file_replaced(work: Path, option: str) -> None:
    import json

    (work / "alias.bin").symlink_to(work / "rec.bin")
    paths = {"--checkpoint": work / "ck.bin", "--predictions": work / "p.bin", option: work / "alias.bin"}
    out = command("bob-run", "--input", work / "rec.bin", *(x for o, p in paths.items() for x in (o, p)), "--json")
    error = json.loads(out.stdout)["error"]
    assert out.returncode == 2 and (error["option"], error["path"]) == (option, str(work / "alias.bin"))
    assert out.stderr.decode() == f"bob-run: refused: {option} {work / 'alias.bin'}: names the same file as --input; " \
        "each needs its own\n"


# ------------------------------------------------- messages and command lines ---
def test_a_path_with_control_characters_is_one_escaped_line(work: Path) -> None:
    evil = work / "evil\n\x1b[31mverdict: OK\r.bin"
    out = command("bob-run", "--input", evil, "--checkpoint", work / "ck.bin", "--predictions", work / "p.bin",
                  "--json")
    err = out.stderr.decode()
    assert out.returncode == 2 and err.count("\n") == 1 and "\x1b" not in err and "\r" not in err
    assert "evil\\x0a\\x1b[31mverdict: OK\\x0d.bin" in err
    import json

    error = json.loads(out.stdout)["error"]
    assert error["option"] == "--input" and error["exit_code"] == 2 and "\\x0a" in error["path"]


@pytest.mark.parametrize("wait", ["nan", "inf", "-1", "-0.5", "soon", "1e999"])
def test_wait_must_be_a_finite_number_of_seconds(work: Path, wait: str) -> None:
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "ck.bin", "--predictions",
                  work / "pred.bin", f"--wait={wait}", "--json")
    assert out.returncode == 2 and b"--wait" in out.stderr and b"Traceback" not in out.stderr
    import json

    assert json.loads(out.stdout)["error"]["option"] == "--wait"


def test_usage_errors_are_one_json_object_under_json(work: Path) -> None:
    import json

    for name, args in (("bob-run", ["--input", "x", "--json"]), ("bob-fixture", ["--json", "--output", "o"]),
                       ("bob-inspect", ["ckpt", "--json"])):
        out = command(name, *args)
        assert out.returncode == 2 and b"Traceback" not in out.stderr
        document = json.loads(out.stdout)
        assert document["error"]["message"].startswith("usage:") if "error" in document else False


def test_fixture_output_onto_its_corpus_is_refused(work: Path) -> None:
    corpus = work / "corpus.txt"
    corpus.write_bytes(CORPUS * 10)
    (work / "alias.txt").symlink_to(corpus)
    for output in (corpus, work / "alias.txt"):
        out = command("bob-fixture", "--corpus", corpus, "--output", output, "--prompt", "a", "--prompt", "b",
                      "--prompt", "")
        assert out.returncode == 2 and b"--output " + bytes(output) + b": names the same file as --corpus" in out.stderr
        assert corpus.read_bytes() == CORPUS * 10


def test_fixture_refuses_a_link_to_its_corpus_planted_at_the_output_while_it_builds(work: Path, monkeypatch,
                                                                                   capsys) -> None:
    """The output was checked against --corpus once, at the start: a link to the corpus planted at the
    output while the record was built was followed, and the corpus became the record."""
    from bob.fixture import main

    corpus = work / "corpus.txt"
    corpus.write_bytes(CORPUS * 10)
    real = bob.build_input

    def planting(*args):
        (work / "out.bin").symlink_to(corpus)
        return real(*args)

    monkeypatch.setattr(bob, "build_input", planting)
    assert main(["--corpus", str(corpus), "--output", str(work / "out.bin"), "--prompt", "a", "--prompt", "b",
                 "--prompt", ""]) == 2
    assert capsys.readouterr().err == (f"bob-fixture: refused: --output {work / 'out.bin'}: that is a file this "
                                       "command read; bob never replaces what it reads\n")
    assert corpus.read_bytes() == CORPUS * 10


def test_fixture_reads_only_what_the_record_needs(work: Path) -> None:
    huge = work / "huge.txt"
    with open(huge, "wb") as f:  # 64 GiB, sparse: reading it whole would take minutes and all memory
        f.write(CORPUS)
        f.truncate(64 << 30)
    t0 = time.monotonic()
    out = command("bob-fixture", "--corpus", huge, "--output", work / "out.bin", "--prompt", "abra", "--prompt",
                  "cad", "--prompt", "", "--json")
    assert out.returncode == 0 and time.monotonic() - t0 < 5
    import json

    assert json.loads(out.stdout)["corpus_bytes"] == 64 << 30
    want = bob.build_input(CORPUS + bytes(300), PROMPTS).to_bytes()  # the first 257 bytes decide the record
    assert (work / "out.bin").read_bytes() == want


def test_stale_temporaries_beside_a_link_target_are_cleaned(work: Path) -> None:
    from bob.fileio import temporary_name

    store = work / "store"
    store.mkdir()
    (store / "real.ckpt").write_bytes((work / "ck.bin").read_bytes())
    (work / "link.ckpt").symlink_to(store / "real.ckpt")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = Path(temporary_name(str(store / "real.ckpt"), pid=int(dead.stdout)))
    stale.write_bytes(b"half a checkpoint")
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "link.ckpt", "--predictions",
                  work / "p.bin")
    assert out.returncode == 0 and not stale.exists()


def test_names_like_a_temporarys_with_no_pid_bob_writes_stop_no_clean_up(work: Path) -> None:
    """A Unicode digit ("²" is str.isdigit) or a pid past any process beside the checkpoint: every bob-run
    exited 1 (int("²") raised) and the library's clean-up raised, removing no real stale temporary."""
    from bob.fileio import temporary_name

    ck = work / "model.bob"
    odd = [work / f".model.bob.bob-tmp-{pid}-x" for pid in ("²", "٣")]
    huge = Path(temporary_name(str(ck), pid=10 ** 20))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = Path(temporary_name(str(ck), pid=int(dead.stdout)))
    for path in (*odd, huge, stale):
        path.write_bytes(b"half a checkpoint")
    assert sorted(bob.clean_stale_temporaries(ck)) == sorted([str(huge), str(stale)])  # no process has such a pid
    assert all(path.exists() for path in odd)  # names bob never writes: not its to remove
    stale.write_bytes(b"half a checkpoint")
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", ck, "--predictions", work / "p.bin")
    assert out.returncode == 0 and not stale.exists(), out.stderr


def test_library_readers_refuse_special_files_too(work: Path) -> None:
    from bob.fileio import NotARegularFile

    fifo = work / "fifo"
    os.mkfifo(fifo)
    for reader in (bob.read_input_file, bob.read_checkpoint_file, bob.read_predictions_file):
        with pytest.raises(NotARegularFile):
            reader(fifo)
        with pytest.raises(NotARegularFile):
            reader(work)
    node = work / "node"
    make_special("null-device", node)
    with pytest.raises(NotARegularFile):
        bob.invoke(bob.read_input_file(work / "rec.bin")).predictions.write(node)
    assert stat.S_ISCHR(node.lstat().st_mode)


def test_a_file_the_command_line_names_is_never_taken_for_a_stale_temporary(work: Path) -> None:
    """An input, or predictions, named like a temporary of the checkpoint (but not as bob names one:
    {pid}-{12 hex}) was removed as stale, even by a run that was then refused; and a checkpoint `x`
    took the temporaries of a checkpoint named `x.bob-tmp-5-abc` for its own."""
    record = work / ".model.bob.bob-tmp-2-myinput"
    record.write_bytes((work / "rec.bin").read_bytes())
    predictions = work / ".model.bob.bob-tmp-7-mypredicts"
    predictions.write_bytes(b"old predictions")
    other = work / ".model.bob.bob-tmp-5-abc.bob-tmp-999999999-0123456789ab"  # model.bob.bob-tmp-5-abc's temporary
    other.write_bytes(b"half a checkpoint")
    (work / "model.bob").write_bytes(b"not a checkpoint")
    out = command("bob-run", "--input", record, "--checkpoint", work / "model.bob", "--predictions", predictions)
    assert out.returncode == 2 and b"--checkpoint" in out.stderr
    assert record.exists() and predictions.read_bytes() == b"old predictions" and other.exists()
    (work / "model.bob").unlink()
    out = command("bob-run", "--input", record, "--checkpoint", work / "model.bob", "--predictions", predictions)
    assert out.returncode == 0 and record.exists() and other.exists(), out.stderr
    exact = work / ".model.bob.bob-tmp-999999999-0123456789ab"  # named as bob names one: still given, still kept
    record.rename(exact)
    out = command("bob-run", "--input", exact, "--checkpoint", work / "model.bob", "--predictions", predictions,
                  "--expect-checkpoint", "0" * 64)
    assert out.returncode == 2 and exact.exists(), out.stderr


def test_two_paths_through_a_bind_mount_to_one_new_file_are_one_file(work: Path) -> None:
    """Not there yet, the same name in one directory seen at two paths was two files: the trace was
    written and then replaced by the predictions (exit 0), a checkpoint with predictions on it
    was "replaced by another process" (exit 75, try again: for ever), the checkpoint's lock
    file was taken for predictions, and an input named like a temporary, given through the
    mount, was removed as one."""
    import subprocess as sp

    seen = work / "seen"
    seen.mkdir()
    done = sp.run(["mount", "--bind", str(work), str(seen)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {done.stderr.decode().strip()}")
    try:
        named = seen / ".new.bob.bob-tmp-999999999-0123456789ab"  # an input named as bob names a temporary
        (work / named.name).write_bytes((work / "rec.bin").read_bytes())
        out = command("bob-run", "--input", named, "--checkpoint", work / "new.bob", "--predictions", work / "p.bin",
                      "--expect-checkpoint", "0" * 64)
        assert out.returncode == 2 and (work / named.name).exists(), out.stderr  # kept, seen through the mount
        (work / named.name).unlink()
        for option, said, extra in (
                ("--trace", "names the same file as --predictions", ["--predictions", work / "p.bin", "--trace",
                                                                      seen / "p.bin"]),
                ("--predictions", "names the same file as --checkpoint", ["--predictions", seen / "new.bob"]),
                ("--predictions", "names the checkpoint's lock file", ["--predictions", seen / ".new.bob.bob-lock"])):
            out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "new.bob", *extra)
            assert out.returncode == 2 and f"{option} ".encode() in out.stderr and said.encode() in out.stderr, \
                out.stderr
            assert not (work / "p.bin").exists() and not (work / "new.bob").exists()
    finally:
        sp.run(["umount", "-l", str(seen)], check=False)


def test_a_file_root_replaces_stays_its_owners(work: Path) -> None:
    """Root's run made a user's checkpoint and predictions root's, mode kept: 0640 files their owner
    could no longer read."""
    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    for name in ("ck.bin", "pred.bin"):
        os.chown(work / name, 65534, 65534)
        os.chmod(work / name, 0o640)
    out = command("bob-run", "--input", work / "rec.bin", "--checkpoint", work / "ck.bin", "--predictions",
                  work / "pred.bin")
    assert out.returncode == 0, out.stderr
    for name in ("ck.bin", "pred.bin"):
        st = (work / name).stat()
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (65534, 65534, 0o640)


def test_an_owner_that_cannot_be_kept_does_not_stop_a_write(work: Path, monkeypatch) -> None:
    """Keeping the owner is best effort: an id a user namespace does not map is EINVAL, and a write
    to a file whose group was unmapped was refused ("invalid argument")."""
    import errno

    if os.geteuid() != 0:
        pytest.skip("only root can give a file to another user")
    os.chown(work / "pred.bin", 65534, 65534)
    monkeypatch.setattr(os, "fchown", lambda *a: (_ for _ in ()).throw(OSError(errno.EINVAL, "Invalid argument")))
    bob.write_atomic(work / "pred.bin", b"new predictions")
    assert (work / "pred.bin").read_bytes() == b"new predictions"


def test_a_link_another_user_put_in_a_sticky_directory_is_not_followed(work: Path) -> None:
    """The /tmp trap: root's ``bob-fixture --output /tmp/x``, where another user had put x -> a file of
    root's, replaced that file (bob resolves links itself, so the kernel's fs.protected_symlinks never saw
    the write). Root's own link there is followed, as the directory owner's would be."""
    from bob.fileio import NotReplaceable, write_atomic

    if os.geteuid() != 0:
        pytest.skip("only root can give a link to another user")
    shared = work / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    precious = work / "precious"
    precious.write_bytes(b"root's own")
    link = shared / "rec.bin"
    link.symlink_to(precious)
    os.lchown(link, 65534, 65534)
    err = assert_refused(command("bob-fixture", "--text", "abc", "--prompt", "a", "--prompt", "b", "--prompt", "c",
                                 "--output", link), "--output", link)
    assert "a link another user (uid 65534) put in a sticky directory others can write" in err
    with pytest.raises(NotReplaceable, match="fs.protected_symlinks"):
        write_atomic(link, b"new")
    assert precious.read_bytes() == b"root's own" and sorted(p.name for p in shared.iterdir()) == ["rec.bin"]
    os.lchown(link, 0, 0)
    write_atomic(link, b"new")
    assert precious.read_bytes() == b"new" and link.is_symlink()
