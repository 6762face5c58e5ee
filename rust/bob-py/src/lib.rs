//! `bob._core`: a thin PyO3 binding of `bob-core`. It checks the caller's
//! buffers, then hands them to the core in place (zero-copy) with the GIL
//! released. No math lives here.

#![deny(missing_docs)]

mod buffers;
mod digests;
mod reading;
mod results;

use buffers::{
    check_length, check_planes, check_shape, loan, overlaps, pair_words, plane, plane_readable, words, Lent, Loans,
};

use bob_core::{Kernel, Options, StateProblem, BOB_V1_ADAMW};
use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyString, PyTuple};

// Registered under its full import path, so that `CoreError.__module__` is
// "bob._core" and pickle can find the class again when it loads an instance.
create_exception!(
    bob._core,
    CoreError,
    PyValueError,
    "The native core refused its arguments (the message names which and why)."
);

/// The Python exception for a refusal of the core, with the core's message
/// (MemoryError for memory the core or the binding could not allocate).
pub(crate) fn core_error(err: bob_core::CoreError) -> PyErr {
    match err {
        bob_core::CoreError::OutOfMemory { .. } | bob_core::CoreError::AddressSpace { .. } => {
            PyMemoryError::new_err(err.to_string())
        }
        _ => CoreError::new_err(err.to_string()),
    }
}

/// `core_error` of a chunk of a `train` call after `done` updates of earlier chunks: memory that ran out
/// meanwhile leaves the planes holding the state after them, which the error says, and its `updates_done`
/// (as a Ctrl-C's), rather than "nothing was changed".
fn after_updates(py: Python<'_>, err: bob_core::CoreError, done: u64) -> PyErr {
    let memory = matches!(err, bob_core::CoreError::OutOfMemory { .. } | bob_core::CoreError::AddressSpace { .. });
    if done == 0 || !memory {
        return core_error(err);
    }
    // (made by CPython's constructors: pyo3's own, when it raises one, panics if Python has no memory either)
    match results::memory_error(py, &said_after_updates(&err, done), "updates_done", done) {
        Ok(made) => PyErr::from_value(made),
        Err(bare) => bare, // (Python's own MemoryError: no memory to say more)
    }
}

/// A core error's words, the planes holding the state after `done` updates where it says "nothing was changed".
fn said_after_updates(err: &bob_core::CoreError, done: u64) -> String {
    let said = format!("the planes hold the state after the {done} updates made before it (updates_done)");
    err.to_string().replace("nothing was changed", &said)
}

fn kernel_named(name: &str) -> PyResult<Kernel> {
    Kernel::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "kernel must be 'auto', 'scalar', 'portable', 'avx2' or 'avx512'; got {name:?}"
        ))
    })
}

/// `function()`, called with no arguments in the IEEE default floating-point
/// environment (D17), the caller's given back afterwards: Python's own float
/// analysis of planes (`bob.diff`, `Checkpoint.as_dict`) runs in it, as the
/// core's entry points do, whatever a `-ffast-math` module set on the thread.
#[pyfunction]
fn in_default_environment(function: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    bob_core::in_default_environment(|| function.call0().map(Bound::unbind))
}

/// FNV-1a-64 of `data` (contract §6.1).
#[pyfunction]
fn fnv1a64<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    results::int(py, bob_core::fnv1a64(data))
}

/// Fill the float32 buffer `p` in place with the seeded initialization (§6.1).
#[pyfunction]
fn initialize(py: Python<'_>, p: &Bound<'_, PyAny>, seed: &Bound<'_, PyBytes>) -> PyResult<()> {
    let p = plane(p, "P")?;
    check_shape(&p, "P")?;
    bob_core::vocabulary_of(p.len).map_err(core_error)?; // (as train and predict refuse it: §6.1 fills a table)
    let _loans = Loans::take(&[loan(&p, "P", true)])?;
    let seed = seed.as_bytes().to_vec();
    let lent = Lent(p.ptr, p.len);
    py.detach(move || {
        // SAFETY: `p` holds the buffer export until after `detach` returns,
        // and no other Rust reference to it exists meanwhile.
        bob_core::initialize(unsafe { lent.slice() }, &seed);
    });
    drop(p);
    Ok(())
}

const _: () = assert!(bob_core::VOCABULARY == 256, "initial_planes' default vocabulary");

