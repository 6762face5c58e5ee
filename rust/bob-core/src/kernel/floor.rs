//! The floor microbenchmarks the benchmarks compare the core against: the
//! fused loop of one update and its dividers alone, timed the way the kernel
//! runs. Not API (`#[doc(hidden)]` in lib.rs), free to change with the kernel.

use super::*;
use std::time::{Duration, Instant};

/// What to time. Both run over a real training state (vocabulary `n`,
/// every row live, a few updates in), because the dividers' speed depends
/// on the values: on round numbers (e = 0.5, s = 128) they run twice as
/// fast as on a training state's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Floor {
    /// One update's fused loops and nothing else: for every row, its
    /// prob, gradient and AdamW step (three divisions, a square root)
    /// with the next row's pinned exp, in the kernel's own loop, with the
    /// exp rows, row maxima and pinned sums handed in precomputed (no row
    /// max, no pinned sum, no loss, no blocking, no threads' start).
    FusedLoop,
    /// Only the dividers' share of the same: three divisions and a square
    /// root per value.
    Dividers,
}

/// A state to time the floors on: P, M, V some updates into training,
/// and each row's exp row, max and pinned sum.
pub struct State {
    n: usize,
    /// The step the state is at; the floor's passes are steps step + 1 ...
    step: u64,
    p: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    e: Vec<f32>,
    maxes: Vec<f32>,
    sums: Vec<f32>,
}

impl State {
    /// Vocabulary `n`, every row live (pair k = (k, 7k + 3 mod n)), after
    /// `updates` updates from the seeded start. With 0, the floor's passes
    /// are the core's own first call: steps 1 to 10 from zero moments.
    pub fn new(n: usize, updates: u64) -> State {
        let mut p = vec![0f32; n * n];
        crate::initialize(&mut p, crate::SEED);
        let (mut m, mut v) = (vec![0f32; n * n], vec![0f32; n * n]);
        let contexts: Vec<u32> = (0..n as u32).collect();
        let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
        if updates > 0 {
            crate::train(&mut p, &mut m, &mut v, &contexts, &targets, 0, updates, &crate::BOB_V1_ADAMW,
                         Options::default()).expect("a valid state");
        }
        let mut e = vec![0f32; n * n];
        let (mut maxes, mut sums) = (vec![0f32; n], vec![0f32; n]);
        for r in 0..n {
            let span = r * n..(r + 1) * n;
            maxes[r] = row_max(&p[span.clone()]);
            sums[r] = exp_row_and_sum(&p[span.clone()], maxes[r], &mut e[span]);
        }
        State { n, step: updates, p, m, v, e, maxes, sums }
    }
}

/// Wall time of [`FLOOR_PASSES`] passes of `floor` over every row of
/// `state` (on copies), rows split evenly across `threads` scoped threads
/// started before the clock; the slowest thread's time. Divide by
/// `FLOOR_PASSES` for one update's worth.
pub fn time(kernel: Kernel, floor: Floor, state: &State, threads: usize) -> Duration {
    let n = state.n;
    let (mut p, mut m, mut v, mut e) = (state.p.clone(), state.m.clone(), state.v.clone(), state.e.clone());
    let threads = threads.clamp(1, n);
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|scope| {
        let (mut p, mut m, mut v, mut e) = (&mut p[..], &mut m[..], &mut v[..], &mut e[..]);
        let mut handles = Vec::new();
        let mut start = 0;
        for i in 0..threads {
            let end = n * (i + 1) / threads;
            let values = (end - start) * n;
            let (pp, rp) = std::mem::take(&mut p).split_at_mut(values);
            let (mp, rm) = std::mem::take(&mut m).split_at_mut(values);
            let (vp, rv) = std::mem::take(&mut v).split_at_mut(values);
            let (ep, re) = std::mem::take(&mut e).split_at_mut(values);
            (p, m, v, e) = (rp, rm, rv, re);
            let (barrier, rows) = (&barrier, start..end);
            handles.push(scope.spawn(move || {
                barrier.wait();
                let clock = Instant::now();
                run(kernel.resolve(), floor, state, rows, pp, mp, vp, ep);
                clock.elapsed()
            }));
            start = end;
        }
        handles.into_iter().map(|h| h.join().expect("floor thread")).max().unwrap_or_default()
    })
}

