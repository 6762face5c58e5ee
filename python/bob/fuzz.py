"""Format fuzzing helpers: random and mutated bytes for bob's readers.

Used by the property tests (``tests/formats/test_formats_properties.py``) and handy
when poking at a reader by hand::

    rnd = random.Random(1)
    bad = bob.fuzz.mutate(good_bytes, rnd, rows=bob.fuzz.rows_for(good_bytes))

Mutations are byte-level (flip a bit, set a byte, insert, delete, truncate,
extend, duplicate a slice) and field-level: overwrite one field of the file's
layout table (from the schema) with an interesting value — 0, 1, limits
such as 4,095/4,096/4,097, u32 and u64 maxima, the value ± 1. Field-level
mutations reach the rules a random flip in 786,432 bytes of planes never
would. :func:`refresh_digests` recomputes an envelope's chunk and header
digests after a mutation, so plane damage reaches the state checks.

The Hypothesis strategies are built lazily: importing this module does not
import Hypothesis, and ``import bob`` never imports this module.
"""

from __future__ import annotations

import hashlib
import random
import struct

from bob.formats.constants import (
    CHECKPOINT_MAGIC,
    CHUNK_BYTES,
    CHUNK_TAGS,
    INPUT_MAGIC,
    MAX_HEADER_BYTES,
    PAYLOAD_BYTES,
    RECORD_BYTES,
    STRING_LIMIT,
    U64_MAX,
    UPDATES_PER_INVOCATION,
    VOCABULARY,
)
from bob.formats.layout import CANONICAL, CANONICAL_CHECKPOINT_BYTES, CANONICAL_HEADER_BYTES, envelope_layout
from bob.formats.schema import FieldRow

__all__ = [
    "INTERESTING",
    "interesting_values",
    "mutate",
    "rows_for",
    "refresh_digests",
    "random_bytes_strategy",
    "mutated_strategy",
]

_SIZES = (VOCABULARY, CANONICAL.header_length, CANONICAL_HEADER_BYTES, RECORD_BYTES, STRING_LIMIT,
          MAX_HEADER_BYTES, CHUNK_BYTES, PAYLOAD_BYTES, CANONICAL_CHECKPOINT_BYTES)
INTERESTING = tuple(sorted({0, 1, 2, 3, 7, 63, 64, 65, 255, 512, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF,
                            1 << 32, (1 << 63) - 1, 1 << 63, U64_MAX - UPDATES_PER_INVOCATION,
                            U64_MAX - UPDATES_PER_INVOCATION + 1, U64_MAX}
                           | {size + delta for size in _SIZES for delta in (-1, 0, 1)}))

FLOAT_BITS = (0x7FC00000, 0x7F800000, 0xFF800000, 0x80000000, 0xBF800000, 0x00000001, 0x7F7FFFFF)
"""f32 bit patterns: NaN, +inf, -inf, -0.0, -1.0, the smallest subnormal, the largest finite."""

BYTE_OPS = ("flip", "set", "insert", "delete", "truncate", "extend", "duplicate")


def interesting_values(size: int, current: int | None = None) -> list[int]:
    """Interesting unsigned values that fit ``size`` bytes (plus ``current`` ± 1)."""
    top = (1 << (8 * size)) - 1
    out = [v for v in INTERESTING if v <= top]
    if current is not None:
        out += [v for v in (current - 1, current + 1) if 0 <= v <= top]
    return out


def rows_for(data: bytes) -> list[FieldRow]:
    """The layout rows of ``data`` if it is a valid bob file (input, envelope or predictions), else []."""
    from bob.formats import envelope, input_record, predictions
    from bob.formats.schema import layout

    for schema in (input_record.INPUT_RECORD, envelope.ENVELOPE, predictions.PREDICTIONS):
        try:
            return layout(schema, data)
        except Exception:  # noqa: BLE001 - any failure means "not this format"
            continue
    return []


