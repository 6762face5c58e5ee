//! The fast path of §6.3. Rows are independent through a whole invocation:
//! row r's gradient reads only row r of P, and its AdamW step writes only row
//! r. So a block of rows runs all its updates while it sits in cache, blocks
//! are split across threads, and the element loops are written so the
//! compiler turns them into 8- or 16-lane vector code. None of that changes
//! the operations an element sees, nor their order: the bits are those of the
//! scalar contract.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::pinned::{exp_pinned, pinned_sum};
use crate::{AdamW, Options, Pairs, Planes, StepScalars};

/// Which compiled copy of the row loop runs. They are the same source code,
/// compiled for different instruction sets, and give the same bits: no
/// instruction set changes an IEEE operation's result, and Rust never fuses
/// a multiply and an add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// The best fast kernel this CPU supports. Never [`Kernel::Scalar`].
    Auto,
    /// The plain scalar transcription of §6 ([`crate::scalar`]): the slow
    /// reference the fast kernels are qualified against. Runs only when named.
    Scalar,
    /// Baseline instruction set of the build target (SSE2 on x86_64).
    Portable,
    /// AVX2 (x86_64), chosen at run time.
    Avx2,
    /// AVX-512 F + VL (x86_64), chosen at run time.
    Avx512,
}

impl Kernel {
    /// Every concrete kernel, the scalar reference first, then the fast
    /// copies from the narrowest instruction set to the widest.
    pub const ALL: [Kernel; 4] = [Kernel::Scalar, Kernel::Portable, Kernel::Avx2, Kernel::Avx512];

    /// The fast kernels: the per-instruction-set copies of the row loop that
    /// [`Kernel::Auto`] chooses among.
    pub const FAST: [Kernel; 3] = [Kernel::Portable, Kernel::Avx2, Kernel::Avx512];

    /// Whether this CPU can run `self` (the scalar, portable and auto kernels
    /// run everywhere).
    pub fn is_available(self) -> bool {
        match self {
            Kernel::Auto | Kernel::Scalar | Kernel::Portable => true,
            Kernel::Avx2 => cpu::avx2(),
            Kernel::Avx512 => cpu::avx512(),
        }
    }

    /// The concrete kernel `self` stands for on this CPU: itself if the CPU
    /// has it, else the best one below it. The scalar reference resolves only
    /// to itself, and nothing else resolves to it.
    pub fn resolve(self) -> Kernel {
        match self {
            Kernel::Scalar => Kernel::Scalar,
            Kernel::Auto | Kernel::Avx512 if cpu::avx512() => Kernel::Avx512,
            Kernel::Auto | Kernel::Avx512 | Kernel::Avx2 if cpu::avx2() => Kernel::Avx2,
            _ => Kernel::Portable,
        }
    }

