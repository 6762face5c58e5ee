"""``bob-inspect``: bob's files, shown whole and readably, from the schemas.

The construct schemas and the formats layer's findings are the inspection
tools: every field shown here comes from a schema's parse
(:data:`~bob.formats.envelope.HEADER_BODY`, :data:`~bob.formats.input_record.INPUT_RECORD`,
:data:`~bob.formats.predictions.PREDICTIONS`), every problem from the
findings lists (:func:`bob.examine_checkpoint`, :func:`bob.input_findings`,
:func:`bob.predictions_findings`), every layout table from
:func:`bob.formats.docs.layout_rows`. Nothing here re-parses bytes by hand.

Commands (one function each: :func:`cmd_ckpt`, :func:`cmd_input`,
:func:`cmd_pred`, :func:`cmd_diff`, :func:`cmd_schema`, :func:`cmd_auto`)::

    bob-inspect ckpt FILE [--rows BYTES] [--rows-hex HEX] [--heatmap OUT.png]
    bob-inspect input FILE
    bob-inspect pred FILE
    bob-inspect diff A B
    bob-inspect schema [input|envelope|pred]
    bob-inspect FILE            # the kind detected from the magic (24 bytes: predictions)

Every command takes ``--json`` (one JSON object on stdout, stable keys,
documented in ``docs/bob-inspect.md``). Human output escapes every byte from
a file that is not printable ASCII (``\\xNN``), so a hostile file cannot
drive the terminal; JSON output is pure ASCII.

Exit codes: 0 the file(s) are clean; 2 a file has a problem, is refused or
cannot be read, or the command line is wrong; 1 anything unexpected (a
traceback only under ``--debug``).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import os
import re
import stat
import struct
import sys
from typing import Any

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_PROBLEMS = 2

PROG = "bob-inspect"
COMMANDS = ("ckpt", "input", "pred", "diff", "schema")
TOP_K = 5
PLOT_HINT = "pip install 'bob[plot]'"
INIT_BOUND = 0.01  # §6.1: every initial P value lies in [-0.01, 0.01)
MAX_ZOOM = 24  # rows in the heatmap's zoom panel
MAX_ZOOM_COLUMNS = 32  # columns in the heatmap's zoom panel


class Refused(Exception):
    """A one-line refusal (exit 2): a missing file, a bad option value …"""


# --------------------------------------------------------------------------- #
# Escaping: nothing from a file reaches the terminal unescaped
# --------------------------------------------------------------------------- #


def esc(data: bytes) -> str:
    """Bytes as text: printable ASCII as is, everything else ``\\xNN``.

    The backslash and the double quote are escaped too (``\\x5c``, ``\\x22``),
    so the text reads unambiguously inside double quotes.
    """
    out = []
    for b in bytes(data):
        if 0x20 <= b < 0x7F and b not in (0x22, 0x5C):
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def esc_byte(value: int) -> str:
    """One byte for people, quoted: ``'a'``, ``' '``, ``'\\x0a'`` (as bob-run shows bytes)."""
    if 0x20 <= value < 0x7F and value not in (0x27, 0x5C):
        return f"'{chr(value)}'"
    return f"'\\x{value:02x}'"


def esc_path(path: str) -> str:
    """A path from the command line (it may hold any bytes), escaped like file content."""
    return esc(os.fsencode(path))


def _guard(line: str) -> str:
    """Last line of defence: escape any character the terminal would not print.

    Everything from a file is already escaped with :func:`esc`; this catches
    only code paths that forgot (it leaves backslashes alone so escapes stay
    readable).
    """
    if line.isprintable():
        return line
    out = []
    for ch in line:
        if ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def _number(x: float | None) -> float | str | None:
    """A float for JSON: finite numbers as numbers, non-finite as ``"nan"``, ``"inf"``, ``"-inf"``."""
    if x is None:
        return None
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if x != x else ("inf" if x > 0 else "-inf")


def _f32(x: float) -> float | str:
    """An f32 value for JSON: the shortest decimal that reads back as the same f32."""
    from bob.errors import f32_text

    x = float(x)
    if not math.isfinite(x):
        return _number(x)  # type: ignore[return-value]
    return float(f32_text(x))


def _f32_show(x: float | str | None) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    from bob.errors import f32_text

    return f32_text(x)


def _g(x: float | str | None, digits: int = 7) -> str:
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}g}"


def _problem(exc: Exception) -> dict[str, Any]:
    """A finding as JSON (:meth:`FormatError.to_dict`, non-finite floats made JSON-safe)."""
    d = exc.to_dict()  # type: ignore[attr-defined]
    for key in ("expected", "actual"):
        if isinstance(d.get(key), float):
            d[key] = _number(d[key])
    return d


# --------------------------------------------------------------------------- #
# Reading files (size-bounded, by the formats layer)
# --------------------------------------------------------------------------- #


def _read(path: str, limit: int, magic: bytes | None = None, what: str = "") -> tuple[bytes | None, list]:
    """``(bytes, [])``, or ``(None, [finding])`` for a file larger than ``limit``
    (never read whole: :func:`bob.formats.envelope.read_bounded`).

    A missing file, a directory or an unreadable file is a :class:`Refused`.
    """
    from bob.errors import FormatError
    from bob.formats.envelope import read_bounded

    try:
        data = read_bounded(path, limit, magic, what) if magic is not None else read_bounded(path, limit)
    except FormatError as exc:
        return None, [exc]
    except OSError as exc:
        raise Refused(f"{esc_path(path)}: {_os_reason(exc)}") from None
    if data is None:
        raise Refused(f"{esc_path(path)}: no such file")
    return data, []


def _os_reason(exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    return reason[:1].lower() + reason[1:]


def _file_size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None


def _base(command: str, path: str, kind: str, data: bytes | None, auto: bool) -> dict[str, Any]:
    return {
        "command": command,
        "file": esc_path(path),
        "auto": auto,
        "kind": kind,
        "size": len(data) if data is not None else _file_size(path),
        "sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
    }


def _finish(report: dict[str, Any], problems: list, ok_verdict: str, bad_verdict: str) -> dict[str, Any]:
    report["problems"] = [_problem(p) for p in problems]
    report["problem_count"] = len(problems)
    report["ok"] = not problems
    n = len(problems)
    report["verdict"] = ok_verdict if not problems else f"{n} problem{'s' if n != 1 else ''}: {bad_verdict}"
    return report


# --------------------------------------------------------------------------- #
# Checkpoints
# --------------------------------------------------------------------------- #


def plane_stats(values) -> dict[str, Any]:
    """min, max, mean, L2 norm (over the finite values, in float64) and counts.

    ``negative`` counts values < 0 (``-inf`` included, ``-0.0`` not).
    """
    import numpy as np

    a = np.asarray(values, dtype=np.float32)
    finite = np.isfinite(a)
    vals = a[finite].astype(np.float64)
    nan = int(np.isnan(a).sum())
    has = vals.size > 0
    return {
        "count": int(a.size),
        "min": _f32(vals.min()) if has else None,
        "max": _f32(vals.max()) if has else None,
        "mean": float(vals.mean()) if has else None,
        "l2_norm": float(np.sqrt(np.dot(vals, vals))) if has else None,
        "non_finite": int(a.size - int(finite.sum())),
        "nan": nan,
        "inf": int(a.size - int(finite.sum()) - nan),
        "negative": int((a < 0).sum()),
        "zeros": int((a == 0).sum()),
    }


def _contract_field(name: str, value: Any, expected: Any, mismatch: bool) -> dict[str, Any]:
    from bob.errors import show_value

    entry: dict[str, Any] = {"matches": not mismatch}
    if isinstance(value, (bytes, bytearray)):
        entry.update(value=esc(value), expected=esc(expected), hex=bytes(value).hex(), length=len(value))
    else:
        entry.update(value=value, expected=expected)
    entry["text"] = show_value(value, name)
    entry["expected_text"] = show_value(expected, name)
    if name == "learner":
        from bob.errors import LEARNER_NAMES, learner_floats

        got = learner_floats(value)
        want = learner_floats(expected)
        entry["hyperparameters"] = None if got is None else {k: _f32(x) for k, x in zip(LEARNER_NAMES, got)}
        entry["expected_hyperparameters"] = {k: _f32(x) for k, x in zip(LEARNER_NAMES, want)}
        entry["hyperparameter_mismatches"] = (
            None if got is None
            else [k for k, a, b in zip(LEARNER_NAMES, got, want) if _f32_bits(a) != _f32_bits(b)]
        )
    return entry


def _f32_bits(x: float) -> bytes:
    return struct.pack("<f", x)


def _softmax_rows(rows) -> list:
    """Row-wise softmax in float64 for display (None for a row with non-finite values).

    Presentation only: what a person reads next to a row of logits. The
    training math (§6.3's pinned f32 exp and 8-lane sum) lives in the native
    core and is never computed here.
    """
    import numpy as np

    out = []
    for row in rows:
        if not np.isfinite(row).all():
            out.append(None)
            continue
        x = row.astype(np.float64)
        e = np.exp(x - x.max())
        out.append(e / e.sum())
    return out


def rows_report(p_plane, contexts: bytes) -> list[dict[str, Any]]:
    """For each context byte: the top-5 next bytes of its P row with their probabilities.

    The probabilities are a softmax of the row computed here in float64 with
    NumPy. This is presentation for people, not the training math (that is
    the native core's pinned f32 softmax, §6.3); they agree to display
    precision. Ties are broken towards the lower byte, as §4's argmax is.
    """
    import numpy as np

    from bob.formats.contract import VOCABULARY

    table = np.asarray(p_plane, dtype=np.float32).reshape(VOCABULARY, VOCABULARY)
    out = []
    for c in contexts:
        row = table[c]
        entry: dict[str, Any] = {"context": c, "text": esc_byte(c), "finite": bool(np.isfinite(row).all())}
        if not entry["finite"]:
            entry["non_finite"] = int((~np.isfinite(row)).sum())
            entry["top"] = None
        else:
            entry["non_finite"] = 0
            prob = _softmax_rows([row])[0]
            order = np.argsort(-row.astype(np.float64), kind="stable")[:TOP_K]
            entry["top"] = [
                {"next": int(j), "text": esc_byte(int(j)), "probability": float(prob[j]), "logit": _f32(row[j])}
                for j in order
            ]
        out.append(entry)
    return out


def _fresh_planes() -> tuple[Any, str | None]:
    """The fresh state's planes (3 × 65,536), which only the native core makes
    (``Checkpoint.fresh``), or ``(None, note)`` when it cannot be loaded."""
    import numpy as np

    try:
        from bob.formats.envelope import Checkpoint

        c = Checkpoint.fresh()
    except ImportError as exc:
        return None, f"the fresh state's planes need the native core ({type(exc).__name__})"
    return np.stack([c.p, c.m, c.v]), None


def partial_header(data: bytes) -> list[tuple[str, Any]] | None:
    """The header fields that parse before the first problem, for a header the
    schema cannot read whole: the longest prefix of
    :data:`~bob.formats.envelope.HEADER_BODY`'s fields that parses, as
    ``[(field, value)]`` (None if not even the magic does)."""
    from construct import Struct

    from bob.errors import FormatError
    from bob.formats.envelope import HEADER_BODY
    from bob.formats.schema import parse

    subcons = HEADER_BODY.subcons
    for k in range(len(subcons) - 1, 0, -1):
        try:
            parsed = parse(Struct(*subcons[:k]), data)
        except FormatError:
            continue
        return [(sc.name, parsed[sc.name]) for sc in subcons[:k]]
    return None


def checkpoint_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False,
                      rows: bytes = b"") -> tuple[dict[str, Any], Any]:
    """The ``ckpt`` report (a JSON-ready dict) and the P plane (or None).

    ``data`` is the file's bytes (None when it was too large to read);
    everything shown comes from :func:`bob.examine_checkpoint`: the schema's
    parse of the header, its findings and the float32 views of the planes.
    """
    import numpy as np

    from bob.errors import show_value
    from bob.formats.contract import CONTRACT_FIELDS, PLANE_NAMES, UPDATES_PER_INVOCATION, V1
    from bob.formats.envelope import ENVELOPE_MAGIC, examine

    report = _base("ckpt", path, "ckpt", data, auto)
    problems = list(read_problems)
    ex = examine(data, for_resume=True) if data is not None else None
    if ex is not None:
        problems.extend(ex.findings)
    fresh = bool(ex is not None and ex.fresh)
    h = ex.header if ex is not None else None
    fields_failed = {(p.field, p.index) for p in problems}

    head = data[:8] if data is not None else b""
    report["fresh"] = fresh
    report["magic"] = (
        None if fresh or data is None
        else {"text": esc(head), "hex": head.hex(), "ok": head == ENVELOPE_MAGIC}
    )
    partial = None
    if h is None and data and head == ENVELOPE_MAGIC:
        partial = partial_header(data)
    known = dict(partial or ())
    report["partial_header"] = None if partial is None else [
        {"field": name, "value": esc(v) if isinstance(v, bytes) else v, "text": show_value(v, name)}
        for name, v in partial
    ]
    report["version"] = h.version if h is not None else known.get("version")
    report["header_bytes"] = h.header_bytes if h is not None else known.get("header_bytes")
    report["header_length"] = ex.header_end if h is not None else None
    step = h.step if h is not None else (0 if fresh else known.get("step"))
    report["step"] = step
    report["invocations"] = None if step is None else step // UPDATES_PER_INVOCATION

    if h is not None:
        contract = ex.contract
        report["contract"] = {
            "matches_v1": contract.is_v1,
            "fields": {
                name: _contract_field(name, h[name], getattr(V1, name), (name, None) in fields_failed)
                for name in CONTRACT_FIELDS
            },
        }
        computed = ex.computed_header_digest
        report["header_digest"] = {
            "stored": ex.header_digest.hex(),
            "computed": computed.hex() if computed is not None else None,
            "ok": (None if computed is None else ("header_digest", None) not in fields_failed),
        }
        report["chunk_count"] = h.chunk_count
        chunks = []
        for i, entry in enumerate(h.chunk_table):
            computed_i = ex.chunk_digests[i] if ex.chunk_digests is not None else None
            chunks.append({
                "index": i,
                "plane": PLANE_NAMES[i] if i < len(PLANE_NAMES) else None,
                "tag": esc(entry.tag),
                "offset": entry.offset,
                "length": entry.length,
                "sha256": entry.digest.hex(),
                "computed_sha256": computed_i.hex() if computed_i is not None else None,
                "tag_ok": ("chunk_table.tag", i) not in fields_failed,
                "offset_ok": ("chunk_table.offset", i) not in fields_failed,
                "length_ok": ("chunk_table.length", i) not in fields_failed,
                "digest_ok": None if computed_i is None else ("chunk_table.digest", i) not in fields_failed,
            })
        report["chunks"] = chunks
    else:
        report["contract"] = report["header_digest"] = report["chunks"] = report["chunk_count"] = None

    planes = None
    note = None
    if ex is not None and ex.planes is not None:
        planes = ex.planes
    elif fresh:
        planes, note = _fresh_planes()
    report["planes"] = None if planes is None else {
        name: plane_stats(planes[i]) for i, name in enumerate(PLANE_NAMES)
    }
    report["note"] = note
    if rows:
        report["rows"] = rows_report(planes[0], rows) if planes is not None else None
    else:
        report["rows"] = None
    report["heatmap"] = None

    if fresh:
        ok = "OK: zero bytes, a fresh run's checkpoint (step 0, the state bob-seed-v1 makes)"
    else:
        inv = report["invocations"]
        ok = (f"OK: a valid bob v1 checkpoint at step {step} ({inv} invocation{'s' if inv != 1 else ''}); "
              "bob-run can resume it")
    _finish(report, problems, ok, "bob-run refuses this checkpoint")
    return report, (planes[0] if planes is not None else None)


def _render_checkpoint(r: dict[str, Any]) -> list[str]:
    L = [f"{PROG} ckpt: {r['file']}"]
    if r["size"] is not None:
        L.append(f"  file          {r['size']} bytes" + (f", sha256 {r['sha256']}" if r["sha256"] else ""))
    if r["fresh"]:
        L.append("  zero bytes: a fresh run's checkpoint (bob-run starts from bob-seed-v1 at step 0)")
    if r["magic"] is not None:
        m = r["magic"]
        state = "ok" if m["ok"] else 'WRONG (expected "BOB-CKPT")'
        L.append(f"  magic         \"{m['text']}\"  {state}")
    if r["partial_header"] is not None:
        fields = r["partial_header"][1:]  # the magic is shown above
        last = r["partial_header"][-1]["field"]
        L.append(f"header: unreadable after '{last}' (see the problems); the fields read before it:")
        width = max([len(f["field"]) for f in fields] + [12])
        for f in fields:
            L.append(f"  {f['field']:<{width}}  {f['text']}")
    elif r["version"] is not None:
        L.append(f"  version       {r['version']}  ok")
    if r["header_bytes"] is not None and r["header_length"] is not None:
        L.append(f"  header_bytes  {r['header_bytes']} (header {r['header_length']} bytes, "
                 f"padding {r['header_bytes'] - r['header_length']})")
    if r["step"] is not None and not r["fresh"] and r["partial_header"] is None:
        extra = r["step"] % 10
        inv = f"{r['invocations']} invocation{'s' if r['invocations'] != 1 else ''}"
        L.append(f"  step          {r['step']} ({inv}" + (f" + {extra} updates" if extra else "") + ")")
    c = r["contract"]
    if c is not None:
        L.append("contract" + ("  (matches bob v1)" if c["matches_v1"] else "  (DIFFERS from bob v1)"))
        width = max(len(n) for n in c["fields"])
        for name, f in c["fields"].items():
            flag = "ok      " if f["matches"] else "MISMATCH"
            L.append(f"  {name:<{width}}  {flag}  {f['text']}")
            if not f["matches"]:
                L.append(f"  {'':<{width}}  expected  {f['expected_text']}")
                if f.get("hyperparameter_mismatches"):
                    got, want = f["hyperparameters"], f["expected_hyperparameters"]
                    diffs = ", ".join(f"{k} {_f32_show(got[k])} (bob v1: {_f32_show(want[k])})"
                                      for k in f["hyperparameter_mismatches"])
                    L.append(f"  {'':<{width}}  differs in {diffs}")
    if r["header_digest"] is not None:
        d = r["header_digest"]
        state = "not checked" if d["ok"] is None else ("verified" if d["ok"] else "MISMATCH")
        L.append(f"header digest   {d['stored']}  {state}")
        if d["ok"] is False:
            L.append(f"  computed      {d['computed']}")
    if r["chunks"] is not None:
        L.append(f"chunk table ({r['chunk_count']} chunks)")
        L.append("  #  tag                offset    length  sha256            digest")
        for ch in r["chunks"]:
            state = "not checked" if ch["digest_ok"] is None else ("verified" if ch["digest_ok"] else "MISMATCH")
            flags = [f"{k[:-3]} WRONG" for k in ("tag_ok", "offset_ok", "length_ok") if not ch[k]]
            tag = f"\"{ch['tag']}\""
            L.append(f"  {ch['index']}  {tag:<16} {ch['offset']:>7} {ch['length']:>9}  {ch['sha256'][:16]}  "
                     f"{state}" + ("  " + ", ".join(flags) if flags else ""))
    if r["planes"] is not None:
        L.append("planes (min/max/mean/L2 over finite values)")
        L.append(f"  {'plane':<5} {'min':>14} {'max':>14} {'mean':>14} {'L2 norm':>14} {'non-finite':>10} "
                 f"{'negative':>9}")
        for name, s in r["planes"].items():
            L.append(f"  {name:<5} {_f32_show(s['min']):>14} {_f32_show(s['max']):>14} {_g(s['mean']):>14} "
                     f"{_g(s['l2_norm']):>14} {s['non_finite']:>10} {s['negative']:>9}")
    if r.get("note"):
        L.append(f"  note: {r['note']}")
    if r["rows"] is not None:
        L.append(f"rows: top {TOP_K} next bytes (softmax of the P row, float64)")
        for row in r["rows"]:
            head = f"  {row['text']:>6} (0x{row['context']:02x}) ->"
            if row["top"] is None:
                L.append(f"{head} row has {row['non_finite']} non-finite value(s): no probabilities")
            else:
                L.append(head + "".join(f"  {t['text']} {t['probability']:.4f}" for t in row["top"]))
    elif r.get("rows_requested") and r["planes"] is None:
        L.append("rows: not available (the planes could not be read)")
    if r["heatmap"] is not None:
        L.append(f"heatmap written to {r['heatmap']['path']}")
    return L + _render_problems(r)


def _render_problems(r: dict[str, Any]) -> list[str]:
    L = []
    if r["problems"]:
        L.append(f"problems ({r['problem_count']})")
        for i, p in enumerate(r["problems"], 1):
            L.append(f"  {i}. {p['text']}")
    L.append(f"verdict: {r['verdict']}")
    return L


# --------------------------------------------------------------------------- #
# The heatmap (matplotlib, optional extra bob[plot])
# --------------------------------------------------------------------------- #


def _require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise Refused(f"--heatmap needs matplotlib, the optional extra bob[plot]: {PLOT_HINT}") from None


def _plain(text: str) -> str:
    """Text for a matplotlib label: ``$`` escaped so it is never read as mathtext."""
    return text.replace("$", r"\$")


def _byte_label(b: int) -> str:
    return _plain(f"0x{b:02x} {esc_byte(b)}") if 0x20 < b < 0x7F else f"0x{b:02x}"


def _favoured_columns(table, rows):
    """The next bytes the given rows favour: in each row, the values above the
    midpoint between the row's median and its maximum (at most 32 columns, the
    largest values first; returned sorted by byte)."""
    import numpy as np

    score: dict[int, float] = {}
    for r in rows:
        row = table[r]
        finite = np.isfinite(row)
        if not finite.any():
            continue
        vals = row[finite]
        top, mid = float(vals.max()), float(np.median(vals))
        cut = mid + 0.5 * (top - mid)
        for j in np.flatnonzero(finite & (row >= cut)):
            score[int(j)] = max(score.get(int(j), -np.inf), float(row[j]))
    best = sorted(score, key=lambda j: (-score[j], j))[:MAX_ZOOM_COLUMNS]
    return np.array(sorted(best), dtype=np.int64)


def draw_heatmap(p_plane, out: str, title: str) -> dict[str, Any]:
    """Draw the 256 × 256 P table (rows: context byte, columns: next byte) to ``out``.

    Left: the whole table. Right, a zoom: the rows that left the
    initialization's range (|P| > 0.01 somewhere; at most 24, those that moved
    most) against the next bytes they favour (:func:`_favoured_columns`),
    each cell labelled with its logit and softmax probability when the zoom
    is small. One diverging colour scale centred on 0 for both; non-finite
    values are drawn black. The file is written atomically.
    """
    import numpy as np
    from matplotlib import colormaps
    from matplotlib.figure import Figure

    from bob.atomic import write_atomic

    table = np.asarray(p_plane, dtype=np.float32).reshape(256, 256)
    finite = np.isfinite(table)
    limit = float(np.abs(table[finite]).max()) if finite.any() else 1.0
    limit = limit or 1.0
    masked = np.ma.masked_invalid(table)
    cmap = colormaps["RdBu_r"].with_extremes(bad="black")

    reach = np.where(finite, np.abs(table), np.inf).max(axis=1)
    moved = np.flatnonzero(reach > INIT_BOUND)
    if moved.size > MAX_ZOOM:
        moved = np.sort(moved[np.argsort(-reach[moved], kind="stable")[:MAX_ZOOM]])
    cols = _favoured_columns(table, moved)
    if not cols.size:
        cols = np.arange(256)

    fig = Figure(figsize=(14, 6.5), dpi=120, layout="constrained")
    ax_full, ax_rows = fig.subplots(1, 2, width_ratios=[1, 1])
    im = ax_full.imshow(masked, cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest", aspect="equal")
    ticks = list(range(0, 256, 32)) + [255]
    ax_full.set_xticks(ticks, [_byte_label(t) for t in ticks], rotation=90, fontsize=7)
    ax_full.set_yticks(ticks, [_byte_label(t) for t in ticks], fontsize=7)
    ax_full.set_xlabel("next byte")
    ax_full.set_ylabel("context byte")
    ax_full.set_title("P: all 256 x 256 logits (row = context byte)", fontsize=10)
    if moved.size:
        zoom = masked[np.ix_(moved, cols)]
        ax_rows.imshow(zoom, cmap=cmap, vmin=-limit, vmax=limit, interpolation="nearest", aspect="auto")
        ax_rows.set_yticks(range(moved.size), [_byte_label(int(b)) for b in moved], fontsize=8)
        ax_rows.set_xticks(range(cols.size), [_byte_label(int(b)) for b in cols], rotation=90, fontsize=8)
        ax_rows.set_xlabel("next byte (the columns these rows favour)")
        ax_rows.set_ylabel("context byte")
        ax_rows.set_title(f"zoom: the {moved.size} row(s) that left the initialization (|P| > {INIT_BOUND}),\n"
                          "logit and softmax probability in each cell", fontsize=10)
        if moved.size * cols.size <= 400:
            probs = _softmax_rows(table[moved])
            for i, r in enumerate(moved):
                for j, c in enumerate(cols):
                    v = table[r, c]
                    text = f"{v:.2f}" if np.isfinite(v) else "n/a"
                    if probs[i] is not None:
                        text += f"\np={probs[i][c]:.3f}"
                    dark = np.isfinite(v) and abs(v) > 0.6 * limit
                    ax_rows.text(j, i, text, ha="center", va="center", fontsize=7,
                                 color="white" if dark else "black")
    else:
        ax_rows.set_axis_off()
        ax_rows.text(0.5, 0.5, f"no row has left the initialization (|P| <= {INIT_BOUND})",
                     ha="center", va="center")
    bar = fig.colorbar(im, ax=[ax_full, ax_rows], shrink=0.8)
    bar.set_label("logit (black: non-finite)")
    bad = int((~finite).sum())
    fig.suptitle(_plain(title) + (f" - {bad} non-finite values" if bad else ""), fontsize=11)

    ext = os.path.splitext(out)[1].lower().lstrip(".") or "png"
    supported = fig.canvas.get_supported_filetypes()
    if ext not in supported:
        raise Refused(f"--heatmap: cannot write .{esc(ext.encode())} files; use one of "
                      + ", ".join(sorted(supported)))
    buf = io.BytesIO()
    fig.savefig(buf, format=ext)
    try:
        write_atomic(out, buf.getvalue())
    except OSError as exc:
        raise Refused(f"--heatmap {esc_path(out)}: {_os_reason(exc)}") from None
    return {"path": esc_path(out), "format": ext, "rows_shown": [int(b) for b in moved]}


# --------------------------------------------------------------------------- #
# Input records
# --------------------------------------------------------------------------- #


def input_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False) -> dict[str, Any]:
    """The ``input`` report: the schema's parse of the record (shown even when a
    target or prompt word is refused) and :func:`bob.input_findings`."""
    import numpy as np

    from bob.errors import FormatError
    from bob.formats.contract import EMPTY_PROMPT, RECORD_BYTES, VOCABULARY
    from bob.formats.input_record import INPUT_MAGIC, INPUT_RECORD, input_findings
    from bob.formats.schema import parse

    report = _base("input", path, "input", data, auto)
    problems = list(read_problems)
    rec = None
    if data is not None:
        problems.extend(input_findings(data))
        if len(data) == RECORD_BYTES and data[:8] == INPUT_MAGIC:
            try:
                rec = parse(INPUT_RECORD, data)
            except FormatError:
                rec = None  # already a finding
    head = data[:8] if data is not None else b""
    report["magic"] = None if data is None else {"text": esc(head), "hex": head.hex(), "ok": head == INPUT_MAGIC}
    report["version"] = rec.version if rec is not None else None
    if rec is None:
        for key in ("pairs", "chained", "sequence", "context_counts", "transitions", "targets_agree",
                    "target_mismatches", "prompts"):
            report[key] = None
    else:
        pairs = np.frombuffer(rec.pairs, dtype=np.uint8)
        ctx, tgt = pairs[0::2], pairs[1::2]
        widened = np.frombuffer(rec.targets, dtype="<u4")
        report["pairs"] = [[int(a), int(b)] for a, b in zip(ctx, tgt)]
        chained = bool(np.array_equal(tgt[:-1], ctx[1:]))
        report["chained"] = chained
        report["sequence"] = esc(bytes(ctx) + bytes(tgt[-1:])) if chained else None
        counts = np.bincount(ctx, minlength=VOCABULARY)
        report["context_counts"] = {str(int(r)): int(counts[r]) for r in np.flatnonzero(counts)}
        h = np.bincount(ctx.astype(np.int64) * VOCABULARY + tgt, minlength=VOCABULARY * VOCABULARY)
        h = h.reshape(VOCABULARY, VOCABULARY)
        transitions = []
        for r in np.flatnonzero(counts):
            nxt = np.flatnonzero(h[r])
            nxt = nxt[np.argsort(-h[r][nxt], kind="stable")]
            transitions.append({
                "context": int(r), "text": esc_byte(int(r)), "count": int(counts[r]),
                "next": [{"byte": int(j), "text": esc_byte(int(j)), "count": int(h[r][j])} for j in nxt],
            })
        report["transitions"] = transitions
        bad = np.flatnonzero(widened != tgt)
        report["targets_agree"] = not bad.size
        report["target_mismatches"] = [
            {"index": int(i), "pair_target": int(tgt[i]), "table": int(widened[i])} for i in bad
        ]
        prompts = []
        for i, w in enumerate(np.frombuffer(rec.prompt_words, dtype="<u4").tolist()):
            entry = {"index": i, "word": w, "hex": f"0x{w:08x}", "empty": w == EMPTY_PROMPT,
                     "byte": w if w < VOCABULARY else None, "ok": w < VOCABULARY or w == EMPTY_PROMPT}
            entry["text"] = esc_byte(w) if w < VOCABULARY else None
            prompts.append(entry)
        report["prompts"] = prompts
    return _finish(report, problems, "OK: a valid bob-input v1 record", "bob-run refuses this input record")


def _render_input(r: dict[str, Any]) -> list[str]:
    L = [f"{PROG} input: {r['file']}"]
    if r["size"] is not None:
        L.append(f"  file     {r['size']} bytes" + (f", sha256 {r['sha256']}" if r["sha256"] else ""))
    if r["magic"] is not None:
        m = r["magic"]
        state = "ok" if m["ok"] else 'WRONG (expected "BOB-INPT")'
        L.append(f"  magic    \"{m['text']}\"  {state}")
    if r["version"] is not None:
        L.append(f"  version  {r['version']}  ok")
    if r["pairs"] is not None:
        cells = [f"{esc_byte(a)}>{esc_byte(b)}" for a, b in r["pairs"]]
        width = max(len(c) for c in cells)
        L.append(f"pairs ({len(cells)}, in corpus order, context>next)")
        for start in range(0, len(cells), 8):
            L.append(f"  {start:>3}  " + "  ".join(c.ljust(width) for c in cells[start:start + 8]).rstrip())
        if r["chained"]:
            tokens = re.findall(r"\\x[0-9a-f]{2}|.", r["sequence"])  # one token per byte
            shown = "".join(tokens[:64]) + ("..." if len(tokens) > 64 else "")
            L.append(f"  the pairs chain into one byte sequence: \"{shown}\"")
        L.append(f"context counts ({len(r['context_counts'])} distinct context bytes; next bytes by count)")
        for t in r["transitions"]:
            nxt = ", ".join(f"{n['text']} x{n['count']}" for n in t["next"])
            L.append(f"  {t['text']:>6} x{t['count']:<4} -> {nxt}")
        if r["targets_agree"]:
            L.append("targets table (256 x u32): agrees with the pairs' targets")
        else:
            bad = r["target_mismatches"]
            L.append(f"targets table (256 x u32): DISAGREES with the pairs at {len(bad)} index(es)")
            for b in bad[:16]:
                L.append(f"  pair {b['index']}: pair target {esc_byte(b['pair_target'])}, table {b['table']}")
            if len(bad) > 16:
                L.append(f"  ... and {len(bad) - 16} more")
        L.append("prompts")
        for p in r["prompts"]:
            if p["empty"]:
                what = "empty prompt"
            elif p["ok"]:
                what = f"last byte {p['text']}"
            else:
                what = "INVALID (neither a byte nor 0xffffffff)"
            L.append(f"  {p['index']}  word {p['hex']}  {what}")
    return L + _render_problems(r)


# --------------------------------------------------------------------------- #
# Predictions
# --------------------------------------------------------------------------- #


def predictions_report(data: bytes | None, read_problems: list, *, path: str, auto: bool = False) -> dict[str, Any]:
    """The ``pred`` report: the schema's parse and :func:`bob.predictions_findings`."""
    from bob.formats.contract import PREDICTION_BYTES
    from bob.formats.predictions import PREDICTIONS, predictions_findings
    from bob.formats.schema import parse

    report = _base("pred", path, "pred", data, auto)
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
                 "text": esc_byte(rec.token) if rec.validity == 1 and rec.token < 256 else None,
                 "ok": i not in bad}
                for i, rec in enumerate(parsed.records)
            ]
    report["hex"] = data.hex() if data is not None and len(data) <= 64 else None
    report["records"] = records
    return _finish(report, problems, "OK: valid predictions (3 records)", "a reader refuses these predictions")


