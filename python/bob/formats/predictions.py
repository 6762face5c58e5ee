"""The predictions file (contract §4): per prompt, ``token u32``, ``validity u32``."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field as dataclass_field
from typing import Any, Iterable

from construct import Struct

from bob.errors import BadValue, FormatError, Truncated, integer_field, ordered_items, shown_kind
from bob.formats.contract import PREDICTION_BYTES, PROMPTS
from bob.formats.files import BobFile, Examined, as_bytes, starts_like
from bob.formats.layout import PREDICTION_FIELDS, PREDICTION_RECORD as PREDICTION_LAYOUT
from bob.formats.rules import INVALID_TOKEN, TOKEN, VALIDITY
from bob.formats.schema import END, Table, parse, schema_fields

__all__ = ["PREDICTION_RECORD", "PREDICTIONS", "Predictions", "PredictionsExamination", "examine",
           "predictions_findings", "load_predictions", "read_predictions_file"]

PREDICTION_RECORD = Struct(*schema_fields(PREDICTION_FIELDS, {
    "token": "the predicted next byte (0 when validity is 0)",
    "validity": "1: the prompt has a last byte and its row of P is all finite; else 0",
}))

PREDICTIONS = Struct(
    "records" / Table(PROMPTS, PREDICTION_RECORD) * "one record per prompt, in prompt order",
    END,
)
"""The predictions schema (``PREDICTION_BYTES``, no magic), built from :data:`bob.formats.layout.PREDICTION_FIELDS`."""

assert PREDICTIONS.sizeof() == PREDICTION_BYTES


def _record_problems(i: int, token: int, validity: int) -> list[FormatError]:
    """Record ``i``'s findings, by the rules :data:`~bob.formats.rules.RULES` lists for predictions."""
    base = i * PREDICTION_LAYOUT.size
    out: list[FormatError] = []
    if not VALIDITY.ok(validity):
        out.append(VALIDITY.finding(validity, offset=base + PREDICTION_FIELDS["validity"].offset, index=i))
    at = base + PREDICTION_FIELDS["token"].offset
    if not TOKEN.ok(token):
        out.append(TOKEN.finding(token, offset=at, index=i))
    elif not INVALID_TOKEN.ok(token, validity):
        out.append(INVALID_TOKEN.finding(token, offset=at, index=i))
    return out


@dataclass(frozen=True)
class Predictions(BobFile):
    """Three ``(token, validity)`` records, one per prompt."""

    records: tuple[tuple[int, int], tuple[int, int], tuple[int, int]]

    def __post_init__(self) -> None:
        given = ordered_items(self.records)
        if given is None:
            raise BadValue("records", f"the records are {PROMPTS} (token, validity) pairs",
                           actual=shown_kind(self.records))
        if len(given) != PROMPTS:
            raise BadValue("records", "there is one record per prompt", expected=PROMPTS, actual=len(given))
        records = []
        for i, pair in enumerate(given):
            record = ordered_items(pair)
            if record is None:
                raise BadValue("records", "a record is (token, validity)", actual=shown_kind(pair), index=i)
            if len(record) != 2:
                raise BadValue("records", "a record is (token, validity)", expected=2, actual=len(record), index=i)
            records.append((integer_field(record[0], "token", "a token is an integer", i),
                            integer_field(record[1], "validity", "a validity is an integer", i)))
        for i, (token, validity) in enumerate(records):
            if token < 0 or validity < 0:
                raise BadValue("token" if token < 0 else "validity", "values are u32", index=i,
                               actual=min(token, validity))
            if problems := _record_problems(i, token, validity):
                raise problems[0]
        object.__setattr__(self, "records", tuple(records))

    @classmethod
    def from_core(cls, output: Iterable[Iterable[int]]) -> "Predictions":
        """From ``bob.core.predict``'s list of ``(token, validity)``."""
        return cls(output)  # type: ignore[arg-type]

    @property
    def tokens(self) -> tuple[int, ...]:
        return tuple(t for t, _ in self.records)

    @property
    def validities(self) -> tuple[int, ...]:
        return tuple(v for _, v in self.records)

    def to_bytes(self) -> bytes:
        """The predictions file's bytes."""
        return PREDICTIONS.build(dict(records=[dict(token=t, validity=v) for t, v in self.records]))

    def as_dict(self) -> dict[str, Any]:
        raw = self.to_bytes()
        return {"format": "bob-predictions", "size": len(raw), "sha256": hashlib.sha256(raw).hexdigest(),
                "hex": raw.hex(),
                "records": [{"token": t, "validity": v, "byte": (chr(t) if v and 0x20 <= t < 0x7F else None)}
                            for t, v in self.records]}


@dataclass(eq=False)
class PredictionsExamination(Examined):
    """What a reader found in a predictions file's bytes: its findings, the ``records`` as read
    when the file has the right size, and the :class:`Predictions` of a valid file."""

    size: int
    findings: list[FormatError] = dataclass_field(default_factory=list)
    records: list[tuple[int, int]] | None = None
    predictions: Predictions | None = None

    def record_ok(self, index: int) -> bool:
        """Whether record ``index`` breaks no rule."""
        return all(p.index != index for p in self.findings)


def examine(data: bytes) -> PredictionsExamination:
    """Check ``data`` as a predictions file and collect every finding."""
    data = as_bytes(data, "the predictions")
    ex = PredictionsExamination(size=len(data))
    if len(data) != PREDICTION_BYTES:
        ex.findings.append(Truncated("file_size", f"predictions are exactly {PREDICTION_BYTES} bytes{starts_like(data)}",
                                     expected=PREDICTION_BYTES, actual=len(data)))
        return ex
    parsed = parse(PREDICTIONS, data)  # any 24 bytes parse: the rules below judge them
    ex.records = [(rec.token, rec.validity) for rec in parsed.records]
    for i, (token, validity) in enumerate(ex.records):
        ex.findings.extend(_record_problems(i, token, validity))
    if (like := starts_like(data)) and ex.findings:  # (always: a magic's letters are no validity) say what it is
        first = ex.findings[0]
        ex.findings[0] = type(first)(first.field, first.message + like, expected=first.expected,
                                     actual=first.actual, offset=first.offset, index=first.index)
    if not ex.findings:
        ex.predictions = Predictions._trusted(records=tuple(ex.records))
    return ex


def predictions_findings(data: bytes) -> list[FormatError]:
    """Every problem with ``data`` as a predictions file (size, then per record: validity, token)."""
    return examine(data).findings


def load_predictions(data: bytes) -> Predictions:
    """Parse and check a predictions file; raise the first finding."""
    return Predictions.from_bytes(data)


def read_predictions_file(path: "str | os.PathLike[str]") -> Predictions:
    """Read and check a predictions file (``PREDICTION_BYTES``)."""
    return Predictions.read(path)


Predictions._format = (examine, "predictions", PREDICTION_BYTES, None)
