"""Human renderers of the checkpoint, diff and schema reports: a report dict (as ``--json`` prints it) → lines of text;
the input, predictions, trace and verify reports render in their own modules.

Everything taken from a file or a path is already escaped in the report (:mod:`bob.text`); the CLI guards every line
once more with :func:`bob.text.one_line` (see :func:`bob.inspect.cli._guard`)."""

from __future__ import annotations

from typing import Any

from bob.errors import field_at
from bob.formats.constants import CHECKPOINT_MAGIC
from bob.formats.kinds import ends_inside
from bob.formats.layout import CANONICAL_HEADER_BYTES
from bob.inspect.common import PROG, TOP_K, invocations_text, plural
from bob.text import f32_text, show_bytes


def g(x: float | str | None, digits: int | None = 7) -> str:
    """A number in a text table: ``-`` for None, a non-finite one's JSON text as it is, else
    ``digits`` significant digits (None: the shortest decimal of its float32)."""
    if x is None:
        return "-"
    return x if isinstance(x, str) else f32_text(x) if digits is None else f"{x:.{digits}g}"


def file_report(r: dict[str, Any], width: int, body: list[str], magic: bytes | None = None) -> list[str]:
    """A file report's lines: its title, the file's size and SHA-256, its magic against ``magic``,
    ``body``, then its problems and verdict."""
    L = [f"{PROG} {r['kind']}: {r['file']}"]
    if r["size"] is not None:
        L.append(f"  {'file':<{width}}{r['size']} bytes" + (f", sha256 {r['sha256']}" if r["sha256"] else ""))
    if magic is not None and (m := r.get("magic")) is not None:
        cut = ends_inside(bytes.fromhex(m["hex"]), magic)  # (its problem says where the file ends)
        state = "ok" if m["ok"] else f"{'cut short' if cut else 'WRONG'} (expected {show_bytes(magic)})"
        L.append(f"  {'magic':<{width}}\"{m['text']}\"  {state}")
    L += body
    if r["problems"]:
        L.append(f"problems ({r['problem_count']})")
        L.extend(f"  {i}. {p['text']}" for i, p in enumerate(r["problems"], 1))
    return L + [f"verdict: {r['verdict']}"]


# ------------------------------------------------------------- checkpoint


def _header_lines(r: dict[str, Any]) -> list[str]:
    L = []
    if r["partial_header"] is not None:
        fields = r["partial_header"][1:]  # the magic is shown above
        last = r["partial_header"][-1]["field"]
        before = "; the fields read before it:" if fields else ""  # (none: the magic alone was read)
        L.append(f"header: unreadable after '{last}' (see the problems){before}")
        width = max([len(f["field"]) for f in fields] + [12])
        L.extend(f"  {f['field']:<{width}}  {f['text']}" for f in fields)
    elif r["version"] is not None:
        L.append(f"  version       {r['version']}  ok")
    if r["header_bytes"] is not None and r["header_length"] is not None:
        padding = r["header_bytes"] - r["header_length"]  # (a damaged header_bytes: less than the header)
        L.append(f"  header_bytes  {r['header_bytes']} (header {r['header_length']} bytes, "
                 + (f"padding {padding})" if padding >= 0 else f"{-padding} more than header_bytes)"))
    if r["step"] is not None and not r["fresh"] and r["partial_header"] is None:
        L.append(f"  step          {r['step']} ({invocations_text(r['step'])})")
    return L


def _contract_lines(c: dict[str, Any]) -> list[str]:
    L = ["contract" + ("  (matches bob v1)" if c["matches_v1"] else "  (DIFFERS from bob v1)")]
    width = max(len(n) for n in c["fields"])
    for name, f in c["fields"].items():
        L.append(f"  {name:<{width}}  {'ok      ' if f['matches'] else 'MISMATCH'}  {f['text']}")
        if not f["matches"]:
            L.append(f"  {'':<{width}}  expected  {f['expected_text']}")
            if f.get("hyperparameter_mismatches"):
                got, want = f["hyperparameters"], f["expected_hyperparameters"]
                diffs = ", ".join(f"{k} {g(got[k], None)} (bob v1: {g(want[k], None)})"
                                  for k in f["hyperparameter_mismatches"])
                L.append(f"  {'':<{width}}  differs in {diffs}")
    return L


def _checked(ok: bool | None) -> str:
    return "not checked" if ok is None else ("verified" if ok else "MISMATCH")


