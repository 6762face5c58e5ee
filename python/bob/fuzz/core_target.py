"""The ``core`` target: bytes decoded into the native binding's arguments, its properties and the
arithmetic they use (docs/fuzzing.md, "The arithmetic")."""

from __future__ import annotations

import bisect
import math
import sys
from typing import Callable, Sequence

import numpy as np

from bob.formats.constants import EMPTY_PROMPT, LEARNER_HYPERPARAMETERS, U64_MAX, VOCABULARY
from bob.fuzz.properties import PropertyFailed, require

__all__ = ["core_target", "Reader", "REGIME_STEPS", "draw_step", "powi", "bias_correction", "regime_steps",
           "reference_predict"]


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
    return float(np.float32(1.0 - powi(beta, t)))


def regime_steps() -> tuple[int, ...]:
    """The steps (``t − 1``) at which a bias correction changes regime, for bob's β1 and β2."""
    out = set()
    for beta in (float(np.float32(b)) for b in LEARNER_HYPERPARAMETERS[1:3]):
        # 1 − β^t rounds to 1.0 in f32; β^t subnormal in f64; β^t zero in f64 (each monotone in t)
        for holds in (lambda t: bias_correction(beta, t) == 1.0, lambda t: powi(beta, t) < sys.float_info.min,
                      lambda t: powi(beta, t) == 0.0):
            out.add(bisect.bisect_left(range(1 << 40), True, key=holds) - 1)  # the least t that holds, − 1
    return tuple(sorted(out))


REGIME_STEPS = regime_steps()


def reference_predict(p: Sequence[float], rows: int, words: Sequence[int]) -> list[tuple[int, int]]:
    """§4 for a ``rows`` × ``rows`` table ``p`` (row-major); every word < rows or 0xFFFFFFFF."""
    out = []
    for w in words:
        row = [] if w == EMPTY_PROMPT else [float(x) for x in p[w * rows:(w + 1) * rows]]
        # list.index finds the first value equal to the maximum: the lowest index, −0.0 == 0.0
        valid = bool(row) and all(math.isfinite(x) for x in row)
        out.append((row.index(max(row)), 1) if valid else (0, 0))
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


_STEPS = (0, 1, 9, 10, 11, U64_MAX - 10, U64_MAX - 9, U64_MAX - 1, U64_MAX, U64_MAX + 1, -1, 1 << 63)
_WORDS = (0, 1, 255, VOCABULARY, 0xFFFFFFFF, 0xFFFFFFFE, 1 << 32, -1, 1 << 64)
_THREADS = (0, 1, 2, 3, 64, -1, 1 << 31, 1 << 64)


