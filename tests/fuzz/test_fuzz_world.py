"""The ``run`` target's world (bob.fuzz.world, bob.fuzz.faults): every world and every os call
of a commit holds on bob as it is, and the seeded loop finds file bugs only the world shows."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

import bob
import bob.commit
import bob.fileio
from bob.lock import COMMIT_WINDOW
from bob.fuzz import targets, world
from conftest import ROOT
from bob.fuzz.faults import COMMIT_CALLS, ENTRY_CALLS, Crash, OsFaults
from bob.fuzz.loop import seeded_loop
from conftest import GOLDEN

CHECKPOINT = (GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes()
RECORD = (GOLDEN / "input-abracadabra.bin").read_bytes()


def in_world(monkeypatch: pytest.MonkeyPatch, w: world.World, checkpoint: bytes = CHECKPOINT) -> None:
    monkeypatch.setattr(world, "world_of", lambda data: w)
    try:
        want = bob.invoke(RECORD, checkpoint, threads=1)
    except bob.FormatError:
        want = None
    world.run_in_world(checkpoint, RECORD, checkpoint, want, targets._scratch(), targets.quietly)


@pytest.mark.parametrize("other", sorted(set(world.OTHERS)))
@pytest.mark.parametrize("layout", sorted(set(world.LAYOUTS)))
def test_each_layout_meets_each_other_party(monkeypatch: pytest.MonkeyPatch, layout: str, other: str) -> None:
    """Every combination of a layout and another party (the racer and the cleaner at the commit's
    point drawn for it, the power loss of bob-run and of the library writers) holds."""
    point = COMMIT_WINDOW[len(layout + other) % len(COMMIT_WINDOW)]
    for writer in (("bob-run", "library", "bob-run --trace") if other == "powerloss" else ("bob-run",)):
        in_world(monkeypatch, world.World(layout, other=other, point=point, writer=writer.split()[0],
                                          trace=writer.endswith("--trace")))
    in_world(monkeypatch, world.World(layout, other=other, point=point), checkpoint=CHECKPOINT[:-1])  # refused


@pytest.mark.parametrize("mode", ["fail", "crash"])
def test_a_failure_or_a_crash_at_every_os_call_of_a_commit_holds(monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    for k in range(1, world.MAX_CALL + 1):
        in_world(monkeypatch, world.World("plain", mode, k))


@pytest.mark.parametrize("layout,mode,other", [("symlinks", "fail", "racer"), ("symlinks", "crash", "racer"),
                                               ("symlinks", "crash", "cleaner"), ("plain", "fail", "locked"),
                                               ("symlinks", "crash", "none")])
def test_worlds_combine_at_every_os_call(monkeypatch: pytest.MonkeyPatch, layout: str, mode: str, other: str) -> None:
    """Links x a failure or a crash at each call x another party, met at each point in turn (a
    symlinked --predictions whose checkpoint rename then fails, with a second run waiting; a run
    that dies while a second one waits, which is then its next run)."""
    for k in range(1, world.MAX_CALL + 1, 1 if other in ("none", "locked") else 4):
        in_world(monkeypatch, world.World(layout, mode, k, other=other, point=COMMIT_WINDOW[k % len(COMMIT_WINDOW)]))
    for k in range(1, world.ENTRY_CALLS_DRAWN + 1):  # each call that changes a directory entry
        in_world(monkeypatch, world.World(layout, mode, k, True, other, COMMIT_WINDOW[k % len(COMMIT_WINDOW)]))


@pytest.mark.parametrize("layout", sorted(set(world.LAYOUTS)))
def test_the_library_writers_fail_or_die_at_every_call_in_every_layout(monkeypatch: pytest.MonkeyPatch,
                                                                       layout: str) -> None:
    """Predictions.write then Checkpoint.write (no lock, no pair promise but the order) under each
    layout, a failure or a crash at each call; after a crash the next bob-run completes."""
    for mode in ("none", "fail", "crash"):
        for k in range(1, world.MAX_CALL + 1, 1 if layout in ("plain", "symlinks") else 5):
            in_world(monkeypatch, world.World(layout, mode, k, writer="library"))
            if mode == "none":
                break
    in_world(monkeypatch, world.World(layout, writer="library"), checkpoint=CHECKPOINT[:-1])


def test_the_worlds_drawn_cover_every_combination() -> None:
    drawn = {world.world_of(i.to_bytes(4, "little")) for i in range(20_000)}
    axes = {(w.layout, w.fault, w.other) for w in drawn}
    for layout in world.LAYOUTS:
        for other in set(world.OTHERS) - {"powerloss"}:
            assert {(layout, f, other) for f in world.FAULTS} <= axes, (layout, other)
    assert {(w.layout, w.writer) for w in drawn if w.other == "powerloss"} == {
        (layout, writer) for layout in ("plain", "symlinks") for writer in ("bob-run", "library")}
    assert {(w.layout, w.writer, w.trace) for w in drawn if w.trace} == {  # --trace: bob-run's, under a power loss
        (layout, "bob-run", True) for layout in ("plain", "symlinks")} and all(w.other == "powerloss" for w in drawn
                                                                                if w.trace)
    assert {w.point for w in drawn if w.other == "racer"} == set(COMMIT_WINDOW)
    assert {(w.layout, w.fault) for w in drawn if w.writer == "library" and w.other == "none"} == {
        (layout, fault) for layout in world.LAYOUTS for fault in world.FAULTS}


def test_a_completed_run_makes_the_calls_the_worlds_draw(tmp_path: Path) -> None:
    """As in a world: the checkpoint and the predictions there (every call is drawn, the lock's last ones too)."""
    (tmp_path / "r").write_bytes(RECORD)
    (tmp_path / "c").write_bytes(CHECKPOINT)
    (tmp_path / "p").write_bytes(b"old predictions")
    from bob.run import main

    with OsFaults("fail", 10 ** 9) as faults:
        rc = main(["--input", str(tmp_path / "r"), "--checkpoint", str(tmp_path / "c"),
                   "--predictions", str(tmp_path / "p")])
    assert rc == 0 and not faults.hit and not faults.left_open
    assert faults.calls == world.MAX_CALL  # every call of the commit is drawn, and no draw is past the last
    every_call = faults.calls
    (tmp_path / "c").write_bytes(CHECKPOINT)
    with OsFaults("fail", 10 ** 9, only=ENTRY_CALLS) as faults:
        rc = main(["--input", str(tmp_path / "r"), "--checkpoint", str(tmp_path / "c"),
                   "--predictions", str(tmp_path / "p")])
    assert rc == 0 and faults.calls == world.ENTRY_CALLS_DRAWN - 1  # each entry call, and once none
    # docs/fuzzing.md's counts are these
    doc = (ROOT / "docs" / "fuzzing.md").read_text(encoding="utf-8")
    assert f"k from 1 to {world.ENTRY_CALLS_DRAWN}, a run makes {faults.calls})" in doc
    assert f"k counts every call (k from 1 to {world.MAX_CALL})" in doc
    assert f"a completed run in a world (a checkpoint and predictions there) makes {every_call} of them" in doc


def test_faults_fail_once_or_end_the_world(tmp_path: Path) -> None:
    target = tmp_path / "f"
    originals = {name: getattr(os, name) for name in COMMIT_CALLS}
    with OsFaults("fail", 2) as faults:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError) as raised:
            os.write(fd, b"x")
        os.write(fd, b"y")  # only the k-th call fails
        os.close(fd)
    assert raised.value.errno == errno.ENOSPC and faults.failed == ("write", fd)
    assert target.read_bytes() == b"y" and not faults.left_open

    with OsFaults("crash", 2) as faults:
        fd = os.open(target, os.O_WRONLY | os.O_TRUNC)
        with pytest.raises(Crash):
            os.write(fd, b"z")
        with pytest.raises(Crash):
            os.unlink(target)  # after the crash nothing happens
    assert target.read_bytes() == b"" and faults.left_open == [fd]
    with pytest.raises(OSError):
        os.fstat(fd)  # closed, as the kernel closes a dead process's descriptors
    assert {name: getattr(os, name) for name in COMMIT_CALLS} == originals  # the real functions again

    import threading

    with OsFaults("fail", 1) as faults:  # another thread stands for another process: never counted
        other = threading.Thread(target=lambda: os.close(os.open(target, os.O_RDONLY)))
        other.start()
        other.join()
    assert faults.calls == 0 and not faults.hit


