"""The canonical bob files, built and recognized with the standard library only.

The construct schemas (:mod:`bob.formats.envelope_schema`, :mod:`~.input_record`,
:mod:`~.predictions`) and their ``examine`` functions are the only source of
refusals. This module holds the one builder of an envelope header
(:func:`envelope_header`, which ``Checkpoint.to_bytes`` uses too) and knows
the one layout bob itself writes (:data:`bob.formats.layout.CANONICAL`,
``header_bytes`` = 448), so that ``bob-run`` need not import construct and
NumPy when nothing is wrong:

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

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

from bob.formats.constants import (
    CHECKPOINT_MAGIC,
    CHUNK_BYTES,
    CHUNK_TAGS,
    DATA,
    INPUT_MAGIC,
    LEARNER,
    PAYLOAD_BYTES,
    PREDICTION_BYTES,
    RECORD_BYTES,
    SEED,
    STATE,
    UPDATES_PER_INVOCATION,
)
from bob.formats.layout import (
    CANONICAL_CHECKPOINT_BYTES,
    CANONICAL_HEADER_BYTES,
    CHUNK_ENTRY,
    CONTRACT_STRINGS,
    ENVELOPE_HEAD,
    ENVELOPE_HEAD_STRUCT,
    ENVELOPE_TAIL,
    INPUT,
    PREDICTION_RECORD,
    U32,
    U64,
)
from bob.formats.rules import PROMPT_WORD, TARGET_AGREES, chunk_offset

VERSION = 1
HEADER_BYTES = CANONICAL_HEADER_BYTES  # 448
CHECKPOINT_BYTES = CANONICAL_CHECKPOINT_BYTES  # 786,880
STRINGS = (STATE, LEARNER, DATA, SEED)  # in CONTRACT_STRINGS' order
_STEP = ENVELOPE_HEAD["step"]


def envelope_header(step: int, chunk_digests: "list[bytes]", header_bytes: int = HEADER_BYTES,
                    strings: "tuple[bytes, ...]" = STRINGS, payload_bytes: int = PAYLOAD_BYTES,
                    chunk_bytes: int = CHUNK_BYTES, updates: int = UPDATES_PER_INVOCATION,
                    digest: "Callable[[Any], bytes] | None" = None) -> bytes:
    """The ``header_bytes``-long envelope header (digest and zero padding
    included) for ``step``, the planes' SHA-256s and the contract's fields,
    packed field by field with :mod:`bob.formats.layout`'s packers: the one
    builder of every header bob writes (``bob-run``'s and
    ``Checkpoint.to_bytes``'). The values are the caller's to check;
    ``digest`` is the SHA-256 function (:func:`sha256` unless given)."""
    body = b"".join((
        ENVELOPE_HEAD_STRUCT.pack(CHECKPOINT_MAGIC, VERSION, header_bytes, step),
        *(U32.pack(len(s)) + s for s in strings),
        ENVELOPE_TAIL.pack(payload_bytes, chunk_bytes, updates, len(CHUNK_TAGS)),
        *(CHUNK_ENTRY.pack(tag, chunk_offset(header_bytes, i, chunk_bytes), chunk_bytes, digest)
          for i, (tag, digest) in enumerate(zip(CHUNK_TAGS, chunk_digests))),
    ))
    header = body + (digest or sha256)(body)
    return header + bytes(header_bytes - len(header))


def checkpoint_header(step: int, chunk_digests: "list[bytes]", digest: "Callable[[Any], bytes] | None" = None) -> bytes:
    """The canonical 448-byte header for ``step`` and the planes' SHA-256s."""
    return envelope_header(step, chunk_digests, digest=digest)


_BEFORE_STEP = ENVELOPE_HEAD_STRUCT.pack(CHECKPOINT_MAGIC, VERSION, HEADER_BYTES, 0)[:_STEP.offset]

_RECORD_HEAD = INPUT_MAGIC + U64.pack(VERSION)
_PAIRS = INPUT["pairs"]
_TARGETS = INPUT["targets"]
_WORDS = INPUT["prompt_words"]
assert len(_RECORD_HEAD) == _PAIRS.offset


def chunk_digests(planes: memoryview, digest: "Callable[[Any], bytes] | None" = None) -> list[bytes]:
    """The SHA-256 of each plane in ``planes`` (P, M, V as bytes, contiguous)."""
    digest = digest or sha256
    return [digest(planes[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]) for i in range(len(CHUNK_TAGS))]


def _digest_function():
    # The core's SHA-256 spares bob-run hashlib's import (bob.core.sha256);
    # without the core, hashlib gives the same digests. Bound on first use,
    # so importing this module (Checkpoint.to_bytes does) loads no core.
    try:
        from bob.core import sha256 as digest
    except ImportError:  # pragma: no cover - the core is not built
        import hashlib

        def digest(data) -> bytes:
            return hashlib.sha256(data).digest()
    return digest


_digest = None


def sha256(data) -> bytes:
    """SHA-256 of a bytes-like object (the core's when it is built, else hashlib's)."""
    global _digest
    if _digest is None:
        _digest = _digest_function()
    return _digest(data)


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


def has_canonical_prefix(data: "bytes | bytearray") -> bool:
    """True when ``data`` is a canonical checkpoint's size and starts as one
    does up to the step (magic, version, ``header_bytes`` = 448): the only
    files :func:`recognize_checkpoint` hashes."""
    return len(data) == CHECKPOINT_BYTES and data[:_STEP.offset] == _BEFORE_STEP


def sealed_step(data: "bytes | bytearray", digests: "list[bytes]",
                digest: "Callable[[Any], bytes] | None" = None) -> int | None:
    """The step, if ``data`` (with :func:`has_canonical_prefix`) is exactly
    the canonical checkpoint for its step and its planes' SHA-256s
    ``digests``: its header, digest and padding rebuilt from them, byte for
    byte. None otherwise."""
    (step,) = _STEP.unpack(data)
    if data[:HEADER_BYTES] != checkpoint_header(step, digests, digest):
        return None
    return step


def recognize_checkpoint(data: "bytes | bytearray", digest: "Callable[[Any], bytes] | None" = None) -> int | None:
    """The step, if ``data`` is exactly a canonical checkpoint whose header
    digest and chunk digests all hold (each computed once, with ``digest``
    or :func:`sha256`); otherwise None (let the schemas judge)."""
    if not has_canonical_prefix(data):
        return None
    return sealed_step(data, chunk_digests(memoryview(data)[HEADER_BYTES:], digest), digest)


def header_fields(step: int, digests: "list[bytes]") -> "dict[str, Any]":
    """The canonical header's fields for ``step`` and the planes' SHA-256s,
    by the envelope schema's names and as its parse gives them (the
    contract strings without their length prefixes; the chunk table as a
    list of ``tag``, ``offset``, ``length``, ``digest``).
    ``tests/formats/test_canonical.py`` holds them equal to the schema's parse."""
    return {
        "magic": CHECKPOINT_MAGIC, "version": VERSION, "header_bytes": HEADER_BYTES, "step": step,
        **dict(zip(CONTRACT_STRINGS, STRINGS)),
        "payload_bytes": PAYLOAD_BYTES, "chunk_bytes": CHUNK_BYTES, "updates_per_invocation": UPDATES_PER_INVOCATION,
        "chunk_count": len(CHUNK_TAGS),
        "chunk_table": [{"tag": tag, "offset": chunk_offset(HEADER_BYTES, i), "length": CHUNK_BYTES, "digest": d}
                        for i, (tag, d) in enumerate(zip(CHUNK_TAGS, digests))],
    }


def recognize_record(data: "bytes | bytearray") -> "tuple[bytes, bytes, tuple[int, ...]] | None":
    """(contexts, targets, prompt words) if ``data`` is a valid input record; else None."""
    if len(data) != RECORD_BYTES or data[:_PAIRS.offset] != _RECORD_HEAD:
        return None
    pairs = bytes(data[_PAIRS.slice])
    contexts, targets = pairs[0::2], pairs[1::2]
    if not all(map(TARGET_AGREES.ok, _TARGETS.unpack(data), targets)):
        return None
    words = _WORDS.unpack(data)
    if not all(map(PROMPT_WORD.ok, words)):
        return None
    return contexts, targets, words


def predictions_bytes(records: "list[tuple[int, int]]") -> bytes:
    """The 24-byte predictions file for (token, validity) records."""
    data = b"".join(PREDICTION_RECORD.pack(token, validity) for token, validity in records)
    if len(data) != PREDICTION_BYTES:
        raise ValueError(f"predictions are {PREDICTION_BYTES} bytes, got {len(data)}")
    return data
