"""bob's field-aware mutator: mutations that know where every field of the file is.

Random byte flips in a checkpoint land in the 786,432 bytes of planes almost
always and never get past a digest; so this mutator works on the layout of
the real format (:mod:`bob.formats.layout`): it lists the *spots* of a file —
every header field, each of the learner contract's five floats, every chunk
table entry, the padding, the planes; for an input record and a predictions
file every field — and overwrites one with a value chosen for its kind
(interesting integers, special binary32 values, other contract strings,
other magics and tags). For a checkpoint the digests can then be refreshed
(:func:`refresh_digests`) so plane damage reaches the state checks instead
of stopping at a SHA-256.

:func:`mutate_canonical` keeps a file in the shape bob-run's fast path
recognizes (only the step, the planes, consistent pairs or valid prompt
words change; digests refreshed), so the differential check of the fast path
against the schemas reaches its assertion on most cases.

Standard library only, deterministic for a given ``random.Random``.
"""

from __future__ import annotations

import hashlib
import random
import struct
from typing import Callable, NamedTuple, Sequence

from bob.formats.constants import LEARNER_NAMES, LEARNER_PREFIX
from bob.formats.rules import HEADER_BYTES, chunk_offset
from bob.formats.constants import (
    CHECKPOINT_MAGIC,
    CHUNK_BYTES,
    CHUNK_TAGS,
    EMPTY_PROMPT,
    INPUT_MAGIC,
    LEARNER,
    PREDICTION_BYTES,
    PROMPTS,
    STRING_LIMIT,
    VOCABULARY,
)
from bob.formats.layout import (
    CANONICAL,
    CONTRACT_STRINGS,
    DIGEST_BYTES,
    ENVELOPE_HEAD,
    INPUT,
    PREDICTION_FIELDS,
    PREDICTION_RECORD,
    U64,
    aligned_header_bytes,
    envelope_layout,
)
from bob.fuzz.dictionary import CONTRACT_STRINGS as CONTRACT_VALUES
from bob.fuzz.dictionary import FLOAT_BITS, INTERESTING_INTS
from bob.fuzz.structural import structural_mutate

__all__ = ["FORMATS", "string_lengths", "Spot", "spots", "field_names", "format_of", "mutate", "mutate_field", "mutate_canonical",
           "refresh_digests", "byte_mutation", "interesting_values", "custom_mutator"]

FORMATS = ("input", "checkpoint", "predictions")
FIXED_SIZES = {"input": INPUT["prompt_words"].end, "predictions": PREDICTION_BYTES}
PLANES = ("P", "M", "V")
_FLOATS = tuple(FLOAT_BITS.values())
_MAGICS = (CHECKPOINT_MAGIC, INPUT_MAGIC, b"BOB-PRED", b"bob-ckpt", b"BOB-CKP\0", b"\0" * 8, b"\x7fELF\2\1\1\0")


class Spot(NamedTuple):
    """One mutable place in a file: a field (or a table of fields) of one kind."""

    name: str
    offset: int
    size: int
    kind: str  # magic u32 u64 f32 string tag digest padding plane pairs u32s


def format_of(data: bytes) -> str | None:
    """Which of bob's formats ``data`` looks like (by magic, or 24 bytes: predictions)."""
    head = bytes(data[:8])
    if head == CHECKPOINT_MAGIC:
        return "checkpoint"
    if head == INPUT_MAGIC:
        return "input"
    if len(data) == PREDICTION_BYTES:
        return "predictions"
    return None


def _kind(name: str, fmt: str | None) -> str:
    if name == "magic":
        return "magic"
    if name.endswith(".tag"):
        return "tag"
    if "digest" in name:
        return "digest"
    if name in CONTRACT_STRINGS:
        return "string"
    return "u64" if fmt == "<Q" else "u32"


def string_lengths(data: bytes) -> tuple[int, int, int, int]:
    """The contract strings' lengths as the file states them (v1's where a prefix is unusable)."""
    out = []
    at = ENVELOPE_HEAD["step"].end
    for name, canonical in zip(CONTRACT_STRINGS, CONTRACT_VALUES):
        length = len(canonical)
        if at + 4 <= len(data):
            (stated,) = struct.unpack_from("<I", data, at)
            if stated <= STRING_LIMIT and at + 4 + stated <= len(data):
                length = stated
        out.append(length)
        at += 4 + length
    return tuple(out)  # type: ignore[return-value]


