"""The NumPy reference (tests/reference.py) against the contract's public check values.

No native core is needed here: these tests prove the reference itself, from
python/bob/data/contract/bob-v1.md alone (§3, §4, §5, §6, §8).
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
import sys

import numpy as np
import pytest
from conftest import CKPT_10_SHA256 as CKPT_10
from conftest import CKPT_20_SHA256 as CKPT_20
from conftest import INITIAL_P_SHA256, INITIAL_P_WORDS, PRED_HEX
from conftest import RECORD_SHA256 as ABRA_RECORD

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as R  # noqa: E402

F32 = np.float32


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def words(a) -> list[int]:
    return [int(x) for x in np.asarray(a, dtype=np.float32).view(np.uint32)]


# --------------------------------------------------------------------------- #
# §2 / §1 constants
# --------------------------------------------------------------------------- #


def test_learner_contract_floats():
    assert R.LEARNER_CONTRACT[-20:].hex() == "cdcc4c3d6666663f77be7f3f77cc2b320ad7233c"
    assert R.LEARNER_CONTRACT == b"softmax-cross-entropy-mean|adamw|" + bytes.fromhex(
        "cdcc4c3d6666663f77be7f3f77cc2b320ad7233c"
    )


def test_constants_are_float32():
    for c in (R.LR, R.BETA1, R.BETA2, R.EPS, R.WD, R.EXP_LOG2E, R.EXP_LN2_HI, R.EXP_LN2_LO,
              R.EXP_P0, R.EXP_P1, R.EXP_P2, R.EXP_P3, R.EXP_P4, R.EXP_P5):
        assert isinstance(c, np.float32)
    # 0.693359375 and -86 are exact in f32
    assert float(R.EXP_LN2_HI) == 0.693359375


# --------------------------------------------------------------------------- #
# §6.1 initialization
# --------------------------------------------------------------------------- #


def test_fnv1a64_of_seed():
    assert R.fnv1a64(b"bob-seed-v1") == 0x0F26CBA9A23C695C
    # standard FNV-1a-64 vectors
    assert R.fnv1a64(b"") == 0xCBF29CE484222325
    assert R.fnv1a64(b"a") == 0xAF63DC4C8601EC8C


def test_splitmix64_known_vector():
    # SplitMix64 from state 0 (widely published first outputs)
    assert R.splitmix64(0, 3) == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


def test_initial_p_plane_sha256():
    p = R.initial_p()
    assert p.dtype == np.float32 and p.shape == (65536,)
    assert sha(p.astype("<f4").tobytes()) == INITIAL_P_SHA256


def test_initial_p_first_four_words_as_printed_in_contract():
    """§6.1's check words, as the corrected contract prints them (erratum of 2026-11-30; see
    formats/contract-errata.md E1)."""
    assert words(R.initial_p()[:4]) == list(INITIAL_P_WORDS)


def test_initial_p_first_four_words_of_the_pinned_plane():
    """The first four words of the plane that has the contract's SHA-256,
    recomputed here by hand from the §6.1 formulas with exact arithmetic."""
    p = R.initial_p()
    assert sha(p.astype("<f4").tobytes()) == INITIAL_P_SHA256
    outs = R.splitmix64(0x0F26CBA9A23C695C, 4)
    expect = []
    for o in outs:
        u = (o >> 40) / 2**24  # exact in f64 and in f32
        a = float(np.float32(u - 0.5))  # exact: 24-bit u minus 0.5
        expect.append(struct.unpack("<I", struct.pack("<f", a * float(np.float32(0.02))))[0])
        # the product above is rounded once by struct's f64 -> f32 narrowing; the f64
        # product of two f32 values is exact (48 significant bits), so this is f32(a*b)
    assert words(p[:4]) == expect == [0xBBA84A70, 0x3C19EFF0, 0xBACA6D7B, 0x3B9B54D4]


def test_initial_p_other_vocabulary_is_a_prefix():
    p16 = R.initial_p(vocabulary=16)
    assert p16.shape == (256,)
    assert np.array_equal(p16.view(np.uint32), R.initial_p()[:256].view(np.uint32))
    assert R.initial_p(vocabulary=300).shape == (90000,)


# --------------------------------------------------------------------------- #
# §6.2 exp
# --------------------------------------------------------------------------- #


def _ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    ai = a.view(np.int32).astype(np.int64)
    bi = b.view(np.int32).astype(np.int64)
    return np.abs(ai - bi)


def test_exp_pinned_within_one_ulp_on_grid():
    grid = np.linspace(-86.0, 0.0, 400_001).astype(np.float32)
    extra = np.array([-86.0, -0.0, 0.0, -1e-45, -1e-38, -1e-30, -1e-7, -0.5, -0.6931472,
                      -1.0, -10.0, -85.9999, -87.33654 + 1.33654], dtype=np.float32)
    rng = np.random.default_rng(1234)
    rnd = (-rng.random(200_000) * 86.0).astype(np.float32)
    x = np.concatenate([grid, extra, rnd])
    y = R.exp_pinned(x)
    assert y.dtype == np.float32
    exact = np.array([math.exp(float(v)) for v in x], dtype=np.float64).astype(np.float32)
    d = _ulp_distance(y, exact)
    assert int(d.max()) <= 1, (x[d.argmax()], y[d.argmax()], exact[d.argmax()])
    assert np.all(y > 0)
    assert R.exp_pinned(np.array([0.0, -0.0], dtype=np.float32)).tolist() == [1.0, 1.0]


def test_exp_pinned_zero_below_cutoff():
    x = np.array([-86.00001, np.nextafter(F32(-86.0), F32(-np.inf)), -87.0, -100.0, -1e30,
                  -np.inf, -3.4e38], dtype=np.float32)
    y = R.exp_pinned(x)
    assert y.dtype == np.float32
    assert np.all(y.view(np.uint32) == 0)  # +0.0 exactly (sign bit clear)
    assert R.exp_pinned(np.array([-86.0], dtype=np.float32))[0] > 0


def _exp_scalar(x: np.float32) -> np.float32:
    """A scalar transcription of §6.2 with np.float32 scalars (checks the vectorized one)."""
    if x < F32(-86.0):
        return F32(0.0)
    n = F32(np.rint(x * R.EXP_LOG2E))
    r = (x - n * R.EXP_LN2_HI) - n * R.EXP_LN2_LO
    p = R.EXP_P0
    for c in (R.EXP_P1, R.EXP_P2, R.EXP_P3, R.EXP_P4, R.EXP_P5):
        p = p * r + c
    y = (p * (r * r) + r) + F32(1.0)
    return F32(y * F32(2.0 ** int(n)))


def test_exp_pinned_vectorized_equals_scalar():
    rng = np.random.default_rng(7)
    x = np.concatenate([(-rng.random(3000) * 90).astype(np.float32),
                        np.array([0.0, -0.0, -86.0, -0.34657359, -1.0397208], dtype=np.float32)])
    y = R.exp_pinned(x)
    ys = np.array([_exp_scalar(F32(v)) for v in x], dtype=np.float32)
    assert np.array_equal(y.view(np.uint32), ys.view(np.uint32))


# --------------------------------------------------------------------------- #
# §6.3 pieces
# --------------------------------------------------------------------------- #


def _pinned_sum_scalar(e) -> np.float32:
    n = len(e)
    lanes = [F32(0.0)] * 8
    for k in range(8):
        if k < n:
            acc = F32(e[k])
            for j in range(k + 8, n, 8):
                acc = F32(acc + F32(e[j]))
            lanes[k] = acc
    l0, l1, l2, l3, l4, l5, l6, l7 = lanes
    return F32(((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)))


@pytest.mark.parametrize("n", [1, 3, 8, 13, 16, 256, 300])
def test_pinned_sum_lane_order(n):
    rng = np.random.default_rng(n)
    # values of very different magnitudes so that any other order rounds differently
    e = (rng.random(n) * 10.0 ** rng.integers(-8, 3, n)).astype(np.float32)
    s = R.pinned_sum(e)
    assert s.dtype == np.float32
    assert s.view(np.uint32) == _pinned_sum_scalar(e).view(np.uint32)
    batch = np.stack([e, e[::-1].copy()])
    sb = R.pinned_sum(batch)
    assert sb[0].view(np.uint32) == s.view(np.uint32)
    assert sb[1].view(np.uint32) == _pinned_sum_scalar(e[::-1]).view(np.uint32)


def test_pinned_sum_is_not_naive_sum():
    # order matters: 32 values of 2^-25 in lane 1 add up exactly to 2^-20 there, while a
    # rising-j sequential sum loses each of them against e[0] = 1.0 (below half an ulp)
    e = np.zeros(256, dtype=np.float32)
    e[0] = 1.0
    e[1::8] = 2.0**-25
    s = R.pinned_sum(e)
    assert float(s) == 1.0 + 2.0**-20
    seq = F32(0.0)
    for v in e:
        seq = F32(seq + v)
    assert float(seq) == 1.0


def test_powi_is_the_loop():
    assert R.powi_f64(0.5, 0) == 1.0
    assert R.powi_f64(2.0, 10) == 1024.0
    b = float(R.BETA2)
    for t in (1, 2, 3, 7, 10, 11, 100, 1000):
        result, base, tt = 1.0, b, t
        while tt:
            if tt & 1:
                result *= base
            base *= base
            tt >>= 1
        assert R.powi_f64(b, t) == result


def _scalar_update(P, M, V, contexts, targets, step):
    """A fully scalar transcription of one §6.3 update (small vocabularies only)."""
    vocab = math.isqrt(P.size)
    K = len(contexts)
    c = [0] * vocab
    h = [[0] * vocab for _ in range(vocab)]
    for b, t in zip(contexts, targets):
        c[int(b)] += 1
        h[int(b)][int(t)] += 1
    g = np.zeros(vocab * vocab, dtype=np.float32)
    for r in range(vocab):
        if c[r] == 0:
            continue
        row = [F32(P[r * vocab + j]) for j in range(vocab)]
        mx = row[0]
        for v in row[1:]:
            if v > mx:
                mx = v
        e = [_exp_scalar(F32(v - mx)) for v in row]
        s = _pinned_sum_scalar(e)
        for j in range(vocab):
            prob = F32(e[j] / s)
            g[r * vocab + j] = F32(F32(F32(F32(c[r]) * prob) - F32(h[r][j])) / F32(K))
    t = step + 1
    bc1 = F32(1.0 - R.powi_f64(float(R.BETA1), t))
    bc2 = F32(1.0 - R.powi_f64(float(R.BETA2), t))
    step_size = F32(R.LR / bc1)
    bc2_sqrt = F32(np.sqrt(bc2))
    decay = F32(1.0 - float(R.LR) * float(R.WD))
    omb1 = F32(F32(1.0) - R.BETA1)
    omb2 = F32(F32(1.0) - R.BETA2)
    for i in range(vocab * vocab):
        p = F32(P[i] * decay)
        m = F32(F32(R.BETA1 * M[i]) + F32(omb1 * g[i]))
        v = F32(F32(R.BETA2 * V[i]) + F32(omb2 * F32(g[i] * g[i])))
        P[i] = F32(p - F32(step_size * F32(m / F32(F32(np.sqrt(v)) / bc2_sqrt + R.EPS))))
        M[i] = m
        V[i] = v


@pytest.mark.parametrize("vocab,pairs", [(5, 40), (16, 100), (11, 7)])
def test_vectorized_update_equals_scalar_transcription(vocab, pairs):
    rng = np.random.default_rng(vocab * 1000 + pairs)
    ctx = rng.integers(0, vocab, pairs).astype(np.uint32)
    tgt = rng.integers(0, vocab, pairs).astype(np.uint32)
    P1, M1, V1 = R.initial_planes(vocabulary=vocab)
    P1[3] = P1[4]  # a tie
    P2, M2, V2 = P1.copy(), M1.copy(), V1.copy()
    R.train(P1, M1, V1, ctx, tgt, 0, 6)
    for s in range(6):
        _scalar_update(P2, M2, V2, ctx.tolist(), tgt.tolist(), s)
    for a, b in ((P1, P2), (M1, M2), (V1, V2)):
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_dead_rows_only_decay():
    ctx, tgt = R.fixture_pairs(b"abracadabra")
    P, M, V = R.initial_planes()
    g, prob = R.gradient(P, ctx, tgt)
    live = set(int(b) for b in ctx)
    g2 = g.reshape(256, 256)
    for r in range(256):
        if r not in live:
            assert np.all(g2[r].view(np.uint32) == 0)
        else:
            assert abs(float(np.sum(g2[r], dtype=np.float64))) < 1e-6
    P0 = P.copy()
    R.adamw_update(P, M, V, g, 0)
    dead = [r for r in range(256) if r not in live]
    decay = F32(1.0 - float(R.LR) * float(R.WD))
    for r in dead[:5]:
        row = slice(r * 256, r * 256 + 256)
        assert np.array_equal(P[row].view(np.uint32), (P0[row] * decay).view(np.uint32))


# --------------------------------------------------------------------------- #
# §3 / §4 / §5 / §8
# --------------------------------------------------------------------------- #



def test_fixture_record_sha256():
    rec = R.build_fixture(b"abracadabra", [b"abra", b"cad", b""])
    assert len(rec) == 1564
    assert sha(rec) == ABRA_RECORD
    ctx, tgt, w = R.parse_fixture(rec)
    assert w == [ord("a"), ord("d"), 0xFFFFFFFF]
    assert bytes(ctx[:11].astype(np.uint8)) == b"abracadabra"
    assert bytes(tgt[:11].astype(np.uint8)) == b"bracadabraa"


def test_fixture_refuses_short_corpus():
    for corpus in (b"", b"x"):
        with pytest.raises(ValueError):
            R.build_fixture(corpus, [b"a", b"b", b"c"])


def test_envelope_layout_fresh():
    P, M, V = R.initial_planes()
    env = R.reference_envelope_bytes(0, P, M, V)
    assert len(env) == 786_880
    assert env[:8] == b"BOB-CKPT"
    assert struct.unpack_from("<QQQ", env, 8) == (1, 448, 0)
    off = 32
    strings = []
    for _ in range(4):
        (n,) = struct.unpack_from("<I", env, off)
        strings.append(env[off + 4: off + 4 + n])
        off += 4 + n
    assert strings == [R.STATE_CONTRACT, R.LEARNER_CONTRACT, R.DATA_CONTRACT, b"bob-seed-v1"]
    assert struct.unpack_from("<QQQI", env, off) == (786432, 262144, 10, 3)
    off += 28
    for i, tag in enumerate((b"P\0\0\0", b"M\0\0\0", b"V\0\0\0")):
        assert env[off:off + 4] == tag
        o, ln = struct.unpack_from("<QQ", env, off + 4)
        assert (o, ln) == (448 + i * 262144, 262144)
        assert env[off + 20: off + 52] == hashlib.sha256(env[o:o + ln]).digest()
        off += 52
    assert env[off:off + 32] == hashlib.sha256(env[:off]).digest()
    off += 32
    assert off <= 448 and env[off:448] == b"\0" * (448 - off)
    assert env[448:448 + 262144] == P.astype("<f4").tobytes()


@pytest.fixture(scope="module")
def abra_run():
    rec = R.build_fixture(b"abracadabra", [b"abra", b"cad", b""])
    ctx, tgt, w = R.parse_fixture(rec)
    P, M, V = R.initial_planes()
    out = []
    step = 0
    for _ in range(3):
        losses = R.train(P, M, V, ctx, tgt, step, 10)
        step += 10
        out.append(dict(step=step, losses=losses, env=R.reference_envelope_bytes(step, P, M, V),
                        pred=R.predictions_bytes(R.predict(P, w)),
                        planes=(P.copy(), M.copy(), V.copy())))
    return out


def test_section8_invocation1(abra_run):
    inv = abra_run[0]
    assert inv["step"] == 10
    assert sha(inv["env"]) == CKPT_10
    assert inv["pred"].hex() == PRED_HEX
    assert len(inv["losses"]) == 10
    assert inv["losses"][0] == pytest.approx(5.548397, abs=1e-5)
    assert inv["losses"][-1] == pytest.approx(4.663767, abs=1e-5)


def test_section8_invocation2(abra_run):
    inv = abra_run[1]
    assert inv["step"] == 20
    assert sha(inv["env"]) == CKPT_20
    assert inv["pred"].hex() == PRED_HEX
    assert inv["losses"][0] == pytest.approx(4.566657, abs=1e-5)
    assert inv["losses"][-1] == pytest.approx(3.710753, abs=1e-5)


def test_section8_invocation3_abra_turns_to_b(abra_run):
    pred = abra_run[2]["pred"]
    tok, val = struct.unpack_from("<II", pred, 0)
    assert (tok, val) == (ord("b"), 1)
    # the other two are unchanged
    assert pred[8:].hex() == PRED_HEX[16:]


def test_resume_is_the_same_as_one_run(abra_run):
    ctx, tgt = R.fixture_pairs(b"abracadabra")
    P, M, V = R.initial_planes()
    losses = R.train(P, M, V, ctx, tgt, 0, 20)
    assert sha(R.reference_envelope_bytes(20, P, M, V)) == CKPT_20
    assert losses[10:] == abra_run[1]["losses"]


def test_predict_rules():
    P = np.zeros(65536, dtype=np.float32)
    P2 = P.reshape(256, 256)
    P2[1, 7] = 3.0
    P2[1, 9] = 3.0  # tie: lowest index wins
    P2[2, 5] = np.nan
    P2[3, 0] = np.inf
    P2[4, 255] = 1.0
    preds = R.predict(P, [0, 1, 2, 3, 4, 0xFFFFFFFF])
    assert preds == [(0, 1), (7, 1), (0, 0), (0, 0), (255, 1), (0, 0)]
    with pytest.raises(ValueError):
        R.predict(P, [256])


def test_loss_uses_prob_before_update():
    ctx, tgt = R.fixture_pairs(b"abracadabra")
    P, M, V = R.initial_planes()
    _, prob = R.gradient(P, ctx, tgt)
    expect = -sum(math.log(float(prob[b, t])) for b, t in zip(ctx.tolist(), tgt.tolist())) / 256
    losses = R.train(P, M, V, ctx, tgt, 0, 1)
    assert losses[0] == pytest.approx(expect, rel=1e-12)
