"""bob's one error family: every refusal of bytes is a :class:`FormatError`.

A ``FormatError`` is a ``ValueError`` that names what failed:

``field``
    the schema's name for the field (``"magic"``, ``"learner"``,
    ``"chunk_table.digest"``, ``"targets"``, ``"file_size"`` …);
``expected`` / ``actual``
    the value the contract asks for and the value found (raw: ``bytes`` or
    ``int``; ``str(error)`` shows them readably), or ``None``;
``offset``
    the byte offset in the file where the field starts, or ``None``;
``index``
    the element's index in a table (pair, prompt, chunk, record, plane
    value), or ``None``.

``str(error)`` is one line that names the field (and its index and offset)
and shows both values; every byte taken from a file is escaped, so a hostile
file cannot put control characters on a terminal.

The subclasses say what kind of refusal it is:

* :class:`NotABobFile` — the magic is not this format's (or not bob's at all);
* :class:`Truncated` — a length or size problem: the file is shorter or
  longer than the format says, or a length prefix overruns the bytes that
  remain or the 4,096-byte limit;
* :class:`IntegrityError` — a SHA-256 digest does not match the bytes;
* :class:`ContractMismatch` — a §2 contract field differs from bob v1's;
* :class:`BadValue` — a value the format does not allow (version, header
  size, chunk table, padding, target, prompt word, token, validity …);
* :class:`StateRefused` — the file is well formed but its state cannot be
  resumed (non-finite values, negative V, step 0 with non-zero moments, no
  room for the updates of one more invocation). An inspector reports these instead.

Beside the family, the three errors of a path bob was given (raised by
:mod:`bob.fileio`, and importable from it): :class:`NotARegularFile` (a
directory, FIFO, socket or device), :class:`NotReplaceable` (other hard links,
or read-only) and :class:`FileTooLarge` (larger than any valid file; not read).

Values are shown through :mod:`bob.text`, bob's one escaping helper. Nothing
outside the standard library is imported, so ``import bob`` stays cheap.
"""

from __future__ import annotations

import errno
import os
import stat
from numbers import Real

from bob.formats.constants import LEARNER_NAMES, LEARNER_PREFIX, PLANE_NAMES, learner_floats
from bob.text import (INT_SHOWN_BITS, bounded, f32_json, f32_text, float_text, int_text, json_number, one_line, repr_text,
                      show_bytes)

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

__all__ = [
    "FormatError", "NotABobFile", "Truncated", "IntegrityError", "ContractMismatch", "BadValue", "StateRefused",
    "ERROR_CLASSES", "show_bytes", "show_value", "show_learner", "integer_value", "integer_field", "real_value",
    "ordered_items", "flag_value", "buffer_bytes", "shown_kind", "byte_buffer", "as_bytes", "f32_text", "int_text",
    "NotARegularFile", "NotReplaceable", "FileTooLarge", "field_at",
]


def show_learner(learner: bytes) -> str:
    """A learner contract readably: its text and its five floats as numbers (a NaN as ``nan(0x7fc00000)``)."""
    learner = bytes(learner)
    floats = learner_floats(learner)
    if floats is None:
        return show_bytes(learner)
    words = [learner[k:k + 4][::-1].hex() for k in range(len(LEARNER_PREFIX), len(learner), 4)]  # a NaN: its bits
    numbers = ", ".join(f"{name}={f32_text(x) if x == x else f'nan(0x{word})'}"
                        for name, x, word in zip(LEARNER_NAMES, floats, words))
    return f"{show_bytes(LEARNER_PREFIX)} + f32[{numbers}]"


