"""What the library says when it is handed the wrong thing (issue 13): the
builders and constructors of the three formats, each refusal checked whole
(the exception's type and words, or every field of ``FormatError.to_dict``),
and the conversions they make of what they accept."""

from __future__ import annotations

import copy
import fractions
import json
import pickle
import re
import subprocess
import sys
import warnings
from array import array

import numpy as np
import pytest

import bob
import bob.core
from bob.formats.constants import EMPTY_PROMPT
from bob.formats.input_record import build_input, prompt_word
from conftest import CORPUS, PROMPTS


def refusal(call) -> dict:
    with pytest.raises(bob.FormatError) as info:
        call()
    return info.value.to_dict()


def bad_value(field: str, message: str, expected=None, actual=None, index=None) -> dict:
    text = f"{field}[{index}]" if index is not None else field
    detail = ", ".join(part for part in (f"expected {expected}" if expected is not None else "",
                                         f"got {actual}" if actual is not None else "") if part)
    return {"error": "BadValue", "kind": "bad-value", "field": field, "index": index, "offset": None,
            "message": message, "expected": expected, "actual": actual,
            "text": f"{text}: {message}" + (f" ({detail})" if detail else "")}


def test_build_input_refusals() -> None:
    with pytest.raises(TypeError, match=r"^the corpus must be bytes, not str$"):
        build_input("abracadabra", PROMPTS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^prompts is a list of 3 byte strings$"):
        build_input(CORPUS, b"abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^a prompt is bytes, not str \(use os.fsencode\)$"):
        build_input(CORPUS, ["a", b"b", b""])  # type: ignore[list-item]
    for unordered in (set(PROMPTS), frozenset(PROMPTS)):  # its order (and the record's bytes) was the hash seed's
        with pytest.raises(TypeError, match=r"^prompts is a list of 3 byte strings$"):
            build_input(CORPUS, unordered)  # type: ignore[arg-type]
    assert refusal(lambda: build_input(b"a", PROMPTS)) == bad_value(
        "corpus", "a corpus needs at least 2 bytes", "at least 2 bytes", "1 byte")  # (it said "1 bytes")
    assert refusal(lambda: build_input(CORPUS, PROMPTS[:2])) == bad_value(
        "prompts", "there are exactly 3 prompts", 3, 2)


def test_build_input_reads_any_buffer_as_its_bytes() -> None:
    record = build_input(CORPUS, PROMPTS)
    wide = array("H", CORPUS[: len(CORPUS) // 2 * 2])  # two bytes per item: its bytes are the corpus
    assert build_input(wide, PROMPTS) == build_input(CORPUS[: len(CORPUS) // 2 * 2], PROMPTS)
    assert build_input(bytearray(CORPUS), tuple(PROMPTS)) == record
    assert build_input(CORPUS, [bytearray(p) for p in PROMPTS]) == record
    long = bytes(range(256)) + b"xyz"  # longer than 257 bytes: pair k is (corpus[k], corpus[k + 1])
    built = build_input(long, PROMPTS)
    assert bytes(built.contexts) == long[:256] and bytes(built.targets) == long[1:257]


def test_a_prompts_word_is_its_last_byte() -> None:
    assert (prompt_word(b"abc"), prompt_word(b"\xff"), prompt_word(b"")) == (ord("c"), 255, EMPTY_PROMPT)


def test_input_record_refusals() -> None:
    record = build_input(CORPUS, PROMPTS)
    c, t, w = record.contexts, record.targets, record.prompt_words
    assert refusal(lambda: bob.InputRecord(c[:5], t, w)) == bad_value(
        "contexts", "must hold 256 bytes", "(256,)", "(5,)")
    # the first value that is no byte, by its index (a list's past int64, an array's), or the array's dtype
    assert refusal(lambda: bob.InputRecord(c, np.full(256, 300), w)) == bad_value(
        "targets", "values must be bytes (integers 0 to 255)", actual=300, index=0)
    assert refusal(lambda: bob.InputRecord([7] * 255 + [-1], t, w)) == bad_value(
        "contexts", "values must be bytes (integers 0 to 255)", actual=-1, index=255)
    assert refusal(lambda: bob.InputRecord([7, 10**5000] + [0] * 254, t, w)) == bad_value(
        "contexts", "values must be bytes (integers 0 to 255)", actual="an integer of 16610 bits", index=1)
    assert refusal(lambda: bob.InputRecord(c, t.astype(np.float32), w)) == bad_value(
        "targets", "values must be bytes (integers 0 to 255)", actual="dtype float32")
    mixed = refusal(lambda: bob.InputRecord([2**64 - 1, -1] + [0] * 254, t, w))  # (NumPy's float64 said 2**64)
    assert (mixed["field"], mixed["index"], mixed["actual"]) == ("contexts", 0, 2**64 - 1)
    assert refusal(lambda: bob.InputRecord(c, t, (1, 2))) == bad_value(
        "prompt_words", "there are exactly 3 prompts", 3, 2)
    assert refusal(lambda: bob.InputRecord(c, t, (1, 2, 256))) == bad_value(
        "prompt_words", "a prompt word is a byte (< 256) or 0xFFFFFFFF", "< 256 or 0xffffffff", 256, index=2)
    wide = bob.InputRecord(c.astype(np.uint16), t.astype(np.int64), w)  # other integer types, values in range
    assert wide == record and wide.contexts.dtype == np.uint8 and not wide.contexts.flags.writeable


def test_plane_refusals_and_conversions() -> None:
    z = bob.Checkpoint.fresh()
    assert refusal(lambda: bob.Checkpoint(0, z.p[:5], z.m, z.v)) == bad_value(
        "P", "a plane holds 65536 values (flat, or 256 x 256)", "shape (65536,) or (256, 256)", "shape (5,)")
    assert refusal(lambda: bob.Checkpoint(0, z.p, [[1.0, 2.0], [3.0]], z.v)) == bad_value(
        "M", "a plane is 65536 float32 values (ValueError)")
    listed = bob.Checkpoint(0, z.p.tolist(), z.m, z.v)
    assert listed == z and listed.p.dtype == np.float32
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float64 beyond float32's range becomes inf, quietly
        wide = bob.Checkpoint(0, np.full(65536, 1e300), z.m, z.v)
    assert np.isinf(wide.p).all()


def test_planes_are_written_little_endian_whatever_the_array_s_byte_order() -> None:
    import struct

    values = np.zeros(65536, np.float32)
    values[:2] = (1.0, -2.5)
    for dtype in (">f4", "<f4", "=f4"):
        plane = values.astype(dtype)
        data = bob.Checkpoint(1, plane, np.zeros_like(plane), np.zeros_like(plane)).to_bytes()
        assert data[448:456] == struct.pack("<2f", 1.0, -2.5) and bob.checkpoint_findings(data) == []


@pytest.mark.parametrize("call,message", [
    (lambda: bob.invoke(None), "the input record must be bytes (or a bytes-like object), not NoneType"),
    (lambda: bob.invoke("abc"), "the input record must be bytes, not str"),
    (lambda: bob.invoke(build_input(CORPUS, PROMPTS), 5), "the checkpoint must be bytes (or a bytes-like object), not int"),
    (lambda: bob.load_input(1.5), "the input record must be bytes (or a bytes-like object), not float"),
    (lambda: bob.input_findings(None), "the input record must be bytes (or a bytes-like object), not NoneType"),
    (lambda: bob.load_checkpoint(5), "the checkpoint must be bytes (or a bytes-like object), not int"),
    (lambda: bob.checkpoint_findings([1]), "the checkpoint must be bytes (or a bytes-like object), not list"),
    (lambda: bob.examine_checkpoint("ckpt"), "the checkpoint must be bytes, not str"),
    (lambda: bob.load_predictions(5), "the predictions must be bytes (or a bytes-like object), not int"),
    (lambda: bob.predictions_findings(None), "the predictions must be bytes (or a bytes-like object), not NoneType"),
    (lambda: build_input(5, PROMPTS), "the corpus must be bytes (or a bytes-like object), not int"),
    (lambda: build_input(CORPUS, [b"a", 2, b""]), "prompt 1 must be bytes (or a bytes-like object), not int"),
])
def test_a_door_given_no_bytes_names_what_it_wanted(call, message) -> None:
    # One mechanism (bob.errors.as_bytes) at every door that takes bytes.
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


def test_a_buffer_of_python_objects_is_no_bytes(tmp_path) -> None:
    # Its buffer holds the objects' addresses, which differ in every process: never a file's bytes.
    objects = np.array([object(), "x", 3], dtype=object)
    for call, name in [(lambda: bob.load_checkpoint(objects), "the checkpoint"),
                       (lambda: build_input(objects, PROMPTS), "the corpus"),
                       (lambda: bob.write_atomic(tmp_path / "out.bin", objects), "the data to write")]:
        with pytest.raises(TypeError, match=f"^{name} must be bytes; a buffer of Python objects"):
            call()
    assert not (tmp_path / "out.bin").exists()
    with pytest.raises(TypeError, match="^a is a bob.Checkpoint, a Trace, a file's bytes or a path, not ndarray$"):
        bob.diff(objects, b"")  # (bob.errors.buffer_bytes: the doors that take a path or bytes)
    named = np.zeros(2, dtype=[("Obj", "<i4")])  # an "O" in a field's name is no object
    assert bob.checkpoint_findings(named)[0].field == "magic"


@pytest.mark.parametrize("data", ["text", 5, None])
def test_write_atomic_given_no_bytes_writes_nothing(tmp_path, data) -> None:
    target = tmp_path / "out.bin"
    with pytest.raises(TypeError) as info:
        bob.write_atomic(target, data)
    assert str(info.value) == f"the data to write must be bytes (or a bytes-like object), not {type(data).__name__}"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("call,field,message,actual,index", [
    (lambda c, t: bob.InputRecord(c, t, (1.5, 0, 0)), "prompt_words", "a prompt word is an integer", "float 1.5", 0),
    (lambda c, t: bob.InputRecord(c, t, (0, True, 0)), "prompt_words", "a prompt word is an integer", "bool True", 1),
    (lambda c, t: bob.InputRecord(c, t, None), "prompt_words", "the prompt words are 3 integers", "NoneType None",
     None),
    (lambda c, t: bob.InputRecord(c, t, 7), "prompt_words", "the prompt words are 3 integers", "int 7", None),
    (lambda c, t: bob.Predictions(((1.5, 1), (0, 0), (0, 0))), "token", "a token is an integer", "float 1.5", 0),
    (lambda c, t: bob.Predictions(((3, 1), (0, 0), (0, "1"))), "validity", "a validity is an integer", "str '1'", 2),
    (lambda c, t: bob.Predictions(None), "records", "the records are 3 (token, validity) pairs", "NoneType None",
     None),
    (lambda c, t: bob.Predictions((3, (0, 0), (0, 0))), "records", "a record is (token, validity)", "int 3", 0),
    (lambda c, t: bob.Predictions(5), "records", "the records are 3 (token, validity) pairs", "int 5", None),
    (lambda c, t: bob.Checkpoint(2.0, *_fresh_planes()), "step",
     "the step is an integer from 0 to 2**64 - 1", "float 2.0", None),
    (lambda c, t: bob.Checkpoint(np.True_, *_fresh_planes()), "step",
     "the step is an integer from 0 to 2**64 - 1", "bool np.True_", None),
])
def test_an_integer_field_given_something_else_is_named_not_truncated(call, field, message, actual, index) -> None:
    # One test of "is this an integer" (bob.errors.integer_value) at every
    # door: int(1.5) would have been 1, int(True) 1, int("1") 1.
    c, t = np.zeros(256, np.uint8), np.zeros(256, np.uint8)
    assert refusal(lambda: call(c, t)) == bad_value(field, message, actual=actual, index=index)


def test_integer_fields_take_numpy_integers() -> None:
    z = np.zeros(256, np.uint8)
    assert bob.InputRecord(z, z, np.array([1, 2, 0xFFFFFFFF], np.uint32)).prompt_words == (1, 2, 0xFFFFFFFF)
    assert bob.Predictions(((np.uint32(3), np.int64(1)), (0, 0), (0, 0))).records == ((3, 1), (0, 0), (0, 0))
    assert bob.Checkpoint(np.uint64(2**64 - 1), *_fresh_planes()).step == 2**64 - 1


def _fresh_planes():
    fresh = bob.load_checkpoint(b"")
    return fresh.p, fresh.m, fresh.v


def test_a_prediction_record_of_another_length_is_named() -> None:
    assert refusal(lambda: bob.Predictions(((0, 0), (1,), (0, 0)))) == bad_value(
        "records", "a record is (token, validity)", expected=2, actual=1, index=1)
    assert refusal(lambda: bob.Predictions(((3, 1, 0), (0, 0), (0, 0)))) == bad_value(
        "records", "a record is (token, validity)", expected=2, actual=3, index=0)


def test_a_negative_validity_is_named_as_the_validity() -> None:
    # token 0 and validity -1: the field is the validity, not the token.
    assert refusal(lambda: bob.Predictions(((0, -1), (0, 0), (0, 0)))) == bad_value(
        "validity", "values are u32", actual=-1, index=0)
    assert refusal(lambda: bob.Predictions(((0, 0), (-1, 1), (0, 0)))) == bad_value(
        "token", "values are u32", actual=-1, index=1)


def test_predictions_of_another_size_are_refused_whole() -> None:
    from bob.formats.constants import CHECKPOINT_MAGIC
    from bob.formats.files import KNOWN_MAGICS

    truncated = {"error": "Truncated", "kind": "truncated", "field": "file_size", "index": None, "offset": None,
                 "expected": 24}
    assert refusal(lambda: bob.load_predictions(bytes(23))) == truncated | {
        "message": "predictions are exactly 24 bytes", "actual": 23,
        "text": "file_size: predictions are exactly 24 bytes (expected 24, got 23)"}
    like = KNOWN_MAGICS[CHECKPOINT_MAGIC]
    assert refusal(lambda: bob.load_predictions(CHECKPOINT_MAGIC + bytes(40))) == truncated | {
        "message": f"predictions are exactly 24 bytes; this file starts like {like}", "actual": 48,
        "text": f"file_size: predictions are exactly 24 bytes; this file starts like {like} (expected 24, got 48)"}
    for magic, like in KNOWN_MAGICS.items():  # 24 bytes of another format: its first finding says what it is
        with pytest.raises(bob.BadValue, match=rf"^validity\[0\] at offset 4: .*; this file starts like {re.escape(like)}"):
            bob.load_predictions(magic + bytes(16))


def test_a_checkpoint_read_as_predictions_is_named_too(tmp_path) -> None:
    """predictions.md: a file starting with a bob magic is named in the message. Read from a path, a checkpoint
    was only "larger than any valid one" (the likely slip: the two paths given the other way round)."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    checkpoint.write(tmp_path / "model.bob")
    with pytest.raises(bob.Truncated, match=r"^file_size: the file is larger than any valid one \(24 bytes\); this "
                                            r"file starts like a bob checkpoint \(bob-envelope\); it was not read"):
        bob.read_predictions_file(tmp_path / "model.bob")


def test_to_bytes_refuses_a_header_bytes_that_is_not_an_integer() -> None:
    zeros = np.zeros(65_536, dtype=np.float32)
    checkpoint = bob.Checkpoint(0, zeros, zeros, zeros)
    for value in (448.0, 448.5, "448", True):
        with pytest.raises(bob.BadValue, match="header_bytes: header_bytes is an integer"):
            checkpoint.to_bytes(header_bytes=value)
    assert checkpoint.to_bytes(header_bytes=np.int64(512))[16:24] == (512).to_bytes(8, "little")


def test_probabilities_and_diff_name_an_argument_of_another_type() -> None:
    """A TypeError naming the argument (it was an AttributeError about p_table, or open()'s own TypeError)."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    for call, said in ((lambda: bob.probabilities(b"...", 1), "checkpoint is a bob.Checkpoint, not bytes"),
                       (lambda: bob.diff(checkpoint, 5), "b is a bob.Checkpoint, a Trace, a file's bytes or a path"),
                       (lambda: bob.diff(None, checkpoint), "a is a bob.Checkpoint, a Trace")):
        with pytest.raises(TypeError, match=said):
            call()
    assert bob.diff(checkpoint, checkpoint.to_bytes())["equal"] and bob.probabilities(checkpoint, 97).shape == (256,)
    trace = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1, trace=True).trace
    with pytest.raises(TypeError, match="^b is compared as a trace: a bob.Trace, a trace file's bytes or a path, "
                                        "not Checkpoint$"):  # (it was open()'s own TypeError)
        bob.diff(trace, checkpoint)


@pytest.mark.parametrize("argument, value", [
    ("ulp", -1), ("ulp", 1.5), ("ulp", float("nan")), ("ulp", "3"), ("ulp", True), ("ulp", 2**32 + 1),
    ("atol", -1.0), ("atol", float("nan")), ("atol", float("inf")), ("atol", "0.5"), ("atol", False),
    ("atol", 10**400), ("atol", 7.1e38)])
def test_diff_takes_the_tolerances_the_options_take(argument: str, value: object) -> None:
    """As --ulp and --atol: -1, nan, 1.5 were echoed into the report's tolerance, "3" was numpy's UFuncTypeError."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    with pytest.raises(bob.BadValue, match=f"^{argument}: "):
        bob.diff(checkpoint, checkpoint, **{argument: value})


def test_the_largest_tolerances_cover_every_difference_of_finite_values(tmp_path) -> None:
    """FLT_MAX against -FLT_MAX: within the largest --atol (its cap was 3.5e38, below 2 FLT_MAX) and --ulp."""
    fresh = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    top = np.finfo(np.float32).max
    sides = []
    for value in (top, -top):
        p = fresh.p.copy()
        p[0] = value
        sides.append(bob.Checkpoint(fresh.step, p, fresh.m, fresh.v))
    from bob.options import MOST_ATOL, MOST_ULP

    assert not bob.diff(*sides)["equal"]
    assert bob.diff(*sides, atol=MOST_ATOL)["equal"] and bob.diff(*sides, ulp=MOST_ULP)["equal"]
    assert bob.diff(*sides, atol=np.float32(0.5), ulp=np.int64(0))["tolerance"] == {"ulp": 0, "atol": 0.5}
    # any real number, as a trace's loss takes it (bob.errors.real_value): a Fraction was refused
    assert bob.diff(*sides, atol=fractions.Fraction(1, 2))["tolerance"] == {"ulp": None, "atol": 0.5}


class _LyingIndex:
    def __init__(self, value: object) -> None:
        self.value = value

    def __index__(self):  # noqa: PLE0305 - the lie under test
        return self.value


class _IntWithAnotherIndex(int):
    def __index__(self):  # noqa: PLE0305 - Python itself (range, slicing, operator.index) takes the int's value
        return 5


def test_an_int_subclass_is_its_own_value_whatever_its_index_says() -> None:
    """bob asked type(value).__index__: Step(20) wrote step 5, trained at step 5 and made token 5 of 97."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    twenty = _IntWithAnotherIndex(20)
    assert len(range(twenty)) == 20 and bob.Checkpoint(twenty, checkpoint.p, checkpoint.m, checkpoint.v).step == 20
    assert bob.Predictions(((_IntWithAnotherIndex(97), 1), (0, 0), (0, 0))).tokens == (97, 0, 0)
    planes = [[plane.copy() for plane in (checkpoint.p, checkpoint.m, checkpoint.v)] for _ in range(2)]
    record = build_input(CORPUS, PROMPTS)
    for (p, m, v), step in zip(planes, (twenty, 20)):
        bob.core.train(p, m, v, record.contexts, record.targets, step, 1, threads=1)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(*planes))


@pytest.mark.parametrize("lie", [10.5, "10", None])
def test_an_index_that_returns_no_int_is_no_integer(lie: object) -> None:
    """An __index__ returning 10.5 made a checkpoint of step 10.5; a token of one, construct's own error."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    with pytest.raises(bob.BadValue, match="^step: "):
        bob.Checkpoint(_LyingIndex(lie), checkpoint.p, checkpoint.m, checkpoint.v)
    with pytest.raises(bob.BadValue, match=r"^token\[0\]: "):
        bob.Predictions(((_LyingIndex(lie), 1), (0, 0), (0, 0)))
    assert bob.Checkpoint(_LyingIndex(10), checkpoint.p, checkpoint.m, checkpoint.v).step == 10


def test_a_checkpoint_written_while_another_thread_trains_it_is_refused_never_torn() -> None:
    """to_bytes hashed each plane, then copied it: 8 of 40 files written during a train were files bob
    refuses (chunk digests not their bytes), and write() put one in place of the last good file."""
    import threading

    record = build_input(CORPUS, PROMPTS)
    checkpoint = bob.invoke(record, b"", threads=1).checkpoint
    training = threading.Thread(target=lambda: bob.core.train(checkpoint.p, checkpoint.m, checkpoint.v,
                                                               record.contexts, record.targets, 10, 3000, threads=1))
    refused, written = 0, []
    training.start()
    while training.is_alive():
        try:
            written.append(checkpoint.to_bytes(for_resume=False))
        except BufferError as exc:
            assert str(exc).startswith("P is in use by another call of bob's core")
            refused += 1
    training.join()
    assert refused > 0  # (the race was met)
    assert [bob.checkpoint_findings(data, for_resume=False) for data in written] == [[]] * len(written)


@pytest.mark.parametrize("write", ["p-nan", "v-negative"])
def test_a_plane_a_python_thread_writes_while_it_is_hashed_changes_no_byte_written(monkeypatch, write) -> None:
    """The core's loans stop a train, not a Python thread writing a plane (its hash releases the GIL): to_bytes
    hashed and checked the live planes, then copied them, so 38 of 300 files were refused by bob's own reader
    (a digest not of its bytes), and a V made negative after the check was written for resuming."""
    from bob.formats.checkpoint import typed

    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    before = checkpoint.to_bytes()
    hash_plane = typed.hashlib_sha256

    def then_another_thread_writes(data):  # as a thread would, between this plane's hash and the copy
        digest = hash_plane(data)
        checkpoint.p[0], checkpoint.v[0] = (np.nan, 0.0) if write == "p-nan" else (0.0, -1.0)
        return digest

    monkeypatch.setattr(typed, "hashlib_sha256", then_another_thread_writes)
    assert checkpoint.to_bytes() == before  # the state as it was when to_bytes began, whole


def test_a_checkpoint_written_inside_another_s_to_bytes_changes_neither(monkeypatch) -> None:
    """to_bytes's copy buffer was one per thread: a to_bytes inside another (a signal handler's save, a
    finalizer) overwrote it, and the outer file held the inner checkpoint's planes under its own digests or
    another's whole (346 and 46 of 2,000 saves under a timer signal)."""
    from bob.formats.checkpoint import typed

    outer, inner = bob.Checkpoint.fresh(), bob.Checkpoint.fresh()
    inner.p[:] = 0.25
    want_outer, want_inner = outer.to_bytes(), inner.to_bytes()
    hash_plane, saved = typed.hashlib_sha256, []

    def and_a_save_in_between(data):
        if not saved:
            saved.append(None)  # (once: the inner save hashes through here too)
            saved[0] = inner.to_bytes()
        return hash_plane(data)

    monkeypatch.setattr(typed, "hashlib_sha256", and_a_save_in_between)
    assert outer.to_bytes() == want_outer and saved == [want_inner]


_WHOLE_READERS = {  # besides to_bytes: each reads the three planes as one state
    "write": lambda ck, path: ck.write(path, for_resume=False),
    "to_npz": lambda ck, path: ck.to_npz(path, for_resume=False),
    "to_safetensors": lambda ck, path: ck.to_safetensors(path, for_resume=False),
    "copy": lambda ck, path: ck.copy(),
    "==": lambda ck, path: ck == ck,
    "copy.deepcopy": lambda ck, path: copy.deepcopy(ck),  # (read without loans: 22 of 22 copies torn)
    "pickle": lambda ck, path: pickle.dumps(ck),
}


@pytest.mark.parametrize("reader", _WHOLE_READERS)
def test_what_reads_the_planes_whole_is_refused_while_another_thread_trains_them(reader, tmp_path) -> None:
    """The exports, copy() and == took no loans: 56 of 63 exports during a train held P, M and V of
    different updates (imported without a word). (write() was refused before too, by to_bytes's loans;
    that it now checks the state under them, not before, is one path, Checkpoint._bytes, no race here.)"""
    import threading

    if reader == "to_safetensors":
        pytest.importorskip("safetensors")
    record = build_input(CORPUS, PROMPTS)
    checkpoint = bob.invoke(record, b"", threads=1).checkpoint
    refused = 0
    for _ in range(50):  # trains of 3000 updates until the race is met
        training = threading.Thread(target=lambda: bob.core.train(checkpoint.p, checkpoint.m, checkpoint.v,
                                                                   record.contexts, record.targets, 10, 3000,
                                                                   threads=1))
        training.start()
        while training.is_alive():
            try:
                _WHOLE_READERS[reader](checkpoint, tmp_path / "out")
            except BufferError as exc:
                assert str(exc).startswith("P is in use by another call of bob's core")
                refused += 1
        training.join()
        if refused:
            break
    assert refused > 0


def test_a_checkpoint_is_refused_while_bob_core_trains_it_with_bob_core_not_imported() -> None:
    """Checkpoint took the core's read loans only once bob.core was imported: bob._core.train's planes,
    shared with a Checkpoint, were written torn (a file of no state of the run, its digests holding)."""
    script = """if True:
        import sys, threading
        from bob import _core
        import bob
        assert "bob.core" not in sys.modules
        p, m, v = _core.initial_planes(b"bob-seed-v1")
        checkpoint = bob.Checkpoint(5, p, m, v)
        pairs = (bytes(range(256)), bytes(k * 7 % 256 for k in range(256)))
        training = threading.Thread(target=lambda: _core.train((p, m, v), pairs, 5, 4000))  # (a second or more)
        training.start()
        while training.is_alive():  # until the train holds its planes
            try:
                _core.reading(P=p).release()
            except BufferError:
                break
        try:
            checkpoint.to_bytes(for_resume=False)
        except BufferError as exc:
            print(exc)
        training.join()
    """
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("P is in use by another call of bob's core")


def test_a_checkpoint_is_written_with_the_native_core_blocked() -> None:
    """sys.modules["bob._core"] = None (a blocked module) made to_bytes import bob.core for its loans, and fail."""
    script = ("import sys; sys.modules['bob._core'] = None\n"
              "import numpy as np, bob; z = np.zeros(65536, np.float32); print(len(bob.Checkpoint(10, z, z, z).to_bytes()))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "786880\n"), done.stderr


def test_a_train_of_planes_being_written_is_refused() -> None:
    from bob import _core

    record = build_input(CORPUS, PROMPTS)
    checkpoint = bob.invoke(record, b"", threads=1).checkpoint
    before = checkpoint.to_bytes()
    with _core.reading(P=checkpoint.p, M=checkpoint.m, V=checkpoint.v):
        with pytest.raises(BufferError, match="^P is in use by another call of bob's core"):
            bob.core.train(checkpoint.p, checkpoint.m, checkpoint.v, record.contexts, record.targets, 10)
    assert checkpoint.to_bytes() == before  # nothing changed, and the loans were given back:
    bob.core.train(checkpoint.p, checkpoint.m, checkpoint.v, record.contexts, record.targets, 10)


def test_a_tolerance_of_minus_zero_is_zero(tmp_path) -> None:
    """-0 was echoed as -0.0 in the report's tolerance (bob.diff and bob-inspect diff --atol -0)."""
    import contextlib
    import json
    import math

    from bob.inspect.cli import main

    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS), b"", threads=1).checkpoint
    assert math.copysign(1.0, bob.diff(checkpoint, checkpoint, atol=-0.0)["tolerance"]["atol"]) == 1.0
    checkpoint.write(tmp_path / "a.bob")
    with open(tmp_path / "out.json", "w") as out, contextlib.redirect_stdout(out):
        assert main(["diff", str(tmp_path / "a.bob"), str(tmp_path / "a.bob"), "--atol", "-0", "--json"]) == 0
    assert json.loads((tmp_path / "out.json").read_text())["tolerance"]["atol"] == 0.0
    assert '"atol": 0.0' in (tmp_path / "out.json").read_text()


@pytest.mark.parametrize("field, value, said", [
    ("payload_bytes", 786432.0, "contract.payload_bytes: an integer from 0 to 2**64 - 1 (got float 786432.0)"),
    ("payload_bytes", -1, "contract.payload_bytes: an integer from 0 to 2**64 - 1 (got int -1)"),
    ("chunk_bytes", True, "contract.chunk_bytes: an integer from 0 to 2**64 - 1 (got bool True)"),
    ("data", b"d" * 4097, "contract.data: at most 4096 bytes (got 4097)")])
def test_a_contract_holds_only_what_a_header_can(field, value, said) -> None:
    """786432.0 equalled v1's payload_bytes: a checkpoint carrying it was accepted by invoke and
    could not be written (struct.error); -1 the same; a str state was a TypeError from bytes + str."""
    with pytest.raises(bob.BadValue) as refused:
        bob.Contract(**{field: value})
    assert str(refused.value) == said
    with pytest.raises(TypeError, match="^contract.state must be bytes"):
        bob.Contract(state="bob-state")  # type: ignore[arg-type]
    taken = bob.Contract(state=bytearray(bob.Contract().state), payload_bytes=np.uint64(786432))
    assert type(taken.state) is bytes and type(taken.payload_bytes) is int and taken.is_v1


def test_a_records_byte_tables_take_bytes_and_refuse_what_they_cannot_read() -> None:
    """bytes were a 0-d array ("must hold 256 bytes ... got ()") where bytearray was taken; a
    ragged list was NumPy's ValueError; a masked array was read unmasked."""
    record = build_input(CORPUS, PROMPTS)
    assert bob.InputRecord(bytes(record.contexts), bytes(record.targets), record.prompt_words) == record
    assert refusal(lambda: bob.InputRecord([[1], [1, 2]], record.targets, record.prompt_words))["text"] == \
        "contexts[0]: a byte value is an integer (got list [1])"
    assert refusal(lambda: bob.InputRecord(np.array([1, 2]), record.targets, record.prompt_words))["text"] == \
        "contexts: must hold 256 bytes (expected (256,), got (2,))"
    masked = np.ma.masked_array(record.contexts, mask=True)
    assert "a masked array is refused" in refusal(lambda: bob.InputRecord(masked, record.targets,
                                                                          record.prompt_words))["message"]


def test_a_records_tables_stay_read_only() -> None:
    """Its hash is its bytes': the flag could be set back (the arrays owned their memory), and a
    record in a set changed under it."""
    record = build_input(CORPUS, PROMPTS)
    for table in (record.contexts, record.targets, bob.load_input(record.to_bytes()).contexts):
        with pytest.raises(ValueError, match="WRITEABLE"):
            table.flags.writeable = True


@pytest.mark.parametrize("call", [
    lambda r: bob.InputRecord(r.contexts, r.targets, set(r.prompt_words)),
    lambda r: bob.Predictions({(98, 1), (0, 0), (97, 1)}),
    lambda r: bob.Predictions([(98, 1), {0, 1}, (97, 1)]),
    lambda r: bob.build_input(CORPUS, None), lambda r: bob.Predictions.from_core(None),
    lambda r: bob.core.predict(bob.core.initial_planes()[0], {97, 98, 99}),
    lambda r: bob.core.predict(bob.core.initial_planes()[0], None),
    lambda r: bob.core.train(*bob.core.initial_planes(), None, r.targets, 0, 1),
    lambda r: bob.core.train(*bob.core.initial_planes(), np.ma.masked_array(r.contexts, mask=True), r.targets, 0, 1),
])
def test_a_sequence_without_an_order_or_items_is_refused_by_name(call) -> None:
    """A set was taken in its hash order (build_input refused it, InputRecord and Predictions did
    not); None was "'NoneType' object is not iterable"; masked pairs were trained unmasked."""
    with pytest.raises((TypeError, bob.BadValue)) as refused:
        call(build_input(CORPUS, PROMPTS))
    assert "is not iterable" not in str(refused.value)
    assert str(refused.value).startswith(("prompt_words", "records", "prompts", "contexts"))


def test_the_writer_takes_a_strided_view(tmp_path) -> None:
    """It was "must be bytes ..., not memoryview", a memoryview every reader takes."""
    bob.write_atomic(tmp_path / "o", memoryview(b"abcdef")[::2])
    assert (tmp_path / "o").read_bytes() == b"ace"


@pytest.mark.parametrize("call", [
    lambda ck: ck.to_bytes(for_resume="False"), lambda ck: ck.to_npz("x.npz", for_resume=0),
    lambda ck: bob.load_checkpoint(bob.Checkpoint.fresh().to_bytes(), for_resume="no"),
    lambda ck: bob.invoke(build_input(CORPUS, PROMPTS), trace="no")])
def test_a_flag_is_true_or_false(call, tmp_path, monkeypatch) -> None:
    """for_resume="False" was true (the write refused a state the caller had asked not to check),
    and trace="no" traced."""
    monkeypatch.chdir(tmp_path)
    checkpoint = bob.Checkpoint.fresh()
    with pytest.raises(TypeError, match=r"^(for_resume|trace) must be True or False; got "):
        call(checkpoint)
    assert checkpoint.to_bytes(for_resume=np.bool_(False)) == bob.Checkpoint.fresh().to_bytes()
    assert list(tmp_path.iterdir()) == []


def test_a_records_copy_and_its_pickle_keep_their_tables_read_only() -> None:
    """copy.deepcopy and pickle made tables that could be written (and the record's hash with them)."""
    import copy
    import pickle

    record = build_input(CORPUS, PROMPTS)
    for twin in (copy.deepcopy(record), copy.copy(record), pickle.loads(pickle.dumps(record))):
        assert twin == record and not twin.contexts.flags.writeable and not twin.targets.flags.writeable


@pytest.mark.parametrize("entries", [None, 5, "set"])
def test_a_traces_entries_are_a_sequence(entries) -> None:
    """None and 5 were "'NoneType' object is not iterable"; a set was refused by a step it happened to
    put first."""
    trace = bob.invoke(build_input(CORPUS, PROMPTS), trace=True).trace
    with pytest.raises(bob.BadValue, match=r"^entries: the entries are 10 \(step, loss, digests\)"):
        bob.Trace(trace.contract_sha256, trace.input_sha256, 0, trace.start,
                  set(trace.entries) if entries == "set" else entries)


def test_diff_takes_any_buffer_as_a_checkpoints_bytes() -> None:
    """D24: load_checkpoint took a uint8 array or an array.array; bob.diff and its checkpoints= refused them."""
    first = bob.invoke(build_input(CORPUS, PROMPTS), trace=True)
    data = first.checkpoint_bytes()
    for given in (np.frombuffer(data, np.uint8), array("B", data)):
        assert bob.diff(given, data)["equal"]
        report = bob.diff(first.trace, first.trace, checkpoints=(given, data))
        assert report["checkpoints"]["first"] is None and report["verdict"].endswith("the same state")


def test_clean_stale_temporaries_takes_a_flag_and_a_bytes_path(tmp_path) -> None:
    """holding_lock="False" removed the temporaries of live writers (this process's too); a bytes
    path, which write_atomic takes, was a TypeError from str.startswith."""
    import os

    live = tmp_path / f".ck.bin.bob-tmp-{os.getpid()}-0123456789ab"
    dead = tmp_path / ".ck.bin.bob-tmp-999999999-0123456789ab"
    live.write_bytes(b"")
    dead.write_bytes(b"")
    with pytest.raises(TypeError, match=r"^holding_lock must be True or False; got str 'False'$"):
        bob.clean_stale_temporaries(tmp_path / "ck.bin", holding_lock="False")  # type: ignore[arg-type]
    assert live.exists() and dead.exists()
    assert bob.clean_stale_temporaries(os.fsencode(tmp_path / "ck.bin")) == [str(dead)]  # type: ignore[arg-type]
    assert live.exists()


def test_checkpoints_compare_and_copy_as_they_would_be_written() -> None:
    """A float step compared equal to a checkpoint it could not be written as; copy() of a plane
    reassigned as an array.array was an AttributeError, where == and to_bytes converted it."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS)).checkpoint
    other = checkpoint.copy()
    other.step = 10.0  # type: ignore[assignment]
    assert refusal(lambda: other == checkpoint)["text"] == \
        "step: the step is an integer from 0 to 2**64 - 1 (got float 10.0)"
    other = checkpoint.copy()
    other.p = array("f", checkpoint.p.tobytes())  # type: ignore[assignment]
    assert other.copy() == checkpoint and other.copy().to_bytes() == checkpoint.to_bytes()


class _Named(bob.Checkpoint):
    """A subclass with an __init__ of its own and an attribute of its own (module level: pickle finds it)."""

    def __init__(self, name: str, *args: object, **kwargs: object) -> None:
        self.name = name
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_a_pickle_or_a_copy_is_the_checkpoint_as_it_is(tmp_path, protocol) -> None:
    """(copy.deepcopy and pickle read the planes without the core's loans.) The object's default otherwise: its
    class, every attribute, a field reassigned to what no file holds kept as it is; copy.copy shares the planes."""
    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS)).checkpoint
    mine = _Named("mine", checkpoint.step, checkpoint.p, checkpoint.m, checkpoint.v)
    mine.note, mine.step = "kept", -1  # type: ignore[attr-defined]
    for before in (checkpoint, mine):
        for again in (pickle.loads(pickle.dumps(before, protocol)), copy.deepcopy(before)):
            assert type(again) is type(before) and vars(again).keys() == vars(before).keys()
            assert again.p is not before.p and all(np.array_equal(a, b) for a, b in zip(again.tables.values(),
                                                                                       before.tables.values()))
    assert (again.name, again.note, again.step) == ("mine", "kept", -1)  # type: ignore[attr-defined]
    shared = copy.deepcopy([mine, mine.p])  # (a plane the structure shares stays shared in the copy)
    assert shared[0].p is shared[1] and shared[1] is not mine.p
    shallow = copy.copy(mine)
    assert type(shallow) is _Named and shallow.p is mine.p and shallow.note == "kept"  # type: ignore[attr-defined]


def test_a_subclass_s_readers_give_the_subclass(tmp_path) -> None:
    """(A subclass's from_bytes and read gave a Checkpoint, where its fresh and its imports gave the subclass.)"""

    class Mine(bob.Checkpoint):
        pass

    checkpoint = bob.invoke(build_input(CORPUS, PROMPTS)).checkpoint
    checkpoint.write(tmp_path / "ck.bob")
    made = [Mine.fresh(), Mine.from_bytes(checkpoint.to_bytes()), Mine.read(tmp_path / "ck.bob")]
    assert [type(c) for c in made] == [Mine] * 3 and made[1] == made[2] == checkpoint
    assert type(bob.read_checkpoint_file(tmp_path / "ck.bob")) is bob.Checkpoint


def test_a_plane_given_as_a_list_is_read_item_by_item() -> None:
    """A bool in a list of floats was read as 1.0 (NumPy's dtype guess), as in a record's tables."""
    fresh = bob.Checkpoint.fresh()
    plane = [0.0] * 65536
    plane[7] = True
    assert refusal(lambda: bob.Checkpoint(0, plane, fresh.m, fresh.v))["text"] == \
        "P[7]: a plane is 65536 float32 values: each value a number (got bool True)"
    assert bob.Checkpoint(0, [[0.5] * 256] * 256, fresh.m, fresh.v).p[65535] == np.float32(0.5)


def test_a_byte_table_given_as_a_list_is_read_item_by_item() -> None:
    """A bool in a list of ints was read as 1 (NumPy's dtype guess), where core.train refused it."""
    record = build_input(CORPUS, PROMPTS)
    contexts = [True, *record.contexts.tolist()[1:]]
    assert refusal(lambda: bob.InputRecord(contexts, record.targets, record.prompt_words))["text"] == \
        "contexts[0]: a byte value is an integer (got bool True)"
    with pytest.raises(TypeError, match=r"^contexts\[0\] must be an integer"):
        bob.core.train(*bob.core.initial_planes(), contexts, record.targets, 0, 1)
    for given in (record.contexts.tolist(), tuple(record.contexts), array("H", record.contexts),
                  memoryview(bytes(record.contexts))):
        assert bob.InputRecord(given, record.targets, record.prompt_words) == record


@pytest.mark.parametrize("given", [5, [1, 2], "abc"])
@pytest.mark.parametrize("reader", ["from_npz_bytes", "from_safetensors_bytes"])
def test_the_import_doors_take_bytes_as_every_reader_does(reader, given) -> None:
    """5 was read as five zero bytes ("not a zip archive"), [1, 2] as b"\\x01\\x02", "abc" was bytes()'s
    own TypeError."""
    pytest.importorskip("safetensors")
    from bob import interop

    with pytest.raises(TypeError, match=r"^data must be bytes"):
        getattr(interop, reader)(given, bob.Checkpoint)


@pytest.mark.parametrize("other", [b"BOB-TRCE", None, 5])
def test_a_trace_is_compared_with_a_trace(other) -> None:
    """A trace file's bytes (which bob.diff takes) were an AttributeError from the identity check."""
    trace = bob.invoke(build_input(CORPUS, PROMPTS), trace=True).trace
    for call in (trace.first_divergence, trace.refuse_other_run):
        with pytest.raises(TypeError, match=r"^a trace is compared with a bob.Trace \(a file's bytes: bob.load_trace\)"):
            call(other)


# An integer too large to write in digits (10**5000 is past Python's 4,300-digit int-to-str limit): every door
# that takes an integer refused it with that limit's own ValueError, raised while bob made its message, so the
# error naming the field never came; with the limit lifted, the message was the integer's digits and its hex
# (366,158 characters for 10**200000, a second to write). Each door: (call, the error type it raises for 2**64
# or -1, the FormatError's field (None for the core's CoreError), what the text starts with).
def _trace_with(w: dict, step_before: int = 0, first_step: int | None = None) -> bob.Trace:
    t = w["trace"]
    entries = t.entries if first_step is None else (t.entries[0]._replace(step=first_step), *t.entries[1:])
    return bob.Trace(t.contract_sha256, t.input_sha256, step_before, t.start, entries)


_BAD, _CORE = bob.BadValue, bob.core.CoreError
_LARGE_INTEGER_DOORS = {
    "Checkpoint(step)": (lambda n, w: bob.Checkpoint(n, *w["planes"]), _BAD, "step", "step: "),
    "Checkpoint(header_bytes)": (lambda n, w: bob.Checkpoint(0, *w["planes"], header_bytes=n),
                                 _BAD, "header_bytes", "header_bytes: "),
    "to_bytes(header_bytes)": (lambda n, w: w["checkpoint"].to_bytes(header_bytes=n),
                               _BAD, "header_bytes", "header_bytes: "),
    "Contract(payload_bytes)": (lambda n, w: bob.Contract(payload_bytes=n),
                                _BAD, "contract.payload_bytes", "contract.payload_bytes: "),
    "invoke(threads)": (lambda n, w: bob.invoke(w["record"], threads=n), _CORE, None, "threads = "),
    "Predictions token": (lambda n, w: bob.Predictions([(n, 1), (0, 0), (0, 0)]), _BAD, "token", "token[0]"),
    "Predictions validity": (lambda n, w: bob.Predictions([(0, 0), (0, n), (0, 0)]),
                             _BAD, "validity", "validity[1]"),
    "InputRecord prompt_words": (lambda n, w: bob.InputRecord(w["record"].contexts, w["record"].targets, (0, 0, n)),
                                 _BAD, "prompt_words", "prompt_words[2]: "),
    "Trace step_before": (lambda n, w: _trace_with(w, step_before=n), _BAD, "step_before", "step_before: "),
    "Trace entry step": (lambda n, w: _trace_with(w, first_step=n), _BAD, "entries.step", "entries[0].step: "),
    "probabilities(context)": (lambda n, w: bob.probabilities(w["checkpoint"], n), _BAD, "context", "context: "),
    "diff(ulp)": (lambda n, w: bob.diff(w["checkpoint"], w["checkpoint"], ulp=n), _BAD, "ulp", "ulp: "),
    "diff(atol)": (lambda n, w: bob.diff(w["checkpoint"], w["checkpoint"], atol=n), _BAD, "atol", "atol: "),
    "core.train(step)": (lambda n, w: bob.core.train(*w["core_planes"](), b"ab", b"bc", n), _CORE, None, "step = "),
    "core.train(updates)": (lambda n, w: bob.core.train(*w["core_planes"](), b"ab", b"bc", 0, n),
                            _CORE, None, "updates = "),
    "core.train(pairs)": (lambda n, w: bob.core.train(*w["core_planes"](), [97, n], b"bc", 0),
                          _CORE, None, "contexts[1] = "),
    "core.predict": (lambda n, w: bob.core.predict(w["checkpoint"].p, [97, n]), _CORE, None, "prompt word 1 = "),
    "core.initial_planes": (lambda n, w: bob.core.initial_planes(vocabulary=n), _CORE, None, "vocabulary = "),
    "core.resume_problem(step)": (lambda n, w: bob.core.resume_problem(*w["core_planes"](), n),
                                  _CORE, None, "step = "),
}


@pytest.fixture(scope="module")
def large_integer_world() -> dict:
    record = build_input(CORPUS, PROMPTS)
    checkpoint = bob.Checkpoint.fresh()
    return {"record": record, "checkpoint": checkpoint, "planes": (checkpoint.p, checkpoint.m, checkpoint.v),
            "trace": bob.invoke(record, threads=1, trace=True).trace,
            "core_planes": lambda: (checkpoint.p.copy(), checkpoint.m.copy(), checkpoint.v.copy())}


def _refused_by_name(door: str, number: int, world: dict) -> str:
    call, error, field, start = _LARGE_INTEGER_DOORS[door]
    with pytest.raises(Exception) as info:
        call(number, world)
    assert type(info.value) is error, f"{door}: {type(info.value).__name__}: {str(info.value)[:100]}"
    text = str(info.value)
    assert text.startswith(start) and text.isascii() and text.isprintable() and len(text) < 200, text
    said = f"{'a negative' if number < 0 else 'an'} integer of {number.bit_length()} bits"
    assert said in text, text
    if isinstance(info.value, bob.FormatError):
        assert info.value.field == field
        assert json.loads(json.dumps(info.value.to_dict()))["text"] == text
    return text


@pytest.mark.parametrize("sign", [1, -1], ids=["positive", "negative"])
@pytest.mark.parametrize("door", list(_LARGE_INTEGER_DOORS))
def test_an_integer_too_large_for_digits_is_refused_by_the_door_naming_its_field(door, sign, large_integer_world):
    """10**5000 (and -10**5000, refused too) at each door: the door's own refusal (a BadValue naming the field,
    or the core's CoreError naming the argument, as for 2**64 or -1), one short line saying the integer's size."""
    _refused_by_name(door, sign * 10**5000, large_integer_world)


@pytest.fixture
def no_int_str_limit():
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.parametrize("door", list(_LARGE_INTEGER_DOORS))
def test_without_python_s_digit_limit_the_refusal_stays_short(door, large_integer_world, no_int_str_limit):
    """With sys.set_int_max_str_digits(0), 10**200000's refusal was its 200,001 digits and its hex, written in
    about a second (quadratic); it is the same short line as under the limit."""
    assert sys.get_int_max_str_digits() == 0
    _refused_by_name(door, 10**200000, large_integer_world)


def test_an_integer_up_to_128_bits_is_shown_in_digits_and_a_larger_one_by_its_size() -> None:
    from bob.errors import show_value, shown_kind

    assert show_value(2**128 - 1) == "340282366920938463463374607431768211455 (0xffffffffffffffffffffffffffffffff)"
    assert show_value(-(2**128 - 1)) == "-340282366920938463463374607431768211455"
    assert shown_kind(2**128 - 1) == "int 340282366920938463463374607431768211455"
    assert show_value(2**128) == shown_kind(2**128) == "an integer of 129 bits"
    assert show_value(-(2**128)) == shown_kind(-(2**128)) == "a negative integer of 129 bits"
    assert show_value(2**64) == "18446744073709551616 (0x10000000000000000)" and show_value(0xFFFFFFFF) == "0xffffffff"


def test_a_large_integer_a_caller_put_in_a_checkpoint_or_an_error_is_shown_by_its_size() -> None:
    """repr of a Checkpoint whose step or header_bytes was reassigned so, and an error made with such an offset or
    index, raised Python's int-to-str ValueError (a traceback of its own where one was being shown)."""
    ck = bob.Checkpoint.fresh()
    ck.step, ck.header_bytes = 10**5000, -(10**5000)
    assert repr(ck) == ("Checkpoint(step=an integer of 16610 bits, invocations=an integer of 16607 bits, "
                        "header_bytes=a negative integer of 16610 bits, contract=v1)")
    ck.step = "x"
    assert repr(ck).startswith("Checkpoint(step='x', header_bytes=a negative integer of 16610 bits, contract=Contract(")
    error = bob.BadValue("f", "m", offset=10**5000, index=np.int64(3))
    assert str(error) == "f[3] at offset an integer of 16610 bits: m"
    assert json.loads(json.dumps(error.to_dict()))["offset"] == "an integer of 16610 bits"  # (json.dumps raised)
    assert error.to_dict()["index"] == 3 and type(error.to_dict()["index"]) is int
    zero = bob.BadValue("P", "m", offset=np.uint64(0), index=np.int64(0)).to_dict()  # (0 is falsy: a NumPy zero too)
    assert (zero["index"], zero["offset"]) == (0, 0) and json.dumps(zero)
    assert bob.BadValue("f.g", "m", index=-(10**5000)).where == "f[a negative integer of 16610 bits].g"


def test_a_large_integer_inside_what_is_refused_is_said_by_its_size() -> None:
    """A door that shows what it refuses (a Trace entry of the wrong shape, a set where a sequence belongs) made
    its repr, which raised for an integer past the limit inside it."""
    from bob.errors import shown_kind

    trace = bob.invoke(build_input(CORPUS, PROMPTS), threads=1, trace=True).trace
    with pytest.raises(bob.BadValue) as info:
        bob.Trace(trace.contract_sha256, trace.input_sha256, 0, trace.start, ((10**5000, 1.0), *trace.entries[1:]))
    assert str(info.value) == ("entries[0]: an entry is (step, loss, (P, M, V digests)) "
                               "(got tuple (an integer of 16610 bits, 1.0))")
    with pytest.raises(TypeError, match=r"^contexts\[0\] must be an integer \(a byte value\); got list \[an integer "
                                        r"of 16610 bits\]$"):
        bob.core.train(*bob.core.initial_planes(), [[10**5000]] * 2, b"bc", 0)
    with pytest.raises(bob.BadValue, match=r"^records: the records are 3 \(token, validity\) pairs \(got set <set "
                                           r"holding an integer too long to show>\)$"):
        bob.Predictions({(10**5000, 1), (0, 0), (1, 1)})  # type: ignore[arg-type]
    assert shown_kind([[1, 2], 10**5000, "x" * 200]) == ("list [[1, 2], an integer of 16610 bits, '" + "x" * 200)[:77] \
        + "..."


@pytest.mark.parametrize("value", [
    7, -1, 2**128 - 1, True, None, 1.5, float("nan"), "3", "é" * 50, b"\x00\n", (), (1,), [], [1, [2, (3,)]],
    list(range(500)), tuple(range(500)), [[[[[[[[[[[[1]]]]]]]]]]]], {"a": [1, 2]}, {1, 2}, np.int64(5),
    np.arange(300), [1.5, "x" * 100, None], ("é", ("\n",)), fractions.Fraction(1, 3)])
def test_a_value_of_the_wrong_kind_is_shown_as_it_was(value) -> None:
    """shown_kind's words for every value whose repr can be made are what they were: its type and its repr,
    escaped and cut at 80 characters, the cut said (repr_text walks a list or a tuple, and stops at what is
    shown)."""
    from bob.errors import shown_kind
    from bob.text import one_line

    whole = one_line(f"{type(value).__name__} {value!r}")
    assert shown_kind(value) == (whole if len(whole) <= 80 else whole[:77] + "...")
    inside: list = [1]
    inside.append(inside)
    assert shown_kind(inside) == "list [1, [...]]" and shown_kind(([inside],)) == "tuple ([[1, [...]]],)"


def test_a_value_whose_repr_fails_is_still_refused_by_name() -> None:
    """repr_text said it never raised, and caught only the int-to-str limit: an object whose __repr__ raises
    made predict and the other doors raise that error instead of their refusal."""
    class NoRepr:
        def __repr__(self):
            raise TypeError("no repr")

    with pytest.raises(TypeError, match=r"^prompt word 0 must be an integer; got NoRepr <NoRepr whose repr failed: "
                                        r"TypeError>$"):
        bob.core.predict(np.zeros(65536, np.float32), [NoRepr()])
    from bob.text import repr_text

    assert repr_text([NoRepr(), 1]) == "[<NoRepr whose repr failed: TypeError>, 1]"
