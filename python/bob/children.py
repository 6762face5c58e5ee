"""Children that never outlive the block that starts them, whatever signal arrives: bob-qualify's bob-runs and
bob-fuzz check's readers."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

from bob.signals import step_and_record

__all__ = ["spawned"]


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