# --------------------------------------------------------------------------- #
# Planted bugs the world finds (benchmarks/planted_bugs.py has them as patches too)
# --------------------------------------------------------------------------- #


def test_the_seeded_loop_finds_a_skipped_hard_link_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    real = bob.fileio.refuse_unreplaceable

    def allows_two_links(path: str, st: "os.stat_result | None" = None) -> None:
        st = st if st is not None else (os.stat(path) if os.path.exists(path) else None)
        if st is not None and st.st_nlink == 2:
            return  # the bug: a second name is taken for a backup link of bob's
        real(path, st)

    monkeypatch.setattr(bob.fileio, "refuse_unreplaceable", allows_two_links)
    result = seeded_loop("run", 300, seed=1)
    assert result.findings, "the world's hard links did not find a hard-link refusal that is skipped"
    said = result.findings[0].message  # by the run itself, or by the next one after a crash
    assert "accepted what it must refuse" in said or ("hardlink" in said and "the next bob-run exited 0" in said)


def test_the_seeded_loop_finds_a_skipped_rollback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bob.commit.Backup, "restore", lambda self, *a, **k: None)  # the old predictions never put back
    result = seeded_loop("run", 400, seed=1)
    assert result.findings, "a failing checkpoint rename did not show a rollback that is skipped"
    assert "the files changed" in result.findings[0].message