def show_value(value: Any, field: str | None = None) -> str:
    """Any expected/actual value readably, on one line."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        if field == "learner":
            return show_learner(bytes(value))
        if field is not None and ("digest" in field or field.endswith("sha256")) and len(value) == 32:
            return bytes(value).hex()
        return show_bytes(bytes(value))
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):  # (past INT_SHOWN_BITS bits, int_text's words: never digits)
        if value >= 1 << 32 and value.bit_length() <= INT_SHOWN_BITS:
            return f"{value} (0x{value:x})"
        return "0xffffffff" if value == 0xFFFFFFFF else int_text(value)
    if isinstance(value, float):  # a plane's value is an f32: shown as the tables show it
        return f32_text(value) if field in PLANE_NAMES else float_text(value)
    return one_line(str(value))


def integer_value(value: Any) -> int | None:
    """``value`` as an int if it is an integer (an int or a NumPy integer, not
    a bool), else None. Every door of the library that takes an integer asks
    this and refuses by name what is not one: nothing is ``int()``-ed, so 1.5
    is refused, never taken for 1."""
    if isinstance(value, int):  # (not a bool) its own value, as range() takes it, whatever its __index__ says
        return None if isinstance(value, bool) else int.__index__(value)
    try:
        whole = type(value).__index__(value)
    except (AttributeError, TypeError):  # no __index__ (a float, a str), or a NumPy bool's refusal
        return None
    return whole if type(whole) is int else None  # (an __index__ that returns 10.5 or "10" is no integer)


def real_value(value: Any) -> float | None:
    """``value`` as a float if it is a real number a float64 holds (an int, a float, a
    NumPy number, a Fraction; not a bool), else None: "0.5" is no number, as for
    :func:`integer_value`."""
    if isinstance(value, bool) or not isinstance(value, Real):
        return None
    try:
        return float(value)
    except OverflowError:  # an int past 2**1024
        return None


def buffer_bytes(value: Any) -> bytes | None:
    """Any buffer's bytes (an ndarray's too: D24), or None (a ``str`` is a path or text, never bytes; a buffer of
    Python objects holds their addresses)."""
    try:
        view = None if isinstance(value, str) else memoryview(value)
    except TypeError:
        return None
    return None if view is None or _of_objects(view) else view.tobytes()


def _of_objects(view: memoryview) -> bool:
    """Whether ``view`` holds Python objects (``O`` in its struct format, not in a field's name between colons)."""
    return "O" in "".join(view.format.split(":")[::2])


def flag_value(value: Any, name: str) -> bool:
    """``value`` if it is a bool (a NumPy bool too), else a TypeError naming ``name``: "False"
    is true, and a flag that takes it does the opposite of what was asked."""
    if isinstance(value, bool) or (type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_")):
        return bool(value)
    raise TypeError(f"{name} must be True or False; got {shown_kind(value)}")


def ordered_items(value: Any) -> "tuple[Any, ...] | None":
    """``value``'s items in their order, or None: a set (its order is the hash seed's), a dict
    and what is not iterable have none to give. Every door that takes a sequence asks this."""
    if isinstance(value, (set, frozenset, dict)):
        return None
    try:
        return tuple(value)
    except TypeError:
        return None


def shown_kind(value: Any) -> str:
    """A value of the wrong kind, for a refusal: its type and its repr (:func:`bob.text.repr_text`), or, for an
    int too large to write in digits, :func:`int_text`'s words alone (``an integer of 16610 bits``)."""
    if type(value) is int and value.bit_length() > INT_SHOWN_BITS:
        return int_text(value)
    return bounded(one_line(f"{type(value).__name__} {repr_text(value)}"))


def byte_buffer(data: Any, name: str, *, flat: bool = False, core: bool = False, str_hint: bool = True) -> memoryview:
    """``data``'s bytes as a memoryview (no copy; ``flat``: cast to unsigned
    bytes, so C-contiguous), or a TypeError that names ``name``.

    The one check of "must be bytes", at every door that takes bytes: the
    formats' readers and builders (:func:`as_bytes`),
    the writer (:func:`bob.fileio.write_atomic`) and the native core's
    wrapper (:mod:`bob.core`, whose refusal shows the value: ``core``). A
    ``str`` is refused (bytes in which encoding?; named as such unless
    ``str_hint`` is False, as the writer's refusal has always read), and so
    is anything without the buffer protocol (``bytes(5)`` would be five zero
    bytes). Any buffer is its bytes, as to ``bytes()`` and ``hashlib`` (an
    ``array('H')``'s two per item); a strided one is copied where ``flat``.
    """
    view = None
    if not isinstance(data, str):
        try:
            view = memoryview(data)
        except TypeError:
            pass
    if view is not None and _of_objects(view):
        raise TypeError(f"{name} must be bytes; a buffer of Python objects holds their addresses, not bytes")
    if view is not None:
        return (view.cast("B") if view.c_contiguous else memoryview(view.tobytes())) if flat else view
    if core:
        raise TypeError(f"{name} must be bytes; got {shown_kind(data)}")
    if isinstance(data, str) and str_hint:
        raise TypeError(f"{name} must be bytes, not str")
    raise TypeError(f"{name} must be bytes (or a bytes-like object), not {type(data).__name__}")


def as_bytes(data: Any, name: str) -> bytes:
    """``data`` as ``bytes`` (a bytes-like object copied once), or :func:`byte_buffer`'s TypeError naming ``name``."""
    return data if type(data) is bytes else byte_buffer(data, name).tobytes()


def field_at(field: str, index: "int | None") -> str:
    """A field with its index, as every report spells it: ``chunk_table[0].digest``, ``V[300]``."""
    head, dot, rest = field.partition(".")
    return field if index is None else f"{head}[{int_text(index)}]{dot}{rest}"


class FormatError(ValueError):
    """bytes refused by one of bob's formats; names the field that failed."""

    kind = "format-error"

    def __init__(
        self,
        field: str,
        message: str = "",
        *,
        expected: Any = None,
        actual: Any = None,
        offset: int | None = None,
        index: int | None = None,
    ) -> None:
        self.field: str = one_line(field)  # (a foreign key named in it, a safetensors metadata key say: escaped)
        self.message = message
        self.expected = expected
        self.actual = actual
        self.offset = offset
        self.index = index
        super().__init__(self._text())

    # -- presentation -------------------------------------------------------
    @property
    def where(self) -> str:
        """``field[index] at offset N``, the part of the message that locates the failure."""
        text = field_at(self.field, self.index)
        if self.offset is not None:
            text += f" at offset {int_text(self.offset)}"
        return text

    @property
    def expected_text(self) -> str | None:
        return None if self.expected is None else show_value(self.expected, self.field)

    @property
    def actual_text(self) -> str | None:
        return None if self.actual is None else show_value(self.actual, self.field)

    def _text(self) -> str:
        text = f"{self.where}: {self.message}" if self.message else self.where
        parts = []
        if self.expected is not None:
            parts.append(f"expected {self.expected_text}")
        if self.actual is not None:
            parts.append(f"got {self.actual_text}")
        if parts:
            text += " (" + ", ".join(parts) + ")"
        return one_line(text)

    def __str__(self) -> str:
        return self._text()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._text()!r})"

    def __reduce__(self):
        return (_rebuild, (type(self), self.field, self.message, self.expected, self.actual, self.offset, self.index),
                self.__dict__)  # (the state: what else was set on it, such as add_note's __notes__)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (stable keys): error, kind, field, index, offset, message, expected, actual, text."""
        index, offset = (value if (whole := integer_value(value)) is None else whole  # (NumPy's: Python's)
                         for value in (self.index, self.offset))
        return {
            "error": type(self).__name__, "kind": self.kind, "field": self.field,
            "index": _jsonable(index, self.field),  # (10**5000: in words, as the text says it)
            "offset": _jsonable(offset, self.field),
            "message": one_line(self.message),
            "expected": _jsonable(self.expected, self.field),
            "actual": _jsonable(self.actual, self.field),
            "text": str(self),
        }


