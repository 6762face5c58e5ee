"""The ``predictions`` report and its lines: a predictions file as :func:`bob.formats.predictions.examine`
reads and judges it (this module parses nothing itself)."""

from __future__ import annotations

from typing import Any

from bob.errors import FormatError
from bob.formats.constants import MAX_CHECKPOINT_BYTES, PREDICTION_BYTES, PROMPTS
from bob.formats.predictions import examine
from bob.formats.rules import TOKEN
from bob.inspect.common import begin, finish, plural
from bob.inspect.render import file_report
from bob.text import show_byte

# bob.inspect.common.read's limit, magic and valid size: read up to the largest bob file, so that the
# findings can say what a longer file is ("this file starts like a bob input record")
READ: "tuple[int, tuple[bytes, str] | None, int]" = (MAX_CHECKPOINT_BYTES, None, PREDICTION_BYTES)
HEX_LIMIT = 64  # a file up to this many bytes is shown whole in hex


def predictions_report(data: bytes | None, read_problems: list[FormatError], *, path: str,
                       auto: bool = False) -> dict[str, Any]:
    """The ``predictions`` report (a JSON-ready dict); ``data`` is None when the file was too large to read."""
    report, problems, ex = begin("predictions", path, data, read_problems, auto, examine)
    report["hex"] = data.hex() if data is not None and len(data) <= HEX_LIMIT else None
    report["records"] = None if ex is None or ex.records is None else [
        {"index": i, "token": token, "validity": validity, "valid": validity == 1 and ex.record_ok(i),
         "text": show_byte(token) if validity == 1 and TOKEN.ok(token) else None, "ok": ex.record_ok(i)}
        for i, (token, validity) in enumerate(ex.records)
    ]
    return finish(report, problems, f"OK: valid predictions ({plural(PROMPTS, 'record')})",
                  "a reader refuses these predictions")


def render_predictions(r: dict[str, Any]) -> list[str]:
    L = []
    if r["hex"] is not None:
        L.append(f"  hex   {r['hex']}")
    if r["records"] is not None:
        L.append("predictions (one per prompt: token u32, validity u32)")
        for rec in r["records"]:
            if not rec["ok"]:
                what = f"INVALID record (token {rec['token']}, validity {rec['validity']})"
            elif rec["validity"] == 1:
                what = f"next byte {rec['text']} (0x{rec['token']:02x}), valid"
            else:
                what = "no prediction (validity 0: empty prompt or a non-finite row)"
            L.append(f"  prompt {rec['index']}: {what}")
    return file_report(r, 6, L)
