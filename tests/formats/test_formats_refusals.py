"""One test per refusal rule of contract §3, §4 and §5, each on hand-made bytes.

The bytes are made here with ``struct`` and ``hashlib`` (not with bob's
builders), so a builder and a reader that agree on a mistake cannot hide it.
Each test asserts the error class and ``.field`` (and ``.index``/``.offset``
where they apply).
"""

from __future__ import annotations

import hashlib
import math
import os
import struct

import numpy as np
import pytest

import bob
from bob import (
    BadValue,
    ContractMismatch,
    FormatError,
    IntegrityError,
    NotABobFile,
    StateRefused,
    Truncated,
)

# --------------------------------------------------------------------------- #
# Hand-made bytes
# --------------------------------------------------------------------------- #

STATE = b"bob-raw-pmv-f32-v1|parameter-order:p-then-m-then-v|payload=786432"
LEARNER = b"softmax-cross-entropy-mean|adamw|" + bytes.fromhex("cdcc4c3d6666663f77be7f3f77cc2b320ad7233c")
DATA = b"raw-byte-sequence|vocabulary=256|prompts=3|record=1564"
SEED = b"bob-seed-v1"
CHUNK = 262_144
TAGS = (b"P\0\0\0", b"M\0\0\0", b"V\0\0\0")


def record(pairs=None, targets=None, words=(97, 100, 0xFFFFFFFF), version=1, magic=b"BOB-INPT") -> bytes:
    """A bob-input record, by hand. Pairs default to the cyclic corpus ``abracadabra``."""
    corpus = b"abracadabra"
    if pairs is None:
        pairs = [(corpus[k % 11], corpus[(k + 1) % 11]) for k in range(256)]
    if targets is None:
        targets = [t for _, t in pairs]
    out = magic + struct.pack("<Q", version)
    out += b"".join(struct.pack("<BB", c, t) for c, t in pairs)
    out += struct.pack("<256I", *targets)
    out += struct.pack("<3I", *words)
    return out


def planes(step_zero: bool = False):
    i = np.arange(65536, dtype=np.float32)
    p = ((i % 97) - 48.0).astype(np.float32) * np.float32(0.001)
    if step_zero:
        return p, np.zeros(65536, np.float32), np.zeros(65536, np.float32)
    m = ((i % 13) - 6.0).astype(np.float32) * np.float32(1e-4)
    v = (i % 7).astype(np.float32) * np.float32(1e-6)
    return p, m, v


def lp(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def envelope(
    step=10,
    P=None, M=None, V=None,
    *,
    header_bytes=None,
    magic=b"BOB-CKPT",
    version=1,
    strings=(STATE, LEARNER, DATA, SEED),
    sizes=(786_432, CHUNK, 10),
    chunk_count=3,
    tags=TAGS,
    offsets=None,
    lengths=None,
    digests=None,
    header_digest=None,
    pad=b"",
) -> bytes:
    """A checkpoint file, by hand (contract §5 table)."""
    if P is None:
        P, M, V = planes(step_zero=(step == 0))
    blobs = [np.asarray(a, dtype="<f4").tobytes() for a in (P, M, V)]
    head_len = 32 + sum(4 + len(s) for s in strings) + 24 + 4 + 156 + 32
    hb = header_bytes if header_bytes is not None else (head_len + 63) // 64 * 64
    offsets = offsets or [hb + i * CHUNK for i in range(3)]
    lengths = lengths or [CHUNK] * 3
    digests = digests or [hashlib.sha256(b).digest() for b in blobs]
    body = magic + struct.pack("<QQQ", version, hb, step)
    body += b"".join(lp(s) for s in strings)
    body += struct.pack("<QQQI", *sizes, chunk_count)
    for i in range(3):
        body += tags[i] + struct.pack("<QQ", offsets[i], lengths[i]) + digests[i]
    digest = header_digest if header_digest is not None else hashlib.sha256(body).digest()
    header = body + digest
    padding = pad + bytes(max(0, hb - len(header) - len(pad)))
    return header + padding + b"".join(blobs)


def patched(data: bytes, offset: int, fmt: str, *values) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, offset, *values)
    return bytes(out)


