"""``bob-inspect verify FILE...``: a checkpoint fsck, each file examined whole and reported on its own, with
a diagnosis of what its findings mean together (docs/bob-inspect.md, "verify FILE...")."""

from __future__ import annotations

import hashlib
from typing import Any

from bob.errors import FormatError, field_at
from bob.formats.checkpoint import Examination, examine
from bob.formats.constants import PLANE_NAMES, STRING_LIMIT
from bob.formats.contract import V1
from bob.formats.rules import HEADER_BYTES, chunk_offset
from bob.invocation import unadvanceable
from bob.refusals import the_machine_ran_out
from bob.inspect.common import Refused, begin, not_replaced, plural, read_checkpoint

__all__ = ["verify_file", "diagnosis", "render_verify"]

_DIGEST_FIELD = "chunk_table.digest"


def _with_chunk(found: dict[str, Any]) -> dict[str, Any]:
    index = found.get("index")
    plane = found.get("field") if found.get("field") in PLANE_NAMES else None  # a state rule names its plane
    if found.get("field", "").startswith("chunk_table") and isinstance(index, int) and 0 <= index < len(PLANE_NAMES):
        plane = PLANE_NAMES[index]
    return {**found, "chunk": plane}


_MOVED = {  # (one entry, two exchanged), by what moved: the chunks, the table's entries, the table's digests
    "chunks": ("chunk {a} holds the bytes of chunk {b} (the chunks were moved)",
               "chunks {a} and {b} are swapped (each holds the bytes the chunk table gives the other)"),
    "entries": ("entry {b} of the chunk table is chunk {a}'s (the chunks are in their places)",
                "entries {a} and {b} of the chunk table are swapped (the chunks are in their places)"),
    "digests": ("entry {b} of the chunk table holds chunk {a}'s digest (the chunks are in their places; the header's "
                "digest is that of the table before)", "the digests of entries {a} and {b} of the chunk table are "
                "swapped (the chunks are in their places; the header's digest is that of the table before)"),
    "either": ("chunk {a} holds the bytes of chunk {b}, or entry {b} of the chunk table holds chunk {a}'s digest (the "
               "header does not match its digest: either may have moved)", "chunks {a} and {b} are swapped, or the "
               "digests of entries {a} and {b} of the chunk table are (the header does not match its digest: either "
               "may have moved)")}