def _field_mutation(data: bytearray, row: FieldRow, choice: int, rnd: random.Random) -> None:
    if row.size == 0 or row.offset + row.size > len(data):
        return
    if row.size in (4, 8) and choice % 3 != 2:
        fmt = "<I" if row.size == 4 else "<Q"
        current = struct.unpack_from(fmt, data, row.offset)[0]
        values = interesting_values(row.size, current)
        if row.size == 4 and row.field in ("P", "M", "V"):
            values += list(FLOAT_BITS)
        struct.pack_into(fmt, data, row.offset, values[choice % len(values)])
    elif row.field in ("P", "M", "V"):
        k = rnd.randrange(row.size // 4)
        struct.pack_into("<I", data, row.offset + 4 * k, FLOAT_BITS[choice % len(FLOAT_BITS)])
    else:
        k = row.offset + rnd.randrange(row.size)
        data[k] = rnd.getrandbits(8)


def _byte_mutation(data: bytearray, op: str, rnd: random.Random) -> None:
    n = len(data)
    if op == "flip" and n:
        k = rnd.randrange(n)
        data[k] ^= 1 << rnd.randrange(8)
    elif op == "set" and n:
        data[rnd.randrange(n)] = rnd.getrandbits(8)
    elif op == "insert":
        k = rnd.randrange(n + 1)
        data[k:k] = rnd.randbytes(rnd.randrange(1, 9))
    elif op == "delete" and n:
        k = rnd.randrange(n)
        del data[k:k + rnd.randrange(1, 9)]
    elif op == "truncate" and n:
        del data[rnd.randrange(n):]
    elif op == "extend":
        data.extend(rnd.randbytes(rnd.randrange(1, 65)))
    elif op == "duplicate" and n:
        k = rnd.randrange(n)
        data[k:k] = data[k:k + rnd.randrange(1, 65)]


def mutate(data: bytes, rnd: random.Random, *, rows: list[FieldRow] | None = None, count: int | None = None,
           field_ratio: float = 0.6) -> bytes:
    """``data`` with 1–3 (or ``count``) random mutations; with ``rows``, a
    ``field_ratio`` share of them are field-level (1.0: only field-level)."""
    out = bytearray(data)
    for _ in range(count if count is not None else rnd.randrange(1, 4)):
        if rows and rnd.random() < field_ratio:
            _field_mutation(out, rows[rnd.randrange(len(rows))], rnd.randrange(1 << 16), rnd)
        else:
            _byte_mutation(out, BYTE_OPS[rnd.randrange(len(BYTE_OPS))], rnd)
    return bytes(out)


def refresh_digests(data: bytes) -> bytes:
    """An envelope with its chunk digests and header digest recomputed (planes
    at ``header_bytes + i × 262,144``); ``data`` unchanged if its header cannot
    be parsed or its planes are not all there."""
    from bob.formats.envelope import ENVELOPE_HEADER
    from bob.formats.schema import parse
    from bob.errors import FormatError

    try:
        parsed = parse(ENVELOPE_HEADER, data)
    except FormatError:
        return data
    hb = parsed.header.value.header_bytes
    h = parsed.header.value
    lay = envelope_layout((len(h.state), len(h.learner), len(h.data), len(h.seed)))
    if hb + len(CHUNK_TAGS) * CHUNK_BYTES > len(data) or hb < lay.header_length:
        return data
    out = bytearray(data)
    for i in range(len(CHUNK_TAGS)):
        digest = hashlib.sha256(out[hb + i * CHUNK_BYTES: hb + (i + 1) * CHUNK_BYTES]).digest()
        out[lay.chunk_field(i, "digest").slice] = digest
    out[lay.fields["header_digest"].slice] = hashlib.sha256(out[:lay.header_digest]).digest()
    return bytes(out)


# --------------------------------------------------------------------------- #
# Hypothesis strategies (built lazily)
# --------------------------------------------------------------------------- #


def random_bytes_strategy(prefixes: tuple[bytes, ...] = (b"", INPUT_MAGIC, CHECKPOINT_MAGIC), max_size: int = 2048):
    """Random bytes, sometimes starting with a bob magic (so they get past it)."""
    from hypothesis import strategies as st

    return st.builds(lambda p, tail: p + tail, st.sampled_from(prefixes), st.binary(max_size=max_size))


def mutated_strategy(seeds: list[bytes], *, with_rows: bool = True, max_ops: int = 3):
    """Mutations of the given valid files, drawn by Hypothesis (so they shrink)."""
    from hypothesis import strategies as st

    prepared = [(seed, rows_for(seed) if with_rows else []) for seed in seeds]

    @st.composite
    def strategy(draw):
        seed, rows = draw(st.sampled_from(prepared))
        rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
        count = draw(st.integers(1, max_ops))
        return mutate(seed, rnd, rows=rows, count=count)

    return strategy()
