//! bob v1's FP32 training math (`shared/design/bob-v1.md` §6), with no Python
//! in it. The PyO3 binding (`rust/bob-py`) is a thin layer over this crate.
//!
//! Exactness rules this crate keeps: every f32 step is one correctly rounded
//! operation in the contract's order; no FMA (Rust never contracts `a * b + c`,
//! even where the target has FMA); no reassociation (row sums go through the
//! pinned eight-lane order); no library `exp` or `pow`. The fast kernels only
//! change *which elements run side by side*, never the operations an element
//! sees, so every thread count and every instruction set gives the same bits
//! (on a state holding NaNs, the same bits but the NaNs' payloads:
//! `formats/DECISIONS.md` D16; bob refuses such a state before training).
//! The entry points compute in the IEEE default floating-point environment
//! whatever the calling thread's is (see `environment.rs`).

#![deny(missing_docs)]

mod environment;
mod error;
mod kernel;
pub mod pinned;
mod planes;
pub mod scalar;

pub use environment::in_default_environment;
pub use error::{try_vec, CoreError};
pub use kernel::Kernel;
#[doc(hidden)]
pub use kernel::floor;
pub use pinned::{exp_pinned, fnv1a64, initialize, pinned_sum, powi};
pub use planes::Planes;

/// bob's vocabulary: one row and one column per byte value.
pub const VOCABULARY: usize = 256;
/// Updates one invocation makes (§1): what `bob-run` asks [`train`] for.
pub const UPDATES_PER_INVOCATION: u64 = 10;
/// The prediction input word for a prompt with no last byte (§3, §4).
pub const EMPTY_PROMPT: u32 = u32::MAX;
/// The initialization identity (§2), hashed into the seed of [`initialize`] (§6.1).
pub const SEED: &[u8] = b"bob-seed-v1";

/// AdamW's f32 hyperparameters (§1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamW {
    /// Learning rate.
    pub lr: f32,
    /// First-moment decay β1.
    pub beta1: f32,
    /// Second-moment decay β2.
    pub beta2: f32,
    /// ε, added to the bias-corrected root of the second moment.
    pub eps: f32,
    /// Decoupled weight decay, applied as one factor `1 - lr * wd`.
    pub weight_decay: f32,
}

/// The learner bob v1 names in its checkpoints.
pub const BOB_V1_ADAMW: AdamW = AdamW {
    lr: 0.05,
    beta1: 0.9,
    beta2: 0.999,
    eps: 1e-8,
    weight_decay: 0.01,
};

/// The per-update scalars of §6.3 for update number `t = step + 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepScalars {
    /// `lr / bc1`, in f32.
    pub step_size: f32,
    /// `sqrt(bc2)`, in f32.
    pub bc2_sqrt: f32,
}

impl AdamW {
    /// `step_size` and `bc2_sqrt` for update number `t` (1-based), with
    /// `bc1`, `bc2` computed in f64 through the contract's [`powi`] and
    /// rounded once to f32.
    pub fn step_scalars(&self, t: u64) -> StepScalars {
        // f64 arithmetic, one rounding to f32 (`as` rounds to nearest even).
        let bc1 = (1.0f64 - powi(f64::from(self.beta1), t)) as f32;
        let bc2 = (1.0f64 - powi(f64::from(self.beta2), t)) as f32;
        StepScalars { step_size: self.lr / bc1, bc2_sqrt: bc2.sqrt() }
    }

    /// The weight-decay factor `f32(1 - f64(lr) * f64(wd))`: one rounding.
    pub fn decay(&self) -> f32 {
        (1.0f64 - f64::from(self.lr) * f64::from(self.weight_decay)) as f32
    }
}

/// How to run [`train`]: which kernel, how many threads (0 = what the
/// machine offers). Neither changes a bit of the result.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Which compiled copy of the row loop runs ([`Kernel::Auto`]: the best
    /// fast one; [`Kernel::Scalar`]: the slow reference, only when named).
    pub kernel: Kernel,
    /// Worker threads; 0 lets the core decide (one for small work, else its
    /// pool's size: the CPUs this process may use, or `RAYON_NUM_THREADS`
    /// when that is a smaller positive number). The scalar reference
    /// ignores it and runs on the caller's thread.
    pub threads: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options { kernel: Kernel::Auto, threads: 0 }
    }
}

/// The number of rows of a square table of `len` values.
pub fn vocabulary_of(len: usize) -> Result<usize, CoreError> {
    // An integer root: exact for every len, and no float operation that
    // would raise an exception flag in the caller's environment (it runs
    // before the entry points switch to the default one).
    let rows = len.isqrt();
    if len > 0 && rows * rows == len {
        Ok(rows)
    } else {
        Err(CoreError::NotSquare { len })
    }
}

