"""Why bob would not resume a state (§5): the readers' step 9 and the writers' and importers'
refusal, by the rules of :mod:`bob.formats.rules`."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from bob.errors import FormatError
from bob.formats.constants import PLANE_NAMES, SCALAR_BYTES, cell_name
from bob.formats.contract import Contract
from bob.formats.layout import ENVELOPE_HEAD, f32_from_bits
from bob.formats.rules import FINITE, MOMENTS_ZERO_AT_STEP_0, ROOM_FOR_UPDATES, V_NOT_NEGATIVE, ValueRule, chunk_offset

__all__ = ["ResumableState", "state_findings", "resume_findings", "refuse_unresumable", "finite_range"]


def state_findings(step: int, planes: "Sequence[np.ndarray] | np.ndarray", header_bytes: int | None = None) -> list[FormatError]:
    """Why the state (``step``; P, M, V) may not be resumed, as findings placed in a file
    when ``header_bytes`` is given."""
    out: list[FormatError] = []
    step_at = None if header_bytes is None else ENVELOPE_HEAD["step"].offset

    def first_bad(rule: ValueRule, plane: int) -> "tuple[int, int] | None":
        """(how many values of the plane break ``rule``, the index of the first)."""
        assert rule.bad is not None  # every plane rule has its array form
        mask = rule.bad(np, planes[plane])
        return (int(np.count_nonzero(mask)), int(mask.argmax())) if mask.any() else None

    def value_finding(rule: ValueRule, i: int, **words: Any) -> None:
        """The finding of plane ``i``'s first value that breaks ``rule``, placed at that value."""
        if (found := first_bad(rule, i)) is not None:
            count, k = found
            at = None if header_bytes is None else chunk_offset(header_bytes, i) + SCALAR_BYTES * k
            # The value from its bits: right in any floating-point environment.
            bits = int(np.asarray(planes[i], dtype=np.float32).reshape(-1).view(np.uint32)[k])
            out.append(rule.finding(f32_from_bits(bits), offset=at, index=k, count=count, cell=cell_name(k), **words))

    for i, name in enumerate(PLANE_NAMES):
        value_finding(FINITE, i, field=name, plane=name)
    value_finding(V_NOT_NEGATIVE, PLANE_NAMES.index("V"))
    if step == 0:
        for i in (1, 2):
            if (found := first_bad(MOMENTS_ZERO_AT_STEP_0, i)) is not None:
                count, k = found
                out.append(MOMENTS_ZERO_AT_STEP_0.finding(0, offset=step_at, expected=f"{PLANE_NAMES[i]} all zero at step 0",
                                                          count=count, plane=PLANE_NAMES[i], cell=cell_name(k)))
                break
    if not ROOM_FOR_UPDATES.ok(step):
        out.append(ROOM_FOR_UPDATES.finding(step, offset=step_at))
    return out


def finite_range(plane: Any) -> "tuple[float, float] | None":
    """(min, max) of a plane's finite values (None: there are none), -0.0 below +0.0: NumPy's min and max give
    whichever of two tied zeros they meet last, so a plane holding both had its sign said by its order."""
    finite = plane[np.isfinite(plane)]
    if not finite.size:
        return None
    low, high = float(finite.min()), float(finite.max())
    signs = np.signbit(finite[finite == 0]) if low == 0 or high == 0 else np.array([], bool)
    return (-0.0 if low == 0 and signs.any() else low), (0.0 if high == 0 and not signs.all() else high)


class ResumableState(Protocol):
    """What the resume check reads of a :class:`~bob.Checkpoint` (defined in a room above this one)."""

    contract: Contract
    step: int
    p: Any
    m: Any
    v: Any


def resume_findings(checkpoint: "ResumableState") -> list[FormatError]:
    """Why ``bob-run`` would refuse to resume ``checkpoint``: a contract field other than bob
    v1's, then :func:`state_findings`."""
    return [*checkpoint.contract.mismatch_findings(),
            *state_findings(checkpoint.step, (checkpoint.p, checkpoint.m, checkpoint.v))]


def refuse_unresumable(checkpoint: "ResumableState", what: str) -> None:
    """Raise the first of :func:`resume_findings` for the writer ``what``: bob writes no
    checkpoint it would refuse to resume unless asked (``for_resume=False``)."""
    if findings := resume_findings(checkpoint):
        first = findings[0]  # (another contract: every reader refuses its file, for_resume or not)
        anyway = ("writes it anyway, a file every bob reader refuses" if first.kind == "contract-mismatch"
                  else "takes it anyway")
        raise type(first)(
            first.field,
            f"{first.message}; bob would refuse to resume it, so {what} refuses it too "
            f"(for_resume=False {anyway}, for a test file)",
            expected=first.expected, actual=first.actual, offset=first.offset, index=first.index)