#[allow(clippy::too_many_arguments)]
fn run(kernel: Kernel, floor: Floor, state: &State, rows: Range<usize>, p: &mut [f32], m: &mut [f32],
       v: &mut [f32], e: &mut [f32]) {
    match kernel {
        // SAFETY: as in `run_rows`: `resolve` returned these kernels only
        // after detecting their features at run time.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { run_avx512(floor, state, rows, p, m, v, e) },
        // SAFETY: as above, AVX2 was detected.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { run_avx2(floor, state, rows, p, m, v, e) },
        _ => run_generic(floor, state, rows, p, m, v, e),
    }
}

macro_rules! floor_copy {
    ($name:ident, $features:literal) => {
        /// # Safety
        /// The CPU must support `$features`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        #[allow(clippy::too_many_arguments)]
        unsafe fn $name(floor: Floor, state: &State, rows: Range<usize>, p: &mut [f32], m: &mut [f32],
                        v: &mut [f32], e: &mut [f32]) {
            run_generic(floor, state, rows, p, m, v, e)
        }
    };
}
floor_copy!(run_avx2, "avx2");
floor_copy!(run_avx512, "avx2,avx512f,avx512vl");

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn run_generic(floor: Floor, state: &State, rows: Range<usize>, p: &mut [f32], m: &mut [f32], v: &mut [f32],
               e: &mut [f32]) {
    let n = state.n;
    let hyper = crate::BOB_V1_ADAMW;
    let plan = Plan {
        vocabulary: n,
        row_offsets: Vec::new(),
        slot_targets: Vec::new(),
        beta1: hyper.beta1,
        beta2: hyper.beta2,
        eps: hyper.eps,
        decay: hyper.decay(),
        omb1: 1.0 - hyper.beta1,
        omb2: 1.0 - hyper.beta2,
        pair_count: n as f32,
        pair_count_reciprocal: exact_reciprocal(n as f32),
    };
    let schedule: Vec<_> = (1..=FLOOR_PASSES as u64).map(|i| hyper.step_scalars(state.step + i)).collect();
    let rk = plan.pair_count_reciprocal.unwrap_or(1.0 / n as f32);
    let mut h = vec![0f32; n];
    // The kernel's blocking: a block of rows makes all its updates while
    // it sits in cache, so the floor does too (10 passes per block),
    // and reports one pass over every row.
    let local = |r: usize| r - rows.start;
    for block in rows.clone().step_by(ROWS_IN_FLIGHT) {
        let block_end = (block + ROWS_IN_FLIGHT).min(rows.end);
        for sched in &schedule {
            for r in block..block_end {
                // The next row in the block (the block's first after its
                // last): the exp reads another row's P, as in the kernel.
                let next = if r + 1 < block_end { r + 1 } else { block };
                h[(r * 7 + 3) % n] = 1.0;
                let row = LiveRow { c: 1.0, h: &h, s: state.sums[r] };
                let span = local(r) * n..(local(r) + 1) * n;
                let (mi, vi) = (&mut m[span.clone()], &mut v[span.clone()]);
                match floor {
                    Floor::FusedLoop if next != r => {
                        // As in the kernel, the exp goes to the next
                        // row's exp row, which its own pass divides next.
                        let (pi, next_p) = pair_of_rows_mut(p, n, local(r), local(next));
                        let (ei, next_e) = pair_of_rows_mut(e, n, local(r), local(next));
                        phase2_inner(&plan, sched, &row, pi, mi, vi, ei, next_p, state.maxes[next], next_e,
                                     |x| x * rk);
                    }
                    Floor::FusedLoop => {
                        let (pi, ei) = (&mut p[span.clone()], &mut e[span.clone()]);
                        phase2_inner(&plan, sched, &row, pi, mi, vi, ei, &[], 0.0, &mut [], |x| x * rk);
                    }
                    Floor::Dividers => {
                        let (pi, mi, vi, ei) = (&mut p[span.clone()], &mi[..n], &vi[..n], &e[span.clone()]);
                        let pi = &mut pi[..n];
                        for k in 0..n {
                            pi[k] = mi[k] / (vi[k].sqrt() / sched.bc2_sqrt + plan.eps) - ei[k] / row.s;
                        }
                    }
                }
                h[(r * 7 + 3) % n] = 0.0;
            }
        }
    }
}

/// Passes each block of rows makes (the core's updates per call).
pub const FLOOR_PASSES: usize = 10;
