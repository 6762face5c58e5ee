//! The checks of the caller's buffers: a plane is a C-contiguous float32
//! buffer in this machine's byte order (writable to train in), the pairs are
//! uint8 or uint32 buffers, and the planes of one call share no memory. What
//! passes is lent to the core in place (zero-copy).

use std::ffi::CStr;
use std::sync::Mutex;

use pyo3::buffer::{ElementType, PyUntypedBuffer};
use pyo3::exceptions::{PyBufferError, PyMemoryError, PyTypeError, PyValueError};
use pyo3::prelude::*;

use crate::core_error;

/// A plane the caller lent us: a writable, C-contiguous float32 buffer in
/// this machine's byte order.
/// Holding the `PyUntypedBuffer` keeps the export (and so the memory) alive.
pub(crate) struct Plane {
    pub(crate) _buffer: PyUntypedBuffer,
    pub(crate) ptr: *mut f32,
    pub(crate) len: usize,
}

/// Raw parts of the planes, moved into the GIL-free closure. Sound because the
/// buffers are held for the closure's whole run and checked not to overlap.
pub(crate) struct Lent(pub(crate) *mut f32, pub(crate) usize);

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
    pub(crate) unsafe fn slice<'a>(&self) -> &'a mut [f32] {
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
    pub(crate) unsafe fn slice_ref<'a>(&self) -> &'a [f32] {
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
pub(crate) fn native_byte_order(format: &CStr) -> bool {
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
pub(crate) fn holds(buffer: &PyUntypedBuffer, kind: ElementType) -> bool {
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
pub(crate) fn describe_format(format: &CStr, item_size: usize) -> String {
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

pub(crate) fn plane(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Plane> {
    let plane = plane_of(obj, name, "a writable float32 buffer")?;
    if plane._buffer.readonly() {
        return Err(PyValueError::new_err(format!(
            "{name} is read-only; the core trains in place and needs a writable float32 buffer"
        )));
    }
    Ok(plane)
}

/// A float32, C-contiguous buffer, read-only allowed.
pub(crate) fn plane_readable(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Plane> {
    plane_of(obj, name, "a float32 buffer")
}

/// The buffer `obj` exports (the inner `Err`: why it exports none), or the MemoryError of an exporter that
/// had no memory to describe its buffer: passed on as it is, never called the object's fault.
pub(crate) fn exported(obj: &Bound<'_, PyAny>) -> PyResult<PyResult<PyUntypedBuffer>> {
    match PyUntypedBuffer::get(obj) {
        Err(err) if err.is_instance_of::<PyMemoryError>(obj.py()) => Err(err),
        given => Ok(given),
    }
}

fn plane_of(obj: &Bound<'_, PyAny>, name: &str, wanted: &str) -> PyResult<Plane> {
    let buffer = exported(obj)?.map_err(|refused| {
        let kind = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an object".into());
        // An object that exports a buffer the request refuses says why (a 0-d array: its shape is null).
        let why = match pyo3::types::PyMemoryView::from(obj).and_then(|view| view.getattr("ndim")?.extract::<usize>()) {
            Ok(0) => " with 0 dimensions; a plane has one or two".to_string(),
            Ok(_) => format!(" ({})", refused.value(obj.py())),
            Err(_) => String::new(),
        };
        PyTypeError::new_err(format!("{name} must be {wanted} (a numpy.float32 array); got {kind}{why}"))
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

/// The byte ranges lent to the calls of this module that are running now: start, end, whether the call
/// writes the range, and the process that lent it (a child made by `fork` inherits the list, not the
/// calls). Two threads training one array would race (and the result would depend on the schedule), so a
/// call that would write memory another call uses, or read memory another call writes, is refused with
/// `BufferError`. (The same memory under two addresses, a file mapped twice, is not seen.)
static LOANS: Mutex<Vec<Loan>> = Mutex::new(Vec::new());

type Loan = (usize, usize, bool, u32);

/// This call's entries in [`LOANS`], removed when it ends (dropped).
pub(crate) struct Loans(Vec<Loan>);

impl Loans {
    /// Lend `ranges` (a name, its start and length in bytes, and whether the call writes it) to this call,
    /// or refuse naming the first that another running call is using in a way that conflicts.
    pub(crate) fn take(ranges: &[(&str, usize, usize, bool)]) -> PyResult<Loans> {
        let pid = std::process::id();
        let mut lent = LOANS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        lent.retain(|loan| loan.3 == pid); // (a forked child's: its parent's calls are not running here)
        let mut mine = Vec::new();
        if lent.try_reserve(ranges.len()).is_err() || mine.try_reserve_exact(ranges.len()).is_err() {
            return Err(PyMemoryError::new_err("no memory to lend the buffers to the core; nothing was changed"));
        }
        for &(name, start, bytes, writes) in ranges.iter().filter(|r| r.2 > 0) {
            let end = start + bytes;
            if lent.iter().any(|&(s, e, w, _)| start < e && s < end && (w || writes)) {
                return Err(PyBufferError::new_err(format!(
                    "{name} is in use by another call of bob's core (one still running, in this thread \
                     or another, is {} it); a buffer is trained by one call at a time",
                    if writes { "reading or training" } else { "training" }
                )));
            }
            mine.push((start, end, writes, pid));
        }
        lent.extend_from_slice(&mine);
        Ok(Loans(mine))
    }
}

/// The bytes a buffer's items lie in, as (start, length): from its lowest item to the end of its highest,
/// whatever its strides, so that a transposed, reversed or byte-swapped view of a plane is lent over the
/// plane's own bytes.
pub(crate) fn extent(buffer: &PyUntypedBuffer) -> (usize, usize) {
    let start = buffer.buf_ptr() as usize;
    if buffer.shape().contains(&0) {
        return (start, 0);
    }
    let (mut low, mut high) = (0isize, 0isize);
    for (&n, &stride) in buffer.shape().iter().zip(buffer.strides()) {
        let reach = (n as isize - 1) * stride;
        if reach < 0 { low += reach } else { high += reach }
    }
    (start.wrapping_add_signed(low), (high - low) as usize + buffer.item_size())
}

/// A plane's entry for [`Loans::take`].
pub(crate) fn loan<'a>(plane: &Plane, name: &'a str, writes: bool) -> (&'a str, usize, usize, bool) {
    (name, plane.ptr as usize, plane.len * 4, writes)
}

impl Drop for Loans {
    fn drop(&mut self) {
        let mut lent = LOANS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for loan in &self.0 {
            if let Some(i) = lent.iter().position(|l| l == loan) {
                lent.swap_remove(i);
            }
        }
    }
}

/// The bytes of a C-contiguous buffer, or None if it is not C-contiguous.
pub(crate) fn contiguous_bytes(buffer: &PyUntypedBuffer) -> Option<&[u8]> {
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
pub(crate) fn pair_words(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<u32>> {
    let buffer = exported(obj)?.map_err(|_| {
        PyTypeError::new_err(format!("{name} must be a buffer of uint8 or uint32 values (bytes or a numpy array)"))
    })?;
    let bytes =
        contiguous_bytes(&buffer).ok_or_else(|| PyValueError::new_err(format!("{name} is not C-contiguous")))?;
    let _read = Loans::take(&[(name, bytes.as_ptr() as usize, bytes.len(), false)])?;
    if holds(&buffer, ElementType::UnsignedInteger { bytes: 1 }) {
        let mut out = bob_core::try_vec(bytes.len(), "the pairs").map_err(core_error)?;
        out.extend(bytes.iter().map(|&b| u32::from(b)));
        return Ok(out);
    }
    if holds(&buffer, ElementType::UnsignedInteger { bytes: 4 }) {
        // Read whole words from bytes: no alignment needed, as they are copied.
        let mut out = bob_core::try_vec(bytes.len() / 4, "the pairs").map_err(core_error)?;
        out.extend(bytes.chunks_exact(4).map(|w| u32::from_ne_bytes([w[0], w[1], w[2], w[3]])));
        return Ok(out);
    }
    Err(PyTypeError::new_err(format!(
        "{name} must hold uint8 or uint32 values in this machine's byte order; got {}",
        describe_format(buffer.format(), buffer.item_size())
    )))
}

/// An empty Vec with room for `count` values, or MemoryError naming `what` (Rust's own allocation would abort).
pub(crate) fn try_vec<T>(count: usize, what: &'static str) -> PyResult<Vec<T>> {
    bob_core::try_vec(count, what).map_err(core_error)
}

/// A sequence of u32 words copied out into memory reserved first (MemoryError
/// when there is none; an allocation of Rust's own would abort the process).
pub(crate) fn words(obj: &Bound<'_, PyAny>, name: &'static str) -> PyResult<Vec<u32>> {
    let mut out = bob_core::try_vec(obj.len()?, name).map_err(core_error)?;
    for (k, item) in obj.try_iter()?.enumerate() {
        let item = item?;
        // pyo3's own refusal of a value (OverflowError) or a type (TypeError) names neither the argument nor
        // the place; anything else an item raises (KeyboardInterrupt, MemoryError) is passed on as it is.
        out.push(item.extract::<u32>().map_err(|err: PyErr| {
            let py = item.py();
            let said = |shown: String| format!("{name}[{k}] = {shown} is not an integer in 0 .. 2**32 - 1");
            let shown = || item.repr().map(|r| r.to_string()).unwrap_or_else(|_| "an object".into());
            if err.is_instance_of::<pyo3::exceptions::PyOverflowError>(py) {
                PyValueError::new_err(said(shown()))
            } else if err.is_instance_of::<PyTypeError>(py) {
                PyTypeError::new_err(said(shown()))
            } else {
                err
            }
        })?);
    }
    Ok(out)
}

/// A plane P, M or V is flat or a square table (rows, rows): not (2, 32768), which the core would read
/// as a table it is not.
pub(crate) fn check_shape(plane: &Plane, name: &str) -> PyResult<()> {
    let shape = plane._buffer.shape();
    if shape.len() > 2 || (shape.len() == 2 && shape[0] != shape[1]) {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        return Err(PyValueError::new_err(format!(
            "{name} has shape ({}); a plane is flat or a square table (rows, rows)",
            dims.join(", ")
        )));
    }
    Ok(())
}

/// The planes of one call: each flat or a square table, P's own size a whole table (named before M's and
/// V's are held to it), and M and V as large as P.
pub(crate) fn check_planes(pp: &Plane, mp: &Plane, vp: &Plane) -> PyResult<()> {
    for (plane, name) in [(pp, "P"), (mp, "M"), (vp, "V")] {
        check_shape(plane, name)?;
    }
    bob_core::vocabulary_of(pp.len).map_err(core_error)?;
    check_length(mp, "M", pp.len)?;
    check_length(vp, "V", pp.len)
}

pub(crate) fn check_length(plane: &Plane, name: &str, expected: usize) -> PyResult<()> {
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
pub(crate) fn overlaps(a: &Plane, b: &Plane) -> bool {
    let (a0, b0) = (a.ptr as usize, b.ptr as usize);
    let (a1, b1) = (a0 + a.len * 4, b0 + b.len * 4);
    a0 < b1 && b0 < a1
}
