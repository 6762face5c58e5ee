"""The one place in bob that sequences an invocation's math: :func:`advance`.

It lives apart from :mod:`bob.invocation` (which re-exports it) so that
``bob-run`` imports only this: ``dataclasses``, ``typing`` and what they
pull in cost about a sixth of a whole run (BENCHMARKS.md).
"""

from __future__ import annotations

from bob.errors import StateRefused
from bob.formats.constants import PLANE_NAMES, UPDATES_PER_INVOCATION, VOCABULARY

TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

__all__ = ["advance"]

_CHECKS = {
    "non_finite": "would make plane {plane} non-finite",
    "negative": "would make plane V negative",
    "no_room": "would leave no room for the next 10 updates in a u64 step",
}


def advance(p, m, v, contexts, targets, prompt_words: Sequence[int], step: int, *,
            threads: int = 0) -> "tuple[list[float], list[tuple[int, int]]]":
    """Make one invocation's 10 updates in place on the float32 buffers P, M, V
    (``step`` updates made before) and predict for ``prompt_words``.

    Returns ``(losses, records)``. Raises :class:`~bob.errors.StateRefused`
    (naming the plane and index) when the new state could not be resumed —
    a value became non-finite, or the step has no room left — so nothing that
    bob would refuse to read is ever written. The buffers then hold the
    refused state; callers train on copies (``invoke``) or discard them
    (``bob-run``).
    """
    from bob import core  # no fallback: NativeCoreUnavailable propagates

    losses = core.train(p, m, v, contexts, targets, step, UPDATES_PER_INVOCATION, threads=threads)
    step_after = step + UPDATES_PER_INVOCATION
    problem = core.resume_problem(p, m, v, step_after)
    if problem is not None:
        check, plane, index = problem
        where = f"context {index // VOCABULARY}, next {index % VOCABULARY}"
        field = plane or "step"
        message = f"the 10 updates from step {step} {_CHECKS[check].format(plane=plane)}"
        if plane:
            message += f" (first at {where}); nothing was written"
            offset_in_plane = PLANE_NAMES.index(plane)
            raise StateRefused(field, message, expected="finite" if check == "non_finite" else ">= 0",
                               actual=_value_at((p, m, v)[offset_in_plane], index), index=index)
        raise StateRefused(field, message + "; nothing was written", actual=step_after)
    return losses, core.predict(p, prompt_words)


def _value_at(plane, index: int) -> float:
    return float(memoryview(plane).cast("B").cast("f")[index])
