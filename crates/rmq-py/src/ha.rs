//! The replication calls of `rmq._rmq.MessageStore` (the store's `ha` module does the work;
//! the Python control plane decides when to call these): the HA port, following a master,
//! the role switch, truncating the CommitLog for a rejoin, and the `HARuntimeInfo` JSON that
//! GET_BROKER_HA_STATUS also answers with.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmq_protocol::RemotingJson;
use rmq_store::config::ConfigValue;
use rmq_store::BrokerRole;

use crate::errors::store_err;
use crate::store::PyMessageStore;

#[pymethods]
impl PyMessageStore {
    /// The bound HA port while this store is a master accepting slaves; None on a slave.
    #[getter]
    fn ha_listen_port(&self) -> Option<u16> {
        self.inner.ha_listen_port()
    }

    /// The CommitLog max offset.
    #[getter(max_phy_offset)]
    fn commit_log_max_offset(&self) -> i64 {
        self.inner.get_max_phy_offset()
    }

    /// A slave (re)points its HA client at the master's HA address (host:port); "" stops
    /// following. The same address again changes nothing.
    fn ha_update_master_address(&self, py: Python<'_>, addr: &str) -> PyResult<()> {
        let store = &self.inner;
        py.detach(|| store.ha_update_master_address(addr))
            .map_err(|e| store_err(py, &e))
    }

    /// The replication figures as JSON in RocketMQ 5.x's `HARuntimeInfo` shape.
    fn ha_runtime_info(&self) -> PyResult<String> {
        let body = rmq_broker::processor::ha_status::ha_runtime_info(&self.inner);
        let bytes = body
            .to_json_bytes()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Drop every CommitLog byte at or after `offset` (a record's start or the current max)
    /// and the ConsumeQueue units pointing there; returns the new max offset.
    fn truncate_commit_log(&self, py: Python<'_>, offset: i64) -> PyResult<i64> {
        let store = &self.inner;
        py.detach(|| store.truncate_commit_log(offset))
            .map_err(|e| store_err(py, &e))
    }

    /// Switch the role at run time ("ASYNC_MASTER", "SYNC_MASTER" or "SLAVE").
    fn set_broker_role(&self, py: Python<'_>, role: &str) -> PyResult<()> {
        let role = BrokerRole::parse(role).ok_or_else(|| {
            PyValueError::new_err(format!(
                "broker role {role:?} is not one of ASYNC_MASTER, SYNC_MASTER, SLAVE"
            ))
        })?;
        let store = &self.inner;
        py.detach(|| store.set_broker_role(role))
            .map_err(|e| store_err(py, &e))
    }
}

pub(crate) fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
