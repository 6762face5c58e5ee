"""The construct building blocks bob's schemas are written with, and the helpers that run them: :func:`parse` runs a
schema interpreted (never ``.compile()``, which skips length checks) and turns every construct failure into a
:class:`~bob.errors.FormatError` naming the field; :func:`layout` walks a schema over a sample file into the layout
tables ``formats/*.md`` and ``bob-inspect schema`` print."""

from __future__ import annotations

import hashlib
import io
import re
import struct
from dataclasses import dataclass
from typing import Any, Callable

from construct import (Array, Bytes, Const, Construct, ConstructError, Container, Float64l, Int32ul, Int64ul, RawCopy,
                       Rebuild, Renamed, SizeofError, StreamError, Struct, Subconstruct, Terminated, evaluate,
                       stream_read, stream_size, stream_tell, stream_write)

from bob.errors import BadValue, FormatError, NotABobFile, Truncated
from bob.formats.layout import DIGEST_BYTES, F64, U32, U64, Field
from bob.formats.rules import ValueRule

__all__ = ["construct_of", "schema_fields", "LengthPrefixed", "END", "Rule", "ruled", "Table", "Sha256Of",
           "ZeroPadding", "FieldRow", "parse", "layout", "walk", "field_from_path"]


# -- Streams and paths


class _TrackingStream(io.BytesIO):
    """A BytesIO that remembers where the last read started and how much it asked for."""

    last_offset = 0
    last_request = -1

    def read(self, n: int | None = -1) -> bytes:
        self.last_offset = self.tell()
        self.last_request = -1 if n is None else n
        return super().read(n)


_INDEX = re.compile(r"\[(\d+)\]")


def field_from_path(path: str) -> tuple[str, int | None]:
    """``"(parsing) -> header -> chunk_table[1] -> tag"`` → ``("chunk_table.tag", 1)``.

    The ``RawCopy`` wrapper named ``header`` is transparent; a name repeated by
    construct's docstring wrapper (``"x" / Int8ul * "doc"``) counts once.
    """
    names: list[str] = []
    index = None
    for part in path.split(" -> ")[1:]:
        part = part.strip()
        if m := _INDEX.search(part):
            index, part = int(m.group(1)), _INDEX.sub("", part)
        if part and part != "header" and not (names and names[-1] == part):
            names.append(part)
    return (".".join(names) or "file"), index


# -- Schemas from the layout's field tables

_INTEGERS = {U64.format: Int64ul, U32.format: Int32ul, F64.format: Float64l}


def construct_of(field: Field) -> Construct:
    """The construct that reads a field of :mod:`bob.formats.layout`: a little-endian number for a one-number ``struct``
    format, else raw bytes of the field's size (an array of words is read whole, as bytes)."""
    return _INTEGERS.get(field.format or "") or Bytes(field.size)


def schema_fields(fields: "dict[str, Field]", docs: "dict[str, str]",
                  wrap: "dict[str, Callable[[Construct], Construct]] | None" = None) -> list[Construct]:
    """A Struct's subconstructs for consecutive layout ``fields``: each field's :func:`construct_of`, passed through
    ``wrap[name]`` when given (a rule, a ``Const``, a ``Rebuild``), named and documented by ``docs[name]``. The layout
    says where and how big; the schema adds what a value must be."""
    wrap = wrap or {}
    assert set(docs) == set(fields) and set(wrap) <= set(fields), "every field documented, no stray rule"
    return [name / wrap.get(name, lambda sc: sc)(construct_of(field)) * docs[name] for name, field in fields.items()]


# -- Custom constructs


