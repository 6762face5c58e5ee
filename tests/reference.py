"""An independent plain-NumPy transcription of the bob v1 contract (§3, §4, §5, §6).

Used ONLY by tests. Written from ``python/bob/data/contract/bob-v1.md`` alone, not from the
Rust core, so that the two can be compared bit for bit.

Arithmetic discipline: every f32 step is a NumPy float32 elementwise operation
(one correctly rounded IEEE-754 binary32 operation, no FMA, no reassociation);
every constant and scalar is an explicit ``np.float32`` so nothing is promoted
to float64; f64 steps use Python floats (IEEE binary64). Vectorization is only
over independent elements (a row or the whole table) and never changes the
per-element order of operations; the pinned row sum follows the contract's lane
order exactly.
"""

from __future__ import annotations

import hashlib
import math
import struct
from fractions import Fraction
from functools import lru_cache

import numpy as np

F32 = np.float32
U64 = (1 << 64) - 1
EMPTY_PROMPT = 0xFFFFFFFF

# --------------------------------------------------------------------------- #
# constants (§1, §2)
# --------------------------------------------------------------------------- #


def f32_nearest(decimal: str) -> np.float32:
    """The f32 nearest to ``decimal`` (ties to even), with no double rounding.

    Parsing to f64 then narrowing could in principle round twice; this picks the
    nearest among the f64-narrowed value and its two f32 neighbours, exactly.
    """
    exact = Fraction(decimal)
    guess = np.float32(float(decimal))
    cands = [np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf))]

    def key(c):
        dist = abs(Fraction(float(c)) - exact)
        odd = int(np.array(c, dtype=np.float32).view(np.uint32)) & 1
        return (dist, odd)

    return F32(min(cands, key=key))


LR = f32_nearest("0.05")
BETA1 = f32_nearest("0.9")
BETA2 = f32_nearest("0.999")
EPS = f32_nearest("1e-8")
WD = f32_nearest("0.01")

VOCABULARY = 256
UPDATES_PER_INVOCATION = 10
PROMPTS = 3
RECORD_BYTES = 1564
SEED = b"bob-seed-v1"

STATE_CONTRACT = b"bob-raw-pmv-f32-v1|parameter-order:p-then-m-then-v|payload=786432"
LEARNER_CONTRACT = b"softmax-cross-entropy-mean|adamw|" + struct.pack("<5f", LR, BETA1, BETA2, EPS, WD)
DATA_CONTRACT = b"raw-byte-sequence|vocabulary=256|prompts=3|record=1564"
SEED_CONTRACT = SEED

# exp constants (§6.2): "Every constant is the f32 nearest to the decimal shown."
EXP_LOG2E = f32_nearest("1.44269504")
EXP_LN2_HI = f32_nearest("0.693359375")
EXP_LN2_LO = f32_nearest("-2.12194440e-4")
EXP_P0 = f32_nearest("1.9875691500e-4")
EXP_P1 = f32_nearest("1.3981999507e-3")
EXP_P2 = f32_nearest("8.3334519073e-3")
EXP_P3 = f32_nearest("4.1665795894e-2")
EXP_P4 = f32_nearest("1.6666665459e-1")
EXP_P5 = f32_nearest("5.0000001201e-1")
EXP_CUTOFF = F32(-86.0)

# --------------------------------------------------------------------------- #
# §6.1 initialization
# --------------------------------------------------------------------------- #