    /// The kernel's name, as the binding and the benchmarks spell it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Auto => "auto",
            Kernel::Scalar => "scalar",
            Kernel::Portable => "portable",
            Kernel::Avx2 => "avx2",
            Kernel::Avx512 => "avx512",
        }
    }

    /// The kernel named `name` (see [`Kernel::name`]), if there is one.
    pub fn from_name(name: &str) -> Option<Kernel> {
        [Kernel::Auto, Kernel::Scalar, Kernel::Portable, Kernel::Avx2, Kernel::Avx512]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

#[cfg(target_arch = "x86_64")]
mod cpu {
    pub fn avx2() -> bool {
        std::is_x86_feature_detected!("avx2")
    }
    pub fn avx512() -> bool {
        std::is_x86_feature_detected!("avx512f") && std::is_x86_feature_detected!("avx512vl") && avx2()
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod cpu {
    pub fn avx2() -> bool {
        false
    }
    pub fn avx512() -> bool {
        false
    }
}

/// What every row needs, computed once per call.
struct Plan {
    vocabulary: usize,
    /// Row r's pairs are slots `row_offsets[r]..row_offsets[r + 1]`.
    row_offsets: Vec<usize>,
    slot_targets: Vec<u32>,
    /// Pair k's slot: the losses are summed in pair order.
    slot_of_pair: Vec<usize>,
    beta1: f32,
    beta2: f32,
    eps: f32,
    decay: f32,
    omb1: f32,
    omb2: f32,
    /// f32(K), and 1/f32(K) when dividing by f32(K) equals multiplying by it
    /// bit for bit (K a power of two: both round the same real number).
    pair_count: f32,
    pair_count_reciprocal: Option<f32>,
}

impl Plan {
    /// The pairs sorted into slots by row (a counting sort, stable: a row's
    /// slots keep pair order), and the hyperparameters' per-call constants.
    fn new(vocabulary: usize, pairs: Pairs<'_>, hyper: &AdamW) -> Plan {
        let mut row_offsets = vec![0usize; vocabulary + 1];
        for (c, _) in pairs.iter() {
            row_offsets[c as usize + 1] += 1;
        }
        for r in 0..vocabulary {
            row_offsets[r + 1] += row_offsets[r];
        }
        let mut fill = row_offsets.clone();
        let mut slot_of_pair = vec![0usize; pairs.len()];
        let mut slot_targets = vec![0u32; pairs.len()];
        for (i, (c, t)) in pairs.iter().enumerate() {
            let slot = fill[c as usize];
            fill[c as usize] += 1;
            slot_of_pair[i] = slot;
            slot_targets[slot] = t;
        }
        Plan { row_offsets, slot_targets, slot_of_pair, ..Plan::without_pairs(vocabulary, pairs.len(), hyper) }
    }

    /// The per-call constants alone (no slots), for `pair_count` pairs.
    fn without_pairs(vocabulary: usize, pair_count: usize, hyper: &AdamW) -> Plan {
        let kf = pair_count as f32;
        Plan {
            vocabulary,
            row_offsets: Vec::new(),
            slot_targets: Vec::new(),
            slot_of_pair: Vec::new(),
            beta1: hyper.beta1,
            beta2: hyper.beta2,
            eps: hyper.eps,
            decay: hyper.decay(),
            omb1: 1.0f32 - hyper.beta1,
            omb2: 1.0f32 - hyper.beta2,
            pair_count: kf,
            pair_count_reciprocal: exact_reciprocal(kf),
        }
    }

    /// The loss before each of a block's `updates` updates, from
    /// `logp[slot * updates + t]`: summed in pair order, whatever order the
    /// rows ran in.
    fn losses<'a>(&'a self, logp: &'a [f64], updates: usize) -> impl Iterator<Item = f64> + 'a {
        let pair_count = self.slot_of_pair.len() as f64;
        (0..updates).map(move |t| {
            let total: f64 = self.slot_of_pair.iter().map(|&slot| logp[slot * updates + t]).sum();
            -total / pair_count
        })
    }
}

/// Below this much work (values x updates), threads cost more than they save.
const MIN_PARALLEL_WORK: usize = 1 << 17;

/// Updates a row makes before the next row runs. Bounds the loss scratch
/// (pairs x block) whatever the update count; any block size gives the same
/// bits.
const UPDATE_BLOCK: u64 = 16;

/// One block of updates to run over some rows: the kernel, the call's plan
/// and the block's per-update scalars.
struct Run<'a> {
    kernel: Kernel,
    plan: &'a Plan,
    schedule: &'a [StepScalars],
}

/// A run of rows and the loss scratch of their slots, for one thread.
struct Share<'a> {
    first_row: usize,
    planes: Planes<'a>,
    logp: &'a mut [f64],
}

pub(crate) fn train_checked(
    mut planes: Planes<'_>,
    pairs: Pairs<'_>,
    step: u64,
    updates: u64,
    hyper: &AdamW,
    options: Options,
) -> Vec<f64> {
    let vocabulary = planes.vocabulary();
    let plan = Plan::new(vocabulary, pairs, hyper);
    let kernel = options.kernel.resolve();
    let mut losses = Vec::with_capacity(updates.min(1 << 20) as usize);
    let mut logp = Vec::new();
    let mut done = 0u64;
    while done < updates {
        let block = (updates - done).min(UPDATE_BLOCK) as usize;
        let schedule: Vec<StepScalars> =
            (1..=block as u64).map(|i| hyper.step_scalars(step + done + i)).collect();
        // logp[slot * block + t]: log prob of that pair's target before update t.
        logp.clear();
        logp.resize(pairs.len() * block, 0f64);
        let run = Run { kernel, plan: &plan, schedule: &schedule };
        let threads = thread_count(options.threads, vocabulary, block);
        // A 1-thread call starts no pool (bob-run makes one call a process).
        match if threads > 1 { pool() } else { None } {
            Some(pool) => {
                let shares = cut_shares(&run, threads, planes.reborrow(), &mut logp);
                run_shares(pool, threads, &run, shares);
            }
            None => run.rows(Share { first_row: 0, planes: planes.reborrow(), logp: &mut logp }),
        }
        losses.extend(plan.losses(&logp, block));
        done += block as u64;
    }
    losses
}

/// The rows cut into shares of a few blocks, at least 16 per thread (the
/// last share decides how long the other threads idle), each with the loss
/// scratch of its slots.
fn cut_shares<'a>(run: &Run<'_>, threads: usize, mut planes: Planes<'a>, mut logp: &'a mut [f64]) -> Vec<Share<'a>> {
    let (vocabulary, updates) = (planes.vocabulary(), run.schedule.len());
    let share_rows = (block_rows(vocabulary) * 2).max(vocabulary.div_ceil(threads * 16));
    let mut shares = Vec::new();
    let mut start = 0usize;
    while start < vocabulary {
        let end = (start + share_rows).min(vocabulary);
        let slots = (run.plan.row_offsets[end] - run.plan.row_offsets[start]) * updates;
        let (share, rest) = planes.split_rows(end - start);
        let (share_logp, rest_logp) = std::mem::take(&mut logp).split_at_mut(slots);
        shares.push(Share { first_row: start, planes: share, logp: share_logp });
        (planes, logp) = (rest, rest_logp);
        start = end;
    }
    shares
}

