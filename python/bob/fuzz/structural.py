"""Structure-aware mutations: one *consistent* change of a file, digests re-sealed, so the rules
behind the digests and the chunk table are reached (the table of operations: docs/fuzzing.md);
also :func:`string_lengths` and :func:`refresh_digests`, which the field-aware mutator shares."""

from __future__ import annotations

import hashlib
import random
import struct

from bob.formats.constants import CHECKPOINT_MAGIC, CHUNK_BYTES, CHUNK_TAGS, MAX_HEADER_BYTES, PAYLOAD_BYTES, \
    STRING_LIMIT, U64_MAX, UPDATES_PER_INVOCATION
from bob.formats.layout import CANONICAL, ENVELOPE_HEAD, HEADER_ALIGNMENT, INPUT, U32, U64, EnvelopeLayout, Field, \
    aligned_header_bytes, envelope_layout
from bob.formats.rules import chunk_offset
from bob.fuzz.dictionary import CONTRACT_STRINGS as CONTRACT_VALUES

__all__ = ["CHECKPOINT_OPS", "string_lengths", "refresh_digests", "any_step", "structural_mutate", "rewiden_targets"]

_STEP = ENVELOPE_HEAD["step"].offset
_HEADER_BYTES = ENVELOPE_HEAD["header_bytes"].offset


def string_lengths(data: bytes) -> tuple[int, int, int, int]:
    """The contract strings' lengths as the file states them (v1's where a prefix is unusable)."""
    out = []
    at = ENVELOPE_HEAD["step"].end
    for canonical in CONTRACT_VALUES:
        stated = U32.unpack_from(data, at)[0] if at + 4 <= len(data) else STRING_LIMIT + 1
        length = stated if stated <= STRING_LIMIT and at + 4 + stated <= len(data) else len(canonical)
        out.append(length)
        at += 4 + length
    return tuple(out)  # type: ignore[return-value]


def _placed(data: bytes, planes: bool = False) -> "tuple[EnvelopeLayout, int] | None":
    """(layout, header_bytes) of a checkpoint whose header (and, with ``planes``, planes) can be located, else None."""
    if len(data) < CANONICAL.header_length or bytes(data[:8]) != CHECKPOINT_MAGIC:
        return None
    lay = envelope_layout(string_lengths(data))
    hb = U64.unpack_from(data, _HEADER_BYTES)[0]
    return None if lay.header_length > len(data) or (planes and hb + PAYLOAD_BYTES > len(data)) else (lay, hb)


def refresh_digests(data: bytes) -> bytes:
    """A checkpoint with its chunk digests and header digest recomputed for its own header
    (chunk ``i`` at ``header_bytes + i × CHUNK_BYTES``); unchanged when its header cannot place them."""
    if (placed := _placed(data, planes=True)) is None or placed[1] < placed[0].header_length:
        return data
    lay, hb = placed
    out = bytearray(data)
    for i in range(len(CHUNK_TAGS)):
        out[lay.chunk_field(i, "digest").slice] = hashlib.sha256(out[_plane(hb, i).slice]).digest()
    out[lay.header_digest:lay.header_length] = hashlib.sha256(out[:lay.header_digest]).digest()
    return bytes(out)


def any_step(rnd: random.Random) -> int:
    """A step: log-uniform over u64 (a random bit length, then random bits), or next to a limit."""
    r = rnd.random()
    if r < 0.45:
        bits = rnd.randrange(65)
        return 0 if bits == 0 else (1 << (bits - 1)) | rnd.getrandbits(bits - 1)
    if r < 0.85:
        limit = U64_MAX - UPDATES_PER_INVOCATION * rnd.choice((1, 2))  # resume limit; last advanceable step
        return min(max(limit + rnd.randrange(-3, 4), 0), U64_MAX)
    return rnd.randrange(3 * UPDATES_PER_INVOCATION)


# The checkpoint operations: each edits a located file in place (its layout and header_bytes
# given), and structural_mutate re-seals the digests after it.

def _place_chunks(out: bytearray, lay: EnvelopeLayout, start: int, size: int) -> None:
    """The chunk table's entries at ``start + i × size``, each ``size`` long."""
    for i in range(len(CHUNK_TAGS)):
        U64.pack_into(out, lay.chunk_field(i, "offset").offset, max(chunk_offset(start, i, size), 0) & U64_MAX)
        U64.pack_into(out, lay.chunk_field(i, "length").offset, size)


