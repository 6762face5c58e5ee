"""Power loss: every state a POSIX file system may leave of a commit, judged
(bob.fuzz.powerloss: recorded operations, unsynced writes and directory
entries dropped in every combination). The whole state space of each
scenario is small (8 to 718 states), so the suite judges all of it."""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import stat
from pathlib import Path

import pytest

import bob
import bob.commit
import bob.fileio
from bob.fuzz import powerloss
from bob.fuzz.properties import PropertyFailed
from bob.fuzz.world import library_writer
from bob.lock import LOCK_TAG

RECORD = bob.build_input(b"abracadabra", [b"abra", b"cad", b""]).to_bytes()
FIRST = bob.invoke(RECORD, b"", threads=1, trace=True)
# (the old predictions differ from the new: §8's do not change from step 10 to step 20, and a new checkpoint
# beside the old predictions would pass for the pair; "first": no file at all, "fresh": an empty checkpoint)
STATES = {"first": (None, None), "fresh": (b"", None),
          "resumed": (FIRST.checkpoint_bytes(), b"an earlier run's predictions")}


def judge_every_state(sc: powerloss.Scenario, scratch: Path) -> int:
    """powerloss.check_states with the next runs' fsyncs skipped (the recording has made its own): what is
    judged is what each next run finds and writes, not whether it would survive a second power loss, and
    fsync is a third of a traced scenario's time on host B's disk. A descriptor fsync would refuse (closed,
    O_PATH) is refused still."""
    def no_sync(fd: int) -> None:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_PATH:  # (EBADF for a closed one, as fsync's)
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", no_sync)
        return powerloss.check_states(sc, scratch)


@pytest.mark.parametrize("trace", [False, True], ids=["pair", "traced"])
@pytest.mark.parametrize("links", [False, True], ids=["files", "symlinks"])
@pytest.mark.parametrize("start", sorted(STATES))
def test_every_crash_state_of_bob_run_resumes(tmp_path: Path, start: str, links: bool, trace: bool) -> None:
    """With --trace the trace (in a directory of its own; a resumed run's over the last run's trace) is
    committed with the pair: old states have the old trace, and the new checkpoint is never beside another."""
    old_trace = FIRST.trace_bytes() if start == "resumed" and trace else None
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES[start], links=links, trace=trace, old_trace=old_trace)
    assert [op.kind for op in sc.ops].count("fsyncdir") >= 2 + trace  # the model saw bob's directory syncs
    judged = judge_every_state(sc, tmp_path / "next")
    assert judged >= len(sc.ops)


@pytest.mark.parametrize("links", [False, True], ids=["files-pair", "symlinks-traced"])
def test_a_run_that_rolls_back_leaves_the_old_files_after_any_power_loss(tmp_path: Path, links: bool) -> None:
    """Its lock found deleted at its last check, the run puts the old predictions (and trace) back (exit 75):
    once it has said so, no power loss brings the new ones back."""
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES["resumed"], links=links, trace=links,
                              old_trace=FIRST.trace_bytes() if links else None, lock_lost=True)
    assert "rename" in [op.kind for op in sc.ops] and not sc.committed  # (the predictions were renamed, then back)
    assert judge_every_state(sc, tmp_path / "next") >= len(sc.ops)


@pytest.mark.parametrize("lock_lost", [False, True], ids=["committed", "rolled-back"])
def test_a_backup_copied_where_hard_links_fail_survives_any_power_loss(tmp_path: Path, lock_lost: bool,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Where hard links fail the old predictions are kept as a copy, written through Python's io layer the
    recorder does not see: a run that rolled back failed its own check (the recorder missed a call), and a
    committed one was judged with the copy empty. It is written through ``os``'s calls, judged as any file."""
    def no_link(*args, **kwargs):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(os, "link", no_link)
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES["resumed"], lock_lost=lock_lost)
    assert [op.kind for op in sc.ops].count("create") == 2 + 2 + 1  # (two locks, two temporaries, the copy)
    assert judge_every_state(sc, tmp_path / "next") >= len(sc.ops)


def test_every_crash_state_of_the_library_writers_resumes(tmp_path: Path) -> None:
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES["resumed"], writer=library_writer)
    assert judge_every_state(sc, tmp_path / "next") > 0


def test_the_recorder_sees_every_change(tmp_path: Path) -> None:
    """The model rebuilds the tree the run left (record_run checks it); a call it does not
    watch is noticed."""
    directory = tmp_path / "d"
    directory.mkdir()
    recorder = powerloss.Recorder(directory)
    with recorder:
        fd = os.open(directory / "f", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b"hello")
        os.pwrite(fd, b"J", 0)
        os.fsync(fd)
        os.close(fd)
        os.link(directory / "f", directory / "g")
        os.replace(directory / "g", directory / "h")
        os.truncate(directory / "h", 2)  # not watched: bob never truncates by path
    assert [op.kind for op in recorder.ops] == ["create", "write", "write", "fsync", "link", "rename"]
    final = recorder.image.copy()
    for op in recorder.ops:
        final.apply(op)
    assert final.read(str(directory.resolve()), "f") == b"Jello"
    assert (directory / "h").read_bytes() == b"Je"  # the model says Jello: the missed call shows