def _render_predictions(r: dict[str, Any]) -> list[str]:
    L = [f"{PROG} pred: {r['file']}"]
    if r["size"] is not None:
        L.append(f"  file  {r['size']} bytes" + (f", sha256 {r['sha256']}" if r["sha256"] else ""))
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
    return L + _render_problems(r)


# --------------------------------------------------------------------------- #
# diff
# --------------------------------------------------------------------------- #


def ordered_keys(values) -> Any:
    """float32 values → int64 keys on a monotonic integer line (for ULP distances).

    The bit pattern is sign-magnitude; negative values are mapped to
    ``-(bits & 0x7fffffff)`` so that consecutive floats are consecutive
    integers and ``-0.0`` and ``+0.0`` both map to 0.
    """
    import numpy as np

    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.int64)
    return np.where(bits & 0x80000000, -(bits & 0x7FFFFFFF), bits)


def ulp_distance(a, b) -> Any:
    """|key(a) - key(b)| elementwise (see :func:`ordered_keys`)."""
    import numpy as np

    return np.abs(ordered_keys(a) - ordered_keys(b))


def _where(index: int) -> dict[str, Any]:
    c, n = divmod(int(index), 256)
    return {"index": int(index), "context": c, "next": n, "context_text": esc_byte(c), "next_text": esc_byte(n)}