/// `numpy.zeros`, looked up at the first call (bob-run's start-up does not import numpy) from names
/// made fallibly: rust-numpy's constructors panic when Python has no memory, where a call of numpy's
/// own raises its MemoryError.
static NUMPY_ZEROS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// New float32 NumPy arrays P, M, V for a vocabulary of `vocabulary`: P
/// seeded from `seed` (§6.1), M and V +0.0.
#[pyfunction]
// A literal default, so that the text signature (and `inspect.signature`)
// shows it; the assertion above keeps it equal to the core's constant.
#[pyo3(signature = (seed, vocabulary = 256))]
fn initial_planes<'py>(py: Python<'py>, seed: &Bound<'py, PyBytes>, vocabulary: usize) -> PyResult<Bound<'py, PyAny>> {
    let count = vocabulary
        .checked_mul(vocabulary)
        .filter(|&c| c > 0)
        .ok_or_else(|| PyValueError::new_err(format!("vocabulary {vocabulary} gives no table")))?;
    if count > isize::MAX as usize / std::mem::size_of::<f32>() {
        // (numpy's own refusal of that size is a ValueError)
        return Err(core_error(bob_core::CoreError::OutOfMemory { what: "P", count }));
    }
    let name = |name: &str| -> PyResult<Bound<'py, PyString>> { Ok(results::text(py, name)?.cast_into()?) };
    let zeros =
        NUMPY_ZEROS.get_or_try_init(py, || py.import(name("numpy")?)?.getattr(name("zeros")?).map(Bound::unbind))?;
    let shape = results::tuple(py, [results::int(py, count as u64)?, name("float32")?.into_any()])?;
    let shape = shape.cast_into::<PyTuple>()?;
    let made = || zeros.bind(py).call1(&shape); // (numpy's MemoryError says the size it could not allocate)
    let (p, m, v) = (made()?, made()?, made()?);
    let lent = plane(&p, "P")?;
    let loans = Loans::take(&[loan(&lent, "P", true)])?;
    // SAFETY: `lent` holds P's buffer, made just now and seen by no other code, until after the call.
    bob_core::initialize(unsafe { Lent(lent.ptr, lent.len).slice() }, seed.as_bytes());
    drop((loans, lent));
    results::tuple(py, [p, m, v])
}

/// Make `updates` AdamW updates in place on the float32 buffers
/// `planes` = (P, M, V) (contract §6.3), `step` updates having been made
/// before. `pairs` = (contexts, targets), uint8 or uint32 buffers. Returns the loss
/// before each update, as a list of floats. The vocabulary is sqrt(len(P)).
/// `kernel` is "auto" (the best fast kernel), one of `kernels()`, or
/// "scalar": the slow, plain transcription of §6, to qualify the others.
#[pyfunction]
#[pyo3(signature = (planes, pairs, step, updates, *, threads = 0, kernel = "auto"))]
fn train<'py>(
    py: Python<'py>,
    planes: (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>),
    pairs: (Bound<'py, PyAny>, Bound<'py, PyAny>),
    step: u64,
    updates: u64,
    threads: usize,
    kernel: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let ((p, m, v), (contexts, targets)) = (planes, pairs);
    let (p, m, v, contexts, targets) = (&p, &m, &v, &contexts, &targets);
    let kernel = kernel_named(kernel)?;
    let (pp, mp, vp) = (plane(p, "P")?, plane(m, "M")?, plane(v, "V")?);
    check_planes(&pp, &mp, &vp)?;
    for (a, b, an, bn) in [(&pp, &mp, "P", "M"), (&pp, &vp, "P", "V"), (&mp, &vp, "M", "V")] {
        if overlaps(a, b) {
            return Err(PyValueError::new_err(format!(
                "{an} and {bn} share memory; P, M and V must be three different buffers"
            )));
        }
    }
    let contexts = pair_words(contexts, "contexts")?; // (copied out first, lent only while they are)
    let targets = pair_words(targets, "targets")?;
    let loans = Loans::take(&[loan(&pp, "P", true), loan(&mp, "M", true), loan(&vp, "V", true)])?;
    if step.checked_add(updates).is_none() {
        // Refused whole, before the first chunk could change a value.
        return Err(core_error(bob_core::CoreError::StepOverflow { step, updates }));
    }
    // No memory for the list of losses once the updates are made is said as their own MemoryError would be; made
    // now, while nothing has changed, as Python may have no memory for it then.
    let lost = bob_core::CoreError::OutOfMemory { what: "the losses", count: usize::try_from(updates).unwrap_or(0) };
    let no_list = results::memory_error(py, &said_after_updates(&lost, updates), "updates_done", updates)?;
    let mut losses: Vec<f64> = Vec::new();
    losses.try_reserve_exact(usize::try_from(updates).unwrap_or(usize::MAX)).map_err(|_| {
        PyMemoryError::new_err(format!("no memory for the {updates} losses of {updates} updates; nothing was changed"))
    })?;
    // Chunks of about 2**21 parameter-updates (a millisecond or two), with a
    // look at pending signals between them: Ctrl-C ends a long call, and the
    // planes then hold the state after the whole updates done, which the
    // KeyboardInterrupt's `updates_done` says. Splitting changes no bit:
    // each update depends only on the state and its own step.
    let chunk = ((1u64 << 21) / (pp.len.max(1) as u64)).max(1);
    let options = Options { kernel, threads };
    let mut done = 0u64;
    loop {
        let count = chunk.min(updates - done);
        let (lp, lm, lv) = (Lent(pp.ptr, pp.len), Lent(mp.ptr, mp.len), Lent(vp.ptr, vp.len));
        let (contexts, targets) = (&contexts, &targets);
        let part = py
            .detach(move || {
                // SAFETY: the three buffers are held by `pp`, `mp`, `vp` until
                // after the loop, and were checked not to overlap, so the three
                // `&mut` slices are disjoint and outlive none of their buffers.
                let (p, m, v) = unsafe { (lp.slice(), lm.slice(), lv.slice()) };
                bob_core::Planes::new(p, m, v).and_then(|planes| {
                    bob_core::train(planes, contexts, targets, step + done, count, &BOB_V1_ADAMW, options)
                })
            })
            .map_err(|err| after_updates(py, err, done))?;
        losses.extend_from_slice(&part);
        done += count;
        if done == updates {
            break;
        }
        if let Err(err) = py.check_signals() {
            let value = err.value(py);
            value.setattr("updates_done", done)?;
            return Err(err);
        }
    }
    drop((loans, pp, mp, vp));
    results::list(py, &losses, |py, &loss| results::float(py, loss)).map_err(|_| PyErr::from_value(no_list))
}