/// The calling thread and up to `threads - 1` pool threads take the shares
/// from a counter until none is left: a pool thread that comes late leaves
/// its shares to the others. Each share runs all its updates; nothing
/// synchronises in between, and which thread runs a share changes no bit.
fn run_shares(pool: &rayon::ThreadPool, threads: usize, run: &Run<'_>, shares: Vec<Share<'_>>) {
    let helpers = threads.min(shares.len()) - 1;
    let shares: Vec<Mutex<Option<Share<'_>>>> = shares.into_iter().map(|share| Mutex::new(Some(share))).collect();
    let next_share = AtomicUsize::new(0);
    let helpers_working = AtomicUsize::new(0);
    let work = || {
        while let Some(share) = shares.get(next_share.fetch_add(1, Ordering::Relaxed)) {
            // Each share is taken exactly once (the counter hands out each
            // index once), so its lock is never contended.
            let taken = share.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(share) = taken {
                run.rows(share);
            }
        }
    };
    pool.in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| {
                helpers_working.fetch_add(1, Ordering::AcqRel);
                work();
                helpers_working.fetch_sub(1, Ordering::AcqRel);
            });
        }
        work();
        wait_awake_for_helpers(&helpers_working);
    });
}

/// How long the calling thread, out of shares, stays awake for pool threads
/// still running theirs. It is not one of rayon's threads, so at the end of
/// the scope it sleeps until they are done, and waking it again costs about
/// 25 µs on a 2-vCPU VM: more than a tenth of a whole 2-thread call at
/// vocabulary 256 on the AVX-512 host, whose shares take about 45 µs each.
/// Longer shares (large vocabularies, slower hosts) outlast the spin and it
/// sleeps as before.
const AWAKE_FOR_HELPERS: std::time::Duration = std::time::Duration::from_micros(200);

/// Spins while a pool thread is inside a share, for at most
/// [`AWAKE_FOR_HELPERS`]. A pool thread that has not started yet (not
/// counted) is not waited for awake: it may be queued behind this very
/// thread on the same CPU.
fn wait_awake_for_helpers(helpers_working: &AtomicUsize) {
    let start = std::time::Instant::now();
    while helpers_working.load(Ordering::Acquire) > 0 && start.elapsed() < AWAKE_FOR_HELPERS {
        std::hint::spin_loop();
    }
}

