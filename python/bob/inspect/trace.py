"""The ``trace`` report: two traces of one run compared (``bob-inspect trace A B
[--checkpoints CA CB]``; the comparison is :func:`bob.divergence.compare_traces`).

Here only the reading: each trace is examined whole
(:func:`bob.formats.trace.examine`) and a trace with any finding — a wrong
magic, a file cut short, a damaged digest — is refused naming the path and
the field, as is a trace of another run than A's and a checkpoint that is no
state of its trace (exit 2: there is nothing to compare).
"""

from __future__ import annotations

from typing import Any

from bob.commands import about
from bob.formats.constants import MAX_CHECKPOINT_BYTES, cell_name
from bob.formats.files import CHECKPOINT_FILE
from bob.formats.layout import TRACE_BYTES
from bob.formats.trace import TRACE_FILE, Trace, examine
from bob.inspect.common import read
from bob.text import show_path

__all__ = ["trace_report", "render_trace"]


def _trace(path: str, option: str) -> Trace:
    data, problems = read(path, TRACE_BYTES, TRACE_FILE)  # a Refused for an unreadable path
    with about(option, path, "trace"):
        if data is None:
            raise problems[0]
        ex = examine(data)
        if ex.findings:
            raise ex.findings[0]
    assert ex.trace is not None
    return ex.trace


def _state(path: str, trace: Trace) -> bytes:
    """The checkpoint at ``path``, held to be a state of ``trace``."""
    from bob.divergence import entry_of, state_of

    data, problems = read(path, MAX_CHECKPOINT_BYTES, CHECKPOINT_FILE)
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
    lines = [f"A {report['a']['file']}: steps {report['a']['step_before']} to {report['a']['step_after']}",
             f"B {report['b']['file']}: steps {report['b']['step_before']} to {report['b']['step_after']}"]
    d = report["first_divergence"]
    if d is not None:
        lines.append(f"first diverging update: {d['update']} (to step {d['step']}); digests differ for "
                     f"{', '.join(d['planes'])}; loss before it A {d['loss_a']:.6f}, B {d['loss_b']:.6f}")
    states = report["checkpoints"]
    if states is not None and states["first"] is not None:
        f = states["first"]
        lines.append(f"checkpoints at step {states['step']}: plane {f['plane']} index {f['index']} "
                     f"({cell_name(f['index'])}): A {f['a']} ({f['a_hex']}), B {f['b']} ({f['b_hex']})")
    lines.append(report["verdict"])
    return lines