def _moved(ex: Examination, problems: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """Chunks, table entries or the table's digests moved, and whether the header's mismatch is still to be said (a
    digest finding is the table's field: ``actual`` what the table holds, ``expected`` the chunk's SHA-256)."""
    stored = {p["index"]: p["actual"] for p in problems if p.get("field") == _DIGEST_FIELD}
    held = {p["index"]: p["expected"] for p in problems if p.get("field") == _DIGEST_FIELD}
    entry = {f: {p["index"]: (p["expected"], p["actual"]) for p in problems if p.get("field") == f}  # (a chunk
             for f in ("chunk_table.tag", "chunk_table.offset")}  # moved leaves each entry's tag and offset right)
    lay, raw = ex.layout, bytearray(ex.header_raw or b"")  # each exchanged entry given back its chunk's digest:
    for j in {j for i in held for j in stored if j != i and stored[j] == held[i]} if lay is not None else ():
        raw[lay.chunk_field(j, "digest").slice] = bytes.fromhex(held[j])  # type: ignore[union-attr]
    changed = any(p.get("field") == "header_digest" for p in problems)
    digests = lay is not None and changed and hashlib.sha256(raw).digest() == ex.header_digest  # (only they moved)
    said = []
    for i, actual in sorted(held.items()):
        for j in sorted(j for j, expected in stored.items() if j != i and expected == actual):
            entries = any(i in e and j in e and e[j][1] == e[i][0] for e in entry.values())  # entry j is chunk i's
            one, pair = _MOVED["digests" if digests else "entries" if entries else "either" if changed else "chunks"]
            if held.get(j) != stored[i] or i < j:  # each holding the other's: said once, for the pair
                said.append((one if held.get(j) != stored[i] else pair).format(a=PLANE_NAMES[i], b=PLANE_NAMES[j]))
    return said, changed and not (digests and said)


def _cut(ex: Examination, problems: list[dict[str, Any]], mismatch: bool) -> list[str]:
    """A file cut inside a chunk or its header, the damaged field that makes it look so, or (``mismatch``) a header
    that does not match its digest."""
    header, said = ex.header, []
    hb = None if header is None else header.header_bytes
    short = next((p["actual"] for p in problems if p.get("field") == "file_size" and isinstance(p.get("actual"), int)
                  and isinstance(p.get("expected"), int)), None)
    offsets = {p["index"]: p["actual"] for p in problems if p.get("field") == "chunk_table.offset"}
    if hb is not None and offsets:  # the table contradicts header_bytes: where do the chunks lie, surely?
        table = [offsets.get(i, chunk_offset(hb, i)) for i in range(len(PLANE_NAMES))]
        base = table[0] if table == [chunk_offset(table[0], i) for i in range(len(PLANE_NAMES))] \
            and HEADER_BYTES.ok(table[0]) and table[0] >= (ex.header_end or 0) else None
        if base is not None and short == chunk_offset(base, len(PLANE_NAMES)):  # the table and the size agree
            said.append(f"header_bytes ({hb}) is damaged: the chunk table and the file's size put chunk P at {base}")
        hb = None  # (a cut is told against header_bytes only when the table agrees with it)
    if short is not None and hb is not None and short < chunk_offset(hb, len(PLANE_NAMES)):
        for i, name in enumerate(PLANE_NAMES):
            if chunk_offset(hb, i) == short:  # (cut at a chunk's start: not inside it, none of it is there)
                said.append(f"the file ends where chunk {name} begins (byte {short}): none of its bytes are there")
            elif chunk_offset(hb, i) < short < chunk_offset(hb, i + 1):
                said.append(f"the file ends inside chunk {name}, {chunk_offset(hb, i + 1) - short} bytes before that "
                            f"chunk's end (bytes {chunk_offset(hb, i)}..{chunk_offset(hb, i + 1) - 1})")
        if short < hb:
            said.append(f"the file ends inside its header ({hb} bytes)")
    cut = next((p for p in problems if p.get("error") == "Truncated"  # (nothing after it read, the digest included)
                and (p["field"] != "file_size" or header is None)), None)  # (no header at all: cut in the magic)
    # A damaged length shifts what follows it: read as a length past the file's end, a short header_bytes or
    # contract mismatches, each a finding of its own, none of them the field to mend.
    if (wrong := ex.damaged_length) is not None:
        return said + [f"the length of {wrong[0]} (at offset {wrong[1]}) is damaged: {wrong[2]} bytes where the "
                       f"contract's string is {len(getattr(V1, wrong[0]))}, so what follows it is read from the wrong "
                       "offsets"]
    if cut is None:
        return said + ["the header (a field, its chunk table or the digest itself) does not match the header's "
                       "digest"] * mismatch
    where = "its magic" if cut["field"] == "file_size" else \
        f"{field_at(cut['field'], cut['index'])} (at offset {cut['offset']})"
    damaged = isinstance(cut["actual"], int) and cut["actual"] > STRING_LIMIT  # a string no header holds
    return said + [f"a length in the header, in {where}, is {cut['actual']} bytes, more than any string the contract "
                   "holds: damaged, not a file cut short" if damaged else f"the file ends inside its header, in {where}"]


def diagnosis(ex: Examination, problems: list[dict[str, Any]]) -> list[str]:
    """What the findings mean together: moved chunks or table entries, a file cut short, a damaged field."""
    moved, mismatch = _moved(ex, problems)
    said = moved + _cut(ex, problems, mismatch)
    if not problems and ex.header is not None and (dead_end := unadvanceable(ex.header.step)) is not None:
        said.append(dead_end.message)  # a valid file, at a step bob-run can never advance (D14)
    return said


def verify_file(path: str) -> dict[str, Any]:
    """One file's verdict: ``file``, ``size``, ``sha256``, ``ok``, ``problems`` (each with ``chunk``), ``diagnosis``."""
    data: bytes | None = None
    findings: list[FormatError] = []
    unreadable: list[dict[str, Any]] = []
    try:
        data, findings = read_checkpoint(path)
    except Refused as refused:  # that file's problem, not the command's refusal (unless the machine ran out)
        if the_machine_ran_out(refused):
            raise
        unreadable = [{"error": "Refused", "kind": "unreadable", "field": "path", "index": None, "offset": None,
                       "message": refused.message, "expected": None, "actual": None, "text": f"path: {refused.message}",
                       "chunk": None}]
    read, found, ex = begin("verify", path, data, findings, False, examine)
    problems = unreadable + [_with_chunk(f.to_dict()) for f in found]
    size = None if unreadable else read["size"]  # (a directory's or a FIFO's own size: not read)
    said = diagnosis(ex, problems) if ex is not None else []
    if not problems and not said and (why := not_replaced(path)):  # (as bob-inspect checkpoint's verdict says it)
        said.append(why)
    return {"file": read["file"], "size": size, "sha256": read["sha256"], "ok": not problems,
            "fresh": size == 0 and not problems, "problems": problems, "problem_count": len(problems),
            "diagnosis": said}


def render_verify(files: list[dict[str, Any]]) -> list[str]:
    lines = []
    for r in files:
        ok = "OK" if not r["fresh"] else "OK (empty)" if r["diagnosis"] else "OK (empty: bob-run starts fresh from it)"
        lines.append(f"{r['file']}: " + (ok if r["ok"] else plural(r["problem_count"], "problem")))
        lines.extend(f"  - {p['text']}" for p in r["problems"])
        lines.extend(f"  = {d}" for d in r["diagnosis"])
    bad = sum(not r["ok"] for r in files)
    lines.append(f"verify: {len(files) - bad} of {plural(len(files), 'checkpoint')} good")
    return lines
