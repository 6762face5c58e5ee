"""Deterministic races (docs/fuzzing.md, "Deterministic races"): a second process meets a ``bob-run`` at a chosen point
of its commit (the race hook :func:`bob.lock.pause_at`), so what it meets is decided by the point, never by the
scheduler."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from bob.lock import PAUSE_ENV

__all__ = ["Meeting", "second_run", "lock_free_clean_up", "child_env"]

_PATIENCE = 60.0  # seconds a second process may take to reach the lock (a loaded machine's)


def child_env(pause: str | None = None) -> dict[str, str]:
    """The environment of a child ``bob-run``: this process's bob first on its path, the hook as given."""
    source = str(Path(__file__).resolve().parents[2])  # the directory this bob is imported from
    env = {k: v for k, v in os.environ.items() if k != PAUSE_ENV}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source, env.get("PYTHONPATH")]))
    return env if pause is None else {**env, PAUSE_ENV: pause}


def _opened(fifo: str, alive: Callable[[], bool]) -> int | None:
    """The pipe's write end once its reader has it open (the run is at the point); None once ``alive()`` is false."""
    deadline = time.monotonic() + _PATIENCE
    while alive() and time.monotonic() < deadline:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: nobody reads it yet
            time.sleep(0.002)
    return None


class Meeting:
    """``with Meeting(point, meet) as m:`` run the first ``bob-run`` here (the hook set in ``os.environ``) or as a
    child with ``m.env``; ``meet()`` runs when it reaches ``point``, and the run goes on after it. ``met``: it came
    there; ``result``: what ``meet`` gave. The pipe is in ``where`` (a world's scratch, removed however a run ends)."""

    def __init__(self, point: str, meet: Callable[[], object], where: str | None = None) -> None:
        self.meet: Callable[[], object] = meet
        self._dir = tempfile.TemporaryDirectory(prefix="bob-race-", dir=where)
        self.fifo: str = os.path.join(self._dir.name, "pause")
        os.mkfifo(self.fifo)
        self.spec: str = f"{point}:{self.fifo}"
        self.env: dict[str, str] = child_env(self.spec)
        self._done = threading.Event()
        self.met: bool = False
        self.result: object = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._writer, daemon=True)

    def _writer(self) -> None:
        fd = _opened(self.fifo, lambda: not self._done.is_set())
        if fd is None:
            return
        try:
            self.met = True
            self.result = self.meet()
        except BaseException as exc:  # told by the caller, after the run
            self.error = exc
        finally:
            os.close(fd)  # the run goes on

    def __enter__(self) -> "Meeting":
        os.environ[PAUSE_ENV] = self.spec
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        if os.environ.get(PAUSE_ENV) == self.spec:  # the run never came to the point
            del os.environ[PAUSE_ENV]
        self._dir.cleanup()
        if self.error is not None and exc[0] is None:
            raise self.error


def second_run(argv: list[str], where: str | None = None) -> "subprocess.Popen[str]":
    """Start ``bob-run --json --wait … argv`` as another process and return once it waits for the lock
    (the hook's ``waiting`` point) or has ended (a lock that was not held); its pipe in ``where`` (Meeting's)."""
    with tempfile.TemporaryDirectory(prefix="bob-race-", dir=where) as d:
        fifo = os.path.join(d, "waiting")
        os.mkfifo(fifo)
        proc = subprocess.Popen([sys.executable, "-m", "bob", "run", *argv, "--wait", str(_PATIENCE)],
                                env=child_env(f"waiting:{fifo}"), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8")
        fd = _opened(fifo, lambda: proc.poll() is None)
        if fd is not None:
            os.close(fd)  # it goes on waiting for the lock
    return proc


_CLEAN = ("import bob, bob.temporaries, json, sys; bob.temporaries._pid_alive = lambda pid: False\n"
          "print(json.dumps([bob.clean_stale_temporaries(p) for p in sys.argv[1:]]))")


def lock_free_clean_up(*paths: str) -> list[str]:
    """What the library's lock-free ``bob.clean_stale_temporaries`` removes beside ``paths``, run by another
    process to which every pid looks dead, as from another PID namespace: only bob-run's lock keeps its files."""
    out = subprocess.run([sys.executable, "-c", _CLEAN, *paths], env=child_env(), capture_output=True,
                         encoding="utf-8", timeout=_PATIENCE)
    if out.returncode:
        raise RuntimeError(f"the clean-up process failed: {out.stderr.strip()[-300:]}")
    return [p for removed in json.loads(out.stdout) for p in removed]