def _checkpoint_spots(data: bytes) -> list[Spot]:
    lay = envelope_layout(string_lengths(data))
    out = [Spot(name, f.offset, f.size, _kind(name, f.format)) for name, f in lay.fields.items()]
    learner = lay.fields["learner"]
    if learner.size == len(LEARNER):
        base = learner.offset + len(LEARNER_PREFIX)
        out += [Spot(f"learner.{n}", base + 4 * k, 4, "f32") for k, n in enumerate(LEARNER_NAMES)]
    field = ENVELOPE_HEAD["header_bytes"]
    hb = U64.unpack_from(data, field.offset)[0] if len(data) >= field.end else 0
    if not HEADER_BYTES.ok(hb) or hb < lay.header_length:  # the file's own, where the reader would take it
        hb = aligned_header_bytes(lay.header_length)
    out.append(Spot("padding", lay.header_length, max(hb - lay.header_length, 1), "padding"))
    out += [Spot(name, chunk_offset(hb, i), CHUNK_BYTES, "plane") for i, name in enumerate(PLANES)]
    return out


def spots(data: bytes, fmt: str) -> list[Spot]:
    """Every mutable spot of ``data`` read as format ``fmt`` (offsets from the layout module)."""
    if fmt == "checkpoint":
        return _checkpoint_spots(data)
    if fmt == "input":
        kinds = {"magic": "magic", "version": "u64", "pairs": "pairs", "targets": "u32s", "prompt_words": "u32s"}
        return [Spot(name, f.offset, f.size, kinds[name]) for name, f in INPUT.items()]
    if fmt == "predictions":
        return [Spot(f"records[{i}].{name}", i * PREDICTION_RECORD.size + f.offset, f.size, "u32")
                for i in range(PROMPTS) for name, f in PREDICTION_FIELDS.items()]
    raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")


def field_names(fmt: str) -> set[str]:
    """The names of every spot of a canonical file of ``fmt``: what a complete mutator must reach."""
    if fmt == "checkpoint":
        from bob.formats.checkpoint import checkpoint_header

        return {s.name for s in _checkpoint_spots(checkpoint_header(0, [bytes(32)] * len(CHUNK_TAGS)))}
    return {s.name for s in spots(b"", fmt)}


def interesting_values(size: int, current: int | None = None) -> list[int]:
    """Interesting unsigned values that fit ``size`` bytes (plus ``current`` ± 1)."""
    top = (1 << (8 * size)) - 1
    out = [v for v in INTERESTING_INTS if v <= top]
    if current is not None:
        out += [v for v in (current - 1, current + 1) if 0 <= v <= top]
    return out


# --------------------------------------------------------------------------- #
# Mutating one spot
# --------------------------------------------------------------------------- #


def _float_bits(rnd: random.Random, current: int | None = None) -> int:
    r = rnd.random()
    if current is not None and r < 0.15:
        return current ^ (1 << rnd.randrange(32))  # one bit away: an ulp, a sign, an exponent bit
    if r < 0.25:
        return rnd.getrandbits(32)
    return _FLOATS[rnd.randrange(len(_FLOATS))]


def _set_u(out: bytearray, offset: int, size: int, rnd: random.Random) -> None:
    fmt = "<I" if size == 4 else "<Q"
    current = struct.unpack_from(fmt, out, offset)[0]
    values = interesting_values(size, current)
    value = values[rnd.randrange(len(values))] if rnd.random() < 0.9 else rnd.getrandbits(8 * size)
    struct.pack_into(fmt, out, offset, value)


def _replace_string(out: bytearray, spot: Spot, rnd: random.Random) -> None:
    """A contract string replaced with another (its length prefix follows), cut, grown or bit-flipped."""
    start, end = spot.offset - 4, spot.offset + spot.size
    current = bytes(out[spot.offset:end])
    r = rnd.random()
    if r < 0.3:
        new = CONTRACT_VALUES[rnd.randrange(len(CONTRACT_VALUES))]
    elif r < 0.5 and current:
        new = current[:rnd.randrange(len(current))]
    elif r < 0.65:
        new = current + bytes([rnd.getrandbits(8)])
    elif current:
        k = rnd.randrange(len(current))
        new = current[:k] + bytes([current[k] ^ (1 << rnd.randrange(8))]) + current[k + 1:]
    else:
        new = b"x"
    out[start:end] = struct.pack("<I", len(new)) + new


