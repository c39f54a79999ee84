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

use crate::errors::raise;
use crate::remoting::PyHandler;
use crate::runtime::{attach_if_alive, runtime};
use crate::store::PyMessageStore;

/// A running broker server over a [`PyMessageStore`].
#[pyclass(module = "rmq._rmq")]
pub(crate) struct BrokerServer {
    pub(crate) controller: BrokerController,
    handle: Mutex<Option<rmq_remoting::ServerHandle>>,
    local_addr: String,
}

#[pymethods]
impl BrokerServer {
    #[new]
    #[pyo3(signature = (store, config, host, port, handler=None))]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
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
            c.set(k, v).map_err(|e| raise(py, "ConfigError", e))?;
        }
        c.config_dir = PathBuf::from(&store.root).join("config");
        let fallback = handler.map(|h| Arc::new(PyHandler::new(h)) as Arc<dyn RequestHandler>);
        let controller =
            BrokerController::new(c, Arc::clone(&store.inner), fallback).map_err(|e| match e {
                rmq_broker::BrokerError::Acl(msg) => raise(py, "ConfigError", msg),
                e @ rmq_broker::BrokerError::Tls(_) => raise(py, "ConfigError", e.to_string()),
                e => raise(py, "StoreError", e.to_string()),
            })?;
        let addr: SocketAddr = format!("{host}:{port}").parse().map_err(|_| {
            raise(
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
            .map_err(|e| raise(py, "StoreError", e.to_string()))
    }

    /// Change `brokerPermission` while serving: sends and pulls see it at once, and the topic
    /// data version moves on (the topic change listener fires, so registration follows).
    fn set_broker_permission(&self, py: Python<'_>, perm: i32) -> PyResult<()> {
        // Bounded by the config schema, as the config file's value is.
        rmq_common::config_schema::check_broker_value("brokerPermission", &perm.to_string())
            .map_err(|e| crate::errors::raise(py, "ConfigError", e.to_string()))?;
        py.detach(|| self.controller.set_broker_permission(perm));
        Ok(())
    }

    /// The open connections of producer group `group` as `(connection id, client id, client
    /// address)`, oldest first (from heartbeats; gone on close, unregister or expiry).
    fn producer_connections(&self, group: &str) -> Vec<(u64, String, String)> {
        self.controller
            .broker()
            .producers
            .channels(group)
            .into_iter()
            .map(|c| (c.conn.id(), c.client_id, c.conn.peer().to_string()))
            .collect()
    }

    /// Send CHECK_TRANSACTION_STATE (oneway) about the half message stored at
    /// `commit_log_offset` to producer connection `connection_id`. False when that connection
    /// is no longer an open producer connection; raises StoreError when no half message is
    /// stored there.
    fn check_transaction_state(
        &self,
        py: Python<'_>,
        connection_id: u64,
        commit_log_offset: i64,
    ) -> PyResult<bool> {
        py.detach(|| {
            runtime().block_on(
                self.controller
                    .check_transaction_state(connection_id, commit_log_offset),
            )
        })
        .map_err(|e| raise(py, "StoreError", e.to_string()))
    }

    /// The committed offset of `group` in queue `queue_id` of `topic`; -1 when none.
    fn query_consumer_offset(&self, group: &str, topic: &str, queue_id: i32) -> i64 {
        self.controller
            .broker()
            .offsets
            .query(group, topic, queue_id)
    }

    /// Commit `offset` for `group` in queue `queue_id` of `topic` (written by `persist`).
    fn commit_consumer_offset(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.controller
            .broker()
            .offsets
            .commit(group, topic, queue_id, offset);
    }

    /// Create `topic` with `queue_nums` read and write queues and permission `perm` unless it
    /// exists (RocketMQ's `createTopicInSendMessageBackMethod`, used for system topics).
    #[pyo3(signature = (topic, queue_nums=1, perm=6))]
    fn create_topic_if_absent(&self, topic: &str, queue_nums: i32, perm: i32) {
        self.controller
            .broker()
            .topics
            .create_in_send_back(topic, queue_nums, perm, 0);
    }

    /// Call `callback()` after every topic-table change, before the request that changed the
    /// table is answered (the broker registers with its nameservers there, as RocketMQ does).
    /// The callback may block: on an I/O worker it runs under `block_in_place`, so the
    /// runtime's other tasks (the registration's own request among them) move to other
    /// threads instead of waiting for it. Once the interpreter is exiting it is not called.
    fn set_topic_change_listener(&self, callback: Py<PyAny>) {
        self.controller.set_topic_change_listener(Arc::new(move || {
            let call = || {
                attach_if_alive(|py| {
                    if let Err(e) = callback.call0(py) {
                        e.print(py);
                    }
                });
            };
            match tokio::runtime::Handle::try_current() {
                Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                    tokio::task::block_in_place(call);
                }
                _ => call(),
            }
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
            .map_err(|e| raise(py, "StoreError", e.to_string()))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BrokerServer>()?;
    Ok(())
}
