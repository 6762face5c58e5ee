"""The ``pred`` report: a predictions file as the schema parses it and
:func:`bob.formats.predictions.predictions_findings` judges it."""

from __future__ import annotations

from typing import Any

from bob.formats.constants import PREDICTION_BYTES, PROMPTS, VOCABULARY
from bob.formats.predictions import PREDICTIONS, predictions_findings
from bob.formats.schema import parse
from bob.inspect.common import base, finish, plural
from bob.text import show_byte

HEX_LIMIT = 64  # a file up to this many bytes is shown whole in hex


def predictions_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False) -> dict[str, Any]:
    """The ``pred`` report (a JSON-ready dict); ``data`` is None when the file was too large to read."""
    report = base("predictions", path, data, auto)
    problems = list(read_problems)
    records = None
    if data is not None:
        problems.extend(predictions_findings(data))
        if len(data) == PREDICTION_BYTES:
            parsed = parse(PREDICTIONS, data)
            bad = {p.index for p in problems}
            records = [
                {"index": i, "token": rec.token, "validity": rec.validity,
                 "valid": rec.validity == 1 and i not in bad,
                 "text": show_byte(rec.token) if rec.validity == 1 and rec.token < VOCABULARY else None,
                 "ok": i not in bad}
                for i, rec in enumerate(parsed.records)
            ]
    report["hex"] = data.hex() if data is not None and len(data) <= HEX_LIMIT else None
    report["records"] = records
    return finish(report, problems, f"OK: valid predictions ({plural(PROMPTS, 'record')})",
                  "a reader refuses these predictions")
