"""The golden vectors in python/bob/data/golden/ and the contract's §8 public vector.

The §8 values are copied here from python/bob/data/contract/bob-v1.md, so these tests do
not trust formats/make_golden.py: they check the committed files against the
contract directly, and that the generator still produces the committed files.
The tests that train need the native core; if it is missing they fail (never
skip).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import struct

import pytest

import bob
from conftest import (CKPT_10_SHA256, CKPT_20_SHA256, CORPUS, GOLDEN, INITIAL_P_SHA256, LOSSES_10, LOSSES_20, PRED_HEX,
                      PROMPTS, RECORD_SHA256, ROOT, sha)
from conftest import golden as read
from conftest import golden_json as read_json





@pytest.fixture(scope="module")
def make_golden():
    spec = importlib.util.spec_from_file_location("make_golden", os.path.join(ROOT, "formats", "make_golden.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- #
# §8 through the library
# --------------------------------------------------------------------------- #


def test_section8_record_through_build_input():
    rec = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    assert sha(rec.to_bytes()) == RECORD_SHA256
    assert rec.prompt_words == (ord("a"), ord("d"), 0xFFFFFFFF)
    assert rec.pairs[:3] == ((97, 98), (98, 114), (114, 97))
    assert rec.pairs[10] == (97, 97)  # the corpus is cyclic
    assert rec.context_counts().sum() == 256


def test_section8_predictions_hex():
    pred = bob.load_predictions(bytes.fromhex(PRED_HEX))
    assert pred.records == ((ord("c"), 1), (ord("a"), 1), (0, 0))
    assert pred.to_bytes().hex() == PRED_HEX


def test_section8_checkpoints_after_10_and_20_updates(core):
    rec = bob.build_input(CORPUS, PROMPTS)
    data = b""
    digests, preds, losses = [], [], []
    for _ in range(2):
        result = bob.invoke(rec, data)  # resume from the bytes, as a fresh process would
        data = result.checkpoint_bytes()
        losses.append(result.losses)
        digests.append(sha(data))
        preds.append(result.predictions_bytes().hex())
        assert bob.load_checkpoint(data).to_bytes() == data and result.checkpoint.invocations == len(digests)
    assert digests == [CKPT_10_SHA256, CKPT_20_SHA256]
    assert preds == [PRED_HEX, PRED_HEX]
    assert (losses[0][0], losses[0][-1]) == pytest.approx(LOSSES_10, abs=1e-6)
    assert (losses[1][0], losses[1][-1]) == pytest.approx(LOSSES_20, abs=1e-6)


def test_fresh_state(core, tmp_path):
    ck = bob.load_checkpoint(b"")
    assert ck.step == 0 and ck.invocations == 0 and ck.header_bytes == 448
    assert sha(ck.p.tobytes()) == INITIAL_P_SHA256
    assert not ck.m.any() and not ck.v.any()
    assert ck.p.flags.writeable and ck.m.flags.writeable and ck.v.flags.writeable
    with pytest.raises(FileNotFoundError):  # only bob-run treats a missing checkpoint as a fresh run
        bob.read_checkpoint_file(tmp_path / "missing.ckpt")
    (tmp_path / "empty.ckpt").write_bytes(b"")
    assert bob.read_checkpoint_file(tmp_path / "empty.ckpt") == ck
    assert bob.checkpoint_findings(b"") == []
    data = ck.to_bytes()
    assert bob.checkpoint_findings(data) == [] and bob.load_checkpoint(data) == ck


def test_golden_checkpoint_is_the_contract_one():
    data = read("checkpoint-abracadabra-step10.bin")
    assert len(data) == 786_880 and sha(data) == CKPT_10_SHA256
    ck = bob.load_checkpoint(data)
    assert ck.step == 10 and ck.to_bytes() == data
    assert ck.as_dict() == read_json("checkpoint-abracadabra-step10.json")


def test_a_checkpoint_summary_is_strict_json_for_any_state():
    """as_dict() of a state with a NaN and an infinity (loadable for reading) gave min and max NaN and inf:
    not JSON, and one NaN hid the plane's range. Its min and max are over the finite values."""
    import numpy as np

    ck = bob.load_checkpoint(read("checkpoint-abracadabra-step10.bin"))
    p, m = ck.p.copy(), ck.m.copy()
    finite_p = (float(p.min()), float(p.max()))
    p[5], m[0], ck.p, ck.m = np.nan, np.inf, p, m
    ck.v = np.full_like(ck.v, np.nan)
    planes = json.loads(json.dumps(ck.as_dict(), allow_nan=False))["planes"]
    assert (planes["P"]["min"], planes["P"]["max"]) == finite_p
    assert planes["M"]["max"] == float(m[np.isfinite(m)].max()) and (planes["V"]["min"], planes["V"]["max"]) == (None, None)


def test_golden_loaded_checkpoint_trains_to_step_20(core):
    ck = bob.read_checkpoint_file(GOLDEN / "checkpoint-abracadabra-step10.bin")
    rec = bob.read_input_file(GOLDEN / "input-abracadabra.bin")
    result = bob.invoke(rec, ck)
    assert sha(result.checkpoint_bytes()) == CKPT_20_SHA256 and ck.step == 10  # ck itself is untouched


# --------------------------------------------------------------------------- #
# Every golden file
# --------------------------------------------------------------------------- #

VALID = sorted(n for n in os.listdir(GOLDEN) if n.endswith(".bin"))
REFUSED = sorted(n for n in os.listdir(os.path.join(GOLDEN, "refused")) if n.endswith(".bin"))
LOADERS = {"input": bob.load_input, "predictions": bob.load_predictions, "checkpoint": bob.load_checkpoint,
           "trace": bob.load_trace}
