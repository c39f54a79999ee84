//! The broker-group half of `BrokerServer` (master/slave): the role the request path
//! enforces (a slave refuses writes naming its master) and the tables a slave copies from
//! its master every 10 s (topics, subscription groups, consumer offsets), taken whole from
//! the master's JSON bodies. The decisions (when, from whom, which offsets win) are
//! `rmq.broker.slave_sync`'s.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmq_protocol::body::{
    ConsumerOffsetSerializeWrapper, SubscriptionGroupWrapper, TopicConfigSerializeWrapper,
};
use rmq_protocol::RemotingJson;

use crate::broker::BrokerServer;
use crate::errors::raise;

fn parse<T: RemotingJson>(body: &[u8], what: &str) -> PyResult<T> {
    T::from_json_bytes(body)
        .map_err(|e| PyValueError::new_err(format!("the master's {what} body is not valid: {e}")))
}

#[pymethods]
impl BrokerServer {
    /// `master` is this slave's master address ("" while unknown): sends, batches and
    /// send-backs are refused with SERVICE_NOT_AVAILABLE naming it. `None`: a master.
    #[pyo3(signature = (master))]
    fn set_slave_of(&self, master: Option<String>) {
        self.controller.broker().set_slave_of(master);
    }

    /// The master this broker follows, if it is a slave.
    #[getter]
    fn slave_of(&self) -> Option<String> {
        self.controller.broker().slave_of()
    }

    /// Every committed offset as GET_ALL_CONSUMER_OFFSET (43) serves it.
    fn consumer_offsets_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let body = self
            .controller
            .broker()
            .offsets
            .wrapper()
            .to_json_bytes()
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(PyBytes::new(py, &body))
    }

    /// Take every offset of a `ConsumerOffsetSerializeWrapper` body (fastjson's bare keys
    /// accepted); offsets it does not name are kept. Raises ValueError for a bad body.
    fn put_all_consumer_offsets(&self, body: &[u8]) -> PyResult<()> {
        let w: ConsumerOffsetSerializeWrapper = parse(body, "consumer offset")?;
        self.controller.broker().offsets.put_all(w);
        Ok(())
    }

    /// Replace the topic table by the master's GET_ALL_TOPIC_CONFIG body when its data
    /// version differs; whether it did. ValueError for a bad body, StoreError when
    /// `topics.json` cannot be written.
    fn replace_topic_configs(&self, py: Python<'_>, body: &[u8]) -> PyResult<bool> {
        let w: TopicConfigSerializeWrapper = parse(body, "topic config")?;
        self.controller
            .broker()
            .topics
            .replace_from_master(w)
            .map_err(|e| raise(py, "StoreError", e.to_string()))
    }

    /// The same for GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body.
    fn replace_subscription_groups(&self, py: Python<'_>, body: &[u8]) -> PyResult<bool> {
        let w: SubscriptionGroupWrapper = parse(body, "subscription group")?;
        self.controller
            .broker()
            .groups
            .replace_from_master(w)
            .map_err(|e| raise(py, "StoreError", e.to_string()))
    }

    /// Add `key` = `value` to GET_BROKER_RUNTIME_INFO's table (`None` removes it): the
    /// broker group's epoch, which a rejoining slave reads from its new master.
    #[pyo3(signature = (key, value))]
    fn set_runtime_info(&self, key: &str, value: Option<String>) {
        self.controller.broker().set_extra_runtime_info(key, value);
    }
}
