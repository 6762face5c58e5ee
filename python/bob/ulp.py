"""Two float32 planes compared on their bit patterns: ULP distances on a monotonic integer line, the
tolerance of ``--ulp``/``--atol``, the first and the largest differences (``bob.diff``'s ``planes``, and
where two traced runs part: :mod:`bob.analysis`, :mod:`bob.divergence`). Values must be bit-identical
unless a tolerance says otherwise; a NaN is never within a distance of anything."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from bob.environment import in_default_environment
from bob.errors import BadValue, integer_value, real_value, shown_kind
from bob.formats.constants import VOCABULARY
from bob.formats.layout import F32_MAGNITUDE, F32_SIGN
from bob.options import MOST_ATOL, MOST_ULP
from bob.text import f32_json, json_number, show_byte

if TYPE_CHECKING:  # pragma: no cover - numpy.typing costs bob-inspect a millisecond
    import numpy.typing as npt

__all__ = ["tolerance", "ordered_keys", "ulp_distance", "beyond", "plane_diff"]


def tolerance(ulp: Any, atol: Any) -> "tuple[int | None, float | None]":
    """``ulp`` and ``atol`` as ``--ulp`` and ``--atol`` take them: a whole number from 0 to
    :data:`~bob.options.MOST_ULP` and a finite number from 0 to :data:`~bob.options.MOST_ATOL`, each or None;
    anything else a :class:`~bob.BadValue` naming the argument (nothing is ``int()``-ed: 1.5 is no ulp)."""
    whole = integer_value(ulp)
    if ulp is not None and (whole is None or not 0 <= whole <= MOST_ULP):
        raise BadValue("ulp", f"a whole number from 0 to {MOST_ULP}, or None", actual=shown_kind(ulp))
    number = real_value(atol)
    if atol is not None and (number is None or not 0 <= number <= MOST_ATOL):  # (nan and inf fail the bounds)
        raise BadValue("atol", f"a finite number from 0 to {MOST_ATOL:g}, or None", actual=shown_kind(atol))
    return whole, None if number is None else float(number) + 0.0  # (-0.0 is 0)


@in_default_environment
def ordered_keys(values: "npt.ArrayLike") -> "npt.NDArray[np.int64]":
    """float32 values → int64 keys on a monotonic integer line (for ULP distances).

    The bit pattern is sign-magnitude; negative values are mapped to
    ``-(bits & 0x7fffffff)`` so that consecutive floats are consecutive
    integers and ``-0.0`` and ``+0.0`` both map to 0.
    """
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.int64)
    return np.where(bits & F32_SIGN, -(bits & F32_MAGNITUDE), bits)


def ulp_distance(a: "npt.ArrayLike", b: "npt.ArrayLike") -> "npt.NDArray[np.int64]":
    """|key(a) - key(b)| elementwise (see :func:`ordered_keys`)."""
    return np.abs(ordered_keys(a) - ordered_keys(b))


def _where(index: int) -> dict[str, Any]:
    c, n = divmod(int(index), VOCABULARY)
    return {"index": int(index), "context": c, "next": n, "context_text": show_byte(c), "next_text": show_byte(n)}


@in_default_environment
def beyond(a: "npt.ArrayLike", b: "npt.ArrayLike", *, ulp: int | None = None,
           atol: float | None = None) -> "npt.NDArray[np.bool_]":
    """Where two planes differ by more than the tolerance: different bits, unless
    both values are finite and within ``ulp`` units in the last place or
    ``atol`` of each other (either suffices). NaNs must be bit-identical: a NaN
    is never within a distance of anything."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    out = a.view(np.uint32) != b.view(np.uint32)
    both = np.isfinite(a) & np.isfinite(b)
    close = np.zeros(a.shape, dtype=bool)
    if ulp is not None:
        close |= both & (ulp_distance(a, b) <= ulp)
    if atol is not None:  # widened where both are finite only: a signalling NaN's cast warns
        x, y = a[both].astype(np.float64), b[both].astype(np.float64)
        d = x - y  # rounded when the exponents are far apart; a - b is exactly d + e (TwoSum, no overflow
        z = d - x  # in float64), so only a tie of |d| with atol needs e's sign
        e = (x - (d - z)) - (y + z)
        close[both] |= (np.abs(d) < atol) | ((np.abs(d) == atol) & (e * np.sign(d) <= 0))
    return out & ~close


@in_default_environment
def plane_diff(a: "npt.ArrayLike", b: "npt.ArrayLike", *, ulp: int | None = None,
               atol: float | None = None) -> dict[str, Any]:
    """Two planes compared value by value on their bit patterns (and, with a
    tolerance, how many differ by more than it: :func:`beyond`)."""
    a = np.asarray(a, dtype=np.float32)
    b = np.asarray(b, dtype=np.float32)
    idx = np.flatnonzero(a.view(np.uint32) != b.view(np.uint32))
    out: dict[str, Any] = {"differing": int(idx.size), "first": None, "max_abs_diff": None, "max_ulp": None,
                           "beyond_tolerance": int(idx.size) if ulp is None and atol is None
                           else int(np.count_nonzero(beyond(a, b, ulp=ulp, atol=atol)))}
    if not idx.size:
        return out
    k = int(idx[0])
    distance = ulp_distance(a, b)
    notnan = ~(np.isnan(a) | np.isnan(b))
    first = _where(k)
    first.update(
        a=f32_json(a[k]), b=f32_json(b[k]),
        a_hex=f"{int(a.view(np.uint32)[k]):08x}", b_hex=f"{int(b.view(np.uint32)[k]):08x}",
        abs_diff=json_number(abs(float(a[k]) - float(b[k]))) if notnan[k] else None,
        ulp=int(distance[k]) if notnan[k] else None,
    )
    out["first"] = first
    both = np.isfinite(a) & np.isfinite(b)
    absd = np.full(a.shape, -1.0)  # widened where both are finite only: a signalling NaN's cast warns
    absd[both] = np.abs(a[both].astype(np.float64) - b[both].astype(np.float64))
    if (absd > 0).any():
        j = int(np.argmax(absd))
        out["max_abs_diff"] = {"value": float(absd[j]), **_where(j), "a": f32_json(a[j]), "b": f32_json(b[j])}
    u = np.where(notnan, distance, -1)
    if (u > 0).any():
        j = int(np.argmax(u))
        out["max_ulp"] = {"value": int(u[j]), **_where(j), "a": f32_json(a[j]), "b": f32_json(b[j])}
    return out
