//! `bob._core`: a thin PyO3 binding of `bob-core`. It checks the caller's
//! buffers, then hands them to the core in place (zero-copy) with the GIL
//! released. No math lives here.

#![deny(missing_docs)]

use std::ffi::CStr;

use bob_core::{Kernel, Options, StateProblem, BOB_V1_ADAMW};
use numpy::{PyArray1, PyArrayMethods};
use pyo3::buffer::{ElementType, PyUntypedBuffer};
use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

// Registered under its full import path, so that `CoreError.__module__` is
// "bob._core" and pickle can find the class again when it loads an instance.
create_exception!(
    bob._core,
    CoreError,
    PyValueError,
    "The native core refused its arguments (the message names which and why)."
);

/// The Python exception for a refusal of the core, with the core's message.
fn core_error(err: bob_core::CoreError) -> PyErr {
    CoreError::new_err(err.to_string())
}

/// A plane the caller lent us: a writable, C-contiguous float32 buffer in
/// this machine's byte order.
/// Holding the `PyUntypedBuffer` keeps the export (and so the memory) alive.
struct Plane {
    _buffer: PyUntypedBuffer,
    ptr: *mut f32,
    len: usize,
}

/// Raw parts of the planes, moved into the GIL-free closure. Sound because the
/// buffers are held for the closure's whole run and checked not to overlap.
struct Lent(*mut f32, usize);

// SAFETY: `Lent` is only a pointer and a length; the memory it points to is a
// plain float32 buffer with no thread affinity. It is sent to the closure run
// by `py.detach` while the owning `Plane` (and so the buffer export) stays
// alive on the calling thread, and that thread waits for the closure.
unsafe impl Send for Lent {}

impl Lent {
    /// The lent buffer as a mutable slice.
    ///
    /// # Safety
    /// The `Plane` it came from must stay alive (the buffer exported) for
    /// `'a`, and no other reference to that memory may be used meanwhile.
    unsafe fn slice<'a>(&self) -> &'a mut [f32] {
        if self.1 == 0 {
            return &mut [];
        }
        // SAFETY: `self.0` is the non-null start of a C-contiguous buffer of
        // `self.1` f32 values, checked aligned in `plane_readable`; the
        // caller keeps it exported and unaliased for 'a (see `# Safety`).
        unsafe { std::slice::from_raw_parts_mut(self.0, self.1) }
    }

    /// The lent buffer as a shared slice.
    ///
    /// # Safety
    /// The `Plane` it came from must stay alive for `'a`, and no mutable
    /// reference to that memory may be used meanwhile.
    unsafe fn slice_ref<'a>(&self) -> &'a [f32] {
        if self.1 == 0 {
            return &[];
        }
        // SAFETY: as in `slice`: an exported, aligned buffer of `self.1` f32
        // values, only read while the caller's `# Safety` terms hold.
        unsafe { std::slice::from_raw_parts(self.0, self.1) }
    }
}

/// Whether a buffer's struct format puts its items in this machine's byte
/// order: no prefix, '@' or '=' (native), or the explicit '<' or '>' that
/// is this machine's.
fn native_byte_order(format: &CStr) -> bool {
    match format.to_bytes().first() {
        Some(b'<') => cfg!(target_endian = "little"),
        Some(b'>' | b'!') => cfg!(target_endian = "big"),
        _ => true,
    }
}

/// Whether `buffer` holds items of `kind` as this machine reads them: the
/// kind and size its format names, its stated item size, and (for items of
/// more than one byte) the byte order. The one check of every buffer's
/// items here: pyo3's `as_typed` (0.30) takes the byte order backwards on a
/// little-endian machine (a big-endian `>f` passes for f32 and would be read
/// byte-swapped; this machine's own `<f`, as ctypes exports it, fails).
fn holds(buffer: &PyUntypedBuffer, kind: ElementType) -> bool {
    let size = match kind {
        ElementType::Float { bytes } | ElementType::UnsignedInteger { bytes } => bytes,
        _ => return false,
    };
    ElementType::from_format(buffer.format()) == kind
        && buffer.item_size() == size
        && (size == 1 || native_byte_order(buffer.format()))
}

