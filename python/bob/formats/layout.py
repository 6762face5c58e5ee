"""Where every field of bob's formats lies: the one description of their layout.

Each format's fields are stated here once, in file order, as (name, size, ``struct`` format), with the standard library
only; the construct schemas (:func:`bob.formats.schema.construct_of`) and the ``struct`` packers are derived from these
entries. Nothing else in the formats layer or the inspect reports writes an offset, a size or a ``struct`` format of
these files as a literal (``tests/house/test_claims.py``), and ``tests/formats/test_layout.py`` holds the schemas'
layout tables to these entries. The envelope's offsets after ``step`` depend on its four contract strings' lengths
(:func:`envelope_layout`); :data:`CANONICAL` is the layout of every header bob writes."""

from __future__ import annotations

import functools
import math
import struct

from bob.formats.constants import (CHECKPOINT_MAGIC, CHUNK_TAGS, DATA, INPUT_MAGIC, LEARNER, PAYLOAD_BYTES, PLANE_DTYPE,
                                   PLANE_NAMES, PREDICTION_BYTES, PROMPTS, RECORD_BYTES, SEED, STATE, TRACE_MAGIC,
                                   TRACE_UPDATES, VOCABULARY)

__all__ = ["F32_SIGN", "F32_EXPONENT", "F32_MAGNITUDE", "f32_from_bits", "Field", "U32", "U64", "F32", "F64",
           "PLANE_DTYPE", "WORD_DTYPE", "INPUT", "PREDICTION_RECORD", "PREDICTION_FIELDS", "ENVELOPE_HEAD",
           "ENVELOPE_HEAD_STRUCT", "CONTRACT_STRINGS", "ENVELOPE_TAIL_FIELDS", "ENVELOPE_TAIL", "CHUNK_ENTRY",
           "CHUNK_ENTRY_FIELDS", "DIGEST_BYTES", "HEADER_ALIGNMENT", "EnvelopeLayout", "envelope_layout", "CANONICAL",
           "CANONICAL_HEADER_BYTES", "CANONICAL_CHECKPOINT_BYTES", "aligned_header_bytes", "TRACE_HEAD",
           "TRACE_HEAD_STRUCT", "TRACE_ENTRY_FIELDS", "TRACE_ENTRY", "TRACE_BODY_BYTES", "TRACE_DIGEST_BYTES",
           "TRACE_BYTES"]

U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
F32 = struct.Struct("<f")
F64 = struct.Struct("<d")
# A float32's bits (IEEE 754 binary32): the sign, 8 exponent bits, 23 fraction bits.
F32_SIGN = 0x8000_0000
F32_EXPONENT = 0x7F80_0000  # all ones: an infinity or a NaN
F32_MAGNITUDE = 0x7FFF_FFFF  # all but the sign: zero only for +0.0 and -0.0
F32_FRACTION_BITS = 23
F32_EXPONENT_BIAS = 127


def f32_from_bits(bits: int) -> float:
    """The float32 whose bits are ``bits``, as a Python float, exactly.

    Computed with integers and ``math.ldexp``, never by converting a float32: that obeys
    the thread's floating-point environment, and under denormals-are-zero a refusal would
    name a subnormal as zero. (A NaN keeps its sign, not its payload.)
    """
    sign = -1.0 if bits & F32_SIGN else 1.0
    exponent = (bits & F32_EXPONENT) >> F32_FRACTION_BITS
    fraction = bits & ((1 << F32_FRACTION_BITS) - 1)
    if bits & F32_EXPONENT == F32_EXPONENT:
        return math.copysign(math.nan if fraction else math.inf, sign)
    scale = F32_EXPONENT_BIAS + F32_FRACTION_BITS
    if exponent == 0:  # zero or subnormal: fraction × 2**-149
        return math.copysign(math.ldexp(fraction, 1 - scale), sign)
    return math.copysign(math.ldexp(fraction | 1 << F32_FRACTION_BITS, exponent - scale), sign)
WORD_DTYPE = "<u4"  # a table of u32 words (targets, prompt words) as NumPy reads it
DIGEST_BYTES = 32  # SHA-256 (the chunk entry's digest field and the header digest)
HEADER_ALIGNMENT = 64  # header_bytes is a multiple of this


