"""What bob computes about checkpoints for people: the probabilities of a
row and the comparison of two checkpoints. Library functions, with the
commands only formatting them (``bob-inspect checkpoint --rows`` shows
:func:`probabilities`; ``bob-inspect diff --json`` prints :func:`diff`).

::

    bob.probabilities(checkpoint, context) -> float64 array of VOCABULARY  # softmax of P's row
    bob.diff(a, b) -> dict   # a, b: Checkpoint, a checkpoint file's bytes, or a path
    bob.diff(trace_a, trace_b, checkpoints=(ca, cb)) -> dict   # where two runs part (bob.divergence)

The softmax here is presentation (float64, rounded once from decimal arithmetic), never
the training math: §6.3's pinned f32 softmax lives in the native core.
"""

from __future__ import annotations

import hashlib
import os
import re
from typing import TYPE_CHECKING, Any

import numpy as np

from bob.environment import in_default_environment
from bob.errors import BadValue, FormatError, StateRefused, buffer_bytes, integer_value, show_value, shown_kind
from bob.formats.checkpoint import examine
from bob.formats.constants import MAX_CHECKPOINT_BYTES, PAYLOAD_BYTES, PLANE_NAMES, VOCABULARY
from bob.formats.layout import CONTRACT_STRINGS
from bob.inspect.common import file_size, plural
from bob.text import exact_text, show_byte, show_path
from bob.ulp import beyond, ordered_keys, plane_diff, tolerance, ulp_distance

if TYPE_CHECKING:  # pragma: no cover - numpy.typing costs bob-inspect a millisecond
    import numpy.typing as npt

    from bob.formats.checkpoint import Checkpoint
    from bob.formats.trace import Trace

SOFTMAX_DIGITS = 25  # decimal digits, past float64's 17; decimal is software: the same everywhere

# (plane_diff, beyond, ordered_keys and ulp_distance live in bob.ulp; importable here too)
__all__ = ["probabilities", "softmax_rows", "fresh_planes", "diff", "compare", "Side",
           "plane_diff", "beyond", "ordered_keys", "ulp_distance", "header_values"]


# --------------------------------------------------------------------------- #
# Probabilities
# --------------------------------------------------------------------------- #


@in_default_environment
def softmax_rows(rows: Any) -> list[Any]:
    """Row-wise softmax for display: per row a float64 array, or None for a row with
    non-finite values. Computed in decimal (:data:`SOFTMAX_DIGITS` digits) and rounded to
    float64 once, so every machine shows the same bytes: NumPy's ``exp`` and ``sum``
    follow the CPU's vector instructions."""
    import decimal  # lazily: bob-inspect shows a checkpoint without --rows, and decimal costs a millisecond

    # The whole context, never the caller's (decimal's context is the thread's, and anyone's to set:
    # their traps would raise Inexact or Underflow here, their exponent range or rounding change digits).
    context = decimal.Context(prec=SOFTMAX_DIGITS, rounding=decimal.ROUND_HALF_EVEN, Emin=-999999, Emax=999999,
                              capitals=1, clamp=0, flags=[], traps=[])
    out: list[Any] = []
    for row in rows:
        if not np.isfinite(row).all():
            out.append(None)
            continue
        with decimal.localcontext(context):
            x = [decimal.Decimal(v) for v in np.asarray(row, dtype=np.float64).tolist()]
            top = max(x)
            e = [(v - top).exp() for v in x]
            total = sum(e)
            out.append(np.array([float(v / total) for v in e], dtype=np.float64))
    return out