def _jsonable(value: Any, field: str) -> Any:
    if isinstance(value, float):
        return f32_json(value) if field in PLANE_NAMES else json_number(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value.bit_length() <= INT_SHOWN_BITS:
        return value  # (a longer one: show_value's words, as the text says it; json.dumps refuses 10**5000)
    return show_value(value, field)


def _rebuild(cls, field, message, expected, actual, offset, index):
    return cls(field, message, expected=expected, actual=actual, offset=offset, index=index)


class NotABobFile(FormatError):
    """The file does not start with this format's magic."""

    kind = "not-a-bob-file"


class Truncated(FormatError):
    """A length or size problem: too short, too long, or a length prefix that overruns."""

    kind = "truncated"


class IntegrityError(FormatError):
    """A SHA-256 digest (header or chunk) does not match the bytes it covers."""

    kind = "integrity"


class ContractMismatch(FormatError):
    """A contract field (§2) differs from bob v1's; both values are shown readably."""

    kind = "contract-mismatch"


class BadValue(FormatError):
    """A value the format does not allow."""

    kind = "bad-value"


class StateRefused(FormatError):
    """A well-formed checkpoint whose state cannot be resumed (§5)."""

    kind = "state-refused"


ERROR_CLASSES = (NotABobFile, Truncated, IntegrityError, ContractMismatch, BadValue, StateRefused)


def integer_field(value: Any, field: str, message: str, index: int | None = None) -> int:
    """``value`` as an int (:func:`integer_value`), or a BadValue naming
    ``field`` (and ``index``) with ``message`` and what the value was."""
    number = integer_value(value)
    if number is None:
        raise BadValue(field, message, actual=shown_kind(value), index=index)
    return number


# --------------------------------------------------------------------------- #
# A path bob was given that it will not read or replace (bob.fileio raises these)
# --------------------------------------------------------------------------- #


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "not a regular file"


class NotARegularFile(OSError):
    """The path names a directory, FIFO, socket or device: bob reads and replaces regular files only."""

    def __init__(self, path: "str | os.PathLike[str]", mode: int) -> None:
        self.kind = _kind(mode)
        self.mode = mode
        code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
        super().__init__(code, f"{self.kind}, not a regular file", os.fspath(path))

    def __reduce__(self):  # the constructor's arguments, so it pickles and copies (OSError's would not fit)
        return type(self), (self.filename, self.mode)


class NotReplaceable(OSError):
    """A regular file bob will not replace: it has other hard links, or its owner cannot write it."""

    def __init__(self, path: "str | os.PathLike[str]", reason: str) -> None:
        super().__init__(errno.EPERM, reason, os.fspath(path))

    def __reduce__(self):
        return type(self), (self.filename, self.strerror)


class FileTooLarge(Exception):
    """A regular file larger than any valid one; it was not read (``head``: its first bytes). ``size`` is
    its size or, when ``partial`` (it grew while it was read; a /proc file, whose size says 0), the bytes
    seen of it: it has at least that many."""

    def __init__(self, size: int, head: bytes, partial: bool = False) -> None:
        super().__init__(f"{'at least ' * partial}{size} bytes")
        self.size = size
        self.head = head
        self.partial = partial

    def __reduce__(self):
        return type(self), (self.size, self.head, self.partial)
