"""The ``run`` target's world: links, failing writes, crashes and a second process around ``bob-run``.

Each execution runs ``bob-run --json`` in process in one world (the table:
docs/fuzzing.md), chosen from the input's CRC-32 so every mutation may move it
to another one; then the file-level invariants are held: each file is the old
one or the new one, whole, a new checkpoint never beside the old predictions;
what bob-run said is what happened; a replaced file keeps its mode, links stay
links; nothing is left but the run's own files and no descriptor is left
open; after a crash the next ``bob-run`` cleans up and completes the invocation.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from pathlib import Path
from typing import Callable

from bob.fuzz.faults import Crash, OsFaults
from bob.fuzz.properties import require

__all__ = ["WORLDS", "MAX_CALL", "world_of", "run_in_world"]

WORLDS = ("plain", "plain", "symlinks", "symlinks", "hardlink-checkpoint", "hardlink-predictions", "same-file",
          "locked", "fail", "fail", "fail", "fail", "crash", "crash", "crash", "crash")
MAX_CALL = 32
"""k is drawn from 1..MAX_CALL; a completed bob-run on a checkpoint makes about 30 of the calls."""

MODE = 0o640  # not the umask's default: a replaced file must keep its mode
REFUSED, BUSY = 2, 75


def world_of(data: bytes) -> tuple[str, int]:
    """(the world, k) of an input: from its CRC-32."""
    crc = zlib.crc32(data)
    return WORLDS[crc % len(WORLDS)], (crc >> 4) % MAX_CALL + 1


class _Files:
    """The run's paths in a fresh directory, as the world lays them out."""

    def __init__(self, d: Path, world: str) -> None:
        for p in sorted(d.rglob("*"), reverse=True):  # the last execution's files
            p.rmdir() if p.is_dir() and not p.is_symlink() else p.unlink()
        self.dir = d
        self.home = d / "real" if world == "symlinks" else d
        self.home.mkdir(exist_ok=True)
        self.record = d / "record.bin"
        self.ck, self.pred = self.home / "model.bob", self.home / "predictions.bin"
        self.ck_arg, self.pred_arg = self.ck, self.pred
        if world == "symlinks":
            self.ck_arg, self.pred_arg = d / "ck-link", d / "pred-link"
            self.ck_arg.symlink_to(Path("real") / "model.bob")
            self.pred_arg.symlink_to(Path("real") / "predictions.bin")
        self.second: Path | None = None  # a second name (hard link) of one of the files

    def names(self) -> set[str]:
        """Every name in the directory tree, relative to it."""
        return {str(p.relative_to(self.dir)) for p in self.dir.rglob("*")}

    def expected(self, lock: bool) -> set[str]:
        from bob.commit import lock_path_for

        names = {str(p.relative_to(self.dir)) for p in (self.record, self.ck, self.pred, self.ck_arg, self.pred_arg)}
        names |= {"real"} if self.home != self.dir else set()
        names |= {str(self.second.relative_to(self.dir))} if self.second is not None else set()
        if lock:
            names.add(str(Path(lock_path_for(str(self.ck))).relative_to(self.dir)))
        return names


def _hold_lock(path: str) -> Callable[[], None]:
    """A second process holding the ``flock`` of ``path`` (as another bob-run would); returns its release."""
    import fcntl

    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the holder: lock, say so, wait for the word, exit without Python's teardown
        try:
            os.close(ready_r)
            os.close(done_w)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, f"{os.getpid()}\n".encode())
            os.write(ready_w, b"1")
            os.read(done_r, 1)
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(done_r)
    got = os.read(ready_r, 1)
    os.close(ready_r)

    def release() -> None:
        os.close(done_w)
        os.waitpid(pid, 0)
        Path(path).unlink(missing_ok=True)  # the holder's file; a bob-run holder removes it when done

    require(got == b"1", "the lock holder did not start")
    return release


def _said(out: str, where: str) -> dict:
    """The object ``bob-run --json`` printed last."""
    lines = out.strip().splitlines()
    require(bool(lines), f"{where}: bob-run --json printed nothing")
    doc = json.loads(lines[-1])
    require(isinstance(doc, dict), f"{where}: bob-run --json printed no object")
    return doc