def _mutate_spot(out: bytearray, spot: Spot, rnd: random.Random) -> None:
    kind, at = spot.kind, spot.offset
    if kind == "string":
        _replace_string(out, spot, rnd)
        return
    if at + spot.size > len(out) and kind not in ("plane", "padding", "pairs", "u32s"):
        return  # the field is not in this (short) file
    if kind == "magic":
        out[at:at + 8] = _MAGICS[rnd.randrange(len(_MAGICS))] if rnd.random() < 0.7 else bytes(
            rnd.getrandbits(8) for _ in range(8))
    elif kind in ("u32", "u64"):
        _set_u(out, at, spot.size, rnd)
    elif kind == "f32":
        struct.pack_into("<I", out, at, _float_bits(rnd, struct.unpack_from("<I", out, at)[0]))
    elif kind == "tag":
        tags = CHUNK_TAGS + (b"\0\0\0\0", b"p\0\0\0", b"PMV\0")
        out[at:at + 4] = tags[rnd.randrange(len(tags))]
    elif kind == "digest":
        r = rnd.random()
        if r < 0.4:
            out[at + rnd.randrange(32)] ^= 1 << rnd.randrange(8)
        elif r < 0.7:
            out[at:at + 32] = bytes(32)
        else:
            out[at:at + 32] = hashlib.sha256(bytes([rnd.getrandbits(8)])).digest()
    elif kind == "padding":
        k = at + rnd.randrange(spot.size)
        if k < len(out):
            out[k] = rnd.randrange(1, 1 << 8)
    elif kind == "plane":
        _mutate_plane(out, spot, rnd)
    elif kind == "pairs":
        i = rnd.randrange(VOCABULARY)
        if at + 2 * i + 2 <= len(out):
            out[at + 2 * i + rnd.randrange(2)] = rnd.getrandbits(8)
    elif kind == "u32s":
        i = rnd.randrange(spot.size // 4)
        if at + 4 * i + 4 <= len(out):
            values = interesting_values(4) + [rnd.getrandbits(8)] * 4
            struct.pack_into("<I", out, at + 4 * i, values[rnd.randrange(len(values))])


def _mutate_plane(out: bytearray, spot: Spot, rnd: random.Random) -> None:
    """Write special binary32 values into a plane: at its first, last or a random index."""
    count = spot.size // 4
    for _ in range(rnd.randrange(1, 5)):
        r = rnd.random()
        i = 0 if r < 0.15 else count - 1 if r < 0.3 else rnd.randrange(count)
        at = spot.offset + 4 * i
        if at + 4 <= len(out):
            struct.pack_into("<I", out, at, _float_bits(rnd, struct.unpack_from("<I", out, at)[0]))


def mutate_field(data: bytes, rnd: random.Random, fmt: str, name: str | None = None) -> tuple[bytes, str]:
    """``data`` with one spot (``name``, or one at random) overwritten; returns (bytes, the spot's name)."""
    table = spots(data, fmt)
    if name is None:
        spot = table[rnd.randrange(len(table))]
    else:
        spot = next(s for s in table if s.name == name)
    out = bytearray(data)
    _mutate_spot(out, spot, rnd)
    return bytes(out), spot.name


# --------------------------------------------------------------------------- #
# Byte-level mutations, and the mix
# --------------------------------------------------------------------------- #

BYTE_OPS = ("flip", "set", "insert", "delete", "truncate", "extend", "duplicate")


def byte_mutation(data: bytearray, rnd: random.Random, op: str | None = None) -> None:
    """One blind byte-level edit of ``data`` in place."""
    op = op or BYTE_OPS[rnd.randrange(len(BYTE_OPS))]
    n = len(data)
    if op == "flip" and n:
        data[rnd.randrange(n)] ^= 1 << rnd.randrange(8)
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


def mutate(data: bytes, rnd: random.Random, fmt: str | None = None, *, count: int | None = None,
           field_ratio: float = 0.7, only: Sequence[str] | None = None, refresh: float = 0.0) -> bytes:
    """``data`` with 1–3 (or ``count``) mutations; a ``field_ratio`` share of them field-aware.

    ``fmt`` defaults to :func:`format_of`; with no format every edit is byte-level.
    ``only`` restricts field edits to spots of those names (``"P"``, ``"step"`` …).
    A checkpoint's digests are refreshed afterwards with probability ``refresh``.
    """
    fmt = fmt or format_of(data)
    out = bytearray(data)
    for _ in range(count if count is not None else rnd.randrange(1, 4)):
        if fmt is not None and rnd.random() < field_ratio:
            table = spots(bytes(out), fmt)
            if only is not None:
                table = [s for s in table if s.name in only]
            if table:
                _mutate_spot(out, table[rnd.randrange(len(table))], rnd)
                continue
        byte_mutation(out, rnd)
    result = bytes(out)
    if fmt == "checkpoint" and refresh and rnd.random() < refresh:
        result = refresh_digests(result)
    return result


def mutate_canonical(data: bytes, rnd: random.Random, fmt: str | None = None) -> bytes:
    """A mutation that keeps ``data`` a file the fast path can still recognize, most of the time.

    Checkpoint: the step and plane values change, then the digests are refreshed
    (a fifth of the time another header field changes too, which the fast path
    must then refuse). Input record: a pair and its widened target change
    together, or a prompt word takes a valid value (a fifth of the time an
    inconsistent edit). Anything else: :func:`mutate`.
    """
    fmt = fmt or format_of(data)
    if fmt == "checkpoint":
        names = ["step", "P", "M", "V"]
        if rnd.random() < 0.2:
            names.append(rnd.choice(sorted(field_names("checkpoint") - set(names))))
        return refresh_digests(mutate(data, rnd, fmt, field_ratio=1.0, only=names))
    if fmt == "input" and len(data) >= INPUT["prompt_words"].end:
        out = bytearray(data)
        for _ in range(rnd.randrange(1, 4)):
            if rnd.random() < 0.6:
                i, byte, target = rnd.randrange(VOCABULARY), rnd.getrandbits(8), rnd.getrandbits(8)
                out[INPUT["pairs"].offset + 2 * i:INPUT["pairs"].offset + 2 * i + 2] = bytes((byte, target))
                struct.pack_into("<I", out, INPUT["targets"].offset + 4 * i, target)
            else:
                word = EMPTY_PROMPT if rnd.random() < 0.3 else rnd.getrandbits(8)
                struct.pack_into("<I", out, INPUT["prompt_words"].offset + 4 * rnd.randrange(PROMPTS), word)
        if rnd.random() < 0.2:
            return mutate(bytes(out), rnd, fmt, count=1)
        return bytes(out)
    return mutate(data, rnd, fmt)


def refresh_digests(data: bytes) -> bytes:
    """A checkpoint with its chunk digests and header digest recomputed for its
    own header (chunks at ``header_bytes + i × 262,144``); ``data`` unchanged
    when the header's length prefixes or ``header_bytes`` cannot place them."""
    if len(data) < CANONICAL.header_length or bytes(data[ENVELOPE_HEAD["magic"].slice]) != CHECKPOINT_MAGIC:
        return data
    lay = envelope_layout(string_lengths(data))
    (hb,) = U64.unpack_from(data, ENVELOPE_HEAD["header_bytes"].offset)
    if lay.header_length > len(data) or hb < lay.header_length or chunk_offset(hb, len(CHUNK_TAGS)) > len(data):
        return data
    out = bytearray(data)
    for i in range(len(CHUNK_TAGS)):
        at = lay.chunk_field(i, "digest").offset
        out[at:at + DIGEST_BYTES] = hashlib.sha256(out[chunk_offset(hb, i):chunk_offset(hb, i + 1)]).digest()
    out[lay.header_digest:lay.header_length] = hashlib.sha256(out[:lay.header_digest]).digest()
    return bytes(out)


def _recognized(data: bytes, kind: str) -> bool:
    from bob.formats import canonical, checkpoint

    if kind == "checkpoint":
        return checkpoint.recognize_checkpoint(data) is not None
    return canonical.recognize_record(data) is not None


def custom_mutator(fmt: str | None, engine_mutate: Callable[[bytes, int], bytes] | None = None,
                   canonical_bases: Sequence[bytes] = ()):
    """A libFuzzer custom mutator ``(data, max_size, seed) -> bytes`` mixing the
    engine's own mutations (``engine_mutate``, e.g. ``atheris.Mutate``) with
    field-aware and fast-path-keeping ones.

    A fifth of the time the change is a consistent one (:mod:`bob.fuzz.structural`).
    A coverage-guided corpus keeps few files the fast path recognizes (they all
    cover the same lines), so the fast-path-keeping share starts from one of
    ``canonical_bases`` (accepted files of the format) whenever the input is not
    itself recognized: that keeps the fast-path differential busy in a campaign too.
    """

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rnd = random.Random(seed)
        kind = format_of(data) or fmt
        r = rnd.random()
        if engine_mutate is not None and (r < 0.15 or kind is None):
            out = engine_mutate(data, max_size)
        elif r < 0.5 and kind in ("checkpoint", "input"):
            bases = [b for b in canonical_bases if format_of(b) == kind]
            if bases and not _recognized(data, kind):
                data = bases[rnd.randrange(len(bases))]
            out = mutate_canonical(data, rnd, kind)
        elif r < 0.7 and kind in ("checkpoint", "input"):
            # A consistent change (structural.py), from the input or, half the time, an accepted file;
            # now and then one field more, so a deep rule's neighbours are reached too.
            bases = [b for b in canonical_bases if format_of(b) == kind]
            if bases and rnd.random() < 0.5:
                data = bases[rnd.randrange(len(bases))]
            out = structural_mutate(data, rnd, kind)
            if rnd.random() < 0.25:
                out = mutate(out, rnd, kind, count=1, refresh=1.0)
        else:
            size = FIXED_SIZES.get(kind or "")
            if size is not None and len(data) != size and rnd.random() < 0.5:
                # The corpus drifts to short inputs (they cover the size check), where no field
                # lies; give the field-aware edits a file of the format's size again.
                bases = [b for b in canonical_bases if len(b) == size] or [bytes(size)]
                data = data[:size] + bases[rnd.randrange(len(bases))][len(data):]
            out = mutate(data, rnd, kind, refresh=0.5)
        return out[:max_size]

    return mutator
