"""The ``trace`` reports (docs/bob-inspect.md, "trace A B"): two traces of one run compared
(:func:`bob.divergence.compare_traces`), and one trace shown whole (:func:`trace_file_report`).

Here only the reading: a trace with any finding, a trace of another run than A's and a checkpoint that is
no state of its trace are refused naming the argument, the path and the field (exit 2: nothing to compare)."""

from __future__ import annotations

from typing import Any

from bob.commands import about
from bob.formats.constants import PLANE_NAMES, cell_name
from bob.errors import FormatError
from bob.formats.layout import TRACE_BYTES
from bob.formats.trace import TRACE_FILE, Trace, examine
from bob.inspect.common import begin, finish, plural, read, read_checkpoint
from bob.inspect.render import file_report
from bob.text import show_path

__all__ = ["trace_report", "render_trace", "trace_file_report", "render_trace_file", "READ"]

READ: "tuple[int, tuple[bytes, str] | None, int]" = (TRACE_BYTES, TRACE_FILE, TRACE_BYTES)  # common.read's
DIGEST_SHOWN = 16  # hex digits of a plane digest in the text (as the checkpoint's chunk table shows its digests)


def _trace(path: str, option: str) -> Trace:
    data, problems = read(path, *READ, option)  # a Refused for an unreadable path
    with about(option, path, "trace"):
        if data is None:
            raise problems[0]
        trace = examine(data).checked().trace
    assert trace is not None
    return trace


def _state(path: str, trace: Trace) -> bytes:
    """The checkpoint at ``path``, held to be a state of ``trace``."""
    from bob.divergence import entry_of, state_of

    data, problems = read_checkpoint(path, "--checkpoints")
    with about("--checkpoints", path, "checkpoint"):
        if data is None:
            raise problems[0]
        entry_of(trace, *state_of(data))
    return data


def trace_report(path_a: str, path_b: str, checkpoints: "list[str] | None" = None) -> dict[str, Any]:
    """The ``trace`` report (a JSON-ready dict); refusals are :class:`bob.commands.Refused`."""
    from bob.divergence import compare_traces

    a, b = _trace(path_a, "A"), _trace(path_b, "B")
    with about("B", path_b, "trace"):
        a.refuse_other_run(b)
    states = None if not checkpoints else (_state(checkpoints[0], a), _state(checkpoints[1], b))
    names = (None, None) if not checkpoints else (show_path(checkpoints[0]), show_path(checkpoints[1]))
    with about("--checkpoints", checkpoints[1] if checkpoints else None, "checkpoint"):
        return compare_traces(a, b, checkpoints=states, files=(show_path(path_a), show_path(path_b)),
                              checkpoint_files=names)


def render_trace(report: dict[str, Any]) -> list[str]:
    lines = [f"{side.upper()} {report[side]['file']}: steps {report[side]['step_before']} to "
             f"{report[side]['step_after']}" for side in ("a", "b")]
    if (d := report["first_divergence"]) is not None and not d["update"]:
        lines.append(f"the states resumed (step {d['step']}) differ: digests differ for {', '.join(d['planes'])}")
    elif d is not None:
        lines.append(f"first diverging update: {d['update']} (to step {d['step']}); digests differ for "
                     f"{', '.join(d['planes'])}; loss before it A {float(d['loss_a']):.6f}, B {float(d['loss_b']):.6f}")
    if (states := report["checkpoints"]) is not None and states["first"] is not None:
        f = states["first"]
        lines.append(f"checkpoints at step {states['step']}: plane {f['plane']} index {f['index']} "
                     f"({cell_name(f['index'])}): A {f['a']} ({f['a_hex']}), B {f['b']} ({f['b_hex']})")
    lines.append(report["verdict"])
    return lines


def trace_file_report(data: bytes | None, read_problems: "list[FormatError]", *, path: str, auto: bool = False) -> dict[str, Any]:
    """One trace's report (a JSON-ready dict): its identity and one row per update wherever its layout reads, and its
    problems (each naming its field and offset); ``data`` is None when the file was too large."""
    report, problems, ex = begin("trace", path, data, read_problems, auto, examine)
    trace = ex.trace if ex is not None else None
    shown = (ex.read if ex is not None else None) or {}  # identity and entries, with problems too
    report.update({key: shown.get(key) for key in ("contract_sha256", "input_sha256", "step_before", "step_after",
                                                   "start", "entries")})
    steps = f"steps {trace.step_before} to {trace.step_after}" if trace else ""
    return finish(report, problems, f"OK: a valid bob-trace v2 trace ({steps}, "
                  f"{plural(len(trace.entries) if trace else 0, 'update')})", "a reader refuses this trace")


def render_trace_file(r: dict[str, Any]) -> list[str]:
    L = []
    if r["entries"] is not None:
        L += [f"  {name:<16} {'-' if r[name] is None else r[name]}"  # (- as the tables say none: no u64 step after)
              for name in ("contract_sha256", "input_sha256", "step_before", "step_after")]
        L.append(f"  {'start':<16} " + "  ".join(f"{n} {r['start'][n][:DIGEST_SHOWN]}" for n in PLANE_NAMES))
        L.append("updates (step, loss before it, XXH3-128 of each plane after it)")
        L.append(f"  {'step':>8}  {'loss':>12}  " + "  ".join(f"{n:<{DIGEST_SHOWN}}" for n in PLANE_NAMES))
        L += [f"  {e['step']:>8}  {float(e['loss']):>12.6f}  " + "  ".join(e[n][:DIGEST_SHOWN] for n in PLANE_NAMES)
              for e in r["entries"]]
    return file_report(r, 17, L)
