"""Where the arithmetic changes regime, and what ``predict`` must say: for the ``core`` target.

The fast kernels are held to the scalar transcription (``kernel="scalar"``)
at steps drawn over the whole u64 range, not at a handful: log-uniformly
(a bit length, then random bits) and densely around every step where §6.3's
bias corrections change regime — ``bc1 = f32(1 − β1^t)`` and
``bc2 = f32(1 − β2^t)`` reach 1.0 in f32, and ``powi(β, t)`` becomes
subnormal, then zero, in f64 (``t = step + 1``). The steps are computed here
from the learner's β1 and β2 with §6.3's own ``powi``, not written down.

:func:`reference_predict` is §4 said plainly, for ``predict``: an empty
prompt (``0xFFFFFFFF``) or a row holding a non-finite value is ``(0, 0)``,
otherwise the lowest index among the row's equal maxima, validity 1.
"""

from __future__ import annotations

import math
import struct
from typing import Callable, Sequence

from bob.formats.constants import EMPTY_PROMPT, LEARNER_HYPERPARAMETERS, U64_MAX

__all__ = ["REGIME_STEPS", "draw_step", "powi", "bias_correction", "regime_steps", "reference_predict"]

_TINY = 2.2250738585072014e-308  # the smallest normal binary64


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def powi(b: float, t: int) -> float:
    """§6.3's ``powi`` (f64), exactly as written."""
    result, base = 1.0, b
    while t > 0:
        if t & 1:
            result *= base
        base *= base
        t >>= 1
    return result


def bias_correction(beta: float, t: int) -> float:
    """``f32(1.0 − powi(f64(β), t))``."""
    return _f32(1.0 - powi(beta, t))


def _first(holds: Callable[[int], bool]) -> int:
    """The least t ≥ 1 for which ``holds(t)`` (monotone in t), by doubling then bisection."""
    hi = 1
    while not holds(hi):
        hi *= 2
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if holds(mid) else (mid, hi)
    return hi


def regime_steps() -> tuple[int, ...]:
    """The steps (``t − 1``) at which a bias correction changes regime, for bob's β1 and β2."""
    out = set()
    for beta in (_f32(LEARNER_HYPERPARAMETERS[1]), _f32(LEARNER_HYPERPARAMETERS[2])):
        out.add(_first(lambda t: bias_correction(beta, t) == 1.0) - 1)  # 1 − β^t rounds to 1.0 in f32
        out.add(_first(lambda t: powi(beta, t) < _TINY) - 1)  # β^t subnormal in f64
        out.add(_first(lambda t: powi(beta, t) == 0.0) - 1)  # β^t zero in f64
    return tuple(sorted(out))


REGIME_STEPS = regime_steps()


def reference_predict(p: Sequence[float], rows: int, words: Sequence[int]) -> list[tuple[int, int]]:
    """§4 for a ``rows`` × ``rows`` table ``p`` (row-major); every word < rows or 0xFFFFFFFF."""
    out = []
    for w in words:
        if w == EMPTY_PROMPT:
            out.append((0, 0))
            continue
        row = [float(x) for x in p[w * rows:(w + 1) * rows]]
        if not all(math.isfinite(x) for x in row):
            out.append((0, 0))
            continue
        top = max(row)
        out.append((min(j for j, x in enumerate(row) if x == top), 1))
    return out


def draw_step(byte: Callable[[], int], specials: Sequence[int]) -> int:
    """A step from fuzz bytes: log-uniform over u64, next to a regime change, or one of ``specials``."""
    kind = byte() % 8
    if kind < 3:
        bits = byte() % 65
        low = sum(byte() << (8 * k) for k in range(8)) & ((1 << max(bits - 1, 0)) - 1)
        return 0 if bits == 0 else (1 << (bits - 1)) | low
    if kind < 6:
        at = REGIME_STEPS[byte() % len(REGIME_STEPS)]
        return min(max(at + byte() % 41 - 20, 0), U64_MAX)
    return specials[byte() % len(specials)]