/// A buffer's items for a refusal: "float64 with 8-byte items",
/// "big-endian float32 with 4-byte items", or the raw format.
fn describe_format(format: &CStr, item_size: usize) -> String {
    let f = format.to_string_lossy();
    let order = match (native_byte_order(format), cfg!(target_endian = "little")) {
        (true, _) => "",
        (false, true) => "big-endian ",
        (false, false) => "little-endian ",
    };
    let dtype = match (f.trim_start_matches(['@', '=', '<', '>', '!']), item_size) {
        ("d", 8) => "float64".to_string(),
        ("e", 2) => "float16".to_string(),
        ("f", 4) => "float32".to_string(),
        ("B", 1) => "uint8 (bytes)".to_string(),
        ("b", 1) => "int8".to_string(),
        ("h" | "i" | "l" | "q", n) => format!("int{}", n * 8),
        ("H" | "I" | "L" | "Q", n) => format!("uint{}", n * 8),
        _ => format!("format {f:?}"),
    };
    format!("{order}{dtype} with {item_size}-byte items")
}

fn plane(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Plane> {
    let plane = plane_readable(obj, name)?;
    if plane._buffer.readonly() {
        return Err(PyValueError::new_err(format!(
            "{name} is read-only; the core trains in place and needs a writable float32 buffer"
        )));
    }
    Ok(plane)
}

/// A float32, C-contiguous buffer, read-only allowed.
fn plane_readable(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Plane> {
    let buffer = PyUntypedBuffer::get(obj).map_err(|_| {
        PyTypeError::new_err(format!(
            "{name} must be a writable float32 buffer (a numpy.float32 array); got {}",
            obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an object".into())
        ))
    })?;
    if !holds(&buffer, ElementType::Float { bytes: 4 }) {
        return Err(PyTypeError::new_err(format!(
            "{name} must hold float32 values in this machine's byte order; got {}",
            describe_format(buffer.format(), buffer.item_size())
        )));
    }
    if !buffer.is_c_contiguous() {
        return Err(PyValueError::new_err(format!(
            "{name} is not C-contiguous; pass numpy.ascontiguousarray({name}) or the plane itself, not a strided view"
        )));
    }
    let misalignment = buffer.buf_ptr() as usize % std::mem::align_of::<f32>();
    if misalignment != 0 {
        return Err(PyValueError::new_err(format!(
            "{name} starts {misalignment} byte(s) past a float32 boundary; the core reads it in place, \
             so pass an aligned copy (numpy.array({name}))"
        )));
    }
    let ptr = buffer.buf_ptr().cast::<f32>();
    let len = buffer.item_count();
    Ok(Plane { _buffer: buffer, ptr, len })
}

/// The bytes of a C-contiguous buffer, or None if it is not C-contiguous.
fn contiguous_bytes(buffer: &PyUntypedBuffer) -> Option<&[u8]> {
    if !buffer.is_c_contiguous() {
        return None;
    }
    let len = buffer.len_bytes();
    if len == 0 {
        return Some(&[]);
    }
    // SAFETY: the export `buffer` (borrowed for the slice's lifetime) holds
    // the memory: `len` bytes from `buf_ptr`, C-contiguous, which the
    // exporter may not free or resize while it is exported.
    Some(unsafe { std::slice::from_raw_parts(buffer.buf_ptr().cast::<u8>(), len) })
}

/// The pairs' contexts or targets: a C-contiguous buffer of uint8 (bytes,
/// bytearray, a uint8 array) or uint32 values, copied out (they are small).
fn pair_words(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u32>> {
    let buffer = PyUntypedBuffer::get(obj).map_err(|_| {
        PyTypeError::new_err(format!("{name} must be a buffer of uint8 or uint32 values (bytes or a numpy array)"))
    })?;
    let bytes =
        contiguous_bytes(&buffer).ok_or_else(|| PyValueError::new_err(format!("{name} is not C-contiguous")))?;
    if holds(&buffer, ElementType::UnsignedInteger { bytes: 1 }) {
        return Ok(bytes.iter().map(|&b| u32::from(b)).collect());
    }
    if holds(&buffer, ElementType::UnsignedInteger { bytes: 4 }) {
        // Read whole words from bytes: no alignment needed, as they are copied.
        return Ok(bytes.chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])).collect());
    }
    Err(PyTypeError::new_err(format!(
        "{name} must hold uint8 or uint32 values in this machine's byte order; got {}",
        describe_format(buffer.format(), buffer.item_size())
    )))
}

fn check_length(plane: &Plane, name: &str, expected: usize) -> PyResult<()> {
    if plane.len != expected {
        return Err(PyValueError::new_err(format!(
            "{name} holds {} float32 values, expected {expected}",
            plane.len
        )));
    }
    Ok(())
}

/// Whether two planes share a byte. (An empty plane shares none: its range
/// [a0, a0) satisfies neither strict inequality with a range of its own
/// length, which every pair here has, checked first.)
fn overlaps(a: &Plane, b: &Plane) -> bool {
    let (a0, b0) = (a.ptr as usize, b.ptr as usize);
    let (a1, b1) = (a0 + a.len * 4, b0 + b.len * 4);
    a0 < b1 && b0 < a1
}