def fnv1a64(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in bytes(data):
        h ^= b
        h = (h * 0x100000001B3) & U64
    return h


def splitmix64(state: int, count: int) -> list[int]:
    """The first ``count`` SplitMix64 outputs from ``state`` (wrapping u64)."""
    s = state & U64
    out = []
    for _ in range(count):
        s = (s + 0x9E3779B97F4A7C15) & U64
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & U64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & U64
        out.append(z ^ (z >> 31))
    return out


@lru_cache(maxsize=8)
def _initial_p_cached(seed: bytes, vocabulary: int) -> bytes:
    n = vocabulary * vocabulary
    outs = splitmix64(fnv1a64(seed), n)
    top = np.array([o >> 40 for o in outs], dtype=np.uint32)  # 24 bits: exact in f32
    u = top.astype(np.float32) * F32(2.0**-24)  # exact scaling
    p = (u - F32(0.5)) * F32(0.02)
    assert p.dtype == np.float32
    return p.tobytes()


def initial_p(seed: bytes = SEED, vocabulary: int = VOCABULARY) -> np.ndarray:
    """Fresh P (float32, length vocabulary², parameter order)."""
    return np.frombuffer(_initial_p_cached(bytes(seed), int(vocabulary)), dtype=np.float32).copy()


def initial_planes(seed: bytes = SEED, vocabulary: int = VOCABULARY):
    p = initial_p(seed, vocabulary)
    return p, np.zeros_like(p), np.zeros_like(p)


# --------------------------------------------------------------------------- #
# §6.2 exp, pinned
# --------------------------------------------------------------------------- #


def exp_pinned(x) -> np.ndarray:
    """Elementwise §6.2 on a float32 array (x ≤ 0 is the contract's domain)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        n = np.rint(x * EXP_LOG2E)  # f32 multiply, round half even
        r = (x - n * EXP_LN2_HI) - n * EXP_LN2_LO
        p = np.full_like(x, EXP_P0)
        p = p * r + EXP_P1
        p = p * r + EXP_P2
        p = p * r + EXP_P3
        p = p * r + EXP_P4
        p = p * r + EXP_P5
        y = (p * (r * r) + r) + F32(1.0)
        # exact scaling by 2^n: on the contract's domain n ∈ [-124, 0], so y·2^n
        # stays normal and ldexp is exact. Clamp n so out-of-domain lanes (which
        # are replaced below) do not overflow the integer conversion.
        ni = np.clip(np.where(np.isfinite(n), n, F32(0.0)), -200, 200).astype(np.int32)
        res = np.ldexp(y, ni).astype(np.float32)
    assert res.dtype == np.float32
    return np.where(x < EXP_CUTOFF, F32(0.0), res).astype(np.float32)


# --------------------------------------------------------------------------- #
# §6.3 one update
# --------------------------------------------------------------------------- #


def pinned_sum(e) -> np.ndarray:
    """The contract's 8-lane sum over the last axis (a row, or a batch of rows).

    Lane k adds e[j] for j ≡ k (mod 8) in rising j, starting from e[k]; then
    ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).

    Decision for a row length not a multiple of 8 (the contract only pins 256):
    a lane that has no element at all starts at +0.0 (it stays +0.0); lanes that
    have elements are exactly as above. Since every e[j] ≥ +0.0, this equals
    padding the row with +0.0 at the end.
    """
    e = np.asarray(e, dtype=np.float32)
    n = e.shape[-1]
    lanes = []
    for k in range(8):
        if k < n:
            acc = e[..., k].copy()
            for j in range(k + 8, n, 8):
                acc = acc + e[..., j]
        else:
            acc = np.zeros(e.shape[:-1], dtype=np.float32)
        lanes.append(acc)
    l0, l1, l2, l3, l4, l5, l6, l7 = lanes
    s = ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))
    return np.asarray(s, dtype=np.float32)


def _vocabulary_of(P) -> int:
    n = int(np.asarray(P).size)
    v = math.isqrt(n)
    if v * v != n:
        raise ValueError(f"P has {n} values, not rows × rows")
    return v


def counts(contexts, targets, vocabulary: int):
    ctx = np.asarray(contexts, dtype=np.int64)
    tgt = np.asarray(targets, dtype=np.int64)
    if ctx.shape != tgt.shape or ctx.ndim != 1:
        raise ValueError("contexts and targets must be 1-D and the same length")
    if ctx.size and (ctx.min() < 0 or ctx.max() >= vocabulary or tgt.min() < 0 or tgt.max() >= vocabulary):
        raise ValueError("pair byte outside the vocabulary")
    c = np.zeros(vocabulary, dtype=np.int64)
    h = np.zeros((vocabulary, vocabulary), dtype=np.int64)
    np.add.at(c, ctx, 1)
    np.add.at(h, (ctx, tgt), 1)
    return c, h


def gradient(P, contexts, targets, vocabulary: int | None = None):
    """(g, prob): g is the flat float32 gradient; prob is a (V, V) float32 table
    whose rows with c[r] = 0 are NaN (never computed by the contract)."""
    P = np.asarray(P, dtype=np.float32)
    V = _vocabulary_of(P) if vocabulary is None else int(vocabulary)
    if P.size != V * V:
        raise ValueError("P size does not match vocabulary")
    K = len(contexts)
    c, h = counts(contexts, targets, V)
    P2 = P.reshape(V, V)
    g = np.zeros((V, V), dtype=np.float32)
    prob = np.full((V, V), np.nan, dtype=np.float32)
    rows = np.nonzero(c > 0)[0]
    if rows.size:
        Pr = P2[rows]
        mx = Pr.max(axis=1, keepdims=True)
        e = exp_pinned(Pr - mx)
        s = pinned_sum(e)
        pr = e / s[:, None]
        g[rows] = ((c[rows, None].astype(np.float32) * pr) - h[rows].astype(np.float32)) / F32(K)
        prob[rows] = pr
    assert g.dtype == np.float32 and prob.dtype == np.float32
    return g.reshape(-1), prob


def powi_f64(b: float, t: int) -> float:
    """Exactly the contract's loop, in f64 (Python floats are IEEE binary64)."""
    result = 1.0
    base = float(b)
    t = int(t)
    while t > 0:
        if t & 1:
            result *= base
        base *= base
        t >>= 1
    return result


