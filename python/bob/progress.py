"""Progress on stderr for work that takes more than two seconds, for every command alike."""

from __future__ import annotations

import os
import sys

from bob.text import write_whole as _write

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing only
    from collections.abc import Callable
    from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Progress on stderr for work that takes more than two seconds: on a
    terminal one line rewritten in place (no width forced: the line is short),
    elsewhere (a pipe, a log) one plain line every ``every`` seconds. Nothing
    at all for work that ends sooner. ``with Progress(prog, what, total) as p:
    … p.advance()``."""

    def __init__(self, prog: str, what: str, total: int | None = None, *, every: float = 10.0,
                 after: float = 2.0, stream: "TextIO | None" = None) -> None:
        import time

        self.prog: str = prog
        self.what: str = what
        self.total: int | None = total
        self.every: float = every
        self.after: float = after
        self.stream: TextIO | None = sys.stderr if stream is None else stream
        self.tty: bool
        try:
            self.tty = bool(self.stream is not None and self.stream.isatty()) and os.environ.get("TERM") != "dumb"
        except (ValueError, OSError):
            self.tty = False
        self.clock: Callable[[], float] = time.monotonic
        self.start: float = self.clock()
        self.done: int = 0
        self.shown_at: float | None = None
        self.extra: str = ""

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.shown_at is not None:
            if self.tty:
                _write(self.stream, "\n")
            elif exc[0] is None:
                self._show(self.clock(), final=True)

    def line(self, now: float) -> str:
        of = f"/{self.total}" if self.total is not None else ""
        return f"{self.prog} {self.what}: {self.done}{of}{self.extra}, {now - self.start:.0f} s"

    def advance(self, n: int = 1, extra: str = "") -> None:
        self.done += n
        if extra:
            self.extra = f" ({extra})"
        now = self.clock()
        if now - self.start < self.after:
            return
        due = self.shown_at is None or now - self.shown_at >= (0.25 if self.tty else self.every)
        if due:
            self._show(now)

    def _show(self, now: float, final: bool = False) -> None:
        self.shown_at = now
        if self.tty:
            _write(self.stream, "\r" + self.line(now) + "\x1b[K")
        else:
            _write(self.stream, self.line(now) + (" (done)" if final else "") + "\n")
