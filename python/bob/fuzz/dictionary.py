"""bob's fuzzing dictionary: magics, chunk tags, the contract strings and their parts, the sizes the
formats name, interesting binary32 and u64 values -- as Python values for the field-aware mutator,
and as libFuzzer ``.dict`` files (one quoted token a line, bytes as ``\\xNN``)."""

from __future__ import annotations

import os

from bob.fileio import write_atomic
from bob.formats.constants import CHECKPOINT_MAGIC, CHUNK_BYTES, CHUNK_TAGS, DATA, EMPTY_PROMPT, INPUT_MAGIC, \
    LEARNER, LEARNER_HYPERPARAMETERS, LEARNER_NAMES, LEARNER_PREFIX, MAX_CHECKPOINT_BYTES, MAX_HEADER_BYTES, \
    PAYLOAD_BYTES, PREDICTION_BYTES, PROMPTS, RECORD_BYTES, SEED, STATE, STRING_LIMIT, U64_MAX, \
    UPDATES_PER_INVOCATION, VOCABULARY
from bob.formats.layout import CANONICAL, CANONICAL_CHECKPOINT_BYTES, CANONICAL_HEADER_BYTES, F32, HEADER_ALIGNMENT, U32, U64
from bob.text import escape_bytes

__all__ = ["INTERESTING_INTS", "FLOAT_BITS", "CONTRACT_STRINGS", "tokens", "write_dict"]

_NEIGHBOURED = (RECORD_BYTES, PREDICTION_BYTES, CHUNK_BYTES, PAYLOAD_BYTES, MAX_HEADER_BYTES, MAX_CHECKPOINT_BYTES,
                CANONICAL_HEADER_BYTES, CANONICAL.header_length, CANONICAL_CHECKPOINT_BYTES, STRING_LIMIT,
                UPDATES_PER_INVOCATION, PROMPTS, HEADER_ALIGNMENT, VOCABULARY, EMPTY_PROMPT,
                U64_MAX - UPDATES_PER_INVOCATION)  # the sizes, the empty prompt and the step limit, each ± 1

INTERESTING_INTS = tuple(sorted({
    0, 1, 2, 3, 7, 127, 128, 0x7FFFFFFF, 0x80000000, (1 << 63) - 1, 1 << 63, U64_MAX - 1, U64_MAX,
    *(v + d for v in _NEIGHBOURED for d in (-1, 0, 1)),
    *(CANONICAL_HEADER_BYTES + k * CHUNK_BYTES for k in range(4)),
    *(CANONICAL_HEADER_BYTES + HEADER_ALIGNMENT + k * CHUNK_BYTES for k in range(3)),
}))
"""Unsigned values worth writing into a u32/u64 field (each fitting size is used)."""

FLOAT_BITS = {
    "+0.0": 0x00000000, "-0.0": 0x80000000, "+1.0": 0x3F800000, "-1.0": 0xBF800000,
    "+FLT_MAX": 0x7F7FFFFF, "-FLT_MAX": 0xFF7FFFFF, "+FLT_MIN": 0x00800000, "-FLT_MIN": 0x80800000,
    "+min_subnormal": 0x00000001, "-min_subnormal": 0x80000001, "+max_subnormal": 0x007FFFFF,
    "-max_subnormal": 0x807FFFFF, "+inf": 0x7F800000, "-inf": 0xFF800000, "qNaN": 0x7FC00000,
    "-qNaN": 0xFFC00000, "sNaN_payload": 0x7F800001, "qNaN_payload": 0x7FC0DEAD, "-NaN_payload": 0xFFFFFFFF,
    **{name: U32.unpack(F32.pack(value))[0] for name, value in
       [*zip(LEARNER_NAMES, LEARNER_HYPERPARAMETERS), ("1e30", 1e30), ("-86.5", -86.5)]},
}
"""binary32 bit patterns, by name (-86.5: a value near exp's cut-off)."""

CONTRACT_STRINGS = (STATE, LEARNER, DATA, SEED)


def tokens() -> list[bytes]:
    """Every dictionary token, most useful first, without duplicates."""
    out: list[bytes] = [CHECKPOINT_MAGIC, INPUT_MAGIC, b"BOB-", *CHUNK_TAGS, LEARNER_PREFIX, *CONTRACT_STRINGS,
                        LEARNER[len(LEARNER_PREFIX):]]
    for s in CONTRACT_STRINGS:
        out.append(U32.pack(len(s)) + s[:8])  # a length prefix followed by its string's start
        out.extend(part for part in s.split(b"|") if len(part) > 2)
    out += [U32.pack(bits) for bits in FLOAT_BITS.values()]
    out += [number.pack(v) for v in INTERESTING_INTS for number in (U32, U64) if number is U64 or v <= 0xFFFFFFFF]
    return list(dict.fromkeys(out))


def write_dict(path: "str | os.PathLike[str]") -> None:
    """Write the dictionary in libFuzzer/AFL ``.dict`` format: ``name="token"`` a line, every byte
    that is not plain printable ASCII as ``\\xNN``."""
    lines = [f'bob_{i}="{escape_bytes(t)}"' for i, t in enumerate(tokens())]
    write_atomic(path, ("# bob's fuzzing dictionary (bob.fuzz.dictionary): magics, contract strings, sizes, values\n"
                        + "\n".join(lines) + "\n").encode("ascii"))