def probabilities(checkpoint: "Checkpoint", context: int) -> npt.NDArray[np.float64]:
    """The next-byte probabilities after ``context`` (a byte, 0 to 255): the
    float64 softmax of P's row ``context``, the numbers ``bob-inspect checkpoint
    --rows`` shows. A row holding a non-finite value has none
    (:class:`~bob.StateRefused` naming P and the first such index)."""
    from bob.formats.checkpoint import Checkpoint

    if not isinstance(checkpoint, Checkpoint):
        raise TypeError(f"checkpoint is a bob.Checkpoint, not {type(checkpoint).__name__}")
    byte = integer_value(context)
    if byte is None or isinstance(context, bool) or not 0 <= byte < VOCABULARY:
        raise BadValue("context", "a context byte, 0 to 255",
                       actual=shown_kind(context) if byte is None or isinstance(context, bool) else byte)
    with checkpoint._loans():  # (no train of P meanwhile: one state's row)
        row = checkpoint.p_table[byte].copy()
    prob: npt.NDArray[np.float64] | None = softmax_rows([row])[0]
    if prob is None:
        k = int(np.flatnonzero(~np.isfinite(row))[0])
        raise StateRefused("P", f"row {byte} (context {show_byte(byte)}) holds a non-finite value; "
                           "it has no probabilities", actual=float(row[k]), index=byte * VOCABULARY + k)
    return prob


def fresh_planes() -> tuple[Any, str | None]:
    """The fresh state's planes, which only the native core makes
    (``Checkpoint.fresh``), or ``(None, note)`` when it cannot be loaded."""
    try:
        from bob.formats.checkpoint import Checkpoint

        c = Checkpoint.fresh()
    except ImportError as exc:
        return None, f"the fresh state's planes need the native core ({type(exc).__name__})"
    return np.stack([c.p, c.m, c.v]), None


# --------------------------------------------------------------------------- #
# Two checkpoints compared
# --------------------------------------------------------------------------- #

_INDEXED = re.compile(r"(\w+)\[(\d+)\]")


def header_values(ex) -> dict[str, Any]:
    """Every header field of an examined checkpoint, by its schema name
    (``chunk_table[1].digest``), from the schema's layout of this file
    (a contract string's length prefix is left out: the string shows it)."""
    values: dict[str, Any] = {}
    for row in ex.header_rows():
        if row.field.endswith(".length") and row.field.split(".")[0] in CONTRACT_STRINGS:
            continue
        node: Any = ex.header
        for part in row.field.split("."):
            m = _INDEXED.fullmatch(part)
            node = node[m.group(1)][int(m.group(2))] if m else node[part]
        values[row.field] = node
    if ex.header_digest is not None:
        values["header_digest"] = ex.header_digest
    return values


def _shown(name: str, value: Any) -> Any:
    if value is None or not isinstance(value, (bytes, bytearray)):
        return value
    return show_value(value, name if "digest" in name else name.split("[")[0].split(".")[0])


def _header_differences(head_a: dict[str, Any], head_b: dict[str, Any]) -> list[dict[str, Any]]:
    diffs = []
    for name in list(head_a) + [k for k in head_b if k not in head_a]:
        va, vb = head_a.get(name), head_b.get(name)
        if va != vb:
            diffs.append({"field": name, "a": _shown(name, va), "b": _shown(name, vb)})
    return diffs


def _first_differing_offset(data_a: bytes, data_b: bytes) -> int:
    n = min(len(data_a), len(data_b))
    where = np.flatnonzero(np.frombuffer(data_a, np.uint8, n) != np.frombuffer(data_b, np.uint8, n))
    return int(where[0]) if where.size else n  # else: one file is a prefix of the other


def _equal(report: dict[str, Any], rest_same: bool) -> bool:
    """Identical, or (with a tolerance) the planes within it and the header the
    same but for the digests (which the planes' values determine); ``rest_same``:
    the bytes in neither (the padding, any past the planes) are the same."""
    if report["identical"]:
        return True
    if report["tolerance"] is None or report["planes"] is None or not report["header"]["compared"] or not rest_same:
        return False
    header_same = all("digest" in d["field"] for d in report["header"]["differences"])
    return header_same and all(d["beyond_tolerance"] == 0 for d in report["planes"].values())