def refit_header_digest(data: bytes, header_len: int = 447) -> bytes:
    out = bytearray(data)
    out[header_len - 32:header_len] = hashlib.sha256(out[:header_len - 32]).digest()
    return bytes(out)


def refused(load, data, cls, field, *, index=None, offset=None, **kw):
    with pytest.raises(cls) as info:
        load(data, **kw)
    err = info.value
    assert type(err) is cls, repr(err)
    assert err.field == field, repr(err)
    if index is not None:
        assert err.index == index, repr(err)
    if offset is not None:
        assert err.offset == offset, repr(err)
    assert isinstance(err, FormatError) and isinstance(err, ValueError)
    assert "\n" not in str(err) and str(err).startswith(field.split(".")[0])
    return err


GOOD_RECORD = record()
GOOD_ENVELOPE = envelope()


def test_hand_made_files_are_accepted():
    rec = bob.load_input(GOOD_RECORD)
    assert rec.prompt_words == (97, 100, 0xFFFFFFFF)
    ck = bob.load_checkpoint(GOOD_ENVELOPE)
    assert ck.step == 10 and ck.header_bytes == 448 and len(GOOD_ENVELOPE) == 786_880
    assert ck.to_bytes() == GOOD_ENVELOPE
    assert bob.load_predictions(struct.pack("<6I", 99, 1, 97, 1, 0, 0)).tokens == (99, 97, 0)


# --------------------------------------------------------------------------- #
# §3 input record
# --------------------------------------------------------------------------- #


def test_input_wrong_magic():
    err = refused(bob.load_input, record(magic=b"BOB-INPX"), NotABobFile, "magic", offset=0)
    assert err.expected == b"BOB-INPT" and err.actual == b"BOB-INPX"


def test_input_non_bob_file_is_named_not_a_bad_length():
    refused(bob.load_input, b"hello, world\n", NotABobFile, "magic")


def test_input_given_a_checkpoint_says_so():
    err = refused(bob.load_input, GOOD_ENVELOPE, NotABobFile, "magic")
    assert "checkpoint" in str(err)


def test_input_magic_before_size():
    refused(bob.load_input, b"BOB", Truncated, "file_size")
    refused(bob.load_input, b"", Truncated, "file_size")
    refused(bob.load_input, b"XOB-INPT" + bytes(100), NotABobFile, "magic")


@pytest.mark.parametrize("size", [8, 1563, 1565, 3128])
def test_input_length_other_than_1564(size):
    data = (GOOD_RECORD * 3)[:size]
    err = refused(bob.load_input, data, Truncated, "file_size")
    assert err.expected == 1564 and err.actual == size


@pytest.mark.parametrize("version", [0, 2, 1 << 63])
def test_input_version_not_1(version):
    err = refused(bob.load_input, record(version=version), BadValue, "version", offset=8)
    assert err.expected == 1 and err.actual == version


def test_input_target_differs_from_pair():
    good = record()
    targets = [t for _, t in [(0, b) for b in struct.unpack_from("<256I", good, 528)]]
    targets[5] = 0x7A
    targets[200] = 0x161  # the right byte, widened wrongly
    data = record(targets=targets)
    err = refused(bob.load_input, data, BadValue, "targets", index=5, offset=528 + 20)
    assert err.actual == 0x7A
    findings = bob.input_findings(data)
    assert [(f.field, f.index) for f in findings] == [("targets", 5), ("targets", 200)]


@pytest.mark.parametrize("word", [256, 0xFFFFFFFE, 0x100000FF])
def test_input_prompt_word_out_of_range(word):
    err = refused(bob.load_input, record(words=(97, word, 0)), BadValue, "prompt_words", index=1, offset=1556)
    assert err.actual == word


@pytest.mark.parametrize("words", [(0, 255, 0xFFFFFFFF), (0xFFFFFFFF,) * 3])
def test_input_prompt_words_allowed(words):
    assert bob.load_input(record(words=words)).prompt_words == words


def test_fixture_builder_refuses_short_corpus():
    for corpus in (b"", b"a"):
        err = refused(bob.build_input, corpus, BadValue, "corpus", prompts=[b"", b"", b""])
        assert "2" in str(err)


