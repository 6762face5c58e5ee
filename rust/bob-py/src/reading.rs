//! Read loans for Python (`bob._core.reading`): a `with` block in which a `train` of the buffers named is
//! refused, and that holds the buffers themselves, so that no memory is lent but theirs.

use pyo3::buffer::PyUntypedBuffer;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::buffers::{exported, extent, Loans};

/// Read loans on buffers (the planes P, M and V), held until the object is released (or leaves a `with` block): a
/// `train` of them meanwhile, in another thread, is refused with `BufferError`, and so is taking them while
/// one runs. `Checkpoint.to_bytes` copies the planes inside one, so its file is never a state
/// torn by a concurrent update.
#[pyclass(module = "bob._core")]
pub(crate) struct Reading {
    loans: Option<Loans>,
    /// The buffers' exports, held with the loans: a loan covers its buffer's memory, never memory freed
    /// and handed out again meanwhile (a fresh plane refused as "in use").
    exports: Vec<PyUntypedBuffer>,
}

#[pymethods]
impl Reading {
    /// Give the loans back (a second call does nothing).
    fn release(&mut self) {
        self.loans = None;
        self.exports.clear();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&mut self, _exc: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.release();
        false
    }
}

/// Read loans on the buffers given by name (see `Reading`), each over the bytes its items span (any
/// buffer: a strided or byte-swapped view of a plane being trained is refused as the plane is, so a copy
/// of it is never torn), or `BufferError` naming the first that a running `train` holds.
#[pyfunction]
#[pyo3(signature = (**planes))]
pub(crate) fn reading(planes: Option<&Bound<'_, PyDict>>) -> PyResult<Reading> {
    let (mut spans, mut exports) = (Vec::new(), Vec::new());
    for (name, obj) in planes.map(|d| d.iter().collect::<Vec<_>>()).unwrap_or_default() {
        let name: String = name.extract()?;
        if let Ok(buffer) = exported(&obj)? {
            spans.push((name, extent(&buffer))); // (what is no buffer, a list, is never trained: no loan)
            exports.push(buffer);
        }
    }
    let ranges: Vec<_> = spans.iter().map(|(name, (start, bytes))| (name.as_str(), *start, *bytes, false)).collect();
    Ok(Reading { loans: Some(Loans::take(&ranges)?), exports })
}