/// (token, validity) for each prompt word (contract §4); 0xFFFFFFFF is the
/// empty prompt. P is any float32 buffer; read-only is fine.
#[pyfunction]
fn predict<'py>(
    py: Python<'py>,
    p: &Bound<'py, PyAny>,
    prompt_words: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let prompt_words = words(prompt_words, "prompt_words")?;
    let p = plane_readable(p, "P")?;
    check_shape(&p, "P")?;
    let _loans = Loans::take(&[loan(&p, "P", false)])?;
    // SAFETY: the buffer is held by `p` for this call, and no mutable
    // reference to it exists while the slice is read.
    let values = unsafe { Lent(p.ptr, p.len).slice_ref() };
    let predictions = bob_core::predict(values, &prompt_words).map_err(core_error)?;
    results::list(py, &predictions, |py, &(token, valid)| {
        results::tuple(py, [results::int(py, token.into())?, results::int(py, valid.into())?])
    })
}

/// The first reason the state P, M, V at `step` may not be resumed for
/// `updates` more updates (§5), as (check, plane, index), or None.
/// check is "non_finite", "negative", "moments_at_step_zero" or "no_room".
/// With `into` (a writable float32 buffer of 3 × len(P) values sharing no
/// memory with P, M, V), P, M and V are first copied into it and the copy
/// is checked: one call for a checked copy.
#[pyfunction]
#[pyo3(signature = (p, m, v, step, updates, *, into = None))]
fn resume_problem<'py>(
    py: Python<'py>,
    p: &Bound<'py, PyAny>,
    m: &Bound<'py, PyAny>,
    v: &Bound<'py, PyAny>,
    step: u64,
    updates: u64,
    into: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let (pp, mp, vp) = (plane_readable(p, "P")?, plane_readable(m, "M")?, plane_readable(v, "V")?);
    check_planes(&pp, &mp, &vp)?;
    let _loans = Loans::take(&[loan(&pp, "P", false), loan(&mp, "M", false), loan(&vp, "V", false)])?;
    // SAFETY: the buffers are held by `pp`, `mp`, `vp` for this call, and no
    // mutable reference to them exists while the slices are read.
    let (p, m, v) = unsafe {
        (Lent(pp.ptr, pp.len).slice_ref(), Lent(mp.ptr, mp.len).slice_ref(), Lent(vp.ptr, vp.len).slice_ref())
    };
    let problem = match into {
        None => bob_core::resume_state_problem(p, m, v, step, updates),
        Some(into) => {
            let ip = plane(into, "into")?;
            check_length(&ip, "into", 3 * pp.len)?;
            for (source, name) in [(&pp, "P"), (&mp, "M"), (&vp, "V")] {
                if overlaps(&ip, source) {
                    return Err(PyValueError::new_err(format!(
                        "into shares memory with {name}; it must be a buffer of its own"
                    )));
                }
            }
            let _into = Loans::take(&[loan(&ip, "into", true)])?;
            // SAFETY: `into` is held by `ip` for this call, is writable, and
            // overlaps none of the three planes read through shared slices.
            let out = unsafe { Lent(ip.ptr, ip.len).slice() };
            bob_core::copy_resumable_state(p, m, v, out, step, updates).map_err(core_error)?
        }
    };
    let (check, plane, index) = match problem {
        None => return Ok(py.None().into_bound(py)),
        Some(StateProblem::NonFinite { plane, index, .. }) => ("non_finite", plane, index),
        Some(StateProblem::NegativeSecondMoment { index, .. }) => ("negative", "V", index),
        Some(StateProblem::MomentsAtStepZero { plane, index, .. }) => ("moments_at_step_zero", plane, index),
        Some(StateProblem::NoRoomForUpdates { .. }) => ("no_room", "", 0),
    };
    results::tuple(py, [results::text(py, check)?, results::text(py, plane)?, results::int(py, index as u64)?])
}