def plane_diff(a, b) -> dict[str, Any]:
    """Two planes compared value by value on their bit patterns."""
    import numpy as np

    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    differ = a.view(np.uint32) != b.view(np.uint32)
    idx = np.flatnonzero(differ)
    out: dict[str, Any] = {"differing": int(idx.size), "first": None, "max_abs_diff": None, "max_ulp": None}
    if not idx.size:
        return out
    k = int(idx[0])
    ulp = ulp_distance(a, b)
    notnan = ~(np.isnan(a) | np.isnan(b))
    first = _where(k)
    first.update(
        a=_f32(a[k]), b=_f32(b[k]),
        a_hex=f"{int(a.view(np.uint32)[k]):08x}", b_hex=f"{int(b.view(np.uint32)[k]):08x}",
        abs_diff=_number(abs(float(a[k]) - float(b[k]))) if notnan[k] else None,
        ulp=int(ulp[k]) if notnan[k] else None,
    )
    out["first"] = first
    both = np.isfinite(a) & np.isfinite(b)
    absd = np.where(both, np.abs(a.astype(np.float64) - b.astype(np.float64)), -1.0)
    if (absd > 0).any():
        j = int(np.argmax(absd))
        out["max_abs_diff"] = {"value": float(absd[j]), **_where(j), "a": _f32(a[j]), "b": _f32(b[j])}
    u = np.where(notnan, ulp, -1)
    if (u > 0).any():
        j = int(np.argmax(u))
        out["max_ulp"] = {"value": int(u[j]), **_where(j), "a": _f32(a[j]), "b": _f32(b[j])}
    return out