def test_durability_follows_posix() -> None:
    root = "/r"
    ops = [powerloss.Op("create", 1, (root, "t")), powerloss.Op("write", 1, data=b"x"),
           powerloss.Op("fsync", 1), powerloss.Op("rename", 1, (root, "t"), (root, "f")),
           powerloss.Op("fsyncdir", entry=(root, ""))]
    assert powerloss.durable_before(ops, 4) == [False, True, True, False]  # entries wait for the directory
    assert powerloss.durable_before(ops, 5) == [True, True, True, True, True]
    trees = {(k, tuple(sorted((name, data) for (_, name), data in state.listing().items())))
             for k, _, state in powerloss.crash_states(powerloss.Image({}, {}), ops)}
    # Nothing, the empty or the written temporary, or the file (a rename may reach the disk before
    # its create; the inode's data, synced before it, is there): never an empty "f".
    assert {t for _, t in trees} == {(), (("t", b""),), (("t", b"x"),), (("f", b"x"),)}
    assert {t for k, t in trees if k == 5} == {(("f", b"x"),)}


def _every_crash_state_plainly(image: powerloss.Image, ops: list[powerloss.Op]):
    """The definition, built the slow way: every prefix, every subset of its volatile operations, each state
    built whole and kept at its first appearance (crash_states passes over what cannot be new unbuilt)."""
    seen: set = set()
    for k in range(len(ops) + 1):
        durable = powerloss.durable_before(ops, k)
        volatile = [i for i in range(k) if not durable[i]]
        for kept in itertools.chain(*(itertools.combinations(volatile, r) for r in range(len(volatile) + 1))):
            state = image.copy()
            for i in sorted({i for i in range(k) if durable[i]} | set(kept)):
                if ops[i].kind not in ("fsync", "fsyncdir"):
                    state.apply(ops[i])
            files = {e: (e[1].endswith(LOCK_TAG), state.nodes[n]) for e, n in state.entries.items()}
            keys = {(k == len(ops), frozenset((e, None if lock else bytes(b)) for e, (lock, b) in files.items())),
                    (k == len(ops), frozenset((e, bytes(b)) for e, (lock, b) in files.items() if lock))}
            if not keys <= seen:
                seen |= keys
                yield k, kept, state.listing()


@pytest.mark.parametrize("start", ["fresh", "resumed"])
def test_the_crash_states_are_those_of_the_definition_in_its_order(tmp_path: Path, start: str) -> None:
    """crash_states skips the states a sync or a dropped newest operation leaves (each was left before) and tells
    states apart before building them; what it yields, and in which order, is what the definition gives."""
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES[start], lock_lost=start == "resumed")
    fast = [(k, kept, state.listing()) for k, kept, state in powerloss.crash_states(sc.image, sc.ops)]
    assert fast == list(_every_crash_state_plainly(sc.image, sc.ops)) and len(fast) > 50


def test_the_crash_states_of_hand_made_operations_are_those_of_the_definition() -> None:
    """An entry with no directory counts as durable at once (no recording makes one): the newest operation
    is then no volatile one to keep, and every state of the definition is still built once."""
    image = powerloss.Image({("d", "f"): 0}, {0: bytearray()})
    ops = [powerloss.Op("write", 0, data=b"x"), powerloss.Op("create", 1, ("", "g")),
           powerloss.Op("write", 1, data=b"y"), powerloss.Op("fsync", 0), powerloss.Op("rename", 1, ("", "g"),
                                                                                        ("d", "h"))]
    fast = [(k, kept, state.listing()) for k, kept, state in powerloss.crash_states(image, ops)]
    assert fast == list(_every_crash_state_plainly(image, ops)) and len(fast) > 5


class _WithoutFileFsync:
    """``os`` for bob.fileio, but an fsync of a regular file does nothing (a planted bug)."""

    def __getattr__(self, name: str):
        if name == "fsync":
            real = os.fsync
            return lambda fd: None if stat.S_ISREG(os.fstat(fd).st_mode) else real(fd)
        return getattr(os, name)


def test_the_checker_finds_a_missing_directory_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real, calls = bob.commit.fsync_directory, []

    def skip_after_commit(directory: str, strict: bool = False) -> None:  # the planted bug: no sync after
        calls.append(directory)  # the commit's rename
        if len(calls) != 2:
            real(directory, strict)

    monkeypatch.setattr(bob.commit, "fsync_directory", skip_after_commit)
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES["resumed"])
    with pytest.raises(PropertyFailed, match="said it committed, but after a power loss the old checkpoint"):
        powerloss.check_states(sc, tmp_path / "next")


def test_the_checker_finds_a_missing_temporary_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bob.fileio, "os", _WithoutFileFsync())
    sc = powerloss.record_run(tmp_path / "run", RECORD, *STATES["resumed"])
    with pytest.raises(PropertyFailed, match="neither the old nor the new"):
        powerloss.check_states(sc, tmp_path / "next")