@pytest.mark.parametrize("count", [0, 2, 4])
def test_fixture_builder_refuses_prompt_count(count):
    err = refused(bob.build_input, b"ab", BadValue, "prompts", prompts=[b"x"] * count)
    assert err.actual == count


# --------------------------------------------------------------------------- #
# §4 predictions
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("size", [0, 8, 23, 25, 48])
def test_predictions_length_other_than_24(size):
    err = refused(bob.load_predictions, bytes(size), Truncated, "file_size")
    assert err.expected == 24 and err.actual == size


def test_predictions_given_an_input_record_says_so():
    err = refused(bob.load_predictions, GOOD_RECORD, Truncated, "file_size")
    assert "input record" in str(err)


@pytest.mark.parametrize("validity", [2, 0xFFFFFFFF])
def test_predictions_validity_not_0_or_1(validity):
    data = struct.pack("<6I", 99, 1, 97, validity, 0, 0)
    refused(bob.load_predictions, data, BadValue, "validity", index=1, offset=12)


@pytest.mark.parametrize("token", [256, 0xFFFFFFFF])
def test_predictions_token_not_a_byte(token):
    data = struct.pack("<6I", 99, 1, 97, 1, token, 1)
    refused(bob.load_predictions, data, BadValue, "token", index=2, offset=16)


def test_predictions_nonzero_token_with_validity_0():
    data = struct.pack("<6I", 99, 0, 0, 0, 0, 0)
    err = refused(bob.load_predictions, data, BadValue, "token", index=0, offset=0)
    assert err.expected == 0 and err.actual == 99


def test_predictions_all_findings_in_order():
    data = struct.pack("<6I", 300, 0, 5, 7, 3, 0)
    got = [(type(f).__name__, f.field, f.index) for f in bob.predictions_findings(data)]
    assert got == [("BadValue", "token", 0), ("BadValue", "validity", 1), ("BadValue", "token", 2)]


# --------------------------------------------------------------------------- #
# §5 envelope: before the header is parsed
# --------------------------------------------------------------------------- #


def test_envelope_wrong_magic():
    refused(bob.load_checkpoint, envelope(magic=b"BOB-CKPX"), NotABobFile, "magic", offset=0)


def test_envelope_non_bob_file_is_named_not_a_bad_length():
    refused(bob.load_checkpoint, b"#!/bin/sh\necho hi\n", NotABobFile, "magic")
    refused(bob.load_checkpoint, os.urandom(2_000_000), NotABobFile, "magic")


def test_envelope_given_an_input_record_says_so():
    err = refused(bob.load_checkpoint, GOOD_RECORD, NotABobFile, "magic")
    assert "input record" in str(err)


def test_envelope_shorter_than_magic():
    refused(bob.load_checkpoint, b"BOB-C", Truncated, "file_size")


def test_envelope_larger_than_any_checkpoint():
    data = GOOD_ENVELOPE + bytes(65_536 + 786_432 + 1 - len(GOOD_ENVELOPE))
    err = refused(bob.load_checkpoint, data, Truncated, "file_size")
    assert err.actual == 65_536 + 786_432 + 1


@pytest.mark.parametrize("version", [0, 2])
def test_envelope_version_not_1(version):
    err = refused(bob.load_checkpoint, envelope(version=version), BadValue, "version", offset=8)
    assert err.actual == version


def test_envelope_version_checked_before_length_prefixes():
    data = patched(envelope(version=2), 32, "<I", 0xFFFFFFFF)
    refused(bob.load_checkpoint, data, BadValue, "version")


@pytest.mark.parametrize("hb", [450, 480, 65_536 + 64])
def test_envelope_header_bytes_not_multiple_of_64_or_too_large(hb):
    data = patched(GOOD_ENVELOPE, 16, "<Q", hb)
    err = refused(bob.load_checkpoint, data, BadValue, "header_bytes", offset=16)
    assert err.actual == hb


@pytest.mark.parametrize("hb", [0, 64, 384])
def test_envelope_header_bytes_smaller_than_header(hb):
    data = patched(GOOD_ENVELOPE, 16, "<Q", hb)
    err = refused(bob.load_checkpoint, data, BadValue, "header_bytes", offset=16)
    assert err.actual == hb


