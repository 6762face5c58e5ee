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

from bob.text import one_line, show_path

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing costs start-up time bob-run does not pay
    from typing import Any, NoReturn

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_REFUSED = 2
EXIT_BUSY = 75  # EX_TEMPFAIL: try again later
EXIT_INTERRUPTED = 130  # Ctrl-C before the commit; SIGTERM and SIGHUP give 128 + their number

# OS errors that are the machine's, not the file's: out of memory, out of
# descriptors (ulimit -n), out of kernel buffers. Never "refused" (exit 2),
# which would tell a script the file is bad.
RESOURCE_ERRNOS = frozenset({12, 23, 24, 105})  # ENOMEM, ENFILE, EMFILE, ENOBUFS (Linux and macOS alike)

__all__ = [
    "EXIT_OK", "EXIT_UNEXPECTED", "EXIT_REFUSED", "EXIT_BUSY", "EXIT_INTERRUPTED",
    "Refused", "about", "fail", "note", "emit", "silence", "os_reason", "argument_parser", "parse_command_line",
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


class about:  # noqa: N801 - used as a `with` statement, like contextlib's helpers
    """``with about("--checkpoint", path): …`` names ``option`` and ``path`` in
    any OS error or format refusal raised inside, as a :class:`Refused`.

    ``what`` (``"input record"``) prefixes a format refusal's message.
    (A class rather than ``contextlib.contextmanager``: bob-run's start-up
    does not pay for importing contextlib.)
    """

    def __init__(self, option: str, path: Any, what: str | None = None) -> None:
        self.option, self.path, self.what = option, path, what

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, exc, tb) -> None:
        if exc is None or isinstance(exc, Refused):
            return
        from bob.errors import FormatError

        if isinstance(exc, FormatError):
            message = f"{self.what}: {exc}" if self.what else str(exc)
            raise Refused(message, option=self.option, path=self.path, field=exc.field,
                          detail=exc.to_dict()) from None
        if isinstance(exc, OSError) and exc.errno not in RESOURCE_ERRNOS:
            raise Refused(os_reason(exc), option=self.option, path=self.path) from None
        # A resource the process ran out of (memory, descriptors) says nothing
        # about the user's file: it stays an unexpected error (exit 1).


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
    if stream is None:  # the process was started with this stream closed
        return False
    try:
        stream.write(text)
        stream.flush()
        return True
    except (OSError, ValueError):  # closed, full, broken pipe
        silence(stream)
        return False


def silence(stream) -> None:
    """Point a broken standard stream at /dev/null so the interpreter's final
    flush cannot raise after we have decided the outcome."""
    try:
        fd = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError, AttributeError):  # AttributeError: the stream was never open (None)
        pass


def note(prog: str, text: str) -> None:
    """One line on stderr (``prog: text``), whatever state stderr is in."""
    _write(sys.stderr, f"{prog}: {one_line(text)}\n")


def emit(prog: str, text: str, *, committed: str | None = None) -> None:
    """Print a result in one write. If stdout cannot take it, one line on
    stderr says so (naming what was ``committed``, if anything); the
    caller's exit status is unchanged."""
    if not _write(sys.stdout, text if text.endswith("\n") else text + "\n"):
        note = f"{committed}, but its summary could not be printed" if committed else \
            "the summary could not be printed"
        _write(sys.stderr, f"{prog}: {note} (stdout is closed or full)\n")


def exit_now(code: int) -> "NoReturn":
    """End an installed command's process with ``code``, once stdout and stderr
    are flushed, without the interpreter's teardown (freeing every module and
    object, about a tenth of a whole bob-run: BENCHMARKS.md). Only for the
    scripts' last line: by then every file the command wrote is fsynced and
    closed, and nothing of bob's runs at exit."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            try:
                stream.flush()
            except (OSError, ValueError):  # closed or full: emit() has said so already
                pass
    os._exit(code)


def argument_parser(**kwargs):
    """An ``argparse.ArgumentParser`` whose usage errors raise :class:`Refused`
    (after printing the usage line on stderr) instead of exiting, so every
    command reports them the same way, ``--json`` included. Subparsers
    inherit the behaviour."""
    import argparse

    class CommandParser(argparse.ArgumentParser):
        def error(self, message: str):
            _write(sys.stderr, self.format_usage())
            raise Refused(f"usage: {message}")

    return CommandParser(**kwargs)


def parse_command_line(prog: str, parser, argv: list[str]):
    """``parser.parse_args(argv)``, or the exit code: 0 after ``--help``, 2 after a
    usage error (reported by :func:`fail`, as JSON too when ``--json`` is on
    the command line)."""
    try:
        return parser.parse_args(argv)
    except Refused as exc:
        return fail(prog, exc, as_json="--json" in argv)
    except SystemExit as exc:  # --help or --version: argparse printed it
        return exc.code if isinstance(exc.code, int) else EXIT_OK