def _verdict(report: dict[str, Any]) -> str:
    if report["identical"]:
        verdict = "identical: the two files are byte for byte the same"
    elif report["identical"] is None:
        verdict = "not compared: a file could not be read whole"
    elif report["equal"]:
        t = report["tolerance"]
        within = " or ".join(x for x in (f"{t['ulp']} ulp" if t["ulp"] is not None else "",
                                        f"{exact_text(t['atol'])} absolute" if t["atol"] is not None else "") if x)
        verdict = f"equal within the tolerance: every plane value within {within}; only the digests differ"
    else:
        parts = []
        if report["planes"] is not None:
            moved = [f"{n} differs in {plural(d['differing'], 'value')}"
                     for n, d in report["planes"].items() if d["differing"]]
            parts.append("; ".join(moved) if moved else "the planes are identical")
        else:
            parts.append("the planes could not be compared")
        if report["header"]["compared"]:
            nd = len(report["header"]["differences"])
            parts.append(f"{plural(nd, 'header field')} differ" + ("s" if nd == 1 else "") if nd
                         else "the header fields are equal")  # (a file's size alone differs: its problem says)
        elif report["planes"] is not None:  # a zero-byte checkpoint has none: the same state in other bytes
            parts.append("the headers not compared")
        verdict = "different: " + "; ".join(parts)
    if report["problems_found"]:  # (the text lists them above it, the JSON under "a" and "b")
        verdict += " (and " + " and ".join(f"{side.upper()} has {plural(len(report[side]['problems']), 'problem')}"
                                          for side in "ab" if report[side]["problems"]) + ")"
    return verdict


class Side:
    """One checkpoint to compare: its bytes (None when the file was too large
    to read), the problems found reading it, its name and size."""

    __slots__ = ("file", "data", "problems", "size")

    def __init__(self, file: str | None, data: bytes | None, problems: list[FormatError],
                 size: int | None) -> None:
        self.file, self.data, self.problems, self.size = file, data, problems, size

    @classmethod
    def of(cls, value: "Checkpoint | bytes | str | os.PathLike[str]", name: str) -> "Side":
        """A :class:`~bob.Checkpoint` (its envelope bytes, as written with
        ``for_resume=False``: a diff shows what a reader would refuse), a
        checkpoint file's bytes, or a path (read through bob's bounded reader;
        a missing one is ``FileNotFoundError``); anything else is a TypeError naming ``name``."""
        from bob.formats.checkpoint import Checkpoint
        from bob.formats.files import CHECKPOINT_FILE, read_format_file

        given = value.to_bytes(for_resume=False) if isinstance(value, Checkpoint) else buffer_bytes(value)
        if given is not None:  # (any buffer's bytes: D24)
            return cls(None, given, [], len(given))
        if not isinstance(value, (str, os.PathLike)):
            raise TypeError(f"{name} is a bob.Checkpoint, a Trace, a file's bytes or a path, "
                            f"not {type(value).__name__}")
        try:
            data = read_format_file(value, MAX_CHECKPOINT_BYTES, CHECKPOINT_FILE)
        except FormatError as exc:  # too large to be a checkpoint: a finding, the file unread
            return cls(show_path(value), None, [exc], file_size(os.fspath(value)))
        return cls(show_path(value), data, [], len(data))


def _examined(side: Side) -> tuple[dict[str, Any], dict[str, Any] | None, Any, bytes | None]:
    """The side's report, header fields, planes and the bytes in none of them (None: no header)."""
    data = side.data
    ex = examine(data, for_resume=True) if data is not None else None
    problems = side.problems + (ex.findings if ex is not None else [])
    planes = None
    if ex is not None and ex.planes is not None:
        planes = ex.planes
    elif ex is not None and ex.fresh:
        planes, _ = fresh_planes()
    report = {
        "file": side.file,
        "size": side.size,
        "sha256": hashlib.sha256(data).hexdigest() if data is not None else None,
        "fresh": bool(ex is not None and ex.fresh),
        "step": None if ex is None else ex.step,
        "problems": [p.to_dict() for p in problems],
    }
    header = rest = None
    if ex is not None and ex.header is not None and (lay := ex.layout) is not None and data is not None:
        header, hb = header_values(ex), ex.header.header_bytes
        rest = data[lay.header_length:hb] + data[hb + PAYLOAD_BYTES:]
    return report, header, planes, rest


