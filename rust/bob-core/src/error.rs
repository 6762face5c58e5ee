//! The one error type of the core: each variant names exactly what was refused.

use std::fmt;

/// Why the core refused its arguments. The core checks everything before it
/// touches a value, so a refusal leaves the caller's planes unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreError {
    /// A plane's length differs from P's (`plane` is "M" or "V").
    PlaneLengthMismatch {
        /// "M" or "V".
        plane: &'static str,
        /// P's length.
        expected: usize,
        /// The plane's length.
        actual: usize,
    },
    /// P's length is not `rows * rows` for a whole number of rows, or is zero.
    NotSquare {
        /// P's length.
        len: usize,
    },
    /// The contexts and targets arrays have different lengths.
    PairCountMismatch {
        /// Number of contexts.
        contexts: usize,
        /// Number of targets.
        targets: usize,
    },
    /// Training needs at least one pair: the loss divides by the pair count.
    NoPairs,
    /// A pair's context is not a row of the table.
    ContextOutOfRange {
        /// The pair's position.
        index: usize,
        /// The context given.
        value: u32,
        /// The number of rows.
        vocabulary: usize,
    },
    /// A pair's target is not a column of the table.
    TargetOutOfRange {
        /// The pair's position.
        index: usize,
        /// The target given.
        value: u32,
        /// The number of columns.
        vocabulary: usize,
    },
    /// A prompt word is neither a row of the table nor the empty-prompt word.
    PromptOutOfRange {
        /// The prompt's position.
        index: usize,
        /// The word given.
        value: u32,
        /// The number of rows.
        vocabulary: usize,
    },
    /// `step + updates` does not fit in a u64.
    StepOverflow {
        /// Updates completed so far.
        step: u64,
        /// Updates asked for.
        updates: u64,
    },
    /// The memory for `what`, `count` values, could not be allocated (nothing was changed).
    OutOfMemory {
        /// What the memory was for ("P", "the predictions" ...).
        what: &'static str,
        /// How many values.
        count: usize,
    },
    /// Less address space is left (`ulimit -v`) than a call of `train` finds free before it starts.
    AddressSpace {
        /// The bytes it looked for.
        bytes: usize,
    },
}

/// An empty `Vec` with room for exactly `count` values, or [`CoreError::OutOfMemory`]
/// naming `what`: Rust's own allocation failure would abort the caller's process.
pub fn try_vec<T>(count: usize, what: &'static str) -> Result<Vec<T>, CoreError> {
    let mut values = Vec::new();
    values.try_reserve_exact(count).map_err(|_| CoreError::OutOfMemory { what, count })?;
    Ok(values)
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::PlaneLengthMismatch { plane, expected, actual } => write!(
                f,
                "plane {plane} holds {actual} values, expected {expected} (the length of P)"
            ),
            CoreError::NotSquare { len } => write!(
                f,
                "P holds {len} values, which is not rows x rows for a whole number of rows >= 1"
            ),
            CoreError::PairCountMismatch { contexts, targets } => write!(
                f,
                "contexts holds {contexts} pairs but targets holds {targets}"
            ),
            CoreError::NoPairs => write!(f, "there are no pairs to train on (pair count K = 0)"),
            CoreError::ContextOutOfRange { index, value, vocabulary } => write!(
                f,
                "contexts[{index}] = {value} is not below the vocabulary {vocabulary}"
            ),
            CoreError::TargetOutOfRange { index, value, vocabulary } => write!(
                f,
                "targets[{index}] = {value} is not below the vocabulary {vocabulary}"
            ),
            CoreError::PromptOutOfRange { index, value, vocabulary } => write!(
                f,
                "prompt word {index} = {value:#x} is neither below the vocabulary {vocabulary} nor 0xffffffff (empty prompt)"
            ),
            CoreError::StepOverflow { step, updates } => write!(
                f,
                "step {step} leaves no room for {updates} more updates in a u64"
            ),
            CoreError::OutOfMemory { what, count } => write!(
                f,
                "no memory for {what} ({count} values); nothing was changed"
            ),
            CoreError::AddressSpace { bytes } => write!(
                f,
                "less than {bytes} bytes of address space left for the updates' scratch and threads; nothing was changed"
            ),
        }
    }
}

impl std::error::Error for CoreError {}
