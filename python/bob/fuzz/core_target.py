"""The ``core`` target: bytes decoded into the native binding's arguments.

The binding (``bob._core``) promises to refuse bad arguments with
``CoreError`` (a ``ValueError``), ``TypeError``, ``ValueError`` or
``OverflowError``; a Rust panic surfaces as pyo3's ``PanicException``, a
``BaseException``, and is a finding, as is any other exception type. Plane
sizes are kept small (rows 0–17, sometimes the full vocabulary) so one execution stays in
the milliseconds; wrong lengths, dtypes, byte orders, alignments, read-only buffers, steps next to
u64's maximum, ``updates`` and ``threads`` beyond their types, unknown kernels and prompt
words beyond u32 are all drawn. Not drawn: ``updates`` in the billions and
vocabularies in the tens of thousands, which the binding accepts and then
spends minutes (or tens of GB) on — the caller's choice, not a defect. When ``train`` succeeds with a fast kernel,
the same call with ``kernel="scalar"`` on native float32 copies of the same
values must give the same bits (so a plane read in the wrong byte order is
a finding).
"""

from __future__ import annotations

import math

from bob.formats.constants import VOCABULARY
from bob.fuzz.arithmetic import draw_step, reference_predict
from bob.fuzz.properties import PropertyFailed, require

__all__ = ["core_target", "Reader"]

DOCUMENTED = (TypeError, ValueError, OverflowError)  # CoreError is a ValueError
U64_MAX = (1 << 64) - 1
_STEPS = (0, 1, 9, 10, 11, U64_MAX - 10, U64_MAX - 9, U64_MAX - 1, U64_MAX, U64_MAX + 1, -1, 1 << 63)
_WORDS = (0, 1, 255, VOCABULARY, 0xFFFFFFFF, 0xFFFFFFFE, 1 << 32, -1, 1 << 64)
_THREADS = (0, 1, 2, 3, 64, -1, 1 << 31, 1 << 64)


