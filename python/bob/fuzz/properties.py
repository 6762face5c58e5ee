"""How a fuzz target says a property failed: :class:`PropertyFailed`, raised by :func:`require`.

Not ``assert``: ``python -O`` (or ``PYTHONOPTIMIZE=1``, which some harnesses
set) strips assert statements, and every property would then hold. A
``PropertyFailed`` is an ``AssertionError``, so whatever reports a failing
assertion (the engine, ``bob-fuzz replay``, pytest) reports it the same way.
"""

from __future__ import annotations

__all__ = ["PropertyFailed", "require"]


class PropertyFailed(AssertionError):
    """A fuzz target's property does not hold for this input."""


def require(condition: object, message: str) -> None:
    """Raise :class:`PropertyFailed` with ``message`` unless ``condition`` holds."""
    __tracebackhide__ = True  # a finding's key is the property that called this (bob.fuzz.keys), not this line
    if not condition:
        raise PropertyFailed(message)
