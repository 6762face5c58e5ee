//! The fast path of §6.3. Rows are independent through a whole invocation:
//! row r's gradient reads only row r of P, and its AdamW step writes only row
//! r. So a block of rows runs all its updates while it sits in cache, blocks
//! are split across threads, and the element loops are written so the
//! compiler turns them into 8- or 16-lane vector code. None of that changes
//! the operations an element sees, nor their order: the bits are those of the
//! scalar contract.

use crate::{AdamW, Options, Pairs, Planes, StepScalars};

mod plan;
mod rows;
mod threads;

use plan::Plan;
use threads::{cut_shares, pool, run_shares, thread_count};


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

/// Updates a row makes before the next row runs. Bounds the loss scratch
/// (pairs x block) whatever the update count; any block size gives the same
/// bits.
pub(crate) const UPDATE_BLOCK: u64 = 16;

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


/// The floor microbenchmarks the benchmarks compare the core against. Not
/// API: `#[doc(hidden)]`, and free to change with the kernel.
#[doc(hidden)]
pub mod floor;
