"""Whole refusal objects (issue 13): for one case of each kind, every field
of ``FormatError.to_dict()`` — what ``--json`` prints and a program reads —
is checked, not only the field name. Offsets are worked out by hand from
the layout: P[k] at 448 + 4k, V[k] at 448 + 2 * 262,144 + 4k, the step at 24."""

from __future__ import annotations

import numpy as np
import pytest

import bob
from bob.formats import checkpoint
from conftest import CORPUS, PROMPTS


def refusal(call) -> dict:
    with pytest.raises(bob.FormatError) as info:
        call()
    return info.value.to_dict()


@pytest.fixture(scope="module")
def trained() -> bob.Checkpoint:
    return bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint


def raw(step: int, ck: bob.Checkpoint) -> bytes:
    """A well-sealed canonical file, whatever its state (the library would refuse to build it)."""
    return bytes(checkpoint.build_checkpoint(step, b"".join(a.astype("<f4").tobytes() for a in (ck.p, ck.m, ck.v))))


def test_predictions_refusals() -> None:
    assert refusal(lambda: bob.Predictions([(1, 1)] * 5)) == {
        "error": "BadValue", "kind": "bad-value", "field": "records", "index": None, "offset": None,
        "message": "there is one record per prompt", "expected": 3, "actual": 5,
        "text": "records: there is one record per prompt (expected 3, got 5)"}
    for record, field, value in (((-1, 1), "token", -1), ((1, -2), "validity", -2)):
        assert refusal(lambda: bob.Predictions([(0, 0), record, (0, 0)])) == {
            "error": "BadValue", "kind": "bad-value", "field": field, "index": 1, "offset": None,
            "message": "values are u32", "expected": None, "actual": value,
            "text": f"{field}[1]: values are u32 (got {value})"}
    assert bob.Predictions([(99, 1), (0, 0), (0, 0)]).records == ((99, 1), (0, 0), (0, 0))


def test_state_refusals(trained: bob.Checkpoint) -> None:
    ck = trained.copy()
    ck.p[5] = np.inf
    assert refusal(lambda: bob.load_checkpoint(raw(10, ck))) == {
        "error": "StateRefused", "kind": "state-refused", "field": "P", "index": 5, "offset": 468,
        "message": "1 non-finite value(s) in plane P; the first at context 0, next 5",
        "expected": "finite", "actual": "inf",
        "text": "P[5] at offset 468: 1 non-finite value(s) in plane P; the first at context 0, next 5 "
                "(expected finite, got inf)"}
    ck = trained.copy()
    ck.v[6] = -0.1  # an f32: -0.10000000149011612 as a float64, shown as the tables show it
    assert refusal(lambda: bob.load_checkpoint(raw(10, ck))) == {
        "error": "StateRefused", "kind": "state-refused", "field": "V", "index": 6, "offset": 524_760,
        "message": "1 negative value(s) in plane V (a second moment is never negative); the first at context 0, "
                   "next 6",
        "expected": ">= 0", "actual": -0.1,
        "text": "V[6] at offset 524760: 1 negative value(s) in plane V (a second moment is never negative); "
                "the first at context 0, next 6 (expected >= 0, got -0.1)"}
    ck = trained.copy()
    ck.m[:] = 0
    ck.v[:] = 0
    ck.v[9] = 1e-30
    assert refusal(lambda: bob.load_checkpoint(raw(0, ck))) == {
        "error": "StateRefused", "kind": "state-refused", "field": "step", "index": None, "offset": 24,
        "message": "step is 0 but plane V is not all zero (1 non-zero value(s); the first at context 0, next 9)",
        "expected": "V all zero at step 0", "actual": 0,
        "text": "step at offset 24: step is 0 but plane V is not all zero (1 non-zero value(s); the first at "
                "context 0, next 9) (expected V all zero at step 0, got 0)"}