class Reader:
    """Consumes the fuzz bytes as small integers; zeros once they run out (deterministic)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def byte(self) -> int:
        b = self.data[self.at] if self.at < len(self.data) else 0
        self.at += 1
        return b

    def pick(self, options):
        return options[self.byte() % len(options)]

    def u32(self) -> int:
        return sum(self.byte() << (8 * k) for k in range(4))

    def raw(self, n: int) -> bytes:
        out = self.data[self.at:self.at + n]
        self.at += n
        return out + bytes(n - len(out))


def _plane(r: Reader, rows: int, np):
    """A plane for ``rows``: usually right, sometimes of another length, dtype, layout or mutability."""
    count = rows * rows
    # Mostly right, so that valid calls (and the kernel-vs-scalar check) are common.
    shape = r.pick(("right",) * 24 + ("short", "long", "f64", "i32", "strided", "readonly", "bytes", "list",
                                      "swapped", "misaligned"))
    if shape == "short":
        count = max(count - 1, 0)
    elif shape == "long":
        count += 1
    fill = r.pick(("zero", "small", "special", "raw", "ties", "ties"))
    if fill == "ties":  # few distinct values (±0.0 among them): equal maxima at random places
        levels = np.array([-0.0, 0.0, 1.0, -1.0, 0.5], dtype=np.float32)[:2 + r.byte() % 4]
        arr = levels[np.resize(np.frombuffer(r.raw(64), dtype=np.uint8), max(count, 1))[:count] % levels.size]
    elif fill == "raw":
        values = np.frombuffer(r.raw(4 * min(count, 64)), dtype="<f4")
        arr = np.resize(values, count).astype(np.float32) if values.size else np.zeros(count, np.float32)
    elif fill == "special":
        specials = np.array([0.0, -0.0, 1e-45, 3.4028235e38, -3.4028235e38, np.inf, -np.inf, np.nan],
                            dtype=np.float32)
        arr = np.resize(specials[r.byte() % 8:], count).astype(np.float32)
    elif fill == "small":
        arr = (np.arange(count, dtype=np.float32) % 7 - 3) * np.float32(0.01)
    else:
        arr = np.zeros(count, np.float32)
    if shape == "f64":
        return arr.astype(np.float64)
    if shape == "i32":
        return arr.view(np.int32).copy()
    if shape == "strided":
        return np.repeat(arr, 2)[::2]
    if shape == "readonly":
        arr.flags.writeable = False
        return arr
    if shape == "swapped":  # the same values in the other byte order
        return arr.astype(arr.dtype.newbyteorder())
    if shape == "misaligned":  # the same values one byte past a float32 boundary
        shifted = np.frombuffer(bytearray(arr.nbytes + 1), np.float32, count=arr.size, offset=1)
        shifted[:] = arr
        return shifted
    if shape == "bytes":
        return arr.tobytes()
    if shape == "list":
        return arr.tolist()
    return arr


def _pairs(r: Reader, rows: int, n: int, np):
    dtype = r.pick(("u8",) * 6 + ("u32", "u32", "bytes", "i64", "list", "u32-swapped"))
    raw = np.frombuffer(r.raw(min(n, 32)), dtype=np.uint8)
    values = np.resize(raw, n) if raw.size else np.zeros(n, np.uint8)
    if r.byte() % 8:
        values = values % max(rows, 1)  # inside the table most of the time
    if dtype == "u32":
        return values.astype(np.uint32)
    if dtype == "u32-swapped":
        return values.astype(np.dtype(np.uint32).newbyteorder())
    if dtype == "bytes":
        return values.astype(np.uint8).tobytes()
    if dtype == "i64":
        return values.astype(np.int64)
    if dtype == "list":
        return values.tolist()
    return values.astype(np.uint8)


def _bits(a, np) -> bytes:
    """The bits, every NaN as one: NaN payloads are not pinned (a NaN state is never written, §5)."""
    a = np.ascontiguousarray(a, dtype=np.float32).copy()
    a[np.isnan(a)] = np.nan
    return a.view(np.uint32).tobytes()


def core_target(data: bytes) -> None:
    import numpy as np

    from bob import _core

    r = Reader(data)
    # Every vocabulary the core accepts (1 to 256 here; the kernels' lane tails differ), small ones often.
    rows = r.pick((1, 2, 3, 4, 8, 16, 17, 0, VOCABULARY, 5, 7, 12)) if r.byte() % 2 else 1 + r.byte()
    call = r.pick(("train", "train", "train", "predict", "predict", "resume_problem", "initialize", "initial_planes",
                   "fnv1a64", "resolved_kernel"))
    kernels = _core.kernels()
    try:
        if call == "train":
            # The scalars first: a short input still decides the step, which the planes' bytes would use up.
            step = draw_step(r.byte, _STEPS)  # log-uniform, at the bias corrections' regime changes, or special
            updates = r.pick((1, 1, 1, 2, 2, 3, 0, 10, -1, 1 << 64))
            threads = r.pick((0, 1, 2) * 4 + _THREADS)
            kernel = r.pick(("auto",) * 3 + tuple(kernels) * 3 + ("", "AVX2", "scalar\0", "é"))
            n = r.pick((VOCABULARY,) * 12 + (0, 1, VOCABULARY - 1, VOCABULARY + 1)) if r.byte() % 2 \
                else 1 + (r.byte() | r.byte() << 8) % 1024  # any pair count
            p, m, v = (_plane(r, rows, np) for _ in range(3))
            contexts = _pairs(r, rows, n, np)
            targets = _pairs(r, rows, n if r.byte() % 8 != 7 else r.pick((0, 1, n + 1)), np)
            # The scalar kernel's copies hold the same values as native float32s:
            # a plane the binding read in another byte order would not match.
            copies = [np.array(x, dtype=np.float32) if isinstance(x, np.ndarray) else x for x in (p, m, v)]
            losses = _core.train((p, m, v), (contexts, targets), step, updates, threads=threads, kernel=kernel)
            if kernel != "scalar" and all(isinstance(x, np.ndarray) for x in copies):
                scalar_losses = _core.train((copies[0], copies[1], copies[2]), (contexts, targets), step, updates,
                                             threads=1, kernel="scalar")
                # The loss is reported, not stored (contract §6.4): compared as bob-core's own tests do.
                require(len(losses) == len(scalar_losses) and all(
                    a == b or abs(a - b) <= 1e-12 * max(abs(b), 1.0) or (math.isnan(a) and math.isnan(b))
                    for a, b in zip(losses, scalar_losses)), f"kernel {kernel} losses differ from scalar")
                for name, a, b in zip("PMV", (p, m, v), copies):
                    require(_bits(a, np) == _bits(b, np), f"kernel {kernel} plane {name} differs from scalar")
        elif call == "predict":
            # Mostly words of the table (so the §4 reference is compared), sometimes any.
            words = [r.pick(_WORDS) if r.byte() % 4 == 0 else r.byte() % max(rows, 1)
                     for _ in range(r.pick((3, 3, 0, 1, 4)))]
            plane = _plane(r, rows, np)
            out = _core.predict(plane, words)
            require(len(out) == len(words) and all(v in (0, 1) and (t < max(rows, 1) if v else t == 0)
                                                   for t, v in out), f"predict gave {out} for {words}")
            if isinstance(plane, np.ndarray) and plane.dtype.kind == "f" and plane.dtype.itemsize == 4:
                want = reference_predict(np.asarray(plane, dtype=np.float32).tolist(), rows, words)
                require(list(out) == want, f"predict gave {out} for {words}; §4 says {want}")
        elif call == "resume_problem":
            p, m, v = (_plane(r, rows, np) for _ in range(3))
            _core.resume_problem(p, m, v, r.pick(_STEPS), r.pick((10, 0, 1, U64_MAX, -1)))
        elif call == "initialize":
            _core.initialize(_plane(r, rows, np), r.raw(r.byte() % 16))
        elif call == "initial_planes":
            _core.initial_planes(r.raw(r.byte() % 16), r.pick((VOCABULARY, 1, 0, 2, 17, -1, 1 << 40, 1 << 64)))
        elif call == "fnv1a64":
            require(0 <= _core.fnv1a64(r.raw(r.byte())) <= U64_MAX, "fnv1a64 is not a u64")
        else:
            _core.resolved_kernel(r.pick(tuple(kernels) + ("auto", "", "nope")))
    except DOCUMENTED:
        pass
    except BaseException as exc:  # noqa: BLE001 - a panic is a BaseException: exactly what is looked for
        if isinstance(exc, (KeyboardInterrupt, PropertyFailed, MemoryError)):
            raise
        raise PropertyFailed(f"{call} raised an undocumented {type(exc).__module__}.{type(exc).__name__}: "
                             f"{str(exc)[:200]}") from exc
