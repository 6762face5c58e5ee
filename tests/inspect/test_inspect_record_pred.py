"""bob-inspect input and pred (in-process): human and --json, damaged files."""

from __future__ import annotations

import struct

import numpy as np

import bob

from conftest import RECORD_SHA256 as RECORD_SHA  # noqa: E402

# The documented, stable --json keys (docs/bob-inspect.md).
INPUT_KEYS = {
    "command", "file", "auto", "kind", "size", "sha256", "magic", "version", "pairs", "chained", "sequence",
    "context_counts", "transitions", "targets_agree", "target_mismatches", "prompts", "problems",
    "problem_count", "ok", "verdict", "exit_code", "error",
}
PRED_KEYS = {"command", "file", "auto", "kind", "size", "sha256", "hex", "records", "problems", "problem_count",
             "ok", "verdict", "exit_code", "error"}


def test_input_human(cli, files):
    out = cli.text("input", str(files / "rec.bin"))
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


def test_input_json(cli, files):
    r = cli.json("input", str(files / "rec.bin"))
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


def test_input_with_a_wrong_target_still_shows_the_record(cli, files, tmp_path):
    raw = bytearray((files / "rec.bin").read_bytes())
    raw[528 + 4 * 5] ^= 0x40  # the widened target of pair 5
    path = tmp_path / "bad.bin"
    path.write_bytes(raw)
    r = cli.json("input", str(path), code=2)
    assert [(p["field"], p["index"]) for p in r["problems"]] == [("targets", 5)]
    assert r["targets_agree"] is False
    assert r["target_mismatches"] == [{"index": 5, "pair_target": 0x64, "table": 0x64 ^ 0x40}]  # 'a'>'d'
    assert len(r["pairs"]) == 256
    out = cli.text("input", str(path), code=2)
    assert "DISAGREES with the pairs at 1 index(es)" in out and "pair 5: pair target 'd', table 36" in out


def test_an_oversized_input_record_is_not_read(cli, files, tmp_path):
    path = tmp_path / "long-input.bin"
    path.write_bytes((files / "rec.bin").read_bytes() + b"\0")
    r = cli.json("input", str(path), code=2)
    assert r["size"] == 1565 and r["sha256"] is None and r["pairs"] is None
    assert [p["field"] for p in r["problems"]] == ["file_size"] and "was not read" in r["problems"][0]["message"]


def test_pred_human_and_json(cli, files):
    out = cli.text("pred", str(files / "pred.bin"))
    assert "  prompt 0: next byte 'b' (0x62), valid" in out  # 'abra' turns to 'b' at invocation 3 (§8)
    assert "  prompt 1: next byte 'a' (0x61), valid" in out
    assert "  prompt 2: no prediction (validity 0" in out
    r = cli.json("pred", str(files / "pred.bin"))
    assert set(r) == PRED_KEYS
    assert r["hex"] == "620000000100000061000000010000000000000000000000"
    assert [(x["token"], x["validity"], x["valid"], x["text"]) for x in r["records"]] == [
        (0x62, 1, True, "'b'"), (0x61, 1, True, "'a'"), (0, 0, False, None)]


def test_pred_with_bad_records(cli, tmp_path):
    path = tmp_path / "p.bin"
    path.write_bytes(struct.pack("<6I", 0x63, 2, 300, 1, 5, 0))
    r = cli.json("pred", str(path), code=2)
    assert [(p["field"], p["index"]) for p in r["problems"]] == [("validity", 0), ("token", 1), ("token", 2)]
    assert [x["ok"] for x in r["records"]] == [False, False, False]
    assert "INVALID record (token 300, validity 1)" in cli.text("pred", str(path), code=2)


def test_pred_on_an_input_record_names_it(cli, files):
    r = cli.json("pred", str(files / "rec.bin"), code=2)
    assert r["records"] is None and r["hex"] is None and r["problem_count"] >= 1
    assert "input record" in r["problems"][0]["text"]