def _header_values(ex) -> dict[str, Any]:
    """Every header field of an examined checkpoint, by its schema name
    (``chunk_table[1].digest``), from the schema's layout of this file."""
    values: dict[str, Any] = {}
    for row in ex.header_rows():
        if row.field.endswith(".length") and row.field.split(".")[0] in ("state", "learner", "data", "seed"):
            continue
        node: Any = ex.header
        for part in row.field.split("."):
            m = re.fullmatch(r"(\w+)\[(\d+)\]", part)
            node = node[m.group(1)][int(m.group(2))] if m else node[part]
        values[row.field] = node
    if ex.header_digest is not None:
        values["header_digest"] = ex.header_digest
    return values


def _diff_side(path: str) -> tuple[dict[str, Any], Any, Any]:
    from bob.formats.contract import MAX_CHECKPOINT_BYTES
    from bob.formats.envelope import ENVELOPE_MAGIC, examine

    data, problems = _read(path, MAX_CHECKPOINT_BYTES, ENVELOPE_MAGIC, "a checkpoint (bob-envelope)")
    ex = examine(data, for_resume=True) if data is not None else None
    if ex is not None:
        problems = problems + ex.findings
    planes = None
    if ex is not None and ex.planes is not None:
        planes = ex.planes
    elif ex is not None and ex.fresh:
        planes, _ = _fresh_planes()
    side = {
        "file": esc_path(path),
        "size": len(data) if data is not None else _file_size(path),
        "sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
        "fresh": bool(ex is not None and ex.fresh),
        "step": ex.header.step if ex is not None and ex.header is not None else None,
        "problems": [_problem(p) for p in problems],
    }
    header = _header_values(ex) if ex is not None and ex.header is not None else None
    return side, (data, header), planes


