"""The contract oracle: bob v1's three formats read again, straight from the contract
(``python/bob/data/contract/bob-v1.md`` §3–§5; ``formats/DECISIONS.md`` D1–D10 where it leaves room), with the
standard library only and nothing of ``bob``, so a rule all of bob's readers get wrong the same way disagrees with
it (docs/fuzzing.md, "The contract oracle": its verdicts, its field names, the house test that holds it)."""

from __future__ import annotations

import hashlib
import struct
from typing import List, Optional, Tuple

__all__ = ["Verdict", "FIELD_NAMES", "check_input", "check_predictions", "check_checkpoint", "checkpoint_verdicts",
           "check", "state_verdict", "header_bytes_ok", "VOCABULARY", "CHUNK", "PLANES", "SIZES", "STRINGS", "U64_MAX"]

Verdict = Optional[Tuple[str, Optional[int]]]

# §1–§2, restated.
VOCABULARY = 256
PROMPTS = 3
RECORD_SIZE = 1564  # 16 + 2·256 + 4·256 + 4·3
EMPTY = 0xFFFF_FFFF
CHUNK = VOCABULARY * VOCABULARY * 4  # a plane: 256 × 256 binary32 values
PAYLOAD = 3 * CHUNK
UPDATES = 10
U64_MAX = 2 ** 64 - 1
STRING_MAX = 4096
HEADER_MAX = 65536
LEARNER_FLOATS = struct.pack("<5f", 0.05, 0.9, 0.999, 1e-8, 0.01)
STRINGS = (
    ("state", b"bob-raw-pmv-f32-v1|parameter-order:p-then-m-then-v|payload=" + str(PAYLOAD).encode()),
    ("learner", b"softmax-cross-entropy-mean|adamw|" + LEARNER_FLOATS),
    ("data", b"raw-byte-sequence|vocabulary=%d|prompts=%d|record=%d" % (VOCABULARY, PROMPTS, RECORD_SIZE)),
    ("seed", b"bob-seed-v1"),
)
SIZES = (("payload_bytes", PAYLOAD), ("chunk_bytes", CHUNK), ("updates_per_invocation", UPDATES))
TAGS = (b"P\0\0\0", b"M\0\0\0", b"V\0\0\0")
PLANES = ("P", "M", "V")

# The contract's names (its tables' wording) against bob's field names.
FIELD_NAMES = {
    "any length other than 1,564 / 24; file size; exactly header_bytes + payload_bytes": "file_size",
    "magic": "magic",
    "version": "version",
    "targets[i] ≠ pairs[i].target": "targets",
    "a prompt word": "prompt_words",
    "token": "token",
    "validity": "validity",
    "header_bytes": "header_bytes",
    "step (in-band step metadata; room for 10 updates; 0 only with zero moments)": "step",
    "state, learner, data, seed (length prefix or bytes)": "state, learner, data, seed",
    "payload_bytes, chunk_bytes, updates_per_invocation, chunk_count": "the same",
    "chunk table: tag, offset, length, SHA-256": "chunk_table.tag, .offset, .length, .digest",
    "header digest": "header_digest",
    "padding": "padding",
    "planes P, M, V (non-finite; negative V)": "P, M, V",
}


def header_bytes_ok(hb: int) -> bool:
    """D4, as soon as it is read: a multiple of 64, at most 65,536 (then, not below the header's own length)."""
    return hb % 64 == 0 and hb <= HEADER_MAX


def _magic(data: bytes, magic: bytes) -> Verdict:
    """D1: a short file that is a prefix of the magic ends inside it; anything else is not this format."""
    if data[:8] == magic:
        return None
    return ("file_size" if len(data) < 8 and magic.startswith(data) else "magic", None)


