//! `StoredMessage`: a CommitLog record as Python sees it, whether it was read from the local
//! store or pulled over the wire. A decoded record becomes a `StoredMessage` in exactly one
//! place, [`StoredMessage::from_ext`]; the store's reads and the pull/query/view bodies
//! decode their bytes into the same `MessageExt` first ([`StoredMessage::from_record`]).

use std::collections::HashMap;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmq_common::properties::PropertyKey;
use rmq_protocol::message_decoder::{decode_message_at, iter_messages, MessageExt};

/// A stored message, decoded.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
pub(crate) struct StoredMessage {
    topic: String,
    queue_id: i32,
    queue_offset: i64,
    commit_log_offset: i64,
    store_size: usize,
    body: Py<PyBytes>,
    body_crc: i32,
    flag: i32,
    sys_flag: i32,
    born_timestamp: i64,
    born_host: String,
    store_timestamp: i64,
    store_host: String,
    reconsume_times: i32,
    prepared_transaction_offset: i64,
    properties: HashMap<String, String>,
    msg_id: String,
    offset_msg_id: String,
    body_error: Option<String>,
}

#[pymethods]
impl StoredMessage {
    #[getter]
    fn tags(&self) -> Option<String> {
        self.properties.get(PropertyKey::TAGS).cloned()
    }

    #[getter]
    fn keys(&self) -> Option<String> {
        self.properties.get(PropertyKey::KEYS).cloned()
    }

    fn __repr__(&self) -> String {
        format!(
            "StoredMessage(topic={:?}, queue_id={}, queue_offset={}, msg_id={})",
            self.topic, self.queue_id, self.queue_offset, self.msg_id
        )
    }
}

impl StoredMessage {
    /// The one mapping of a decoded record onto the Python object.
    pub(crate) fn from_ext(py: Python<'_>, m: MessageExt) -> PyResult<Py<Self>> {
        let msg = Self {
            msg_id: m.client_msg_id().to_owned(),
            store_size: usize::try_from(m.store_size).unwrap_or_default(),
            body: PyBytes::new(py, &m.body).unbind(),
            born_host: m.born_host.to_string(),
            store_host: m.store_host.to_string(),
            properties: m
                .properties
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
            offset_msg_id: m.msg_id,
            body_error: m.body_error,
            topic: m.topic,
            queue_id: m.queue_id,
            queue_offset: m.queue_offset,
            commit_log_offset: m.commit_log_offset,
            body_crc: m.body_crc,
            flag: m.flag,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            store_timestamp: m.store_timestamp,
            reconsume_times: m.reconsume_times,
            prepared_transaction_offset: m.prepared_transaction_offset,
        };
        Py::new(py, msg)
    }

    /// The record at the start of `record` (a store read), or None when it is not one.
    pub(crate) fn from_record(py: Python<'_>, record: &[u8]) -> PyResult<Option<Py<Self>>> {
        match decode_message_at(&Bytes::copy_from_slice(record), 0) {
            Ok(m) => Self::from_ext(py, m).map(Some),
            Err(_) => Ok(None),
        }
    }

    /// What CONSUMER_SEND_MSG_BACK needs to hand this message back.
    pub(crate) fn send_back(
        &self,
        group: &str,
        broker_name: &str,
        delay_level: i32,
        max_reconsume_times: i32,
    ) -> rmq_client::SendBack {
        rmq_client::SendBack {
            group: group.to_owned(),
            broker_name: broker_name.to_owned(),
            store_host: self.store_host.clone(),
            commit_log_offset: self.commit_log_offset,
            origin_msg_id: self
                .properties
                .get(PropertyKey::ORIGIN_MESSAGE_ID)
                .unwrap_or(&self.msg_id)
                .clone(),
            origin_topic: self.topic.clone(),
            delay_level,
            max_reconsume_times,
        }
    }
}

/// Decode a body of concatenated CommitLog records (a PULL_MESSAGE, QUERY_MESSAGE or
/// VIEW_MESSAGE_BY_ID response). Stops at the first record that is not whole or whose body
/// does not match its CRC.
#[pyfunction]
fn decode_messages(py: Python<'_>, body: &[u8]) -> PyResult<Vec<Py<StoredMessage>>> {
    iter_messages(Bytes::copy_from_slice(body))
        .map_while(Result::ok)
        .take_while(|m| rmq_common::body_crc(&m.body) == m.body_crc)
        .map(|m| StoredMessage::from_ext(py, m))
        .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StoredMessage>()?;
    m.add_function(wrap_pyfunction!(decode_messages, m)?)?;
    Ok(())
}