def test_envelope_length_prefix_beyond_the_remaining_bytes():
    data = patched(GOOD_ENVELOPE, 32, "<I", 1_000_000)
    err = refused(bob.load_checkpoint, data, Truncated, "state", offset=32)
    assert err.actual == 1_000_000 and "remain" in str(err)


def test_envelope_length_prefix_beyond_4096():
    long_seed = b"s" * 4097  # the file holds all of it: only the limit refuses it
    data = envelope(strings=(STATE, LEARNER, DATA, long_seed))
    err = refused(bob.load_checkpoint, data, Truncated, "seed", offset=216)
    assert err.actual == 4097 and "4096" in str(err)


def test_envelope_length_prefix_of_4096_is_read_and_compared():
    data = envelope(strings=(STATE, LEARNER, DATA, b"s" * 4096))
    refused(bob.load_checkpoint, data, ContractMismatch, "seed", offset=216)


def test_envelope_file_ends_inside_a_header_field():
    refused(bob.load_checkpoint, GOOD_ENVELOPE[:20], Truncated, "header_bytes", offset=16)
    refused(bob.load_checkpoint, GOOD_ENVELOPE[:240], Truncated, "chunk_bytes", offset=239)
    refused(bob.load_checkpoint, GOOD_ENVELOPE[:350], Truncated, "chunk_table.digest", index=1, offset=331)
    refused(bob.load_checkpoint, GOOD_ENVELOPE[:420], Truncated, "header_digest", offset=415)


def test_envelope_header_digest():
    data = patched(GOOD_ENVELOPE, 415, "<B", GOOD_ENVELOPE[415] ^ 1)
    err = refused(bob.load_checkpoint, data, IntegrityError, "header_digest", offset=415)
    assert err.expected == hashlib.sha256(GOOD_ENVELOPE[:415]).digest()


# --------------------------------------------------------------------------- #
# §5 envelope: contract fields (§2)
# --------------------------------------------------------------------------- #

LEARNER_01 = b"softmax-cross-entropy-mean|adamw|" + struct.pack("<5f", 0.1, 0.9, 0.999, 1e-8, 0.01)
CONTRACT_CASES = {
    "state": dict(strings=(STATE.replace(b"v1", b"v2"), LEARNER, DATA, SEED)),
    "learner": dict(strings=(STATE, LEARNER_01, DATA, SEED)),
    "data": dict(strings=(STATE, LEARNER, b"raw-byte-sequence|vocabulary=128|prompts=3|record=1564", SEED)),
    "seed": dict(strings=(STATE, LEARNER, DATA, b"bob-seed-v2")),
    "payload_bytes": dict(sizes=(786_436, CHUNK, 10)),
    "chunk_bytes": dict(sizes=(786_432, 131_072, 10)),
    "updates_per_invocation": dict(sizes=(786_432, CHUNK, 20)),
}


@pytest.mark.parametrize("field", list(CONTRACT_CASES))
def test_envelope_contract_field_mismatch(field):
    err = refused(bob.load_checkpoint, envelope(**CONTRACT_CASES[field]), ContractMismatch, field)
    assert err.expected is not None and err.actual is not None and err.expected != err.actual


def test_envelope_learner_mismatch_shows_the_floats():
    err = refused(bob.load_checkpoint, envelope(strings=(STATE, LEARNER_01, DATA, SEED)),
                  ContractMismatch, "learner", offset=101)
    text = str(err)
    assert "lr=0.05" in text and "lr=0.1," in text and "beta2=0.999" in text and "eps=1e-08" in text
    assert err.expected == LEARNER and err.actual == LEARNER_01


def test_envelope_contract_strings_of_other_lengths_are_named():
    err = refused(bob.load_checkpoint, envelope(strings=(STATE, LEARNER, DATA, b"bob-seed-v10")),
                  ContractMismatch, "seed")
    assert '"bob-seed-v10"' in str(err)


# --------------------------------------------------------------------------- #
# §5 envelope: chunk table, padding, size, chunk digests
# --------------------------------------------------------------------------- #