def check_input(data: bytes) -> Verdict:
    """§3: magic, size, version, each widened target, each prompt word."""
    if bad := _magic(data, b"BOB-INPT"):
        return bad
    if len(data) != RECORD_SIZE:
        return ("file_size", None)
    if struct.unpack_from("<Q", data, 8)[0] != 1:
        return ("version", None)
    pairs = data[16:16 + 2 * VOCABULARY]
    targets = struct.unpack_from(f"<{VOCABULARY}I", data, 16 + 2 * VOCABULARY)
    for i in range(VOCABULARY):
        if targets[i] != pairs[2 * i + 1]:
            return ("targets", i)
    words = struct.unpack_from(f"<{PROMPTS}I", data, 16 + 6 * VOCABULARY)
    for i, w in enumerate(words):
        if not (w < VOCABULARY or w == EMPTY):
            return ("prompt_words", i)
    return None


def check_predictions(data: bytes) -> Verdict:
    """§4: 24 bytes; per record, validity 0 or 1, then a token < 256 that is 0 when validity is 0."""
    if len(data) != 8 * PROMPTS:
        return ("file_size", None)
    for i in range(PROMPTS):
        token, validity = struct.unpack_from("<II", data, 8 * i)
        if validity not in (0, 1):
            return ("validity", i)
        if token >= VOCABULARY or (validity == 0 and token != 0):
            return ("token", i)
    return None


class Refused(Exception):
    """A refusal: ``verdict`` is (the field, its index or None)."""

    def __init__(self, field: str, index: Optional[int] = None) -> None:
        self.verdict = (field, index)


def check_checkpoint(data: bytes, for_resume: bool = True) -> Verdict:
    """§5: zero bytes are a fresh run; else the envelope, in the contract's order, then (for resuming) the state."""
    return checkpoint_verdicts(data)[1 if for_resume else 0]


def checkpoint_verdicts(data: bytes) -> Tuple[Verdict, Verdict]:
    """(the verdict for reading, the verdict for resuming), from one pass over ``data``."""
    try:
        step, planes = _envelope(data)
    except Refused as refusal:
        return refusal.verdict, refusal.verdict
    return None, (None if planes is None else state_verdict(step, planes))


def _envelope(data: bytes) -> Tuple[int, Optional[list]]:
    """(step, the three planes as (data, offset)) of an envelope the reading rules accept ((0, None)
    for zero bytes, the fresh run); else :class:`Refused` with the first field refused."""
    n = len(data)
    if n == 0:
        return 0, None
    if bad := _magic(data, b"BOB-CKPT"):
        raise Refused(*bad)
    if n > HEADER_MAX + PAYLOAD:  # "file size before reading it whole"
        raise Refused("file_size")
    at = 8

    def take(size: int, field: str, index: Optional[int] = None) -> bytes:
        nonlocal at
        if at + size > n:
            raise Refused(field, index)  # the file ends inside this field
        at += size
        return data[at - size:at]

    def number(size: int, field: str, index: Optional[int] = None) -> int:
        return int.from_bytes(take(size, field, index), "little")

    if number(8, "version") != 1:
        raise Refused("version")
    hb = number(8, "header_bytes")
    if not header_bytes_ok(hb):
        raise Refused("header_bytes")
    step = number(8, "step")
    stated: dict = {}
    for name, _ in STRINGS:
        length = number(4, name)
        if length > n - at or length > STRING_MAX:  # D3: the remaining bytes, then 4,096
            raise Refused(name)
        stated[name] = take(length, name)
    stated.update((name, number(8, name)) for name, _ in SIZES)
    count = number(4, "chunk_count")
    table = [(take(4, "chunk_table.tag", i), number(8, "chunk_table.offset", i), number(8, "chunk_table.length", i),
              take(32, "chunk_table.digest", i)) for i in range(len(TAGS))]
    body_end = at
    stored_digest = take(32, "header_digest")
    header_end = at
    if hb < header_end:
        raise Refused("header_bytes")
    if hashlib.sha256(data[:body_end]).digest() != stored_digest:
        raise Refused("header_digest")
    for name, value in STRINGS + SIZES:
        if stated[name] != value:
            raise Refused(name)
    if count != len(TAGS):
        raise Refused("chunk_count")
    for i, entry in enumerate(table):  # each entry's tag, offset and length, in that order
        for name, got, want in zip(("tag", "offset", "length"), entry, (TAGS[i], hb + i * CHUNK, CHUNK)):
            if got != want:
                raise Refused(f"chunk_table.{name}", i)
    padding = data[header_end:min(hb, n)]
    if padding.strip(b"\0"):
        raise Refused("padding", len(padding) - len(padding.lstrip(b"\0")))  # the first non-zero byte
    if n != hb + PAYLOAD:
        raise Refused("file_size")
    view = memoryview(data)
    for i in range(3):
        if hashlib.sha256(view[hb + i * CHUNK:hb + (i + 1) * CHUNK]).digest() != table[i][3]:
            raise Refused("chunk_table.digest", i)
    return step, [(data, hb + i * CHUNK) for i in range(3)]