class Field:
    """A fixed field: its offset, its size in bytes and, for numbers, its ``struct`` format.

    (Plain classes here, not ``typing.NamedTuple``: ``bob-run`` imports this
    module on its fast path and does not pay for importing ``typing``.)
    """

    __slots__ = ("offset", "size", "format")

    def __init__(self, offset: int, size: int, format: str | None = None) -> None:
        self.offset = offset
        self.size = size
        self.format = format

    def _key(self) -> "tuple[int, int, str | None]":
        return self.offset, self.size, self.format

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, Field) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Field(offset={self.offset}, size={self.size}, format={self.format!r})"

    @property
    def end(self) -> int:
        return self.offset + self.size

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)

    def item(self, index: int) -> int:
        """Where element ``index`` of an array field (``<256I`` …) starts."""
        assert self.format is not None, "a raw byte field has no elements"
        return self.offset + index * struct.calcsize(self.format[0] + self.format[-1])

    def unpack(self, data: bytes | bytearray | memoryview) -> tuple:
        """The field's values in ``data`` (its ``struct`` format, from its offset)."""
        assert self.format is not None, "a raw byte field has no struct format"
        return struct.unpack_from(self.format, data, self.offset)


def packer(fields: "dict[str, Field]") -> struct.Struct:
    """The ``struct`` that packs consecutive ``fields`` (a raw field as ``Ns``)."""
    return struct.Struct("<" + "".join(f"{f.size}s" if f.format is None else f.format[1:] for f in fields.values()))


def _fields(*spec: "tuple[str, int | str]") -> dict[str, Field]:
    """Consecutive fields from (name, ``struct`` format, or size of raw bytes), offsets accumulated."""
    out: dict[str, Field] = {}
    at = 0
    for name, form in spec:
        out[name] = field = Field(at, struct.calcsize(form), form) if isinstance(form, str) else Field(at, form)
        at = field.end
    return out


def _spec(fields: "dict[str, Field]", prefix: str = "") -> "list[tuple[str, int | str]]":
    """``fields`` as a spec of :func:`_fields` again, each name behind ``prefix``."""
    return [(prefix + name, f.format or f.size) for name, f in fields.items()]


# ----------------------------------------------------------------- bob-input v1 (§3)
INPUT = _fields(
    ("magic", len(INPUT_MAGIC)),
    ("version", "<Q"),
    ("pairs", 2 * VOCABULARY),  # (byte u8, target u8) × 256
    ("targets", f"<{VOCABULARY}I"),
    ("prompt_words", f"<{PROMPTS}I"),
)
assert INPUT["prompt_words"].end == RECORD_BYTES

# ----------------------------------------------------------------- predictions (§4)
PREDICTION_FIELDS = _fields(("token", "<I"), ("validity", "<I"))
PREDICTION_RECORD = packer(PREDICTION_FIELDS)  # token u32, validity u32
assert PREDICTION_RECORD.size * PROMPTS == PREDICTION_BYTES

# ----------------------------------------------------------------- bob-trace v2 (formats/trace.md)
TRACE_DIGEST_BYTES = 16  # XXH3-128, a plane's digest in a trace (formats/trace.md says why not SHA-256)
TRACE_HEAD = _fields(
    ("magic", len(TRACE_MAGIC)),
    ("version", "<Q"),
    ("contract_sha256", DIGEST_BYTES),
    ("input_sha256", DIGEST_BYTES),
    ("step_before", "<Q"),
    *((f"start_{name}", TRACE_DIGEST_BYTES) for name in PLANE_NAMES),
    ("update_count", "<Q"),
)
"""The trace's identity (whose run it is: contract, input record, first step), the state it resumed (the XXH3-128
of P, M and V before its first update) and how many entries follow."""
TRACE_HEAD_STRUCT = packer(TRACE_HEAD)
TRACE_ENTRY_FIELDS = _fields(("step", "<Q"), ("loss", F64.format),
                             *((name, TRACE_DIGEST_BYTES) for name in PLANE_NAMES))
