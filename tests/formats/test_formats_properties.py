"""Property tests (Hypothesis) for the three formats.

* build → parse → build is the identity for valid objects of every format;
* random and mutated bytes raise only ``bob.FormatError`` (never a construct,
  struct, Unicode, overflow, index or key error);
* an accepted file re-serializes to exactly its own bytes.

Settings are moderate: the whole module runs in a few seconds on two cores.
"""

from __future__ import annotations

import json
import os
import random
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import bob
from conftest import golden
from bob import FormatError
from bob.fuzz import mutate, refresh_digests
from bob.fuzz.mutator import field_names, interesting_values, spots
from bob.fuzz.mutator import mutated_strategy, random_bytes_strategy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402  (independent builders)


FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MEDIUM = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

U64 = (1 << 64) - 1




def check_error(err: FormatError) -> None:
    """Every refusal is well formed: a field, one printable line, JSON-ready."""
    assert isinstance(err, FormatError) and isinstance(err, ValueError)
    assert isinstance(err.field, str) and err.field
    text = str(err)
    assert "\n" not in text and "\r" not in text and text.isprintable() and text.isascii()
    json.dumps(err.to_dict())
    assert err.offset is None or isinstance(err.offset, int)
    assert err.index is None or isinstance(err.index, int)


def only_format_errors(load, data: bytes, **kw):
    """``load(data)``: the object, or None after checking the FormatError it raised."""
    try:
        return load(data, **kw)
    except FormatError as err:
        check_error(err)
        return None


# --------------------------------------------------------------------------- #
# Strategies for valid objects
# --------------------------------------------------------------------------- #

byte_tables = st.binary(min_size=256, max_size=256).map(lambda b: np.frombuffer(b, dtype=np.uint8))
prompt_words = st.tuples(*[st.one_of(st.integers(0, 255), st.just(0xFFFFFFFF))] * 3)
records = st.builds(bob.InputRecord, byte_tables, byte_tables, prompt_words)

prediction_record = st.one_of(st.tuples(st.integers(0, 255), st.just(1)), st.just((0, 0)))
predictions = st.builds(lambda rs: bob.Predictions(tuple(rs)), st.lists(prediction_record, min_size=3, max_size=3))

SPECIAL = np.array([0.0, -0.0, 1e-45, -1e-45, 3.4028235e38, -3.4028235e38, 1.0, -1.0], dtype=np.float32)


