//! Small facts and helpers of `rmq-common` and `rmq-protocol` that Python calls directly:
//! Java's string hash, offset message ids, body decompression, and the module's version and
//! queue-count limit, and the ACL credentials every client class takes as keywords. (The code
//! tables are `RequestCode`/`ResponseCode` in `names.rs`.)

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{parse_addr, raise};

/// Java's `String.hashCode()`.
#[pyfunction]
fn java_string_hash(s: &str) -> i32 {
    rmq_common::java_string_hash(s)
}

/// RocketMQ's offset message id.
#[pyfunction]
fn create_offset_msg_id(store_host: &str, commit_log_offset: i64) -> PyResult<String> {
    Ok(rmq_common::create_offset_msg_id(
        parse_addr(store_host, "store_host")?,
        commit_log_offset,
    ))
}

/// Decode an offset message id into `("ip:port", offset)`.
#[pyfunction]
fn decode_offset_msg_id(msg_id: &str) -> PyResult<(String, i64)> {
    rmq_common::decode_offset_msg_id(msg_id)
        .map(|(a, o)| (a.to_string(), o))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// The body as the producer sent it (`rmq_common::compression`, the one codec): the
/// decompressed bytes when `sys_flag` marks it compressed (ZLIB, LZ4 or ZSTD), else the body
/// itself. At most `max_size` bytes come out.
#[pyfunction]
#[pyo3(signature = (sys_flag, body, max_size=4_194_304))]
fn decompress_body(
    py: Python<'_>,
    sys_flag: i32,
    body: &Bound<'_, PyBytes>,
    max_size: usize,
) -> PyResult<Py<PyBytes>> {
    match rmq_common::decompress_body(sys_flag, body.as_bytes(), max_size) {
        Ok(None) => Ok(body.clone().unbind()),
        Ok(Some(out)) => Ok(PyBytes::new(py, &out).unbind()),
        Err(e) => Err(raise(py, "ClientError", e.to_string())),
    }
}

/// The credentials the keywords `access_key`, `secret_key`, `security_token` give: none when
/// neither key is set (empty counts as unset), an error naming the missing one when only one
/// is.
pub(crate) fn session_credentials(
    access_key: Option<String>,
    secret_key: Option<String>,
    security_token: Option<String>,
) -> PyResult<Option<rmq_protocol::acl::SessionCredentials>> {
    let set = |v: Option<String>| v.filter(|s| !s.is_empty());
    match (set(access_key), set(secret_key)) {
        (None, None) => Ok(None),
        (Some(access_key), Some(secret_key)) => Ok(Some(rmq_protocol::acl::SessionCredentials {
            access_key,
            secret_key,
            security_token: set(security_token),
        })),
        (Some(_), None) => Err(PyValueError::new_err(
            "access_key is set but secret_key is not: ACL signatures need both (give the \
             account's secretKey from plain_acl.yml)",
        )),
        (None, Some(_)) => Err(PyValueError::new_err(
            "secret_key is set but access_key is not: ACL signatures need both (give the \
             account's accessKey from plain_acl.yml)",
        )),
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_QUEUE_NUMS", rmq_protocol::body::MAX_QUEUE_NUMS)?;
    m.add_function(wrap_pyfunction!(decompress_body, m)?)?;
    m.add_function(wrap_pyfunction!(java_string_hash, m)?)?;
    m.add_function(wrap_pyfunction!(create_offset_msg_id, m)?)?;
    m.add_function(wrap_pyfunction!(decode_offset_msg_id, m)?)?;
    Ok(())
}