fn kernel_named(name: &str) -> PyResult<Kernel> {
    Kernel::from_name(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "kernel must be 'auto', 'scalar', 'portable', 'avx2' or 'avx512'; got {name:?}"
        ))
    })
}

/// FNV-1a-64 of `data` (contract §6.1).
#[pyfunction]
fn fnv1a64(data: &[u8]) -> u64 {
    bob_core::fnv1a64(data)
}

/// SHA-256 of any C-contiguous buffer (bytes, bytearray, a memoryview of
/// one), as 32 bytes. bob-run's fast path hashes with this instead of
/// `hashlib`, whose import loads OpenSSL (a tenth of a run); the `sha2` crate
/// uses the CPU's SHA extensions when it has them. The GIL stays held: the
/// caller's buffer must not change while it is read.
#[pyfunction]
fn sha256<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    use sha2::Digest;
    let buffer = PyUntypedBuffer::get(data)
        .map_err(|_| PyTypeError::new_err("sha256 needs a bytes-like object (bytes, bytearray, memoryview)"))?;
    let bytes = contiguous_bytes(&buffer).ok_or_else(|| PyValueError::new_err("sha256 needs a C-contiguous buffer"))?;
    let digest = sha2::Sha256::digest(bytes);
    Ok(PyBytes::new(py, &digest))
}

/// Fill the float32 buffer `p` in place with the seeded initialization (§6.1).
#[pyfunction]
fn initialize(py: Python<'_>, p: &Bound<'_, PyAny>, seed: &Bound<'_, PyBytes>) -> PyResult<()> {
    let p = plane(p, "P")?;
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

type Plane1<'py> = Bound<'py, PyArray1<f32>>;

const _: () = assert!(bob_core::VOCABULARY == 256, "initial_planes' default vocabulary");

/// New float32 NumPy arrays P, M, V for a vocabulary of `vocabulary`: P
/// seeded from `seed` (§6.1), M and V +0.0.
#[pyfunction]
// A literal default, so that the text signature (and `inspect.signature`)
// shows it; the assertion below keeps it equal to the core's constant.
#[pyo3(signature = (seed, vocabulary = 256))]
fn initial_planes<'py>(
    py: Python<'py>,
    seed: &Bound<'py, PyBytes>,
    vocabulary: usize,
) -> PyResult<(Plane1<'py>, Plane1<'py>, Plane1<'py>)> {
    let count = vocabulary
        .checked_mul(vocabulary)
        .filter(|&c| c > 0)
        .ok_or_else(|| PyValueError::new_err(format!("vocabulary {vocabulary} gives no table")))?;
    let p = PyArray1::<f32>::zeros(py, count, false);
    {
        let mut view = p.readwrite();
        let values = view.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?;
        bob_core::initialize(values, seed.as_bytes());
    }
    Ok((p, PyArray1::<f32>::zeros(py, count, false), PyArray1::<f32>::zeros(py, count, false)))
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
) -> PyResult<Vec<f64>> {
    let ((p, m, v), (contexts, targets)) = (planes, pairs);
    let (p, m, v, contexts, targets) = (&p, &m, &v, &contexts, &targets);
    let kernel = kernel_named(kernel)?;
    let (pp, mp, vp) = (plane(p, "P")?, plane(m, "M")?, plane(v, "V")?);
    check_length(&mp, "M", pp.len)?;
    check_length(&vp, "V", pp.len)?;
    for (a, b, an, bn) in [(&pp, &mp, "P", "M"), (&pp, &vp, "P", "V"), (&mp, &vp, "M", "V")] {
        if overlaps(a, b) {
            return Err(PyValueError::new_err(format!(
                "{an} and {bn} share memory; P, M and V must be three different buffers"
            )));
        }
    }
    let contexts = pair_words(contexts, "contexts")?;
    let targets = pair_words(targets, "targets")?;
    if step.checked_add(updates).is_none() {
        // Refused whole, before the first chunk could change a value.
        return Err(core_error(bob_core::CoreError::StepOverflow { step, updates }));
    }
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
            .map_err(core_error)?;
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
    drop((pp, mp, vp));
    Ok(losses)
}

/// (token, validity) for each prompt word (contract §4); 0xFFFFFFFF is the
/// empty prompt. P is any float32 buffer; read-only is fine.
#[pyfunction]
fn predict(p: &Bound<'_, PyAny>, prompt_words: Vec<u32>) -> PyResult<Vec<(u32, u32)>> {
    let p = plane_readable(p, "P")?;
    // SAFETY: the buffer is held by `p` for this call, and no mutable
    // reference to it exists while the slice is read.
    let values = unsafe { Lent(p.ptr, p.len).slice_ref() };
    bob_core::predict(values, &prompt_words).map_err(core_error)
}