def test_the_seeded_loop_finds_a_lost_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fchmod", lambda fd, mode: None)  # the new files get the umask's mode
    result = seeded_loop("run", 300, seed=1)
    assert result.findings and "lost its mode" in result.findings[0].message


def test_a_failure_after_the_commit_is_reported_as_a_commit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A clean-up that fails after the checkpoint's rename (here: removing the old predictions'
    backup link, EIO) is told on stderr, and bob-run exits 0: the invocation happened."""
    from bob.run import main

    (tmp_path / "r").write_bytes(RECORD)
    ck, pred = tmp_path / "c", tmp_path / "p"

    def only_the_backup(name: str, args: tuple) -> bool:  # a temporary's removal after this run's rename
        return not (name == "unlink" and bob.fileio.TEMP_MARK in os.fspath(args[0]) and bob.fileio.identity(ck) != before)

    for k in range(1, world.MAX_CALL + 1):
        ck.write_bytes(CHECKPOINT)
        pred.write_bytes(b"old")
        before = bob.fileio.identity(ck)  # this run's: the new checkpoint, made while ck exists, is another inode
        with OsFaults("fail", k, spare=only_the_backup) as faults:
            rc = main(["--input", str(tmp_path / "r"), "--checkpoint", str(ck), "--predictions", str(pred)])
        if faults.hit:
            break
    assert faults.hit and ck.read_bytes() != CHECKPOINT  # committed: the new checkpoint is in place
    assert rc == 0, f"bob-run committed but exited {rc}"
    told = capsys.readouterr().err.strip().splitlines()[-1]
    assert "the invocation committed step 20" in told and "removing the backup link" in told and "(injected)" in told


@pytest.mark.parametrize("limit", [6, 7, 8, 40])
def test_a_world_without_descriptors_to_spare_is_no_verdict(limit: int, tmp_path: Path) -> None:
    """Under ``ulimit -n`` a world's bob-run failed to open a file ("too many open files": a failing replay, exit
    1), or its racer could not open the pipe the run waited on (a hang no signal ended), and the scratch stayed.
    Short of WORLD_DESCRIPTORS free it is the machine's (exit 70, no verdict), and nothing is left."""
    import resource
    import subprocess
    import sys

    data = bytearray(RECORD)
    data[470:472], data[1436] = b"Z\x92", 0x92  # one pair and its widened target: a cleaner meets the commit
    assert str(world.world_of(bytes(data))) == "world symlinks, cleaner at committed"
    (tmp_path / "input.bin").write_bytes(data)
    (scratch := tmp_path / "tmp").mkdir()
    done = subprocess.run([sys.executable, "-m", "bob", "fuzz", "replay", "--target", "run", "input.bin"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(ROOT / "python")),
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit)))
    assert done.returncode == 70 and "no verdict" in done.stderr, (done.returncode, done.stdout, done.stderr)
    assert list(scratch.iterdir()) == []