/// Make `updates` AdamW updates (§6.3) in place on the planes, where `step`
/// updates were completed before. The pairs are `(contexts[k], targets[k])`.
/// Returns the loss before each update (§6.4), in f64.
pub fn train(
    mut planes: Planes<'_>,
    contexts: &[u32],
    targets: &[u32],
    step: u64,
    updates: u64,
    hyper: &AdamW,
    options: Options,
) -> Result<Vec<f64>, CoreError> {
    let vocabulary = planes.vocabulary();
    if contexts.len() != targets.len() {
        return Err(CoreError::PairCountMismatch { contexts: contexts.len(), targets: targets.len() });
    }
    if contexts.is_empty() {
        return Err(CoreError::NoPairs);
    }
    for (index, (&c, &t)) in contexts.iter().zip(targets).enumerate() {
        if c as usize >= vocabulary {
            return Err(CoreError::ContextOutOfRange { index, value: c, vocabulary });
        }
        if t as usize >= vocabulary {
            return Err(CoreError::TargetOutOfRange { index, value: t, vocabulary });
        }
    }
    if step.checked_add(updates).is_none() {
        return Err(CoreError::StepOverflow { step, updates });
    }
    // Each pair's share of the plan and its losses (an f64 per update of a block), and for the scalar
    // reference its per-update tables (a count, a gradient and a probability per value).
    let per_pair = SCRATCH_PER_PAIR.saturating_add(8 * updates.min(kernel::UPDATE_BLOCK) as usize);
    let per_value = if options.kernel == Kernel::Scalar { SCALAR_SCRATCH_PER_VALUE } else { 0 };
    let headroom = TRAIN_HEADROOM
        .saturating_add(contexts.len().saturating_mul(per_pair))
        .saturating_add(vocabulary.saturating_mul(vocabulary).saturating_mul(per_value));
    if !address_space_for(headroom) {
        return Err(CoreError::AddressSpace { bytes: headroom });
    }
    let pairs = Pairs { contexts, targets };
    Ok(environment::in_default_environment(|| {
        if options.kernel == Kernel::Scalar {
            scalar::train_checked(planes.reborrow(), pairs, step, updates, hyper)
        } else {
            kernel::train_checked(planes.reborrow(), pairs, step, updates, hyper, options)
        }
    }))
}

/// Address space a call of [`train`] finds free before it starts, besides its scratch per pair and per
/// value (the rows in flight take less). The pool's threads need none of it: a pool that cannot start
/// leaves the call on the caller's thread.
const TRAIN_HEADROOM: usize = 1 << 20;
/// Each pair's share of the plan (its slot, its target; the scalar reference's copy of the pair), with
/// room to spare; the losses' table adds 8 bytes per update of a block.
const SCRATCH_PER_PAIR: usize = 64;
/// The scalar reference's tables, made again at each update: a u64 count, an f32 gradient and an f32
/// probability per value.
const SCALAR_SCRATCH_PER_VALUE: usize = 16;

/// Whether `bytes` of address space can still be mapped. Under `ulimit -v` an allocation of the
/// kernels would otherwise fail inside Rust, which aborts the process: the caller gets
/// [`CoreError::AddressSpace`] instead, nothing changed.
#[cfg(unix)]
fn address_space_for(bytes: usize) -> bool {
    let (protection, flags) = (libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE);
    // SAFETY: a new private mapping that nothing reads or writes, unmapped at once.
    unsafe {
        let at = libc::mmap(std::ptr::null_mut(), bytes, protection, flags, -1, 0);
        if at == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(at, bytes);
    }
    true
}

#[cfg(not(unix))]
fn address_space_for(_bytes: usize) -> bool {
    true
}

/// The pairs of a call, checked: as many contexts as targets, at least one,
/// each inside the table.
#[derive(Clone, Copy)]
pub(crate) struct Pairs<'a> {
    contexts: &'a [u32],
    targets: &'a [u32],
}

impl Pairs<'_> {
    pub(crate) fn len(&self) -> usize {
        self.contexts.len()
    }

    /// `(context, target)` in pair order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.contexts.iter().copied().zip(self.targets.iter().copied())
    }
}

/// The predictions of §4: per prompt word, `(token, validity)`.
pub fn predict(p: &[f32], prompt_words: &[u32]) -> Result<Vec<(u32, u32)>, CoreError> {
    let vocabulary = vocabulary_of(p.len())?;
    environment::in_default_environment(|| predict_checked(p, vocabulary, prompt_words))
}

fn predict_checked(p: &[f32], vocabulary: usize, prompt_words: &[u32]) -> Result<Vec<(u32, u32)>, CoreError> {
    let mut out = try_vec(prompt_words.len(), "the predictions")?;
    for (index, &word) in prompt_words.iter().enumerate() {
        if word == EMPTY_PROMPT {
            out.push((0, 0));
            continue;
        }
        if word as usize >= vocabulary {
            return Err(CoreError::PromptOutOfRange { index, value: word, vocabulary });
        }
        let row = &p[word as usize * vocabulary..(word as usize + 1) * vocabulary];
        if !row.iter().all(|x| x.is_finite()) {
            out.push((0, 0));
            continue;
        }
        let mut best = 0usize;
        for (j, &x) in row.iter().enumerate() {
            // Strictly greater: the lowest index wins among equal maxima.
            if x > row[best] {
                best = j;
            }
        }
        out.push((best as u32, 1));
    }
    Ok(out)
}