def test_a_checkpoint_object_for_another_contract_is_refused_by_invoke(trained: bob.Checkpoint) -> None:
    other = bob.Checkpoint(trained.step, trained.p, trained.m, trained.v, contract=bob.Contract(seed=b"bob-seed-v2"))
    assert refusal(lambda: bob.invoke(bob.build_input(CORPUS, PROMPTS), other)) == {
        "error": "ContractMismatch", "kind": "contract-mismatch", "field": "seed", "index": None, "offset": None,
        "message": "differs from the bob v1 contract", "expected": '"bob-seed-v1"', "actual": '"bob-seed-v2"',
        "text": 'seed: differs from the bob v1 contract (expected "bob-seed-v1", got "bob-seed-v2")'}


def test_a_length_prefix_past_the_end_of_the_file() -> None:
    """The state string's prefix (65, at offset 32) in a file cut to 60 bytes: 24 remain after it."""
    cut = bob.Checkpoint.fresh().to_bytes()[:60]
    assert refusal(lambda: bob.load_checkpoint(cut)) == {
        "error": "Truncated", "kind": "truncated", "field": "state", "index": None, "offset": 32,
        "message": "length prefix runs past the end of the file (24 bytes remain after it)",
        "expected": "at most 24", "actual": 65,
        "text": "state at offset 32: length prefix runs past the end of the file (24 bytes remain after it) "
                "(expected at most 24, got 65)"}


def test_input_and_predictions_file_refusals() -> None:
    import struct

    record = bytearray(bob.build_input(CORPUS, PROMPTS).to_bytes())
    record[1556:1560] = struct.pack("<I", 256)  # prompt word 1 (words start at 1,552)
    assert refusal(lambda: bob.load_input(bytes(record))) == {
        "error": "BadValue", "kind": "bad-value", "field": "prompt_words", "index": 1, "offset": 1556,
        "message": "a prompt word is a byte (< 256) or 0xFFFFFFFF for an empty prompt",
        "expected": "< 256 or 0xffffffff", "actual": 256,
        "text": "prompt_words[1] at offset 1556: a prompt word is a byte (< 256) or 0xFFFFFFFF for an empty "
                "prompt (expected < 256 or 0xffffffff, got 256)"}
    good = bytes.fromhex("630000000100000061000000010000000000000000000000")
    for at, value, field, message, expected in ((12, 2, "validity", "validity is 0 or 1", "0 or 1"),
                                                (8, 256, "token", "a token is a byte (< 256)", "< 256")):
        data = bytearray(good)
        data[at:at + 4] = struct.pack("<I", value)
        assert refusal(lambda: bob.load_predictions(bytes(data))) == {
            "error": "BadValue", "kind": "bad-value", "field": field, "index": 1, "offset": at,
            "message": message, "expected": expected, "actual": value,
            "text": f"{field}[1] at offset {at}: {message} (expected {expected}, got {value})"}


def test_a_loaded_record_is_read_only() -> None:
    record = bob.load_input(bob.build_input(CORPUS, PROMPTS).to_bytes())
    for array in (record.contexts, record.targets):
        with pytest.raises(ValueError):
            array[0] = 1


def resealed(data: bytearray) -> bytes:
    """A canonical header with its digest recomputed (bytes 415..447 hold SHA-256 of 0..414)."""
    import hashlib

    data[415:447] = hashlib.sha256(bytes(data[:415])).digest()
    return bytes(data)


