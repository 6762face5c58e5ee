"""The ``input`` report: an input record as the schema parses it and
:func:`bob.formats.input_record.input_findings` judges it.

The record is shown even when a target or a prompt word is refused, so the
damage can be seen in context.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bob.errors import FormatError
from bob.formats.constants import EMPTY_PROMPT, INPUT_MAGIC, RECORD_BYTES, VOCABULARY
from bob.formats.input_record import INPUT_RECORD, input_findings
from bob.formats.layout import INPUT, WORD_DTYPE
from bob.formats.schema import parse
from bob.inspect.common import base, finish
from bob.text import escape_bytes, show_byte

RECORD_KEYS = ("pairs", "chained", "sequence", "context_counts", "transitions", "targets_agree",
               "target_mismatches", "prompts")
MAGIC = INPUT["magic"].slice


def _transitions(ctx: np.ndarray, tgt: np.ndarray, counts: np.ndarray) -> list[dict[str, Any]]:
    h = np.bincount(ctx.astype(np.int64) * VOCABULARY + tgt, minlength=VOCABULARY * VOCABULARY)
    h = h.reshape(VOCABULARY, VOCABULARY)
    out = []
    for r in np.flatnonzero(counts):
        nxt = np.flatnonzero(h[r])
        nxt = nxt[np.argsort(-h[r][nxt], kind="stable")]
        out.append({
            "context": int(r), "text": show_byte(int(r)), "count": int(counts[r]),
            "next": [{"byte": int(j), "text": show_byte(int(j)), "count": int(h[r][j])} for j in nxt],
        })
    return out


def _prompts(words: list[int]) -> list[dict[str, Any]]:
    out = []
    for i, w in enumerate(words):
        is_byte = w < VOCABULARY
        out.append({"index": i, "word": w, "hex": f"0x{w:08x}", "empty": w == EMPTY_PROMPT,
                    "byte": w if is_byte else None, "ok": is_byte or w == EMPTY_PROMPT,
                    "text": show_byte(w) if is_byte else None})
    return out


def input_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False) -> dict[str, Any]:
    """The ``input`` report (a JSON-ready dict); ``data`` is None when the file was too large to read."""
    report = base("input", path, data, auto)
    problems = list(read_problems)
    rec = None
    if data is not None:
        problems.extend(input_findings(data))
        if len(data) == RECORD_BYTES and data[MAGIC] == INPUT_MAGIC:
            try:
                rec = parse(INPUT_RECORD, data)
            except FormatError:
                rec = None  # already a finding
    head = data[MAGIC] if data is not None else b""
    report["magic"] = None if data is None else {"text": escape_bytes(head), "hex": head.hex(),
                                                 "ok": head == INPUT_MAGIC}
    report["version"] = rec.version if rec is not None else None
    if rec is None:
        report.update(dict.fromkeys(RECORD_KEYS))
    else:
        pairs = np.frombuffer(rec.pairs, dtype=np.uint8)
        ctx, tgt = pairs[0::2], pairs[1::2]
        widened = np.frombuffer(rec.targets, dtype=WORD_DTYPE)
        report["pairs"] = [[int(a), int(b)] for a, b in zip(ctx, tgt)]
        chained = bool(np.array_equal(tgt[:-1], ctx[1:]))
        report["chained"] = chained
        report["sequence"] = escape_bytes(bytes(ctx) + bytes(tgt[-1:])) if chained else None
        counts = np.bincount(ctx, minlength=VOCABULARY)
        report["context_counts"] = {str(int(r)): int(counts[r]) for r in np.flatnonzero(counts)}
        report["transitions"] = _transitions(ctx, tgt, counts)
        bad = np.flatnonzero(widened != tgt)
        report["targets_agree"] = not bad.size
        report["target_mismatches"] = [
            {"index": int(i), "pair_target": int(tgt[i]), "table": int(widened[i])} for i in bad
        ]
        report["prompts"] = _prompts(np.frombuffer(rec.prompt_words, dtype=WORD_DTYPE).tolist())
    return finish(report, problems, "OK: a valid bob-input v1 record", "bob-run refuses this input record")
