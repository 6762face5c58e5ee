"""What every ``bob-inspect`` report shares: exit codes, the refusal, reading a file through the formats layer's one
bounded reader (a file too large for its format is a finding; a path that cannot be read a :class:`Refused`, exit 2)
and the JSON-safe forms of values. Text is escaped by :mod:`bob.text` only."""

from __future__ import annotations

import hashlib
import os
from typing import Any, Callable

from bob.errors import FormatError
from bob.fileio import FileTooLarge, read_bounded, replace_target
from bob.formats.constants import MAX_CHECKPOINT_BYTES, UPDATES_PER_INVOCATION
from bob.formats.files import CHECKPOINT_FILE, read_format_file, too_large
from bob.text import escape_bytes, plural, show_path

from bob.commands import EXIT_INTERRUPTED, EXIT_OK, EXIT_REFUSED as EXIT_PROBLEMS, EXIT_UNEXPECTED, Refused, os_reason

__all__ = ["EXIT_OK", "EXIT_UNEXPECTED", "EXIT_PROBLEMS", "EXIT_INTERRUPTED", "Refused", "os_reason", "read", "PROG",
           "TOP_K", "base", "finish", "plural", "add_note", "peek", "file_size", "read_checkpoint", "begin",
           "magic_report", "not_replaced", "invocations_text"]

PROG = "bob-inspect"
TOP_K = 5  # next bytes shown per row (--rows)


def refusal(path: str, exc: OSError, option: str | None = None) -> Refused:
    """A path that cannot be read, refused naming the option and the path: "no such file", or why not."""
    plain = isinstance(exc, FileNotFoundError) and exc.strerror in (None, os.strerror(2))  # (2: ENOENT)
    return Refused("no such file" if plain else os_reason(exc), option=option, path=path)


def read(path: str, limit: int, magic: "tuple[bytes, str] | None", valid: int, option: str | None = None,
         peeked: "tuple[bytes, int, bool] | None" = None) -> tuple[bytes | None, list[FormatError]]:
    """``(bytes, [])``, or ``(None, [finding])`` for a file larger than ``limit`` (never read whole; said against
    the format's ``valid`` size); a path that cannot be read is a :class:`Refused` naming ``option``. ``peeked``:
    :func:`peek`'s read, not read again."""
    if peeked is not None:
        data, size, partial = peeked
        return (data, []) if size <= limit and not partial else (None, [too_large(FileTooLarge(size, data, partial),
                                                                                  valid, magic)])
    try:
        return read_format_file(path, limit, magic, valid), []
    except FormatError as exc:
        return None, [exc]
    except OSError as exc:  # missing, a directory, a FIFO, a device, no permission …
        raise refusal(path, exc, option) from None


def read_checkpoint(path: str, option: str | None = None,
                    peeked: "tuple[bytes, int, bool] | None" = None) -> tuple[bytes | None, list[FormatError]]:
    return read(path, MAX_CHECKPOINT_BYTES, CHECKPOINT_FILE, MAX_CHECKPOINT_BYTES, option, peeked)


def peek(path: str) -> tuple[bytes, int, bool]:
    """A file's bytes (its first ones only, past the largest of any format), its size and whether that size is
    only a lower bound (:class:`FileTooLarge`): ``bob-inspect FILE`` reads the file once, its kind told from
    these bytes and its report made of them (a file renamed over the path in between is not taken for it)."""
    try:
        data = read_bounded(path, MAX_CHECKPOINT_BYTES)
    except FileTooLarge as big:
        return big.head, big.size, big.partial
    except OSError as exc:
        raise refusal(path, exc) from None
    if data is None:
        raise refusal(path, FileNotFoundError())
    return data, len(data), False


def file_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def add_note(report: dict[str, Any], note: str) -> None:
    report["note"] = f"{report['note']}; {note}" if report.get("note") else note


def base(command: str, path: str, data: bytes | None, auto: bool) -> dict[str, Any]:
    """The keys every file report starts with."""
    return {"command": command, "file": show_path(path), "auto": auto, "kind": command,
            "size": len(data) if data is not None else file_size(path),
            "sha256": hashlib.sha256(data).hexdigest() if data is not None else None}


def magic_report(found: bytes, magic: bytes) -> dict[str, Any]:
    return {"text": escape_bytes(found), "hex": found.hex(), "ok": found == magic}


def begin(command: str, path: str, data: bytes | None, read_problems: list[FormatError], auto: bool,
          examine: Callable[[bytes], Any]) -> tuple[dict[str, Any], list[FormatError], Any]:
    """A file report's first keys (:func:`base`), its problems so far and the format's
    examination of ``data`` (None for a file too large to read)."""
    ex = examine(data) if data is not None else None
    return base(command, path, data, auto), [*read_problems, *(ex.findings if ex is not None else ())], ex


def finish(report: dict[str, Any], problems: list[FormatError], ok_verdict: str, bad_verdict: str) -> dict[str, Any]:
    """The keys every file report ends with: its problems, ``ok`` and the verdict."""
    report.update(problems=[p.to_dict() for p in problems], problem_count=len(problems), ok=not problems,
                  verdict=ok_verdict if not problems else f"{plural(len(problems), 'problem')}: {bad_verdict}")
    return report


def invocations_text(step: int) -> str:
    """A step in invocations, and the updates past the last whole one: ``3 invocations + 3 updates``."""
    extra = step % UPDATES_PER_INVOCATION
    return plural(step // UPDATES_PER_INVOCATION, "invocation") + (f" + {plural(extra, 'update')}" if extra else "")


def not_replaced(path: str) -> str | None:
    """Why bob-run (as this user) will not replace the valid checkpoint at ``path``, in bob-run's words, or None:
    what bob-run asks (:func:`bob.fileio.replace_target`: read-only, other hard links), and whether the directory
    where it makes the replacement can be written (a read-only mount, another user's directory)."""
    try:
        directory = os.path.dirname(replace_target(path))
    except OSError as exc:
        return f"bob-run (as this user) will not replace this file: {os_reason(exc)}"
    return None if os.access(directory, os.W_OK) else \
        f"bob-run (as this user) will not replace this file: its directory {show_path(directory)} cannot be written"
