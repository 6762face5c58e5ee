"""bob-inspect schema, and the golden vectors of python/bob/data/golden (in-process)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bob.formats.docs import layout_rows

from conftest import GOLDEN, ROOT  # noqa: E402
CHUNK = 262_144


def test_schema_tables_come_from_the_schemas(cli):
    r = cli.json("schema")
    assert [(f["kind"], f["format"], f["version"]) for f in r["formats"]] == [
        ("input", "bob-input", 1), ("checkpoint", "bob-envelope", 1), ("predictions", "bob-predictions", None),
        ("trace", "bob-trace", 2)]
    for f, kind in zip(r["formats"], ("input", "envelope", "predictions", "trace"), strict=True):
        assert f["fields"] == [dict(offset=x.offset, size=x.size, field=x.field, meaning=x.meaning)
                               for x in layout_rows(kind)]
    sizes = {f["kind"]: f["size"] for f in r["formats"]}
    assert sizes == {"input": 1564, "checkpoint": 786_880, "predictions": 24, "trace": 816}
    env = {x["field"]: (x["offset"], x["size"]) for x in r["formats"][1]["fields"]}
    assert env["header_digest"] == (415, 32) and env["P"] == (448, CHUNK)
    assert cli.json("schema", "pred")["formats"][0]["fields"][1]["field"] == "records[0].validity"
    assert cli.json("schema", "ckpt")["formats"][0]["kind"] == "checkpoint"
    out = cli.text("schema", "input")
    assert out.splitlines()[0] == "bob-input v1: 1564 bytes"
    assert any(line.split()[:3] == ["528", "1024", "targets"] for line in out.splitlines())
    assert "256 \u00d7 u32" in out  # bob's own printable text is not escaped by the last guard
    assert "bob-envelope v1: 786880 bytes (offsets of the canonical 448-byte header)" in cli.text("schema", "envelope")


def _golden(pattern: str) -> list[Path]:
    return sorted(GOLDEN.glob(pattern)) if GOLDEN.is_dir() else []


def test_golden_valid_files_human_and_json(cli):
    paths = _golden("*.bin")
    for path in paths:
        want = json.loads(path.with_suffix(".json").read_text())
        r = cli.json(str(path))  # detected from the magic / size
        sha256 = hashlib.sha256(path.read_bytes()).hexdigest()  # (a trace's JSON is what it holds: no file digest)
        assert r["ok"] is True and r["sha256"] == want.get("sha256", sha256) == sha256, path
        assert r["size"] == want.get("size", path.stat().st_size) == path.stat().st_size, path
        if want["format"] == "bob-envelope":
            assert r["command"] == "bob-inspect checkpoint" and r["step"] == want["step"]
            assert r["header_digest"]["stored"] == want["header_sha256"]
            assert [c["sha256"] for c in r["chunks"]] == [c["sha256"] for c in want["chunk_table"]]
            learner = r["contract"]["fields"]["learner"]["hyperparameters"]
            assert learner == {k: want["contract"]["learner"][k] for k in learner}
            for name, plane in want["planes"].items():
                assert (r["planes"][name]["min"], r["planes"][name]["max"]) == pytest.approx(
                    (plane["min"], plane["max"]), rel=1e-7)
                assert r["planes"][name]["count"] - r["planes"][name]["zeros"] == plane["nonzero"]
        elif want["format"] == "bob-input":
            assert r["command"] == "bob-inspect input" and r["pairs"] == want["pairs"]
            assert r["context_counts"] == want["context_counts"]
            assert [p["word"] for p in r["prompts"]] == want["prompt_words"]
        elif want["format"] == "bob-trace":
            assert r["command"] == "bob-inspect trace"
            assert (r["start"], r["entries"]) == (want["start"], want["entries"])
        else:
            assert r["command"] == "bob-inspect predictions" and r["hex"] == want["hex"]
            assert [(x["token"], x["validity"]) for x in r["records"]] == [
                (x["token"], x["validity"]) for x in want["records"]]
        raw = cli.run(str(path)).stdout  # human: no byte of the file reaches the terminal raw
        assert raw.isascii() and not any(b < 0x20 and b != 0x0A or b == 0x7F for b in raw), path
    assert len(paths) >= 5 or not GOLDEN.is_dir()


def test_golden_refused_files_get_every_finding_named(cli):
    paths = _golden("refused/*.bin")
    for path in paths:
        want = json.loads(path.with_suffix(".json").read_text())["findings"]
        kind = path.name.split("-")[0]
        command = {"checkpoint": "ckpt", "input": "input", "predictions": "pred"}[kind]
        r = cli.json(command, str(path), code=2)
        got = [{k: p[k] for k in ("error", "field", "index", "offset")} for p in r["problems"]]
        assert got == want, path
        out = cli.text(command, str(path), code=2)
        assert f"problems ({len(want)})" in out and f"verdict: {len(want)} problem" in out, path
    assert len(paths) >= 3 or not GOLDEN.is_dir()
