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
from bob.formats.checkpoint import examine
from bob.formats.constants import CHECKPOINT_MAGIC, INPUT_MAGIC, PREDICTION_BYTES, TRACE_MAGIC
from bob.formats.kinds import CHECKPOINT, INPUT, PREDICTIONS, TRACE, detect_kind
from bob.formats.layout import TRACE_BYTES
from conftest import CORPUS, GOLDEN, PROMPTS


@pytest.mark.parametrize("head, size, kind", [
    (b"", 0, CHECKPOINT),  # an empty file is a fresh run's checkpoint
    (CHECKPOINT_MAGIC, 5, CHECKPOINT),
    (CHECKPOINT_MAGIC + b"x" * 16, 1_000_000, CHECKPOINT),
    (INPUT_MAGIC, 1564, INPUT),
    (INPUT_MAGIC, PREDICTION_BYTES, INPUT),  # the magic wins over the size
    (TRACE_MAGIC, TRACE_BYTES, TRACE),
    (TRACE_MAGIC, 3, TRACE),  # a trace cut short is still a trace (its report names the cut)
    (TRACE_MAGIC, PREDICTION_BYTES, TRACE),
    (b"BOB-TRC", 7, TRACE),  # cut inside one magic: that kind, whose reader says where (D1)
    (b"BOB-C", 5, CHECKPOINT),
    (b"BOB-", 4, None),  # the start of every magic: no kind
    (b"BOB-TRCX", 8, None),
    (b"\0" * 8, PREDICTION_BYTES, PREDICTIONS),
    (b"\0" * 8, PREDICTION_BYTES + 1, None),
    (b"abc", 3, None),
])
def test_detect_kind(head: bytes, size: int, kind: str | None) -> None:
    assert detect_kind(head, size) == kind


@pytest.mark.parametrize("magic", [CHECKPOINT_MAGIC, INPUT_MAGIC, TRACE_MAGIC])
def test_no_valid_predictions_file_starts_with_a_bob_magic(magic: bytes) -> None:
    # why detect_kind may check the magics before the predictions' size
    from bob.formats.predictions import predictions_findings

    data = magic + bytes(PREDICTION_BYTES - len(magic))
    assert [f.field for f in predictions_findings(data)][:1] == ["validity"]


@pytest.fixture(scope="module")
def unresumable() -> bytes:
    """A well-formed checkpoint bob must not resume: V negative at one index."""
    ck = bob.invoke(bob.build_input(CORPUS, PROMPTS)).checkpoint
    ck.v[7] = -1.0
    return ck.to_bytes(for_resume=False)


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
        assert loaded.v[7] == -1.0 and loaded.to_bytes(for_resume=False) == unresumable
        with pytest.raises(bob.StateRefused) as written:  # and a writer refuses it, as the reader does
            loaded.to_bytes()
        assert (written.value.field, written.value.index) == ("V", 7)


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
    from bob.formats.checkpoint import describe_envelope

    described = describe_envelope(unresumable)
    assert described["step"] == 10 and described["contract"]["seed"] == "bob-seed-v1"
    assert [e["tag"] for e in described["chunk_table"]] == ["P", "M", "V"] and described["chunk_count"] == 3


def test_schemas_without_a_fixed_size_say_so() -> None:
    from construct import SizeofError

    from bob.formats.checkpoint import ContractString, ENVELOPE

    with pytest.raises(SizeofError) as no_size:
        ContractString.sizeof()
    assert str(no_size.value) == "Error in path (sizeof)\na length-prefixed field has no fixed size"
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
    assert too_big.value.to_dict() == {
        "error": "Truncated", "kind": "truncated", "field": "file_size", "index": None, "offset": None,
        "message": "the file is larger than any valid one (1564 bytes); it was not read",
        "expected": "at most 1564", "actual": 5008,
        "text": "file_size: the file is larger than any valid one (1564 bytes); it was not read "
                "(expected at most 1564, got 5008)"}
    with pytest.raises(FileNotFoundError) as missing:
        bob.read_predictions_file(tmp_path / "nothing-here")
    assert (missing.value.errno, missing.value.strerror, missing.value.filename) == (
        2, "No such file or directory", str(tmp_path / "nothing-here"))


def test_layout_tables_escape_pipes_and_refuse_unknown_kinds() -> None:
    from bob.formats.docs import layout_rows, markdown_table, sample
    from bob.formats.schema import FieldRow

    row = FieldRow(offset=4, size=2, field="flags", meaning="a | b")
    assert markdown_table([row]).splitlines()[-1] == "| 4 | 2 | `flags` | a \\| b |"
    for call in (layout_rows, sample):
        with pytest.raises(ValueError, match="unknown format kind 'bogus'; one of input, envelope, predictions"):
            call("bogus")


def test_a_shown_value_is_cut_at_80_characters_and_says_so() -> None:
    """A value cut short ended where the cut fell, as if whole (a pasted `sha256sum` line lost its path)."""
    z = bob.Checkpoint.fresh()
    with pytest.raises(bob.FormatError) as info:
        bob.Checkpoint("7" * 200, z.p, z.m, z.v)
    shown = "str '" + "7" * 72 + "..."
    assert (info.value.actual, len(shown)) == (shown, 80)


