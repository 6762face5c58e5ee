"""Showing outside bytes and numbers to people: one escaping helper for all of bob.

Everything bob prints that came from outside — a file's bytes, a path from
the command line, an OS error's text — goes through :func:`escape_bytes` or
:func:`one_line`, so a hostile file or path can never put a control
character, an escape sequence or a line break on a terminal or in a log.
The same helpers write ``FormatError`` messages, ``bob-run``'s and
``bob-fixture``'s refusals and every ``bob-inspect`` report, so one byte is
shown the same way everywhere:

* printable ASCII stays as it is, except ``"`` and ``\\``;
* every other byte, and ``"`` and ``\\``, is ``\\xNN`` (so the text reads
  unambiguously inside double quotes and never ends in a dangling backslash).

Numbers: :func:`f32_text` and :func:`float_text` never raise, whatever the
value (NaN with any payload, ±inf, subnormals, values that overflow a
Python-float-to-f32 conversion); nor do :func:`int_text` and
:func:`repr_text`, whose text stays short whatever the integer (one past
:data:`INT_SHOWN_BITS` bits is said by its size, never in digits).

Writing it: every command prints through :func:`write_whole`, :func:`note`
and :func:`emit`, which survive a closed or full stdout (one line on stderr
says so; the exit status stands), after :func:`tolerant_streams` (text the
stream's encoding cannot hold is written escaped, never a
``UnicodeEncodeError``); :func:`exit_now` ends an installed command's
process once both streams are flushed.

Standard library only: ``bob-run`` imports it on its fast path.
"""

from __future__ import annotations

import math
import os
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover - typing costs start-up time bob-run does not pay
    from typing import Any, NoReturn, TextIO

__all__ = [
    "own_stream",
    "escape_bytes",
    "show_bytes",
    "show_byte",
    "show_path",
    "plural",
    "one_line",
    "bounded",
    "f32_text",
    "f32_json",
    "float_text",
    "INT_SHOWN_BITS",
    "int_text",
    "repr_text",
    "exact_text",
    "json_number",
    "json_text",
    "tolerant_streams",
    "write_whole",
    "silence",
    "note",
    "emit",
    "exit_now",
]

# One table for the 256 byte values: printable ASCII as itself, the rest \xNN.
_BYTE_TEXT = tuple(
    chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\x{b:02x}" for b in range(256)
)


def escape_bytes(data: bytes | bytearray | memoryview) -> str:
    """Bytes as printable ASCII: ``abc\\x0a\\x22`` (no quotes around it)."""
    return "".join(_BYTE_TEXT[b] for b in bytes(data))


def show_bytes(data: bytes | bytearray | memoryview, limit: int = 96) -> str:
    """Bytes quoted for a message: ``"BOB-CKPT"``; cut after ``limit`` bytes with the length noted."""
    data = bytes(data)
    text = '"' + escape_bytes(data[:limit]) + '"'
    if len(data) > limit:
        text += f"...({len(data)} bytes)"
    return text


def show_byte(value: int) -> str:
    """One byte value quoted: ``'a'``, ``'\\x0a'``, ``'\\x27'``."""
    if 0x20 <= value < 0x7F and value not in (0x27, 0x5C):
        return f"'{chr(value)}'"
    return f"'\\x{value & 0xFF:02x}'"


def plural(n: int, word: str) -> str:
    """``1 byte``, ``2 bytes``: a count with its word."""
    return f"{n} {word}{'s' if n != 1 else ''}"


def show_path(path: "str | bytes | os.PathLike[str] | os.PathLike[bytes] | None") -> str:
    """A path as the OS gave it (any bytes), escaped like file content; never ``None``."""
    if path is None:
        return "(no path)"
    if isinstance(path, int):  # a file descriptor: say so rather than print a bare number
        return f"(file descriptor {path})"
    return escape_bytes(os.fsencode(path))


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code < len(_BYTE_TEXT):
        return _BYTE_TEXT[code] if ch not in "\"\\" else ch
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def bounded(text: str, room: int = 80) -> str:
    """``text`` whole if it fits in ``room`` characters, else cut to fit and ended with ``...``: a value shown
    in a refusal is never taken for the whole of a longer one."""
    return text if len(text) <= room else f"{text[:room - 3]}..."


def one_line(text: str) -> str:
    """``text`` as one line of printable ASCII: every other character escaped.

    Quotes and backslashes are kept (the text is bob's own wording around
    values that were escaped already); a newline, a carriage return or an
    escape character can never come through.
    """
    text = str(text)
    if text.isascii() and text.isprintable():
        return text
    return "".join(ch if (ch.isascii() and ch.isprintable()) else _escape_char(ch) for ch in text)


