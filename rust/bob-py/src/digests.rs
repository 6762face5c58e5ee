//! The digests the binding computes: SHA-256 of one buffer (bob-run's fast path) and XXH3-128 of each of
//! a sequence of buffers (a traced run's planes).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::buffers::{contiguous_bytes, exported, try_vec, Loans};
use crate::{core_error, results};

/// SHA-256 of any C-contiguous buffer (bytes, bytearray, a memoryview of
/// one), as 32 bytes. bob-run's fast path hashes with this instead of
/// `hashlib`, whose import loads OpenSSL (a tenth of a run); the `sha2` crate
/// uses the CPU's SHA extensions when it has them. The GIL stays held: the
/// caller's buffer must not change while it is read.
#[pyfunction]
pub(crate) fn sha256<'py>(py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    use sha2::Digest;
    let buffer = exported(data)?
        .map_err(|_| PyTypeError::new_err("sha256 needs a bytes-like object (bytes, bytearray, memoryview)"))?;
    let bytes = contiguous_bytes(&buffer).ok_or_else(|| PyValueError::new_err("sha256 needs a C-contiguous buffer"))?;
    let _loans = Loans::take(&[("data", bytes.as_ptr() as usize, bytes.len(), false)])?;
    let digest = sha2::Sha256::digest(bytes);
    results::bytes(py, &digest)
}

/// XXH3-128 of each C-contiguous buffer in `buffers`, as 16-byte strings in
/// order (xxHash's canonical form: the 128-bit value big-endian): the planes
/// after each update of a traced run (formats/trace.md says why this digest
/// and not SHA-256). The GIL is released; the caller's buffers must not change
/// meanwhile (bob's do not: the core trains them only between two calls).
#[pyfunction]
pub(crate) fn xxh3_128_each<'py>(py: Python<'py>, buffers: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // (each Vec made fallibly, as every allocation the binding makes for its caller: Rust's own would abort)
    // SAFETY: a live object. (What pyo3's extraction of a Vec took: a sequence, not a str; as many as it yields.)
    if buffers.is_instance_of::<PyString>() || unsafe { pyo3::ffi::PySequence_Check(buffers.as_ptr()) } == 0 {
        return Err(PyTypeError::new_err("xxh3_128_each needs a sequence of bytes-like objects"));
    }
    // (room for what len() says, up to a bound: a len() that says more than the sequence yields is not believed)
    let mut held = try_vec(buffers.len().unwrap_or(0).min(1 << 16), "the buffers")?;
    for item in buffers.try_iter()? {
        let more = |count| core_error(bob_core::CoreError::OutOfMemory { what: "the buffers", count });
        held.try_reserve(1).map_err(|_| more(held.len() + 1))?;
        held.push(exported(&item?)?.map_err(|_| {
            PyTypeError::new_err("xxh3_128_each needs bytes-like objects (bytes, bytearray, memoryview)")
        })?);
    }
    let (mut slices, mut ranges) = (try_vec(held.len(), "the buffers")?, try_vec(held.len(), "the loans")?);
    for buffer in held.iter() {
        let s = contiguous_bytes(buffer)
            .ok_or_else(|| PyValueError::new_err("xxh3_128_each needs C-contiguous buffers"))?;
        (slices.push(s), ranges.push(("a buffer", s.as_ptr() as usize, s.len(), false)));
    }
    let _loans = Loans::take(&ranges)?; // (one call for all: the loans' list is scanned once)
    let mut digests: Vec<[u8; 16]> = try_vec(held.len(), "the digests")?;
    py.detach(|| digests.extend(slices.iter().map(|s| xxhash_rust::xxh3::xxh3_128(s).to_be_bytes())));
    results::list(py, &digests, |py, d| results::bytes(py, d))
}