def diff_report(path_a: str, path_b: str) -> dict[str, Any]:
    """The ``diff`` report: bytes, header fields and planes of two checkpoints."""
    from bob.errors import show_value
    from bob.formats.contract import PLANE_NAMES

    side_a, (data_a, head_a), planes_a = _diff_side(path_a)
    side_b, (data_b, head_b), planes_b = _diff_side(path_b)
    report: dict[str, Any] = {"command": "diff", "a": side_a, "b": side_b}
    identical = data_a is not None and data_a == data_b
    report["identical"] = identical
    first_offset = None
    if data_a is not None and data_b is not None and not identical:
        import numpy as np

        n = min(len(data_a), len(data_b))
        where = np.flatnonzero(np.frombuffer(data_a, np.uint8, n) != np.frombuffer(data_b, np.uint8, n))
        first_offset = int(where[0]) if where.size else n  # else: one file is a prefix of the other
    report["first_differing_offset"] = first_offset

    if head_a is not None and head_b is not None:
        diffs = []
        for name in list(head_a) + [k for k in head_b if k not in head_a]:
            va, vb = head_a.get(name), head_b.get(name)
            if va == vb:
                continue
            entry: dict[str, Any] = {"field": name}
            for key, v in (("a", va), ("b", vb)):
                if v is None:
                    entry[key] = None
                elif isinstance(v, (bytes, bytearray)):
                    entry[key] = show_value(v, name.split("[")[0].split(".")[0] if "digest" not in name else name)
                else:
                    entry[key] = v
            diffs.append(entry)
        report["header"] = {"compared": True, "differences": diffs}
    else:
        report["header"] = {"compared": False, "differences": None}

    if planes_a is not None and planes_b is not None:
        report["planes"] = {name: plane_diff(planes_a[i], planes_b[i]) for i, name in enumerate(PLANE_NAMES)}
    else:
        report["planes"] = None

    problems = bool(side_a["problems"] or side_b["problems"])
    report["ok"] = not problems
    if identical:
        verdict = "identical: the two files are byte for byte the same"
    else:
        parts = []
        if report["planes"] is not None:
            moved = [f"{n} differs in {d['differing']} value{'s' if d['differing'] != 1 else ''}"
                     for n, d in report["planes"].items() if d["differing"]]
            parts.append("; ".join(moved) if moved else "the planes are identical")
        else:
            parts.append("the planes could not be compared")
        if report["header"]["compared"]:
            nd = len(report["header"]["differences"])
            parts.append(f"{nd} header field{'s' if nd != 1 else ''} differ" + ("s" if nd == 1 else ""))
        verdict = "different: " + "; ".join(parts)
    if problems:
        verdict += " (and a file has problems, listed above)"
    report["verdict"] = verdict
    return report


