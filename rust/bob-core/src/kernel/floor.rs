//! The floor microbenchmarks the benchmarks compare the core against: the
//! fused loop of one update and its dividers alone, timed the way the kernel
//! runs. Not API (`#[doc(hidden)]` in lib.rs), free to change with the kernel.

use super::plan::Plan;
use super::rows::{exp_row_and_sum, pair_of_rows_mut, phase2_inner, row_max, LiveRow, NextExp, RowPlanes, ROWS_IN_FLIGHT};
use super::Kernel;
use crate::{CoreError, Options, Planes};
use std::sync::{Condvar, Mutex};
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
    /// are the core's own first call: the steps of one invocation from zero moments.
    pub fn new(n: usize, updates: u64) -> Result<State, CoreError> {
        let mut p = vec![0f32; n * n];
        crate::initialize(&mut p, crate::SEED);
        let (mut m, mut v) = (vec![0f32; n * n], vec![0f32; n * n]);
        let contexts: Vec<u32> = (0..n as u32).collect();
        let targets: Vec<u32> = (0..n as u32).map(|k| (k * 7 + 3) % n as u32).collect();
        if updates > 0 {
            let planes = Planes::new(&mut p, &mut m, &mut v)?;
            crate::train(planes, &contexts, &targets, 0, updates, &crate::BOB_V1_ADAMW, Options::default())?;
        }
        let mut e = vec![0f32; n * n];
        let (mut maxes, mut sums) = (vec![0f32; n], vec![0f32; n]);
        for r in 0..n {
            let span = r * n..(r + 1) * n;
            maxes[r] = row_max(&p[span.clone()]);
            sums[r] = exp_row_and_sum(&p[span.clone()], maxes[r], &mut e[span]);
        }
        Ok(State { n, step: updates, p, m, v, e, maxes, sums })
    }
}

/// The threads' start: open (true) once every thread is started, or closed
/// (false) when one could not be, so that none waits for it for ever.
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    changed: Condvar,
}

impl Gate {
    fn set(&self, open: bool) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = Some(open);
        self.changed.notify_all();
    }

    fn wait(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let state = self.changed.wait_while(state, |s| s.is_none()).unwrap_or_else(|e| e.into_inner());
        state.unwrap_or(false)
    }
}

/// Wall time of [`FLOOR_PASSES`] passes of `floor` over every row of
/// `state` (on copies), rows split evenly across `threads` scoped threads
/// started before the clock; the slowest thread's time. Divide by
/// `FLOOR_PASSES` for one update's worth. A thread that cannot be started
/// (`ulimit -u`, `ulimit -v`) is its error, once the others have ended.
pub fn time(kernel: Kernel, floor: Floor, state: &State, threads: usize) -> std::io::Result<Duration> {
    let n = state.n;
    let (mut p, mut m, mut v, mut e) = (state.p.clone(), state.m.clone(), state.v.clone(), state.e.clone());
    let threads = threads.clamp(1, n);
    let gate = Gate::default();
    std::thread::scope(|scope| {
        let mut planes = Planes::new(&mut p, &mut m, &mut v).expect("the state's planes are a square table");
        let mut e = &mut e[..];
        let mut handles = Vec::new();
        let mut start = 0;
        for i in 0..threads {
            let end = n * (i + 1) / threads;
            let (share, rest) = planes.split_rows(end - start);
            let (share_e, rest_e) = std::mem::take(&mut e).split_at_mut((end - start) * n);
            (planes, e) = (rest, rest_e);
            let (gate, first_row) = (&gate, start);
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                if !gate.wait() {
                    return Duration::ZERO;
                }
                let clock = Instant::now();
                let rows = Rows { first_row, planes: share, e: share_e };
                run(kernel.resolve(), floor, state, rows);
                clock.elapsed()
            });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(error) => {
                    gate.set(false);
                    return Err(error);
                }
            }
            start = end;
        }
        gate.set(true);
        Ok(handles.into_iter().map(|h| h.join().expect("floor thread")).max().unwrap_or_default())
    })
}

/// One thread's rows of the floor's state: P, M, V and the exp rows.
struct Rows<'a> {
    first_row: usize,
    planes: Planes<'a>,
    e: &'a mut [f32],
}

fn run(kernel: Kernel, floor: Floor, state: &State, rows: Rows<'_>) {
    match kernel {
        // SAFETY: as in `Run::rows`: `resolve` returned these kernels only
        // after detecting their features at run time.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx512 => unsafe { run_avx512(floor, state, rows) },
        // SAFETY: as above, AVX2 was detected.
        #[cfg(target_arch = "x86_64")]
        Kernel::Avx2 => unsafe { run_avx2(floor, state, rows) },
        _ => run_generic(floor, state, rows),
    }
}

macro_rules! floor_copy {
    ($name:ident, $features:literal) => {
        /// # Safety
        /// The CPU must support `$features`.
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name(floor: Floor, state: &State, rows: Rows<'_>) {
            run_generic(floor, state, rows)
        }
    };
}
floor_copy!(run_avx2, "avx2");
floor_copy!(run_avx512, "avx2,avx512f,avx512vl");

#[inline(always)]
fn run_generic(floor: Floor, state: &State, rows: Rows<'_>) {
    let n = state.n;
    let Rows { first_row, mut planes, e } = rows;
    let rows = first_row..first_row + planes.rows();
    let (p, m, v) = planes.parts();
    let hyper = crate::BOB_V1_ADAMW;
    let plan = Plan::without_pairs(n, n, &hyper);
    let schedule: Vec<_> = (1..=FLOOR_PASSES as u64).map(|i| hyper.step_scalars(state.step + i)).collect();
    let rk = plan.pair_count_reciprocal.unwrap_or(1.0 / n as f32);
    let mut h = vec![0f32; n];
    // The kernel's blocking: a block of rows makes all its updates while
    // it sits in cache, so the floor does too (FLOOR_PASSES per block),
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
                        let planes = RowPlanes { p: pi, m: mi, v: vi, e: ei };
                        let next = NextExp { p: next_p, mx: state.maxes[next], e: next_e };
                        phase2_inner(&plan, sched, &row, planes, Some(next), |x| x * rk);
                    }
                    Floor::FusedLoop => {
                        let planes = RowPlanes { p: &mut p[span.clone()], m: mi, v: vi, e: &mut e[span.clone()] };
                        phase2_inner(&plan, sched, &row, planes, None, |x| x * rk);
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

/// Passes each block of rows makes (the updates of one invocation).
pub const FLOOR_PASSES: usize = crate::UPDATES_PER_INVOCATION as usize;
