"""The ``run`` target's world: links, failing writes, crashes, a second process and power loss around ``bob-run``
(docs/fuzzing.md, "The ``run`` target's world"; :mod:`bob.fuzz.powerloss` judges a power loss)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import zlib
from pathlib import Path
from typing import Any, Callable, NamedTuple

import bob
from bob.errors import FormatError
from bob.lock import COMMIT_WINDOW, LOCK_TAG, TargetLock, lock_path_for
from bob.refusals import EXIT_BUSY as BUSY, EXIT_REFUSED as REFUSED
from bob.fuzz import oracle, powerloss, race
from bob.fuzz.faults import ENTRY_CALLS, Crash, OsFaults
from bob.fuzz.properties import invoked, require

__all__ = ["LAYOUTS", "FAULTS", "OTHERS", "MAX_CALL", "World", "world_of", "run_in_world", "library_writer"]

LAYOUTS = ("plain", "plain", "symlinks", "symlinks", "symlinks", "hardlink-checkpoint", "hardlink-predictions",
           "same-file")
FAULTS = ("none", "fail", "fail", "crash")
OTHERS = ("none", "none", "none", "none", "locked", "racer", "cleaner", "powerloss")
MAX_CALL = 44
"""k is drawn from 1..MAX_CALL: the calls a completed bob-run makes in a world (a checkpoint and predictions there)."""
ENTRY_CALLS_DRAWN = 7  # or, counting only the calls that change a directory entry, from 1 to this (a run makes 6)

MODE = 0o640  # not the umask's default: a replaced file must keep its mode
POWER_LOSS_STATES = 6  # crash states judged per power-loss execution, beside every state after the whole run


class World(NamedTuple):
    """One execution's world: each axis drawn from the input (docs/fuzzing.md)."""

    layout: str  # LAYOUTS
    fault: str = "none"  # FAULTS: the k-th os call fails, or the world ends there
    k: int = 1
    entries: bool = False  # k counts only the calls that change a directory entry (ENTRY_CALLS)
    other: str = "none"  # OTHERS
    point: str = COMMIT_WINDOW[0]  # where the racer or the cleaner meets bob-run
    writer: str = "bob-run"  # or "library" (library_writer): the writer a fault or a power loss cuts
    trace: bool = False  # bob-run --trace under a power loss: the trace and its lock judged too
    lock_lost: bool = False  # bob-run under a power loss, its lock deleted as it commits: it rolls back

    def __str__(self) -> str:
        fault = f"{self.fault} at {'entry' if self.entries else 'os'} call {self.k}" if self.fault != "none" else ""
        other = {"none": "", "racer": f"racer at {self.point}", "cleaner": f"cleaner at {self.point}"}
        return ", ".join(filter(None, [f"world {self.layout}", fault, other.get(self.other, self.other),
                                       "library writers" if self.writer == "library" else "", "traced" * self.trace,
                                       "lock lost" * self.lock_lost]))


def world_of(data: bytes) -> World:
    """The world of an input, from its CRC-32 (docs/fuzzing.md: the axes and who meets which writer)."""
    crc = zlib.crc32(data)
    entries = bool((crc >> 18) & 1)
    w = World(LAYOUTS[crc % len(LAYOUTS)], FAULTS[(crc >> 3) % len(FAULTS)],
              (crc >> 5) % (ENTRY_CALLS_DRAWN if entries else MAX_CALL) + 1, entries,
              OTHERS[(crc >> 10) % len(OTHERS)], COMMIT_WINDOW[(crc >> 13) % len(COMMIT_WINDOW)],
              ("bob-run", "library")[(crc >> 16) & 1])
    if w.other == "powerloss":  # judged of a whole run: no fault, a layout bob-run accepts
        return w._replace(fault="none", layout=("plain", "symlinks")[(crc >> 17) & 1],
                          trace=w.writer == "bob-run" and bool((crc >> 19) & 1),
                          lock_lost=w.writer == "bob-run" and bool((crc >> 20) & 1))
    # the lock holder, the racer and the cleaner meet bob-run's lock and commit
    return w if w.other == "none" else w._replace(writer="bob-run")


def library_writer(argv: list[str]) -> int:
    """The library's way to bob-run's pair (given its arguments): invoke, write each file atomically."""
    path = dict(zip(argv[1::2], argv[2::2]))
    result = bob.invoke(Path(path["--input"]).read_bytes(), Path(path["--checkpoint"]).read_bytes(), threads=1)
    result.predictions.write(path["--predictions"])
    result.checkpoint.write(path["--checkpoint"])
    return 0


