//! How Rust errors and bad input become Python exceptions: every error is raised as a class
//! of the pure-Python `rmq.errors` module, so Python has one exception tree. The store's
//! error kinds are mapped here; the client's in `client.rs` (`client_err`), the transport's in
//! `remoting.rs`.

use std::net::SocketAddr;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use rmq_store::StoreError;

/// An instance of `rmq.errors.<class>` carrying `message` (a RuntimeError if that module
/// cannot be imported).
pub(crate) fn raise(py: Python<'_>, class: &str, message: String) -> PyErr {
    let made = py
        .import("rmq.errors")
        .and_then(|m| m.getattr(class))
        .and_then(|c| c.call1((message.clone(),)));
    match made {
        Ok(obj) => PyErr::from_value(obj),
        Err(_) => PyRuntimeError::new_err(message),
    }
}

/// The `rmq.errors` class a store error is raised as.
fn store_error_class(e: &StoreError) -> &'static str {
    match e {
        StoreError::Config { .. } | StoreError::ConfigValue(_) => "ConfigError",
        StoreError::MessageIllegal(_)
        | StoreError::PropertiesSizeExceeded(_)
        | StoreError::WheelTimerMsgIllegal { .. } => "MessageIllegalError",
        StoreError::WheelTimerNotEnable => "BrokerSystemError",
        StoreError::ServiceNotAvailable(_) => "ServiceNotAvailableError",
        StoreError::OsPageCacheBusy(_) | StoreError::NoBufferInStorePool => "SystemBusyError",
        _ => "StoreError",
    }
}

/// A store error as Python sees it.
pub(crate) fn store_err(py: Python<'_>, e: &StoreError) -> PyErr {
    raise(py, store_error_class(e), e.to_string())
}

/// `s` as an `ip:port`; `what` names the argument in the error.
pub(crate) fn parse_addr(s: &str, what: &str) -> PyResult<SocketAddr> {
    s.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} {s:?} is not an address like 127.0.0.1:10911"
        ))
    })
}
