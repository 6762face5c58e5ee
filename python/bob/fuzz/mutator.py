"""bob's field-aware mutator: a file's *spots*, from the real layout (:mod:`bob.formats.layout`), each
overwritten with a value chosen for its kind (docs/fuzzing.md); deterministic for a ``random.Random``."""

from __future__ import annotations

import hashlib
import random
from typing import Callable, NamedTuple, Sequence

from bob.formats.constants import CHECKPOINT_MAGIC, CHUNK_BYTES, CHUNK_TAGS, EMPTY_PROMPT, INPUT_MAGIC, LEARNER, \
    LEARNER_NAMES, LEARNER_PREFIX, PLANE_NAMES, PREDICTION_BYTES, PROMPTS, VOCABULARY
from bob.formats.kinds import FORMATS
from bob.formats.layout import CONTRACT_STRINGS, DIGEST_BYTES, ENVELOPE_HEAD, INPUT, PREDICTION_FIELDS, \
    PREDICTION_RECORD, U32, U64, Field, aligned_header_bytes, envelope_layout
from bob.formats.rules import HEADER_BYTES, chunk_offset
from bob.fuzz.dictionary import CONTRACT_STRINGS as CONTRACT_VALUES, FLOAT_BITS, INTERESTING_INTS
from bob.fuzz.structural import refresh_digests, string_lengths, structural_mutate

__all__ = ["FORMATS", "string_lengths", "Spot", "spots", "field_names", "format_of", "mutate", "mutate_field",
           "mutate_canonical", "refresh_digests", "byte_mutation", "interesting_values", "custom_mutator",
           "recognized", "random_bytes_strategy", "mutated_strategy"]

FIXED_SIZES = {"input": INPUT["prompt_words"].end, "predictions": PREDICTION_BYTES}
_FLOATS = tuple(FLOAT_BITS.values())
_MAGICS = (CHECKPOINT_MAGIC, INPUT_MAGIC, b"BOB-PRED", b"bob-ckpt", b"BOB-CKP\0", b"\0" * 8, b"\x7fELF\2\1\1\0")
_TAGS = CHUNK_TAGS + (b"\0\0\0\0", b"p\0\0\0", b"PMV\0")
_KINDS = {None: "pairs", "<Q": "u64", "<I": "u32"}  # by struct format; any other: a table of u32
_BY_MAGIC = {CHECKPOINT_MAGIC: "checkpoint", INPUT_MAGIC: "input"}


class Spot(NamedTuple):
    """One mutable place in a file: a field (or a table of fields) of one kind."""

    name: str
    offset: int
    size: int
    kind: str  # magic u32 u64 f32 string tag digest padding plane pairs u32s


def format_of(data: bytes) -> str | None:
    """Which of bob's formats ``data`` looks like (by magic, or 24 bytes: predictions)."""
    return _BY_MAGIC.get(bytes(data[:8]), "predictions" if len(data) == PREDICTION_BYTES else None)


def _spots(fields: "dict[str, Field]", base: int = 0, prefix: str = "") -> list[Spot]:
    """A spot for each field: a byte field's kind by its name (the input's pairs: "pairs"), a number's
    by its ``struct`` format (a table of u32: "u32s")."""
    return [Spot(prefix + name, base + f.offset, f.size, "string" if name in CONTRACT_STRINGS
                 else next((k for k in ("magic", "tag", "digest") if name.endswith(k)), _KINDS.get(f.format, "u32s")))
            for name, f in fields.items()]


