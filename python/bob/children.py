"""Children that never outlive the block that starts them, whatever signal arrives (bob-qualify's bob-runs and
bob-fuzz check's readers), and waiting for what children print."""

from __future__ import annotations

import select
import subprocess
from collections.abc import Callable
from typing import Any

from bob.signals import step_and_record

__all__ = ["spawned", "readable"]


class spawned:
    """``with spawned(argv, **popen) as proc:`` a ``subprocess.Popen`` child that never outlives the block: spawned
    whole before a SIGINT, SIGTERM or SIGHUP acts (one that arrived while subprocess spawned it left the exception
    before anyone knew the child, which ran on), and ended (``end(proc)``, else killed) and waited for however the
    block ends."""

    def __init__(self, argv: list[str], *, end: Callable[[subprocess.Popen[Any]], object] | None = None,
                 **popen: Any) -> None:
        self.argv: list[str] = argv
        self.end: Callable[[subprocess.Popen[Any]], object] | None = end
        self.popen: dict[str, Any] = popen
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


def readable(stream: Any, timeout: float) -> bool:
    """Whether ``stream`` (a descriptor or a file) has something to read, or its end, within ``timeout`` seconds: by
    poll, not select, which takes no descriptor past 1023 (a process started with more open: ValueError)."""
    poller = select.poll()
    poller.register(stream, select.POLLIN)
    return bool(poller.poll(max(timeout, 0.0) * 1000))
