"""A failure's identity, as libFuzzer users expect it: the exception type and
the innermost frame of bob's code, never the message (which may hold a value
that varies from input to input). The campaign, the seeded loop and
``minimize`` all use it."""

from __future__ import annotations

import os

__all__ = ["HARNESS", "failure_key", "exception_key"]

HARNESS = ("fuzz/campaign.py", "fuzz/loop.py", "fuzz/replay.py", "fuzz/cli.py")
"""The modules that call a target: their frames are never a failure's place."""


def _bob_root() -> str:
    import bob

    return os.path.dirname(os.path.abspath(bob.__file__)) + os.sep


def failure_key(kind: str, frames: "list[tuple[str, int, str]]") -> str:
    """A failure's identity: its exception type and the innermost frame of
    bob's code (``bob/fuzz/targets.py:123 in check_error``), or the innermost
    frame when none is bob's (a target outside the package); never the
    message, which may hold a value that varies from input to input."""
    root = _bob_root()
    harness = tuple(root + name for name in HARNESS)
    frames = [f for f in frames if not os.path.abspath(f[0]).startswith(harness)]
    ours = [f for f in frames if os.path.abspath(f[0]).startswith(root)]
    if not (ours or frames):
        return kind
    name, line, function = (ours or frames)[-1]
    name = os.path.abspath(name)
    shown = "bob/" + name[len(root):] if name.startswith(root) else os.path.basename(name)
    return f"{kind} at {shown}:{line} in {function}"


def exception_key(exc: BaseException) -> str:
    """:func:`failure_key` of a live exception. A frame whose function sets
    ``__tracebackhide__`` (pytest's convention: a helper that only raises, like
    a property's ``require``) is skipped, so the frame that called it counts."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        if not tb.tb_frame.f_locals.get("__tracebackhide__", False):
            code = tb.tb_frame.f_code
            frames.append((code.co_filename, tb.tb_lineno, code.co_name))
        tb = tb.tb_next
    return failure_key(type(exc).__name__, frames)