/// The first reason the state P, M, V at `step` may not be resumed for
/// `updates` more updates (§5), as (check, plane, index), or None.
/// check is "non_finite", "negative", "moments_at_step_zero" or "no_room".
/// With `into` (a writable float32 buffer of 3 × len(P) values sharing no
/// memory with P, M, V), P, M and V are first copied into it and the copy
/// is checked: one call for a checked copy.
#[pyfunction]
#[pyo3(signature = (p, m, v, step, updates, *, into = None))]
fn resume_problem(
    p: &Bound<'_, PyAny>,
    m: &Bound<'_, PyAny>,
    v: &Bound<'_, PyAny>,
    step: u64,
    updates: u64,
    into: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<(&'static str, &'static str, usize)>> {
    let (pp, mp, vp) = (plane_readable(p, "P")?, plane_readable(m, "M")?, plane_readable(v, "V")?);
    check_length(&mp, "M", pp.len)?;
    check_length(&vp, "V", pp.len)?;
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
            // SAFETY: `into` is held by `ip` for this call, is writable, and
            // overlaps none of the three planes read through shared slices.
            let out = unsafe { Lent(ip.ptr, ip.len).slice() };
            bob_core::copy_resumable_state(p, m, v, out, step, updates).map_err(core_error)?
        }
    };
    Ok(problem.map(|problem| match problem {
        StateProblem::NonFinite { plane, index, .. } => ("non_finite", plane, index),
        StateProblem::NegativeSecondMoment { index, .. } => ("negative", "V", index),
        StateProblem::MomentsAtStepZero { plane, index, .. } => ("moments_at_step_zero", plane, index),
        StateProblem::NoRoomForUpdates { .. } => ("no_room", "", 0),
    }))
}

/// The kernel `kernel` resolves to on this CPU ("avx512", "avx2" or
/// "portable"; "scalar" only for "scalar" itself).
#[pyfunction]
#[pyo3(signature = (kernel = "auto"))]
fn resolved_kernel(kernel: &str) -> PyResult<&'static str> {
    Ok(kernel_named(kernel)?.resolve().name())
}

/// The kernels this CPU can run, by name: the scalar reference first, then
/// the fast ones, narrowest instruction set first. "auto" is not listed.
#[pyfunction]
fn kernels() -> Vec<&'static str> {
    Kernel::ALL.into_iter().filter(|k| k.is_available()).map(Kernel::name).collect()
}

/// Seconds per update of the fused-loop floor (`bob_core::floor`) at
/// vocabulary 256 on `threads` threads started before its clock, over the
/// state `updates_in` updates from the seeded start (0: the steps of a
/// first call). For benchmarks/bench_threads.py, which compares `train`
/// against it in one process; not part of the API.
#[pyfunction]
#[pyo3(name = "_fused_loop_floor", signature = (threads, kernel = "auto", updates_in = 0))]
fn fused_loop_floor(py: Python<'_>, threads: usize, kernel: &str, updates_in: u64) -> PyResult<f64> {
    use bob_core::floor::{time, Floor, State, FLOOR_PASSES};
    let kernel = kernel_named(kernel)?;
    let seconds = py.detach(move || {
        let state = State::new(bob_core::VOCABULARY, updates_in);
        time(kernel, Floor::FusedLoop, &state, threads).as_secs_f64()
    });
    Ok(seconds / FLOOR_PASSES as f64)
}

/// bob's native core: the training math of contract §6 (bob-core) over
/// caller-owned float32 buffers. Reached through `bob.core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("CoreError", m.py().get_type::<CoreError>())?;
    m.add_function(wrap_pyfunction!(fnv1a64, m)?)?;
    m.add_function(wrap_pyfunction!(sha256, m)?)?;
    m.add_function(wrap_pyfunction!(initialize, m)?)?;
    m.add_function(wrap_pyfunction!(initial_planes, m)?)?;
    m.add_function(wrap_pyfunction!(resume_problem, m)?)?;
    m.add_function(wrap_pyfunction!(train, m)?)?;
    m.add_function(wrap_pyfunction!(predict, m)?)?;
    m.add_function(wrap_pyfunction!(resolved_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(kernels, m)?)?;
    // Set, not added: `add_function` would list it in `__all__`, the API.
    m.setattr("_fused_loop_floor", wrap_pyfunction!(fused_loop_floor, m)?)?;
    Ok(())
}