class _Run:
    """One execution of ``bob-run`` in one world, and what it left."""

    def __init__(self, data: bytes, record: bytes, checkpoint: bytes, want, scratch: Path) -> None:
        self.world, self.k = world_of(data)
        self.record, self.checkpoint, self.want = record, checkpoint, want
        f = self.files = _Files(scratch / "world", self.world)
        self.old_pred = b"previous predictions, must survive a refusal"
        f.record.write_bytes(record)
        f.ck.write_bytes(checkpoint)
        f.pred.write_bytes(self.old_pred)
        os.chmod(f.ck, MODE)
        os.chmod(f.pred, MODE)
        self.refusal_expected = want is None or self.world in ("hardlink-checkpoint", "hardlink-predictions",
                                                               "same-file")
        if self.world == "hardlink-checkpoint":
            f.second = f.dir / "model.bob.second"
            os.link(f.ck, f.second)
        elif self.world == "hardlink-predictions":
            f.second = f.dir / "predictions.bin.second"
            os.link(f.pred, f.second)
        elif self.world == "same-file":
            f.pred.unlink()
            os.link(f.ck, f.pred)
            self.old_pred = checkpoint
        self.new_ck: bytes | None = None if want is None else want.checkpoint_bytes()
        self.new_pred: bytes | None = None if want is None else want.predictions_bytes()
        self.argv = ["--json", "--input", str(f.record), "--checkpoint", str(f.ck_arg), "--predictions",
                     str(f.pred_arg)]
        self.faults = OsFaults(self.world, self.k) if self.world in ("fail", "crash") else None
        self.where = f"world {self.world}" + (f", os call {self.k}" if self.faults is not None else "")

    def files_now(self) -> tuple[bool, bool]:
        """Each file old or new, whole, the pair consistent: (checkpoint new, predictions new)."""
        f, where = self.files, self.where
        ck_now, pred_now = f.ck.read_bytes(), f.pred.read_bytes()
        require(ck_now in (self.checkpoint, self.new_ck), f"{where}: the checkpoint is neither the old nor the new one")
        require(pred_now in (self.old_pred, self.new_pred),
                f"{where}: the predictions are neither the old nor the new ones")
        ck_new, pred_new = ck_now != self.checkpoint, pred_now != self.old_pred
        require(pred_new or not ck_new, f"{where}: a new checkpoint beside the old predictions")
        return ck_new, pred_new

    def said(self, rc: int, out: str, err: str, ck_new: bool, pred_new: bool) -> dict:
        """What bob-run said is what happened; its exit is what the world requires."""
        f, where, world = self.files, self.where, self.world
        said = f"{where}: bob-run exited {rc}: {err.strip()[-200:]}"
        require("Traceback" not in out + err, f"{where}: bob-run printed a traceback")
        doc = _said(out, where)
        require(doc.get("exit_code") == rc and doc.get("ok") == (rc == 0),
                f"{where}: bob-run's JSON does not say exit {rc}: {out.strip()[-200:]}")
        if rc == 0:
            require(ck_new and pred_new, f"{where}: bob-run exited 0 but did not replace both files")
            require(doc.get("checkpoint_sha256") == hashlib.sha256(f.ck.read_bytes()).hexdigest()
                    and doc.get("predictions_hex") == f.pred.read_bytes().hex(), f"{where}: the JSON names other files")
            for path in (f.ck, f.pred):
                require(path.stat().st_mode & 0o7777 == MODE, f"{where}: {path.name} lost its mode "
                        f"({path.stat().st_mode & 0o7777:04o})")
            _resumable(f.ck.read_bytes(), f.pred.read_bytes())
        else:
            require(not ck_new and not pred_new, f"{said}, but the files changed")
        if self.refusal_expected:
            require(rc != 0, f"{where}: bob-run accepted what it must refuse")
        if world in ("plain", "symlinks", "hardlink-checkpoint", "hardlink-predictions", "same-file"):
            require(rc == (REFUSED if self.refusal_expected else 0), said)
        elif world == "locked":
            require(rc == BUSY or (self.want is None and rc == REFUSED), said)
        if f.second is not None:
            require(f.second.read_bytes() == (self.checkpoint if "checkpoint" in world else self.old_pred),
                    f"{where}: the second name changed")
        if world == "symlinks":
            require(f.ck_arg.is_symlink() and f.pred_arg.is_symlink(), f"{where}: a link was replaced")
        return doc

    def nothing_left(self, rc: int, doc: dict) -> None:
        """No file left but the run's own (a lock file whose removal failed, and what a failing
        clean-up after the commit named, excepted), no descriptor left open."""
        from bob.commit import lock_path_for

        f, faults = self.files, self.faults
        lock_left = self.world == "locked" or (faults is not None and faults.failed == ("unlink",
                                                                                         lock_path_for(str(f.ck))))
        told = " ".join(doc.get("problems_after_commit") or []) if rc == 0 else ""
        left = sorted(name for name in f.names() - f.expected(lock=lock_left) if name not in told)
        require(not left, f"{self.where}: bob-run left other files: {left}")
        require(faults is None or not faults.left_open,
                f"{self.where}: bob-run left descriptors open ({faults.left_open if faults else ''})")