def _render_diff(r: dict[str, Any]) -> list[str]:
    L = [f"{PROG} diff"]
    for key in ("a", "b"):
        s = r[key]
        desc = "zero bytes (fresh)" if s["fresh"] else (f"step {s['step']}" if s["step"] is not None else "unreadable header")
        L.append(f"  {key.upper()}  {s['file']}: {s['size']} bytes, {desc}"
                 + (f", sha256 {s['sha256']}" if s["sha256"] else ""))
    L.append("identical" if r["identical"] else
             "not identical" + (f"; first differing byte at offset {r['first_differing_offset']}"
                                if r["first_differing_offset"] is not None else ""))
    h = r["header"]
    if not h["compared"]:
        why = "a zero-byte checkpoint has no header" if r["a"]["fresh"] or r["b"]["fresh"] else \
            "a file has no readable header"
        L.append(f"header: not compared ({why})")
    elif not h["differences"]:
        L.append("header: identical")
    else:
        L.append(f"header: {len(h['differences'])} field(s) differ")
        width = max(len(d["field"]) for d in h["differences"])
        for d in h["differences"]:
            L.append(f"  {d['field']:<{width}}  A {d['a']}")
            L.append(f"  {'':<{width}}  B {d['b']}")
    if r["planes"] is None:
        L.append("planes: not compared (a file's planes could not be read)")
    else:
        L.append("planes")
        for name, d in r["planes"].items():
            if not d["differing"]:
                L.append(f"  {name}: identical")
                continue
            f = d["first"]
            L.append(f"  {name}: {d['differing']} value(s) differ")
            L.append(f"     first at index {f['index']} = (context {f['context_text']}, next {f['next_text']}): "
                     f"A {_g(f['a'], 9)} (0x{f['a_hex']}), B {_g(f['b'], 9)} (0x{f['b_hex']})"
                     + (f", {f['ulp']} ulp" if f["ulp"] is not None else ""))
            if d["max_abs_diff"] is not None:
                m = d["max_abs_diff"]
                L.append(f"     largest |A-B| {_g(m['value'], 9)} at index {m['index']} "
                         f"= (context {m['context_text']}, next {m['next_text']})")
            if d["max_ulp"] is not None:
                m = d["max_ulp"]
                L.append(f"     largest ULP distance {m['value']} at index {m['index']} "
                         f"= (context {m['context_text']}, next {m['next_text']})")
    for key in ("a", "b"):
        if r[key]["problems"]:
            L.append(f"problems in {key.upper()} ({len(r[key]['problems'])})")
            for i, p in enumerate(r[key]["problems"], 1):
                L.append(f"  {i}. {p['text']}")
    L.append(f"verdict: {r['verdict']}")
    return L


