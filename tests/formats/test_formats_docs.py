"""formats/*.md cannot drift from the schemas: their layout tables are checked
against the construct objects, and the schemas against the contract's tables."""

from __future__ import annotations

import os
import re

import pytest
from conftest import ROOT

from bob.formats.docs import KINDS, layout_rows, markdown_table, rules_table
from bob.formats.checkpoint import CHUNK_ENTRY, ENVELOPE, HEADER_BODY, HEADER_BYTES, header_length
from bob.formats.input_record import INPUT_RECORD
from bob.formats.predictions import PREDICTIONS

DOCS = {"input": "input.md", "envelope": "envelope.md", "predictions": "predictions.md", "trace": "trace.md"}


def block(kind: str) -> str:
    with open(os.path.join(ROOT, "formats", DOCS[kind]), encoding="utf-8") as f:
        text = f.read()
    found = re.findall(rf"<!-- layout: {kind} -->\n(.*?)<!-- /layout -->", text, flags=re.S)
    assert len(found) == 1, f"formats/{DOCS[kind]} needs exactly one layout block for {kind}"
    return found[0]


@pytest.mark.parametrize("kind", KINDS)
def test_document_table_matches_schema(kind):
    assert block(kind) == markdown_table(layout_rows(kind)), (
        f"formats/{DOCS[kind]} is out of date; regenerate its table with "
        f"bob.formats.docs.markdown_table(layout_rows({kind!r}))"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_rows_tile_the_file(kind):
    rows = layout_rows(kind)
    pos = 0
    for row in rows:
        assert row.offset == pos, row
        assert row.meaning, f"{row.field} has no meaning in the schema"
        pos += row.size
    assert pos == {"input": 1564, "envelope": 786_880, "predictions": 24, "trace": 816}[kind]


def test_input_schema_is_the_contract_table():
    # python/bob/data/contract/bob-v1.md §3: offset, size, field
    expected = [(0, 8, "magic"), (8, 8, "version"), (16, 512, "pairs"), (528, 1024, "targets"),
                (1552, 12, "prompt_words")]
    assert [(r.offset, r.size, r.field) for r in layout_rows("input")] == expected
    assert INPUT_RECORD.sizeof() == 1564


def test_envelope_schema_is_the_contract_table():
    rows = {r.field: (r.offset, r.size) for r in layout_rows("envelope")}
    # §5: magic 8, version u64, header_bytes u64, step u64, then the four strings
    assert rows["magic"] == (0, 8) and rows["version"] == (8, 8)
    assert rows["header_bytes"] == (16, 8) and rows["step"] == (24, 8)
    assert rows["state.length"] == (32, 4) and rows["state"] == (36, 65)
    assert rows["learner"][1] == 53 and rows["data"][1] == 54 and rows["seed"][1] == 11
    assert CHUNK_ENTRY.sizeof() == 52
    for i in range(3):
        assert rows[f"chunk_table[{i}].tag"][1] == 4 and rows[f"chunk_table[{i}].digest"][1] == 32
    assert rows["header_digest"] == (415, 32)
    assert header_length() == 447 and HEADER_BYTES == 448
    assert rows["P"] == (448, 262_144) and rows["V"] == (448 + 2 * 262_144, 262_144)
    assert HEADER_BODY.subcons and ENVELOPE.subcons


def test_predictions_schema_is_the_contract_table():
    rows = [(r.offset, r.size, r.field) for r in layout_rows("predictions")]
    assert rows == [(8 * i + 4 * j, 4, f"records[{i}].{name}") for i in range(3)
                    for j, name in enumerate(("token", "validity"))]
    assert PREDICTIONS.sizeof() == 24


def test_decisions_document_exists():
    with open(os.path.join(ROOT, "formats", "DECISIONS.md"), encoding="utf-8") as f:
        text = f.read()
    assert text.count("\n## D") >= 5
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", text))
    assert len(named) >= 10
    defined = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        defined |= set(re.findall(r"^def (test_[a-z0-9_]+)", path.read_text(encoding="utf-8"), flags=re.M))
    assert named <= defined, f"DECISIONS.md names tests that do not exist: {sorted(named - defined)}"


@pytest.mark.parametrize("kind", KINDS)
def test_document_rules_table_matches_the_rules(kind):
    with open(os.path.join(ROOT, "formats", DOCS[kind]), encoding="utf-8") as f:
        found = re.findall(rf"<!-- rules: {kind} -->\n(.*?)<!-- /rules -->", f.read(), flags=re.S)
    assert found == [rules_table(kind)], (
        f"formats/{DOCS[kind]} needs one rules block equal to bob.formats.docs.rules_table({kind!r})")
