"""The checkpoint's header, built and recognised with the standard library only: the one
header builder (:func:`envelope_header`) and the canonical file, built and recognised byte
for byte, so that ``bob-run`` imports neither construct nor NumPy when nothing is wrong."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any, Callable

    from bob.formats.contract import Contract

from bob.formats.constants import (CHECKPOINT_MAGIC, CHUNK_BYTES, CHUNK_TAGS, DATA, ENVELOPE_FORMAT_VERSION, LEARNER,
                                   PAYLOAD_BYTES, SEED, STATE, UPDATES_PER_INVOCATION)
from bob.formats.layout import (CANONICAL_CHECKPOINT_BYTES, CANONICAL_HEADER_BYTES, CHUNK_ENTRY, CONTRACT_STRINGS,
                                DIGEST_BYTES, ENVELOPE_HEAD, ENVELOPE_HEAD_STRUCT, ENVELOPE_TAIL, U32,
                                aligned_header_bytes, envelope_layout)
from bob.formats.rules import chunk_offset

__all__ = ["HEADER_BYTES", "CHECKPOINT_BYTES", "envelope_header", "checkpoint_header", "chunk_digests",
           "seal_checkpoint", "build_checkpoint", "has_canonical_prefix", "sealed_step",
           "recognize_checkpoint", "header_fields", "header_length", "canonical_header_bytes", "sha256",
           "hashlib_sha256", "pin_problem", "check_pin"]

HEADER_BYTES = CANONICAL_HEADER_BYTES
CHECKPOINT_BYTES = CANONICAL_CHECKPOINT_BYTES
STRINGS = (STATE, LEARNER, DATA, SEED)  # in CONTRACT_STRINGS' order
_STEP = ENVELOPE_HEAD["step"]
_BEFORE_STEP = ENVELOPE_HEAD_STRUCT.pack(CHECKPOINT_MAGIC, ENVELOPE_FORMAT_VERSION, HEADER_BYTES, 0)[:_STEP.offset]


def header_length(contract: "Contract | None" = None) -> int:
    """Bytes from offset 0 to the end of the header digest for ``contract`` (bob v1's by
    default; the type is only annotated: bob-run leaves dataclasses, and so ``re``, unimported)."""
    strings = STRINGS if contract is None else (contract.state, contract.learner, contract.data, contract.seed)
    return envelope_layout(tuple(len(s) for s in strings)).header_length  # type: ignore[arg-type]


def canonical_header_bytes(contract: "Contract | None" = None) -> int:
    """The header length rounded up to a multiple of ``HEADER_ALIGNMENT`` (:data:`HEADER_BYTES` for v1)."""
    return aligned_header_bytes(header_length(contract))


def hashlib_sha256(data: Any) -> bytes:
    """hashlib's SHA-256, for the readers and ``Checkpoint.to_bytes``, which never load the core
    (looked up at each call: ``bob.fuzz.digests`` shares it)."""
    import hashlib

    return hashlib.sha256(data).digest()


_digest: "Callable[[Any], bytes] | None" = None


def sha256(data: Any) -> bytes:
    """SHA-256 of a bytes-like object (the core's when it is built, else hashlib's)."""
    # The core's SHA-256 spares bob-run hashlib's import (bob.core.sha256); without the core, hashlib gives the
    # same digests. Bound on first use, so importing this module (Checkpoint.to_bytes does) loads no core.
    global _digest
    if _digest is None:
        try:
            from bob.core import sha256 as core_sha256
        except ImportError:  # pragma: no cover - the core is not built
            core_sha256 = hashlib_sha256
        _digest = core_sha256
    return _digest(data)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
_PIN_DIGITS = 2 * DIGEST_BYTES  # a SHA-256 in hexadecimal


def pin_problem(pin: Any, shown: "Callable[[str], str] | None" = None) -> str | None:
    """Why ``pin`` is not a pinned checkpoint's SHA-256 (a str of exactly its hexadecimal
    digits, either case, as ``sha256sum`` prints it), or None; ``shown`` shows a str pin (bob-run's: argv's bytes)."""
    from bob.errors import shown_kind

    if not isinstance(pin, str):
        return f"must be a str of {_PIN_DIGITS} hexadecimal digits (a SHA-256); got {shown_kind(pin)}"
    if len(pin) != _PIN_DIGITS or not _HEX_DIGITS.issuperset(pin):
        return f"must be {_PIN_DIGITS} hexadecimal digits (a SHA-256, either case); got {(shown or shown_kind)(pin)}"
    return None


def check_pin(data: Any, pin: Any, name: str) -> "bytes | None":
    """The pinned resume: an :class:`~bob.errors.IntegrityError` (field ``name``) unless ``data``'s
    SHA-256 is ``pin``; zero bytes, a fresh start, are never the pinned checkpoint. A malformed pin is a
    TypeError or ValueError (:func:`pin_problem`); so is ``data`` that is no bytes (None: the pin's form
    alone). Returns the bytes it pinned, taken once: the caller reads those, never ``data`` again."""
    from bob.errors import IntegrityError, as_bytes

    if (problem := pin_problem(pin)) is not None:
        raise (TypeError if not isinstance(pin, str) else ValueError)(f"{name} {problem}")
    if data is None:
        return None
    data, want = as_bytes(data, "the checkpoint"), pin.lower()
    if not len(data):
        raise IntegrityError(name, "a missing or empty checkpoint (a fresh start) is not the pinned one", expected=want)
    if (digest := sha256(data).hex()) != want:
        raise IntegrityError(name, "the checkpoint's SHA-256 is not the pinned one", expected=want, actual=digest)
    return data


def envelope_header(step: int, chunk_digests: "list[bytes]", header_bytes: int = HEADER_BYTES,
                    strings: "tuple[bytes, ...]" = STRINGS, payload_bytes: int = PAYLOAD_BYTES,
                    chunk_bytes: int = CHUNK_BYTES, updates: int = UPDATES_PER_INVOCATION,
                    digest: "Callable[[Any], bytes] | None" = None) -> bytes:
    """The ``header_bytes``-long envelope header (digest and zero padding included), packed
    with :mod:`bob.formats.layout`'s packers; the values are the caller's to check."""
    body = b"".join((
        ENVELOPE_HEAD_STRUCT.pack(CHECKPOINT_MAGIC, ENVELOPE_FORMAT_VERSION, header_bytes, step),
        *(U32.pack(len(s)) + s for s in strings),
        ENVELOPE_TAIL.pack(payload_bytes, chunk_bytes, updates, len(CHUNK_TAGS)),
        *(CHUNK_ENTRY.pack(tag, chunk_offset(header_bytes, i, chunk_bytes), chunk_bytes, digest)
          for i, (tag, digest) in enumerate(zip(CHUNK_TAGS, chunk_digests))),
    ))
    header = body + (digest or sha256)(body)
    return header + bytes(header_bytes - len(header))


def checkpoint_header(step: int, chunk_digests: "list[bytes]", digest: "Callable[[Any], bytes] | None" = None) -> bytes:
    """The canonical header for ``step`` and the planes' digests."""
    return envelope_header(step, chunk_digests, digest=digest)


