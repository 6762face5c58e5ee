"""Progress on stderr for work that takes more than two seconds, for every command alike."""

from __future__ import annotations

import sys

from bob.commands import write_whole as _write

__all__ = ["Progress"]


class Progress:
    """Progress on stderr for work that takes more than two seconds: on a
    terminal one line rewritten in place (no width forced: the line is short),
    elsewhere (a pipe, a log) one plain line every ``every`` seconds. Nothing
    at all for work that ends sooner. ``with Progress(prog, what, total) as p:
    … p.advance()``."""

    def __init__(self, prog: str, what: str, total: int | None = None, *, every: float = 10.0,
                 after: float = 2.0, stream=None) -> None:
        import time

        self.prog, self.what, self.total, self.every, self.after = prog, what, total, every, after
        self.stream = sys.stderr if stream is None else stream
        try:
            self.tty = bool(self.stream is not None and self.stream.isatty())
        except (ValueError, OSError):
            self.tty = False
        self.clock = time.monotonic
        self.start = self.clock()
        self.done = 0
        self.shown_at: float | None = None
        self.extra = ""

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
