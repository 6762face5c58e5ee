//! The row loop: one share's rows through every update of a block, a block
//! of rows at a time, in a compiled copy per instruction set. Each value
//! sees exactly its own operations in the contract's order.

use std::ops::Range;

use super::plan::Plan;
use super::{Kernel, Run, Share};
use crate::pinned::{exp_pinned, pinned_sum};
use crate::{Planes, StepScalars};

impl Run<'_> {
    /// The share's rows through every update of the schedule, in the
    /// kernel's compiled copy of the row loop.
    pub(super) fn rows(&self, share: Share<'_>) {
        let Share { first_row, planes, logp } = share;
        let (plan, schedule) = (self.plan, self.schedule);
        // `kernel` comes from `Kernel::resolve` (see `train_checked`), which
        // returns Avx512 or Avx2 only when the CPU reports those features.
        match self.kernel {
            // SAFETY: run_rows_avx512's only requirement is that the CPU has AVX2,
            // AVX-512 F and AVX-512 VL; `resolve` returned Avx512, so it checked
            // `cpu::avx512()`, which detects exactly those three at run time.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => unsafe { run_rows_avx512(plan, schedule, first_row, planes, logp) },
            // SAFETY: run_rows_avx2's only requirement is that the CPU has AVX2;
            // `resolve` returned Avx2, so `cpu::avx2()` detected it at run time.
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => unsafe { run_rows_avx2(plan, schedule, first_row, planes, logp) },
            _ => run_rows_generic(plan, schedule, first_row, planes, logp),
        }
    }
}

/// A copy of the row loop compiled for an instruction set the CPU is checked
/// to have at run time; the body is the same generic code.
macro_rules! kernel_copy {
    ($name:ident, $features:literal) => {
        /// The row loop compiled with the instruction sets `$features`.
        ///
        /// # Safety
        /// The CPU must support every feature in `$features`; running it on
        /// one that does not is undefined behaviour (illegal instructions).
        /// The body itself is safe code.
        // SAFETY: `unsafe` only because of `target_feature`; callers check the
        // features at run time first (see `Run::rows`).
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(plan: &Plan, schedule: &[StepScalars], first_row: usize, planes: Planes<'_>, logp: &mut [f64]) {
            run_rows_generic(plan, schedule, first_row, planes, logp)
        }
    };
}

kernel_copy!(run_rows_avx2, "avx2");
kernel_copy!(run_rows_avx512, "avx2,avx512f,avx512vl");

/// Rows that run all their updates as one block (80 KiB of P, M, V and
/// scratch at vocabulary 256: L1 and L2). Longer chains leave fewer rows whose
/// exp or AdamW pass runs unpaired; measured best among 4, 8, 16, 32, 64.
pub(super) const ROWS_IN_FLIGHT: usize = 16;

/// Rows per block at vocabulary `n`: [`ROWS_IN_FLIGHT`], fewer when a block's
/// streams (P, M, V, the exp and h rows: 20 bytes per value) would outgrow
/// this budget, half this machine's 1 MiB L2 (per core), so that a block still
/// makes its updates in cache at large vocabularies. Any block size gives
/// the same bits.
pub(super) fn block_rows(n: usize) -> usize {
    const BLOCK_BUDGET: usize = 512 * 1024;
    (BLOCK_BUDGET / (20 * n.max(1))).clamp(MIN_ROWS_IN_FLIGHT, ROWS_IN_FLIGHT)
}
pub(super) const MIN_ROWS_IN_FLIGHT: usize = 4;

/// A share's scratch, allocated once per call: the exp (then prob) and h rows
/// of a block's rows, the target counts of one row, the zero gradient of a
/// row with no pairs, the block's live rows and their rows' pinned sums.
struct Scratch {
    e: Vec<f32>,
    h: Vec<f32>,
    hcount: Vec<usize>,
    zero_g: Vec<f32>,
    /// (row in the block, its slots) of each live row (a row with pairs).
    live: Vec<(usize, Range<usize>)>,
    sums: [f32; ROWS_IN_FLIGHT],
}