FINDERS = {"input": bob.input_findings, "predictions": bob.predictions_findings,
           "checkpoint": bob.checkpoint_findings}


def test_golden_files_exist():
    assert {"input-abracadabra.bin", "predictions-abracadabra.bin", "checkpoint-abracadabra-step10.bin",
            "trace-abracadabra-step10.bin"} <= set(VALID)
    assert len(REFUSED) >= 5


def test_golden_section8_files_match_the_contract():
    assert sha(read("input-abracadabra.bin")) == RECORD_SHA256
    assert read("predictions-abracadabra.bin").hex() == PRED_HEX


@pytest.mark.parametrize("name", VALID)
def test_golden_valid_file(name):
    data = read(name)
    obj = LOADERS[name.split("-")[0]](data)
    assert obj.to_bytes() == data
    assert obj.as_dict() == read_json(name[:-4] + ".json")
    if not name.startswith("trace"):  # (a trace's dictionary is what it holds, its own digest among its bytes)
        assert obj.as_dict()["sha256"] == sha(data)


@pytest.mark.parametrize("name", REFUSED)
def test_golden_refused_file(name):
    data = read(os.path.join("refused", name))
    kind = name.split("-")[0]
    expected = read_json(os.path.join("refused", name[:-4] + ".json"))["findings"]
    got = [{"error": type(f).__name__, "field": f.field, "index": f.index, "offset": f.offset}
           for f in FINDERS[kind](data)]
    assert got == expected
    with pytest.raises(getattr(bob, expected[0]["error"])) as info:
        LOADERS[kind](data)
    assert info.value.field == expected[0]["field"]


def test_generator_reproduces_the_committed_files(core, make_golden):
    files = make_golden.with_manifest(make_golden.build())
    on_disk = set(VALID) | {n[:-4] + ".json" for n in VALID} | {"SHA256SUMS"}
    on_disk |= {f"refused/{n}" for n in REFUSED} | {f"refused/{n[:-4]}.json" for n in REFUSED}
    assert set(files) == on_disk
    for name, data in files.items():  # (a trace's losses, f64 logs, within §6.4's tolerance: make_golden.py)
        assert make_golden.same_golden(name, read(name), data), name
    assert {n for n, data in files.items() if read(n) != data} <= {"SHA256SUMS", "trace-abracadabra-step10.bin",
                                                                  "trace-abracadabra-step10.json"}


def test_the_golden_trace_is_held_to_the_reference(core, make_golden):
    """make_golden.py refuses a §8 trace that differs from the reference's run anywhere: its contract, its start,
    one loss's lowest bit, a digest after an update, its seal."""
    trace, record = read("trace-abracadabra-step10.bin"), read("input-abracadabra.bin")
    checkpoint = read("checkpoint-abracadabra-step10.bin")
    make_golden.check_section8_trace(trace, record, checkpoint)
    for offset in (16, 80, 88, 136, 144, 159, 160, 783, 815):  # (159: loss 0's exponent; 815: the seal)
        bad = bytearray(trace)
        bad[offset] ^= 1
        bad[784:] = hashlib.sha256(bad[:784]).digest() if offset < 784 else bad[784:]  # (its seal made again)
        with pytest.raises(AssertionError):
            make_golden.check_section8_trace(bytes(bad), record, checkpoint)


def test_a_golden_trace_s_losses_are_held_within_a_tolerance_never_bit_for_bit(core, make_golden):
    """§6.4: a loss is compared within a tolerance (the core's f64 log is the platform's). A trace one ULP off in
    a loss (sealed again), its .json and SHA256SUMS with it, is the golden one; a digest one bit off is not."""
    trace = bytearray(read("trace-abracadabra-step10.bin"))
    (loss,) = struct.unpack_from("<d", trace, 152)
    struct.pack_into("<d", trace, 152, math.nextafter(loss, math.inf))
    trace[784:] = hashlib.sha256(trace[:784]).digest()
    make_golden.check_section8_trace(bytes(trace), read("input-abracadabra.bin"),
                                     read("checkpoint-abracadabra-step10.bin"))
    document = read_json("trace-abracadabra-step10.json")
    document["entries"][0]["loss"] = math.nextafter(loss, math.inf)
    golden = read("trace-abracadabra-step10.bin")
    changed = {"trace-abracadabra-step10.bin": bytes(trace),
               "trace-abracadabra-step10.json": make_golden.dump(document),
               "SHA256SUMS": read("SHA256SUMS").replace(sha(golden).encode(), sha(bytes(trace)).encode())}
    for name, data in changed.items():
        assert read(name) != data and make_golden.same_golden(name, read(name), data), name
    trace[200] ^= 1  # (entry 0's V digest)
    assert not make_golden.same_golden("trace-abracadabra-step10.bin", golden, bytes(trace))
    # nor is a trace whose seal does not hold, a .json written another way, a trace line renamed or added
    others = {"trace-abracadabra-step10.bin": [golden[:784] + bytes(32), golden[:700], golden + b"\0"],
              "trace-abracadabra-step10.json": [json.dumps(read_json("trace-abracadabra-step10.json")).encode(), b"["],
              "SHA256SUMS": [read("SHA256SUMS").replace(b"  trace-abracadabra-step10.bin", b"  trace-other.bin"),
                             read("SHA256SUMS") + b"0" * 64 + b"  trace-more.bin\n"]}
    for name, wrong in others.items():
        assert not any(make_golden.same_golden(name, data, read(name)) for data in wrong), name