def adamw_update(P, M, V, g, step: int) -> None:
    """One AdamW update in place on float32 P, M, V; ``step`` = updates done before."""
    for a in (P, M, V):
        assert a.dtype == np.float32
    t = int(step) + 1
    bc1 = F32(1.0 - powi_f64(float(BETA1), t))
    bc2 = F32(1.0 - powi_f64(float(BETA2), t))
    step_size = F32(LR / bc1)
    bc2_sqrt = F32(np.sqrt(bc2))
    decay = F32(1.0 - float(LR) * float(WD))
    omb1 = F32(F32(1.0) - BETA1)
    omb2 = F32(F32(1.0) - BETA2)
    for s in (bc1, bc2, step_size, bc2_sqrt, decay, omb1, omb2):
        assert isinstance(s, np.float32)
    g = np.asarray(g, dtype=np.float32)
    p = P * decay
    m = BETA1 * M + omb1 * g
    v = BETA2 * V + omb2 * (g * g)
    newp = p - step_size * (m / (np.sqrt(v) / bc2_sqrt + EPS))
    for a in (p, m, v, newp):
        assert a.dtype == np.float32
    P[...] = newp
    M[...] = m
    V[...] = v


def loss_from_prob(prob, contexts, targets) -> float:
    """§6.4: −(1/K) Σ_pairs log prob[byte][target], in f64, pairs in order."""
    K = len(contexts)
    total = 0.0
    for b, t in zip(np.asarray(contexts).tolist(), np.asarray(targets).tolist()):
        q = float(prob[b, t])
        # f64 natural log; log(+0.0) = -inf as in IEEE (Python's math.log raises instead)
        total += math.log(q) if q > 0.0 else (-math.inf if q == 0.0 else math.nan)
    return -(1.0 / K) * total


def train(P, M, V, contexts, targets, step: int, updates: int = UPDATES_PER_INVOCATION) -> list[float]:
    """``updates`` updates in place; returns the f64 loss before each update."""
    vocab = _vocabulary_of(P)
    losses = []
    for i in range(int(updates)):
        g, prob = gradient(P, contexts, targets, vocab)
        losses.append(loss_from_prob(prob, contexts, targets))
        adamw_update(P, M, V, g, int(step) + i)
    return losses


# --------------------------------------------------------------------------- #
# §4 predictions
# --------------------------------------------------------------------------- #


def predict(P, prompt_words) -> list[tuple[int, int]]:
    P = np.asarray(P, dtype=np.float32)
    vocab = _vocabulary_of(P)
    P2 = P.reshape(vocab, vocab)
    out = []
    for w in prompt_words:
        w = int(w)
        if w == EMPTY_PROMPT:
            out.append((0, 0))
            continue
        if not 0 <= w < vocab:
            raise ValueError(f"prompt word {w:#x} is neither < {vocab} nor 0xFFFFFFFF")
        row = P2[w]
        if not np.all(np.isfinite(row)):
            out.append((0, 0))
            continue
        out.append((int(np.argmax(row)), 1))  # argmax: first (lowest) index of the maxima
    return out


