//! The client-side unique id read back (`rmq_client::decode_uniq_id`) for the admin tool's
//! `decodeMessageId`; the offset message id's face is in `common`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Decode a unique message id (`UNIQ_KEY`) into `(producer ip, pid, unix ms made at)`.
#[pyfunction]
fn decode_uniq_id(msg_id: &str) -> PyResult<(String, u16, i64)> {
    rmq_client::decode_uniq_id(msg_id, rmq_common::time::now_millis())
        .map(|p| (p.ip.to_string(), p.pid, p.time_ms))
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "invalid unique message id {msg_id:?}: expected 32 (IPv4) or 56 (IPv6) hex digits"
            ))
        })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(decode_uniq_id, m)?)?;
    Ok(())
}
