"""The ``input`` report and its lines: an input record as :func:`bob.formats.input_record.examine` reads and judges it
(this module parses nothing itself).

The record is shown even when a target or a prompt word is refused, so the damage can be seen in context."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from bob.errors import FormatError
from bob.formats.constants import EMPTY_PROMPT, INPUT_MAGIC, RECORD_BYTES, VOCABULARY
from bob.formats.files import INPUT_FILE
from bob.formats.input_record import examine
from bob.formats.rules import PROMPT_WORD
from bob.inspect.common import begin, finish, magic_report
from bob.inspect.render import file_report
from bob.text import escape_bytes, show_byte

READ: "tuple[int, tuple[bytes, str] | None, int]" = (RECORD_BYTES, INPUT_FILE, RECORD_BYTES)  # common.read's
RECORD_KEYS = ("pairs", "chained", "sequence", "context_counts", "transitions", "targets_agree",
               "target_mismatches", "prompts")
SEQUENCE_SHOWN = 64  # bytes of a chained input's sequence shown
MISMATCHES_SHOWN = 16  # target mismatches listed
PAIRS_PER_LINE = 8
_ESCAPED_BYTE = re.compile(r"\\x[0-9a-f]{2}|.")  # one token per byte of escaped text


def _transitions(ctx: np.ndarray, tgt: np.ndarray, counts: np.ndarray) -> list[dict[str, Any]]:
    h = np.bincount(ctx.astype(np.int64) * VOCABULARY + tgt, minlength=VOCABULARY * VOCABULARY)
    h = h.reshape(VOCABULARY, VOCABULARY)
    return [{"context": int(r), "text": show_byte(int(r)), "count": int(counts[r]),  # next bytes: most counted first
             "next": [{"byte": int(j), "text": show_byte(int(j)), "count": int(h[r][j])}
                      for j in np.argsort(-h[r], kind="stable")[:np.count_nonzero(h[r])]]}
            for r in np.flatnonzero(counts)]


def input_report(data: bytes | None, read_problems: list[FormatError], *, path: str,
                 auto: bool = False) -> dict[str, Any]:
    """The ``input`` report (a JSON-ready dict); ``data`` is None when the file was too large to read."""
    report, problems, ex = begin("input", path, data, read_problems, auto, examine)
    report["magic"] = None if ex is None else magic_report(ex.magic, INPUT_MAGIC)
    report["version"] = ex.version if ex is not None else None
    if ex is None or ex.contexts is None or ex.targets is None or ex.widened is None or ex.prompt_words is None:
        report.update(dict.fromkeys(RECORD_KEYS))
    else:
        ctx, tgt = ex.contexts, ex.targets
        chained = bool(np.array_equal(tgt[:-1], ctx[1:]))
        counts = np.bincount(ctx, minlength=VOCABULARY)
        report.update(
            pairs=[[int(a), int(b)] for a, b in zip(ctx, tgt)], chained=chained,
            sequence=escape_bytes(bytes(ctx) + bytes(tgt[-1:])) if chained else None,
            context_counts={str(int(r)): int(counts[r]) for r in np.flatnonzero(counts)},
            transitions=_transitions(ctx, tgt, counts), targets_agree=not ex.target_mismatches,
            target_mismatches=[{"index": i, "pair_target": int(tgt[i]), "table": ex.widened[i]}
                               for i in ex.target_mismatches],
            prompts=[{"index": i, "word": w, "hex": f"0x{w:08x}", "empty": w == EMPTY_PROMPT, "ok": PROMPT_WORD.ok(w),
                      "byte": w if w < VOCABULARY else None, "text": show_byte(w) if w < VOCABULARY else None}
                     for i, w in enumerate(ex.prompt_words)])
    return finish(report, problems, "OK: a valid bob-input v1 record", "bob-run refuses this input record")


def _pair_lines(r: dict[str, Any]) -> list[str]:
    cells = [f"{show_byte(a)}>{show_byte(b)}" for a, b in r["pairs"]]
    width = max(len(c) for c in cells)
    L = [f"pairs ({len(cells)}, in corpus order, context>next)"]
    for start in range(0, len(cells), PAIRS_PER_LINE):
        L.append(f"  {start:>3}  "
                 + "  ".join(c.ljust(width) for c in cells[start:start + PAIRS_PER_LINE]).rstrip())
    if r["chained"]:
        tokens = _ESCAPED_BYTE.findall(r["sequence"])
        shown = "".join(tokens[:SEQUENCE_SHOWN]) + ("..." if len(tokens) > SEQUENCE_SHOWN else "")
        L.append(f"  the pairs chain into one byte sequence: \"{shown}\"")
    return L


def _target_lines(r: dict[str, Any]) -> list[str]:
    table = f"targets table ({VOCABULARY} x u32)"
    if r["targets_agree"]:
        return [f"{table}: agrees with the pairs' targets"]
    bad = r["target_mismatches"]
    L = [f"{table}: DISAGREES with the pairs at {len(bad)} index(es)"]
    L += [f"  pair {b['index']}: pair target {show_byte(b['pair_target'])}, table {b['table']}"
          for b in bad[:MISMATCHES_SHOWN]]
    if len(bad) > MISMATCHES_SHOWN:
        L.append(f"  ... and {len(bad) - MISMATCHES_SHOWN} more")
    return L


def render_input(r: dict[str, Any]) -> list[str]:
    L = []
    if r["version"] is not None:
        L.append(f"  version  {r['version']}  ok")
    if r["pairs"] is not None:
        L += _pair_lines(r)
        L.append(f"context counts ({len(r['context_counts'])} distinct context bytes; next bytes by count)")
        L += [f"  {t['text']:>6} x{t['count']:<4} -> " + ", ".join(f"{n['text']} x{n['count']}" for n in t["next"])
              for t in r["transitions"]]
        L += _target_lines(r)
        L.append("prompts")
        for p in r["prompts"]:
            if p["empty"]:
                what = "empty prompt"
            elif p["ok"]:
                what = f"last byte {p['text']}"
            else:
                what = f"INVALID (neither a byte nor 0x{EMPTY_PROMPT:08x})"
            L.append(f"  {p['index']}  word {p['hex']}  {what}")
    return file_report(r, 9, L, INPUT_MAGIC)
