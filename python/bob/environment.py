"""Python's own float analysis of planes in the IEEE default floating-point environment (D17).

The core switches to round-to-nearest-even with subnormals kept for each of its entry points
(``rust/bob-core/src/environment.rs``). NumPy computes in whatever environment the calling thread
has: after a ``-ffast-math`` module sets denormals-are-zero, ``astype(float64)`` reads the subnormal
1e-45 as 0, so ``bob.diff(a, b, atol=0.0)`` called two different planes equal and ``as_dict``
counted one non-zero value fewer. :func:`in_default_environment` runs a function inside the core's
switch instead (the core is imported when it is first called: parsing never needs it; where it
cannot be loaded, the function runs as it is).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from typing import ParamSpec, TypeVar

    _P = ParamSpec("_P")
    _T = TypeVar("_T")

__all__ = ["in_default_environment"]


def in_default_environment(function: "Callable[_P, _T]") -> "Callable[_P, _T]":
    """``function``, computing in the default floating-point environment whatever the calling
    thread's, which it gets back afterwards (a decorator)."""

    @functools.wraps(function)
    def in_default(*args: "_P.args", **kwargs: "_P.kwargs") -> "_T":
        try:
            from bob import core
        except ImportError:  # no core: bob-inspect reads and compares files without it, in the thread's environment
            return function(*args, **kwargs)
        return core.in_default_environment(lambda: function(*args, **kwargs))

    return in_default
