"""Structure-aware mutations: edits that keep a file consistent, so the deep rules are reached.

A single-field edit of a checkpoint is refused at the first rule it breaks,
usually a digest or the chunk table; a bug behind that rule (a step next to
u64's limit, a header of another size, a table moved as a whole, planes in
another order) is only reached when everything the change implies changes
with it. Each operation here makes one such consistent change and re-seals
the digests (:func:`bob.fuzz.mutator.refresh_digests`):

``step``
    the step set to any value: log-uniform over the u64 range, densely
    around the resume limit (2**64 − 11) and the last step that can still be
    advanced (2**64 − 21), and the first steps;
``header_bytes``
    the header grown or shrunk to another multiple of 64 (up to 65,536 and
    one step past it), the zero padding and the planes moved with it and the
    chunk table's offsets following — a valid file of another layout; now
    and then one byte of the (grown) padding made non-zero;
``chunks``
    the three chunk table entries moved together: every offset by the same
    delta, or all three re-laid for another chunk size (lengths and offsets
    together, sometimes ``chunk_bytes`` and ``payload_bytes`` too);
``planes``
    two planes swapped, with their chunk table entries (tags out of order)
    or without (the digests re-sealed: a valid envelope holding another state);
``moments``
    the step set to 0 (or next to it) with M, V or both zeroed, as a fresh
    run has them — so the rule "step 0 only with zero moments" is reached
    with each moment on its own;
``targets`` (input records)
    pairs changed and every widened target rewritten from its pair.

Standard library only, deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import random

from bob.formats.constants import (
    CHECKPOINT_MAGIC,
    CHUNK_BYTES,
    CHUNK_TAGS,
    MAX_HEADER_BYTES,
    PAYLOAD_BYTES,
    U64_MAX,
    UPDATES_PER_INVOCATION,
    VOCABULARY,
)
from bob.formats.layout import (
    CANONICAL,
    ENVELOPE_HEAD,
    HEADER_ALIGNMENT,
    INPUT,
    U32,
    U64,
    aligned_header_bytes,
    envelope_layout,
)
from bob.formats.rules import chunk_offset

__all__ = ["CHECKPOINT_OPS", "any_step", "structural_mutate", "set_step", "set_header_bytes", "move_chunks",
           "swap_planes", "zero_moments", "rewiden_targets"]

CHECKPOINT_OPS = ("step", "header_bytes", "chunks", "planes", "moments")
_STEP = ENVELOPE_HEAD["step"].offset
_HEADER_BYTES = ENVELOPE_HEAD["header_bytes"].offset


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


def _placed(data: bytes):
    """(layout, header_bytes) of a checkpoint whose header can be located, else None."""
    from bob.fuzz.mutator import string_lengths

    if len(data) < CANONICAL.header_length or bytes(data[:8]) != CHECKPOINT_MAGIC:
        return None
    lay = envelope_layout(string_lengths(data))
    if lay.header_length > len(data):
        return None
    return lay, U64.unpack_from(data, _HEADER_BYTES)[0]


def _sealed(out: bytearray) -> bytes:
    from bob.fuzz.mutator import refresh_digests

    return refresh_digests(bytes(out))


def set_step(data: bytes, rnd: random.Random, step: int | None = None) -> bytes:
    """``data`` at another step (any u64), digests re-sealed."""
    if len(data) < ENVELOPE_HEAD["step"].end:
        return data
    out = bytearray(data)
    U64.pack_into(out, _STEP, any_step(rnd) if step is None else step)
    return _sealed(out)


def set_header_bytes(data: bytes, rnd: random.Random, header_bytes: int | None = None) -> bytes:
    """``data`` with its header grown or shrunk: padding, planes and chunk offsets moved, re-sealed."""
    placed = _placed(data)
    if placed is None:
        return data
    lay, old = placed
    least = aligned_header_bytes(lay.header_length)
    if header_bytes is None:
        r = rnd.random()
        header_bytes = (least if r < 0.2 else MAX_HEADER_BYTES if r < 0.35
                        else MAX_HEADER_BYTES + HEADER_ALIGNMENT if r < 0.4
                        else least - HEADER_ALIGNMENT if r < 0.45
                        else rnd.randrange(least, MAX_HEADER_BYTES + 1, HEADER_ALIGNMENT))
    header_bytes = max(header_bytes, 0)
    planes = bytes(data[old:old + PAYLOAD_BYTES]) if old <= len(data) else b""
    out = bytearray(data[:lay.header_length])
    U64.pack_into(out, _HEADER_BYTES, header_bytes)
    for i in range(len(CHUNK_TAGS)):
        U64.pack_into(out, lay.chunk_field(i, "offset").offset, chunk_offset(header_bytes, i))
    out += bytes(max(header_bytes - lay.header_length, 0)) + planes
    if header_bytes > lay.header_length + 1 and rnd.random() < 0.15:  # garbage in the padding, past byte 448
        out[rnd.randrange(lay.header_length, header_bytes)] = rnd.randrange(1, 1 << 8)  # a non-zero byte
    return _sealed(out)


def move_chunks(data: bytes, rnd: random.Random) -> bytes:
    """The three chunk table entries moved together (one delta, or another chunk size), re-sealed."""
    placed = _placed(data)
    if placed is None:
        return data
    lay, hb = placed
    out = bytearray(data)
    if rnd.random() < 0.5:
        delta = rnd.choice((HEADER_ALIGNMENT, -HEADER_ALIGNMENT, 1, -1, CHUNK_BYTES, -hb, rnd.getrandbits(16)))
        size, start = CHUNK_BYTES, hb + delta
    else:
        size = rnd.choice((CHUNK_BYTES // 2, CHUNK_BYTES * 2, CHUNK_BYTES - 4, CHUNK_BYTES + 4, 4))
        start = hb
        if rnd.random() < 0.5:  # the contract's sizes follow the table
            U64.pack_into(out, lay.fields["chunk_bytes"].offset, size)
            U64.pack_into(out, lay.fields["payload_bytes"].offset, size * len(CHUNK_TAGS))
    for i in range(len(CHUNK_TAGS)):
        U64.pack_into(out, lay.chunk_field(i, "offset").offset, max(chunk_offset(start, i, size), 0) & U64_MAX)
        U64.pack_into(out, lay.chunk_field(i, "length").offset, size)
    return _sealed(out)


def swap_planes(data: bytes, rnd: random.Random) -> bytes:
    """Two planes swapped; with their table entries (tags out of order) or re-sealed in place."""
    placed = _placed(data)
    if placed is None:
        return data
    lay, hb = placed
    if hb + PAYLOAD_BYTES > len(data):
        return data
    i, j = sorted(rnd.sample(range(len(CHUNK_TAGS)), 2))
    out = bytearray(data)
    a, b = hb + i * CHUNK_BYTES, hb + j * CHUNK_BYTES
    out[a:a + CHUNK_BYTES], out[b:b + CHUNK_BYTES] = data[b:b + CHUNK_BYTES], data[a:a + CHUNK_BYTES]
    if rnd.random() < 0.4:
        ea, eb = lay.chunk_field(i, "tag").offset, lay.chunk_field(j, "tag").offset
        out[ea:ea + 4], out[eb:eb + 4] = data[eb:eb + 4], data[ea:ea + 4]
    return _sealed(out)


def zero_moments(data: bytes, rnd: random.Random) -> bytes:
    """``data`` at step 0, 1 or 10 with M, V or both set to +0.0, digests re-sealed."""
    placed = _placed(data)
    if placed is None:
        return data
    _, hb = placed
    if hb + PAYLOAD_BYTES > len(data):
        return data
    out = bytearray(data)
    U64.pack_into(out, _STEP, rnd.choice((0, 0, 0, 1, UPDATES_PER_INVOCATION)))
    for plane in rnd.choice(((1,), (2,), (1, 2))):  # M, V, or both
        out[hb + plane * CHUNK_BYTES:hb + (plane + 1) * CHUNK_BYTES] = bytes(CHUNK_BYTES)
    return _sealed(out)


def rewiden_targets(data: bytes, rnd: random.Random) -> bytes:
    """An input record with some pairs changed and every widened target rewritten from its pair."""
    if len(data) < INPUT["prompt_words"].offset:
        return data
    out = bytearray(data)
    pairs, targets = INPUT["pairs"].offset, INPUT["targets"].offset
    for _ in range(rnd.randrange(1, 9)):
        out[pairs + rnd.randrange(2 * VOCABULARY)] = rnd.getrandbits(8)
    for i in range(VOCABULARY):
        U32.pack_into(out, targets + 4 * i, out[pairs + 2 * i + 1])
    return bytes(out)


def structural_mutate(data: bytes, rnd: random.Random, fmt: str | None, op: str | None = None) -> bytes:
    """One consistent change of ``data`` (``op``, or one at random), for a checkpoint or an input record."""
    if fmt == "input":
        return rewiden_targets(data, rnd)
    if fmt != "checkpoint":
        return data
    op = op or CHECKPOINT_OPS[rnd.randrange(len(CHECKPOINT_OPS))]
    if op == "step":
        return set_step(data, rnd)
    if op == "header_bytes":
        return set_header_bytes(data, rnd)
    if op == "chunks":
        return move_chunks(data, rnd)
    if op == "planes":
        return swap_planes(data, rnd)
    if op == "moments":
        return zero_moments(data, rnd)
    raise ValueError(f"unknown structural operation {op!r}; one of {', '.join(CHECKPOINT_OPS)}")
