"""The native core (bob.core) against the independent NumPy reference, bit for bit.

There is no skip here: if bob.core cannot be imported, every test fails and says so.
"""

from __future__ import annotations

import hashlib
import os
import sys

import numpy as np
import pytest
from conftest import CKPT_10_SHA256 as CKPT_10
from conftest import CKPT_20_SHA256 as CKPT_20
from conftest import PRED_HEX

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402



def norm(preds):
    return [tuple(int(x) for x in t) for t in preds]


def assert_bits_equal(a, b, what=""):
    a = np.asarray(a)
    b = np.asarray(b)
    assert a.dtype == np.float32 and b.dtype == np.float32, what
    assert a.shape == b.shape, what
    au, bu = a.view(np.uint32), b.view(np.uint32)
    if not np.array_equal(au, bu):
        bad = np.nonzero(au != bu)[0]
        i = int(bad[0])
        raise AssertionError(
            f"{what}: {bad.size} words differ; first at {i} (row {i // max(1, int(np.sqrt(a.size)))}): "
            f"core {a[i]!r} ({int(au[i]):#010x}) vs reference {b[i]!r} ({int(bu[i]):#010x})"
        )


def assert_planes_equal(core_planes, ref_planes, what=""):
    for name, a, b in zip("PMV", core_planes, ref_planes):
        assert_bits_equal(a, b, f"{what} plane {name}")


def run_both(core, ctx, tgt, vocabulary=256, calls=10, per_call=10, threads=0):
    """Train core and reference side by side from fresh; compare after every call."""
    cp, cm, cv = core.initial_planes(vocabulary=vocabulary)
    rp, rm, rv = R.initial_planes(vocabulary=vocabulary)
    assert_planes_equal((cp, cm, cv), (rp, rm, rv), "initial")
    step = 0
    for call in range(calls):
        cl = core.train(cp, cm, cv, ctx, tgt, step, per_call, threads=threads)
        rl = R.train(rp, rm, rv, ctx, tgt, step, per_call)
        step += per_call
        assert_planes_equal((cp, cm, cv), (rp, rm, rv), f"after {step} updates")
        cl = np.asarray(cl, dtype=np.float64)
        assert cl.shape == (per_call,)
        np.testing.assert_allclose(cl, np.asarray(rl), rtol=1e-6, atol=0)
    return (cp, cm, cv), (rp, rm, rv)


def _random_corpus():
    return np.random.default_rng(20240611).integers(0, 256, 700, dtype=np.uint8).tobytes()


def _all_bytes_corpus():
    return bytes(np.random.default_rng(99).permutation(256).astype(np.uint8))


CORPORA = {
    "abracadabra": b"abracadabra",
    "all-256-contexts": _all_bytes_corpus(),
    "all-256-in-order": bytes(range(256)),
    "single-byte-z": b"z" * 50,
    "two-bytes-zz": b"zz",
    "random": _random_corpus(),
}


def test_fnv_matches(core):
    for data in (b"", b"a", b"bob-seed-v1", bytes(range(256))):
        assert core.fnv1a64(data) == R.fnv1a64(data)
    assert core.fnv1a64(b"bob-seed-v1") == 0x0F26CBA9A23C695C


@pytest.mark.parametrize("vocabulary", [256, 16, 300, 3])
def test_initial_planes_match(core, vocabulary):
    cp, cm, cv = core.initial_planes(vocabulary=vocabulary)
    rp, rm, rv = R.initial_planes(vocabulary=vocabulary)
    assert_planes_equal((cp, cm, cv), (rp, rm, rv), f"initial V={vocabulary}")


def test_initial_planes_other_seed(core):
    cp, _, _ = core.initial_planes(seed=b"another-seed")
    assert_bits_equal(cp, R.initial_p(seed=b"another-seed"), "initial P, other seed")


@pytest.mark.parametrize("name", list(CORPORA))
def test_100_updates_bit_identical(core, name):
    corpus = CORPORA[name]
    ctx, tgt = R.fixture_pairs(corpus)
    if name.startswith("all-256"):
        assert len(set(ctx.tolist())) == 256
    (cp, cm, cv), _ = run_both(core, ctx, tgt, calls=10, per_call=10)
    prompts = [int(ctx[0]), int(ctx[-1]), 0xFFFFFFFF, 0, 255]
    assert norm(core.predict(cp, prompts)) == R.predict(cp, prompts)


def test_section8_planes_after_10_and_20(core):
    rec = R.build_fixture(b"abracadabra", [b"abra", b"cad", b""])
    ctx, tgt, words = R.parse_fixture(rec)
    cp, cm, cv = core.initial_planes()
    rp, rm, rv = R.initial_planes()
    step = 0
    for expect in (CKPT_10, CKPT_20):
        cl = core.train(cp, cm, cv, ctx, tgt, step, 10)
        rl = R.train(rp, rm, rv, ctx, tgt, step, 10)
        step += 10
        assert_planes_equal((cp, cm, cv), (rp, rm, rv), f"§8 step {step}")
        assert hashlib.sha256(R.reference_envelope_bytes(step, cp, cm, cv)).hexdigest() == expect
        np.testing.assert_allclose(np.asarray(cl, dtype=np.float64), rl, rtol=1e-6, atol=0)
        preds = core.predict(cp, words)
        assert [tuple(int(x) for x in p) for p in preds] == R.predict(rp, words)
        assert R.predictions_bytes(preds).hex() == PRED_HEX