def test_envelope_chunk_count_not_3():
    refused(bob.load_checkpoint, envelope(chunk_count=4), BadValue, "chunk_count", offset=255)


def test_envelope_chunk_tags_not_p_m_v():
    data = envelope(tags=(b"P\0\0\0", b"V\0\0\0", b"M\0\0\0"))
    refused(bob.load_checkpoint, data, BadValue, "chunk_table.tag", index=1, offset=311)


def test_envelope_chunk_offset_wrong():
    data = envelope(offsets=[448, 448 + CHUNK, 448 + CHUNK])
    refused(bob.load_checkpoint, data, BadValue, "chunk_table.offset", index=2, offset=367)


def test_envelope_chunk_length_wrong():
    data = envelope(lengths=[CHUNK, CHUNK - 4, CHUNK])
    refused(bob.load_checkpoint, data, BadValue, "chunk_table.length", index=1, offset=323)


def test_envelope_padding_not_zero():
    data = envelope(pad=b"\x01")
    err = refused(bob.load_checkpoint, data, BadValue, "padding", offset=447)
    assert err.actual == 1


def test_envelope_padding_not_zero_in_a_larger_header():
    data = envelope(header_bytes=512, pad=bytes(40) + b"\x20")
    refused(bob.load_checkpoint, data, BadValue, "padding", offset=487, index=40)


@pytest.mark.parametrize("delta", [-1, +1, -262_144])
def test_envelope_file_size_not_header_plus_payload(delta):
    data = GOOD_ENVELOPE[:delta] if delta < 0 else GOOD_ENVELOPE + b"\0"
    err = refused(bob.load_checkpoint, data, Truncated, "file_size")
    assert err.expected == 786_880 and err.actual == 786_880 + delta


@pytest.mark.parametrize("plane", [0, 1, 2])
def test_envelope_chunk_digest(plane):
    offset = 448 + plane * CHUNK + 1000
    data = patched(GOOD_ENVELOPE, offset, "<B", GOOD_ENVELOPE[offset] ^ 0x10)
    err = refused(bob.load_checkpoint, data, IntegrityError, "chunk_table.digest", index=plane,
                  offset=259 + 52 * plane + 20)
    assert "PMV"[plane] in str(err)


# --------------------------------------------------------------------------- #
# §5 envelope: state, for resuming
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("plane", [0, 1, 2])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_envelope_non_finite_value(plane, value):
    arrays = list(planes())
    arrays[plane] = arrays[plane].copy()
    arrays[plane][258] = value  # context 1, next 2
    data = envelope(10, *arrays)
    err = refused(bob.load_checkpoint, data, StateRefused, "PMV"[plane], index=258,
                  offset=448 + plane * CHUNK + 4 * 258)
    assert "context 1, next 2" in str(err)
    assert bob.load_checkpoint(data, for_resume=False).step == 10  # an inspector can load it


def test_envelope_negative_v():
    p, m, v = planes()
    v = v.copy()
    v[7] = -1e-9
    err = refused(bob.load_checkpoint, envelope(10, p, m, v), StateRefused, "V", index=7)
    assert err.actual == pytest.approx(-1e-9)


def test_envelope_negative_zero_v_is_not_negative():
    p, m, v = planes()
    v = v.copy()
    v[7] = -0.0
    assert bob.load_checkpoint(envelope(10, p, m, v)).step == 10


@pytest.mark.parametrize("plane", [1, 2])
def test_envelope_step_0_with_moments(plane):
    arrays = list(planes(step_zero=True))
    arrays[plane] = arrays[plane].copy()
    arrays[plane][99] = 1e-6
    refused(bob.load_checkpoint, envelope(0, *arrays), StateRefused, "step", offset=24)


def test_envelope_step_0_with_zero_moments_is_fine():
    p, m, v = planes(step_zero=True)
    m = m.copy()
    m[3] = -0.0
    assert bob.load_checkpoint(envelope(0, p, m, v)).step == 0


def test_envelope_step_without_room_for_10_updates():
    last = (1 << 64) - 1 - 10
    assert bob.load_checkpoint(envelope(last)).step == last
    err = refused(bob.load_checkpoint, envelope(last + 1), StateRefused, "step", offset=24)
    assert err.actual == last + 1
    assert bob.load_checkpoint(envelope(last + 1), for_resume=False).step == last + 1


