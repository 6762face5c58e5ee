"""Edges of the formats library that mutation testing showed no test held
(docs/testing.md): kind detection by magic and size, the resume switch of
Checkpoint.from_bytes/read, the printable range of a prediction's byte, a
record's context counts, the header layout's first offset, the contract
shown in a checkpoint's repr."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import bob
from bob.formats.checks import examine
from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC, PREDICTION_BYTES
from bob.formats.kinds import CHECKPOINT, INPUT, PREDICTIONS, detect_kind
from conftest import CORPUS, PROMPTS


@pytest.mark.parametrize("head, size, kind", [
    (b"", 0, CHECKPOINT),  # an empty file is a fresh run's checkpoint
    (CHECKPOINT_MAGIC, 5, CHECKPOINT),
    (CHECKPOINT_MAGIC + b"x" * 16, 1_000_000, CHECKPOINT),
    (INPUT_MAGIC, 1564, INPUT),
    (INPUT_MAGIC, PREDICTION_BYTES, INPUT),  # the magic wins over the size
    (b"\0" * 8, PREDICTION_BYTES, PREDICTIONS),
    (b"\0" * 8, PREDICTION_BYTES + 1, None),
    (b"abc", 3, None),
])
def test_detect_kind(head: bytes, size: int, kind: str | None) -> None:
    assert detect_kind(head, size) == kind


@pytest.fixture(scope="module")
def unresumable() -> bytes:
    """A well-formed checkpoint bob must not resume: V negative at one index."""
    ck = bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint
    ck.v[7] = -1.0
    return ck.to_bytes()


def test_from_bytes_and_read_refuse_an_unresumable_state_unless_asked_not_to(unresumable: bytes,
                                                                            tmp_path: Path) -> None:
    path = tmp_path / "ck.bin"
    path.write_bytes(unresumable)
    for load in (lambda **kw: bob.Checkpoint.from_bytes(unresumable, **kw),
                 lambda **kw: bob.Checkpoint.read(path, **kw)):
        with pytest.raises(bob.StateRefused) as info:
            load()
        assert (info.value.field, info.value.index) == ("V", 7)
        loaded = load(for_resume=False)  # to inspect it, not to train on it
        assert loaded.v[7] == -1.0 and loaded.to_bytes() == unresumable


def test_repr_names_the_contract() -> None:
    ck = bob.Checkpoint.fresh()
    assert repr(ck) == "Checkpoint(step=0, invocations=0, header_bytes=448, contract=v1)"
    other = bob.Checkpoint(0, ck.p, ck.m, ck.v, contract=bob.Contract(seed=b"elsewhere"))
    assert repr(other).endswith(", contract=non-v1)")


def test_a_predicted_byte_is_shown_only_when_printable() -> None:
    def shown(*records):
        return [r["byte"] for r in bob.Predictions(list(records)).as_dict()["records"]]

    assert shown((0x1F, 1), (0x20, 1), (0x7E, 1)) == [None, " ", "~"]
    assert shown((0x7F, 1), (0x41, 1), (0, 0)) == [None, "A", None]


def test_context_counts_cover_every_byte() -> None:
    counts = bob.build_input(CORPUS, PROMPTS).context_counts()
    assert counts.shape == (256,) and counts.dtype == np.int64 and counts.sum() == 256
    assert counts[ord("a")] == 116 and counts[0xFF] == 0


def test_the_header_layout_starts_at_offset_0(unresumable: bytes) -> None:
    rows = examine(unresumable, for_resume=False).header_rows()
    assert rows[0].offset == 0 and rows[0].size == 8 and rows[0].field == "magic"
    assert [r.offset for r in rows] == sorted(r.offset for r in rows)


def test_describing_an_unresumable_envelope_still_works(unresumable: bytes) -> None:
    """Inspection describes a well-formed file bob would not resume (the
    state checks are for resuming, not for reading)."""
    from bob.formats.envelope import describe_envelope

    described = describe_envelope(unresumable)
    assert described["step"] == 10 and described["contract"]["seed"] == "bob-seed-v1"
    assert [e["tag"] for e in described["chunk_table"]] == ["P", "M", "V"] and described["chunk_count"] == 3


def test_schemas_without_a_fixed_size_say_so() -> None:
    from construct import SizeofError

    from bob.formats.envelope import ContractString, ENVELOPE

    with pytest.raises(SizeofError, match="a length-prefixed field has no fixed size"):
        ContractString.sizeof()
    with pytest.raises(SizeofError, match="has no fixed size|depends on the header"):
        ENVELOPE.sizeof()
    from bob.formats.schema import ZeroPadding

    with pytest.raises(SizeofError) as info:
        ZeroPadding(lambda this: this.header.value.header_bytes).sizeof()
    assert str(info.value) == "Error in path (sizeof)\npadding size depends on the header"
    assert ZeroPadding(5).sizeof() == 5


def test_reading_files_names_what_was_refused(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"NOT-BOB!" + bytes(5000))
    with pytest.raises(bob.NotABobFile) as info:
        bob.read_input_file(big)
    assert str(info.value) == ('magic at offset 0: not an input record (bob-input): wrong magic '
                               '(expected "BOB-INPT", got "NOT-BOB!")')
    big.write_bytes(b"NOT-BOB!" + bytes(900_000))
    with pytest.raises(bob.NotABobFile) as info:
        bob.read_checkpoint_file(big)
    assert str(info.value) == ('magic at offset 0: not a checkpoint (bob-envelope): wrong magic '
                               '(expected "BOB-CKPT", got "NOT-BOB!")')
    big.write_bytes(INPUT_MAGIC + bytes(5000))
    with pytest.raises(bob.Truncated) as too_big:
        bob.read_input_file(big)
    assert (too_big.value.field, too_big.value.actual) == ("file_size", 5008)
    with pytest.raises(FileNotFoundError) as missing:
        bob.read_predictions_file(tmp_path / "nothing-here")
    assert missing.value.filename == str(tmp_path / "nothing-here")


def test_layout_tables_escape_pipes_and_refuse_unknown_kinds() -> None:
    from bob.formats.docs import layout_rows, markdown_table, sample
    from bob.formats.schema import FieldRow

    row = FieldRow(offset=4, size=2, field="flags", meaning="a | b")
    assert markdown_table([row]).splitlines()[-1] == "| 4 | 2 | `flags` | a \\| b |"
    for call in (layout_rows, sample):
        with pytest.raises(ValueError, match="unknown format kind 'bogus'; one of input, envelope, predictions"):
            call("bogus")
