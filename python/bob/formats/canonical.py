"""The canonical bob files, built and recognized with the standard library only.

The construct schemas (:mod:`bob.formats.envelope`, :mod:`~.input_record`,
:mod:`~.predictions`) define every format and are the only source of
refusals. This module knows just the one layout bob itself writes
(``header_bytes`` = 448) and does two things with it, so that ``bob-run`` need
not import construct and NumPy when nothing is wrong:

* build a canonical checkpoint from a step and the three planes;
* recognize bytes as *exactly* a canonical checkpoint (or a valid input
  record) by rebuilding what the file must then be and comparing byte for
  byte; anything else is "not recognized", and the caller hands the file to
  the schemas, which accept it or say precisely what is wrong.

``tests/test_canonical.py`` holds this to the schemas: the bytes built here
equal ``Checkpoint.to_bytes()``; whatever is recognized here loads through
the schemas to the same step and planes; random and mutated files are never
recognized unless the schemas accept them.
"""

from __future__ import annotations

import hashlib
import os
import struct

from bob.formats.constants import (
    CHECKPOINT_MAGIC,
    CHUNK_BYTES,
    CHUNK_TAGS,
    DATA,
    EMPTY_PROMPT,
    INPUT_MAGIC,
    LEARNER,
    PAYLOAD_BYTES,
    PREDICTION_BYTES,
    PROMPTS,
    RECORD_BYTES,
    SEED,
    STATE,
    UPDATES_PER_INVOCATION,
    VOCABULARY,
)

VERSION = 1


def _prefixed(value: bytes) -> bytes:
    return struct.pack("<I", len(value)) + value


# The header, field by field as the envelope schema reads it, around the step.
_AFTER_STEP = b"".join(_prefixed(s) for s in (STATE, LEARNER, DATA, SEED)) + struct.pack(
    "<QQQI", PAYLOAD_BYTES, CHUNK_BYTES, UPDATES_PER_INVOCATION, len(CHUNK_TAGS)
)
_CHUNK_ENTRY_BYTES = 4 + 8 + 8 + 32  # tag, offset, length, SHA-256
_HEADER_LENGTH = len(CHECKPOINT_MAGIC) + 3 * 8 + len(_AFTER_STEP) + len(CHUNK_TAGS) * _CHUNK_ENTRY_BYTES + 32
HEADER_BYTES = -(-_HEADER_LENGTH // 64) * 64  # what bob writes: the header rounded up to 64 (448)
CHECKPOINT_BYTES = HEADER_BYTES + PAYLOAD_BYTES  # 786,880
_BEFORE_STEP = CHECKPOINT_MAGIC + struct.pack("<QQ", VERSION, HEADER_BYTES)


def checkpoint_header(step: int, chunk_digests: "list[bytes]") -> bytes:
    """The canonical 448-byte header for ``step`` and the planes' SHA-256s."""
    body = _BEFORE_STEP + struct.pack("<Q", step) + _AFTER_STEP + b"".join(
        tag + struct.pack("<QQ", HEADER_BYTES + i * CHUNK_BYTES, CHUNK_BYTES) + digest
        for i, (tag, digest) in enumerate(zip(CHUNK_TAGS, chunk_digests))
    )
    header = body + hashlib.sha256(body).digest()
    return header + bytes(HEADER_BYTES - len(header))


def _chunk_digests(planes: memoryview) -> list[bytes]:
    return [hashlib.sha256(planes[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]).digest() for i in range(len(CHUNK_TAGS))]


def build_checkpoint(step: int, planes) -> bytes:
    """The canonical checkpoint file for ``step`` and ``planes`` (P, M, V as
    786,432 bytes of little-endian float32, in parameter order)."""
    view = memoryview(planes).cast("B")
    if len(view) != PAYLOAD_BYTES:
        raise ValueError(f"planes are {PAYLOAD_BYTES} bytes, got {len(view)}")
    return checkpoint_header(step, _chunk_digests(view)) + view.tobytes()


def recognize_checkpoint(data: bytes) -> int | None:
    """The step, if ``data`` is exactly a canonical checkpoint whose header
    digest and chunk digests all hold; otherwise None (let the schemas judge)."""
    if len(data) != CHECKPOINT_BYTES or data[: len(_BEFORE_STEP)] != _BEFORE_STEP:
        return None
    (step,) = struct.unpack_from("<Q", data, len(_BEFORE_STEP))
    planes = memoryview(data)[HEADER_BYTES:]
    if data[:HEADER_BYTES] != checkpoint_header(step, _chunk_digests(planes)):
        return None
    return step


def recognize_record(data: bytes) -> "tuple[bytes, bytes, tuple[int, ...]] | None":
    """(contexts, targets, prompt words) if ``data`` is a valid input record; else None."""
    if len(data) != RECORD_BYTES or data[:16] != INPUT_MAGIC + struct.pack("<Q", VERSION):
        return None
    pairs = bytes(data[16:16 + 2 * VOCABULARY])
    contexts, targets = pairs[0::2], pairs[1::2]
    if data[16 + 2 * VOCABULARY:RECORD_BYTES - 4 * PROMPTS] != struct.pack(f"<{VOCABULARY}I", *targets):
        return None
    words = struct.unpack_from(f"<{PROMPTS}I", data, RECORD_BYTES - 4 * PROMPTS)
    if any(w >= VOCABULARY and w != EMPTY_PROMPT for w in words):
        return None
    return contexts, targets, words


def predictions_bytes(records: "list[tuple[int, int]]") -> bytes:
    """The 24-byte predictions file for (token, validity) records."""
    data = b"".join(struct.pack("<II", token, validity) for token, validity in records)
    if len(data) != PREDICTION_BYTES:
        raise ValueError(f"predictions are {PREDICTION_BYTES} bytes, got {len(data)}")
    return data


def read_at_most(path: "str | os.PathLike[str]", limit: int) -> bytes | None:
    """A file's bytes if it holds at most ``limit`` bytes; None if it does not
    exist. A larger file is not read: :class:`TooLarge` is raised, and the
    caller's schema reader refuses the file in its own words."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        if os.fstat(fd).st_size > limit:
            raise TooLarge
        data = f.read(limit + 1)
    if len(data) > limit:
        raise TooLarge
    return data


class TooLarge(Exception):
    """A file larger than any valid one: left to the schemas' reader to refuse."""