/// Runs `rows` through every update of `schedule`, a block of rows at a time.
///
/// Within a block and an update, the live rows form a chain in which one
/// row's gradient and AdamW step (bound by the dividers: three divisions and
/// a square root per value) share a loop with a later row's exp (bound by
/// the multipliers and adders), so both kinds of unit work at once. Rows are
/// independent within an update, and each value still sees exactly its own
/// operations in the contract's order.
#[inline(always)]
pub(super) fn run_rows_generic(plan: &Plan, schedule: &[StepScalars], first_row: usize, planes: Planes<'_>, logp: &mut [f64]) {
    let n = plan.vocabulary;
    let first_slot = plan.row_offsets[first_row];
    let rows_in_flight = block_rows(n);
    let mut scratch = Scratch {
        e: vec![0f32; n * rows_in_flight],
        h: vec![0f32; n * rows_in_flight],
        hcount: vec![0usize; n],
        zero_g: vec![0f32; n],
        live: Vec::with_capacity(rows_in_flight),
        sums: [0f32; ROWS_IN_FLIGHT],
    };
    for (b, mut block) in planes.chunks_of_rows(rows_in_flight).enumerate() {
        gather_live_rows(plan, schedule, &mut block, first_row + b * rows_in_flight, &mut scratch);
        if !scratch.live.is_empty() {
            run_chain(plan, schedule, &mut block, &mut scratch, &mut logp[..], first_slot);
        }
    }
}

/// The block's live rows into `scratch.live`, each with its h row filled in;
/// a row with no pairs makes all the schedule's updates here.
#[inline(always)]
fn gather_live_rows(plan: &Plan, schedule: &[StepScalars], block: &mut Planes<'_>, block_first_row: usize, scratch: &mut Scratch) {
    let n = plan.vocabulary;
    let Scratch { h, hcount, zero_g, live, .. } = scratch;
    live.clear();
    for i in 0..block.rows() {
        let r = block_first_row + i;
        let slots = plan.row_offsets[r]..plan.row_offsets[r + 1];
        if slots.is_empty() {
            // c[r] = 0: g is +0.0, but AdamW still decays and moves the row.
            let (pr, mr, vr) = block.row(i);
            for sched in schedule {
                adamw_row(plan, sched, pr, mr, vr, zero_g);
            }
            continue;
        }
        // h[r][j] as f32; only the row's targets are non-zero, so count
        // and convert just those (the conversion from usize is scalar).
        let hrow = &mut h[i * n..(i + 1) * n];
        hrow.fill(0.0);
        for s in slots.clone() {
            hcount[plan.slot_targets[s] as usize] += 1;
        }
        for s in slots.clone() {
            let j = plan.slot_targets[s] as usize;
            hrow[j] = hcount[j] as f32;
        }
        for s in slots.clone() {
            hcount[plan.slot_targets[s] as usize] = 0;
        }
        live.push((i, slots));
    }
}

