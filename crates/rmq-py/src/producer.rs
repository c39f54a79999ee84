//! `rmq._rmq.NativeProducer` (under `rmq.Producer`): sends (sync, async, oneway, batches,
//! Arrow-style column batches) and transaction ends, and the `SendResult` they return.
//! Requests run on the I/O runtime with the GIL released; async results go to the callback
//! thread.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use rmq_client::{
    BatchEncoder, HalfBatchSent, HalfMessageSent, LocalTransactionState, Message, Producer,
    ProducerConfig, SendResult,
};
use rmq_common::Properties;
use rmq_protocol::header::CheckTransactionStateRequestHeader;
use rmq_protocol::{CommandHeader, ExtFields};

use crate::callbacks::{call_reporting, dispatch};
use crate::client::{
    block_on, client_err, from_py_queue, parse_enum, to_py_queue, ClientInstancePy,
};
use crate::errors::raise;
use crate::runtime::runtime;

/// Read an `rmq.Message` (any object with `topic`, `body`, `flag`, `properties`).
fn from_py_message(m: &Bound<'_, PyAny>) -> PyResult<Message> {
    let body = m.getattr("body")?;
    let body: Bytes = if let Ok(b) = body.cast::<PyBytes>() {
        Bytes::copy_from_slice(b.as_bytes())
    } else {
        Bytes::from(body.extract::<Vec<u8>>()?)
    };
    let props = m.getattr("properties")?;
    let mut properties = Properties::new();
    if !props.is_none() {
        for (k, v) in props.cast::<PyDict>()?.iter() {
            properties.put(k.extract::<String>()?, v.extract::<String>()?);
        }
    }
    Ok(Message {
        topic: m.getattr("topic")?.extract()?,
        flag: m.getattr("flag")?.extract()?,
        body,
        properties,
    })
}

/// A string column as Arrow keeps it: validity bitmap (None: no nulls), int32 offsets, data.
type StringColumn = (Option<Vec<u8>>, Vec<u8>, Vec<u8>);

/// The byte range of row `i` in a column with int32 little-endian `offsets` into data of
/// `data_len` bytes; None when the buffers do not cover it.
fn column_slice(offsets: &[u8], data_len: usize, i: usize) -> Option<(usize, usize)> {
    let at = |j: usize| {
        let b = offsets.get(j * 4..j * 4 + 4)?;
        usize::try_from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
    };
    let (a, b) = (at(i)?, at(i + 1)?);
    (a <= b && b <= data_len).then_some((a, b))
}

/// Row `i` of a string column: None when null, an error naming what is wrong.
fn column_str(col: &StringColumn, i: usize) -> Result<Option<&str>, &'static str> {
    let (validity, offsets, data) = col;
    if let Some(v) = validity {
        if v.get(i / 8).is_none_or(|byte| byte & (1 << (i % 8)) == 0) {
            return Ok(None);
        }
    }
    let (a, b) = column_slice(offsets, data.len(), i).ok_or("a string column")?;
    std::str::from_utf8(&data[a..b])
        .map(Some)
        .map_err(|_| "valid UTF-8 in a string column")
}

/// What a send returned.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
#[pyo3(name = "SendResult")]
pub(crate) struct SendResultPy {
    status: &'static str,
    msg_id: String,
    offset_msg_id: String,
    queue: Py<PyAny>,
    queue_offset: i64,
    transaction_id: Option<String>,
    region_id: String,
    trace_on: bool,
}

impl SendResultPy {
    fn new(py: Python<'_>, r: SendResult) -> PyResult<Self> {
        Ok(Self {
            status: r.status.name(),
            queue: to_py_queue(py, &r.queue)?,
            msg_id: r.msg_id,
            offset_msg_id: r.offset_msg_id,
            queue_offset: r.queue_offset,
            transaction_id: r.transaction_id,
            region_id: r.region_id,
            trace_on: r.trace_on,
        })
    }
}

