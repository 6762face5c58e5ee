"""The canonical bob files, built and recognized with the standard library only.

The construct schemas (:mod:`bob.formats.envelope`, :mod:`~.input_record`,
:mod:`~.predictions`) define every format and are the only source of
refusals. This module knows just the one layout bob itself writes
(:data:`bob.formats.layout.CANONICAL`, ``header_bytes`` = 448) and does two
things with it, so that ``bob-run`` need not import construct and NumPy when
nothing is wrong:

* build a canonical checkpoint from a step and the three planes;
* recognize bytes as *exactly* a canonical checkpoint (or a valid input
  record) by rebuilding what the file must then be and comparing byte for
  byte; anything else is "not recognized", and the caller hands the file to
  the schemas, which accept it or say precisely what is wrong.

``tests/formats/test_canonical.py`` holds this to the schemas: the bytes
built here equal ``Checkpoint.to_bytes()``; whatever is recognized here loads
through the schemas to the same step and planes; random and mutated files
are never recognized unless the schemas accept them.
"""

from __future__ import annotations

try:
    # The core's SHA-256 spares bob-run hashlib's import (bob.core.sha256).
    # Without the core, hashlib gives the same digests.
    from bob.core import sha256 as _sha256_digest
except ImportError:  # pragma: no cover - the core is not built
    import hashlib

    def _sha256_digest(data) -> bytes:
        return hashlib.sha256(data).digest()

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
    RECORD_BYTES,
    SEED,
    STATE,
    UPDATES_PER_INVOCATION,
    VOCABULARY,
)
from bob.formats.layout import (
    CANONICAL,
    CANONICAL_CHECKPOINT_BYTES,
    CANONICAL_HEADER_BYTES,
    CHUNK_ENTRY,
    ENVELOPE_HEAD,
    ENVELOPE_TAIL,
    INPUT,
    PREDICTION_RECORD,
    U32,
    U64,
)

VERSION = 1
HEADER_BYTES = CANONICAL_HEADER_BYTES  # 448
CHECKPOINT_BYTES = CANONICAL_CHECKPOINT_BYTES  # 786,880

# The header, field by field as the envelope schema reads it, around the step.
_BEFORE_STEP = CHECKPOINT_MAGIC + U64.pack(VERSION) + U64.pack(HEADER_BYTES)
_AFTER_STEP = b"".join(U32.pack(len(s)) + s for s in (STATE, LEARNER, DATA, SEED)) + ENVELOPE_TAIL.pack(
    PAYLOAD_BYTES, CHUNK_BYTES, UPDATES_PER_INVOCATION, len(CHUNK_TAGS)
)
_STEP = ENVELOPE_HEAD["step"]
assert len(_BEFORE_STEP) == _STEP.offset
assert _STEP.end + len(_AFTER_STEP) == CANONICAL.chunk_table

_RECORD_HEAD = INPUT_MAGIC + U64.pack(VERSION)
_PAIRS = INPUT["pairs"]
_TARGETS = INPUT["targets"]
_WORDS = INPUT["prompt_words"]
assert len(_RECORD_HEAD) == _PAIRS.offset


def checkpoint_header(step: int, chunk_digests: "list[bytes]") -> bytes:
    """The canonical 448-byte header for ``step`` and the planes' SHA-256s."""
    body = _BEFORE_STEP + U64.pack(step) + _AFTER_STEP + b"".join(
        CHUNK_ENTRY.pack(tag, HEADER_BYTES + i * CHUNK_BYTES, CHUNK_BYTES, digest)
        for i, (tag, digest) in enumerate(zip(CHUNK_TAGS, chunk_digests))
    )
    header = body + _sha256_digest(body)
    return header + bytes(HEADER_BYTES - len(header))


def chunk_digests(planes: memoryview) -> list[bytes]:
    """The SHA-256 of each plane in ``planes`` (P, M, V as bytes, contiguous)."""
    return [_sha256_digest(planes[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]) for i in range(len(CHUNK_TAGS))]


def sha256(data) -> bytes:
    """SHA-256 of a bytes-like object (the core's when it is built, else hashlib's)."""
    return _sha256_digest(data)


def seal_checkpoint(step: int, checkpoint: bytearray) -> bytearray:
    """Make ``checkpoint`` — a buffer of a canonical checkpoint's size whose
    planes (P, M, V, little-endian float32) are in place after the header —
    the canonical checkpoint file for ``step``, by writing the header in
    place; returns it. bob-run reads, trains and writes one buffer this way:
    no 786 KB copy, no fresh pages to fault in."""
    view = memoryview(checkpoint)
    if len(view) != CHECKPOINT_BYTES or view.readonly:
        raise ValueError(f"a checkpoint buffer is {CHECKPOINT_BYTES} writable bytes, got {len(view)}")
    view[:HEADER_BYTES] = checkpoint_header(step, chunk_digests(view[HEADER_BYTES:]))
    return checkpoint


def build_checkpoint(step: int, planes) -> bytearray:
    """The canonical checkpoint file for ``step`` and ``planes`` (P, M, V as
    786,432 bytes of little-endian float32, in parameter order)."""
    view = memoryview(planes).cast("B")
    if len(view) != PAYLOAD_BYTES:
        raise ValueError(f"planes are {PAYLOAD_BYTES} bytes, got {len(view)}")
    out = bytearray(CHECKPOINT_BYTES)
    out[HEADER_BYTES:] = view
    return seal_checkpoint(step, out)


def recognize_checkpoint(data: "bytes | bytearray") -> int | None:
    """The step, if ``data`` is exactly a canonical checkpoint whose header
    digest and chunk digests all hold; otherwise None (let the schemas judge)."""
    if len(data) != CHECKPOINT_BYTES or data[:_STEP.offset] != _BEFORE_STEP:
        return None
    (step,) = _STEP.unpack(data)
    planes = memoryview(data)[HEADER_BYTES:]
    if data[:HEADER_BYTES] != checkpoint_header(step, chunk_digests(planes)):
        return None
    return step


def recognize_record(data: "bytes | bytearray") -> "tuple[bytes, bytes, tuple[int, ...]] | None":
    """(contexts, targets, prompt words) if ``data`` is a valid input record; else None."""
    if len(data) != RECORD_BYTES or data[:_PAIRS.offset] != _RECORD_HEAD:
        return None
    pairs = bytes(data[_PAIRS.slice])
    contexts, targets = pairs[0::2], pairs[1::2]
    if _TARGETS.unpack(data) != tuple(targets):
        return None
    words = _WORDS.unpack(data)
    if any(w >= VOCABULARY and w != EMPTY_PROMPT for w in words):
        return None
    return contexts, targets, words


def predictions_bytes(records: "list[tuple[int, int]]") -> bytes:
    """The 24-byte predictions file for (token, validity) records."""
    data = b"".join(PREDICTION_RECORD.pack(token, validity) for token, validity in records)
    if len(data) != PREDICTION_BYTES:
        raise ValueError(f"predictions are {PREDICTION_BYTES} bytes, got {len(data)}")
    return data
