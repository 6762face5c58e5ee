"""Reading bob files from paths, and what every format's reader shares: the first checks of any bytes (bytes-like, the
magic), the examinations' base and the typed objects' file methods.

Every ``read_*_file`` goes through :func:`read_format_file`, which wraps the one bounded reader
(:func:`bob.fileio.read_bounded`) and turns a file larger than any valid one into the format's own refusal. A missing
path raises ``FileNotFoundError`` (only ``bob-run`` treats a missing checkpoint as a fresh run) and a directory, FIFO,
socket or device :class:`bob.fileio.NotARegularFile`."""

from __future__ import annotations

import errno
import os
from typing import Any, Callable, ClassVar, Self

from bob.errors import FormatError, NotABobFile, Truncated, as_bytes
from bob.fileio import FileTooLarge, read_bounded, write_atomic
from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC, TRACE_MAGIC
from bob.formats.kinds import MAGIC_BYTES, ends_inside
from bob.text import plural

__all__ = ["read_format_file", "too_large", "INPUT_FILE", "CHECKPOINT_FILE", "KNOWN_MAGICS", "magic_finding",
           "starts_like", "as_bytes", "Examined", "BobFile"]

# A format's magic and its name in a refusal (the predictions have no magic).
INPUT_FILE = (INPUT_MAGIC, "an input record (bob-input)")
CHECKPOINT_FILE = (CHECKPOINT_MAGIC, "a checkpoint (bob-envelope)")


def read_format_file(path: "str | os.PathLike[str]", limit: int, magic: "tuple[bytes, str] | None",
                     valid: int | None = None) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; a larger file is refused unread
    (:func:`too_large`, against the format's ``valid`` size: ``limit`` unless a reader reads past it)."""
    try:
        data = read_bounded(path, limit)
    except FileTooLarge as big:
        raise too_large(big, limit if valid is None else valid, magic) from None
    if data is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
    return data


def too_large(big: FileTooLarge, limit: int, magic: "tuple[bytes, str] | None") -> FormatError:
    """The refusal of a file larger than ``limit`` (``big``: what the bounded reader saw, its first bytes and its size):
    another format named by its first bytes, else ``file_size``."""
    if magic is not None:
        problem = magic_finding(big.head, *magic)
        if problem is not None and not isinstance(problem, Truncated):
            return problem
    like = starts_like(big.head) if magic is None else ""  # (past the magic's finding: its own format's magic)
    return Truncated("file_size", f"the file is larger than any valid one ({limit} bytes){like}; it was not read",
                     expected=f"at most {limit}", actual=big.size)


# A format's first bytes: the magic (the predictions have none).
KNOWN_MAGICS = {INPUT_MAGIC: "a bob input record (bob-input)", CHECKPOINT_MAGIC: "a bob checkpoint (bob-envelope)",
                TRACE_MAGIC: "a bob trace (bob-trace)"}


def starts_like(data: bytes) -> str:
    """"; this file starts like a bob checkpoint (bob-envelope)" for bytes that start as another format's, else ""."""
    kind = KNOWN_MAGICS.get(bytes(data[:MAGIC_BYTES]))
    return f"; this file starts like {kind}" if kind else ""


def magic_finding(data: bytes, magic: bytes, what: str) -> FormatError | None:
    """The finding for ``data``'s first bytes against ``magic``, or None if they match: a file that ends inside the
    magic is ``Truncated``; any other that does not start with it is :class:`NotABobFile`, never a bad length (D1)."""
    head = data[: len(magic)]
    if head == magic:
        return None
    if ends_inside(head, magic):
        return Truncated("file_size", f"the file ends inside the magic of {what}",
                         expected=f"at least {len(magic)} bytes", actual=plural(len(data), "byte"), offset=0)
    other = KNOWN_MAGICS.get(head)
    message = f"this is {other}, not {what}" if other else f"not {what}: wrong magic"
    return NotABobFile("magic", message, expected=magic, actual=head, offset=0)


class Examined:
    """The base of each format's examination: its ``findings`` and whether there are none. Each is one reading's
    report, equal only to itself (a finding is an exception, a plane an array): files compare by their bytes."""

    findings: "list[FormatError]"

    @property
    def ok(self) -> bool:
        return not self.findings

    def checked(self) -> Self:
        """This examination, if it found nothing; else its first finding is raised."""
        if self.findings:
            raise self.findings[0]
        return self


class BobFile:
    """``from_bytes``, ``read`` and ``write`` of a format's typed object, by its ``to_bytes`` and its
    ``_format``: ``examine``, the examination's field of a valid file's object, the size limit, the magic."""

    _format: "ClassVar[tuple[Callable[[bytes], Examined], str, int, tuple[bytes, str] | None]]"

    def to_bytes(self) -> bytes:
        raise NotImplementedError  # pragma: no cover - each format's own

    def __eq__(self, other: object) -> bool:
        """Equal objects are one file: the bytes say it all.
        Used where the format's dataclass leaves ``eq=False`` (the input record, the trace)."""
        return self.to_bytes() == other.to_bytes() if isinstance(other, type(self)) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.to_bytes())

    @classmethod
    def _trusted(cls, **values: Any) -> Self:
        """The (frozen) object of values a reader has already checked, without checking them again."""
        made = object.__new__(cls)
        for name, value in values.items():
            object.__setattr__(made, name, value)
        return made

    @classmethod
    def from_bytes(cls, data: bytes) -> Self:
        """Parse and check a file's bytes (the format's ``load_*``); raise the first finding."""
        examine, typed, _, _ = cls._format
        return getattr(examine(data).checked(), typed)

    @classmethod
    def read(cls, path: "str | os.PathLike[str]") -> Self:
        """Read and check the file at ``path`` (the format's ``read_*_file``)."""
        _, _, limit, magic = cls._format
        return cls.from_bytes(read_format_file(path, limit, magic))

    def write(self, path: "str | os.PathLike[str]") -> None:
        """Replace the file at ``path`` with this object's bytes, atomically."""
        write_atomic(path, self.to_bytes())