def test_section8_one_call_of_20_equals_two_of_10(core):
    ctx, tgt = R.fixture_pairs(b"abracadabra")
    cp, cm, cv = core.initial_planes()
    core.train(cp, cm, cv, ctx, tgt, 0, 20)
    assert hashlib.sha256(R.reference_envelope_bytes(20, cp, cm, cv)).hexdigest() == CKPT_20


@pytest.mark.parametrize(
    "vocabulary,pairs,calls",
    [(16, 100, 10), (16, 256, 10), (300, 512, 2), (5, 37, 10), (3, 2, 5)],
)
def test_other_vocabularies_bit_identical(core, vocabulary, pairs, calls):
    rng = np.random.default_rng(vocabulary * 7919 + pairs)
    ctx = rng.integers(0, vocabulary, pairs).astype(np.uint32)
    tgt = rng.integers(0, vocabulary, pairs).astype(np.uint32)
    (cp, _, _), _ = run_both(core, ctx, tgt, vocabulary=vocabulary, calls=calls, per_call=10)
    prompts = list(range(vocabulary))[:20] + [0xFFFFFFFF]
    assert norm(core.predict(cp, prompts)) == R.predict(cp, prompts)


@pytest.mark.parametrize("name", ["random", "all-256-contexts"])
def test_thread_counts_identical(core, name):
    ctx, tgt = R.fixture_pairs(CORPORA[name])
    results = {}
    for threads in (1, 2, 0):
        p, m, v = core.initial_planes()
        losses = core.train(p, m, v, ctx, tgt, 0, 30, threads=threads)
        results[threads] = (p, m, v, np.asarray(losses, dtype=np.float64))
    rp, rm, rv = R.initial_planes()
    R.train(rp, rm, rv, ctx, tgt, 0, 30)
    for threads, (p, m, v, losses) in results.items():
        assert_planes_equal((p, m, v), (rp, rm, rv), f"threads={threads}")
        assert np.array_equal(losses, results[1][3]), f"losses differ, threads={threads} vs 1"
    b1 = b"".join(a.tobytes() for a in results[1][:3])
    b2 = b"".join(a.tobytes() for a in results[2][:3])
    assert b1 == b2


def test_resume_from_nonzero_step(core):
    """Starting from a mid-run state with a large step exercises the bias-correction loop."""
    ctx, tgt = R.fixture_pairs(CORPORA["random"])
    rp, rm, rv = R.initial_planes()
    R.train(rp, rm, rv, ctx, tgt, 0, 10)
    cp, cm, cv = rp.copy(), rm.copy(), rv.copy()
    for step in (10, 1000, 123_456_789):
        cl = core.train(cp, cm, cv, ctx, tgt, step, 10)
        rl = R.train(rp, rm, rv, ctx, tgt, step, 10)
        assert_planes_equal((cp, cm, cv), (rp, rm, rv), f"from step {step}")
        np.testing.assert_allclose(np.asarray(cl, dtype=np.float64), rl, rtol=1e-6, atol=0)


def test_extreme_rows_bit_identical(core):
    """Rows with extreme logits, ties and subnormals (all finite) train identically."""
    rng = np.random.default_rng(5)
    p = (rng.standard_normal(65536) * 0.01).astype(np.float32)
    P2 = p.reshape(256, 256)
    P2[1, :] = 0.0                      # all ties
    P2[2, ::3] = 80.0
    P2[2, 1::3] = -80.0
    P2[3, :] = np.float32(1e30) * np.sign(rng.standard_normal(256)).astype(np.float32)
    P2[4, :] = np.float32(1e-42)        # subnormals
    P2[4, 7] = -np.float32(1e-44)
    P2[5, :] = -85.0
    P2[5, 200] = 10.0                   # differences below the exp cutoff
    m = np.zeros_like(p)
    v = np.zeros_like(p)
    ctx = np.array(([1, 2, 3, 4, 5] * 52)[:256], dtype=np.uint32)
    tgt = np.array(rng.integers(0, 256, 256), dtype=np.uint32)
    cp, cm, cv = p.copy(), m.copy(), v.copy()
    rp, rm, rv = p.copy(), m.copy(), v.copy()
    with np.errstate(all="ignore"):
        cl = np.asarray(core.train(cp, cm, cv, ctx, tgt, 0, 10), dtype=np.float64)
        rl = np.asarray(R.train(rp, rm, rv, ctx, tgt, 0, 10))
    assert_planes_equal((cp, cm, cv), (rp, rm, rv), "extreme rows")
    finite = np.isfinite(rl)
    assert np.array_equal(finite, np.isfinite(cl))
    np.testing.assert_allclose(cl[finite], rl[finite], rtol=1e-6, atol=0)


def test_predict_rules_match(core):
    p = np.zeros(65536, dtype=np.float32)
    P2 = p.reshape(256, 256)
    P2[1, 7] = 3.0
    P2[1, 9] = 3.0          # tie: lowest index
    P2[2, 5] = np.nan
    P2[3, 0] = np.inf
    P2[4, 255] = 1.0
    P2[6, :] = -1.0
    P2[6, 100] = -0.5
    prompts = [0, 1, 2, 3, 4, 6, 0xFFFFFFFF]
    got = [tuple(int(x) for x in t) for t in core.predict(p, prompts)]
    assert got == R.predict(p, prompts) == [(0, 1), (7, 1), (0, 0), (0, 0), (255, 1), (100, 1), (0, 0)]
