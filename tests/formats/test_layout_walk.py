"""bob.formats.schema.layout on hand-made schemas (issue 13): the rules the
format documents rely on — names join with dots and brackets, a field's own
meaning wins, an array's items and a RawCopy's contents take the meaning of
their container, and an unnamed or undocumented field says so with an empty
string — shown on the cases bob's own schemas never exercise (every field of
theirs is named and documented)."""

from __future__ import annotations

from construct import Array, Const, Int8ul, RawCopy, Struct

from bob.formats.schema import FieldRow, layout


def test_names_and_meanings_of_every_kind_of_field() -> None:
    schema = Struct(
        Const(b"Z"),
        "outer" / Struct("a" / Int8ul * "the a byte", "b" / Int8ul),
        "items" / Array(2, Int8ul) * "two items",
        "wrapped" / Struct("r" / RawCopy(Int8ul) * "a raw byte", "s" / RawCopy(Struct("x" / Int8ul))),
    )
    assert layout(schema, b"Z\x01\x02\x03\x04\x05\x06") == [
        FieldRow(0, 1, "", ""),
        FieldRow(1, 1, "outer.a", "the a byte"),
        FieldRow(2, 1, "outer.b", ""),
        FieldRow(3, 1, "items[0]", "two items"),
        FieldRow(4, 1, "items[1]", "two items"),
        FieldRow(5, 1, "wrapped", "a raw byte"),
        FieldRow(6, 1, "wrapped.x", ""),
    ]


def test_a_schema_that_is_one_field_is_one_unnamed_undocumented_row() -> None:
    assert layout(Int8ul, b"\x01") == [FieldRow(0, 1, "", "")]