@st.composite
def checkpoints(draw):
    step = draw(st.one_of(st.just(0), st.integers(1, U64 - 10), st.just(U64 - 10)))
    header_bytes = 448 + 64 * draw(st.one_of(st.just(0), st.integers(0, (65_536 - 448) // 64)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    scale = draw(st.sampled_from([1e-30, 1e-3, 1.0, 1e30]))
    p = (rng.standard_normal(65536) * scale).astype(np.float32)
    p[rng.integers(0, 65536, 8)] = SPECIAL
    if step == 0:
        m = np.zeros(65536, np.float32)
        v = np.zeros(65536, np.float32)
    else:
        m = (rng.standard_normal(65536) * scale).astype(np.float32)
        v = np.abs(rng.standard_normal(65536) * scale).astype(np.float32)
        v[rng.integers(0, 65536, 4)] = np.float32(-0.0)
    return bob.Checkpoint(step, p, m, v, header_bytes=header_bytes)


# --------------------------------------------------------------------------- #
# build -> parse -> build
# --------------------------------------------------------------------------- #


@FAST
@given(records)
def test_input_build_parse_build(rec):
    data = rec.to_bytes()
    assert len(data) == 1564
    again = bob.load_input(data)
    assert again == rec and again.to_bytes() == data
    assert bob.input_findings(data) == []


@FAST
@given(st.binary(min_size=2, max_size=600), st.lists(st.binary(max_size=5), min_size=3, max_size=3))
def test_fixture_builder_matches_the_reference(corpus, prompts):
    rec = bob.build_input(corpus, prompts)
    data = rec.to_bytes()
    assert data == R.build_fixture(corpus, prompts)
    assert bob.load_input(data) == rec


@FAST
@given(predictions)
def test_predictions_build_parse_build(pred):
    data = pred.to_bytes()
    assert len(data) == 24 and data == R.predictions_bytes(pred.records)
    again = bob.load_predictions(data)
    assert again == pred and again.to_bytes() == data


@SLOW
@given(checkpoints())
def test_checkpoint_build_parse_build(ck):
    data = ck.to_bytes()
    assert len(data) == ck.header_bytes + 786_432
    if ck.header_bytes == 448:
        assert data == R.reference_envelope_bytes(ck.step, ck.p, ck.m, ck.v)
    again = bob.load_checkpoint(data)
    assert again == ck and again.to_bytes() == data
    assert bob.checkpoint_findings(data) == []


# --------------------------------------------------------------------------- #
# random bytes
# --------------------------------------------------------------------------- #


@FAST
@given(random_bytes_strategy())
def test_random_bytes_raise_only_format_errors(data):
    for load in (bob.load_input, bob.load_predictions):
        obj = only_format_errors(load, data)
        if obj is not None:
            assert obj.to_bytes() == data
    if data:  # zero bytes are the fresh state (needs the core; tested elsewhere)
        obj = only_format_errors(bob.load_checkpoint, data)
        assert obj is None or obj.to_bytes() == data
    for findings in (bob.input_findings, bob.predictions_findings, bob.checkpoint_findings):
        for err in findings(data):
            check_error(err)


@FAST
@given(st.binary(min_size=24, max_size=24))
def test_random_24_bytes_are_predictions_or_refused(data):
    pred = only_format_errors(bob.load_predictions, data)
    if pred is not None:
        assert pred.to_bytes() == data


@FAST
@given(st.binary(min_size=1548, max_size=1548))
def test_random_record_bodies(body):
    data = b"BOB-INPT" + (1).to_bytes(8, "little") + body
    rec = only_format_errors(bob.load_input, data)
    if rec is not None:
        assert rec.to_bytes() == data


# --------------------------------------------------------------------------- #
# mutated bytes
# --------------------------------------------------------------------------- #

SMALL_SEEDS = [
    golden("input-abracadabra.bin"),
    golden("input-binary.bin"),
    golden("predictions-abracadabra.bin"),
    golden("predictions-mixed.bin"),
]


@FAST
@given(mutated_strategy(SMALL_SEEDS))
def test_mutated_small_files(data):
    for load in (bob.load_input, bob.load_predictions):
        obj = only_format_errors(load, data)
        if obj is not None:
            assert obj.to_bytes() == data
    for err in bob.input_findings(data) + bob.predictions_findings(data):
        check_error(err)


CHECKPOINT = golden("checkpoint-abracadabra-step10.bin")
CHECKPOINT_SPOTS = spots(CHECKPOINT, "checkpoint")
HEADER_FIELDS = [s.name for s in CHECKPOINT_SPOTS if s.kind != "plane"]


@MEDIUM
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.booleans(), st.booleans())
def test_mutated_checkpoints(seed, count, header_only, refresh):
    rnd = random.Random(seed)
    data = mutate(CHECKPOINT, rnd, "checkpoint", only=HEADER_FIELDS if header_only else None, count=count)
    if refresh:
        data = refresh_digests(data)
    assume(data)
    for for_resume in (True, False):
        ck = only_format_errors(bob.load_checkpoint, data, for_resume=for_resume)
        if ck is not None:
            assert ck.to_bytes(for_resume=for_resume) == data
        for err in bob.checkpoint_findings(data, for_resume=for_resume):
            check_error(err)


@SLOW
@given(st.integers(0, 2**32 - 1))
def test_plane_damage_with_refreshed_digests_reaches_the_state_checks(seed):
    rnd = random.Random(seed)
    data = refresh_digests(mutate(CHECKPOINT, rnd, "checkpoint", only=("P", "M", "V"), count=2, field_ratio=1.0))
    findings = bob.checkpoint_findings(data)
    assert all(type(f) is bob.StateRefused for f in findings), findings
    ck = bob.load_checkpoint(data, for_resume=False)
    assert ck.to_bytes(for_resume=False) == data
    if findings:  # a writer refuses what the reader refuses, with the same finding
        with pytest.raises(bob.StateRefused) as refused:
            ck.to_bytes()
        assert (refused.value.field, refused.value.index) == (findings[0].field, findings[0].index)


def test_every_field_overwritten_with_every_interesting_value():
    """Deterministic sweep: each header field × each interesting value."""
    seen = set()
    for row in CHECKPOINT_SPOTS:
        if row.kind not in ("u32", "u64"):
            continue
        for value in interesting_values(row.size):
            data = bytearray(CHECKPOINT)
            data[row.offset:row.offset + row.size] = value.to_bytes(row.size, "little")
            for variant in (bytes(data), refresh_digests(bytes(data))):
                ck = only_format_errors(bob.load_checkpoint, variant)
                if ck is not None:
                    assert ck.to_bytes() == variant
                findings = bob.checkpoint_findings(variant)
                for err in findings:
                    check_error(err)
                seen.update(type(f).__name__ for f in findings)
    assert {"BadValue", "Truncated", "IntegrityError", "ContractMismatch", "StateRefused"} <= seen
