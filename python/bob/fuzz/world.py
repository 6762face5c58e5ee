"""The ``run`` target's world: links, failing writes, crashes and a second process around ``bob-run``.

Each execution runs ``bob-run --json`` in process in one *world*, chosen from
the input's CRC-32 (so every mutation may move it to another one):

``plain``, ``symlinks``
    regular files (mode 0640), or ``--checkpoint`` and ``--predictions``
    symbolic links into a subdirectory: bob-run refuses exactly when
    ``bob.invoke`` does, otherwise writes exactly what it computes, keeps the
    files' mode, and replaces the files the links name (the links stay links);
``hardlink-checkpoint``, ``hardlink-predictions``, ``same-file``
    the checkpoint or the predictions has a second name (a hard link), or
    ``--predictions`` is a hard link of the checkpoint: refused (exit 2);
``locked``
    a second process (forked) holds the checkpoint's lock: exit 75 (or 2 for
    a record refused before the lock is taken);
``fail``
    the k-th ``os`` call of the run fails (:class:`bob.fuzz.faults.OsFaults`);
``crash``
    the world ends at the k-th ``os`` call, as under a SIGKILL; then a second
    ``bob-run`` runs on what was left.

After each execution the file-level invariants hold: the checkpoint is the
old one or the new one, whole; so are the predictions, and a new checkpoint
never sits beside the old predictions; what bob-run said is what happened
(exit 0 and its JSON's SHA-256 and predictions exactly when the files are the
new ones; any other exit, nothing changed); nothing is left in the directory
but the run's own files (after a crash, the next run removes what the dead
one left, and completes the invocation it did not commit); no descriptor
is left open.
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


def run_in_world(data: bytes, record: bytes, checkpoint: bytes, want, scratch: Path,
                 quietly: Callable[[Callable[[list[str]], int], list[str]], tuple[int, str, str]]) -> None:
    """One execution of ``bob-run`` in the world of ``data`` (``want``: what ``bob.invoke``
    computes, or None when it refuses), and the invariants after it."""
    from bob.commit import lock_path_for
    from bob.run import main as run_main

    world, k = world_of(data)
    f = _Files(scratch / "world", world)
    old_pred = b"previous predictions, must survive a refusal"
    f.record.write_bytes(record)
    f.ck.write_bytes(checkpoint)
    f.pred.write_bytes(old_pred)
    os.chmod(f.ck, MODE)
    os.chmod(f.pred, MODE)
    refusal_expected = want is None
    if world == "hardlink-checkpoint":
        f.second = f.dir / "model.bob.second"
        os.link(f.ck, f.second)
        refusal_expected = True
    elif world == "hardlink-predictions":
        f.second = f.dir / "predictions.bin.second"
        os.link(f.pred, f.second)
        refusal_expected = True
    elif world == "same-file":
        f.pred.unlink()
        os.link(f.ck, f.pred)
        old_pred = checkpoint
        refusal_expected = True
    new_ck, new_pred = (None, None) if want is None else (want.checkpoint_bytes(), want.predictions_bytes())
    argv = ["--json", "--input", str(f.record), "--checkpoint", str(f.ck_arg), "--predictions", str(f.pred_arg)]
    release = _hold_lock(lock_path_for(str(f.ck))) if world == "locked" else None
    faults = OsFaults(world, k) if world in ("fail", "crash") else None
    crashed = False
    try:
        if faults is None:
            rc, out, err = quietly(run_main, argv)
        else:
            with faults:
                try:
                    rc, out, err = quietly(run_main, argv)
                except Crash:
                    crashed, rc, out, err = True, -9, "", ""
        ck_now, pred_now = f.ck.read_bytes(), f.pred.read_bytes()
        where = f"world {world}" + (f", os call {k}" if faults is not None else "")
        said = f"{where}: bob-run exited {rc}: {err.strip()[-200:]}"

        # Old or new, whole; the pair consistent.
        require(ck_now in (checkpoint, new_ck), f"{where}: the checkpoint is neither the old nor the new one")
        require(pred_now in (old_pred, new_pred), f"{where}: the predictions are neither the old nor the new ones")
        ck_new, pred_new = ck_now != checkpoint, pred_now != old_pred
        require(pred_new or not ck_new, f"{where}: a new checkpoint beside the old predictions")
        if not crashed:
            require("Traceback" not in out + err, f"{where}: bob-run printed a traceback")
            # What bob said is what happened.
            doc = _said(out, where)
            require(doc.get("exit_code") == rc and doc.get("ok") == (rc == 0),
                    f"{where}: bob-run's JSON does not say exit {rc}: {out.strip()[-200:]}")
            if rc == 0:
                require(ck_new and pred_new, f"{where}: bob-run exited 0 but did not replace both files")
                require(doc.get("checkpoint_sha256") == hashlib.sha256(ck_now).hexdigest()
                        and doc.get("predictions_hex") == pred_now.hex(), f"{where}: the JSON names other files")
                for path in (f.ck, f.pred):
                    require(path.stat().st_mode & 0o7777 == MODE, f"{where}: {path.name} lost its mode "
                            f"({path.stat().st_mode & 0o7777:04o})")
                # D14: what bob writes, bob resumes from -- held to the contract oracle, not to bob's reader.
                from bob.fuzz import oracle

                verdict = oracle.check_checkpoint(ck_now)
                require(verdict is None, f"bob-run wrote a checkpoint the contract refuses to resume from: {verdict}")
                verdict = oracle.check_predictions(pred_now)
                require(verdict is None, f"bob-run wrote predictions the contract refuses: {verdict}")
            else:
                require(not ck_new and not pred_new, f"{said}, but the files changed")
            if refusal_expected:
                require(rc != 0, f"{where}: bob-run accepted what it must refuse")
            if world in ("plain", "symlinks", "hardlink-checkpoint", "hardlink-predictions", "same-file"):
                require(rc == (REFUSED if refusal_expected else 0), said)
            elif world == "locked":
                require(rc == BUSY or (want is None and rc == REFUSED), said)
            if f.second is not None:
                require(f.second.read_bytes() == (checkpoint if "checkpoint" in world else old_pred),
                        f"{where}: the second name changed")
            if world == "symlinks":
                require(f.ck_arg.is_symlink() and f.pred_arg.is_symlink(), f"{where}: a link was replaced")
            # A lock file whose removal failed is left for the next run to lock and remove.
            lock_left = world == "locked" or (faults is not None and faults.failed == ("unlink", lock_path_for(str(f.ck))))
            # After the commit a failing clean-up is told (exit 0): what it left is named there.
            told = " ".join(doc.get("problems_after_commit") or []) if rc == 0 else ""
            left = sorted(name for name in f.names() - f.expected(lock=lock_left) if name not in told)
            require(not left, f"{where}: bob-run left other files: {left}")
            require(faults is None or not faults.left_open,
                    f"{where}: bob-run left descriptors open ({faults.left_open if faults else ''})")
    finally:
        if release is not None:
            release()
    if crashed:
        _after_crash(f, argv, quietly, run_main, record, new_ck, new_pred, ck_new, where)


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