def spots(data: bytes, fmt: str) -> list[Spot]:
    """Every mutable spot of ``data`` read as format ``fmt`` (offsets from the layout module)."""
    if fmt == "input":
        return _spots(INPUT)
    if fmt == "predictions":
        size = PREDICTION_RECORD.size
        return [s for i in range(PROMPTS) for s in _spots(PREDICTION_FIELDS, i * size, f"records[{i}].")]
    if fmt != "checkpoint":
        raise ValueError(f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    lay = envelope_layout(string_lengths(data))
    out = _spots(lay.fields)
    learner = lay.fields["learner"]
    if learner.size == len(LEARNER):
        base = learner.offset + len(LEARNER_PREFIX)
        out += [Spot(f"learner.{n}", base + 4 * k, 4, "f32") for k, n in enumerate(LEARNER_NAMES)]
    field = ENVELOPE_HEAD["header_bytes"]
    hb = U64.unpack_from(data, field.offset)[0] if len(data) >= field.end else 0
    if not HEADER_BYTES.ok(hb) or hb < lay.header_length:  # the file's own, where the reader would take it
        hb = aligned_header_bytes(lay.header_length)
    out.append(Spot("padding", lay.header_length, max(hb - lay.header_length, 1), "padding"))
    return out + [Spot(name, chunk_offset(hb, i), CHUNK_BYTES, "plane") for i, name in enumerate(PLANE_NAMES)]


def field_names(fmt: str) -> set[str]:
    """The names of every spot of a canonical file of ``fmt``: what a complete mutator must reach
    (an empty file is laid out as a canonical one)."""
    return {s.name for s in spots(b"", fmt)}


def interesting_values(size: int, current: int | None = None) -> list[int]:
    """Interesting unsigned values that fit ``size`` bytes (plus ``current`` ± 1)."""
    top = (1 << (8 * size)) - 1
    out = [v for v in INTERESTING_INTS if v <= top]
    if current is not None:
        out += [v for v in (current - 1, current + 1) if 0 <= v <= top]
    return out


def _set_float(out: bytearray, at: int, rnd: random.Random) -> None:
    """A binary32 set one bit away (an ulp, a sign, an exponent bit), to random bits or a special value."""
    r = rnd.random()
    bits = (U32.unpack_from(out, at)[0] ^ (1 << rnd.randrange(32)) if r < 0.15
            else rnd.getrandbits(32) if r < 0.25 else rnd.choice(_FLOATS))
    U32.pack_into(out, at, bits)


def _replace_string(out: bytearray, spot: Spot, rnd: random.Random) -> None:
    """A contract string replaced with another (its length prefix follows), cut, grown or bit-flipped."""
    start, end = spot.offset - 4, spot.offset + spot.size
    current = bytes(out[spot.offset:end])
    r = rnd.random()
    if r < 0.3:
        new = rnd.choice(CONTRACT_VALUES)
    elif r < 0.5 and current:
        new = current[:rnd.randrange(len(current))]
    elif r < 0.65:
        new = current + bytes([rnd.getrandbits(8)])
    elif current:
        k = rnd.randrange(len(current))
        new = current[:k] + bytes([current[k] ^ (1 << rnd.randrange(8))]) + current[k + 1:]
    else:
        new = b"x"
    out[start:end] = U32.pack(len(new)) + new


def _mutate_spot(out: bytearray, spot: Spot, rnd: random.Random) -> None:
    kind, at = spot.kind, spot.offset
    if kind == "string":
        _replace_string(out, spot, rnd)
    elif at + spot.size > len(out) and kind not in ("plane", "padding", "pairs", "u32s"):
        return  # the field is not in this (short) file
    elif kind == "magic":
        out[at:at + 8] = rnd.choice(_MAGICS) if rnd.random() < 0.7 else bytes(rnd.getrandbits(8) for _ in range(8))
    elif kind in ("u32", "u64"):
        number = U32 if spot.size == 4 else U64
        values = interesting_values(spot.size, number.unpack_from(out, at)[0])
        number.pack_into(out, at, rnd.choice(values) if rnd.random() < 0.9 else rnd.getrandbits(8 * spot.size))
    elif kind == "f32":
        _set_float(out, at, rnd)
    elif kind == "tag":
        out[at:at + 4] = rnd.choice(_TAGS)
    elif kind == "digest":  # a bit flipped, zeros, or another SHA-256
        r = rnd.random()
        if r < 0.4:
            out[at + rnd.randrange(DIGEST_BYTES)] ^= 1 << rnd.randrange(8)
        else:
            out[at:at + DIGEST_BYTES] = bytes(DIGEST_BYTES) if r < 0.7 else hashlib.sha256(rnd.randbytes(1)).digest()
    elif kind == "padding":
        if (k := at + rnd.randrange(spot.size)) < len(out):
            out[k] = rnd.randrange(1, 1 << 8)
    elif kind == "plane":  # special binary32 values at the plane's first, last or a random index
        count = spot.size // 4
        for _ in range(rnd.randrange(1, 5)):
            r = rnd.random()
            i = 0 if r < 0.15 else count - 1 if r < 0.3 else rnd.randrange(count)
            if at + 4 * i + 4 <= len(out):
                _set_float(out, at + 4 * i, rnd)
    elif kind == "pairs":
        i = rnd.randrange(VOCABULARY)
        if at + 2 * i + 2 <= len(out):
            out[at + 2 * i + rnd.randrange(2)] = rnd.getrandbits(8)
    elif kind == "u32s":
        i = rnd.randrange(spot.size // 4)
        if at + 4 * i + 4 <= len(out):
            U32.pack_into(out, at + 4 * i, rnd.choice(interesting_values(4) + [rnd.getrandbits(8)] * 4))


def mutate_field(data: bytes, rnd: random.Random, fmt: str, name: str | None = None) -> tuple[bytes, str]:
    """``data`` with one spot (``name``, or one at random) overwritten; returns (bytes, the spot's name)."""
    table = spots(data, fmt)
    spot = rnd.choice(table) if name is None else next(s for s in table if s.name == name)
    out = bytearray(data)
    _mutate_spot(out, spot, rnd)
    return bytes(out), spot.name


def byte_mutation(data: bytearray, rnd: random.Random, op: str | None = None) -> None:
    """One blind byte-level edit of ``data`` in place."""
    op = op or rnd.choice(("flip", "set", "insert", "delete", "truncate", "extend", "duplicate"))
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
    """``data`` with 1–3 (or ``count``) mutations, a ``field_ratio`` share of them field-aware (in ``fmt``,
    default :func:`format_of`; only on spots named in ``only``); a checkpoint's digests are then refreshed
    with probability ``refresh``."""
    fmt = fmt or format_of(data)
    out = bytearray(data)
    for _ in range(count if count is not None else rnd.randrange(1, 4)):
        if fmt is not None and rnd.random() < field_ratio:
            if table := [s for s in spots(bytes(out), fmt) if only is None or s.name in only]:
                _mutate_spot(out, rnd.choice(table), rnd)
                continue
        byte_mutation(out, rnd)
    if fmt == "checkpoint" and refresh and rnd.random() < refresh:
        return refresh_digests(bytes(out))
    return bytes(out)


def mutate_canonical(data: bytes, rnd: random.Random, fmt: str | None = None) -> bytes:
    """``data`` mutated, mostly still a file the fast path recognizes (docs/fuzzing.md); others: :func:`mutate`."""
    fmt = fmt or format_of(data)
    if fmt == "checkpoint":
        names = ["step", *PLANE_NAMES]
        if rnd.random() < 0.2:
            names.append(rnd.choice(sorted(field_names("checkpoint") - set(names))))
        return refresh_digests(mutate(data, rnd, fmt, field_ratio=1.0, only=names))
    if fmt != "input" or len(data) < INPUT["prompt_words"].end:
        return mutate(data, rnd, fmt)
    out = bytearray(data)
    for _ in range(rnd.randrange(1, 4)):
        if rnd.random() < 0.6:
            i, byte, target = rnd.randrange(VOCABULARY), rnd.getrandbits(8), rnd.getrandbits(8)
            out[INPUT["pairs"].offset + 2 * i:INPUT["pairs"].offset + 2 * i + 2] = bytes((byte, target))
            U32.pack_into(out, INPUT["targets"].item(i), target)
        else:
            word = EMPTY_PROMPT if rnd.random() < 0.3 else rnd.getrandbits(8)
            U32.pack_into(out, INPUT["prompt_words"].item(rnd.randrange(PROMPTS)), word)
    return mutate(bytes(out), rnd, fmt, count=1) if rnd.random() < 0.2 else bytes(out)


def recognized(data: bytes, kind: str) -> bool:
    """Whether the fast path recognizes ``data`` (a checkpoint or an input record)."""
    from bob.formats import canonical, checkpoint

    return (checkpoint.recognize_checkpoint if kind == "checkpoint" else canonical.recognize_record)(data) is not None


def custom_mutator(fmt: str | None, engine_mutate: Callable[[bytes, int], bytes] | None = None,
                   canonical_bases: Sequence[bytes] = ()):
    """A libFuzzer custom mutator ``(data, max_size, seed) -> bytes`` mixing the engine's own (``engine_mutate``,
    e.g. ``atheris.Mutate``) and bob's; why ``canonical_bases``: docs/fuzzing.md, "The field-aware mutator"."""

    def mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rnd = random.Random(seed)
        kind = format_of(data) or fmt
        bases = [b for b in canonical_bases if format_of(b) == kind]
        r = rnd.random()
        if engine_mutate is not None and (r < 0.15 or kind is None):
            out = engine_mutate(data, max_size)
        elif r < 0.5 and kind in ("checkpoint", "input"):
            if bases and not recognized(data, kind):
                data = rnd.choice(bases)
            out = mutate_canonical(data, rnd, kind)
        elif r < 0.7 and kind in ("checkpoint", "input"):
            # A consistent change, from the input or, half the time, an accepted file;
            # now and then one field more, so a deep rule's neighbours are reached too.
            if bases and rnd.random() < 0.5:
                data = rnd.choice(bases)
            out = structural_mutate(data, rnd, kind)
            if rnd.random() < 0.25:
                out = mutate(out, rnd, kind, count=1, refresh=1.0)
        else:
            if (size := FIXED_SIZES.get(kind or "")) is not None and len(data) != size and rnd.random() < 0.5:
                # The corpus drifts to short inputs, where no field lies: give the field-aware
                # edits a file of the format's size again.
                sized = [b for b in canonical_bases if len(b) == size] or [bytes(size)]
                data = data[:size] + rnd.choice(sized)[len(data):]
            out = mutate(data, rnd, kind, refresh=0.5)
        return out[:max_size]

    return mutator


def random_bytes_strategy(prefixes: tuple[bytes, ...] = (b"", INPUT_MAGIC, CHECKPOINT_MAGIC), max_size: int = 2048):
    """Hypothesis: random bytes, sometimes starting with a bob magic (so they get past it)."""
    from hypothesis import strategies as st

    return st.builds(lambda p, tail: p + tail, st.sampled_from(prefixes), st.binary(max_size=max_size))


def mutated_strategy(seeds: list[bytes], *, field_aware: bool = True, max_ops: int = 3):
    """Hypothesis: mutations of the given valid files (field-aware in each one's format)."""
    from hypothesis import strategies as st

    prepared = [(seed, format_of(seed) if field_aware else None) for seed in seeds]
    return st.builds(lambda pair, seed, count: mutate(pair[0], random.Random(seed), pair[1], count=count),
                     st.sampled_from(prepared), st.integers(0, 2**32 - 1), st.integers(1, max_ops))
