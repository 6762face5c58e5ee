"""bob.formats.layout (standard library) agrees with the construct schemas, field by field."""

from __future__ import annotations

import struct

import bob
from bob.formats import layout
from bob.formats.checkpoint import (
    CHECKPOINT_BYTES,
    ENVELOPE,
    HEADER_BODY,
    HEADER_BYTES,
    canonical_header_bytes,
    header_length,
)
from bob.formats.input_record import INPUT_RECORD
from bob.formats.predictions import PREDICTIONS
from bob.formats.schema import layout as schema_layout
from conftest import golden


def schema_rows(schema, data: bytes) -> dict[str, tuple[int, int]]:
    return {row.field: (row.offset, row.size) for row in schema_layout(schema, data)}


def test_input_layout_is_the_schemas() -> None:
    rows = schema_rows(INPUT_RECORD, golden("input-abracadabra.bin"))
    assert rows == {name: (f.offset, f.size) for name, f in layout.INPUT.items()}
    for f in layout.INPUT.values():
        if f.format:
            assert struct.calcsize(f.format) == f.size


def test_predictions_layout_is_the_schemas() -> None:
    rows = schema_rows(PREDICTIONS, golden("predictions-abracadabra.bin"))
    size = layout.PREDICTION_RECORD.size
    want = {f"records[{i}].{name}": (i * size + f.offset, f.size)
            for i in range(3) for name, f in layout.PREDICTION_FIELDS.items()}
    assert rows == want


def _envelope_rows(data: bytes) -> dict[str, tuple[int, int]]:
    rows = schema_rows(ENVELOPE, data)
    return {k: v for k, v in rows.items() if k not in ("padding", "P", "M", "V")}


def test_canonical_envelope_layout_is_the_schemas() -> None:
    data = golden("checkpoint-abracadabra-step10.bin")
    rows = _envelope_rows(data)
    assert rows == {name: (f.offset, f.size) for name, f in layout.CANONICAL.fields.items()}
    assert layout.CANONICAL.header_length == header_length() == 447
    assert HEADER_BYTES == canonical_header_bytes() == 448 and CHECKPOINT_BYTES == len(data) == 786_880
    assert layout.CANONICAL.header_digest == rows["header_digest"][0]
    assert layout.CANONICAL.chunk_table == rows["chunk_table[0].tag"][0]


def test_envelope_layout_follows_the_contract_strings() -> None:
    ck = bob.load_checkpoint(golden("checkpoint-abracadabra-step10.bin"))
    contract = bob.Contract(state=b"s" * 100, learner=b"", data=b"d", seed=b"x" * 4096)
    data = bob.Checkpoint(ck.step, ck.p, ck.m, ck.v, contract=contract,
                          header_bytes=canonical_header_bytes(contract)).to_bytes(for_resume=False)
    lay = layout.envelope_layout((100, 0, 1, 4096))
    assert _envelope_rows(data) == {name: (f.offset, f.size) for name, f in lay.fields.items()}
    assert lay.header_length == header_length(contract)


def test_struct_formats_decode_what_the_schema_parses() -> None:
    data = golden("checkpoint-abracadabra-step10.bin")
    parsed = HEADER_BODY.parse(data)
    for name in ("version", "header_bytes", "step", "payload_bytes", "chunk_bytes", "updates_per_invocation",
                 "chunk_count"):
        assert layout.CANONICAL.fields[name].unpack(data) == (parsed[name],)
    for name in layout.CONTRACT_STRINGS:  # each string's u32 length prefix, then its bytes
        length, text = layout.CANONICAL.fields[f"{name}.length"], layout.CANONICAL.fields[name]
        assert length.unpack(data) == (len(parsed[name]),) == (text.size,)
        assert text.format is None and data[text.offset:text.end] == parsed[name]
    for i, entry in enumerate(parsed.chunk_table):
        assert layout.CHUNK_ENTRY.unpack_from(data, layout.CANONICAL.chunk_table + i * layout.CHUNK_ENTRY.size) == (
            entry.tag, entry.offset, entry.length, entry.digest)


def test_schemas_refuse_a_prefix_of_a_longer_file() -> None:
    """Terminated: no schema parses a prefix of another format (a checkpoint
    is not 'predictions plus trailing bytes')."""
    import pytest

    from bob.formats.schema import parse

    checkpoint = golden("checkpoint-abracadabra-step10.bin")
    with pytest.raises(bob.Truncated):
        parse(PREDICTIONS, checkpoint[:100])
    with pytest.raises(bob.Truncated):
        parse(INPUT_RECORD, golden("input-abracadabra.bin") + b"\0")
