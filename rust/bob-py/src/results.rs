//! The Python objects the binding returns, made fallibly. pyo3's own conversions of a list, a
//! tuple, an int, a float, a str or bytes (and numpy's of a Vec) panic on the NULL a failed
//! allocation returns, and the panic's report, itself without memory, can then abort or hang the
//! process: here that NULL is the MemoryError Python set, raised to the caller as any other.

use pyo3::ffi;
use pyo3::prelude::*;
use std::os::raw::{c_char, c_ulonglong};

/// A new reference from a CPython call that returns one, or NULL with an exception set.
fn owned<'py>(py: Python<'py>, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: every caller passes what a CPython constructor returned: a new reference or NULL.
    unsafe { Bound::from_owned_ptr_or_err(py, ptr) }
}

/// A Rust length as CPython's: a slice of values that are not zero-sized holds at most isize::MAX bytes,
/// so its length always fits.
fn slots(len: usize) -> ffi::Py_ssize_t {
    len as ffi::Py_ssize_t
}

/// `item` put into slot `k` of the new list or tuple `into` (the slot taking its reference).
fn put(py: Python<'_>, into: &Bound<'_, PyAny>, k: usize, item: Bound<'_, PyAny>, tuple: bool) -> PyResult<()> {
    let k = slots(k); // (below the length it was made with)
    // SAFETY: `into` is a list (or tuple) just made with more than `k` slots, seen by no other code;
    // SetItem steals `item`'s reference, also on failure.
    let failed = unsafe {
        if tuple {
            ffi::PyTuple_SetItem(into.as_ptr(), k, item.into_ptr())
        } else {
            ffi::PyList_SetItem(into.as_ptr(), k, item.into_ptr())
        }
    };
    if failed != 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(())
}

/// A list of `items`, each made by `make`.
pub(crate) fn list<'py, T>(
    py: Python<'py>,
    items: &[T],
    make: impl Fn(Python<'py>, &T) -> PyResult<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: PyList_New returns a new list of that many empty slots, or NULL with MemoryError set.
    // (Dropped part-filled, on a later failure: its empty slots are skipped.)
    let made = owned(py, unsafe { ffi::PyList_New(slots(items.len())) })?;
    for (k, item) in items.iter().enumerate() {
        put(py, &made, k, make(py, item)?, false)?;
    }
    Ok(made)
}

/// The int `value`.
pub(crate) fn int(py: Python<'_>, value: u64) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: a constructor: a new reference or NULL with MemoryError set.
    owned(py, unsafe { ffi::PyLong_FromUnsignedLongLong(c_ulonglong::from(value)) })
}

/// The float `value`.
pub(crate) fn float(py: Python<'_>, value: f64) -> PyResult<Bound<'_, PyAny>> {
    // SAFETY: as `int`.
    owned(py, unsafe { ffi::PyFloat_FromDouble(value) })
}

/// The bytes `value`.
pub(crate) fn bytes<'py>(py: Python<'py>, value: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `value` is that many readable bytes, copied by the constructor; as `int` otherwise.
    owned(py, unsafe { ffi::PyBytes_FromStringAndSize(value.as_ptr().cast::<c_char>(), slots(value.len())) })
}

/// The str `value`.
pub(crate) fn text<'py>(py: Python<'py>, value: &str) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `value` is that many bytes of UTF-8, copied by the constructor; as `int` otherwise.
    owned(py, unsafe { ffi::PyUnicode_FromStringAndSize(value.as_ptr().cast::<c_char>(), slots(value.len())) })
}

/// The tuple of `items`, made already.
pub(crate) fn tuple<'py, const N: usize>(
    py: Python<'py>,
    items: [Bound<'py, PyAny>; N],
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: PyTuple_New returns a new tuple of N empty slots, or NULL with MemoryError set.
    let made = owned(py, unsafe { ffi::PyTuple_New(slots(N)) })?;
    for (k, item) in items.into_iter().enumerate() {
        put(py, &made, k, item, true)?;
    }
    Ok(made)
}

/// A MemoryError saying `message`, with `name` = `number` set on it, made now: to be raised later, where Python
/// may have no memory left to make one (pyo3 builds the exceptions made in Rust as they are raised, and panics
/// when it cannot).
pub(crate) fn memory_error<'py>(
    py: Python<'py>,
    message: &str,
    name: &str,
    number: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let args = tuple(py, [text(py, message)?])?;
    // SAFETY: the type is CPython's; `args` a live tuple. A new reference or NULL with an exception set.
    let made = owned(py, unsafe { ffi::PyObject_Call(ffi::PyExc_MemoryError, args.as_ptr(), std::ptr::null_mut()) })?;
    let (name, number) = (text(py, name)?, int(py, number)?);
    // SAFETY: three live objects; -1 with an exception set when it fails.
    if unsafe { ffi::PyObject_SetAttr(made.as_ptr(), name.as_ptr(), number.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    Ok(made)
}