def _set_header_bytes(out: bytearray, lay: EnvelopeLayout, old: int, rnd: random.Random) -> None:
    """The header grown or shrunk: padding, planes and chunk offsets moved; now and then a non-zero padding byte."""
    least = aligned_header_bytes(lay.header_length)
    r = rnd.random()
    hb = (least if r < 0.2 else MAX_HEADER_BYTES if r < 0.35 else MAX_HEADER_BYTES + HEADER_ALIGNMENT if r < 0.4
          else least - HEADER_ALIGNMENT if r < 0.45 else rnd.randrange(least, MAX_HEADER_BYTES + 1, HEADER_ALIGNMENT))
    out[lay.header_length:] = bytes(max(hb - lay.header_length, 0)) + out[old:old + PAYLOAD_BYTES]
    U64.pack_into(out, _HEADER_BYTES, hb)
    _place_chunks(out, lay, hb, CHUNK_BYTES)
    if hb > lay.header_length + 1 and rnd.random() < 0.15:  # garbage in the padding, past byte 448
        out[rnd.randrange(lay.header_length, hb)] = rnd.randrange(1, 1 << 8)


def _move_chunks(out: bytearray, lay: EnvelopeLayout, hb: int, rnd: random.Random) -> None:
    """The chunk entries moved by one delta, or re-laid for another chunk size (half the time stated as chunk_bytes)."""
    if rnd.random() < 0.5:
        delta = rnd.choice((HEADER_ALIGNMENT, -HEADER_ALIGNMENT, 1, -1, CHUNK_BYTES, -hb, rnd.getrandbits(16)))
        _place_chunks(out, lay, hb + delta, CHUNK_BYTES)
        return
    size = rnd.choice((CHUNK_BYTES // 2, CHUNK_BYTES * 2, CHUNK_BYTES - 4, CHUNK_BYTES + 4, 4))
    if rnd.random() < 0.5:
        U64.pack_into(out, lay.fields["chunk_bytes"].offset, size)
        U64.pack_into(out, lay.fields["payload_bytes"].offset, size * len(CHUNK_TAGS))
    _place_chunks(out, lay, hb, size)


def _plane(hb: int, i: int) -> Field:
    return Field(chunk_offset(hb, i), CHUNK_BYTES)


def _swap_planes(out: bytearray, lay: EnvelopeLayout, hb: int, rnd: random.Random) -> None:
    """Two planes swapped; with their table entries (tags out of order) or in place."""
    i, j = sorted(rnd.sample(range(len(CHUNK_TAGS)), 2))
    pairs = [(_plane(hb, i), _plane(hb, j))]
    if rnd.random() < 0.4:
        pairs.append((lay.chunk_field(i, "tag"), lay.chunk_field(j, "tag")))
    for a, b in pairs:
        out[a.slice], out[b.slice] = out[b.slice], out[a.slice]


def _zero_moments(out: bytearray, lay: EnvelopeLayout, hb: int, rnd: random.Random) -> None:
    """Step 0, 1 or 10 with M, V or both set to +0.0, as a fresh run has them."""
    U64.pack_into(out, _STEP, rnd.choice((0, 0, 0, 1, UPDATES_PER_INVOCATION)))
    for plane in rnd.choice(((1,), (2,), (1, 2))):  # M, V, or both
        out[_plane(hb, plane).slice] = bytes(CHUNK_BYTES)


# Each operation, and whether it needs the planes in the file ("step": another step, any u64).
_OPERATIONS = {"step": (lambda out, lay, hb, rnd: U64.pack_into(out, _STEP, any_step(rnd)), False),
               "header_bytes": (_set_header_bytes, False), "chunks": (_move_chunks, False),
               "planes": (_swap_planes, True), "moments": (_zero_moments, True)}
CHECKPOINT_OPS = tuple(_OPERATIONS)


def rewiden_targets(data: bytes, rnd: random.Random) -> bytes:
    """An input record with some pairs changed and every widened target rewritten from its pair."""
    pairs, targets = INPUT["pairs"], INPUT["targets"]
    if len(data) < targets.end:
        return data
    out = bytearray(data)
    for _ in range(rnd.randrange(1, 9)):
        out[pairs.offset + rnd.randrange(pairs.size)] = rnd.getrandbits(8)
    struct.pack_into(targets.format or "", out, targets.offset, *out[pairs.offset + 1:pairs.end:2])
    return bytes(out)


def structural_mutate(data: bytes, rnd: random.Random, fmt: str | None, op: str | None = None) -> bytes:
    """One consistent change of ``data`` (``op``, or one at random), for a checkpoint or an input record."""
    if fmt == "input":
        return rewiden_targets(data, rnd)
    if fmt != "checkpoint":
        return data
    op = op or rnd.choice(CHECKPOINT_OPS)
    if op not in _OPERATIONS:
        raise ValueError(f"unknown structural operation {op!r}; one of {', '.join(CHECKPOINT_OPS)}")
    edit, planes = _OPERATIONS[op]
    if (placed := _placed(data, planes)) is None:
        return data
    out = bytearray(data)
    edit(out, *placed, rnd)
    return refresh_digests(bytes(out))