/// The kernel `kernel` resolves to on this CPU ("avx512", "avx2" or
/// "portable"; "scalar" only for "scalar" itself).
#[pyfunction]
#[pyo3(signature = (kernel = "auto"))]
fn resolved_kernel<'py>(py: Python<'py>, kernel: &str) -> PyResult<Bound<'py, PyAny>> {
    results::text(py, kernel_named(kernel)?.resolve().name())
}

/// The kernels this CPU can run, by name: the scalar reference first, then
/// the fast ones, narrowest instruction set first. "auto" is not listed.
#[pyfunction]
fn kernels(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    let names: Vec<&str> = Kernel::ALL.into_iter().filter(|k| k.is_available()).map(Kernel::name).collect();
    results::list(py, &names, |py, name| results::text(py, name)) // (at most five: no reservation of its own)
}

/// Seconds per update of the fused-loop floor (`bob_core::floor`) at
/// vocabulary 256 on `threads` threads started before its clock, over the
/// state `updates_in` updates from the seeded start (0: the steps of a
/// first call). For benchmarks/bench_threads.py, which compares `train`
/// against it in one process; not part of the API.
#[pyfunction]
#[pyo3(name = "_fused_loop_floor", signature = (threads, kernel = "auto", updates_in = 0))]
fn fused_loop_floor<'py>(
    py: Python<'py>,
    threads: usize,
    kernel: &str,
    updates_in: u64,
) -> PyResult<Bound<'py, PyAny>> {
    use bob_core::floor::{time, Floor, State, FLOOR_PASSES};
    let kernel = kernel_named(kernel)?;
    let timed = py.detach(move || {
        let state = State::new(bob_core::VOCABULARY, updates_in).map_err(core_error)?;
        time(kernel, Floor::FusedLoop, &state, threads).map_err(PyErr::from)
    });
    results::float(py, timed?.as_secs_f64() / FLOOR_PASSES as f64)
}

/// bob's native core: the training math of contract §6 (bob-core) over
/// caller-owned float32 buffers. Reached through `bob.core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CoreError", m.py().get_type::<CoreError>())?;
    // The core's count, for the test that holds bob.formats.constants' equal to it.
    m.add("UPDATES_PER_INVOCATION", bob_core::UPDATES_PER_INVOCATION)?;
    m.add_function(wrap_pyfunction!(fnv1a64, m)?)?;
    m.add_function(wrap_pyfunction!(in_default_environment, m)?)?;
    m.add_function(wrap_pyfunction!(digests::sha256, m)?)?;
    m.add_function(wrap_pyfunction!(digests::xxh3_128_each, m)?)?;
    m.add_function(wrap_pyfunction!(initialize, m)?)?;
    m.add_function(wrap_pyfunction!(initial_planes, m)?)?;
    m.add_function(wrap_pyfunction!(resume_problem, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(predict, m)?)?;
    m.add_function(wrap_pyfunction!(reading::reading, m)?)?;
    m.add_class::<reading::Reading>()?;
    m.add_function(wrap_pyfunction!(resolved_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    // Set, not added: `add_function` would list it in `__all__`, the API.
    m.setattr("_fused_loop_floor", wrap_pyfunction!(fused_loop_floor, m)?)?;
    Ok(())
}