def predictions_bytes(preds) -> bytes:
    return b"".join(struct.pack("<II", tok, val) for tok, val in preds)


# --------------------------------------------------------------------------- #
# §3 input record
# --------------------------------------------------------------------------- #


def prompt_word(prompt: bytes) -> int:
    return prompt[-1] if len(prompt) else EMPTY_PROMPT


def fixture_pairs(corpus: bytes, count: int = 256):
    corpus = bytes(corpus)
    n = len(corpus)
    if n < 2:
        raise ValueError("corpus of fewer than 2 bytes")
    ctx = [corpus[k % n] for k in range(count)]
    tgt = [corpus[(k + 1) % n] for k in range(count)]
    return np.array(ctx, dtype=np.uint32), np.array(tgt, dtype=np.uint32)


def build_fixture(corpus: bytes, prompts: list[bytes]) -> bytes:
    if len(prompts) != PROMPTS:
        raise ValueError("exactly 3 prompts")
    ctx, tgt = fixture_pairs(corpus)
    out = b"BOB-INPT" + struct.pack("<Q", 1)
    out += b"".join(struct.pack("<BB", int(a), int(b)) for a, b in zip(ctx, tgt))
    out += b"".join(struct.pack("<I", int(b)) for b in tgt)
    out += b"".join(struct.pack("<I", prompt_word(bytes(p))) for p in prompts)
    assert len(out) == RECORD_BYTES
    return out


def parse_fixture(record: bytes):
    """(contexts, targets, prompt_words) from a §3 record (minimal checks)."""
    if len(record) != RECORD_BYTES:
        raise ValueError("record length")
    if record[:8] != b"BOB-INPT" or struct.unpack_from("<Q", record, 8)[0] != 1:
        raise ValueError("magic/version")
    pairs = np.frombuffer(record, dtype=np.uint8, count=512, offset=16).reshape(256, 2)
    targets = np.frombuffer(record, dtype="<u4", count=256, offset=528)
    if not np.array_equal(pairs[:, 1].astype(np.uint32), targets):
        raise ValueError("targets")
    words = list(struct.unpack_from("<3I", record, 1552))
    return pairs[:, 0].astype(np.uint32), pairs[:, 1].astype(np.uint32), words


# --------------------------------------------------------------------------- #
# §5 checkpoint envelope
# --------------------------------------------------------------------------- #


def _lp(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def reference_envelope_bytes(step: int, P, M, V) -> bytes:
    """The §5 checkpoint file for planes P, M, V (float32, 65,536 each)."""
    planes = [np.ascontiguousarray(a, dtype="<f4").tobytes() for a in (P, M, V)]
    chunk = len(planes[0])
    assert all(len(p) == chunk for p in planes)
    payload = 3 * chunk
    assert payload == 786_432 and chunk == 262_144, "the contract strings pin vocabulary 256"

    head = b"BOB-CKPT" + struct.pack("<Q", 1)
    # header_bytes: the header length (below) rounded up to 64.
    body = struct.pack("<Q", int(step))
    body += _lp(STATE_CONTRACT) + _lp(LEARNER_CONTRACT) + _lp(DATA_CONTRACT) + _lp(SEED_CONTRACT)
    body += struct.pack("<QQQ", payload, chunk, UPDATES_PER_INVOCATION)
    body += struct.pack("<I", 3)
    header_len_before_table = len(head) + 8 + len(body)
    header_len = header_len_before_table + 3 * 52 + 32
    header_bytes = (header_len + 63) // 64 * 64
    assert header_bytes == 448, header_bytes
    table = b""
    for i, (tag, data) in enumerate(zip((b"P\0\0\0", b"M\0\0\0", b"V\0\0\0"), planes)):
        table += tag + struct.pack("<QQ", header_bytes + i * chunk, chunk) + hashlib.sha256(data).digest()
    header = head + struct.pack("<Q", header_bytes) + body + table
    header += hashlib.sha256(header).digest()
    assert len(header) == header_len
    header += b"\0" * (header_bytes - len(header))
    out = header + b"".join(planes)
    assert len(out) == 786_880
    return out