def _resumable(checkpoint: bytes, predictions: bytes) -> None:
    """D14: what bob writes, bob resumes from -- held to the contract oracle, not to bob's reader."""
    from bob.fuzz import oracle

    verdict = oracle.check_checkpoint(checkpoint)
    require(verdict is None, f"bob-run wrote a checkpoint the contract refuses to resume from: {verdict}")
    verdict = oracle.check_predictions(predictions)
    require(verdict is None, f"bob-run wrote predictions the contract refuses: {verdict}")


def run_in_world(data: bytes, record: bytes, checkpoint: bytes, want, scratch: Path,
                 quietly: Callable[[Callable[[list[str]], int], list[str]], tuple[int, str, str]]) -> None:
    """One execution of ``bob-run`` in the world of ``data`` (``want``: what ``bob.invoke``
    computes, or None when it refuses), and the invariants after it."""
    from bob.commit import lock_path_for
    from bob.run import main as run_main

    run = _Run(data, record, checkpoint, want, scratch)
    release = _hold_lock(lock_path_for(str(run.files.ck))) if run.world == "locked" else None
    crashed = False
    try:
        if run.faults is None:
            rc, out, err = quietly(run_main, run.argv)
        else:
            with run.faults:
                try:
                    rc, out, err = quietly(run_main, run.argv)
                except Crash:
                    crashed, rc, out, err = True, -9, "", ""
        ck_new, pred_new = run.files_now()
        if not crashed:
            run.nothing_left(rc, run.said(rc, out, err, ck_new, pred_new))
    finally:
        if release is not None:
            release()
    if crashed:
        _after_crash(run.files, run.argv, quietly, run_main, record, run.new_ck, run.new_pred, ck_new, run.where)


def _after_crash(f: _Files, argv: list[str], quietly, run_main, record: bytes, new_ck, new_pred, committed: bool,
                 where: str) -> None:
    """The next bob-run cleans up after the dead one and completes the invocation it had not committed."""
    import bob
    from bob.errors import FormatError

    refused = new_ck is None  # a refused input is refused again
    if committed:  # the dead run committed: the next one goes on from its checkpoint
        try:
            bob.invoke(record, new_ck, threads=1)
        except FormatError:
            refused = True
    before = f.ck.read_bytes(), f.pred.read_bytes()
    rc, out, err = quietly(run_main, argv)
    said = f"{where}: after the crash the next bob-run exited {rc}: {err.strip()[-200:]}"
    if refused:
        require(rc == REFUSED and (f.ck.read_bytes(), f.pred.read_bytes()) == before, said)
    else:
        require(rc == 0, said)
        if not committed:
            require(f.ck.read_bytes() == new_ck and f.pred.read_bytes() == new_pred,
                    f"{where}: after the crash the next bob-run did not write the new files")
    left = sorted(f.names() - f.expected(lock=False))
    require(not left, f"{where}: after the crash the next bob-run left {left}")
