//! A plain scalar transcription of contract §6.2 and §6.3, line by line: the
//! reference the fast kernels are qualified against, on the user's machine
//! as well as in this crate's tests.
//!
//! It is deliberately naive and shares no code with `kernel.rs` or
//! `pinned.rs`: no blocking, no threads, no vector-friendly rewrites, its own
//! copy of every constant. Each line is one correctly rounded operation in the
//! order the contract writes it (Rust never fuses a multiply and an add, and
//! never reassociates). It is slow on purpose; it runs only when asked for by
//! name ([`Kernel::Scalar`](crate::Kernel::Scalar)), never through
//! [`Kernel::Auto`](crate::Kernel::Auto).

// The contract's decimals, verbatim.
#![allow(clippy::approx_constant, clippy::excessive_precision)]

use crate::{AdamW, Pairs, Planes};

/// exp of §6.2 for x <= 0, exactly as the contract writes it (early return
/// below -86, round half to even, the pinned polynomial, exact scaling).
pub fn exp(x: f32) -> f32 {
    if x < -86.0f32 {
        return 0.0;
    }
    let n = (x * 1.442_695_04f32).round_ties_even();
    let r = (x - n * 0.693_359_375f32) - n * -2.121_944_40e-4f32;
    let mut p = 1.987_569_150_0e-4f32;
    p = p * r + 1.398_199_950_7e-3f32;
    p = p * r + 8.333_451_907_3e-3f32;
    p = p * r + 4.166_579_589_4e-2f32;
    p = p * r + 1.666_666_545_9e-1f32;
    p = p * r + 5.000_000_120_1e-1f32;
    let mut y = (p * (r * r) + r) + 1.0f32;
    // Exact scaling by halving: for n >= -124 every intermediate is normal.
    let mut k = n as i32;
    while k < 0 {
        y *= 0.5;
        k += 1;
    }
    y
}

/// The eight-lane sum of §6.3: lane k starts from `e[k]` and adds `e[j]` for
/// `j = k (mod 8)` in rising j; then `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`.
pub fn pinned_sum(e: &[f32]) -> f32 {
    let mut l = [0.0f32; 8];
    for k in 0..8.min(e.len()) {
        l[k] = e[k];
        let mut j = k + 8;
        while j < e.len() {
            l[k] += e[j];
            j += 8;
        }
    }
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

/// `powi` of §6.3: the square-and-multiply loop the contract writes, in f64.
pub fn powi(b: f64, mut t: u64) -> f64 {
    let mut result = 1.0;
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

/// One whole update of §6.3 on P, M, V, `step` updates having been made
/// before; returns the loss before it (§6.4, summed in pair order, in f64).
///
/// # Panics
/// If P's length is not a square, M or V is shorter than P, a pair names a
/// row or column outside the table, `pairs` is empty, or `step + 1`
/// overflows. [`train`](crate::train) with
/// [`Kernel::Scalar`](crate::Kernel::Scalar) checks all of that first.
pub fn update(p: &mut [f32], m: &mut [f32], v: &mut [f32], pairs: &[(u32, u32)], step: u64, hp: &AdamW) -> f64 {
    let n = crate::vocabulary_of(p.len()).expect("P holds rows x rows values");
    assert!(!pairs.is_empty(), "the loss divides by the pair count");
    let k = pairs.len();
    let mut c = vec![0u64; n];
    let mut h = vec![0u64; n * n];
    for &(r, j) in pairs {
        c[r as usize] += 1;
        h[r as usize * n + j as usize] += 1;
    }
    let mut g = vec![0.0f32; n * n];
    let mut prob = vec![0.0f32; n * n];
    for r in 0..n {
        if c[r] == 0 {
            continue;
        }
        let row = &p[r * n..(r + 1) * n];
        let mut mx = row[0];
        for &x in row {
            if x > mx {
                mx = x;
            }
        }
        let e: Vec<f32> = row.iter().map(|&x| exp(x - mx)).collect();
        let s = pinned_sum(&e);
        for j in 0..n {
            prob[r * n + j] = e[j] / s;
            g[r * n + j] = ((c[r] as f32 * prob[r * n + j]) - h[r * n + j] as f32) / k as f32;
        }
    }
    let mut loss = 0.0f64;
    for &(r, j) in pairs {
        loss += f64::from(prob[r as usize * n + j as usize]).ln();
    }
    let loss = -loss / k as f64;

    let t = step.checked_add(1).expect("step + 1 fits in a u64");
    let bc1 = (1.0 - powi(f64::from(hp.beta1), t)) as f32;
    let bc2 = (1.0 - powi(f64::from(hp.beta2), t)) as f32;
    let step_size = hp.lr / bc1;
    let bc2_sqrt = bc2.sqrt();
    let decay = (1.0 - f64::from(hp.lr) * f64::from(hp.weight_decay)) as f32;
    let omb1 = 1.0f32 - hp.beta1;
    let omb2 = 1.0f32 - hp.beta2;
    for i in 0..p.len() {
        let pd = p[i] * decay;
        let mm = hp.beta1 * m[i] + omb1 * g[i];
        let vv = hp.beta2 * v[i] + omb2 * (g[i] * g[i]);
        p[i] = pd - step_size * (mm / (vv.sqrt() / bc2_sqrt + hp.eps));
        m[i] = mm;
        v[i] = vv;
    }
    loss
}

/// `updates` calls of [`update`] in a row, on arguments [`crate::train`] has
/// checked; the losses in update order.
pub(crate) fn train_checked(mut planes: Planes<'_>, pairs: Pairs<'_>, step: u64, updates: u64, hyper: &AdamW) -> Vec<f64> {
    let pairs: Vec<(u32, u32)> = pairs.iter().collect();
    let (p, m, v) = planes.parts();
    let mut losses = Vec::with_capacity(updates.min(1 << 20) as usize);
    for i in 0..updates {
        losses.push(update(p, m, v, &pairs, step + i, hyper));
    }
    losses
}