def test_a_copy_keeps_the_contract_and_owns_its_planes() -> None:
    z = bob.Checkpoint.fresh()
    other = bob.Checkpoint(0, z.p, z.m, z.v, contract=bob.Contract(seed=b"elsewhere"))
    copy = other.copy()
    assert copy.contract == other.contract and copy.contract != bob.Contract()
    assert copy == other and not np.shares_memory(copy.p, other.p)


def test_contract_mismatches_against_v1_or_another_contract() -> None:
    ours, theirs = bob.Contract(), bob.Contract(seed=b"elsewhere")
    assert theirs.mismatches() == [("seed", b"bob-seed-v1", b"elsewhere")]
    assert ours.mismatches(theirs) == [("seed", b"elsewhere", b"bob-seed-v1")]
    assert theirs.mismatches(theirs) == [] and ours.mismatches() == []


def test_describing_a_refused_envelope_raises_its_first_finding(unresumable: bytes) -> None:
    from bob.formats.checkpoint import describe_envelope

    bad = bytearray(unresumable)
    bad[446] ^= 1  # the last byte of the header digest (bytes 415..446)
    findings = examine(bytes(bad), for_resume=False).findings
    assert [f.field for f in findings] == ["header_digest"]
    with pytest.raises(bob.IntegrityError) as info:
        describe_envelope(bytes(bad))
    assert info.value.to_dict() == findings[0].to_dict()


def test_input_records_are_equal_only_when_every_part_is(tmp_path: Path) -> None:
    record = bob.build_input(CORPUS, PROMPTS)
    same = bob.InputRecord.read(_written(record, tmp_path / "rec.bin"))
    assert same == record and hash(same) == hash(record) and len({same, record}) == 1
    changed = record.targets.copy()
    changed[5] ^= 1
    other_targets = bob.InputRecord(record.contexts, changed, record.prompt_words)
    other_contexts = bob.InputRecord(changed, record.targets, record.prompt_words)
    other_words = bob.InputRecord(record.contexts, record.targets, (1, 2, 3))
    for other in (other_targets, other_contexts, other_words):
        assert other != record and hash(other) != hash(record)


def _written(obj, path: Path) -> Path:
    obj.write(path)
    return path


def test_predictions_read_what_write_wrote(tmp_path: Path) -> None:
    predictions = bob.Predictions([(99, 1), (0, 0), (7, 1)])
    assert bob.Predictions.read(_written(predictions, tmp_path / "pred.bin")).records == predictions.records


def test_layout_fields_compare_and_hash_by_value() -> None:
    from bob.formats.layout import Field

    assert Field(4, 8, "<Q") == Field(4, 8, "<Q") and hash(Field(4, 8, "<Q")) == hash((4, 8, "<Q"))
    assert Field(4, 8, "<Q") != Field(4, 8, None) and Field(4, 8) != Field(5, 8) and Field(4, 8) != Field(4, 9)
    assert Field(4, 8) != (4, 8)
    assert len({Field(4, 8), Field(4, 8), Field(5, 8)}) == 2


def test_lazy_names_of_the_packages() -> None:
    import bob.formats
    from bob.formats.checkpoint import ENVELOPE

    assert bob.formats.ENVELOPE is ENVELOPE
    with pytest.raises(AttributeError, match="module 'bob.formats' has no attribute 'NOTHING'"):
        bob.formats.NOTHING  # noqa: B018
    with pytest.raises(AttributeError, match="module 'bob' has no attribute 'nothing'"):
        bob.nothing  # noqa: B018


def test_an_invocation_cannot_be_changed_or_emptied() -> None:
    done = bob.invoke(bob.build_input(CORPUS, PROMPTS))
    with pytest.raises(AttributeError, match="^Invocation is frozen; cannot set 'losses'$"):
        done.losses = ()  # type: ignore[misc]
    with pytest.raises(AttributeError, match="^Invocation is frozen; cannot delete 'losses'$"):
        del done.losses


@pytest.mark.parametrize("past_header", [0, 63, 64, 200, 1024 - 448 - 1])
def test_a_wide_headers_padding_is_zero_all_the_way(past_header: int) -> None:
    """§5: every padding byte between the header and the first chunk is zero, not only the
    first 64 of a wide header's (the padding-first-64 planted bug survived the suite)."""
    from bob.formats.layout import CANONICAL

    wide = bob.load_checkpoint((GOLDEN / "checkpoint-abracadabra-step10.bin").read_bytes())
    wide.header_bytes = 1024
    data = bytearray(wide.to_bytes())
    assert bob.load_checkpoint(bytes(data)).step == 10  # zero padding: a valid checkpoint
    data[CANONICAL.header_length + past_header] = 1
    with pytest.raises(bob.FormatError) as refused:
        bob.load_checkpoint(bytes(data))
    assert (refused.value.field, refused.value.offset) == ("padding", CANONICAL.header_length + past_header)