def chunk_digests(planes: memoryview, digest: "Callable[[Any], bytes] | None" = None) -> list[bytes]:
    """The SHA-256 of each plane in ``planes`` (P, M, V as bytes, contiguous)."""
    return [(digest or sha256)(planes[i * CHUNK_BYTES:(i + 1) * CHUNK_BYTES]) for i in range(len(CHUNK_TAGS))]


def seal_checkpoint(step: int, checkpoint: bytearray) -> bytearray:
    """Write, in place, the canonical header for ``step`` before the planes already in ``checkpoint``; returns it.
    bob-run reads, trains and writes one buffer this way: no copy of the planes, no fresh pages to fault in."""
    view = memoryview(checkpoint)
    if len(view) != CHECKPOINT_BYTES or view.readonly:
        raise ValueError(f"a checkpoint buffer is {CHECKPOINT_BYTES} writable bytes, got {len(view)}")
    view[:HEADER_BYTES] = checkpoint_header(step, chunk_digests(view[HEADER_BYTES:]))
    return checkpoint


def build_checkpoint(step: int, planes: Any) -> bytearray:
    """The canonical checkpoint file for ``step`` and ``planes`` (P, M, V, little-endian float32)."""
    view = memoryview(planes).cast("B")
    if len(view) != PAYLOAD_BYTES:
        raise ValueError(f"planes are {PAYLOAD_BYTES} bytes, got {len(view)}")
    return seal_checkpoint(step, bytearray(HEADER_BYTES) + view)


def has_canonical_prefix(data: "bytes | bytearray") -> bool:
    """Whether ``data`` has a canonical checkpoint's size and start up to the step: the
    only files :func:`recognize_checkpoint` hashes."""
    return len(data) == CHECKPOINT_BYTES and data[:_STEP.offset] == _BEFORE_STEP


def sealed_step(data: "bytes | bytearray", digests: "list[bytes]",
                digest: "Callable[[Any], bytes] | None" = None) -> int | None:
    """The step, if ``data``'s header is, byte for byte, the canonical one rebuilt from its
    step and the planes' ``digests``; else None."""
    (step,) = _STEP.unpack(data)
    return step if data[:HEADER_BYTES] == checkpoint_header(step, digests, digest) else None


def recognize_checkpoint(data: "bytes | bytearray", digest: "Callable[[Any], bytes] | None" = None) -> int | None:
    """The step, if ``data`` is exactly a canonical checkpoint with every digest holding;
    else None (let the schema judge)."""
    return (sealed_step(data, chunk_digests(memoryview(data)[HEADER_BYTES:], digest), digest)
            if has_canonical_prefix(data) else None)


def header_fields(step: int, digests: "list[bytes]") -> "dict[str, Any]":
    """The canonical header's fields for ``step`` and the planes' digests, as the schema's parse gives them."""
    return {
        "magic": CHECKPOINT_MAGIC, "version": ENVELOPE_FORMAT_VERSION, "header_bytes": HEADER_BYTES, "step": step,
        **dict(zip(CONTRACT_STRINGS, STRINGS)),
        "payload_bytes": PAYLOAD_BYTES, "chunk_bytes": CHUNK_BYTES, "updates_per_invocation": UPDATES_PER_INVOCATION,
        "chunk_count": len(CHUNK_TAGS),
        "chunk_table": [{"tag": tag, "offset": chunk_offset(HEADER_BYTES, i), "length": CHUNK_BYTES, "digest": d}
                        for i, (tag, d) in enumerate(zip(CHUNK_TAGS, digests))],
    }