def _chunk_lines(r: dict[str, Any]) -> list[str]:
    L = [f"chunk table ({r['chunk_count']} chunks)",
         "  #  tag                offset    length  sha256            digest"]
    for ch in r["chunks"]:
        flags = [f"{k[:-3]} WRONG" for k in ("tag_ok", "offset_ok", "length_ok") if not ch[k]]
        tag = f"\"{ch['tag']}\""
        L.append(f"  {ch['index']}  {tag:<16} {ch['offset']:>7} {ch['length']:>9}  {ch['sha256'][:16]}  "
                 f"{_checked(ch['digest_ok'])}" + ("  " + ", ".join(flags) if flags else ""))
    return L


def _plane_lines(planes: dict[str, Any]) -> list[str]:
    L = ["planes (min/max/mean/L2 over finite values)",
         f"  {'plane':<5} {'min':>14} {'max':>14} {'mean':>14} {'L2 norm':>14} {'non-finite':>10} {'negative':>9}"]
    return L + [f"  {name:<5} {g(s['min'], None):>14} {g(s['max'], None):>14} {g(s['mean']):>14} "
                f"{g(s['l2_norm']):>14} {s['non_finite']:>10} {s['negative']:>9}" for name, s in planes.items()]


def _row_lines(rows: list[dict[str, Any]]) -> list[str]:
    L = [f"rows: top {TOP_K} next bytes (softmax of the P row, float64)"]
    for row in rows:
        head = f"  {row['text']:>6} (0x{row['context']:02x}) ->"
        if row["top"] is None:
            L.append(f"{head} row has {row['non_finite']} non-finite value(s): no probabilities")
        else:
            L.append(head + "".join(f"  {t['text']} {t['probability']:.4f}" for t in row["top"]))
    return L


def render_checkpoint(r: dict[str, Any]) -> list[str]:
    L = []
    if r["fresh"]:  # (a fresh checkpoint has no magic)
        L.append("  zero bytes: a fresh run's checkpoint (bob-run starts from bob-seed-v1 at step 0)")
    L += _header_lines(r)
    if r["contract"] is not None:
        L += _contract_lines(r["contract"])
    if (d := r["header_digest"]) is not None:
        L.append(f"header digest   {d['stored']}  {_checked(d['ok'])}")
        if d["ok"] is False:
            L.append(f"  computed      {d['computed']}")
    if r["chunks"] is not None:
        L += _chunk_lines(r)
    if r["planes"] is not None:
        L += _plane_lines(r["planes"])
    if r.get("note"):
        L.append(f"  note: {r['note']}")
    if r["rows"] is not None:
        L += _row_lines(r["rows"])
    if r["heatmap"] is not None:
        L.append(f"heatmap written to {r['heatmap']['path']}")
    if (e := r["export"]) is not None:
        L.append(f"exported to {e['path']} ({e['format']}, {e['size']} bytes, sha256 {e['sha256']})")
    return file_report(r, 14, L, CHECKPOINT_MAGIC)


# ------------------------------------------------------------------- diff


def _plane_diff_lines(name: str, d: dict[str, Any]) -> list[str]:
    if not d["differing"]:
        return [f"  {name}: identical"]
    f = d["first"]
    L = [f"  {name}: {d['differing']} value(s) differ",
         f"     first at index {f['index']} = (context {f['context_text']}, next {f['next_text']}): "
         f"A {g(f['a'], 9)} (0x{f['a_hex']}), B {g(f['b'], 9)} (0x{f['b_hex']})"
         + (f", {f['ulp']} ulp" if f["ulp"] is not None else "")]
    for what, key in (("largest |A-B|", "max_abs_diff"), ("largest ULP distance", "max_ulp")):
        if (m := d[key]) is not None:
            value = m["value"] if key == "max_ulp" else g(m["value"], 9)  # a ULP distance is an integer
            L.append(f"     {what} {value} at index {m['index']} "
                     f"= (context {m['context_text']}, next {m['next_text']})")
    return L


