"""Children that never outlive the block that starts them, whatever signal arrives (bob-qualify's bob-runs and
bob-fuzz check's readers), nor bob (its workers too), ending a child's process group (bob-fuzz's workers and
readers), and waiting for what children print."""

from __future__ import annotations

import contextlib
import functools
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from typing import Any

from bob.signals import step_and_record

__all__ = ["spawned", "ends_with_this_process", "readable", "drained", "signal_group", "end_groups"]


class spawned:
    """``with spawned(argv, **popen) as proc:`` a ``subprocess.Popen`` child that never outlives the block: spawned
    whole before a SIGINT, SIGTERM or SIGHUP acts (one that arrived while subprocess spawned it left the exception
    before anyone knew the child, which ran on), and ended (``end(proc)``, else killed) and waited for however the
    block ends; on Linux, killed too when this process ends where no block end runs (SIGKILL)."""

    def __init__(self, argv: list[str], *, end: Callable[[subprocess.Popen[Any]], object] | None = None,
                 **popen: Any) -> None:
        self.argv: list[str] = argv
        self.end: Callable[[subprocess.Popen[Any]], object] | None = end
        self.popen: dict[str, Any] = {**popen, "preexec_fn": ends_with_this_process(popen.get("preexec_fn"))}
        self.proc: subprocess.Popen[Any] | None = None

    def __enter__(self) -> subprocess.Popen[Any]:
        try:
            with step_and_record():  # (the signal acts at its end, the child known)
                self.proc = subprocess.Popen(self.argv, **self.popen)
        except BaseException:
            self.__exit__()
            raise
        return self.proc

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            try:
                self.proc.kill() if self.end is None else self.end(self.proc)
            except OSError:  # (gone already)
                pass
            with self.proc:  # (its pipes closed, and waited for)
                pass


@functools.cache
def _prctl() -> Callable[..., int]:
    """libc's ``prctl``, looked up once for every child (a failed look-up is not kept: tried again)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def ends_with_this_process(then: Callable[[], object] | None = None) -> Callable[[], object] | None:
    """A ``preexec_fn``: the child gets SIGKILL when the thread that spawns it ends, with this process however it
    ends (Linux's PR_SET_PDEATHSIG: a SIGKILL, which no handler sees, left a reader or a bob-run running); then
    ``then()``. Elsewhere, ``then``."""
    try:
        prctl = _prctl()  # (found here: the child only calls it)
    except (ImportError, OSError, AttributeError, MemoryError):  # pragma: no cover - not Linux, no ctypes
        return then
    parent = os.getpid()

    def preexec() -> None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # (this process ended before the call: the child ends as it would have)
            os.kill(os.getpid(), signal.SIGKILL)
        if then is not None:
            then()
    return preexec


def readable(stream: Any, timeout: float) -> bool:
    """Whether ``stream`` (a descriptor or a file) has something to read, or its end, within ``timeout`` seconds: by
    poll, not select, which takes no descriptor past 1023 (a process started with more open: ValueError)."""
    poller = select.poll()
    poller.register(stream, select.POLLIN)
    return bool(poller.poll(max(timeout, 0.0) * 1000))


def drained(fd: int, most: int) -> tuple[bytes, bool]:
    """What the pipe ``fd`` holds now, at most ``most`` bytes (never waiting for more: ``fd`` is made non-blocking),
    and whether its end was read (no writer left)."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while len(data) < most:
            if not (more := os.read(fd, min(1 << 16, most - len(data)))):
                return data, True
            data += more
    return data, False


def signal_group(proc: subprocess.Popen[Any], signum: int) -> None:
    """``signum`` to the process group ``proc`` leads (started with ``start_new_session``), if any of it is left."""
    with contextlib.suppress(OSError):  # (none left)
        os.killpg(proc.pid, signum)


def end_groups(procs: list[subprocess.Popen[Any]], grace: float = 3.0) -> None:
    """SIGTERM to the group of each process still running (what it started, with it), SIGKILL to any still there
    after ``grace`` seconds and to the group of one whose output is still held (a child it forked); each waited for."""
    running = [proc for proc in procs if proc.poll() is None]
    for proc in running:
        signal_group(proc, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.poll() is None or proc.stdout and not proc.stdout.closed:
            signal_group(proc, signal.SIGKILL)
            proc.wait()
