"""bob.formats.schema.parse on hand-made schemas (issue 13): every kind of
construct failure becomes the FormatError that names it — a field cut
short, bytes after the end, a wrong magic, a wrong constant elsewhere, an
item of an array, a value a decoder cannot read — checked whole."""

from __future__ import annotations

import pytest
from construct import Array, Const, Construct, ExprAdapter, Int8ul, Int32ul, Struct, Terminated, ValidationError

import bob
from bob.formats.schema import ZeroPadding, parse


def refusal(schema, data: bytes) -> dict:
    with pytest.raises(bob.FormatError) as info:
        parse(schema, data)
    return info.value.to_dict()


def finding(error: str, kind: str, field: str, message: str, offset, expected=None, actual=None, index=None) -> dict:
    where = f"{field}[{index}]" if index is not None else field
    where += f" at offset {offset}" if offset is not None else ""
    detail = ", ".join(p for p in (f"expected {expected}" if expected is not None else "",
                                   f"got {actual}" if actual is not None else "") if p)
    return {"error": error, "kind": kind, "field": field, "index": index, "offset": offset, "message": message,
            "expected": expected, "actual": actual, "text": f"{where}: {message}" + (f" ({detail})" if detail else "")}


class FailsAtItem(Construct):
    """Raises as a checker inside an array would: the path names item 1."""

    def _parse(self, stream, context, path):
        raise ValidationError("item out of range", path=f"{path} -> entries[1] -> value")


def test_each_construct_failure_is_named() -> None:
    assert refusal(Struct("a" / Int32ul), b"\x01\x02") == finding(
        "Truncated", "truncated", "a", "the file ends inside this field (2 bytes remain)", 0, "4 bytes", "2 bytes")
    assert refusal(Struct("a" / Int8ul, Terminated), b"\x01\x02") == finding(
        "Truncated", "truncated", "file_size", "bytes follow the end of the format", 1, actual=2)
    assert refusal(Struct("magic" / Const(b"AB")), b"XY") == finding(
        "NotABobFile", "not-a-bob-file", "magic", "this is not the expected bob format", 0)
    assert refusal(Struct("x" / Const(b"AB")), b"XY") == finding(
        "BadValue", "bad-value", "x", "parsing expected b'AB' but parsed b'XY'", 0)
    assert refusal(Struct("t" / Array(2, Struct("tag" / Const(b"A")))), b"AB") == finding(
        "BadValue", "bad-value", "t.tag", "parsing expected b'A' but parsed b'B'", 1)
    assert refusal(Struct("x" / Int8ul, "y" / FailsAtItem()), b"\x01") == {
        "error": "BadValue", "kind": "bad-value", "field": "y.entries.value", "index": 1, "offset": 0,
        "message": "item out of range", "expected": None, "actual": None,
        "text": "y[1].entries.value at offset 0: item out of range"}
    assert refusal(Struct("x" / Int8ul, "pad" / ZeroPadding(4)), b"\x01\x00\x00") == finding(
        "Truncated", "truncated", "pad", "the file ends inside this field (2 bytes remain)", 1, "4 bytes", "2 bytes")
    unreadable = Struct("v" / ExprAdapter(Int8ul, lambda obj, ctx: int("x"), lambda obj, ctx: obj))
    assert refusal(unreadable, b"\x09") == finding(
        "BadValue", "bad-value", "file", "unreadable (ValueError: invalid literal for int() with base 10: 'x')", 1)


def test_a_decoder_that_divides_by_zero_is_named() -> None:
    """ArithmeticError as a whole: a division by zero as well as an overflow."""
    divides = Struct("v" / ExprAdapter(Int8ul, lambda obj, ctx: 1 // obj, lambda obj, ctx: obj))
    assert refusal(divides, b"\x00") == finding(
        "BadValue", "bad-value", "file", "unreadable (ZeroDivisionError: integer division or modulo by zero)", 1)
    overflows = Struct("v" / ExprAdapter(Int8ul, lambda obj, ctx: 10.0 ** (obj * 100), lambda obj, ctx: obj))
    assert refusal(overflows, b"\x05") == finding(
        "BadValue", "bad-value", "file", "unreadable (OverflowError: (34, 'Numerical result out of range'))", 1)