def render_diff(r: dict[str, Any]) -> list[str]:
    L = [f"{PROG} diff"]
    for key in ("a", "b"):
        s = r[key]
        desc = ("zero bytes (fresh)" if s["fresh"] else f"step {s['step']}" if s["step"] is not None
                else "unreadable header" if s["sha256"] else "not read")  # (no digest: too large to read)
        L.append(f"  {key.upper()}  {s['file']}: {s['size']} bytes, {desc}"
                 + (f", sha256 {s['sha256']}" if s["sha256"] else ""))
    L.append("identical" if r["identical"] else "bytes: not compared (a file could not be read whole)"
             if r["identical"] is None else "not identical" + (f"; first differing byte at offset {r['first_differing_offset']}"
                                if r["first_differing_offset"] is not None else ""))
    h = r["header"]
    if not h["compared"]:
        why = ("a zero-byte checkpoint has no header" if r["a"]["fresh"] or r["b"]["fresh"]
               else "a file has no readable header")
        L.append(f"header: not compared ({why})")
    elif not h["differences"]:
        L.append("header: identical")
    else:
        L.append(f"header: {len(h['differences'])} field(s) differ")
        width = max(len(d["field"]) for d in h["differences"])
        for d in h["differences"]:
            L += [f"  {d['field']:<{width}}  A {d['a']}", f"  {'':<{width}}  B {d['b']}"]
    if r["planes"] is None:
        L.append("planes: not compared (a file's planes could not be read)")
    else:
        L.append("planes")
        for name, d in r["planes"].items():
            L += _plane_diff_lines(name, d)
    for key in ("a", "b"):
        if r[key]["problems"]:
            L.append(f"problems in {key.upper()} ({len(r[key]['problems'])})")
            L.extend(f"  {i}. {p['text']}" for i, p in enumerate(r[key]["problems"], 1))
    L.append(f"verdict: {r['verdict']}")
    return L


_LAYOUT_FIELDS = ("header_bytes", "header_digest", ".digest", ".offset", ".length", "chunk_count")  # the layout's


def render_diffable(r: dict[str, Any]) -> list[str]:
    """``diff --diffable``: one fact a line, keyed by field, plane and cell, never by a path, an offset, a size or a
    digest that moves with the layout, so that ``diff -u`` of two such outputs shows only what changed in meaning."""
    L = []
    for key in ("a", "b"):
        s = r[key]
        L.append(f"{key}: " + ("fresh" if s["fresh"] else f"step {s['step']}" if s["step"] is not None
                               else "unreadable header" if s["sha256"] else "not read"))
    h = r["header"]
    if h["compared"]:
        L += [f"header {d['field']}: A {d['a']} | B {d['b']}" for d in h["differences"]
              if not any(d["field"].endswith(t) or d["field"] == t.strip(".") for t in _LAYOUT_FIELDS)]
    for name, d in (r["planes"] or {}).items():
        if not d["differing"]:
            L.append(f"plane {name}: same")
            continue
        L.append(f"plane {name}: {plural(d['differing'], 'value')} differ{'s' if d['differing'] == 1 else ''}")
        for what, m in (("first", d["first"]), ("largest |A-B|", d["max_abs_diff"]),
                        ("largest ULP distance", d["max_ulp"])):
            if m is not None:
                value = "" if what == "first" else f" {m['value'] if 'ULP' in what else g(m['value'], 9)}"
                a, b = (g(m[k], 9) + (f" (0x{m[k + '_hex']})" if m[k] == "nan" else "") for k in "ab")  # its payload
                L.append(f"plane {name} {what}{value}: context {m['context_text']}, next {m['next_text']}: "
                         f"A {a} | B {b}")
    for key in ("a", "b"):  # by field and kind: a message may give byte offsets
        L += [f"problem in {key}: {field_at(p['field'], p.get('index'))}: {p['kind']}" for p in r[key]["problems"]]
    steps = {0 if r[key]["fresh"] else r[key]["step"] for key in "ab"}  # (a fresh side's header is not compared)
    meaningful = len(steps) > 1 or len(L) > 2 + sum(line.endswith(": same") for line in L)
    L.append("verdict: " + ("equal" if r["equal"] else "not compared" if r["identical"] is None
                            else "different" if meaningful else "the same step, contract and planes in another layout"))
    return L


# ------------------------------------------------------------------- schema


def render_schema(r: dict[str, Any]) -> list[str]:
    L: list[str] = []
    for f in r["formats"]:
        if L:
            L.append("")
        note = f" (offsets of the canonical {CANONICAL_HEADER_BYTES}-byte header)" if f["kind"] == "checkpoint" else ""
        version = f" v{f['version']}" if f["version"] is not None else " (no magic, no version)"
        L.append(f"{f['format']}{version}: {f['size']} bytes{note}")
        w = max(len(x["field"]) for x in f["fields"])
        L.append(f"  {'offset':>7} {'size':>7}  {'field':<{w}}  meaning")
        L.extend(f"  {x['offset']:>7} {x['size']:>7}  {x['field']:<{w}}  {x['meaning']}" for x in f["fields"])
    return L