def _library_main(argv: list[str]) -> int:
    """:func:`library_writer` as a command: a refusal or the injected failure is exit 2."""
    try:
        return library_writer(argv)
    except (OSError, FormatError):
        return REFUSED


class _Run:
    """One execution of ``bob-run`` in one world: its files, laid out afresh as the world lays them out,
    and what it left."""

    def __init__(self, w: World, record: bytes, checkpoint: bytes, want: Any, scratch: Path) -> None:
        self.w, self.where, self.record, self.checkpoint = w, str(w), record, checkpoint
        d = self.dir = scratch / "world"
        if d.exists():
            shutil.rmtree(d)  # the last execution's files: one that cannot be removed is this harness's failure
        self.home = d / "real" if w.layout == "symlinks" else d
        self.home.mkdir(parents=True, exist_ok=True)
        self.ck, self.pred = self.home / "model.bob", self.home / "predictions.bin"
        self.ck_arg, self.pred_arg = self.ck, self.pred
        if w.layout == "symlinks":
            self.ck_arg, self.pred_arg = d / "ck-link", d / "pred-link"
            self.ck_arg.symlink_to(Path("real") / "model.bob")
            self.pred_arg.symlink_to(Path("real") / "predictions.bin")
        self.old_pred = b"previous predictions, must survive a refusal"
        (d / "record.bin").write_bytes(record)
        for path, data in ((self.ck, checkpoint), (self.pred, self.old_pred)):
            path.write_bytes(data)
            os.chmod(path, MODE)
        self.refusal_expected = want is None or w.layout not in ("plain", "symlinks")
        self.second: Path | None = None  # a second name (hard link) of one of the files
        if w.layout == "same-file":
            self.pred.unlink()
            os.link(self.ck, self.pred)
            self.old_pred = checkpoint
        elif w.layout.startswith("hardlink-"):
            first = self.ck if w.layout == "hardlink-checkpoint" else self.pred
            self.second = d / f"{first.name}.second"
            os.link(first, self.second)
        self.new_ck: bytes | None = None if want is None else want.checkpoint_bytes()
        self.new_pred: bytes | None = None if want is None else want.predictions_bytes()
        self.argv = ["--json", "--input", str(d / "record.bin"), "--checkpoint", str(self.ck_arg), "--predictions",
                     str(self.pred_arg)]
        self.faults = OsFaults(w.fault, w.k, only=ENTRY_CALLS if w.entries else None) if w.fault != "none" else None

    def pair(self) -> tuple[bytes, bytes]:
        return self.ck.read_bytes(), self.pred.read_bytes()

    def left(self, lock: bool = False) -> list[str]:
        """The names in the tree, relative to it, that are not the run's own (``lock``: nor its lock files)."""
        own = {self.dir / "record.bin", self.ck, self.pred, self.ck_arg, self.pred_arg, self.home, self.second}
        own |= {Path(lock_path_for(str(p))) for p in (self.ck, self.pred)} if lock else set()
        return sorted(str(p.relative_to(self.dir)) for p in set(self.dir.rglob("*")) - own)

    def files_now(self) -> tuple[bool, bool]:
        """Each file old or new, whole, the pair consistent: (checkpoint new, predictions new)."""
        where = self.where
        ck_now, pred_now = self.pair()
        require(ck_now in (self.checkpoint, self.new_ck), f"{where}: the checkpoint is neither the old nor the new one")
        require(pred_now in (self.old_pred, self.new_pred),
                f"{where}: the predictions are neither the old nor the new ones")
        ck_new, pred_new = ck_now != self.checkpoint, pred_now != self.old_pred
        require(pred_new or not ck_new, f"{where}: a new checkpoint beside the old predictions")
        return ck_new, pred_new

    def said(self, rc: int, out: str, err: str, ck_new: bool, pred_new: bool) -> None:
        """What bob-run said is what happened; its exit is what the world requires; it left no file but its own (a lock
        file whose removal failed, and what a failing clean-up after the commit named, excepted), no descriptor open."""
        where, w = self.where, self.w
        said = f"{where}: bob-run exited {rc}: {err.strip()[-200:]}"
        require("Traceback" not in out + err, f"{where}: bob-run printed a traceback")
        lines = out.strip().splitlines()
        require(bool(lines), f"{where}: bob-run --json printed nothing")
        doc = json.loads(lines[-1])
        require(isinstance(doc, dict), f"{where}: bob-run --json printed no object")
        require(doc.get("exit_code") == rc and doc.get("ok") == (rc == 0),
                f"{where}: bob-run's JSON does not say exit {rc}: {out.strip()[-200:]}")
        if rc == 0:
            require(ck_new and pred_new, f"{where}: bob-run exited 0 but did not replace both files")
            new_ck, new_pred = self.new_ck or b"", self.new_pred or b""  # (not None: both files are new)
            require(doc.get("checkpoint_sha256") == hashlib.sha256(new_ck).hexdigest()
                    and doc.get("predictions_hex") == new_pred.hex(), f"{where}: the JSON names other files")
            for path in (self.ck, self.pred):
                require(path.stat().st_mode & 0o7777 == MODE, f"{where}: {path.name} lost its mode "
                        f"({path.stat().st_mode & 0o7777:04o})")
            # D14: what bob writes, bob resumes from -- held to the contract oracle, not to bob's reader
            verdict = oracle.check_checkpoint(new_ck)
            require(verdict is None, f"bob-run wrote a checkpoint the contract refuses to resume from: {verdict}")
            verdict = oracle.check_predictions(new_pred)
            require(verdict is None, f"bob-run wrote predictions the contract refuses: {verdict}")
        else:
            require(not ck_new and not pred_new, f"{said}, but the files changed")
        require(not self.refusal_expected or rc != 0, f"{where}: bob-run accepted what it must refuse")
        if w.fault == "none" and w.other == "locked":
            require(rc == BUSY or (self.refusal_expected and rc == REFUSED), said)
        elif w.fault == "none":
            require(rc == (REFUSED if self.refusal_expected else 0), said)
        if self.second is not None:
            require(self.second.read_bytes() == (self.checkpoint if "checkpoint" in w.layout else self.old_pred),
                    f"{where}: the second name changed")
        if w.layout == "symlinks":
            require(self.ck_arg.is_symlink() and self.pred_arg.is_symlink(), f"{where}: a link was replaced")
        failed, at = (self.faults and self.faults.failed) or ("", "")
        lock_left = w.other == "locked" or (failed == "unlink" and str(at).endswith(LOCK_TAG))
        told = " ".join(doc.get("problems_after_commit") or []) if rc == 0 else ""
        left = [name for name in self.left(lock=lock_left) if name not in told]
        require(not left, f"{where}: bob-run left other files: {left}")
        left_open = self.faults.left_open if self.faults else []
        require(not left_open, f"{where}: bob-run left descriptors open ({left_open})")

    def library_said(self, rc: int, crashed: bool, ck_new: bool, pred_new: bool) -> None:
        """The library writers: what docs/fuzzing.md's writer row requires of them; nothing left but by a crash."""
        where, done = self.where, rc == 0
        require(not done or (ck_new and pred_new), f"{where}: the writers returned, but the files are not new")
        require(done or crashed or not ck_new, f"{where}: the writers failed, but the checkpoint is new")
        require(self.faults is not None or done != self.refusal_expected, f"{where}: {'wrote' if done else 'refused'}")
        require(not done or all(p.stat().st_mode & 0o7777 == MODE for p in (self.ck, self.pred)),
                f"{where}: a file lost its mode")
        require(self.w.layout != "symlinks" or (self.ck_arg.is_symlink() and self.pred_arg.is_symlink()),
                f"{where}: a link was replaced")
        left = [] if crashed else self.left()
        require(not left, f"{where}: the library writers left other files: {left}")

    def next_run(self, start: tuple, refused: bool) -> tuple:
        """The exit and the pair of a next bob-run from the pair ``start``: refused with it untouched,
        or what ``bob.invoke`` computes from its checkpoint (None: refused too)."""
        want = None if refused else invoked(self.record, start[0])
        return (REFUSED, start) if want is None else (0, (want.checkpoint_bytes(), want.predictions_bytes()))

    def after_racer(self, rc: int, racer: "subprocess.Popen[str]", crashed: bool) -> None:
        """The second bob-run (the table's racer cell) trained from the pair the first one left; after
        a crash of the first it is the next run, from whichever pair the dead one left."""
        _, err = racer.communicate(timeout=120)
        require(rc != 0 or self.new_ck is not None, f"{self.where}: bob-run exited 0 on an input bob.invoke refuses")
        new, old = (self.new_ck or b"", self.new_pred), (self.checkpoint, self.old_pred)
        starts = [new, old, (self.checkpoint, self.new_pred)] if crashed else [new if rc == 0 else old]
        ends = [self.next_run(start, self.refusal_expected and rc != 0) for start in starts]
        now = (racer.returncode, self.pair())
        require("Traceback" not in err and now in ends, f"{self.where}: the second bob-run exited {now[0]} "
                f"({err.strip()[-200:]}); the files are not what it computes from the pair the first one "
                f"{'committed' if rc == 0 else 'left'}")
        left = self.left() if crashed else []
        require(not left, f"{self.where}: after the crash the second bob-run left {left}")

    def after_crash(self, quietly: Callable, run_main: Callable) -> None:
        """The next bob-run cleans up after the dead one and goes on from the checkpoint it finds: what
        ``bob.invoke`` computes from it, or refused again, the files untouched, as the dead one was."""
        end = self.next_run(self.pair(), self.refusal_expected)
        rc, out, err = quietly(run_main, self.argv)
        require((rc, self.pair()) == end, f"{self.where}: after the crash the next bob-run exited {rc} "
                f"({err.strip()[-200:]}); the files are not what bob.invoke computes from the checkpoint it found")
        left = self.left()
        require(not left, f"{self.where}: after the crash the next bob-run left {left}")