@in_default_environment
def compare(a: Side, b: Side, *, ulp: int | None = None, atol: float | None = None) -> dict[str, Any]:
    """The comparison of two checkpoints (:func:`diff`, from :class:`Side` s);
    ``equal`` when identical or, given ``ulp`` and/or ``atol``, within that
    tolerance (:func:`beyond`)."""
    side_a, head_a, planes_a, rest_a = _examined(a)
    side_b, head_b, planes_b, rest_b = _examined(b)
    data_a, data_b = a.data, b.data
    report: dict[str, Any] = {"command": "diff", "a": side_a, "b": side_b}
    both = (data_a, data_b) if data_a is not None and data_b is not None else None  # (None: a file not read whole)
    sizes_differ = None not in (a.size, b.size) and a.size != b.size  # (bytes not read, yet not the same)
    report["identical"] = identical = False if sizes_differ else None if both is None else both[0] == both[1]
    report["first_differing_offset"] = _first_differing_offset(*both) if both is not None and not identical else None
    if head_a is not None and head_b is not None:
        report["header"] = {"compared": True, "differences": _header_differences(head_a, head_b)}
    else:
        report["header"] = {"compared": False, "differences": None}
    report["planes"] = (
        {name: plane_diff(planes_a[i], planes_b[i], ulp=ulp, atol=atol) for i, name in enumerate(PLANE_NAMES)}
        if planes_a is not None and planes_b is not None else None
    )
    report["tolerance"] = None if ulp is None and atol is None else {"ulp": ulp, "atol": atol}
    report["equal"] = _equal(report, rest_a == rest_b)
    report["problems_found"] = bool(side_a["problems"] or side_b["problems"])
    report["ok"] = not report["problems_found"]
    report["verdict"] = _verdict(report)
    return report


def diff(a: "Checkpoint | Trace | bytes | str | os.PathLike[str]",
         b: "Checkpoint | Trace | bytes | str | os.PathLike[str]", *, ulp: int | None = None,
         atol: float | None = None, checkpoints: "tuple[Any, Any] | None" = None) -> dict[str, Any]:
    """Two checkpoints compared byte by byte, field by field (by the
    schema's names) and value by value (on the float32 bit patterns, with
    ULP distances): the JSON-ready structure ``bob-inspect diff --json``
    prints, documented in docs/bob-inspect.md. ``a`` and ``b`` are each a
    :class:`~bob.Checkpoint`, a checkpoint file's bytes or a path (``file``
    is then the path, escaped; null for the others). Each side's problems
    (what a reader finds, for resuming) are listed, never raised. ``ulp`` /
    ``atol``: plane values that close count as ``equal`` (as ``--ulp``/``--atol``).

    Two traces (:class:`~bob.Trace` objects, their bytes or paths) are compared
    as ``bob-inspect trace --json`` compares them (:func:`bob.divergence.compare_traces`):
    the first update whose digests differ and, with ``checkpoints`` (one
    state of each run), the first plane and index that differ."""
    from bob.divergence import checkpoint_pair, compare_traces, is_trace, trace_of

    ulp, atol = tolerance(ulp, atol)
    if is_trace(a) or is_trace(b):
        if ulp is not None or atol is not None:  # (a trace's digests are equal or not)
            raise TypeError("ulp= and atol= go with two checkpoints; a and b are traces")
        def named(x: Any) -> "str | None":  # a path's name, escaped, as the command's report has it
            return show_path(x) if isinstance(x, (str, os.PathLike)) else None

        pair = None if checkpoints is None else checkpoint_pair(checkpoints)  # (a generator: read once)
        return compare_traces(trace_of(a, "a"), trace_of(b, "b"), checkpoints=pair, files=(named(a), named(b)),
                              checkpoint_files=(None, None) if pair is None else (named(pair[0]), named(pair[1])))
    if checkpoints is not None:
        raise TypeError("checkpoints= goes with two traces; a and b are checkpoints")
    # (no Trace here: is_trace took them)
    return compare(Side.of(a, "a"), Side.of(b, "b"), ulp=ulp, atol=atol)  # type: ignore[arg-type]