# --------------------------------------------------------------------------- #
# Several findings, in the contract's order
# --------------------------------------------------------------------------- #


def test_wrong_learner_and_damaged_v_are_two_findings():
    data = bytearray(envelope(strings=(STATE, LEARNER_01, DATA, SEED)))
    data[448 + 2 * CHUNK + 5] ^= 0xFF
    findings = bob.checkpoint_findings(bytes(data))
    assert [(type(f), f.field, f.index) for f in findings] == [
        (ContractMismatch, "learner", None),
        (IntegrityError, "chunk_table.digest", 2),
    ]
    with pytest.raises(ContractMismatch):
        bob.load_checkpoint(bytes(data))


def test_findings_follow_the_contract_order():
    p, m, v = planes()
    v = v.copy()
    v[0] = math.nan
    data = envelope(10, p, m, v, strings=(STATE, LEARNER, DATA, b"bob-seed-v0"),
                    tags=(b"P\0\0\0", b"M\0\0\0", b"W\0\0\0"), pad=b"!")
    data = patched(data, 415, "<B", data[415] ^ 1) + b"\0"  # header digest, then one byte too many
    got = [(type(f).__name__, f.field) for f in bob.checkpoint_findings(data)]
    assert got == [
        ("IntegrityError", "header_digest"),
        ("ContractMismatch", "seed"),
        ("BadValue", "chunk_table.tag"),
        ("BadValue", "padding"),
        ("Truncated", "file_size"),
        ("StateRefused", "V"),
    ]
    assert [f.field for f in bob.checkpoint_findings(data, for_resume=False)][-1] == "file_size"


def test_payload_size_mismatch_stops_after_the_contract_fields():
    data = envelope(sizes=(786_436, CHUNK, 11))
    got = [f.field for f in bob.checkpoint_findings(data)]
    assert got == ["payload_bytes", "updates_per_invocation"]


def test_larger_header_bytes_is_accepted_and_reserializes():
    data = envelope(header_bytes=65_536)
    ck = bob.load_checkpoint(data)
    assert ck.header_bytes == 65_536 and ck.to_bytes() == data
    assert len(ck.to_bytes(header_bytes=448)) == 786_880


# --------------------------------------------------------------------------- #
# Files
# --------------------------------------------------------------------------- #


def test_checkpoint_file_too_large_is_refused_unread(tmp_path):
    path = tmp_path / "big.ckpt"
    with open(path, "wb") as f:
        f.write(b"BOB-CKPT")
        f.truncate(100_000_000)  # sparse: reading it whole would be a bug
    refused(bob.read_checkpoint_file, path, Truncated, "file_size")


def test_checkpoint_file_too_large_and_not_bob(tmp_path):
    path = tmp_path / "movie.mp4"
    with open(path, "wb") as f:
        f.write(b"\0\0\0\x20ftypisom")
        f.truncate(10_000_000)
    refused(bob.read_checkpoint_file, path, NotABobFile, "magic")


def test_input_file_too_large(tmp_path):
    path = tmp_path / "in.rec"
    path.write_bytes(GOOD_RECORD + b"\0")
    refused(bob.read_input_file, path, Truncated, "file_size")
    path.write_bytes(GOOD_RECORD)
    assert bob.read_input_file(path) == bob.load_input(GOOD_RECORD)


def test_predictions_file_too_large(tmp_path):
    path = tmp_path / "p.bin"
    path.write_bytes(bytes(25))
    refused(bob.read_predictions_file, path, Truncated, "file_size")
    path.write_bytes(bytes(24))
    assert bob.read_predictions_file(path).records == ((0, 0),) * 3


def test_checkpoint_file_bad_is_refused(tmp_path):
    path = tmp_path / "c.ckpt"
    path.write_bytes(GOOD_ENVELOPE[:-1])
    refused(bob.read_checkpoint_file, path, Truncated, "file_size")
    path.write_bytes(GOOD_ENVELOPE)
    assert bob.read_checkpoint_file(path).step == 10