def f32_text(value: float) -> str:
    """The shortest decimal that reads back as the same f32 (``0.05``, ``1e-08``).

    Never raises: non-finite values are ``nan``/``inf``/``-inf``, and a Python
    float that is no f32 (too large to convert) is shown with ``repr``.
    """
    value = float(value)
    if not math.isfinite(value):
        return float_text(value)
    try:
        bits = struct.pack("<f", value)
    except OverflowError:  # beyond binary32's range: not an f32 at all
        return repr(value)
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        try:
            if struct.pack("<f", float(text)) == bits:
                return text
        except OverflowError:  # a short decimal of ±FLT_MAX rounds past binary32's range
            continue
    return repr(value)  # pragma: no cover - 9 significant digits always round-trip


def f32_json(x: float) -> float | str:
    """An f32 value for JSON: the shortest decimal that reads back as the same f32
    (``"nan"``, ``"inf"``, ``"-inf"`` for non-finite values)."""
    text = f32_text(x)  # non-finite: "nan", "inf", "-inf"
    return float(text) if math.isfinite(float(x)) else text


def float_text(value: float) -> str:
    """Any float for a message: ``repr`` for finite values, ``nan``, ``inf``, ``-inf`` otherwise."""
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


INT_SHOWN_BITS = 128
"""The most bits of an integer a message writes in digits: 10**5000's digits are past Python's
int-to-str limit (a ValueError where the message was being made) and, without it, quadratic to write."""


def int_text(value: int) -> str:
    """An integer for a message: its digits up to :data:`INT_SHOWN_BITS` bits, else its sign and size
    (``an integer of 16610 bits``, ``a negative integer of 16610 bits``); a NumPy integer as ``str`` writes it."""
    if not isinstance(value, int) or value.bit_length() <= INT_SHOWN_BITS:
        return str(value)
    return f"{'a negative' if value < 0 else 'an'} integer of {value.bit_length()} bits"


def repr_text(value: "Any", room: int = 80, inside: "tuple[int, ...]" = ()) -> str:
    """``repr(value)`` as far as its first ``room`` characters (a list or a tuple longer than that is cut
    short: ``, ...``), never raising: an integer past :data:`INT_SHOWN_BITS` bits is :func:`int_text`'s words,
    in a list or a tuple too; a repr that cannot be made otherwise (such an integer in a dict) is said so."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > INT_SHOWN_BITS:
        return int_text(value)
    if type(value) not in (list, tuple):
        try:
            return repr(value)
        except Exception as exc:  # noqa: BLE001 - Python's int-to-str limit deeper inside, or a caller's repr failing
            if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
                return f"<{type(value).__name__} holding an integer too long to show>"
            return f"<{type(value).__name__} whose repr failed: {type(exc).__name__}>"
    ends = "[]" if type(value) is list else "()"
    if id(value) in inside:  # a list inside itself, as repr shows it
        return f"{ends[0]}...{ends[1]}"
    text = ends[0]
    for k, item in enumerate(value):
        if len(text) >= room:
            return f"{text}, ..."
        text += ", " * (k > 0) + repr_text(item, room - len(text), (*inside, id(value)))
    return text + "," * (len(value) == 1 and ends == "()") + ends[1]


def exact_text(value: float) -> str:
    """``value`` as ``%g`` writes it where that is the very number and no longer than ``repr`` (``0.5``,
    ``1e+06``), else ``repr``, the shortest text that reads back as it (``0.1234567``, ``5e-324``, which ``%g``
    writes 4.94066e-324): a message states the number applied, not one rounded to six digits."""
    text, shortest = f"{value:g}", repr(value)
    return text if float(text) == value and len(text) <= len(shortest) else shortest


def json_number(value: float | None) -> float | str | None:
    """A float for JSON: finite values as numbers, the rest as ``"nan"``, ``"inf"``, ``"-inf"``."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else float_text(value)


def json_text(document: "dict[str, Any]") -> str:
    """One ``--json`` object, keys sorted, as strict JSON: a non-finite float anywhere (one no report
    converted, such as a trace's loss) is ``"nan"``, ``"inf"`` or ``"-inf"`` (:func:`json_number`)."""
    import json

    def strict(value: Any) -> Any:
        if isinstance(value, float):
            return json_number(value)
        if isinstance(value, dict):
            return {key: strict(item) for key, item in value.items()}
        return [strict(item) for item in value] if isinstance(value, (list, tuple)) else value

    return json.dumps(strict(document), sort_keys=True, allow_nan=False)