class Reader:
    """Consumes the fuzz bytes as small integers; zeros once they run out (deterministic)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        return self.raw(1)[0]

    def pick(self, options):
        return options[self.byte() % len(options)]

    def raw(self, n: int) -> bytes:
        out = self.data[self.at:self.at + n]
        self.at += n
        return out + bytes(n - len(out))


# Mostly right, so that valid calls (and the kernel-vs-scalar check) are common.
_SHAPES = ("right",) * 24 + ("short", "long", "f64", "i32", "strided", "readonly", "bytes", "list", "swapped",
                             "misaligned")
_SHAPED: dict[str, Callable[[np.ndarray], object]] = {
    "f64": lambda a: a.astype(np.float64),
    "i32": lambda a: a.view(np.int32).copy(),
    "strided": lambda a: np.repeat(a, 2)[::2],
    "readonly": lambda a: np.frombuffer(a.tobytes(), np.float32),  # over bytes: not writeable
    "swapped": lambda a: a.astype(a.dtype.newbyteorder()),  # the same values in the other byte order
    "misaligned": lambda a: np.frombuffer(bytearray(b"\0" + a.tobytes()), np.float32, offset=1),
    "bytes": lambda a: a.tobytes(),
    "list": lambda a: a.tolist(),
}
_LEVELS = np.array([-0.0, 0.0, 1.0, -1.0, 0.5], dtype=np.float32)
_SPECIALS = np.array([0.0, -0.0, 1e-45, 3.4028235e38, -3.4028235e38, np.inf, -np.inf, np.nan], dtype=np.float32)


def _plane(r: Reader, rows: int):
    """A plane for ``rows``: usually right, sometimes of another length, dtype, layout or mutability."""
    shape = r.pick(_SHAPES)
    count = max(rows * rows + {"short": -1, "long": 1}.get(shape, 0), 0)
    fill = r.pick(("zero", "small", "special", "raw", "ties", "ties"))
    if fill == "ties":  # few distinct values (±0.0 among them): equal maxima at random places
        levels = _LEVELS[:2 + r.byte() % 4]
        arr = levels[np.resize(np.frombuffer(r.raw(64), dtype=np.uint8), max(count, 1))[:count] % levels.size]
    elif fill == "raw":
        arr = np.resize(np.frombuffer(r.raw(4 * min(count, 64)), dtype="<f4"), count).astype(np.float32)
    elif fill == "special":
        arr = np.resize(_SPECIALS[r.byte() % 8:], count).astype(np.float32)
    elif fill == "small":
        arr = (np.arange(count, dtype=np.float32) % 7 - 3) * np.float32(0.01)
    else:
        arr = np.zeros(count, np.float32)
    return _SHAPED.get(shape, lambda a: a)(arr)


_PAIR_TYPES: dict[str, Callable[[np.ndarray], object]] = {
    "u8": lambda v: v.astype(np.uint8),
    "u32": lambda v: v.astype(np.uint32),
    "u32-swapped": lambda v: v.astype(np.dtype(np.uint32).newbyteorder()),
    "bytes": lambda v: v.astype(np.uint8).tobytes(),
    "i64": lambda v: v.astype(np.int64),
    "list": lambda v: v.tolist(),
}


def _pairs(r: Reader, rows: int, n: int):
    dtype = r.pick(("u8",) * 6 + ("u32", "u32", "bytes", "i64", "list", "u32-swapped"))
    values = np.resize(np.frombuffer(r.raw(min(n, 32)), dtype=np.uint8), n)
    if r.byte() % 8:
        values = values % max(rows, 1)  # inside the table most of the time
    return _PAIR_TYPES[dtype](values)


def _bits(a) -> bytes:
    """The bits, every NaN as one: NaN payloads are not pinned (a NaN state is never written, §5)."""
    a = np.ascontiguousarray(a, dtype=np.float32).copy()
    a[np.isnan(a)] = np.nan
    return a.view(np.uint32).tobytes()


def _train(r: Reader, rows: int, kernels, core) -> None:
    """``train`` on drawn arguments; a fast kernel's result held to the scalar kernel's."""
    # The scalars first: a short input still decides the step, which the planes' bytes would use up.
    step = draw_step(r.byte, _STEPS)  # log-uniform, at the bias corrections' regime changes, or special
    updates = r.pick((1, 1, 1, 2, 2, 3, 0, 10, -1, 1 << 64))
    threads = r.pick((0, 1, 2) * 4 + _THREADS)
    kernel = r.pick(("auto",) * 3 + tuple(kernels) * 3 + ("", "AVX2", "scalar\0", "é"))
    n = r.pick((VOCABULARY,) * 12 + (0, 1, VOCABULARY - 1, VOCABULARY + 1)) if r.byte() % 2 \
        else 1 + (r.byte() | r.byte() << 8) % 1024  # any pair count
    p, m, v = (_plane(r, rows) for _ in range(3))
    contexts = _pairs(r, rows, n)
    targets = _pairs(r, rows, n if r.byte() % 8 != 7 else r.pick((0, 1, n + 1)))
    # The scalar kernel's copies hold the same values as native float32s:
    # a plane the binding read in another byte order would not match.
    copies = [np.array(x, dtype=np.float32) if isinstance(x, np.ndarray) else x for x in (p, m, v)]
    losses = core.train((p, m, v), (contexts, targets), step, updates, threads=threads, kernel=kernel)
    if kernel != "scalar" and all(isinstance(x, np.ndarray) for x in copies):
        scalar_losses = core.train(tuple(copies), (contexts, targets), step, updates, threads=1, kernel="scalar")
        # The loss is reported, not stored (contract §6.4): compared as bob-core's own tests do.
        require(len(losses) == len(scalar_losses) and all(
            a == b or abs(a - b) <= 1e-12 * max(abs(b), 1.0) or (math.isnan(a) and math.isnan(b))
            for a, b in zip(losses, scalar_losses)), f"kernel {kernel} losses differ from scalar")
        for name, a, b in zip("PMV", (p, m, v), copies):
            require(_bits(a) == _bits(b), f"kernel {kernel} plane {name} differs from scalar")


def _predict(r: Reader, rows: int, core) -> None:
    """``predict`` on drawn words, held to §4 (:func:`reference_predict`) on float32 planes."""
    # Mostly words of the table (so the §4 reference is compared), sometimes any.
    words = [r.pick(_WORDS) if r.byte() % 4 == 0 else r.byte() % max(rows, 1) for _ in range(r.pick((3, 3, 0, 1, 4)))]
    plane = _plane(r, rows)
    out = core.predict(plane, words)
    side = math.isqrt(plane.size) if isinstance(plane, np.ndarray) else rows  # the table the core read
    require(len(out) == len(words) and all(v in (0, 1) and (t < max(side, 1) if v else t == 0)
                                           for t, v in out), f"predict gave {out} for {words}")
    if isinstance(plane, np.ndarray) and plane.dtype.kind == "f" and plane.dtype.itemsize == 4:
        want = reference_predict(np.asarray(plane, dtype=np.float32).ravel().tolist(), side, words)
        require(list(out) == want, f"predict gave {out} for {words}; section 4 says {want}")


def core_target(data: bytes) -> None:
    from bob import _core

    r = Reader(data)
    # Every vocabulary the core accepts (1 to 256 here; the kernels' lane tails differ), small ones often.
    rows = r.pick((1, 2, 3, 4, 8, 16, 17, 0, VOCABULARY, 5, 7, 12)) if r.byte() % 2 else 1 + r.byte()
    call = r.pick(("train", "train", "train", "predict", "predict", "resume_problem", "initialize", "initial_planes",
                   "fnv1a64", "resolved_kernel"))
    kernels = _core.kernels()
    try:
        if call == "train":
            _train(r, rows, kernels, _core)
        elif call == "predict":
            _predict(r, rows, _core)
        elif call == "resume_problem":
            p, m, v = (_plane(r, rows) for _ in range(3))
            _core.resume_problem(p, m, v, r.pick(_STEPS), r.pick((10, 0, 1, U64_MAX, -1)))
        elif call == "initialize":
            _core.initialize(_plane(r, rows), r.raw(r.byte() % 16))
        elif call == "initial_planes":
            _core.initial_planes(r.raw(r.byte() % 16), r.pick((VOCABULARY, 1, 0, 2, 17, -1, 1 << 40, 1 << 64)))
        elif call == "fnv1a64":
            require(0 <= _core.fnv1a64(r.raw(r.byte())) <= U64_MAX, "fnv1a64 is not a u64")
        else:
            _core.resolved_kernel(r.pick(tuple(kernels) + ("auto", "", "nope")))
    except (TypeError, ValueError, OverflowError):  # documented (CoreError is a ValueError)
        pass
    except BaseException as exc:  # noqa: BLE001 - a panic is a BaseException: exactly what is looked for
        if isinstance(exc, (KeyboardInterrupt, PropertyFailed, MemoryError)):
            raise
        raise PropertyFailed(f"{call} raised an undocumented {type(exc).__module__}.{type(exc).__name__}: "
                             f"{str(exc)[:200]}") from exc