#[pymethods]
impl SendResultPy {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "SendResult(status={}, msg_id={}, offset_msg_id={}, queue={}, queue_offset={})",
            self.status,
            self.msg_id,
            self.offset_msg_id,
            self.queue
                .bind(py)
                .str()
                .map_or_else(|_| "?".to_owned(), |s| s.to_string()),
            self.queue_offset
        )
    }
}

/// The native producer under `rmq.Producer`.
#[pyclass(module = "rmq._rmq", frozen, name = "NativeProducer")]
pub(crate) struct NativeProducer {
    inner: Arc<Producer>,
}

#[pymethods]
impl NativeProducer {
    // The keywords are the Python signature; they fill the Rust client's ProducerConfig.
    #[new]
    #[pyo3(signature = (instance, group, send_timeout_ms=3000, retry_times_when_send_failed=2,
        retry_another_broker_when_not_store_ok=false, max_message_size=4_194_304,
        compress_msg_body_over_howmuch=4096, compress_level=5,
        send_latency_fault_enable=false, default_topic_queue_nums=4, compress_type="ZLIB"))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of the Python signature"
    )]
    fn new(
        py: Python<'_>,
        instance: &ClientInstancePy,
        group: &str,
        send_timeout_ms: u64,
        retry_times_when_send_failed: u32,
        retry_another_broker_when_not_store_ok: bool,
        max_message_size: usize,
        compress_msg_body_over_howmuch: usize,
        compress_level: u32,
        send_latency_fault_enable: bool,
        default_topic_queue_nums: i32,
        compress_type: &str,
    ) -> PyResult<Self> {
        let mut config = ProducerConfig::new(group);
        config.compress_type = compress_type
            .parse()
            .map_err(|e| raise(py, "ConfigError", format!("compress_type: {e}")))?;
        config.send_timeout = Duration::from_millis(send_timeout_ms);
        config.retry_times_when_send_failed = retry_times_when_send_failed;
        config.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok;
        config.max_message_size = max_message_size;
        config.compress_over = compress_msg_body_over_howmuch;
        config.compress_level = compress_level;
        config.send_latency_fault_enable = send_latency_fault_enable;
        config.default_topic_queue_nums = default_topic_queue_nums;
        Ok(Self {
            inner: Producer::new(instance.inner.clone(), config),
        })
    }

    /// Send and wait; to `queue` (one attempt) when given, else round-robin with retries.
    #[pyo3(signature = (message, queue=None))]
    fn send(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        queue: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<SendResultPy> {
        let msg = from_py_message(message)?;
        let queue = queue.map(from_py_queue).transpose()?;
        let p = self.inner.clone();
        let r = block_on(py, async move {
            match queue {
                Some(q) => p.send_to_queue(msg, &q).await,
                None => p.send(msg).await,
            }
        })?;
        SendResultPy::new(py, r)
    }

    /// Send without blocking; `callback(result, error)` runs on the callback thread.
    #[pyo3(signature = (message, callback, queue=None))]
    fn send_async(
        &self,
        message: &Bound<'_, PyAny>,
        callback: Py<PyAny>,
        queue: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let msg = from_py_message(message)?;
        let queue = queue.map(from_py_queue).transpose()?;
        let p = self.inner.clone();
        runtime().spawn(async move {
            let r = match queue {
                Some(q) => p.send_to_queue(msg, &q).await,
                None => p.send(msg).await,
            };
            dispatch(Box::new(move |py| {
                let args = match r
                    .map_err(|e| client_err(py, &e))
                    .and_then(|r| SendResultPy::new(py, r).and_then(|r| Py::new(py, r)))
                {
                    Ok(r) => (Some(r.into_any()), None),
                    Err(e) => (None, Some(e.into_value(py).into_any())),
                };
                call_reporting(py, &callback, args);
            }));
        });
        Ok(())
    }

    /// Send without waiting for the broker.
    #[pyo3(signature = (message, queue=None))]
    fn send_oneway(
        &self,
        py: Python<'_>,
        message: &Bound<'_, PyAny>,
        queue: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let msg = from_py_message(message)?;
        let queue = queue.map(from_py_queue).transpose()?;
        let p = self.inner.clone();
        block_on(py, async move { p.send_oneway(msg, queue).await })
    }

    /// Send rows `start..end` of Arrow-style column buffers as one SEND_BATCH_MESSAGE to
    /// `topic`, without a Python object per row: bodies are `body_offsets` (int32, little
    /// endian) into `body_data`; `tags` and `keys`, when given, are `(validity, offsets,
    /// data)` of string columns (a null row has no TAGS / KEYS). Row `i` gets `UNIQ_KEY`
    /// `id_head` followed by `first_id + i - start` in 12 decimal digits, and every row the
    /// `properties` given.
    // The keywords are the Python signature; the Rust side takes the rows as one ColumnRows.
    #[pyo3(signature = (topic, queue, start, end, body_offsets, body_data, id_head, first_id,
        tags=None, keys=None, properties=None))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of the Python signature"
    )]
    fn send_batch_columns(
        &self,
        py: Python<'_>,
        topic: &str,
        queue: Option<&Bound<'_, PyAny>>,
        start: usize,
        end: usize,
        body_offsets: &[u8],
        body_data: &[u8],
        id_head: &str,
        first_id: u64,
        tags: Option<StringColumn>,
        keys: Option<StringColumn>,
        properties: Option<HashMap<String, String>>,
    ) -> PyResult<SendResultPy> {
        let rows = ColumnRows {
            start,
            end,
            body_offsets,
            body_data,
            id_head,
            first_id,
            tags,
            keys,
        };
        let common: Vec<(String, String)> = properties.into_iter().flatten().collect();
        let batch = rows.encode(py, topic, &common)?;
        let queue = queue.map(from_py_queue).transpose()?;
        let p = self.inner.clone();
        let r = block_on(py, async move { p.send_encoded_batch(batch, queue).await })?;
        SendResultPy::new(py, r)
    }

    /// Send messages of one topic as one SEND_BATCH_MESSAGE.
    #[pyo3(signature = (messages, queue=None))]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn send_batch(
        &self,
        py: Python<'_>,
        messages: Vec<Bound<'_, PyAny>>,
        queue: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<SendResultPy> {
        let msgs = messages
            .iter()
            .map(from_py_message)
            .collect::<PyResult<Vec<_>>>()?;
        let queue = queue.map(from_py_queue).transpose()?;
        let p = self.inner.clone();
        let r = block_on(py, async move { p.send_batch(msgs, queue).await })?;
        SendResultPy::new(py, r)
    }

    /// END_TRANSACTION (oneway) for the half message `result` was sent as: `state` is
    /// ``COMMIT_MESSAGE``, ``ROLLBACK_MESSAGE`` or ``UNKNOW``.
    #[pyo3(signature = (result, state, remark=None))]
    fn end_transaction(
        &self,
        py: Python<'_>,
        result: &SendResultPy,
        state: &str,
        remark: Option<String>,
    ) -> PyResult<()> {
        let state = parse_enum("transaction state", state, &LocalTransactionState::ALL)?;
        let sent = HalfMessageSent {
            queue: from_py_queue(result.queue.bind(py))?,
            offset_msg_id: result.offset_msg_id.clone(),
            msg_id: result.msg_id.clone(),
            queue_offset: result.queue_offset,
            transaction_id: result.transaction_id.clone(),
        };
        let p = self.inner.clone();
        block_on(
            py,
            async move { p.end_transaction(&sent, state, remark).await },
        )
    }

    /// End the half messages of transactional batch sends, each `(queue, offset_msg_id,
    /// msg_id, queue_offset)` as a batch's SendResult has them (comma-separated ids), with one
    /// END_TRANSACTION request per half: a queue's halves in order, the queues in parallel.
    /// Returns how many were ended; raises the first failure after trying all.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn end_transactions(
        &self,
        py: Python<'_>,
        halves: Vec<(Bound<'_, PyAny>, String, String, i64)>,
        state: &str,
    ) -> PyResult<usize> {
        let state = parse_enum("transaction state", state, &LocalTransactionState::ALL)?;
        let sent = halves
            .iter()
            .map(|(queue, offset_msg_ids, msg_ids, queue_offset)| {
                Ok(HalfBatchSent {
                    queue: from_py_queue(queue)?,
                    offset_msg_ids: offset_msg_ids.clone(),
                    msg_ids: msg_ids.clone(),
                    queue_offset: *queue_offset,
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        let p = self.inner.clone();
        block_on(py, async move { p.end_transactions(&sent, state).await })
    }

    /// Answer a CHECK_TRANSACTION_STATE from `broker_addr` whose header fields are
    /// `check_fields`, about the message with unique id `msg_id` (END_TRANSACTION, oneway,
    /// fromTransactionCheck).
    #[pyo3(signature = (broker_addr, check_fields, msg_id, state, remark=None))]
    fn end_transaction_from_check(
        &self,
        py: Python<'_>,
        broker_addr: &str,
        check_fields: HashMap<String, String>,
        msg_id: &str,
        state: &str,
        remark: Option<String>,
    ) -> PyResult<()> {
        let state = parse_enum("transaction state", state, &LocalTransactionState::ALL)?;
        let fields: ExtFields = check_fields.into_iter().collect();
        let check = CheckTransactionStateRequestHeader::from_ext_fields(&fields).map_err(|e| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "not a CHECK_TRANSACTION_STATE header: {e}"
            ))
        })?;
        let (p, addr, id) = (
            self.inner.clone(),
            broker_addr.to_owned(),
            msg_id.to_owned(),
        );
        block_on(py, async move {
            p.end_transaction_from_check(&addr, &check, &id, state, remark)
                .await
        })
    }

    /// Writable queues of `topic` (for selectors).
    fn publish_queues(&self, py: Python<'_>, topic: &str) -> PyResult<Vec<Py<PyAny>>> {
        let (p, t) = (self.inner.clone(), topic.to_owned());
        let qs = block_on(py, async move { p.publish_queues(&t).await })?;
        qs.iter().map(|q| to_py_queue(py, q)).collect()
    }

    /// Stop announcing the group and tell the brokers.
    fn shutdown(&self, py: Python<'_>) {
        let p = self.inner.clone();
        py.detach(|| {
            runtime().block_on(async move {
                p.instance().unregister_producer(&p.config().group).await;
            });
        });
    }
}

