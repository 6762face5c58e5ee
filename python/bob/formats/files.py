"""Reading bob files from paths: regular files only, size-checked before they are read;
and the first checks every reader makes of any bytes (bytes-like, the magic).

Every reader (``read_input_file``, ``read_checkpoint_file`` and
``read_predictions_file``, each beside its format's loader) goes through
:func:`read_format_file`, which wraps the one
bounded reader (:func:`bob.fileio.read_bounded`) and turns a file larger
than any valid one into the format's own refusal (a foreign magic is named
as such, anything else is ``file_size``). A missing path raises
``FileNotFoundError`` — only ``bob-run`` treats a missing checkpoint as a
fresh run (the contract's command convention) — and a directory, FIFO,
socket or device raises :class:`bob.fileio.NotARegularFile`.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from bob.errors import FormatError, NotABobFile, Truncated, byte_buffer
from bob.fileio import FileTooLarge, read_bounded
from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC, TRACE_MAGIC

__all__ = ["read_format_file", "too_large", "INPUT_FILE", "CHECKPOINT_FILE", "KNOWN_MAGICS", "magic_finding",
           "as_bytes"]

# A format's magic and its name in a refusal (the predictions have no magic).
INPUT_FILE = (INPUT_MAGIC, "an input record (bob-input)")
CHECKPOINT_FILE = (CHECKPOINT_MAGIC, "a checkpoint (bob-envelope)")


def read_format_file(path: "str | os.PathLike[str]", limit: int, magic: "tuple[bytes, str] | None") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    A larger file is refused unread: :class:`~bob.errors.NotABobFile`, named
    by ``magic``'s second part, when its first bytes are not ``magic``'s
    first part; else :class:`~bob.errors.Truncated` (``file_size``).
    """
    try:
        data = read_bounded(path, limit)
    except FileTooLarge as big:
        raise too_large(big, limit, magic) from None
    if data is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
    return data



def too_large(big: FileTooLarge, limit: int, magic: "tuple[bytes, str] | None") -> FormatError:
    """The refusal of a file larger than ``limit`` (``big``: what the bounded
    reader saw, its first bytes and its size): another format named by its
    first bytes, else ``file_size``."""
    if magic is not None:
        problem = magic_finding(big.head, *magic)
        if problem is not None and not isinstance(problem, Truncated):
            return problem
    return Truncated("file_size", f"the file is larger than any valid one ({limit} bytes); it was not read",
                     expected=f"at most {limit}", actual=big.size)


# A format's first bytes: the magic (the predictions have none).
KNOWN_MAGICS = {
    INPUT_MAGIC: "a bob input record (bob-input)",
    CHECKPOINT_MAGIC: "a bob checkpoint (bob-envelope)",
    TRACE_MAGIC: "a bob trace (bob-trace)",
}


def magic_finding(data: bytes, magic: bytes, what: str) -> FormatError | None:
    """The finding for ``data``'s first bytes against ``magic``, or None if they match.

    A file that does not start with the magic is :class:`NotABobFile` (named as
    such, never as a bad length); a file shorter than the magic that is a
    prefix of it is :class:`Truncated`.
    """
    head = data[: len(magic)]
    if head == magic:
        return None
    if len(head) < len(magic) and magic.startswith(head):
        return Truncated("file_size", f"the file ends inside the magic of {what}",
                         expected=f"at least {len(magic)} bytes", actual=f"{len(data)} bytes", offset=0)
    other = KNOWN_MAGICS.get(head)
    message = f"this is {other}, not {what}" if other else f"not {what}: wrong magic"
    return NotABobFile("magic", message, expected=magic, actual=head, offset=0)


def as_bytes(data: Any, name: str) -> bytes:
    """``data`` as ``bytes``: a bytes-like object is copied once; anything else
    is :func:`bob.errors.byte_buffer`'s TypeError naming ``name``."""
    if type(data) is bytes:
        return data
    return byte_buffer(data, name).tobytes()