def run_in_world(data: bytes, record: bytes, checkpoint: bytes, want, scratch: Path,
                 quietly: Callable[[Callable[[list[str]], int], list[str]], tuple[int, str, str]]) -> None:
    """One execution of ``bob-run`` in the world of ``data`` (``want``: what ``bob.invoke``
    computes, or None when it refuses), and the invariants after it."""
    from bob.run import main as run_main

    run = _Run(world_of(data), record, checkpoint, want, scratch)
    if run.w.other == "powerloss" and want is not None:  # one whole run recorded, a sample of its crash states
        shutil.rmtree(scratch / "powerloss", ignore_errors=True)
        old_pred = None if run.w.layout == "same-file" else run.old_pred  # (a checkpoint's bytes: refused there)
        sc = powerloss.record_run(scratch / "powerloss" / "run", record, checkpoint, old_pred,
                                  links=run.w.layout == "symlinks", trace=run.w.trace, lock_lost=run.w.lock_lost,
                                  writer=library_writer if run.w.writer == "library" else None)
        powerloss.check_states(sc, scratch / "powerloss" / "next", sample=POWER_LOSS_STATES, seed=zlib.crc32(data))
        return
    writer = _library_main if run.w.writer == "library" and run.w.other == "none" else run_main
    # the other party holding the lock as another bob-run holds it (flock: another descriptor, another holder)
    holder = TargetLock(str(run.ck), 0) if run.w.other == "locked" else contextlib.nullcontext()
    crashed, raced = False, False
    meet = {"racer": lambda: race.second_run(run.argv, str(scratch)),  # met at the world's point of its commit
            "cleaner": lambda: race.lock_free_clean_up(str(run.ck_arg), str(run.pred_arg))}.get(run.w.other)
    meeting = race.Meeting(run.w.point, meet, str(scratch)) if meet is not None else None
    with holder, meeting or contextlib.nullcontext(), run.faults or contextlib.nullcontext():
        try:
            rc, out, err = quietly(writer, run.argv)
        except Crash:
            crashed, rc, out, err = True, -9, "", ""
    require(meeting is None or meeting.met or rc != 0 or crashed, f"{run.where}: bob-run committed, never at the point")
    if meeting is not None and meeting.met and run.w.other == "racer":
        run.after_racer(rc, meeting.result, crashed)  # type: ignore[arg-type]
        ck_new, pred_new, raced = rc == 0, rc == 0, True
    else:
        ck_new, pred_new = run.files_now()
    require(meeting is None or not meeting.met or run.w.other != "cleaner" or meeting.result == [],
            f"{run.where}: the lock-free clean-up removed a live run's files: {meeting and meeting.result}")
    if writer is _library_main:
        run.library_said(rc, crashed, ck_new, pred_new)
    elif not crashed:
        run.said(rc, out, err, ck_new, pred_new)
    if crashed and not raced:  # (after a crash a racer was the next run)
        run.after_crash(quietly, run_main)
