//! The broker's network server for Python: Rust processors (send, pull, offsets, topics,
//! heartbeats) over the store, with the codes Rust does not serve handed to an optional
//! Python handler. Python decides the rest: configuration, nameserver registration, the
//! schedules.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmq_broker::controller::BrokerController;
use rmq_broker::BrokerConfig;
use rmq_protocol::RemotingJson;
use rmq_remoting::RequestHandler;

use crate::remoting::{runtime, PyHandler};
use crate::PyMessageStore;

/// A running broker server over a [`PyMessageStore`].
#[pyclass(module = "rmq._rmq")]
pub(crate) struct BrokerServer {
    controller: BrokerController,
    handle: Mutex<Option<rmq_remoting::ServerHandle>>,
    local_addr: String,
}

#[pymethods]
impl BrokerServer {
    #[new]
    #[pyo3(signature = (store, config, host, port, handler=None))]
    fn new(
        py: Python<'_>,
        store: PyRef<'_, PyMessageStore>,
        config: HashMap<String, String>,
        host: &str,
        port: u16,
        handler: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let mut c = BrokerConfig::default();
        for (k, v) in &config {
            c.set(k, v)
                .map_err(|e| crate::raise(py, "ConfigError", e))?;
        }
        c.config_dir = PathBuf::from(&store.root).join("config");
        let fallback = handler.map(|h| Arc::new(PyHandler::new(h)) as Arc<dyn RequestHandler>);
        let controller = BrokerController::new(c, Arc::clone(&store.inner), fallback)
            .map_err(|e| crate::raise(py, "StoreError", e.to_string()))?;
        let addr: SocketAddr = format!("{host}:{port}").parse().map_err(|_| {
            crate::raise(
                py,
                "ConfigError",
                format!("listen address {host}:{port} is not an ip:port"),
            )
        })?;
        let handle = py
            .detach(|| runtime().block_on(controller.start(addr)))
            .map_err(|e| {
                PyRuntimeError::new_err(format!(
                    "cannot listen on {addr}: {e} (is another broker using listenPort {port}?)"
                ))
            })?;
        let local_addr = handle.local_addr().to_string();
        Ok(Self {
            controller,
            handle: Mutex::new(Some(handle)),
            local_addr,
        })
    }

    /// The address actually bound.
    #[getter]
    fn local_addr(&self) -> String {
        self.local_addr.clone()
    }

    /// The REGISTER_BROKER body (topic configs and data version) as JSON.
    fn register_body<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let body = self
            .controller
            .register_body()
            .to_json_bytes()
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &body))
    }

    /// Write offsets, groups and topics (every 5 s and at shutdown).
    fn persist(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.controller.persist())
            .map_err(|e| crate::raise(py, "StoreError", e.to_string()))
    }

    /// Change `brokerPermission` while serving: sends and pulls see it at once, and the topic
    /// data version moves on (the topic change listener fires, so registration follows).
    fn set_broker_permission(&self, py: Python<'_>, perm: i32) -> PyResult<()> {
        if ![2, 4, 6].contains(&perm) {
            return Err(crate::raise(
                py,
                "ConfigError",
                format!(
                    "brokerPermission = {perm} is not allowed; use 6 (read and write), \
                     4 (read only) or 2 (write only)"
                ),
            ));
        }
        py.detach(|| self.controller.set_broker_permission(perm));
        Ok(())
    }

    /// Call `callback()` after every topic-table change (to register with nameservers soon).
    fn set_topic_change_listener(&self, callback: Py<PyAny>) {
        self.controller.set_topic_change_listener(Arc::new(move || {
            Python::attach(|py| {
                if let Err(e) = callback.call0(py) {
                    e.print(py);
                }
            });
        }));
    }

    /// Stop serving (close connections) and persist. Idempotent.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        let h = self
            .handle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = h {
            py.detach(|| runtime().block_on(h.shutdown()));
        }
        py.detach(|| self.controller.shutdown())
            .map_err(|e| crate::raise(py, "StoreError", e.to_string()))
    }
}