def test_chunk_table_refusals() -> None:
    import struct

    from bob.formats.checkpoint import examine
    from bob.formats.layout import CANONICAL

    fresh = bob.Checkpoint.fresh().to_bytes()

    def findings(offset: int, raw: bytes) -> list[dict]:
        data = bytearray(fresh)
        data[offset:offset + len(raw)] = raw
        return [f.to_dict() for f in examine(resealed(data), for_resume=False).findings]

    assert findings(CANONICAL.chunk_field(1, "tag").offset, b"Q") == [{
        "error": "BadValue", "kind": "bad-value", "field": "chunk_table.tag", "index": 1, "offset": 311,
        "message": "chunk 1 is plane M", "expected": '"M\\x00\\x00\\x00"', "actual": '"Q\\x00\\x00\\x00"',
        "text": 'chunk_table[1].tag at offset 311: chunk 1 is plane M (expected "M\\x00\\x00\\x00", got '
                '"Q\\x00\\x00\\x00")'}]
    assert findings(CANONICAL.chunk_field(0, "offset").offset, struct.pack("<Q", 449)) == [{
        "error": "BadValue", "kind": "bad-value", "field": "chunk_table.offset", "index": 0, "offset": 263,
        "message": "chunk i starts at header_bytes + i * chunk_bytes", "expected": 448, "actual": 449,
        "text": "chunk_table[0].offset at offset 263: chunk i starts at header_bytes + i * chunk_bytes "
                "(expected 448, got 449)"}]
    assert findings(CANONICAL.chunk_field(2, "length").offset, struct.pack("<Q", 5)) == [{
        "error": "BadValue", "kind": "bad-value", "field": "chunk_table.length", "index": 2, "offset": 375,
        "message": "each chunk is chunk_bytes long", "expected": 262144, "actual": 5,
        "text": "chunk_table[2].length at offset 375: each chunk is chunk_bytes long (expected 262144, got 5)"}]
    for count in (2, 4):
        assert findings(CANONICAL.fields["chunk_count"].offset, struct.pack("<I", count)) == [{
            "error": "BadValue", "kind": "bad-value", "field": "chunk_count", "index": None, "offset": 255,
            "message": "there is one chunk per plane", "expected": 3, "actual": count,
            "text": f"chunk_count at offset 255: there is one chunk per plane (expected 3, got {count})"}]
    # A payload size other than v1's makes the chunk table meaningless: it is not checked at all.
    data = bytearray(fresh)
    at = CANONICAL.fields["payload_bytes"].offset
    data[at:at + 8] = struct.pack("<Q", 786_431)
    data[311:312] = b"Q"
    assert [f.field for f in examine(resealed(data), for_resume=False).findings] == ["payload_bytes"]


def test_building_a_checkpoint_with_impossible_numbers() -> None:
    z = bob.Checkpoint.fresh()
    assert refusal(lambda: bob.Checkpoint(-1, z.p, z.m, z.v)) == {
        "error": "BadValue", "kind": "bad-value", "field": "step", "index": None, "offset": None,
        "message": "the step is an integer from 0 to 2**64 - 1", "expected": None, "actual": -1,
        "text": "step: the step is an integer from 0 to 2**64 - 1 (got -1)"}
    assert refusal(lambda: bob.Checkpoint(0, z.p, z.m.astype(np.complex64), z.v)) == {
        "error": "BadValue", "kind": "bad-value", "field": "M", "index": None, "offset": None,
        "message": "a plane holds float32 values", "expected": None, "actual": "dtype complex64",
        "text": "M: a plane holds float32 values (got dtype complex64)"}
    assert refusal(lambda: bob.Checkpoint(0, z.p, z.m, z.v, header_bytes="x")) == {
        "error": "BadValue", "kind": "bad-value", "field": "header_bytes", "index": None, "offset": None,
        "message": "header_bytes is an integer", "expected": None, "actual": "str 'x'",
        "text": "header_bytes: header_bytes is an integer (got str 'x')"}
    assert refusal(lambda: bob.Checkpoint(0, z.p, z.m, z.v, header_bytes=100)) == {
        "error": "BadValue", "kind": "bad-value", "field": "header_bytes", "index": None, "offset": None,
        "message": "a multiple of 64, at least the header's 447 bytes, at most 65536", "expected": None,
        "actual": 100,
        "text": "header_bytes: a multiple of 64, at least the header's 447 bytes, at most 65536 (got 100)"}


