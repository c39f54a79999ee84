//! `StoredMessage`: a CommitLog record as Python sees it, whether it was read from the local
//! store or pulled over the wire. A decoded record becomes a `StoredMessage` in exactly one
//! place, [`StoredMessage::from_ext`]; the store's reads and the pull/query/view bodies
//! decode their bytes into the same `MessageExt` first ([`StoredMessage::from_record`]).
//!
//! The Python object wraps the decoded `MessageExt` as it is (decoding runs off the GIL, on
//! the I/O runtime) and makes Python values only when an attribute is read: a consumer
//! hands thousands of messages a second to listeners that mostly read a field or two, and
//! building every string, the properties dict and the body for each message under the GIL
//! was most of the callback thread's time. The body is copied once, on first read, and kept.

use std::collections::HashMap;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use rmq_common::properties::PropertyKey;
use rmq_protocol::message_decoder::{decode_message_at, iter_messages, MessageExt};

/// A stored message, decoded.
#[pyclass(module = "rmq._rmq", frozen)]
pub(crate) struct StoredMessage {
    ext: MessageExt,
    body: PyOnceLock<Py<PyBytes>>,
}

#[pymethods]
impl StoredMessage {
    #[getter]
    fn topic(&self) -> &str {
        &self.ext.topic
    }

    #[getter]
    fn queue_id(&self) -> i32 {
        self.ext.queue_id
    }

    #[getter]
    fn queue_offset(&self) -> i64 {
        self.ext.queue_offset
    }

    #[getter]
    fn commit_log_offset(&self) -> i64 {
        self.ext.commit_log_offset
    }

    #[getter]
    fn store_size(&self) -> usize {
        usize::try_from(self.ext.store_size).unwrap_or_default()
    }

    /// The body, copied into a Python `bytes` on first read and kept.
    #[getter]
    fn body(&self, py: Python<'_>) -> Py<PyBytes> {
        self.body
            .get_or_init(py, || PyBytes::new(py, &self.ext.body).unbind())
            .clone_ref(py)
    }

    /// `len(body)` without making the bytes (what flow control counts).
    #[getter]
    fn body_size(&self) -> usize {
        self.ext.body.len()
    }

    #[getter]
    fn body_crc(&self) -> i32 {
        self.ext.body_crc
    }

    #[getter]
    fn flag(&self) -> i32 {
        self.ext.flag
    }

    #[getter]
    fn sys_flag(&self) -> i32 {
        self.ext.sys_flag
    }

    #[getter]
    fn born_timestamp(&self) -> i64 {
        self.ext.born_timestamp
    }

    #[getter]
    fn born_host(&self) -> String {
        self.ext.born_host.to_string()
    }

    #[getter]
    fn store_timestamp(&self) -> i64 {
        self.ext.store_timestamp
    }

    #[getter]
    fn store_host(&self) -> String {
        self.ext.store_host.to_string()
    }

    #[getter]
    fn reconsume_times(&self) -> i32 {
        self.ext.reconsume_times
    }

    #[getter]
    fn prepared_transaction_offset(&self) -> i64 {
        self.ext.prepared_transaction_offset
    }

    /// A new dict of the properties on each read (as before: callers may change theirs).
    #[getter]
    fn properties(&self) -> HashMap<&str, &str> {
        self.ext.properties.iter().collect()
    }

    #[getter]
    fn msg_id(&self) -> &str {
        self.ext.client_msg_id()
    }

    #[getter]
    fn offset_msg_id(&self) -> &str {
        &self.ext.msg_id
    }

    #[getter]
    fn body_error(&self) -> Option<&str> {
        self.ext.body_error.as_deref()
    }

    #[getter]
    fn tags(&self) -> Option<&str> {
        self.ext.tags()
    }

    #[getter]
    fn keys(&self) -> Option<&str> {
        self.ext.keys()
    }

    fn __repr__(&self) -> String {
        format!(
            "StoredMessage(topic={:?}, queue_id={}, queue_offset={}, msg_id={})",
            self.ext.topic,
            self.ext.queue_id,
            self.ext.queue_offset,
            self.ext.client_msg_id()
        )
    }
}

impl StoredMessage {
    /// The one mapping of a decoded record onto the Python object.
    pub(crate) fn from_ext(py: Python<'_>, m: MessageExt) -> PyResult<Py<Self>> {
        Py::new(
            py,
            Self {
                ext: m,
                body: PyOnceLock::new(),
            },
        )
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
        let m = &self.ext;
        rmq_client::SendBack {
            group: group.to_owned(),
            broker_name: broker_name.to_owned(),
            store_host: m.store_host.to_string(),
            commit_log_offset: m.commit_log_offset,
            origin_msg_id: m
                .properties
                .get(PropertyKey::ORIGIN_MESSAGE_ID)
                .unwrap_or(m.client_msg_id())
                .to_owned(),
            origin_topic: m.topic.clone(),
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