# --------------------------------------------------------------------------- #
# schema
# --------------------------------------------------------------------------- #

SCHEMA_KINDS = {"input": "input", "envelope": "envelope", "pred": "predictions"}
SCHEMA_ALIASES = {"ckpt": "envelope", "checkpoint": "envelope", "predictions": "pred"}
FORMAT_NAMES = {"input": "bob-input", "envelope": "bob-envelope", "pred": "bob-predictions"}
FORMAT_VERSIONS = {"input": 1, "envelope": 1, "pred": None}


def schema_report(kinds: list[str]) -> dict[str, Any]:
    """Layout tables printed from the construct schemas (:func:`bob.formats.docs.layout_rows`)."""
    from bob.formats.docs import layout_rows, sample

    formats = []
    for kind in kinds:
        rows = layout_rows(SCHEMA_KINDS[kind])
        formats.append({
            "kind": kind,
            "format": FORMAT_NAMES[kind],
            "version": FORMAT_VERSIONS[kind],
            "size": len(sample(SCHEMA_KINDS[kind])),
            "fields": [{"offset": r.offset, "size": r.size, "field": r.field, "meaning": r.meaning} for r in rows],
        })
    return {"command": "schema", "formats": formats, "ok": True}


def _render_schema(r: dict[str, Any]) -> list[str]:
    L: list[str] = []
    for f in r["formats"]:
        if L:
            L.append("")
        note = " (offsets of the canonical 448-byte header)" if f["kind"] == "envelope" else ""
        version = f" v{f['version']}" if f["version"] is not None else " (no magic, no version)"
        L.append(f"{f['format']}{version}: {f['size']} bytes{note}")
        w = max(len(x["field"]) for x in f["fields"])
        L.append(f"  {'offset':>7} {'size':>7}  {'field':<{w}}  meaning")
        for x in f["fields"]:
            L.append(f"  {x['offset']:>7} {x['size']:>7}  {x['field']:<{w}}  {x['meaning']}")
    return L


# --------------------------------------------------------------------------- #
# The commands
# --------------------------------------------------------------------------- #


def _rows_bytes(args: argparse.Namespace) -> bytes:
    out = bytearray()
    if getattr(args, "rows", None):
        out += os.fsencode(args.rows)
    if getattr(args, "rows_hex", None):
        text = re.sub(r"0x|[\s,:]", "", args.rows_hex, flags=re.IGNORECASE)
        try:
            out += bytes.fromhex(text)
        except ValueError:
            raise Refused(f"--rows-hex: {esc(os.fsencode(args.rows_hex))!s} is not hex (pairs of 0-9a-f)") from None
    seen: list[int] = []
    for b in out:
        if b not in seen:
            seen.append(b)
    return bytes(seen)


def cmd_ckpt(args: argparse.Namespace, *, auto: bool = False) -> tuple[dict[str, Any], list[str], int]:
    """``bob-inspect ckpt FILE [--rows BYTES] [--rows-hex HEX] [--heatmap OUT]``."""
    from bob.formats.contract import MAX_CHECKPOINT_BYTES
    from bob.formats.envelope import ENVELOPE_MAGIC

    if getattr(args, "heatmap", None):
        _require_matplotlib()
    rows = _rows_bytes(args)
    data, problems = _read(args.file, MAX_CHECKPOINT_BYTES, ENVELOPE_MAGIC, "a checkpoint (bob-envelope)")
    report, p_plane = checkpoint_report(data, problems, path=args.file, auto=auto, rows=rows)
    report["rows_requested"] = list(rows) if rows else None
    if getattr(args, "heatmap", None) and p_plane is None:
        # the file has problems (they are reported); there is nothing to draw
        report["note"] = "no heatmap: the P plane could not be read"
    elif getattr(args, "heatmap", None):
        inv = report["invocations"]
        title = (f"{esc_path(os.path.basename(args.file))}: P at step {report['step']} "
                 f"({inv} invocation{'s' if inv != 1 else ''})")
        report["heatmap"] = draw_heatmap(p_plane, args.heatmap, title)
    return report, _render_checkpoint(report), EXIT_OK if report["ok"] else EXIT_PROBLEMS


def cmd_input(args: argparse.Namespace, *, auto: bool = False) -> tuple[dict[str, Any], list[str], int]:
    """``bob-inspect input FILE``."""
    from bob.formats.contract import RECORD_BYTES
    from bob.formats.input_record import INPUT_MAGIC

    data, problems = _read(args.file, RECORD_BYTES, INPUT_MAGIC, "an input record (bob-input)")
    report = input_report(data, problems, path=args.file, auto=auto)
    return report, _render_input(report), EXIT_OK if report["ok"] else EXIT_PROBLEMS


def cmd_pred(args: argparse.Namespace, *, auto: bool = False) -> tuple[dict[str, Any], list[str], int]:
    """``bob-inspect pred FILE``."""
    from bob.formats.contract import MAX_CHECKPOINT_BYTES

    # read up to a checkpoint's size so predictions_findings can say what a
    # longer file is ("this file starts like a bob input record")
    data, problems = _read(args.file, MAX_CHECKPOINT_BYTES)
    report = predictions_report(data, problems, path=args.file, auto=auto)
    return report, _render_predictions(report), EXIT_OK if report["ok"] else EXIT_PROBLEMS


def cmd_diff(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], int]:
    """``bob-inspect diff A B``."""
    report = diff_report(args.a, args.b)
    return report, _render_diff(report), EXIT_OK if report["ok"] else EXIT_PROBLEMS


def cmd_schema(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], int]:
    """``bob-inspect schema [input|envelope|pred]`` (all three without a kind)."""
    kinds = [args.kind] if args.kind else list(SCHEMA_KINDS)
    report = schema_report(kinds)
    return report, _render_schema(report), EXIT_OK


