"""One trace inspected (``bob-inspect FILE.trace``, ``bob-inspect trace FILE``), from hand-made bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bob
from bob.formats.constants import PLANE_NAMES, TRACE_UPDATES
from bob.formats.layout import TRACE_BODY_BYTES, TRACE_HEAD
from bob.formats.trace import contract_sha256
from bob.inspect.cli import main

FILE_KEYS = {"command", "ok", "exit_code", "error", "file", "auto", "kind", "size", "sha256", "contract_sha256",
             "input_sha256", "step_before", "step_after", "start", "entries", "problems", "problem_count", "verdict"}


def trace_bytes() -> bytes:
    entries = tuple((21 + i, 2.0 - i / 8, (bytes([i]) * 16, bytes([i + 1]) * 16, bytes([i + 2]) * 16))
                    for i in range(TRACE_UPDATES))
    return bob.Trace(contract_sha256(), b"\x22" * 32, 20, (b"\x33" * 16,) * 3, entries).to_bytes()


def inspect_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("form", [[], ["trace"]])
def test_a_valid_trace_is_reported_with_its_identity_and_updates(tmp_path: Path, capsys, form) -> None:
    path = tmp_path / "run.trace"
    path.write_bytes(trace_bytes())
    code, doc = inspect_json(capsys, *form, str(path))
    assert code == 0 and set(doc) == FILE_KEYS
    assert (doc["command"], doc["kind"], doc["auto"], doc["ok"]) == ("bob-inspect trace", "trace", not form, True)
    assert (doc["contract_sha256"], doc["step_before"], doc["step_after"]) == (contract_sha256().hex(), 20, 20 + TRACE_UPDATES)
    assert [e["step"] for e in doc["entries"]] == list(range(21, 21 + TRACE_UPDATES))
    assert doc["entries"][1] == {"step": 22, "loss": 2.0 - 1 / 8, **{n: bytes([1 + k]).hex() * 16
                                                                     for k, n in enumerate(PLANE_NAMES)}}
    assert main([*form, str(path)]) == 0
    text = capsys.readouterr().out
    assert "        22      1.875000  " + "  ".join(bytes([1 + k]).hex() * 8 for k in range(3)) in text
    assert "verdict: OK: a valid bob-trace v2 trace" in text


def test_a_damaged_trace_names_each_problem_by_field_and_offset(tmp_path: Path, capsys) -> None:
    data = bytearray(trace_bytes())
    data[TRACE_HEAD["step_before"].offset] ^= 1  # the step before: now no entry's step follows it, nor the digest
    path = tmp_path / "bad.trace"
    path.write_bytes(bytes(data))
    code, doc = inspect_json(capsys, str(path))
    assert code == 2 and set(doc) == FILE_KEYS and doc["error"] is None
    assert [(p["field"], p["offset"]) for p in doc["problems"]][:2] == [
        ("digest", TRACE_BODY_BYTES), ("entries.step", TRACE_HEAD["update_count"].end)]
    assert doc["problem_count"] == 1 + TRACE_UPDATES
    # reported in full, as the bytes read (README): they were all null, the problems alone said which entry
    assert doc["step_before"] == bob.load_trace(trace_bytes()).step_before ^ 1 and len(doc["entries"]) == TRACE_UPDATES
    assert main([str(path)]) == 2
    out = capsys.readouterr().out
    assert f"entries[0].step at offset {TRACE_HEAD['update_count'].end}" in out and "updates (step, loss" in out
    data[TRACE_HEAD["step_before"].offset:TRACE_HEAD["step_before"].end] = b"\xff" * 8  # no step after it is a u64
    path.write_bytes(bytes(data))
    assert inspect_json(capsys, str(path))[1]["step_after"] is None  # (it showed 2**64 + 9)
    assert main([str(path)]) == 2 and "  step_after       -\n" in capsys.readouterr().out  # (the text's none, not None)


def test_a_trace_cut_short_and_checkpoint_options_on_a_trace(tmp_path: Path, capsys) -> None:
    path = tmp_path / "cut.trace"
    path.write_bytes(trace_bytes()[:TRACE_HEAD["input_sha256"].offset + 3])
    code, doc = inspect_json(capsys, str(path))
    assert code == 2 and [(p["field"], p["kind"]) for p in doc["problems"]] == [("input_sha256", "truncated")]
    assert doc["entries"] is None and doc["step_before"] is None  # (a layout that does not read: nothing shown)
    code, doc = inspect_json(capsys, str(path), "--rows", "a")
    assert code == 2 and "it is a trace" in doc["error"]["message"]
    code, doc = inspect_json(capsys, "trace", str(path), "--checkpoints", "a", "b")
    assert code == 2 and "give A and B" in doc["error"]["message"]
