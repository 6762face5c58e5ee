"""What a check says: a :class:`Verdict`, and the comparisons that produce one.

Every comparison of planes is of their bits (uint32 views), never of their
values: the contract's promise is bytes, and ``-0.0 == 0.0`` or two NaNs
must not pass or fail by accident.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np

from bob.formats.constants import PLANE_NAMES, cell_name

PERTURB_ENV = "BOB_QUALIFY_PERTURB"
"""Test hook: ``kernel:threads`` makes the kernels check flip one bit of that
kernel's result at that thread count, to show a difference is caught. Unset
(the default) it does nothing; when set, the report says so."""


@dataclass
class Verdict:
    """One check's result. A failure names where: kernel, threads, plane and
    the first differing index (with its context and next byte)."""

    check: str
    ok: bool
    summary: str
    kernel: str | None = None
    threads: int | None = None
    plane: str | None = None
    index: int | None = None
    expected: str | None = None
    actual: str | None = None
    seconds: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    def where(self) -> str:
        """``kernel avx2, threads 3, plane M, index 1234 (context 4, next 210)`` — what is known."""
        parts = []
        if self.kernel is not None:
            parts.append(f"kernel {self.kernel}")
        if self.threads is not None:
            parts.append(f"threads {self.threads}")
        if self.plane is not None:
            parts.append(f"plane {self.plane}")
        if self.index is not None:
            cell = f" ({cell_name(self.index)})" if self.plane else ""
            parts.append(f"index {self.index}{cell}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Difference:
    """The first place two results differ."""

    plane: str
    index: int
    expected: str
    actual: str


def first_plane_difference(expected: Sequence[np.ndarray], actual: Sequence[np.ndarray],
                           names: Sequence[str] = PLANE_NAMES) -> Difference | None:
    """The first (plane, index) where the float32 planes differ in any bit, or None."""
    for name, want, got in zip(names, expected, actual):
        want_bits = np.asarray(want, dtype=np.float32).view(np.uint32)
        got_bits = np.asarray(got, dtype=np.float32).view(np.uint32)
        if want_bits.shape != got_bits.shape:
            return Difference(name, 0, f"{want_bits.size} values", f"{got_bits.size} values")
        differs = np.flatnonzero(want_bits != got_bits)
        if differs.size:
            i = int(differs[0])
            return Difference(name, i, _word(want_bits[i]), _word(got_bits[i]))
    return None


def _word(bits: np.uint32) -> str:
    value = np.array([bits], dtype=np.uint32).view(np.float32)[0]
    return f"0x{int(bits):08x} ({float(value)!r})"


def first_byte_difference(expected: bytes, actual: bytes) -> int | None:
    """The first offset where two byte strings differ (or where the shorter ends)."""
    if expected == actual:
        return None
    for i, (a, b) in enumerate(zip(expected, actual)):
        if a != b:
            return i
    return min(len(expected), len(actual))


def losses_agree(expected: Sequence[float], actual: Sequence[float], relative: float = 1e-12) -> bool:
    """Losses are reported, not stored (§6.4): equal, or within ``relative``."""
    if len(expected) != len(actual):
        return False
    for a, b in zip(expected, actual):
        if a == b or (a != a and b != b):  # equal, infinities included, or both NaN
            continue
        if not (math.isfinite(a) and math.isfinite(b) and abs(a - b) <= relative * max(abs(b), 1.0)):
            return False  # (a NaN or an infinity against a number is never within: its tolerance was inf)
    return True


def perturbation(environ: "os._Environ[str] | dict[str, str] | None" = None) -> tuple[str, int] | None:
    """The (kernel, threads) the test hook corrupts, or None (the default)."""
    text = (os.environ if environ is None else environ).get(PERTURB_ENV, "").strip()
    if not text:
        return None
    kernel, _, threads = text.partition(":")
    if threads.isascii() and threads.isdigit():  # (as every count bob reads: ASCII digits, never a ٢)
        return kernel, int(threads)
    from bob.options import shown_argv  # (the OS's bytes shown as a path's are, a quote too)

    raise ValueError(f"must be KERNEL:THREADS (e.g. avx2:2), got \"{shown_argv(text)}\"")
