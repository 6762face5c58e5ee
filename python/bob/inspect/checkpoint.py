"""The ``checkpoint`` report: every field from :func:`bob.formats.checkpoint.examine` (nothing here parses bytes),
a row's probabilities from :mod:`bob.analysis`; and the ``diff`` report, two checkpoints compared by
:func:`bob.analysis.compare` (here only their reading, refused naming the side)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bob.analysis import Side, compare, fresh_planes, softmax_rows
from bob.environment import in_default_environment
from bob.errors import FormatError, show_value
from bob.formats.checkpoint import Examination, examine, finite_range
from bob.formats.constants import CHECKPOINT_MAGIC, LEARNER_NAMES, UPDATES_PER_INVOCATION, VOCABULARY, learner_floats
from bob.formats.contract import CONTRACT_FIELDS, PLANE_NAMES, V1
from bob.formats.layout import F32
from bob.inspect.common import TOP_K, add_note, begin, file_size, finish, invocations_text, magic_report, \
    not_replaced, read_checkpoint
from bob.invocation import unadvanceable
from bob.text import escape_bytes, f32_json, show_byte, show_path


@in_default_environment
def plane_stats(values) -> dict[str, Any]:
    """min, max, mean, L2 norm (over the finite values, in float64, summed exactly by
    ``math.fsum``: the same on every machine, where NumPy's ``dot`` follows the BLAS) and
    counts. ``negative`` counts values < 0 (``-inf`` included, ``-0.0`` not)."""
    a = np.asarray(values, dtype=np.float32)
    vals = a[np.isfinite(a)].astype(np.float64)
    summed = vals[vals != 0]  # zeros add nothing, and M and V are mostly zeros
    has = vals.size > 0
    low, high = map(f32_json, finite_range(a) or (0.0, 0.0))  # (None when it has no finite value)
    nan = int(np.isnan(a).sum())
    non_finite = int(a.size - vals.size)
    return {"count": int(a.size), "non_finite": non_finite, "nan": nan, "inf": non_finite - nan,
            "negative": int((a < 0).sum()), "zeros": int((a == 0).sum()),
            "min": low if has else None, "max": high if has else None,
            "mean": math.fsum(summed.tolist()) / vals.size if has else None,
            "l2_norm": math.sqrt(math.fsum((summed * summed).tolist())) if has else None}


def contract_field(name: str, value: Any, expected: Any, mismatch: bool) -> dict[str, Any]:
    """One §2 contract field: its value, bob v1's, both readably; the learner's floats decoded."""
    entry: dict[str, Any] = {"matches": not mismatch, "value": value, "expected": expected,
                             "text": show_value(value, name), "expected_text": show_value(expected, name)}
    if isinstance(value, (bytes, bytearray)):
        entry.update(value=escape_bytes(value), expected=escape_bytes(expected), hex=bytes(value).hex(),
                     length=len(value))
    if name == "learner":
        got, want = learner_floats(value), learner_floats(expected)
        assert want is not None  # the expected value is bob v1's learner
        entry.update(
            hyperparameters=None if got is None else {k: f32_json(x) for k, x in zip(LEARNER_NAMES, got)},
            expected_hyperparameters={k: f32_json(x) for k, x in zip(LEARNER_NAMES, want)},
            hyperparameter_mismatches=None if got is None else [
                k for k, a, b in zip(LEARNER_NAMES, got, want) if F32.pack(a) != F32.pack(b)])
    return entry


def p_table(p_plane) -> np.ndarray:
    """The P plane as its VOCABULARY × VOCABULARY table (row: context byte, column: next byte)."""
    return np.asarray(p_plane, dtype=np.float32).reshape(VOCABULARY, VOCABULARY)


@in_default_environment
def rows_report(p_plane, contexts: bytes) -> list[dict[str, Any]]:
    """For each context byte: the top-5 next bytes of its P row with their probabilities
    (a float64 softmax of the row; ties towards the lower byte, as §4's argmax)."""
    rows = p_table(p_plane)[list(contexts)]
    return [{"context": c, "text": show_byte(c), "finite": prob is not None,  # prob: None for a non-finite value
             "non_finite": int((~np.isfinite(row)).sum()), "top": None if prob is None else [
                 {"next": int(j), "text": show_byte(int(j)), "probability": float(prob[j]), "logit": f32_json(row[j])}
                 for j in np.argsort(-row.astype(np.float64), kind="stable")[:TOP_K]]}
            for c, row, prob in zip(contexts, rows, softmax_rows(rows))]


def _header_report(ex: Examination, failed: set[tuple[str, int | None]]) -> dict[str, Any]:
    """The contract, the header's digest and the chunk table of a header that parsed."""
    h, computed, digests = ex.header, ex.computed_header_digest, ex.chunk_digests or ()
    assert h is not None and ex.contract is not None and ex.header_digest is not None
    return {
        "contract": {"matches_v1": ex.contract.is_v1,
                     "fields": {name: contract_field(name, h[name], getattr(V1, name), (name, None) in failed)
                                for name in CONTRACT_FIELDS}},
        "header_digest": {"stored": ex.header_digest.hex(),
                          "computed": computed.hex() if computed is not None else None,
                          "ok": None if computed is None else ("header_digest", None) not in failed},
        "chunk_count": h.chunk_count,
        "chunks": [{
            "index": i, "plane": PLANE_NAMES[i] if i < len(PLANE_NAMES) else None, "tag": escape_bytes(entry.tag),
            "offset": entry.offset, "length": entry.length, "sha256": entry.digest.hex(),
            "computed_sha256": digests[i].hex() if i < len(digests) else None,
            **{f"{key}_ok": (f"chunk_table.{key}", i) not in failed for key in ("tag", "offset", "length")},
            "digest_ok": None if i >= len(digests) else ("chunk_table.digest", i) not in failed,
        } for i, entry in enumerate(h.chunk_table)],
    }


def checkpoint_report(data: bytes | None, read_problems: list[FormatError], *, path: str, auto: bool = False,
                      rows: bytes = b"") -> tuple[dict[str, Any], Any]:
    """The ``checkpoint`` report (a JSON-ready dict) and the P plane (or None); ``data`` is None when the file
    was too large to read."""
    report, problems, ex = begin("checkpoint", path, data, read_problems, auto, examine)
    fresh = bool(ex is not None and ex.fresh)
    partial = ex.partial_header if ex is not None else None
    known = ex.header if ex is not None and ex.header is not None else dict(partial or ())
    step = ex.step if ex is not None else None
    planes, note = fresh_planes() if fresh else (ex.planes if ex is not None else None, None)
    report.update(
        fresh=fresh, step=step, invocations=None if step is None else step // UPDATES_PER_INVOCATION,
        magic=None if fresh or ex is None else magic_report(ex.magic, CHECKPOINT_MAGIC),
        partial_header=None if partial is None else [
            {"field": name, "value": escape_bytes(v) if isinstance(v, bytes) else v, "text": show_value(v, name)}
            for name, v in partial],
        version=known.get("version"), header_bytes=known.get("header_bytes"),
        header_length=ex.header_end if ex is not None and ex.header is not None else None,
        planes=None if planes is None else {name: plane_stats(planes[i]) for i, name in enumerate(PLANE_NAMES)},
        note=note, rows=rows_report(planes[0], rows) if rows and planes is not None else None, heatmap=None,
        export=None)
    if ex is not None and ex.header is not None:
        report.update(_header_report(ex, {(p.field, p.index) for p in problems}))
    else:
        report.update(dict.fromkeys(("contract", "header_digest", "chunk_count", "chunks")))
    if fresh:  # (bob-run starts fresh from it only where it may replace it, as for any other valid file)
        ok = "OK: zero bytes, a fresh run's checkpoint (step 0, the state bob-seed-v1 makes)" + (
            f"; but {why}" if (why := not_replaced(path)) else "")
    else:  # (a step it can never advance is a valid file that bob-run refuses to run from, whatever the record)
        dead_end = unadvanceable(step) if isinstance(step, int) else None
        why = None if dead_end is not None else not_replaced(path)
        ok = (f"OK: a valid bob v1 checkpoint at step {step} ({invocations_text(step or 0)}); "  # (no step: not used)
              + (dead_end.message if dead_end else f"its state resumes, but {why}" if why else "bob-run can resume it"))
    if fresh and auto:  # (an empty trace, input or predictions file too: bob-inspect FILE cannot tell)
        add_note(report, "every empty file is read as a checkpoint; bob-inspect input|predictions|trace FILE reads "
                 "it as one of those")
    if rows and planes is None:  # (the rows asked for: said, in JSON too, not only a null)
        add_note(report, "--rows: not available (the planes could not be read)")
    finish(report, problems, ok, "bob-run refuses this checkpoint")
    return report, (planes[0] if planes is not None else None)


def _side(path: str, name: str) -> Side:
    data, problems = read_checkpoint(path, name)  # a Refused naming the side for an unreadable path, as trace's
    return Side(show_path(path), data, problems, len(data) if data is not None else file_size(path))


def diff_report(path_a: str, path_b: str, *, ulp: int | None = None, atol: float | None = None) -> dict[str, Any]:
    """The ``diff`` report (a JSON-ready dict): bytes, header fields and planes of
    two checkpoints, and whether they are equal within ``ulp``/``atol``."""
    return compare(_side(path_a, "A"), _side(path_b, "B"), ulp=ulp, atol=atol)
