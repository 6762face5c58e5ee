//! The contract's pinned scalar pieces (§6.1, §6.2, §6.3): one correctly
//! rounded operation per step, in the order the contract writes them.
//! Everything here is plain scalar code; the fast kernels inline these.
//!
//! The constants are the contract's decimals written verbatim (Rust rounds a
//! literal to the nearest f32, as the contract asks), not `std`'s constants
//! and not shortened: hence the two lints allowed below.
#![allow(clippy::approx_constant, clippy::excessive_precision)]

/// FNV-1a-64 offset basis and prime (§6.1).
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// FNV-1a-64 of `bytes` (§6.1): hashes the seed identity into SplitMix64's
/// starting state.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// SplitMix64 (§6.1), wrapping u64 arithmetic.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose first output follows `state` (§6.1: the FNV-1a-64
    /// of the seed bytes).
    pub fn new(state: u64) -> Self {
        SplitMix64 { state }
    }
}

impl Iterator for SplitMix64 {
    type Item = u64;
    fn next(&mut self) -> Option<u64> {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Some(z ^ (z >> 31))
    }
}

/// Fill `p` with the seeded initialization of §6.1 (`bob-seed-v1` for bob).
/// Any length works: parameter i takes the i-th SplitMix64 output.
pub fn initialize(p: &mut [f32], seed: &[u8]) {
    // The rounding of (u - 0.5) * 0.02 is the environment's.
    crate::environment::in_default_environment(|| fill_seeded(p, seed))
}

fn fill_seeded(p: &mut [f32], seed: &[u8]) {
    let scale = 1.0f32 / 16_777_216.0; // 2^-24, exact
    for (slot, out) in p.iter_mut().zip(SplitMix64::new(fnv1a64(seed))) {
        // out >> 40 has 24 bits: the conversion to f32 and the scaling are exact.
        let u = ((out >> 40) as f32) * scale;
        *slot = (u - 0.5f32) * 0.02f32;
    }
}

/// Below this, exp is +0.0 (§6.2).
pub const EXP_CUTOFF: f32 = -86.0;
const LOG2E: f32 = 1.442_695_04;
const LN2_HI: f32 = 0.693_359_375;
const LN2_LO: f32 = -2.121_944_40e-4;
/// 1.5 * 2^23: adding it puts a small integer-valued f32 in the low mantissa bits.
const SHIFTER: f32 = 12_582_912.0;
const P0: f32 = 1.987_569_150_0e-4;
const P1: f32 = 1.398_199_950_7e-3;
const P2: f32 = 8.333_451_907_3e-3;
const P3: f32 = 4.166_579_589_4e-2;
const P4: f32 = 1.666_666_545_9e-1;
const P5: f32 = 5.000_000_120_1e-1;

/// The pinned exp of §6.2, defined for x <= 0. It has no branch so that the
/// kernels vectorize it: the cutoff is a select after the fact, which gives
/// the same value as the contract's early return.
#[inline(always)]
pub fn exp_pinned(x: f32) -> f32 {
    let n = (x * LOG2E).round_ties_even();
    let r = (x - n * LN2_HI) - n * LN2_LO;
    let mut p = P0;
    p = p * r + P1;
    p = p * r + P2;
    p = p * r + P3;
    p = p * r + P4;
    p = p * r + P5;
    let y = (p * (r * r) + r) + 1.0f32;
    // 2^n from its bits. For x in [-86, 0], n is an integer in [-124, 0] and
    // 2^n is a normal f32, so the product below is exact scaling.
    // n is read as an integer through the mantissa of n + 1.5 * 2^23 (exact
    // for |n| < 2^22) rather than with `as i32`, whose saturating semantics
    // compile to scalar code; the clamp only keeps out-of-contract inputs
    // (x > 88, NaN) from building garbage exponents.
    let ni = (n + SHIFTER).to_bits().wrapping_sub(SHIFTER.to_bits()) as i32;
    let ni = ni.clamp(-126, 127);
    let scale = f32::from_bits(((ni + 127) as u32) << 23);
    let value = y * scale;
    if x < EXP_CUTOFF {
        0.0
    } else {
        value
    }
}

/// The eight-lane sum of §6.3: lane k adds the values at j = k (mod 8) in
/// rising j, then `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`.
/// Lanes start at +0.0 rather than at `e[k]`: for the non-negative values exp
/// gives, `0.0 + e[k] == e[k]` bit for bit, and a lane with no value (fewer
/// than eight columns) stays +0.0.
#[inline(always)]
pub fn pinned_sum(values: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let chunks = values.chunks_exact(8);
    let tail = chunks.remainder();
    for chunk in chunks {
        for k in 0..8 {
            lanes[k] += chunk[k];
        }
    }
    for (k, &x) in tail.iter().enumerate() {
        lanes[k] += x;
    }
    combine_lanes(&lanes)
}

/// The final pairwise combination of §6.3's eight lanes,
/// `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`, in that order.
#[inline(always)]
pub fn combine_lanes(l: &[f32; 8]) -> f32 {
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

/// `powi` exactly as the contract writes it, in f64. Never a library pow.
pub fn powi(b: f64, mut t: u64) -> f64 {
    let mut result = 1.0f64;
    let mut base = b;
    while t > 0 {
        if t & 1 == 1 {
            result *= base;
        }
        base *= base;
        t >>= 1;
    }
    result
}