/// Rows `start..end` of Arrow-style column buffers, to be sent as one batch (see
/// `NativeProducer.send_batch_columns`).
struct ColumnRows<'a> {
    start: usize,
    end: usize,
    body_offsets: &'a [u8],
    body_data: &'a [u8],
    id_head: &'a str,
    first_id: u64,
    tags: Option<StringColumn>,
    keys: Option<StringColumn>,
}

impl ColumnRows<'_> {
    /// The rows as one SEND_BATCH_MESSAGE body to `topic`, each with the `common` properties.
    fn encode(
        &self,
        py: Python<'_>,
        topic: &str,
        common: &[(String, String)],
    ) -> PyResult<BatchEncoder> {
        let (start, end) = (self.start, self.end);
        let bad = |what: &str| {
            PyValueError::new_err(format!(
                "send_batch_columns: {what} does not cover rows {start}..{end}"
            ))
        };
        let body_data = self.body_data;
        let rows = end.saturating_sub(start);
        let mut batch = BatchEncoder::new(topic.to_owned(), common, body_data.len() + rows * 96);
        let mut id = String::with_capacity(self.id_head.len() + 12);
        for i in start..end {
            let (a, b) = column_slice(self.body_offsets, body_data.len(), i)
                .ok_or_else(|| bad("body_offsets"))?;
            id.clear();
            // Writing to a String cannot fail.
            let _ = write!(
                id,
                "{}{:012}",
                self.id_head,
                self.first_id + (i - start) as u64
            );
            let tag = match &self.tags {
                Some(c) => column_str(c, i).map_err(bad)?,
                None => None,
            };
            let key = match &self.keys {
                Some(c) => column_str(c, i).map_err(bad)?,
                None => None,
            };
            batch
                .push(&body_data[a..b], &id, tag, key)
                .map_err(|e| client_err(py, &e))?;
        }
        Ok(batch)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<NativeProducer>()?;
    m.add_class::<SendResultPy>()?;
    Ok(())
}
