"""bob-inspect through the real command (``python -m bob.inspect`` in a
subprocess): every subcommand, human and --json, on files the library builds
(the §8 vector) and on damaged and hostile ones."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bob
import bob.core
from bob.formats.contract import LEARNER_PREFIX, Contract
from bob.formats.docs import layout_rows
from bob.formats.envelope import Checkpoint, canonical_header_bytes
from bob.formats.predictions import Predictions
from bob.inspect import ordered_keys, ulp_distance

ROOT = Path(__file__).resolve().parents[1]
CKPT_SHA_10 = "7c3544ee00bb44bc52844f36274c87715d84908ebbbeeb364f4fc5af80e5bc71"
RECORD_SHA = "d0d6de4cdcaa05f34ff1fb517f90ca5181543fee16498e570f9b4bd6fadf59f1"
HB = 448
CHUNK = 262_144
AB = 97 * 256 + 98  # the parameter (context 'a', next 'b')

# The documented, stable --json keys (docs/bob-inspect.md).
CKPT_KEYS = {
    "command", "file", "auto", "kind", "size", "sha256", "fresh", "magic", "version", "header_bytes",
    "header_length", "partial_header", "step", "invocations", "contract", "header_digest", "chunk_count", "chunks", "planes",
    "note", "rows", "heatmap", "problems", "problem_count", "ok", "verdict",
}
INPUT_KEYS = {
    "command", "file", "auto", "kind", "size", "sha256", "magic", "version", "pairs", "chained", "sequence",
    "context_counts", "transitions", "targets_agree", "target_mismatches", "prompts", "problems",
    "problem_count", "ok", "verdict",
}
PRED_KEYS = {"command", "file", "auto", "kind", "size", "sha256", "hex", "records", "problems", "problem_count",
             "ok", "verdict"}
DIFF_KEYS = {"command", "a", "b", "identical", "first_differing_offset", "header", "planes", "ok", "verdict"}
PLANE_KEYS = {"count", "min", "max", "mean", "l2_norm", "non_finite", "nan", "inf", "negative", "zeros"}
CHUNK_KEYS = {"index", "plane", "tag", "offset", "length", "sha256", "computed_sha256", "tag_ok", "offset_ok",
              "length_ok", "digest_ok"}
PROBLEM_KEYS = {"error", "kind", "field", "index", "offset", "message", "expected", "actual", "text"}


def inspect(*args: str, code: int | None = 0, env: dict | None = None) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "bob.inspect", *args], capture_output=True, timeout=60,
                         env=env)
    if code is not None:
        assert out.returncode == code, (out.returncode, out.stdout.decode(errors="replace"),
                                        out.stderr.decode(errors="replace"))
    assert b"Traceback" not in out.stderr
    return out


def text(*args: str, code: int | None = 0) -> str:
    out = inspect(*args, code=code)
    raw = out.stdout
    assert raw.isascii() or all(b >= 0x20 or b == 0x0A for b in raw)
    return raw.decode()


def strict_json(raw: bytes) -> dict:
    def no_constants(name):  # NaN/Infinity are not JSON
        raise AssertionError(f"non-JSON constant {name} in output")

    assert raw.isascii()
    assert raw.count(b"\n") == 1  # one JSON object, one line
    return json.loads(raw, parse_constant=no_constants)


def js(*args: str, code: int | None = 0) -> dict:
    return strict_json(inspect(*args, "--json", code=code).stdout)


# --------------------------------------------------------------------------- #
# Files, built from the library (the §8 vector)
# --------------------------------------------------------------------------- #


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("inspect")
    rec = bob.build_input(b"abracadabra", [b"abra", b"cad", b""])
    (d / "rec.bin").write_bytes(rec.to_bytes())
    ck = bob.load_checkpoint(b"")
    for k in (1, 2, 3):
        bob.core.train(ck.p, ck.m, ck.v, rec.contexts, rec.targets, ck.step, 10)
        ck.step += 10
        (d / f"ck{k}.bin").write_bytes(ck.to_bytes())
    pred = Predictions.from_core(bob.core.predict(ck.p, rec.prompt_words))
    (d / "pred.bin").write_bytes(pred.to_bytes())
    (d / "empty.bin").write_bytes(b"")

    # two distinct problems: a wrong learner hyper-parameter (the header digest
    # recomputed, so the damage is only the contract) and a flipped byte in V
    learner = LEARNER_PREFIX + struct.pack("<5f", 0.5, 0.9, 0.999, 1e-8, 0.01)
    raw = bytearray(Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=Contract(learner=learner)).to_bytes())
    raw[HB + 2 * CHUNK + 4 * 100] ^= 0x01  # V[100]'s lowest mantissa bit
    (d / "two.bin").write_bytes(raw)

    # control characters in the contract strings
    evil = Contract(state=b"evil\x1b[2J\x1b]0;pwned\x07\r\nverdict: OK\x9b31m\xe2\x80\xae", seed=b"\x1b[31mred")
    (d / "evil.bin").write_bytes(
        Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=evil, header_bytes=canonical_header_bytes(evil)).to_bytes())

    # one value 3 ULP away
    one = ck.copy()
    for _ in range(3):
        one.p[AB] = np.nextafter(one.p[AB], np.float32(np.inf))
    (d / "one.bin").write_bytes(one.to_bytes())

    # state refused for resuming: a NaN in P, a negative V
    bad = ck.copy()
    bad.p[5] = np.nan
    bad.v[7] = -1.0
    (d / "state.bin").write_bytes(bad.to_bytes())
    return d


# --------------------------------------------------------------------------- #
# ckpt
# --------------------------------------------------------------------------- #


def test_ckpt_human_on_a_clean_checkpoint(files):
    out = text("ckpt", str(files / "ck3.bin"))
    assert '  magic         "BOB-CKPT"  ok' in out
    assert "  version       1  ok" in out
    assert "  step          30 (3 invocations)" in out
    assert "contract  (matches bob v1)" in out
    for name in ("state", "learner", "data", "seed", "payload_bytes", "chunk_bytes", "updates_per_invocation"):
        assert any(line.split()[:2] == [name, "ok"] for line in out.splitlines()), name
    assert "f32[lr=0.05, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01]" in out
    assert out.count("verified") == 4  # the header digest and the three chunks
    assert "MISMATCH" not in out
    for plane in "PMV":
        assert any(line.startswith(f"  {plane} ") for line in out.splitlines())
    assert out.rstrip().endswith("verdict: OK: a valid bob v1 checkpoint at step 30 (3 invocations); "
                                 "bob-run can resume it")


def test_ckpt_json_on_the_section8_checkpoint(files):
    path = files / "ck1.bin"
    r = js("ckpt", str(path))
    assert set(r) == CKPT_KEYS
    assert r["command"] == "ckpt" and r["kind"] == "ckpt" and r["auto"] is False
    assert r["sha256"] == CKPT_SHA_10 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (r["size"], r["header_bytes"], r["header_length"]) == (786_880, 448, 447)
    assert (r["step"], r["invocations"], r["version"]) == (10, 1, 1)
    assert r["magic"] == {"text": "BOB-CKPT", "hex": b"BOB-CKPT".hex(), "ok": True}
    fields = r["contract"]["fields"]
    assert r["contract"]["matches_v1"] and all(f["matches"] for f in fields.values())
    assert fields["learner"]["hyperparameters"] == {"lr": 0.05, "beta1": 0.9, "beta2": 0.999, "eps": 1e-08,
                                                    "weight_decay": 0.01}
    assert fields["learner"]["hyperparameter_mismatches"] == []
    assert fields["seed"]["value"] == "bob-seed-v1" and fields["payload_bytes"]["value"] == 786_432
    assert r["header_digest"]["ok"] and r["header_digest"]["stored"] == r["header_digest"]["computed"]
    ck = bob.load_checkpoint(path.read_bytes())
    for i, (c, plane) in enumerate(zip(r["chunks"], (ck.p, ck.m, ck.v))):
        assert set(c) == CHUNK_KEYS
        assert c["offset"] == HB + i * CHUNK and c["length"] == CHUNK and c["plane"] == "PMV"[i]
        assert c["sha256"] == c["computed_sha256"] == hashlib.sha256(plane.tobytes()).hexdigest()
        assert c["digest_ok"] and c["tag_ok"] and c["offset_ok"] and c["length_ok"]
    for name, plane in zip("PMV", (ck.p, ck.m, ck.v)):
        s = r["planes"][name]
        assert set(s) == PLANE_KEYS
        assert np.float32(s["min"]) == plane.min() and np.float32(s["max"]) == plane.max()
        assert s["mean"] == pytest.approx(float(plane.astype(np.float64).mean()), rel=1e-12, abs=1e-300)
        assert s["l2_norm"] == pytest.approx(float(np.linalg.norm(plane.astype(np.float64))), rel=1e-12)
        assert s["negative"] == int((plane < 0).sum()) and s["non_finite"] == 0
    assert r["planes"]["V"]["negative"] == 0 and r["planes"]["V"]["min"] == 0.0
    assert r["problems"] == [] and r["ok"] is True and r["rows"] is None and r["heatmap"] is None


def test_ckpt_rows_show_the_top5_next_bytes(files):
    path = files / "ck3.bin"
    r = js("ckpt", str(path), "--rows", "abra", "--rows-hex", "63,0x64")
    assert [row["context"] for row in r["rows"]] == [0x61, 0x62, 0x72, 0x63, 0x64]  # once each, in order
    p = bob.load_checkpoint(path.read_bytes()).p.reshape(256, 256).astype(np.float64)
    for row in r["rows"]:
        x = p[row["context"]]
        prob = np.exp(x - x.max()) / np.exp(x - x.max()).sum()
        top = row["top"]
        assert len(top) == 5 and row["finite"]
        assert [t["next"] for t in top] == list(np.argsort(-x, kind="stable")[:5])
        for t in top:
            assert t["probability"] == pytest.approx(prob[t["next"]], rel=1e-12)
    learned = {row["text"]: row["top"][0]["text"] for row in r["rows"]}
    assert learned == {"'b'": "'r'", "'r'": "'a'", "'c'": "'a'", "'d'": "'a'", "'a'": "'b'"}
    out = text("ckpt", str(path), "--rows", "b")
    assert "rows: top 5 next bytes (softmax of the P row, float64)" in out
    line = next(line for line in out.splitlines() if line.strip().startswith("'b' (0x62) ->"))
    assert line.split("->")[1].split()[:2] == ["'r'", f"{r['rows'][1]['top'][0]['probability']:.4f}"]


def test_a_checkpoint_with_two_problems_gets_both_named(files):
    path = files / "two.bin"
    out = text("ckpt", str(path), code=2)
    lines = out.splitlines()
    assert any(line.split()[:2] == ["learner", "MISMATCH"] for line in lines)
    assert "differs in lr 0.5 (bob v1: 0.05)" in out
    assert "problems (2)" in out
    assert any(line.startswith("  1. learner at offset 101:") for line in lines)
    assert any(line.startswith("  2. chunk_table[2].digest at offset 383: plane V") for line in lines)
    assert "verdict: 2 problems: bob-run refuses this checkpoint" in out
    assert "header digest   " in out and "header digest" in out and "MISMATCH (" not in out

    r = js("ckpt", str(path), code=2)
    assert [(p["field"], p["index"], p["kind"]) for p in r["problems"]] == [
        ("learner", None, "contract-mismatch"), ("chunk_table.digest", 2, "integrity")]
    assert all(set(p) == PROBLEM_KEYS for p in r["problems"])
    assert r["problem_count"] == 2 and r["ok"] is False
    assert r["header_digest"]["ok"] is True  # the damage is only the contract...
    assert [c["digest_ok"] for c in r["chunks"]] == [True, True, False]  # ...and plane V
    learner = r["contract"]["fields"]["learner"]
    assert learner["matches"] is False and learner["hyperparameters"]["lr"] == 0.5
    assert learner["hyperparameter_mismatches"] == ["lr"]
    assert all(f["matches"] for n, f in r["contract"]["fields"].items() if n != "learner")


def test_state_problems_are_reported_with_their_counts(files):
    r = js("ckpt", str(files / "state.bin"), code=2)
    assert [(p["field"], p["index"]) for p in r["problems"]] == [("P", 5), ("V", 7)]
    assert r["problems"][0]["actual"] == "nan"  # JSON-safe, not NaN
    assert (r["planes"]["P"]["non_finite"], r["planes"]["P"]["nan"]) == (1, 1)
    assert r["planes"]["V"]["negative"] == 1 and r["planes"]["V"]["min"] == -1.0
    out = text("ckpt", str(files / "state.bin"), code=2)
    assert "1 non-finite value(s) in plane P" in out and "negative value(s) in plane V" in out


def test_control_characters_from_the_file_are_escaped(files, tmp_path):
    hostile = tmp_path / "ck\x1b[31m\x07.bin"
    shutil.copy(files / "evil.bin", hostile)
    for args in (("ckpt", str(hostile)), (str(hostile),), ("diff", str(hostile), str(files / "ck3.bin"))):
        raw = inspect(*args, code=2).stdout
        assert raw.isascii()
        assert not any(b < 0x20 and b != 0x0A or b == 0x7F for b in raw), raw
        out = raw.decode()
        assert "ck\\x1b[31m\\x07.bin" in out
    out = text("ckpt", str(hostile), code=2)
    assert '"evil\\x1b[2J\\x1b]0;pwned\\x07\\x0d\\x0averdict: OK\\x9b31m\\xe2\\x80\\xae"' in out
    assert '"\\x1b[31mred"' in out
    r = strict_json(inspect("ckpt", str(hostile), "--json", code=2).stdout)
    assert r["contract"]["fields"]["seed"]["value"] == "\\x1b[31mred"
    assert r["contract"]["fields"]["seed"]["hex"] == b"\x1b[31mred".hex()
    assert [p["field"] for p in r["problems"]] == ["state", "seed"]


def test_an_unparsable_header_still_shows_the_fields_read_before_the_problem(files, tmp_path):
    raw = bytearray((files / "ck3.bin").read_bytes())
    raw[158:162] = struct.pack("<I", 5000)  # the data string's length prefix
    path = tmp_path / "long.bin"
    path.write_bytes(raw)
    r = js("ckpt", str(path), code=2)
    assert [f["field"] for f in r["partial_header"]] == ["magic", "version", "header_bytes", "step", "state",
                                                         "learner"]
    assert (r["version"], r["header_bytes"], r["step"], r["invocations"]) == (1, 448, 30, 3)
    assert r["contract"] is None and r["planes"] is None
    assert [(p["field"], p["offset"], p["kind"]) for p in r["problems"]] == [("data", 158, "truncated")]
    out = text("ckpt", str(path), code=2)
    assert "header: unreadable after 'learner' (see the problems); the fields read before it:" in out
    assert "f32[lr=0.05, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01]" in out


def test_an_empty_file_is_a_fresh_checkpoint(files):
    r = js(str(files / "empty.bin"))
    assert r["command"] == "ckpt" and r["auto"] is True and r["fresh"] is True and r["ok"] is True
    assert r["step"] == 0 and r["contract"] is None and r["chunks"] is None
    assert -0.01 <= r["planes"]["P"]["min"] and r["planes"]["P"]["max"] < 0.01
    assert r["planes"]["M"]["zeros"] == r["planes"]["V"]["zeros"] == 65_536
    assert "a fresh run's checkpoint" in text("ckpt", str(files / "empty.bin"))


# --------------------------------------------------------------------------- #
# input, pred
# --------------------------------------------------------------------------- #


def test_input_human(files):
    out = text("input", str(files / "rec.bin"))
    assert f"1564 bytes, sha256 {RECORD_SHA}" in out
    assert "    0  'a'>'b'  'b'>'r'  'r'>'a'  'a'>'c'  'c'>'a'  'a'>'d'  'd'>'a'  'a'>'b'" in out
    assert ('the pairs chain into one byte sequence: "abracadabraabracadabraabracadabraabracadabraabracadabra'
            'abracadab..."') in out
    assert "'a' x116  -> 'b' x47, 'a' x23, 'c' x23, 'd' x23" in out
    assert "'b' x47   -> 'r' x47" in out
    assert "targets table (256 x u32): agrees with the pairs' targets" in out
    assert "  0  word 0x00000061  last byte 'a'" in out
    assert "  1  word 0x00000064  last byte 'd'" in out
    assert "  2  word 0xffffffff  empty prompt" in out
    assert out.rstrip().endswith("verdict: OK: a valid bob-input v1 record")


def test_input_json(files):
    r = js("input", str(files / "rec.bin"))
    assert set(r) == INPUT_KEYS
    rec = bob.load_input((files / "rec.bin").read_bytes())
    assert r["pairs"] == [list(p) for p in rec.pairs]
    counts = rec.context_counts()
    assert r["context_counts"] == {str(b): int(counts[b]) for b in np.flatnonzero(counts)}
    assert r["context_counts"] == {"97": 116, "98": 47, "99": 23, "100": 23, "114": 47}
    assert r["targets_agree"] is True and r["target_mismatches"] == [] and r["chained"] is True
    assert [(p["word"], p["empty"], p["text"]) for p in r["prompts"]] == [
        (0x61, False, "'a'"), (0x64, False, "'d'"), (0xFFFFFFFF, True, None)]
    assert r["ok"] is True and r["sha256"] == RECORD_SHA


def test_input_with_a_wrong_target_still_shows_the_record(files, tmp_path):
    raw = bytearray((files / "rec.bin").read_bytes())
    raw[528 + 4 * 5] ^= 0x40  # the widened target of pair 5
    path = tmp_path / "bad.bin"
    path.write_bytes(raw)
    r = js("input", str(path), code=2)
    assert [(p["field"], p["index"]) for p in r["problems"]] == [("targets", 5)]
    assert r["targets_agree"] is False
    assert r["target_mismatches"] == [{"index": 5, "pair_target": 0x64, "table": 0x64 ^ 0x40}]  # 'a'>'d' 
    assert len(r["pairs"]) == 256
    out = text("input", str(path), code=2)
    assert "DISAGREES with the pairs at 1 index(es)" in out and "pair 5: pair target 'd', table 36" in out


def test_pred_human_and_json(files):
    out = text("pred", str(files / "pred.bin"))
    assert "  prompt 0: next byte 'b' (0x62), valid" in out  # 'abra' turns to 'b' at invocation 3 (§8)
    assert "  prompt 1: next byte 'a' (0x61), valid" in out
    assert "  prompt 2: no prediction (validity 0" in out
    r = js("pred", str(files / "pred.bin"))
    assert set(r) == PRED_KEYS
    assert r["hex"] == "620000000100000061000000010000000000000000000000"
    assert [(x["token"], x["validity"], x["valid"], x["text"]) for x in r["records"]] == [
        (0x62, 1, True, "'b'"), (0x61, 1, True, "'a'"), (0, 0, False, None)]


def test_pred_with_bad_records(tmp_path):
    path = tmp_path / "p.bin"
    path.write_bytes(struct.pack("<6I", 0x63, 2, 300, 1, 5, 0))
    r = js("pred", str(path), code=2)
    assert [(p["field"], p["index"]) for p in r["problems"]] == [("validity", 0), ("token", 1), ("token", 2)]
    assert [x["ok"] for x in r["records"]] == [False, False, False]
    assert "INVALID record (token 300, validity 1)" in text("pred", str(path), code=2)


# --------------------------------------------------------------------------- #
# auto-detection, errors
# --------------------------------------------------------------------------- #


def test_auto_detects_the_kind(files):
    for name, kind in (("ck2.bin", "ckpt"), ("rec.bin", "input"), ("pred.bin", "pred"), ("empty.bin", "ckpt")):
        r = js(str(files / name))
        assert (r["command"], r["kind"], r["auto"], r["ok"]) == (kind, kind, True, True), name
    out = text(str(files / "pred.bin"))
    assert out.startswith(f"bob-inspect pred: {files / 'pred.bin'}")
    r = strict_json(inspect("--json", "ckpt", str(files / "ck1.bin")).stdout)  # options before the command
    assert r["command"] == "ckpt" and r["auto"] is False


def test_missing_and_foreign_files_are_one_line_errors(files, tmp_path):
    for args in (("ckpt", str(tmp_path / "nope")), (str(tmp_path / "nope"),), ("diff", str(tmp_path / "nope"),
                 str(files / "ck1.bin")), ("input", str(tmp_path))):
        out = inspect(*args, code=2)
        assert out.stdout == b"" and out.stderr.count(b"\n") == 1, out.stderr
    assert inspect(str(tmp_path / "nope"), code=2).stderr.decode().endswith("nope: no such file\n")
    r = strict_json(inspect("ckpt", str(tmp_path / "nope"), "--json", code=2).stdout)
    assert r["ok"] is False and r["exit"] == 2 and r["error"].endswith("no such file")

    png = tmp_path / "x.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(40))
    err = inspect(str(png), code=2).stderr.decode()
    assert "not a bob file" in err and "\\x89PNG\\x0d\\x0a\\x1a\\x0a" in err
    r = js("ckpt", str(png), code=2)
    assert r["magic"]["ok"] is False and [p["kind"] for p in r["problems"]] == ["not-a-bob-file"]

    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.write(b"BOB-CKPT")
        f.truncate(1 << 20)
    r = js("ckpt", str(big), code=2)
    assert r["size"] == 1 << 20 and r["sha256"] is None and [p["field"] for p in r["problems"]] == ["file_size"]
    assert "was not read" in r["problems"][0]["message"]


def test_usage_errors_exit_2(files):
    inspect(code=2)
    inspect("ckpt", str(files / "ck1.bin"), "--rows-hex", "zz", code=2)
    err = inspect(str(files / "rec.bin"), "--rows", "a", code=2).stderr.decode()
    assert "apply to checkpoints" in err
    inspect("schema", "bogus", code=2)


# --------------------------------------------------------------------------- #
# diff
# --------------------------------------------------------------------------- #


def test_diff_of_one_value_reports_its_index_and_ulp(files):
    a, b = str(files / "ck3.bin"), str(files / "one.bin")
    r = js("diff", a, b)
    assert set(r) == DIFF_KEYS
    assert r["identical"] is False and r["ok"] is True
    p = r["planes"]["P"]
    assert p["differing"] == 1
    first = p["first"]
    assert (first["index"], first["context"], first["next"]) == (AB, 97, 98)
    assert (first["context_text"], first["next_text"], first["ulp"]) == ("'a'", "'b'", 3)
    assert int(first["b_hex"], 16) - int(first["a_hex"], 16) == 3
    assert p["max_ulp"]["value"] == 3 and p["max_ulp"]["index"] == AB
    assert p["max_abs_diff"]["index"] == AB
    va, vb = (np.uint32(int(first[k], 16)).view(np.float32) for k in ("a_hex", "b_hex"))
    assert (np.float32(first["a"]), np.float32(first["b"])) == (va, vb)
    assert p["max_abs_diff"]["value"] == float(vb) - float(va)
    assert r["planes"]["M"]["differing"] == r["planes"]["V"]["differing"] == 0
    assert [d["field"] for d in r["header"]["differences"]] == ["chunk_table[0].digest", "header_digest"]
    assert r["first_differing_offset"] == 279  # chunk_table[0].digest

    out = text("diff", a, b)
    assert "  P: 1 value(s) differ" in out
    assert f"     first at index {AB} = (context 'a', next 'b'): " in out and ", 3 ulp" in out
    assert f"     largest ULP distance 3 at index {AB} = (context 'a', next 'b')" in out
    assert "  M: identical" in out and "  V: identical" in out
    assert "verdict: different: P differs in 1 value; 2 header fields differ" in out


def test_diff_of_two_invocations_and_of_identical_files(files):
    r = js("diff", str(files / "ck1.bin"), str(files / "ck2.bin"))
    diffs = {d["field"]: (d["a"], d["b"]) for d in r["header"]["differences"]}
    assert diffs["step"] == (10, 20) and "learner" not in diffs
    assert r["planes"]["P"]["differing"] == 65_536 and r["planes"]["P"]["first"]["index"] == 0
    r = js("diff", str(files / "ck2.bin"), str(files / "ck2.bin"))
    assert r["identical"] is True and r["header"]["differences"] == []
    assert all(d["differing"] == 0 for d in r["planes"].values())
    assert "verdict: identical" in text("diff", str(files / "ck2.bin"), str(files / "ck2.bin"))


def test_diff_names_header_fields_and_the_files_problems(files):
    r = js("diff", str(files / "ck3.bin"), str(files / "two.bin"), code=2)
    fields = [d["field"] for d in r["header"]["differences"]]
    assert "learner" in fields and "chunk_table[2].digest" not in fields  # stored digests equal; V differs
    learner = next(d for d in r["header"]["differences"] if d["field"] == "learner")
    assert "lr=0.05" in learner["a"] and "lr=0.5," in learner["b"]
    assert r["planes"]["V"]["differing"] == 1 and r["planes"]["V"]["first"]["index"] == 100
    assert r["a"]["problems"] == [] and [p["field"] for p in r["b"]["problems"]] == ["learner",
                                                                                    "chunk_table.digest"]


def test_ulp_distance_is_on_a_monotonic_integer_line():
    xs = np.array([-np.inf, -3.0, -1e-38, -1e-45, -0.0, 0.0, 1e-45, 1e-38, 1.0, np.inf], dtype=np.float32)
    keys = ordered_keys(xs)
    assert list(keys) == sorted(keys) and keys[4] == keys[5] == 0
    one = np.float32(1.0)
    up = np.nextafter(one, np.float32(2))
    assert ulp_distance(np.array([one]), np.array([up]))[0] == 1
    tiny = np.nextafter(np.float32(0), np.float32(1))
    assert ulp_distance(np.array([-tiny]), np.array([tiny]))[0] == 2


# --------------------------------------------------------------------------- #
# schema
# --------------------------------------------------------------------------- #


def test_schema_tables_come_from_the_schemas():
    r = js("schema")
    assert [(f["kind"], f["format"], f["version"]) for f in r["formats"]] == [
        ("input", "bob-input", 1), ("envelope", "bob-envelope", 1), ("pred", "bob-predictions", None)]
    for f, kind in zip(r["formats"], ("input", "envelope", "predictions")):
        assert f["fields"] == [dict(offset=x.offset, size=x.size, field=x.field, meaning=x.meaning)
                               for x in layout_rows(kind)]
    sizes = {f["kind"]: f["size"] for f in r["formats"]}
    assert sizes == {"input": 1564, "envelope": 786_880, "pred": 24}
    env = {x["field"]: (x["offset"], x["size"]) for x in r["formats"][1]["fields"]}
    assert env["header_digest"] == (415, 32) and env["P"] == (448, CHUNK)
    assert js("schema", "pred")["formats"][0]["fields"][1]["field"] == "records[0].validity"
    assert js("schema", "ckpt")["formats"][0]["kind"] == "envelope"
    out = text("schema", "input")
    assert out.splitlines()[0] == "bob-input v1: 1564 bytes"
    assert any(line.split()[:3] == ["528", "1024", "targets"] for line in out.splitlines())


# --------------------------------------------------------------------------- #
# --heatmap
# --------------------------------------------------------------------------- #


def test_heatmap_without_matplotlib_says_how_to_install(files, tmp_path):
    shim = tmp_path / "shim" / "matplotlib"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('matplotlib is hidden by the test')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(shim.parent)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    out_png = tmp_path / "h.png"
    out = inspect("ckpt", str(files / "ck3.bin"), "--heatmap", str(out_png), code=2, env=env)
    assert "pip install 'bob[plot]'" in out.stderr.decode() and out.stdout == b""
    assert not out_png.exists()


def test_heatmap_of_the_section8_checkpoint_after_3_invocations(files, tmp_path):
    pytest.importorskip("matplotlib")
    out_png = tmp_path / "p-step30.png"
    r = js("ckpt", str(files / "ck3.bin"), "--heatmap", str(out_png))
    data = out_png.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
    assert r["heatmap"]["format"] == "png"
    assert r["heatmap"]["rows_shown"] == [ord(c) for c in "abcdr"]  # the rows the corpus trains
    keep = os.environ.get("BOB_INSPECT_HEATMAP_DIR")  # to look at it: set this and run the test
    if keep:
        shutil.copy(out_png, Path(keep) / out_png.name)


# --------------------------------------------------------------------------- #
# golden vectors, when the formats layer has them
# --------------------------------------------------------------------------- #


GOLDEN = ROOT / "formats" / "golden"


def _golden(pattern: str) -> list[Path]:
    return sorted(GOLDEN.glob(pattern)) if GOLDEN.is_dir() else []


def test_golden_valid_files_human_and_json():
    paths = _golden("*.bin")
    for path in paths:
        want = json.loads(path.with_suffix(".json").read_text())
        r = js(str(path))  # detected from the magic / size
        assert r["ok"] is True and r["sha256"] == want["sha256"] and r["size"] == want["size"], path
        if want["format"] == "bob-envelope":
            assert r["command"] == "ckpt" and r["step"] == want["step"]
            assert r["header_digest"]["stored"] == want["header_sha256"]
            assert [c["sha256"] for c in r["chunks"]] == [c["sha256"] for c in want["chunk_table"]]
            learner = r["contract"]["fields"]["learner"]["hyperparameters"]
            assert learner == {k: want["contract"]["learner"][k] for k in learner}
            for name, plane in want["planes"].items():
                assert (r["planes"][name]["min"], r["planes"][name]["max"]) == pytest.approx(
                    (plane["min"], plane["max"]), rel=1e-7)
                assert r["planes"][name]["count"] - r["planes"][name]["zeros"] == plane["nonzero"]
        elif want["format"] == "bob-input":
            assert r["command"] == "input" and r["pairs"] == want["pairs"]
            assert r["context_counts"] == want["context_counts"]
            assert [p["word"] for p in r["prompts"]] == want["prompt_words"]
        else:
            assert r["command"] == "pred" and r["hex"] == want["hex"]
            assert [(x["token"], x["validity"]) for x in r["records"]] == [
                (x["token"], x["validity"]) for x in want["records"]]
        raw = inspect(str(path)).stdout  # human: no byte of the file reaches the terminal raw
        assert raw.isascii() and not any(b < 0x20 and b != 0x0A or b == 0x7F for b in raw), path
    assert len(paths) >= 5 or not GOLDEN.is_dir()


def test_golden_refused_files_get_every_finding_named():
    paths = _golden("refused/*.bin")
    for path in paths:
        want = json.loads(path.with_suffix(".json").read_text())["findings"]
        kind = path.name.split("-")[0]
        command = {"checkpoint": "ckpt", "input": "input", "predictions": "pred"}[kind]
        r = js(command, str(path), code=2)
        got = [{k: p[k] for k in ("error", "field", "index", "offset")} for p in r["problems"]]
        assert got == want, path
        out = text(command, str(path), code=2)
        assert f"problems ({len(want)})" in out and f"verdict: {len(want)} problem" in out, path
    assert len(paths) >= 3 or not GOLDEN.is_dir()