# The state rules read each binary32 value's little-endian bytes b0 b1 b2 b3: the sign is b3's top bit, the exponent
# b3's low 7 bits and b2's top bit. A value is non-finite when the exponent is all ones, zero (either sign) when
# everything but the sign is 0, negative when the sign is set and it is not zero. Each rule is a table over one byte
# lane, turned into one big integer whose byte k is 0 or 1 for value k: a whole plane is judged in a few C-speed passes.
_EXPONENT_HIGH = bytes(int(b & 0x7F == 0x7F) for b in range(256))  # b3: exponent's 7 high bits all 1
_TOP_BIT = bytes(b >> 7 for b in range(256))  # b3: the sign; b2: the exponent's low bit
_LOW7 = bytes(int(b & 0x7F != 0) for b in range(256))  # b3 without the sign, non-zero
_NONZERO = bytes(int(b != 0) for b in range(256))


def _bytes(plane: tuple, k: int) -> bytes:
    """Byte ``k`` (0–3) of every value of a plane, given as (the file's bytes, the plane's offset)."""
    data, at = plane
    return data[at + k:at + CHUNK:4]


def _lane(plane: tuple, k: int, table: bytes) -> int:
    return int.from_bytes(_bytes(plane, k).translate(table), "little")


def _first(flags: int) -> int:
    """The index of the first value whose flag is set (the lowest non-zero byte)."""
    return ((flags & -flags).bit_length() - 1) // 8


def _not_zero(plane: tuple) -> int:
    return _lane(plane, 3, _LOW7) | _lane(plane, 2, _NONZERO) | _lane(plane, 1, _NONZERO) | _lane(plane, 0, _NONZERO)


def state_verdict(step: int, planes: List[Tuple[bytes, int]]) -> Verdict:
    """§5 for resuming: every value finite (P, M, V), no negative V, step 0 only with zero M and V,
    room for 10 more updates."""
    for name, plane in zip(PLANES, planes):
        top = _bytes(plane, 3)
        if b"\x7f" in top or b"\xff" in top:  # an exponent that may be all ones: look closer
            if non_finite := int.from_bytes(top.translate(_EXPONENT_HIGH), "little") & _lane(plane, 2, _TOP_BIT):
                return (name, _first(non_finite))
    v = planes[2]
    if not top.isascii():  # (top is V's) some sign bit is set: is that value below zero (not −0.0)?
        if negative := _lane(v, 3, _TOP_BIT) & _not_zero(v):
            return ("V", _first(negative))
    if (step == 0 and (_not_zero(planes[1]) or _not_zero(v))) or step > U64_MAX - UPDATES:  # −0.0 counts as zero
        return ("step", None)
    return None


def check(fmt: str, data: bytes, for_resume: bool = True) -> Verdict:
    """The verdict on ``data`` as ``fmt`` (``input``, ``checkpoint``, ``predictions``)."""
    checks = {"input": check_input, "predictions": check_predictions,
              "checkpoint": lambda data: check_checkpoint(data, for_resume)}
    if fmt not in checks:
        raise ValueError(f"unknown format {fmt!r}")
    return checks[fmt](data)
