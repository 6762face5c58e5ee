"""``bob-inspect verify FILE...``: a checkpoint fsck, each file examined whole and reported on its own, with
a diagnosis of what its findings mean together (docs/bob-inspect.md, "verify FILE...")."""

from __future__ import annotations

from typing import Any

from bob.errors import FormatError
from bob.formats.checkpoint import Examination, examine
from bob.formats.constants import PLANE_NAMES, STRING_LIMIT
from bob.formats.rules import chunk_offset
from bob.invocation import unadvanceable
from bob.inspect.common import Refused, begin, plural, read_checkpoint

__all__ = ["verify_file", "diagnosis", "render_verify"]

_DIGEST_FIELD = "chunk_table.digest"


def _with_chunk(found: dict[str, Any]) -> dict[str, Any]:
    index = found.get("index")
    plane = found.get("field") if found.get("field") in PLANE_NAMES else None  # a state rule names its plane
    if found.get("field", "").startswith("chunk_table") and isinstance(index, int) and 0 <= index < len(PLANE_NAMES):
        plane = PLANE_NAMES[index]
    return {**found, "chunk": plane}


def diagnosis(ex: Examination, problems: list[dict[str, Any]]) -> list[str]:
    """What the findings mean together: swapped chunks, a file cut inside a chunk, a stale table."""
    said: list[str] = []
    # A digest finding is the table's field: ``actual`` what the table holds, ``expected`` the chunk's SHA-256.
    stored = {p["index"]: p["actual"] for p in problems if p.get("field") == _DIGEST_FIELD}
    held = {p["index"]: p["expected"] for p in problems if p.get("field") == _DIGEST_FIELD}
    tags = {p["index"]: (p["expected"], p["actual"]) for p in problems if p.get("field") == "chunk_table.tag"}
    for i, actual in sorted(held.items()):
        for j in sorted(j for j, expected in stored.items() if j != i and expected == actual):
            a, b = PLANE_NAMES[i], PLANE_NAMES[j]
            table = i in tags and j in tags and tags[j][1] == tags[i][0]  # entry j, tag and all, is chunk i's
            if held.get(j) != stored[i]:
                said.append(f"entry {b} of the chunk table is chunk {a}'s (the chunks are in their places)" if table
                            else f"chunk {a} holds the bytes of chunk {b} (the chunks were moved)")
            elif i < j:  # each holds the other's bytes: said once, for the pair
                said.append(f"entries {a} and {b} of the chunk table are swapped (the chunks are in their places)"
                            if table else f"chunks {a} and {b} are swapped (each holds the bytes the chunk table gives "
                            "the other)")
    header = ex.header
    short = next((p for p in problems if p.get("field") == "file_size" and isinstance(p.get("actual"), int)
                  and isinstance(p.get("expected"), int) and p["actual"] < p["expected"]), None)
    if short is not None and header is not None:
        hb = header.header_bytes
        for i, name in enumerate(PLANE_NAMES):
            if chunk_offset(hb, i) <= short["actual"] < chunk_offset(hb, i + 1):
                said.append(f"the file ends inside chunk {name}, {chunk_offset(hb, i + 1) - short['actual']} "
                            f"bytes before that chunk's end (bytes {chunk_offset(hb, i)}.."
                            f"{chunk_offset(hb, i + 1) - 1})")
        if short["actual"] < hb:
            said.append(f"the file ends inside its header ({hb} bytes)")
    cut = next((p for p in problems if p.get("error") == "Truncated"  # (nothing after it read, the digest included)
                and (p["field"] != "file_size" or header is None)), None)  # (no header at all: cut in the magic)
    if cut is not None:
        where = "its magic" if cut["field"] == "file_size" else f"{cut['field']} (at offset {cut['offset']})"
        damaged = isinstance(cut["actual"], int) and cut["actual"] > STRING_LIMIT  # a string no header holds
        said.append(f"a length in the header runs past the file's end, in {where}: damaged, not a file cut short"
                    if damaged else f"the file ends inside its header, in {where}")
    elif any(p.get("field") == "header_digest" for p in problems):
        said.append("the header (its contract fields or its chunk table) does not match the header's digest")
    if not problems and header is not None and (dead_end := unadvanceable(header.step)) is not None:
        said.append(dead_end.message)  # a valid file, at a step bob-run can never advance (D14)
    return said


def verify_file(path: str) -> dict[str, Any]:
    """One file's verdict: ``file``, ``size``, ``sha256``, ``ok``, ``problems`` (each with ``chunk``), ``diagnosis``."""
    data: bytes | None = None
    findings: list[FormatError] = []
    unreadable: list[dict[str, Any]] = []
    try:
        data, findings = read_checkpoint(path)
    except Refused as refused:  # that file's problem, not the command's refusal
        unreadable = [{"error": "Refused", "kind": "unreadable", "field": "path", "index": None, "offset": None,
                       "message": refused.message, "expected": None, "actual": None, "text": f"path: {refused.message}",
                       "chunk": None}]
    report, found, ex = begin("verify", path, data, findings, False, examine)
    problems = unreadable + [_with_chunk(f.to_dict()) for f in found]
    for key in ("command", "auto", "kind"):
        report.pop(key)
    report["size"] = None if unreadable else report["size"]  # (a directory's or a FIFO's own size: not read)
    report.update(ok=not problems, fresh=report["size"] == 0 and not problems, problems=problems,
                  problem_count=len(problems), diagnosis=diagnosis(ex, problems) if ex is not None else [])
    return report


def render_verify(files: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in files:
        ok = "OK (empty: bob-run starts fresh from it)" if r["fresh"] else "OK"
        lines.append(f"{r['file']}: " + (ok if r["ok"] else plural(r["problem_count"], "problem")))
        lines.extend(f"  - {p['text']}" for p in r["problems"])
        lines.extend(f"  = {d}" for d in r["diagnosis"])
    bad = sum(not r["ok"] for r in files)
    lines.append(f"verify: {len(files) - bad} of {plural(len(files), 'checkpoint')} good")
    return lines
