//! `write_file_atomic`: the store's one safe replacement of a persisted file
//! (`rmq_store::atomic_file`), for the files Python writes (delay offsets, a broadcasting
//! consumer's offsets, the broker config, Spark's commit records), so both languages replace
//! files the same way and a full disk never leaves a torn or temp file behind.

use std::path::PathBuf;

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use rmq_store::atomic_file::{write_file_atomic as write, AtomicWrite};

/// Replace the file at `path` with `data`: a `.tmp` file (synced with `sync`), the old file
/// kept as `.bak` with `backup`, a rename, the directory synced with `sync`. Raises `OSError`
/// (errno, a message naming the file and the step) and leaves the old file as it was.
#[pyfunction]
#[pyo3(signature = (path, data, *, backup=false, sync=true))]
#[expect(
    clippy::needless_pass_by_value,
    reason = "pyo3 extracts str and os.PathLike into an owned PathBuf"
)]
fn write_file_atomic(
    py: Python<'_>,
    path: PathBuf,
    data: &[u8],
    backup: bool,
    sync: bool,
) -> PyResult<()> {
    py.detach(|| write(&path, data, AtomicWrite { backup, sync }))
        .map_err(|e| {
            let errno = e.source.raw_os_error().unwrap_or(0);
            PyOSError::new_err((errno, e.to_string()))
        })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(write_file_atomic, m)?)?;
    Ok(())
}