class LengthPrefixed(Construct):
    r"""``u32`` little-endian length + that many raw bytes.

    Parsing refuses (``Truncated``, naming the field) a length larger than the bytes that remain, then a length larger
    than ``limit`` — before reading the bytes. Building writes any byte string that fits a u32 length (the limit is a
    reader's rule)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.prefix = Int32ul

    def _parse(self, stream, context, path):
        offset = stream_tell(stream, path)
        length = self.prefix._parsereport(stream, context, path)
        remaining = stream_size(stream) - stream_tell(stream, path)
        for bound, why in ((remaining, f"runs past the end of the file ({remaining} bytes remain after it)"),
                           (self.limit, f"exceeds the limit of {self.limit} bytes")):
            if length > bound:
                field, index = field_from_path(path)
                raise Truncated(field, f"length prefix {why}", expected=f"at most {bound}", actual=length,
                                offset=offset, index=index)
        return stream_read(stream, length, path)

    def _build(self, obj, stream, context, path):
        data = bytes(obj)
        self.prefix._build(len(data), stream, context, path)
        stream_write(stream, data, len(data), path)
        return data

    def _sizeof(self, context, path):
        raise SizeofError("a length-prefixed field has no fixed size", path=path)


class Rule(Subconstruct):
    """A field with a reader rule (a :class:`~bob.formats.rules.ValueRule`): parsing refuses a value the rule rejects,
    with the rule's error naming the field and its offset. Building does not check (tests build refused files on
    purpose)."""

    def __init__(self, subcon, rule: ValueRule) -> None:
        super().__init__(subcon)
        self.rule = rule

    def _parse(self, stream, context, path):
        offset = stream_tell(stream, path)
        value = self.subcon._parsereport(stream, context, path)
        if not self.rule.ok(value):
            _, index = field_from_path(path)
            raise self.rule.finding(value, offset=offset, index=index)
        return value


def ruled(rule: ValueRule) -> Callable[[Construct], Construct]:
    """A ``schema_fields`` wrapper that gives a field its rule."""
    return lambda sc: Rule(sc, rule)


class Table(Array):
    """A fixed-count Array whose elements put their index in the error path."""

    def _parse(self, stream, context, path):
        count = evaluate(self.count, context)
        items = []
        for i in range(count):
            context._index = i
            items.append(self.subcon._parsereport(stream, context, f"{path}[{i}]"))
        return items


class Sha256Of(Rebuild):
    """A 32-byte SHA-256 field over ``bytesfunc(context)``: built as the digest, parsed
    as the stored bytes without comparing, so that the checker reports a mismatch as one
    finding among others instead of stopping the parse (construct's ``Checksum`` would stop)."""

    def __init__(self, bytesfunc: Callable[[Any], bytes]) -> None:
        super().__init__(Bytes(DIGEST_BYTES), lambda this: hashlib.sha256(evaluate(bytesfunc, this)).digest())


class ZeroPadding(Rebuild):
    """Padding of ``length`` bytes (an int or a context function): built as zeros,
    parsed as the raw bytes (checked for zeros by the format's checker)."""

    def __init__(self, length: Any) -> None:
        super().__init__(Bytes(length), lambda this: bytes(evaluate(length, this)))

    def _sizeof(self, context, path):
        try:
            return self.subcon._sizeof(context, path)
        except SizeofError:
            raise SizeofError("padding size depends on the header", path=path) from None


class _End(type(Terminated)):  # type: ignore[misc]
    """construct's ``Terminated`` with a size of 0, so fixed-size schemas keep their ``sizeof``."""

    def _sizeof(self, context, path):
        return 0


END = _End()
"""The end of a format: parsing refuses bytes after it, so no schema accepts a
prefix of a longer file (construct's ``Terminated``)."""


# -- Running a schema


def parse(schema: Construct, data: bytes) -> Container:
    """Parse ``data`` with ``schema`` (interpreted), or raise a FormatError naming the field
    from the construct path and the offset where the failing read started."""
    stream = _TrackingStream(data)
    try:
        return schema.parse_stream(stream)
    except FormatError:
        raise
    except ConstructError as exc:
        field, index = field_from_path(exc.path or "")
        if isinstance(exc, StreamError):
            need, have = stream.last_request, max(0, len(data) - stream.last_offset)
            raise Truncated(field, f"the file ends inside this field ({have} bytes remain)",
                            expected=(f"{need} bytes" if need >= 0 else None), actual=f"{have} bytes",
                            offset=stream.last_offset, index=index) from None
        name = type(exc).__name__
        if name == "TerminatedError":
            raise Truncated("file_size", "bytes follow the end of the format",  # where the first extra byte is
                            actual=len(data), offset=stream.last_offset) from None
        if name == "ConstError" and field == "magic":
            raise NotABobFile(field, "this is not the expected bob format", offset=0) from None
        message = str(exc).splitlines()[-1] if str(exc) else name
        raise BadValue(field, message, offset=stream.last_offset, index=index) from None
    except (struct.error, ArithmeticError, UnicodeDecodeError, IndexError, KeyError, TypeError, ValueError) as exc:
        raise BadValue("file", f"unreadable ({type(exc).__name__}: {exc})", offset=stream.tell()) from None


# -- Layout tables


@dataclass(frozen=True)
class FieldRow:
    """One row of a layout table: where a field is, how big, what it means."""

    offset: int
    size: int
    field: str
    meaning: str


def _unwrap(sc: Construct) -> tuple[Construct, str | None, str]:
    """Strip construct's naming/doc wrappers: (inner construct, name, docs)."""
    name, docs = None, ""
    while isinstance(sc, Renamed):
        name = name or sc.name
        docs = docs or (sc.docs or "")
        sc = sc.subcon
    return sc, name, docs


def walk(sc: Construct, value: Any, offset: int, name: str, docs: str, rows: list[FieldRow]) -> int:
    sc, own, own_docs = _unwrap(sc)
    if own is not None and not isinstance(sc, RawCopy):
        name = f"{name}.{own}" if name else own
    docs = own_docs or docs
    if isinstance(sc, RawCopy):
        return walk(sc.subcon, value.value, offset, name, docs, rows)
    if isinstance(sc, (Struct, Array)):  # its parts one after another (a Struct's by name: None for an unnamed one)
        parts = ([(sub, value.get(_unwrap(sub)[1]), name, "") for sub in sc.subcons] if isinstance(sc, Struct)
                 else [(sc.subcon, item, f"{name}[{i}]", docs) for i, item in enumerate(value)])
        pos = offset
        for sub, subvalue, subname, subdocs in parts:
            pos += walk(sub, subvalue, pos, subname, subdocs, rows)
        return pos - offset
    if isinstance(sc, type(Terminated)):
        return 0
    if isinstance(sc, LengthPrefixed):
        prefix = sc.prefix.sizeof()
        rows.append(FieldRow(offset, prefix, f"{name}.length", f"u32 length of {name}"))
        rows.append(FieldRow(offset + prefix, len(value), name, docs))
        return prefix + len(value)
    size = len(value) if isinstance(value, (bytes, bytearray)) else sc.sizeof()
    rows.append(FieldRow(offset, size, name, docs))
    return size


def layout(schema: Construct, sample: bytes) -> list[FieldRow]:
    """The layout table of ``schema`` over ``sample`` (a valid file): one row
    per leaf field, offsets and sizes as construct reads them."""
    value = schema.parse(sample)
    rows: list[FieldRow] = []
    walk(schema, value, 0, "", "", rows)
    return rows