/// The core's own thread pool (a rayon pool of its own), started on first use and
/// kept for the process (`None` if not one thread could be started: calls
/// then run on the caller's thread, with the same bits). Not rayon's global
/// pool, which takes its size from `RAYON_NUM_THREADS` unchecked (100000
/// kept `bob.invoke` starting threads for minutes) and which other code in a
/// Rust program shares. Its size is the number of CPUs this process may
/// use, or `RAYON_NUM_THREADS` when that is a smaller positive number. It is
/// first used inside `train`'s default floating-point environment, which its
/// threads inherit, and it runs nothing but the core's shares.
///
/// A child `fork`ed from a process whose pool had started has the pool's
/// memory but none of its threads (a `ProcessPoolExecutor` worker): work
/// sent there would wait for ever, so in a process other than the one that
/// started the pool there is none, and calls run on the caller's thread.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<(u32, Option<rayon::ThreadPool>)> = OnceLock::new();
    let (started_in, pool) = POOL.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let asked = std::env::var("RAYON_NUM_THREADS").ok().and_then(|s| s.trim().parse::<usize>().ok());
        let size = asked.filter(|&n| n > 0).map_or(cpus, |n| n.min(cpus));
        let pool =
            rayon::ThreadPoolBuilder::new().num_threads(size).thread_name(|i| format!("bob-core-{i}")).build().ok();
        (std::process::id(), pool)
    });
    pool.as_ref().filter(|_| *started_in == std::process::id())
}

fn exact_reciprocal(k: f32) -> Option<f32> {
    let bits = k.to_bits();
    let is_power_of_two = k.is_normal() && k > 0.0 && bits & 0x007f_ffff == 0;
    let r = 1.0f32 / k;
    (is_power_of_two && r.is_normal() && r * k == 1.0).then_some(r)
}

/// Threads a call uses: the caller and pool threads (as many as asked, or
/// with 0 one for small work, else the caller and all the pool's).
fn thread_count(requested: usize, vocabulary: usize, updates: usize) -> usize {
    let wanted = if requested == 0 {
        let work = vocabulary.saturating_mul(vocabulary).saturating_mul(updates);
        if work < MIN_PARALLEL_WORK {
            1
        } else {
            pool().map_or(1, rayon::ThreadPool::current_num_threads)
        }
    } else {
        requested
    };
    wanted.clamp(1, vocabulary)
}