def detect_kind(path: str) -> str:
    """``ckpt``, ``input`` or ``pred`` from a file's first 8 bytes and size.

    The magic decides first (a valid predictions file can never start with a
    bob magic: its validity words would be ASCII); then a 24-byte file is
    predictions and zero bytes are a fresh run's checkpoint.
    """
    from bob.formats.contract import PREDICTION_BYTES
    from bob.formats.envelope import ENVELOPE_MAGIC
    from bob.formats.input_record import INPUT_MAGIC

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise Refused(f"{esc_path(path)}: no such file") from None
        raise Refused(f"{esc_path(path)}: {_os_reason(exc)}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise Refused(f"{esc_path(path)}: is a directory")
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{esc_path(path)}: not a regular file; name its kind (ckpt, input or pred)")
        head = os.read(fd, 8)
        size = st.st_size
    except OSError as exc:
        raise Refused(f"{esc_path(path)}: {_os_reason(exc)}") from None
    finally:
        os.close(fd)
    if head == ENVELOPE_MAGIC or size == 0:
        return "ckpt"
    if head == INPUT_MAGIC:
        return "input"
    if size == PREDICTION_BYTES:
        return "pred"
    raise Refused(f"{esc_path(path)}: not a bob file ({size} bytes starting \"{esc(head)}\"; "
                  "a checkpoint starts \"BOB-CKPT\", an input record \"BOB-INPT\", predictions are 24 bytes)")


def cmd_auto(args: argparse.Namespace) -> tuple[dict[str, Any], list[str], int]:
    """``bob-inspect FILE``: the kind detected by :func:`detect_kind`."""
    kind = detect_kind(args.file)
    if kind != "ckpt" and (args.rows or args.rows_hex or args.heatmap):
        raise Refused(f"{esc_path(args.file)} is not a checkpoint (it is {'an input record' if kind == 'input' else 'predictions'}); "
                      "--rows, --rows-hex and --heatmap apply to checkpoints")
    return {"ckpt": cmd_ckpt, "input": cmd_input, "pred": cmd_pred}[kind](args, auto=True)


# --------------------------------------------------------------------------- #
# Command line
# --------------------------------------------------------------------------- #


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON object (stable keys) instead of text")
    p.add_argument("--debug", action="store_true", help="show a traceback for unexpected errors")


def _add_ckpt_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", metavar="BYTES",
                   help="context bytes given as text (e.g. abc): show each row's top-5 next bytes")
    p.add_argument("--rows-hex", metavar="HEX", help="context bytes as hex (e.g. 61,62 or 6162)")
    p.add_argument("--heatmap", metavar="OUT.png",
                   help=f"draw the 256 x 256 P table (needs matplotlib: {PLOT_HINT})")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show bob's files (checkpoints, input records, predictions) whole and readably, "
        "from the format schemas. `bob-inspect FILE` detects the kind from the magic.",
        epilog="exit codes: 0 clean, 2 a file has problems / is refused / cannot be read (or a usage error), "
        "1 unexpected. See docs/bob-inspect.md.",
    )
    sub = parser.add_subparsers(dest="command", metavar="{ckpt,input,pred,diff,schema} | FILE")
    p = sub.add_parser("ckpt", help="a checkpoint: header, contract, chunk table, plane statistics, problems")
    p.add_argument("file", metavar="FILE")
    _add_ckpt_options(p)
    _add_common(p)
    p = sub.add_parser("input", help="an input record: pairs, context counts, targets table, prompts")
    p.add_argument("file", metavar="FILE")
    _add_common(p)
    p = sub.add_parser("pred", help="a predictions file: the three records")
    p.add_argument("file", metavar="FILE")
    _add_common(p)
    p = sub.add_parser("diff", help="two checkpoints compared: header fields and planes")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    _add_common(p)
    p = sub.add_parser("schema", help="layout tables from the construct schemas")
    p.add_argument("kind", nargs="?", metavar="{input,envelope,pred}",
                   type=lambda s: SCHEMA_ALIASES.get(s, s))
    _add_common(p)
    p = sub.add_parser("auto")  # `bob-inspect FILE`: not listed in the help
    p.add_argument("file", metavar="FILE")
    _add_ckpt_options(p)
    _add_common(p)
    return parser


_VALUE_OPTIONS = {"--rows", "--rows-hex", "--heatmap"}


def _route(argv: list[str]) -> list[str]:
    """Put the command first; with no command (``bob-inspect [--json] FILE``) it is ``auto``."""
    if not argv or argv[0] in ("-h", "--help") or argv[0] in COMMANDS:
        return argv
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            break
        if tok in _VALUE_OPTIONS:
            i += 2
            continue
        if tok.startswith("-") and tok != "-":
            if tok in ("-h", "--help"):
                return argv
            i += 1
            continue
        if tok in COMMANDS:
            return [tok] + argv[:i] + argv[i + 1:]
        break
    return ["auto"] + argv


def main(argv: list[str] | None = None) -> int:
    """The ``bob-inspect`` entry point; returns the exit code."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[attr-defined]
        except (AttributeError, ValueError):  # pragma: no cover - a replaced stream
            pass
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(_route(argv))
    if args.command is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: give a command or a FILE", file=sys.stderr)
        return EXIT_PROBLEMS
    if args.command == "schema" and args.kind is not None and args.kind not in SCHEMA_KINDS:
        parser.error(f"schema: unknown kind {esc(os.fsencode(args.kind))!s}; one of input, envelope, pred")
    command = "ckpt" if args.command == "auto" else args.command
    handler = {"ckpt": cmd_ckpt, "input": cmd_input, "pred": cmd_pred, "diff": cmd_diff,
               "schema": cmd_schema, "auto": cmd_auto}[args.command]
    try:
        report, lines, code = handler(args)
    except Refused as exc:
        return _fail(args, command, str(exc), EXIT_PROBLEMS)
    except KeyboardInterrupt:
        return _fail(args, command, "interrupted", 130)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except Exception as exc:  # noqa: BLE001 - the promise: one line, exit 1, a traceback only under --debug
        if args.debug:
            import traceback

            traceback.print_exc()
        return _fail(args, command, f"unexpected error: {type(exc).__name__}: {exc}", EXIT_UNEXPECTED)
    try:
        if args.json:
            report.pop("rows_requested", None)
            print(json.dumps(report, allow_nan=False))
        else:
            for line in lines:
                print(_guard(line))
        sys.stdout.flush()
    except BrokenPipeError:
        return _quiet_broken_pipe()
    return code


def _fail(args: argparse.Namespace, command: str, message: str, code: int) -> int:
    message = _guard(message)
    if getattr(args, "json", False):
        files = [getattr(args, k) for k in ("file", "a", "b") if getattr(args, k, None) is not None]
        print(json.dumps({"command": command, "files": [esc_path(f) for f in files], "ok": False,
                          "error": message, "exit": code}))
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


def _quiet_broken_pipe() -> int:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:  # pragma: no cover
        pass
    return EXIT_UNEXPECTED


if __name__ == "__main__":
    sys.exit(main())