"""One update: the step after it, its loss (f64 bits) and the XXH3-128 of P, M and V after it."""
TRACE_ENTRY = packer(TRACE_ENTRY_FIELDS)
TRACE_BODY_BYTES = TRACE_HEAD_STRUCT.size + TRACE_UPDATES * TRACE_ENTRY.size  # what the trace's digest covers
TRACE_BYTES = TRACE_BODY_BYTES + DIGEST_BYTES

# ----------------------------------------------------------------- bob-envelope v1 (§5)
ENVELOPE_HEAD = _fields(
    ("magic", len(CHECKPOINT_MAGIC)),
    ("version", "<Q"),
    ("header_bytes", "<Q"),
    ("step", "<Q"),
)
"""The fixed fields before the contract strings."""
ENVELOPE_HEAD_STRUCT = packer(ENVELOPE_HEAD)

CONTRACT_STRINGS = ("state", "learner", "data", "seed")
"""The length-prefixed strings (u32 length + bytes), in file order."""

ENVELOPE_TAIL_FIELDS = _fields(
    ("payload_bytes", "<Q"),
    ("chunk_bytes", "<Q"),
    ("updates_per_invocation", "<Q"),
    ("chunk_count", "<I"),
)
"""After the strings (offsets from the end of the last string)."""
ENVELOPE_TAIL = packer(ENVELOPE_TAIL_FIELDS)

CHUNK_ENTRY_FIELDS = _fields(("tag", len(CHUNK_TAGS[0])), ("offset", "<Q"), ("length", "<Q"), ("digest", DIGEST_BYTES))
"""One chunk table entry: tag, offset, length, SHA-256 (52 bytes; offsets within the entry)."""
CHUNK_ENTRY = packer(CHUNK_ENTRY_FIELDS)


class EnvelopeLayout:
    """Every offset of one envelope header: each field by the schema's name (``state.length``,
    ``chunk_table[1].digest`` …), the chunk table's and the header digest's offsets, and the
    bytes from offset 0 to the end of the header digest."""

    __slots__ = ("fields", "chunk_table", "header_digest", "header_length")

    def __init__(self, fields: dict[str, Field], chunk_table: int, header_digest: int, header_length: int) -> None:
        self.fields = fields
        self.chunk_table = chunk_table
        self.header_digest = header_digest
        self.header_length = header_length

    def chunk_field(self, index: int, name: str) -> Field:
        """``name`` (tag, offset, length, digest) of chunk table entry ``index``."""
        return self.fields[f"chunk_table[{index}].{name}"]


def envelope_layout(string_lengths: tuple[int, int, int, int]) -> EnvelopeLayout:
    """The header layout for contract strings of these lengths (state, learner, data, seed),
    computed once per set of lengths and shared (not to be changed)."""
    return _envelope_layout(tuple(string_lengths))


@functools.lru_cache(maxsize=64)  # a fuzzer's lengths are many: keep the cache small
def _envelope_layout(string_lengths: tuple[int, int, int, int]) -> EnvelopeLayout:
    strings = [part for name, length in zip(CONTRACT_STRINGS, string_lengths)
               for part in ((f"{name}.length", U32.format), (name, length))]
    table = [entry for i in range(len(CHUNK_TAGS)) for entry in _spec(CHUNK_ENTRY_FIELDS, f"chunk_table[{i}].")]
    fields = _fields(*_spec(ENVELOPE_HEAD), *strings, *_spec(ENVELOPE_TAIL_FIELDS), *table,
                     ("header_digest", DIGEST_BYTES))
    digest = fields["header_digest"]
    return EnvelopeLayout(fields, fields["chunk_table[0].tag"].offset, digest.offset, digest.end)


def aligned_header_bytes(header_length: int) -> int:
    """The smallest valid ``header_bytes`` for a header of this length (rounded up to 64)."""
    return -(-header_length // HEADER_ALIGNMENT) * HEADER_ALIGNMENT


CANONICAL = envelope_layout((len(STATE), len(LEARNER), len(DATA), len(SEED)))
"""The layout of every header bob writes (bob v1's contract strings)."""
CANONICAL_HEADER_BYTES = aligned_header_bytes(CANONICAL.header_length)  # 448
CANONICAL_CHECKPOINT_BYTES = CANONICAL_HEADER_BYTES + PAYLOAD_BYTES  # 786,880