def test_digest_refusals(trained: bob.Checkpoint) -> None:
    """A flipped byte in plane V (payload byte 2 * 262,144 + 7) and in the header digest (bytes 415..446)."""
    good = trained.to_bytes()
    stored_v = good[383:415].hex()  # chunk 2's digest in the table
    data = bytearray(good)
    data[448 + 2 * 262_144 + 7] ^= 1
    [found] = [f.to_dict() for f in bob.checkpoint_findings(bytes(data))]
    import hashlib

    computed_v = hashlib.sha256(bytes(data[448 + 2 * 262_144:])).hexdigest()
    # expected: what the bytes hash to; actual: what the file claims (as for the header's digest below)
    assert found == {
        "error": "IntegrityError", "kind": "integrity", "field": "chunk_table.digest", "index": 2, "offset": 383,
        "message": "plane V (bytes 524736..786879) does not match the chunk table's SHA-256",
        "expected": computed_v, "actual": stored_v,
        "text": f"chunk_table[2].digest at offset 383: plane V (bytes 524736..786879) does not match the chunk "
                f"table's SHA-256 (expected {computed_v}, got {stored_v})"}
    data = bytearray(good)
    data[446] ^= 1
    [found] = [f.to_dict() for f in bob.checkpoint_findings(bytes(data))]
    computed, stored = hashlib.sha256(good[:415]).hexdigest(), bytes(data[415:447]).hex()
    assert found == {
        "error": "IntegrityError", "kind": "integrity", "field": "header_digest", "index": None, "offset": 415,
        "message": "the header's SHA-256 does not match its bytes", "expected": computed, "actual": stored,
        "text": f"header_digest at offset 415: the header's SHA-256 does not match its bytes "
                f"(expected {computed}, got {stored})"}


def test_a_checkpoint_larger_than_any_valid_one() -> None:
    from bob.formats.constants import MAX_CHECKPOINT_BYTES
    from bob.formats.checkpoint import ENVELOPE_MAGIC

    big = ENVELOPE_MAGIC + bytes(MAX_CHECKPOINT_BYTES + 1 - len(ENVELOPE_MAGIC))
    assert refusal(lambda: bob.load_checkpoint(big)) == {
        "error": "Truncated", "kind": "truncated", "field": "file_size", "index": None, "offset": None,
        "message": "a checkpoint is never larger than 65536 + 786432 bytes", "expected": "at most 851968",
        "actual": 851969,
        "text": "file_size: a checkpoint is never larger than 65536 + 786432 bytes (expected at most 851968, "
                "got 851969)"}


def test_a_step_with_no_room_for_ten_more_updates(trained: bob.Checkpoint) -> None:
    step = 2**64 - 5
    assert refusal(lambda: bob.load_checkpoint(raw(step, trained))) == {
        "error": "StateRefused", "kind": "state-refused", "field": "step", "index": None, "offset": 24,
        "message": "no room for the next 10 updates in a u64", "expected": "at most 18446744073709551605",
        "actual": step,
        "text": f"step at offset 24: no room for the next 10 updates in a u64 (expected at most "
                f"18446744073709551605, got {step} (0xfffffffffffffffb))"}


@pytest.mark.parametrize("load, what", [(bob.load_input, "an input record (bob-input)"),
                                        (bob.load_checkpoint, "a checkpoint (bob-envelope)")])
def test_a_file_shorter_than_its_magic(load, what: str) -> None:
    assert refusal(lambda: load(b"BOB")) == {
        "error": "Truncated", "kind": "truncated", "field": "file_size", "index": None, "offset": 0,
        "message": f"the file ends inside the magic of {what}", "expected": "at least 8 bytes", "actual": "3 bytes",
        "text": f"file_size at offset 0: the file ends inside the magic of {what} (expected at least 8 bytes, "
                "got 3 bytes)"}


def test_a_finding_examine_files_carries_nothing_of_the_caller() -> None:
    """examine builds its findings and never raises them: a magic, size or oversize finding raised inside the try
    that files it carried the traceback of its raise (a cycle with the examination and the file's bytes, freed only
    by the cycle collector) and, examined while the caller handled an exception, that exception as its
    ``__context__``, which bob's refusals follow to tell the machine's shortage (an EMFILE became the file's)."""
    from bob.formats import input_record, trace
    from bob.formats.constants import MAX_CHECKPOINT_BYTES

    cases = ((input_record.examine, b"XXXX-not-an-input"), (input_record.examine, b"BOB-INPT" + bytes(10)),
             (trace.examine, b"XXXX-not-a-trace"),
             (checkpoint.examine, b"BOB-CKPT" + bytes(MAX_CHECKPOINT_BYTES)))
    for examine, data in cases:
        try:
            raise OSError(24, "Too many open files")
        except OSError:
            finding = examine(data).findings[0]
        assert (finding.__traceback__, finding.__context__) == (None, None), (examine.__module__, finding)
