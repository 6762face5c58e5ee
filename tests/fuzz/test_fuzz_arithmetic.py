"""The arithmetic properties of the ``core`` target (python/bob/fuzz/core_target.py):
steps over the whole u64 range and at the bias corrections'
regime changes, every vocabulary and pair count, ``predict`` against §4 said
plainly — each shown finding a planted bug of its kind — and a long run."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from bob import _core
from bob.fuzz import core_target as arithmetic
from bob.fuzz.core_target import REGIME_STEPS, bias_correction, powi, reference_predict
from bob.fuzz.loop import seeded_loop

BETA1, BETA2 = float(np.float32(0.9)), float(np.float32(0.999))


def test_the_regime_steps_are_where_the_bias_corrections_change() -> None:
    bc1_one, sub1, zero1, bc2_one, sub2, zero2 = REGIME_STEPS
    for beta, one, sub, zero in ((BETA1, bc1_one, sub1, zero1), (BETA2, bc2_one, sub2, zero2)):
        t = one + 1  # t = step + 1
        assert bias_correction(beta, t) == 1.0 and bias_correction(beta, t - 1) < 1.0
        assert 0 < powi(beta, sub + 1) < 2.2250738585072014e-308 <= powi(beta, sub)
        assert powi(beta, zero + 1) == 0.0 < powi(beta, zero)
    assert bc1_one < sub1 < zero1 < bc2_one < sub2 < zero2


def test_steps_are_drawn_over_u64_and_around_each_regime_change() -> None:
    import random

    rnd = random.Random(3)
    steps = [arithmetic.draw_step(lambda: rnd.getrandbits(8), (0, 1)) for _ in range(6000)]
    assert {s.bit_length() for s in steps} == set(range(65))
    for at in REGIME_STEPS:
        assert {at - 1, at, at + 1} <= set(steps), at


def test_reference_predict_is_the_lowest_index_argmax() -> None:
    p = [0.0, 2.0, 2.0, -1.0,  # ties: the first
         -0.0, 0.0, -0.0, 0.0,  # ±0.0 are equal
         1.0, float("nan"), 5.0, 0.0,  # a non-finite row
         float("-inf"), 0.0, 0.0, 0.0]
    assert reference_predict(p, 4, [0, 1, 2, 3, 0xFFFFFFFF]) == [(1, 1), (0, 1), (0, 0), (0, 0), (0, 0)]


def test_predict_agrees_with_the_reference_on_the_seeded_loop() -> None:
    result = seeded_loop("core", 1500, seed=9)
    assert not result.findings, result.findings


def _planted_train(window: range):
    """A fast kernel off by one ulp in P[0] for steps in ``window`` (a regime it gets wrong)."""
    real = _core.train

    def train(planes, pairs, step, updates, *, threads=0, kernel="auto"):
        losses = real(planes, pairs, step, updates, threads=threads, kernel=kernel)
        p = planes[0]
        if kernel != "scalar" and isinstance(p, np.ndarray) and p.size and p.dtype == np.float32 \
                and isinstance(step, int) and step in window and np.isfinite(p[0]):
            p.view(np.uint32)[0] ^= 1
        return losses

    return train


def test_a_kernel_wrong_just_before_bc2_reaches_one_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """bc2 taken as 1.0 from t > 2**14 instead of from t = 17,321: wrong for steps 16,384–17,319 only —
    none of the fixed steps the target drew before (0, 1, 9–11, next to 2**64)."""
    monkeypatch.setattr(_core, "train", _planted_train(range(2 ** 14, REGIME_STEPS[3])))
    result = seeded_loop("core", 6000, seed=9)
    assert result.findings and "differs from scalar" in result.findings[0].message, result.executions


def test_a_predict_taking_the_last_of_equal_maxima_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    real = _core.predict

    def predict(p, words):
        out = real(p, words)
        values = np.asarray(p, dtype=np.float32) if isinstance(p, np.ndarray) else None
        if values is None:
            return out
        rows = int(round(values.size ** 0.5))
        fixed = []
        for (t, v), w in zip(out, words):
            if v:
                row = values[w * rows:(w + 1) * rows]
                t = int(np.flatnonzero(row == row.max())[-1])  # the planted bug: the highest index
            fixed.append((t, v))
        return fixed

    monkeypatch.setattr(_core, "predict", predict)
    result = seeded_loop("core", 3000, seed=9)
    assert result.findings and "section 4 says" in result.findings[0].message


# A long run, crossing every regime change: a 24 × 24 table (not a power of two: the kernels'
# lane tails), 256 pairs, 20,000 updates from step 0, then 40 from 708,040 and 20 from 744,760.
# The SHA-256 of P|M|V was computed by the scalar transcription (kernel="scalar") at 22aeca1.
LONG_RUN_SHA256 = "f0f2df7145e656bd15c34ef6015e50ec169d7028078d9d97ef1655ab869f0856"


@pytest.mark.parametrize("kernel", _core.kernels())
def test_a_long_run_gives_the_scalar_golden_vector(kernel: str) -> None:
    rows, corpus = 24, b"the quick brown fox jumps over the lazy dog, abracadabra!"
    contexts = np.array([corpus[k % len(corpus)] % rows for k in range(256)], np.uint8)
    targets = np.array([corpus[(k + 1) % len(corpus)] % rows for k in range(256)], np.uint8)
    p, m, v = _core.initial_planes(b"bob-seed-v1", rows)
    for step, updates in ((0, 20_000), (708_040, 40), (744_760, 20)):
        _core.train((p, m, v), (contexts, targets), step, updates, threads=1, kernel=kernel)
    assert np.isfinite(p).all() and np.count_nonzero(v) == v.size
    assert hashlib.sha256(p.tobytes() + m.tobytes() + v.tobytes()).hexdigest() == LONG_RUN_SHA256
