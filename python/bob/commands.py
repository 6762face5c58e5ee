"""What bob's commands share: exit codes, refusals that name the option and
path, and printing that survives a closed or full stdout.

One mechanism each:

* :func:`about` wraps the work on one command-line path: any ``OSError`` or
  :class:`~bob.errors.FormatError` raised inside becomes a :class:`Refused`
  naming the option (``--checkpoint``) and the path, escaped by
  :mod:`bob.text` — never ``None: None``, a descriptor number or a
  temporary file's name.
* :func:`fail` prints a refusal as one line on stderr and, under ``--json``,
  as one JSON object (``{"error": {...}}``) on stdout.
* :func:`emit` prints a command's result in one write; if stdout is closed,
  full or a broken pipe, it says so in one line on stderr and the command's
  exit status stands (the files are the record).

Standard library only (``bob-run`` imports it on its fast path).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

TYPE_CHECKING = False  # typing is only for the checker: importing it costs bob-run ~2 ms
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Iterator

from bob.text import one_line, show_path

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_REFUSED = 2
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later
EXIT_INTERRUPTED = 130

__all__ = [
    "EXIT_OK", "EXIT_UNEXPECTED", "EXIT_REFUSED", "EXIT_BUSY", "EXIT_INTERRUPTED",
    "Refused", "about", "fail", "emit", "os_reason",
]


class Refused(Exception):
    """A refusal (exit 2 unless ``code`` says otherwise), in one line.

    ``option`` and ``path`` say which command-line file it is about;
    ``field`` names the format field for a refused file's content.
    """

    def __init__(self, message: str, *, option: str | None = None, path: Any = None,
                 field: str | None = None, code: int = EXIT_REFUSED, detail: dict | None = None) -> None:
        self.message = one_line(message)
        self.option = option
        self.path = None if path is None else show_path(path)
        self.field = field
        self.code = code
        self.detail = detail
        super().__init__(self.text)

    @property
    def text(self) -> str:
        where = " ".join(x for x in (self.option, self.path) if x)
        return f"{where}: {self.message}" if where else self.message

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "option": self.option,
            "path": self.path,
            "field": self.field,
            "message": self.message,
            "exit_code": self.code,
            "text": self.text,
        }
        if self.detail:
            out["finding"] = self.detail
        return out


def os_reason(exc: OSError) -> str:
    """An OS error's reason in a few words (``no such file or directory``)."""
    reason = exc.strerror or (str(exc.args[0]) if exc.args else type(exc).__name__)
    return one_line(reason[:1].lower() + reason[1:])


@contextmanager
def about(option: str, path: Any, what: str | None = None) -> Iterator[None]:
    """Name ``option`` and ``path`` in any OS error or format refusal raised inside.

    ``what`` (``"input record"``) prefixes a format refusal's message.
    """
    from bob.errors import FormatError

    try:
        yield
    except Refused:
        raise
    except FormatError as exc:
        message = f"{what}: {exc}" if what else str(exc)
        raise Refused(message, option=option, path=path, field=exc.field, detail=exc.to_dict()) from None
    except OSError as exc:
        raise Refused(os_reason(exc), option=option, path=path) from None


def fail(prog: str, refusal: Refused, *, as_json: bool) -> int:
    """Report a refusal: one line on stderr; under ``--json`` also one object on stdout."""
    _write(sys.stderr, f"{prog}: refused: {refusal.text}\n" if refusal.code == EXIT_REFUSED
           else f"{prog}: {refusal.text}\n")
    if as_json:
        import json

        _write(sys.stdout, json.dumps({"error": refusal.to_dict()}, sort_keys=True) + "\n")
    return refusal.code


def _write(stream, text: str) -> bool:
    """Write ``text`` in one piece and flush; False if the stream cannot take it."""
    try:
        stream.write(text)
        stream.flush()
        return True
    except (OSError, ValueError):  # closed, full, broken pipe
        _silence(stream)
        return False


def _silence(stream) -> None:
    """Point a broken standard stream at /dev/null so the interpreter's final
    flush cannot raise after we have decided the outcome."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError):
        pass


def emit(prog: str, text: str, *, committed: str | None = None) -> None:
    """Print a result in one write. If stdout cannot take it, one line on
    stderr says so (naming what was ``committed``, if anything); the
    caller's exit status is unchanged."""
    if not _write(sys.stdout, text if text.endswith("\n") else text + "\n"):
        note = f"{committed}, but its summary could not be printed" if committed else \
            "the summary could not be printed"
        _write(sys.stderr, f"{prog}: {note} (stdout is closed or full)\n")
