"""Where two runs part: two traces of one run compared (``bob.diff`` on traces,
``bob-inspect trace``), formats/trace.md.

States resumed whose digests differ part the runs before their first update; else the first entry whose
digests differ is the first update after which the two states are not the same bits; the planes whose digests
differ there are named. Given a checkpoint of each run that is a state of its trace (its step and its planes'
XXH3-128 digests those of the state resumed or of one entry), the two states are compared value
by value (:func:`bob.ulp.plane_diff`) and the first plane and index
that differ are named. A trace of another run, and a checkpoint that is no
state of its trace, are refused (:class:`~bob.errors.BadValue`, naming the field).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from typing import Any, Iterator

from bob.errors import BadValue, FormatError, buffer_bytes, ordered_items, shown_kind
from bob.formats.constants import PLANE_NAMES, TRACE_MAGIC, cell_name
from bob.formats.trace import Trace, load_trace, read_trace_file
from bob.text import json_number
from bob.ulp import plane_diff

__all__ = ["is_trace", "trace_of", "compare_traces", "entry_of", "state_of", "checkpoint_pair"]

def is_trace(value: Any) -> bool:
    """True for a :class:`~bob.Trace`, a trace file's bytes, or the path of a file that starts as a trace does."""
    if isinstance(value, Trace):
        return True
    if (data := buffer_bytes(value)) is not None:
        return data[:len(TRACE_MAGIC)] == TRACE_MAGIC
    if isinstance(value, (str, os.PathLike)):
        from bob.fileio import FileTooLarge, read_bounded

        try:  # the bounded reader's first bytes (regular files only: a FIFO never blocks here)
            head = read_bounded(value, len(TRACE_MAGIC)) or b""
        except FileTooLarge as big:
            head = big.head
        except OSError:
            return False  # the checkpoint reader says what is wrong with the path
        return bytes(head[:len(TRACE_MAGIC)]) == TRACE_MAGIC
    return False


@contextlib.contextmanager
def _refusing(name: str) -> Iterator[None]:
    """A :class:`~bob.FormatError` raised in the block names, in a note, the argument it refuses: of two
    traces or two checkpoints, the message alone cannot say which (``bob.diff(a, b)``)."""
    try:
        yield
    except FormatError as exc:
        exc.add_note(f"(refusing the argument {name})")
        raise


def trace_of(value: Any, name: str = "trace") -> Trace:
    """A :class:`~bob.Trace` from itself, a trace file's bytes or a path (read through the bounded reader);
    anything else a ``TypeError`` naming the argument ``name``."""
    if isinstance(value, Trace):
        return value
    if (data := buffer_bytes(value)) is None and not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} is compared as a trace: a bob.Trace, a trace file's bytes or a path, "
                        f"not {type(value).__name__}")
    with _refusing(name):
        return read_trace_file(value) if data is None else load_trace(data)


def state_of(checkpoint: Any, name: str = "checkpoint") -> "tuple[int, tuple[Any, Any, Any]]":
    """(step, (P, M, V)) of a :class:`~bob.Checkpoint` (checked as built: its fields may have been
    reassigned), its bytes or a path; read for inspection (a diverged state may be one bob would
    not resume)."""
    from bob.formats.checkpoint import Checkpoint, load_checkpoint, read_checkpoint_file

    with _refusing(name):
        if isinstance(checkpoint, Checkpoint):
            c = checkpoint
            checkpoint = Checkpoint(c.step, c.p, c.m, c.v, c.header_bytes, c.contract)  # planes as they are written
        elif isinstance(checkpoint, (str, os.PathLike)):
            checkpoint = read_checkpoint_file(checkpoint, for_resume=False)
        elif (data := buffer_bytes(checkpoint)) is not None:
            checkpoint = load_checkpoint(data, for_resume=False)
        else:
            raise TypeError(f"{name} must be a Checkpoint, its bytes or a path; got {shown_kind(checkpoint)}")
    return checkpoint.step, (checkpoint.p, checkpoint.m, checkpoint.v)


def entry_of(trace: Trace, step: int, planes: "tuple[Any, Any, Any]") -> int:
    """The index of the entry of ``trace`` whose state these are (the step after
    it and each plane's digest; -1: the state it resumed), or a refusal naming what does not match."""
    from bob import core

    index = step - trace.step_before - 1
    if not -1 <= index < len(trace.entries):
        raise BadValue("step", "this checkpoint is no state of its trace: it neither resumes it nor is made by one "
                       "of its updates", expected=f"{trace.step_before} to {trace.step_after}", actual=step)
    where = "resumes" if index < 0 else f"records after the update to step {step}"
    for name, got, want in zip(PLANE_NAMES, core.xxh3_128_each(list(planes)),
                               trace.start if index < 0 else trace.entries[index].digests):
        if got != want:
            raise BadValue(name, f"this checkpoint is no state of its trace: plane {name} is not the one the trace "
                           f"{where}", expected=want.hex(), actual=got.hex())
    return index


