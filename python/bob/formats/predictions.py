"""The 24-byte predictions file (contract §4): per prompt, ``token u32``, ``validity u32``."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any, Iterable

from construct import Int32ul, Struct

from bob.errors import BadValue, FormatError, Truncated, integer_field, shown_kind
from bob.formats.contract import PREDICTION_BYTES, PROMPTS, VOCABULARY
from bob.formats.files import read_format_file
from bob.formats.kinds import MAGIC_BYTES
from bob.formats.layout import PREDICTION_FIELDS
from bob.formats.layout import PREDICTION_RECORD as PREDICTION_LAYOUT
from bob.formats.schema import END, KNOWN_MAGICS, Table, as_bytes, parse

__all__ = ["PREDICTION_RECORD", "PREDICTIONS", "Predictions", "predictions_findings", "load_predictions",
           "read_predictions_file"]

PREDICTION_RECORD = Struct(
    "token" / Int32ul * "the predicted next byte (0 when validity is 0)",
    "validity" / Int32ul * "1: the prompt has a last byte and its row of P is all finite; else 0",
)

PREDICTIONS = Struct(
    "records" / Table(PROMPTS, PREDICTION_RECORD) * "one record per prompt, in prompt order",
    END,
)
"""The predictions schema (24 bytes, no magic)."""

RECORD_SIZE = PREDICTION_LAYOUT.size
assert PREDICTION_RECORD.sizeof() == RECORD_SIZE and PREDICTIONS.sizeof() == PREDICTION_BYTES


def _record_problems(i: int, token: int, validity: int) -> list[FormatError]:
    base = i * RECORD_SIZE
    out: list[FormatError] = []
    if validity not in (0, 1):
        out.append(BadValue("validity", "validity is 0 or 1", expected="0 or 1", actual=validity,
                            offset=base + PREDICTION_FIELDS["validity"].offset, index=i))
    if token >= VOCABULARY:
        out.append(BadValue("token", "a token is a byte (< 256)", expected="< 256", actual=token,
                            offset=base, index=i))
    elif validity == 0 and token != 0:
        out.append(BadValue("token", "an invalid prediction (validity 0) has token 0", expected=0,
                            actual=token, offset=base, index=i))
    return out


@dataclass(frozen=True)
class Predictions:
    """Three ``(token, validity)`` records, one per prompt."""

    records: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]

    def __post_init__(self) -> None:
        try:
            given = tuple(self.records)
        except TypeError:
            raise BadValue("records", "the records are 3 (token, validity) pairs",
                           actual=shown_kind(self.records)) from None
        if len(given) != PROMPTS:
            raise BadValue("records", "there is one record per prompt", expected=PROMPTS, actual=len(given))
        records = []
        for i, pair in enumerate(given):
            try:
                record = tuple(pair)
            except TypeError:
                raise BadValue("records", "a record is (token, validity)", actual=shown_kind(pair), index=i) from None
            if len(record) != 2:
                raise BadValue("records", "a record is (token, validity)", expected=2, actual=len(record), index=i)
            records.append((integer_field(record[0], "token", "a token is an integer", i),
                            integer_field(record[1], "validity", "a validity is an integer", i)))
        for i, (token, validity) in enumerate(records):
            if token < 0 or validity < 0:
                raise BadValue("token" if token < 0 else "validity", "values are u32", index=i,
                               actual=min(token, validity))
            problems = _record_problems(i, token, validity)
            if problems:
                raise problems[0]
        object.__setattr__(self, "records", tuple(records))

    @classmethod
    def from_core(cls, output: Iterable[Iterable[int]]) -> "Predictions":
        """From ``bob.core.predict``'s list of ``(token, validity)``."""
        return cls(tuple(tuple(r) for r in output))  # type: ignore[arg-type]

    @property
    def tokens(self) -> tuple[int, ...]:
        return tuple(t for t, _ in self.records)

    @property
    def validities(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.records)

    def to_bytes(self) -> bytes:
        """The 24-byte file."""
        return PREDICTIONS.build(dict(records=[dict(token=t, validity=v) for t, v in self.records]))

    @classmethod
    def from_bytes(cls, data: bytes) -> "Predictions":
        """Parse and check a 24-byte predictions file's bytes."""
        return load_predictions(data)

    @classmethod
    def read(cls, path: "str | os.PathLike[str]") -> "Predictions":
        """Read and check the predictions file at ``path``."""
        return read_predictions_file(path)

    def write(self, path: "str | os.PathLike[str]") -> None:
        """Replace the file at ``path`` with these predictions, atomically."""
        from bob.fileio import write_atomic

        write_atomic(path, self.to_bytes())

    def as_dict(self) -> dict[str, Any]:
        raw = self.to_bytes()
        return {
            "format": "bob-predictions",
            "size": len(raw),
            "sha256": hashlib.sha256(raw).hexdigest(),
            "hex": raw.hex(),
            "records": [
                {"token": t, "validity": v, "byte": (chr(t) if v and 0x20 <= t < 0x7F else None)}
                for t, v in self.records
            ],
        }


def _examine(data: bytes) -> tuple[list[FormatError], Predictions | None]:
    if len(data) != PREDICTION_BYTES:
        message = "predictions are exactly 24 bytes"
        kind = KNOWN_MAGICS.get(data[:MAGIC_BYTES])
        if kind:
            message += f"; this file starts like {kind}"
        return [Truncated("file_size", message, expected=PREDICTION_BYTES, actual=len(data))], None
    try:
        parsed = parse(PREDICTIONS, data)
    except FormatError as exc:  # pragma: no cover - 24 bytes always parse
        return [exc], None
    findings: list[FormatError] = []
    records = []
    for i, rec in enumerate(parsed.records):
        findings.extend(_record_problems(i, rec.token, rec.validity))
        records.append((rec.token, rec.validity))
    if findings:
        return findings, None
    pred = object.__new__(Predictions)
    object.__setattr__(pred, "records", tuple(records))
    return [], pred


def predictions_findings(data: bytes) -> list[FormatError]:
    """Every problem with ``data`` as a predictions file (size, then per record:
    validity, token); empty if it is valid."""
    return _examine(as_bytes(data, "the predictions"))[0]


def load_predictions(data: bytes) -> Predictions:
    """Parse and check a 24-byte predictions file; raise the first finding."""
    findings, pred = _examine(as_bytes(data, "the predictions"))
    if findings:
        raise findings[0]
    assert pred is not None
    return pred


def read_predictions_file(path: "str | os.PathLike[str]") -> Predictions:
    """Read and check a predictions file (24 bytes)."""
    return load_predictions(read_format_file(path, PREDICTION_BYTES, None))