# --------------------------------------------------------------------------- #
# Writing to the standard streams
# --------------------------------------------------------------------------- #


def own_stream(st: "os.stat_result") -> str | None:
    """``"output"`` or ``"error"`` when ``st`` is the file this process's standard output or error goes to (a file
    bob replaces or removes there would take what it prints with it: never one), else None."""
    for stream, name in ((sys.stdout, "output"), (sys.stderr, "error")):  # (not fds 1 and 2: closed at the start,
        try:  # bob's own files may take them; under bob.fuzz.common.stdout_on_stderr, stdout is a copy of fd 1)
            if stream is not None and os.path.samestat(os.fstat(stream.fileno()), st):
                return name
        except (OSError, ValueError, AttributeError):  # (closed, or no file: io.StringIO)
            continue
    return None


def tolerant_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as escapes
    (``\\u2026``, ``\\xb5``) instead of raising ``UnicodeEncodeError``
    (``PYTHONIOENCODING=ascii``, a C locale): degraded, never lost. An encoding that holds no text at all
    (``PYTHONIOENCODING=undefined``) is replaced by ASCII. A standard descriptor the process started
    without (``2>&-``) is opened on /dev/null: a file bob opens would take its number, and what is written
    to it (a native panic's message, :class:`bob.failures.LastWords`) would go into that file. A ``sys.stdout``
    on fd 1 closed under it becomes None, as one closed at start: its result is said to be lost, not written
    to /dev/null."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                if fd == 1 and sys.stdout is not None and sys.stdout.fileno() == 1:
                    sys.stdout = None
            except (AttributeError, OSError, ValueError):  # (a StringIO, a closed stream: not on fd 1)
                pass
            try:
                os.set_inheritable(os.open(os.devnull, os.O_RDWR), True)  # (the lowest number free: this one)
            except OSError:  # (no descriptor to spare: as it was)
                pass
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        try:
            "bob".encode(getattr(stream, "encoding", None) or "ascii")
            encoding = None
        except (LookupError, UnicodeError):
            encoding = "ascii"
        if reconfigure is not None and (encoding or getattr(stream, "errors", None) != "backslashreplace"):
            try:
                reconfigure(errors="backslashreplace", **({"encoding": encoding} if encoding else {}))
            except (ValueError, OSError):  # closed, or a replaced stream
                pass


_PIECE = 1024  # characters: at most 4,096 bytes of UTF-8, what a pipe takes whole once it can take any


def write_whole(stream: "TextIO | None", text: str) -> bool:
    """Write ``text`` whole and flush; False if the stream cannot take it. It goes in pieces of
    1,024 characters, each flushed (:class:`bob.signals.writing`: a signal the command took ends a
    printing that waits for a reader that stopped reading, before the next piece)."""
    from bob.signals import writing

    if stream is None:  # the process was started with this stream closed
        return False
    try:
        fd: int | None = stream.fileno()
    except (AttributeError, OSError, ValueError):  # no descriptor (io.StringIO)
        fd = None
    try:
        stream.write("")  # what was printed before (argparse's help): a write that failed is tried again
        stream.flush()
        for start in range(0, len(text), _PIECE):
            with writing(fd):
                stream.write(text[start:start + _PIECE])
                stream.flush()
        return True
    except (OSError, ValueError):  # closed, full, broken pipe
        silence(stream)
        return False


def silence(stream: "TextIO") -> None:
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
    write_whole(sys.stderr, f"{prog}: {one_line(text)}\n")


def emit(prog: str, text: str, *, committed: str | None = None, what: str | None = None) -> None:
    """Print a result whole (:func:`write_whole`). If stdout cannot take it, one line on
    stderr says so (naming what was ``committed``, if anything, and ``what`` it was, "the
    summary" by default); the caller's exit status is unchanged."""
    global _lost
    if not write_whole(sys.stdout, text if text.endswith("\n") else text + "\n") or \
            (committed and sys.stdout is _lost):
        note = f"{committed}, but its summary could not be printed" if committed else \
            f"{what or 'the summary'} could not be printed"
        write_whole(sys.stderr, f"{prog}: {note} (stdout is closed or full)\n")
        if sys.stdout is None:  # started with it closed: said once, what follows goes to /dev/null (but a commit);
            # its descriptor held for the process's life (a closed stdout's place), never closed by a wrapper's end
            null = os.open(os.devnull, os.O_WRONLY)
            sys.stdout = os.fdopen(null, "w", encoding="utf-8", closefd=False)
        _lost = sys.stdout  # (now /dev/null: a commit's summary after this is said on stderr too)


_lost: "TextIO | None" = None  # the stdout emit could not print to (while it is there)


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