def _side(trace: Trace, file: "str | None") -> dict[str, Any]:
    return {"file": file, "sha256": hashlib.sha256(trace.to_bytes()).hexdigest(), "step_before": trace.step_before,
            "step_after": trace.step_after, "losses": [json_number(x) for x in trace.losses]}


def checkpoint_pair(checkpoints: Any) -> "tuple[Any, ...]":
    """``checkpoints`` as a pair, one state of each run (a generator read once); a str, bytes or path is
    none, a ``TypeError``."""
    pair = None if isinstance(checkpoints, (str, bytes, os.PathLike)) else ordered_items(checkpoints)
    if pair is None or len(pair) != 2:
        raise TypeError(f"checkpoints is a pair: one state of each run; got {shown_kind(checkpoints)}")
    return pair


def _states(a: Trace, b: Trace, checkpoints: "tuple[Any, Any]", files: "tuple[Any, Any]") -> dict[str, Any]:
    """The two checkpoints compared, each first held to its trace."""
    pair = checkpoint_pair(checkpoints)
    (step_a, planes_a), (step_b, planes_b) = (state_of(c, f"checkpoints[{i}]") for i, c in enumerate(pair))
    for i, (trace, step, planes) in enumerate(((a, step_a, planes_a), (b, step_b, planes_b))):
        with _refusing(f"checkpoints[{i}]"):
            entry_of(trace, step, planes)
    with _refusing("checkpoints[1]"):  # (the second, as bob-inspect names its --checkpoints CB)
        if step_a != step_b:
            raise BadValue("step", "the two checkpoints are states at different steps; give one of each run at the "
                           "same step", expected=step_a, actual=step_b)
    first = None
    for name, pa, pb in zip(PLANE_NAMES, planes_a, planes_b):
        found = plane_diff(pa, pb)["first"]
        if found is not None:
            first = {"plane": name, **found}
            break
    return {"a": files[0], "b": files[1], "step": step_a, "first": first}


def compare_traces(a: Trace, b: Trace, *, checkpoints: "tuple[Any, Any] | None" = None,
                   files: "tuple[str | None, str | None]" = (None, None),
                   checkpoint_files: "tuple[str | None, str | None]" = (None, None)) -> dict[str, Any]:
    """The comparison of two traces of one run (the report ``bob-inspect trace --json`` prints)."""
    with _refusing("b"):
        index = a.first_divergence(b)  # refuses a trace of another run
    resumed = [n for n, da, db in zip(PLANE_NAMES, a.start, b.start) if da != db]  # (update 0: before the first)
    report: dict[str, Any] = {
        "command": "trace", "a": _side(a, files[0]), "b": _side(b, files[1]),
        "identity": {"contract_sha256": a.contract_sha256.hex(), "input_sha256": a.input_sha256.hex(),
                     "step_before": a.step_before},
        "same": index is None and not resumed, "first_divergence": None, "checkpoints": None,
    }
    if resumed:
        report["first_divergence"] = {"update": 0, "step": a.step_before, "loss_a": None, "loss_b": None,
                                      "planes": resumed}
    elif index is not None:
        ea, eb = a.entries[index], b.entries[index]
        report["first_divergence"] = {
            "update": index + 1, "step": ea.step, "loss_a": json_number(ea.loss), "loss_b": json_number(eb.loss),
            "planes": [n for n, da, db in zip(PLANE_NAMES, ea.digests, eb.digests) if da != db]}
    if checkpoints is not None:
        report["checkpoints"] = _states(a, b, checkpoints, checkpoint_files)
    report["ok"] = True
    report["verdict"] = _verdict(report)
    return report


def _verdict(report: dict[str, Any]) -> str:
    d = report["first_divergence"]
    if d is None:
        verdict = (f"same: the states resumed and every update's digests agree (steps {report['a']['step_before']} "
                   f"to {report['a']['step_after']})")
    else:
        differ = " and ".join(d["planes"]) + (" differs" if len(d["planes"]) == 1 else " differ")
        verdict = (f"the runs part at update {d['update']} (the update to step {d['step']}): {differ} after it"
                   if d["update"] else f"the runs resumed different states at step {d['step']}: {differ} before the "
                   "first update")
    states = report["checkpoints"]
    if states is not None and states["first"] is not None:
        f = states["first"]
        verdict += (f"; at step {states['step']} plane {f['plane']} first differs at index {f['index']} "
                    f"({cell_name(f['index'])}): {f['a_hex']} against {f['b_hex']}")
    elif states is not None:
        verdict += f"; the checkpoints at step {states['step']} are the same state"
    return verdict