/// Every update of the schedule on the block's live rows (at least one), as
/// one chain per update, and the log prob of each slot's target before each
/// update into `logp`.
#[inline(always)]
fn run_chain(plan: &Plan, schedule: &[StepScalars], block: &mut Planes<'_>, scratch: &mut Scratch, logp: &mut [f64], first_slot: usize) {
    let n = plan.vocabulary;
    let updates = schedule.len();
    let Scratch { e, h, live, sums, .. } = scratch;
    let (pb, mb, vb) = block.parts();
    let (first, _) = live[0];
    for (t, sched) in schedule.iter().enumerate() {
        // Phase 1 (exp and pinned sum) of the chain's first row, on its
        // own for the first update only: for each later update it shares
        // the previous update's last loop (the first row has made that
        // update by then, and its scratch row has been read), unless the
        // first row is the only one.
        if t == 0 || live.len() == 1 {
            let span = first * n..(first + 1) * n;
            let mx = row_max(&pb[span.clone()]);
            sums[first] = exp_row_and_sum(&pb[span.clone()], mx, &mut e[span]);
        }
        for k in 0..live.len() {
            let (i, ref slots) = live[k];
            let c = slots.len() as f32;
            let span = i * n..(i + 1) * n;
            let row = LiveRow { c, h: &h[span.clone()], s: sums[i] };
            let next = match live.get(k + 1) {
                Some(&(j, _)) => Some(j),
                None if t + 1 < updates && k > 0 => Some(first),
                None => None,
            };
            if let Some(j) = next {
                // Phase 2 of row i with phase 1 of row j: the next live
                // row, or after the last, the first for the next update.
                let (pi, pj) = pair_of_rows_mut(pb, n, i, j);
                let (ei, ej) = pair_of_rows_mut(e, n, i, j);
                let mxj = row_max(pj);
                let planes = RowPlanes { p: pi, m: &mut mb[span.clone()], v: &mut vb[span.clone()], e: ei };
                phase2_with_exp(plan, sched, &row, planes, Some(NextExp { p: pj, mx: mxj, e: &mut *ej }));
                sums[j] = pinned_sum(ej);
            } else {
                let planes = RowPlanes {
                    p: &mut pb[span.clone()],
                    m: &mut mb[span.clone()],
                    v: &mut vb[span.clone()],
                    e: &mut e[span.clone()],
                };
                phase2_with_exp(plan, sched, &row, planes, None);
            }
            // Row i's scratch now holds this update's prob row.
            for s in slots.clone() {
                let prob = e[i * n + plan.slot_targets[s] as usize];
                logp[(s - first_slot) * updates + t] = f64::from(prob).ln();
            }
        }
    }
}

/// Rows `a` and `b` (distinct) of a buffer of `n`-value rows, both mutable.
pub(super) fn pair_of_rows_mut(buffer: &mut [f32], n: usize, a: usize, b: usize) -> (&mut [f32], &mut [f32]) {
    if a < b {
        let (lo, hi) = buffer.split_at_mut(b * n);
        (&mut lo[a * n..(a + 1) * n], &mut hi[..n])
    } else {
        let (lo, hi) = buffer.split_at_mut(a * n);
        (&mut hi[..n], &mut lo[b * n..(b + 1) * n])
    }
}

/// What phase 2 of a live row needs besides its planes: c[r], its h row and
/// the pinned sum s of its exp row.
pub(super) struct LiveRow<'a> {
    pub(super) c: f32,
    pub(super) h: &'a [f32],
    pub(super) s: f32,
}

/// One live row's P, M and V, and its exp row (which phase 2 turns into
/// its prob row).
pub(super) struct RowPlanes<'r> {
    pub(super) p: &'r mut [f32],
    pub(super) m: &'r mut [f32],
    pub(super) v: &'r mut [f32],
    pub(super) e: &'r mut [f32],
}

/// Phase 1's exp of another row, run in phase 2's loop:
/// `e[j] = exp_pinned(p[j] - mx)`.
pub(super) struct NextExp<'r> {
    pub(super) p: &'r [f32],
    pub(super) mx: f32,
    pub(super) e: &'r mut [f32],
}

/// Phase 2 of one row (prob, gradient, AdamW; its exp row becomes its prob
/// row) and, in the same loop, phase 1's exp of the `next` row if any.
#[inline(always)]
pub(super) fn phase2_with_exp(plan: &Plan, sched: &StepScalars, row: &LiveRow<'_>, planes: RowPlanes<'_>, next: Option<NextExp<'_>>) {
    match plan.pair_count_reciprocal {
        Some(rk) => phase2_inner(plan, sched, row, planes, next, |x| x * rk),
        None => {
            let k = plan.pair_count;
            phase2_inner(plan, sched, row, planes, next, |x| x / k)
        }
    }
}