impl Run<'_> {
    /// The share's rows through every update of the schedule, in the
    /// kernel's compiled copy of the row loop.
    fn rows(&self, share: Share<'_>) {
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
const ROWS_IN_FLIGHT: usize = 16;

/// Rows per block at vocabulary `n`: [`ROWS_IN_FLIGHT`], fewer when a block's
/// streams (P, M, V, the exp and h rows: 20 bytes per value) would outgrow
/// this budget, half this machine's 1 MiB L2 (per core), so that a block still
/// makes its updates in cache at large vocabularies. Any block size gives
/// the same bits.
fn block_rows(n: usize) -> usize {
    const BLOCK_BUDGET: usize = 512 * 1024;
    (BLOCK_BUDGET / (20 * n.max(1))).clamp(MIN_ROWS_IN_FLIGHT, ROWS_IN_FLIGHT)
}
const MIN_ROWS_IN_FLIGHT: usize = 4;

/// Runs `rows` through every update of `schedule`, a block of rows at a time.
///
/// Within a block and an update, the live rows form a chain in which one
/// row's gradient and AdamW step (bound by the dividers: three divisions and
/// a square root per value) share a loop with a later row's exp (bound by
/// the multipliers and adders), so both kinds of unit work at once. Rows are
/// independent within an update, and each value still sees exactly its own
/// operations in the contract's order.
#[inline(always)]
fn run_rows_generic(plan: &Plan, schedule: &[StepScalars], first_row: usize, planes: Planes<'_>, logp: &mut [f64]) {
    let n = plan.vocabulary;
    let updates = schedule.len();
    let first_slot = plan.row_offsets[first_row];
    let zero_g = vec![0f32; n];
    let rows_in_flight = block_rows(n);
    let mut e = vec![0f32; n * rows_in_flight];
    let mut h = vec![0f32; n * rows_in_flight];
    let mut hcount = vec![0usize; n];
    let mut live = Vec::with_capacity(rows_in_flight);
    let mut sums = [0f32; ROWS_IN_FLIGHT];

    for (b, mut block) in planes.chunks_of_rows(rows_in_flight).enumerate() {
        let block_first_row = first_row + b * rows_in_flight;
        live.clear();
        for i in 0..block.rows() {
            let r = block_first_row + i;
            let slots = plan.row_offsets[r]..plan.row_offsets[r + 1];
            if slots.is_empty() {
                // c[r] = 0: g is +0.0, but AdamW still decays and moves the row.
                let (pr, mr, vr) = block.row(i);
                for sched in schedule {
                    adamw_row(plan, sched, pr, mr, vr, &zero_g);
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
        if live.is_empty() {
            continue;
        }
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
                    let (ei, ej) = pair_of_rows_mut(&mut e, n, i, j);
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
}

/// Rows `a` and `b` (distinct) of a buffer of `n`-value rows, both mutable.
fn pair_of_rows_mut(buffer: &mut [f32], n: usize, a: usize, b: usize) -> (&mut [f32], &mut [f32]) {
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
struct LiveRow<'a> {
    c: f32,
    h: &'a [f32],
    s: f32,
}

/// One live row's P, M and V, and its exp row (which phase 2 turns into
/// its prob row).
struct RowPlanes<'r> {
    p: &'r mut [f32],
    m: &'r mut [f32],
    v: &'r mut [f32],
    e: &'r mut [f32],
}

/// Phase 1's exp of another row, run in phase 2's loop:
/// `e[j] = exp_pinned(p[j] - mx)`.
struct NextExp<'r> {
    p: &'r [f32],
    mx: f32,
    e: &'r mut [f32],
}

/// Phase 2 of one row (prob, gradient, AdamW; its exp row becomes its prob
/// row) and, in the same loop, phase 1's exp of the `next` row if any.
#[inline(always)]
fn phase2_with_exp(plan: &Plan, sched: &StepScalars, row: &LiveRow<'_>, planes: RowPlanes<'_>, next: Option<NextExp<'_>>) {
    match plan.pair_count_reciprocal {
        Some(rk) => phase2_inner(plan, sched, row, planes, next, |x| x * rk),
        None => {
            let k = plan.pair_count;
            phase2_inner(plan, sched, row, planes, next, |x| x / k)
        }
    }
}

#[inline(always)]
fn phase2_inner(
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
fn row_max(p: &[f32]) -> f32 {
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
fn exp_row_and_sum(p: &[f32], mx: f32, e: &mut [f32]) -> f32 {
    let e = &mut e[..p.len()];
    for (ej, &pj) in e.iter_mut().zip(p) {
        *ej = exp_pinned(pj - mx);
    }
    pinned_sum(e)
}

#[inline(always)]
fn adamw_row(plan: &Plan, sched: &StepScalars, p: &mut [f32], m: &mut [f32], v: &mut [f32], g: &[f32]) {
    let n = p.len();
    let (m, v, g) = (&mut m[..n], &mut v[..n], &g[..n]);
    for j in 0..n {
        adamw_element(plan, sched, &mut p[j], &mut m[j], &mut v[j], g[j]);
    }
}

#[inline(always)]
fn adamw_element(plan: &Plan, sched: &StepScalars, p: &mut f32, m: &mut f32, v: &mut f32, g: f32) {
    let decayed = *p * plan.decay;
    let m_new = plan.beta1 * *m + plan.omb1 * g;
    let v_new = plan.beta2 * *v + plan.omb2 * (g * g);
    *p = decayed - sched.step_size * (m_new / (v_new.sqrt() / sched.bc2_sqrt + plan.eps));
    *m = m_new;
    *v = v_new;
}

/// The floor microbenchmarks the benchmarks compare the core against. Not
/// API: `#[doc(hidden)]`, and free to change with the kernel.
#[doc(hidden)]
pub mod floor;
