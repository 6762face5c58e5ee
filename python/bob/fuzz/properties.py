"""How a target says a property failed (:func:`require`, never ``assert``, which ``python -O`` strips), a failure's
identity (:func:`exception_key`: never its message, which may vary from input to input; the campaign, the seeded loop
and ``minimize`` count failures by it), and how targets run commands (:func:`quietly`, :func:`invoked`):
docs/fuzzing.md, "The targets and their properties"."""

from __future__ import annotations

import contextlib
import io
import os
from typing import Any, Callable

import bob

__all__ = ["PropertyFailed", "require", "HARNESS", "exception_key", "quietly", "invoked"]

HARNESS = ("fuzz/campaign.py", "fuzz/loop.py", "fuzz/replay.py", "fuzz/cli.py")
"""The modules that call a target: their frames are never a failure's place."""


class PropertyFailed(AssertionError):
    """A fuzz target's property does not hold for this input (an assertion the engine, replay and pytest report)."""


def require(condition: object, message: str) -> None:
    __tracebackhide__ = True  # a finding's key is the property that called this, not this line
    if not condition:
        raise PropertyFailed(message)


def exception_key(exc: BaseException) -> str:
    """``Type at bob/fuzz/targets.py:123 in check_error``: the innermost frame of bob's code outside
    the harness, or the innermost frame when none is bob's; a frame setting ``__tracebackhide__``
    (pytest's convention, as :func:`require` does) is skipped."""
    import traceback

    root = os.path.dirname(os.path.abspath(bob.__file__)) + os.sep
    frames = [os.path.abspath(f.f_code.co_filename) + f":{line} in {f.f_code.co_name}"
              for f, line in traceback.walk_tb(exc.__traceback__) if not f.f_locals.get("__tracebackhide__", False)]
    frames = [f for f in frames if not f.startswith(tuple(root + name for name in HARNESS))]
    ours = [f for f in frames if f.startswith(root)]
    if not (ours or frames):
        return type(exc).__name__
    where = (ours or frames)[-1]
    return f"{type(exc).__name__} at {'bob/' + where[len(root):] if ours else os.path.basename(where)}"


def quietly(fn: "Callable[[list[str]], int]", argv: "list[str]") -> "tuple[int, str, str]":
    """``fn(argv)`` (a command's ``main``) with its output captured: (exit code, stdout, stderr). A signal the
    command took while it ran was meant for this process (the command caught it, or deferred it): it is raised
    again here however ``fn`` ended, a world's injected crash included, so the harness ends as it was asked to."""
    from bob.signals import Interrupted, taken

    out, err = io.StringIO(), io.StringIO()
    before = len(taken())
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = fn(argv)
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 2
    finally:
        if arrived := taken()[before:]:
            raise Interrupted(arrived[0])  # noqa: B012 - replaces a crash the world injected: the signal wins
    return rc, out.getvalue(), err.getvalue()


def invoked(record: bytes, checkpoint: bytes, trace: bool = False) -> Any:
    """What ``bob.invoke`` computes from the pair, or None when it refuses."""
    try:
        return bob.invoke(record, checkpoint, threads=1, trace=trace)
    except bob.FormatError:
        return None