/// Why a state may not be resumed (§5): the first problem found, one rule at
/// a time (as Python checks them), each across P, M, V in order and each
/// plane by rising index.
#[derive(Clone, Debug, PartialEq)]
pub enum StateProblem {
    /// A plane holds NaN or an infinity at `index`.
    NonFinite {
        /// "P", "M" or "V".
        plane: &'static str,
        /// Position in the plane, in parameter order.
        index: usize,
        /// The offending value.
        value: f32,
    },
    /// V holds a negative value at `index` (-0.0 is not negative).
    NegativeSecondMoment {
        /// Position in V, in parameter order.
        index: usize,
        /// The offending (negative) value.
        value: f32,
    },
    /// The step is 0 but M or V holds a non-zero value at `index`.
    MomentsAtStepZero {
        /// "M" or "V".
        plane: &'static str,
        /// Position in the plane, in parameter order.
        index: usize,
        /// The offending (non-zero) value.
        value: f32,
    },
    /// `step + updates` does not fit in a u64.
    NoRoomForUpdates {
        /// Updates completed so far.
        step: u64,
        /// Updates asked for.
        updates: u64,
    },
}

/// The resume checks of §5 on a state the caller holds: every value finite,
/// no negative V, M and V all zero at step 0, room for `updates` more.
pub fn resume_state_problem(p: &[f32], m: &[f32], v: &[f32], step: u64, updates: u64) -> Option<StateProblem> {
    environment::in_default_environment(|| state_problem(p, m, v, step, updates))
}

/// [`resume_state_problem`] of P, M, V, made on a copy of them written into
/// `into` (P, then M, then V): what a caller needs that must neither train
/// its own state nor train a state it would refuse. The copy is bit for bit
/// the planes, so the problem (plane, index) is theirs. Refuses planes of
/// unequal lengths, and an `into` of another length than the three.
pub fn copy_resumable_state(
    p: &[f32],
    m: &[f32],
    v: &[f32],
    into: &mut [f32],
    step: u64,
    updates: u64,
) -> Result<Option<StateProblem>, CoreError> {
    let n = p.len();
    for (plane, values) in [("M", m), ("V", v)] {
        if values.len() != n {
            return Err(CoreError::PlaneLengthMismatch { plane, expected: n, actual: values.len() });
        }
    }
    if into.len() != 3 * n {
        return Err(CoreError::PlaneLengthMismatch { plane: "into", expected: 3 * n, actual: into.len() });
    }
    let (to_p, rest) = into.split_at_mut(n);
    let (to_m, to_v) = rest.split_at_mut(n);
    to_p.copy_from_slice(p);
    to_m.copy_from_slice(m);
    to_v.copy_from_slice(v);
    Ok(resume_state_problem(to_p, to_m, to_v, step, updates))
}

fn state_problem(p: &[f32], m: &[f32], v: &[f32], step: u64, updates: u64) -> Option<StateProblem> {
    for (plane, values) in [("P", p), ("M", m), ("V", v)] {
        if let Some(index) = first_where(values, |x| !x.is_finite()) {
            return Some(StateProblem::NonFinite { plane, index, value: values[index] });
        }
    }
    if let Some(index) = first_where(v, |x| x < 0.0) {
        return Some(StateProblem::NegativeSecondMoment { index, value: v[index] });
    }
    if step == 0 {
        for (plane, values) in [("M", m), ("V", v)] {
            if let Some(index) = first_where(values, |x| x != 0.0) {
                return Some(StateProblem::MomentsAtStepZero { plane, index, value: values[index] });
            }
        }
    }
    if step.checked_add(updates).is_none() {
        return Some(StateProblem::NoRoomForUpdates { step, updates });
    }
    None
}

/// Values screened at a time by [`first_where`].
const SCREEN_BLOCK: usize = 64;

/// The index of the first value for which `bad` holds. Each block of
/// [`SCREEN_BLOCK`] values is first screened with a branch-free OR of
/// `bad` over the block, which the compiler vectorizes (a plain
/// `position` stops at each value and does not): a good state costs one
/// vector pass, a quarter of the scalar search's time (47 against 200 µs
/// for 786 kB through the binding, host B). Only the block that
/// holds a bad value is searched value by value, so the index is the
/// first, exactly as `position` gives it.
fn first_where(values: &[f32], bad: impl Fn(f32) -> bool + Copy) -> Option<usize> {
    values.chunks(SCREEN_BLOCK).enumerate().find_map(|(block, chunk)| {
        if chunk.iter().fold(false, |any, &x| any | bad(x)) {
            chunk.iter().position(|&x| bad(x)).map(|k| block * SCREEN_BLOCK + k)
        } else {
            None
        }
    })
}
