"""The ``input`` report: an input record as
:func:`bob.formats.input_record.examine` reads and judges it (this module
parses nothing itself).

The record is shown even when a target or a prompt word is refused, so the
damage can be seen in context.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bob.formats.constants import EMPTY_PROMPT, INPUT_MAGIC, VOCABULARY
from bob.formats.input_record import examine
from bob.formats.rules import PROMPT_WORD
from bob.inspect.common import base, finish
from bob.text import escape_bytes, show_byte

RECORD_KEYS = ("pairs", "chained", "sequence", "context_counts", "transitions", "targets_agree",
               "target_mismatches", "prompts")


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
                    "byte": w if is_byte else None, "ok": PROMPT_WORD.ok(w),
                    "text": show_byte(w) if is_byte else None})
    return out


def input_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False) -> dict[str, Any]:
    """The ``input`` report (a JSON-ready dict); ``data`` is None when the file was too large to read."""
    report = base("input", path, data, auto)
    problems = list(read_problems)
    ex = examine(data) if data is not None else None
    if ex is not None:
        problems.extend(ex.findings)
    report["magic"] = None if ex is None else {"text": escape_bytes(ex.magic), "hex": ex.magic.hex(),
                                               "ok": ex.magic == INPUT_MAGIC}
    report["version"] = ex.version if ex is not None else None
    if ex is None or ex.contexts is None or ex.targets is None or ex.widened is None or ex.prompt_words is None:
        report.update(dict.fromkeys(RECORD_KEYS))
    else:
        ctx, tgt = ex.contexts, ex.targets
        report["pairs"] = [[int(a), int(b)] for a, b in zip(ctx, tgt)]
        chained = bool(np.array_equal(tgt[:-1], ctx[1:]))
        report["chained"] = chained
        report["sequence"] = escape_bytes(bytes(ctx) + bytes(tgt[-1:])) if chained else None
        counts = np.bincount(ctx, minlength=VOCABULARY)
        report["context_counts"] = {str(int(r)): int(counts[r]) for r in np.flatnonzero(counts)}
        report["transitions"] = _transitions(ctx, tgt, counts)
        bad = ex.target_mismatches
        report["targets_agree"] = not bad
        report["target_mismatches"] = [
            {"index": i, "pair_target": int(tgt[i]), "table": ex.widened[i]} for i in bad
        ]
        report["prompts"] = _prompts(ex.prompt_words)
    return finish(report, problems, "OK: a valid bob-input v1 record", "bob-run refuses this input record")