#[inline(always)]
pub(super) fn phase2_inner(
    plan: &Plan,
    sched: &StepScalars,
    row: &LiveRow<'_>,
    planes: RowPlanes<'_>,
    next: Option<NextExp<'_>>,
    over_k: impl Fn(f32) -> f32,
) {
    let RowPlanes { p, m, v, e } = planes;
    let n = p.len();
    let (c, s) = (row.c, row.s);
    let (h, m, v, e) = (&row.h[..n], &mut m[..n], &mut v[..n], &mut e[..n]);
    match next {
        None => {
            for j in 0..n {
                let prob = e[j] / s;
                e[j] = prob;
                let g = over_k((c * prob) - h[j]);
                adamw_element(plan, sched, &mut p[j], &mut m[j], &mut v[j], g);
            }
        }
        Some(NextExp { p: next_p, mx: next_mx, e: next_e }) => {
            let (next_p, next_e) = (&next_p[..n], &mut next_e[..n]);
            for j in 0..n {
                let prob = e[j] / s;
                e[j] = prob;
                let g = over_k((c * prob) - h[j]);
                adamw_element(plan, sched, &mut p[j], &mut m[j], &mut v[j], g);
                next_e[j] = exp_pinned(next_p[j] - next_mx);
            }
        }
    }
}

/// max_j P[j]. The maximum of finite values is the same in any order
/// (NaNs never enter a lane; -0.0 and +0.0, the only equal values with other
/// bits, give the same exp of P[j] - mx), so four independent eight-lane
/// accumulators shorten the chain of dependent maxima to a quarter.
#[inline(always)]
pub(super) fn row_max(p: &[f32]) -> f32 {
    let mut lanes = [[f32::NEG_INFINITY; 8]; 4];
    let chunks = p.chunks_exact(32);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (a, lanes) in lanes.iter_mut().enumerate() {
            for k in 0..8 {
                let x = chunk[8 * a + k];
                lanes[k] = if x > lanes[k] { x } else { lanes[k] };
            }
        }
    }
    for (k, &x) in tail.iter().enumerate() {
        let lane = &mut lanes[k / 8][k % 8];
        *lane = if x > *lane { x } else { *lane };
    }
    let max = |a: f32, b: f32| if b > a { b } else { a };
    let mut folded = [f32::NEG_INFINITY; 8];
    for k in 0..8 {
        folded[k] = max(max(lanes[0][k], lanes[1][k]), max(lanes[2][k], lanes[3][k]));
    }
    folded.into_iter().fold(f32::NEG_INFINITY, max)
}

/// e[j] = exp_pinned(P[j] - mx), then their pinned eight-lane sum. Two
/// passes: the exp loop has no carried dependency, so it vectorizes at the
/// machine's full width; the sum keeps the contract's lanes and order.
#[inline(always)]
pub(super) fn exp_row_and_sum(p: &[f32], mx: f32, e: &mut [f32]) -> f32 {
    let e = &mut e[..p.len()];
    for (ej, &pj) in e.iter_mut().zip(p) {
        *ej = exp_pinned(pj - mx);
    }
    pinned_sum(e)
}

#[inline(always)]
pub(super) fn adamw_row(plan: &Plan, sched: &StepScalars, p: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32]) {
    let n = p.len();
    let (m, v, g) = (&mut m[..n], &mut v[..n], &g[..n]);
    for j in 0..n {
        adamw_element(plan, sched, &mut p[j], &mut m[j], &mut v[j], g[j]);
    }
}

#[inline(always)]
pub(super) fn adamw_element(plan: &Plan, sched: &StepScalars, p: &mut f32, m: &mut f32, v: &mut f32, g: f32) {
    let decayed = *p * plan.decay;
    let m_new = plan.beta1 * *m + plan.omb1 * g;
    let v_new = plan.beta2 * *v + plan.omb2 * (g * g);
    *p = decayed - sched.step_size * (m_new / (v_new.sqrt() / sched.bc2_sqrt + plan.eps));
    *m = m_new;
    *v = v_new;
}
