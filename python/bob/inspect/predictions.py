"""The ``predictions`` report: a predictions file as
:func:`bob.formats.predictions.examine` reads and judges it (this module
parses nothing itself)."""

from __future__ import annotations

from typing import Any

from bob.formats.constants import PROMPTS
from bob.formats.predictions import examine
from bob.formats.rules import TOKEN
from bob.inspect.common import base, finish, plural
from bob.text import show_byte

HEX_LIMIT = 64  # a file up to this many bytes is shown whole in hex


def predictions_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False) -> dict[str, Any]:
    """The ``predictions`` report (a JSON-ready dict); ``data`` is None when the file was too large to read."""
    report = base("predictions", path, data, auto)
    problems = list(read_problems)
    records = None
    ex = examine(data) if data is not None else None
    if ex is not None:
        problems.extend(ex.findings)
        if ex.records is not None:
            records = [
                {"index": i, "token": token, "validity": validity,
                 "valid": validity == 1 and ex.record_ok(i),
                 "text": show_byte(token) if validity == 1 and TOKEN.ok(token) else None,
                 "ok": ex.record_ok(i)}
                for i, (token, validity) in enumerate(ex.records)
            ]
    report["hex"] = data.hex() if data is not None and len(data) <= HEX_LIMIT else None
    report["records"] = records
    return finish(report, problems, f"OK: valid predictions ({plural(PROMPTS, 'record')})",
                  "a reader refuses these predictions")
