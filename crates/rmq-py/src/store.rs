//! `rmq._rmq.MessageStore`: one broker's storage engine (`rmq-store`) for Python, and the
//! plain result objects its calls return. Every call that touches files or waits releases the
//! interpreter (`py.detach`), so Python threads keep running while the store appends, flushes
//! or reads. Records read back become `StoredMessage`s through `stored_message.rs`.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use rmq_common::properties::Properties;
use rmq_store::{MessageStore, MessageToStore, SelectMappedBufferResult, StoreConfig};

use crate::errors::{parse_addr, raise, store_err};
use crate::stored_message::StoredMessage;

/// What a put did.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
struct PutMessageResult {
    status: String,
    msg_id: String,
    wrote_offset: i64,
    wrote_bytes: usize,
    queue_offset: i64,
    store_timestamp: i64,
}

#[pymethods]
impl PutMessageResult {
    #[getter]
    fn ok(&self) -> bool {
        self.status == "PUT_OK"
    }

    fn __repr__(&self) -> String {
        format!(
            "PutMessageResult(status={}, msg_id={}, queue_offset={}, wrote_offset={})",
            self.status, self.msg_id, self.queue_offset, self.wrote_offset
        )
    }
}

/// A pull's result.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
struct GetMessageResult {
    status: String,
    next_begin_offset: i64,
    min_offset: i64,
    max_offset: i64,
    messages: Vec<Py<StoredMessage>>,
}

#[pymethods]
impl GetMessageResult {
    fn __repr__(&self) -> String {
        format!(
            "GetMessageResult(status={}, messages={}, next_begin_offset={})",
            self.status,
            self.messages.len(),
            self.next_begin_offset
        )
    }
}

/// ConsumeQueue units of one queue (what the delay scheduler reads of a level's queue).
#[pyclass(module = "rmq._rmq", frozen, get_all)]
struct ConsumeQueueUnits {
    min_offset: i64,
    max_offset: i64,
    units: Py<PyList>,
}

#[pymethods]
impl ConsumeQueueUnits {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "ConsumeQueueUnits(min_offset={}, max_offset={}, units={})",
            self.min_offset,
            self.max_offset,
            self.units.bind(py).len()
        )
    }
}

/// What one `MessageStore.deliver_scheduled` call did.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
struct DeliverResult {
    processed: usize,
    delivered: usize,
    skipped: usize,
    error: Option<String>,
}

#[pymethods]
impl DeliverResult {
    fn __repr__(&self) -> String {
        format!(
            "DeliverResult(processed={}, delivered={}, skipped={}, error={:?})",
            self.processed, self.delivered, self.skipped, self.error
        )
    }
}

/// One broker's storage engine.
#[pyclass(module = "rmq._rmq", frozen, name = "MessageStore")]
pub(crate) struct PyMessageStore {
    pub(crate) inner: Arc<MessageStore>,
    pub(crate) root: String,
}

/// The record fields `put_message` takes besides topic, queue, body and properties.
struct MessageFields {
    flag: i32,
    sys_flag: i32,
    born_timestamp: i64,
    born_host: SocketAddr,
    reconsume_times: i32,
    prepared_transaction_offset: i64,
}

impl MessageFields {
    fn to_store<'a>(
        &self,
        topic: &'a str,
        queue_id: i32,
        body: &'a [u8],
        properties: &'a [u8],
    ) -> MessageToStore<'a> {
        MessageToStore {
            topic,
            queue_id,
            flag: self.flag,
            body,
            properties,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: self.prepared_transaction_offset,
        }
    }
}

struct OwnedMessage {
    body: Vec<u8>,
    properties: Vec<u8>,
}

fn encode_properties(p: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    let Some(p) = p else { return Ok(Vec::new()) };
    if p.is_none() {
        return Ok(Vec::new());
    }
    let mut props = Properties::new();
    let items = p.call_method0("items")?;
    for item in items.try_iter()? {
        let (k, v): (String, String) = item?.extract()?;
        props.put(k, v);
    }
    Ok(props.encode().into_bytes())
}

#[pymethods]
impl PyMessageStore {
    #[new]
    #[pyo3(signature = (store_path_root_dir, config=None, store_host="127.0.0.1:10911", ha_tls=None))]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn new(
        py: Python<'_>,
        store_path_root_dir: &str,
        config: Option<HashMap<String, String>>,
        store_host: &str,
        ha_tls: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let mut c = StoreConfig::default();
        for (k, v) in config.unwrap_or_default() {
            c.set(&k, &v).map_err(|e| store_err(py, &e))?;
        }
        let host = parse_addr(store_host, "store_host")?;
        let root = store_path_root_dir.to_owned();
        let ha_tls = crate::tls::ha_tls(py, ha_tls.as_ref())?;
        let inner = py
            .detach(|| MessageStore::open_with_ha_tls(&root, c, host, ha_tls))
            .map_err(|e| store_err(py, &e))?;
        Ok(Self { inner, root })
    }

    #[getter]
    fn root_dir(&self) -> String {
        self.root.clone()
    }

    #[getter]
    fn last_exit_ok(&self) -> bool {
        self.inner.last_exit_ok()
    }

    #[getter]
    fn transient_store_pool_active(&self) -> bool {
        self.inner.transient_store_pool_active()
    }

    // The keywords are the Python signature; the Rust side takes them as one MessageFields.
    #[pyo3(signature = (topic, queue_id, body, properties=None, *, flag=0, sys_flag=0, born_timestamp=0, born_host="127.0.0.1:0", reconsume_times=0, prepared_transaction_offset=0))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of the Python signature"
    )]
    fn put_message(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        properties: Option<&Bound<'_, PyAny>>,
        flag: i32,
        sys_flag: i32,
        born_timestamp: i64,
        born_host: &str,
        reconsume_times: i32,
        prepared_transaction_offset: i64,
    ) -> PyResult<PutMessageResult> {
        let fields = MessageFields {
            flag,
            sys_flag,
            born_timestamp,
            born_host: parse_addr(born_host, "born_host")?,
            reconsume_times,
            prepared_transaction_offset,
        };
        self.put_one(py, topic, queue_id, body, properties, &fields)
    }

    #[pyo3(signature = (topic, queue_id, bodies, properties=None))]
    fn put_messages(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        bodies: Vec<Vec<u8>>,
        properties: Option<Vec<Option<Bound<'_, PyAny>>>>,
    ) -> PyResult<Vec<PutMessageResult>> {
        let props = properties.unwrap_or_default();
        if !props.is_empty() && props.len() != bodies.len() {
            return Err(PyValueError::new_err(format!(
                "properties has {} entries for {} bodies; give one per body or none",
                props.len(),
                bodies.len()
            )));
        }
        let mut owned = Vec::with_capacity(bodies.len());
        for (i, body) in bodies.into_iter().enumerate() {
            let p = encode_properties(props.get(i).and_then(|p| p.as_ref()))?;
            owned.push(OwnedMessage {
                body,
                properties: p,
            });
        }
        let born: SocketAddr = "127.0.0.1:0"
            .parse()
            .map_err(|_| PyValueError::new_err("address"))?;
        let store = Arc::clone(&self.inner);
        let res = py.detach(|| {
            let msgs: Vec<MessageToStore<'_>> = owned
                .iter()
                .map(|m| MessageToStore {
                    topic,
                    queue_id,
                    flag: 0,
                    body: &m.body,
                    properties: &m.properties,
                    sys_flag: 0,
                    born_timestamp: rmq_common::time::now_millis(),
                    born_host: born,
                    reconsume_times: 0,
                    prepared_transaction_offset: 0,
                })
                .collect();
            store.put_messages(&msgs)
        });
        let rs = res.map_err(|e| store_err(py, &e))?;
        Ok(rs.iter().map(|r| self.put_result(r)).collect())
    }

    #[pyo3(signature = (topic, queue_id, offset, max_count=32, tags=None))]
    fn get_message(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
        tags: Option<Vec<String>>,
    ) -> PyResult<GetMessageResult> {
        let codes: Option<HashSet<i32>> =
            tags.map(|t| t.iter().map(|s| rmq_common::java_string_hash(s)).collect());
        let store = Arc::clone(&self.inner);
        let r = py.detach(|| {
            #[expect(
                clippy::cast_possible_truncation,
                reason = "Java's intValue() keeps the low 32 bits"
            )]
            let filter = codes
                .as_ref()
                .map(|set| move |code: i64| set.contains(&(code as i32)));
            match &filter {
                Some(f) => store.get_message(topic, queue_id, offset, max_count, Some(f)),
                None => store.get_message(topic, queue_id, offset, max_count, None),
            }
        });
        Ok(GetMessageResult {
            status: r.status.as_str().to_owned(),
            next_begin_offset: r.next_begin_offset,
            min_offset: r.min_offset,
            max_offset: r.max_offset,
            messages: decode_all(py, &r.messages)?,
        })
    }

    fn look_message_by_offset(
        &self,
        py: Python<'_>,
        commit_log_offset: i64,
    ) -> PyResult<Option<Py<StoredMessage>>> {
        let store = Arc::clone(&self.inner);
        let sel = py.detach(|| store.look_message_by_offset(commit_log_offset));
        match sel {
            Some(s) => StoredMessage::from_record(py, s.bytes()),
            None => Ok(None),
        }
    }

    #[pyo3(signature = (topic, queue_id, offset, max_count=1024))]
    fn get_consume_queue_units(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
    ) -> PyResult<ConsumeQueueUnits> {
        let store = Arc::clone(&self.inner);
        let r = py.detach(|| store.get_consume_queue_units(topic, queue_id, offset, max_count));
        let units = PyList::new(py, r.units.iter().map(|u| (u.offset, u.size, u.tags_code)))?;
        Ok(ConsumeQueueUnits {
            min_offset: r.min_offset,
            max_offset: r.max_offset,
            units: units.unbind(),
        })
    }

    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn deliver_scheduled(&self, py: Python<'_>, units: Vec<(i64, i32, i64)>) -> DeliverResult {
        let positions: Vec<(i64, i32)> = units.iter().map(|&(o, s, _)| (o, s)).collect();
        let store = Arc::clone(&self.inner);
        let out = py.detach(|| store.deliver_scheduled(&positions));
        DeliverResult {
            processed: out.processed,
            delivered: out.delivered,
            skipped: out.skipped,
            error: out.error.map(|e| e.to_string()),
        }
    }

    /// `messageDelayLevel` in milliseconds, level 1 first.
    #[getter]
    fn delay_levels_ms(&self) -> Vec<i64> {
        self.inner.delay_levels_ms().to_vec()
    }

    #[pyo3(signature = (topic, key, max_num=32, begin_timestamp=0, end_timestamp=i64::MAX), text_signature = "(self, /, topic, key, max_num=32, begin_timestamp=0, end_timestamp=9223372036854775807)")]
    fn query_message(
        &self,
        py: Python<'_>,
        topic: &str,
        key: &str,
        max_num: usize,
        begin_timestamp: i64,
        end_timestamp: i64,
    ) -> PyResult<Vec<Py<StoredMessage>>> {
        let store = Arc::clone(&self.inner);
        let selected =
            py.detach(|| store.query_message(topic, key, max_num, begin_timestamp, end_timestamp));
        decode_all(py, &selected)
    }

    fn get_offset_in_queue_by_time(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        timestamp: i64,
    ) -> i64 {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.get_offset_in_queue_by_time(topic, queue_id, timestamp))
    }

    fn get_min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.get_min_offset_in_queue(topic, queue_id)
    }

    fn get_max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.inner.get_max_offset_in_queue(topic, queue_id)
    }

    fn get_min_phy_offset(&self) -> i64 {
        self.inner.get_min_phy_offset()
    }

    fn get_max_phy_offset(&self) -> i64 {
        self.inner.get_max_phy_offset()
    }

    fn dispatch_behind_bytes(&self) -> i64 {
        self.inner.dispatch_behind_bytes()
    }

    fn flush(&self, py: Python<'_>) -> PyResult<i64> {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.flush()).map_err(|e| store_err(py, &e))
    }

    #[pyo3(signature = (force=false))]
    fn delete_expired_files(&self, py: Python<'_>, force: bool) -> usize {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.delete_expired_files(force))
    }

    /// Hours a CommitLog file is kept (`fileReservedTime`), as in effect now.
    #[getter]
    fn file_reserved_time(&self) -> u32 {
        self.inner.file_reserved_time()
    }

    /// Change `fileReservedTime` while running; the next expired-file pass uses it. Bounded
    /// by the config schema, as the config file's value is.
    fn set_file_reserved_time(&self, py: Python<'_>, hours: i64) -> PyResult<()> {
        let text =
            rmq_common::config_schema::check_broker_value("fileReservedTime", &hours.to_string())
                .map_err(|e| raise(py, "ConfigError", e.to_string()))?
                .text;
        let h = text.parse().map_err(|_| {
            raise(
                py,
                "ConfigError",
                format!("fileReservedTime = {text} is too large"),
            )
        })?;
        self.inner.set_file_reserved_time(h);
        Ok(())
    }

    fn disk_used_ratio(&self, py: Python<'_>) -> f64 {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.disk_used_ratio())
    }

    fn check_disk_space(&self, py: Python<'_>) {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.check_disk_space());
    }

    fn is_writeable(&self) -> bool {
        self.inner.is_writeable()
    }

    fn runtime_info(&self) -> HashMap<String, String> {
        self.inner
            .runtime_info()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect()
    }

    fn topic_queues(&self) -> HashMap<String, Vec<i32>> {
        self.inner.topic_queues().into_iter().collect()
    }

    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.shutdown())
            .map_err(|e| store_err(py, &e))
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_exc))]
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, PyTuple>) -> PyResult<()> {
        self.shutdown(py)
    }

    fn __repr__(&self) -> String {
        format!("MessageStore({:?})", self.root)
    }
}

impl PyMessageStore {
    fn put_one(
        &self,
        py: Python<'_>,
        topic: &str,
        queue_id: i32,
        body: &[u8],
        properties: Option<&Bound<'_, PyAny>>,
        fields: &MessageFields,
    ) -> PyResult<PutMessageResult> {
        let props = encode_properties(properties)?;
        let store = Arc::clone(&self.inner);
        let res = py.detach(|| store.put_message(&fields.to_store(topic, queue_id, body, &props)));
        let r = res.map_err(|e| store_err(py, &e))?;
        Ok(self.put_result(&r))
    }

    fn put_result(&self, r: &rmq_store::PutMessageResult) -> PutMessageResult {
        PutMessageResult {
            status: r.status.as_str().to_owned(),
            msg_id: r.append.msg_id(self.inner.store_host()),
            wrote_offset: r.append.wrote_offset,
            wrote_bytes: r.append.wrote_bytes,
            queue_offset: r.append.queue_offset,
            store_timestamp: r.append.store_timestamp,
        }
    }
}

impl Drop for PyMessageStore {
    fn drop(&mut self) {
        // A store dropped without shutdown() still flushes and releases its directory.
        let _ = self.inner.shutdown();
    }
}

/// The messages of store reads, as Python objects (positions that hold no record are left out).
fn decode_all(
    py: Python<'_>,
    sels: &[SelectMappedBufferResult],
) -> PyResult<Vec<Py<StoredMessage>>> {
    let mut out = Vec::with_capacity(sels.len());
    for s in sels {
        out.extend(StoredMessage::from_record(py, s.bytes())?);
    }
    Ok(out)
}

/// Every store key with its default value.
#[pyfunction]
fn store_config_defaults() -> HashMap<String, String> {
    StoreConfig::default()
        .to_pairs()
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyMessageStore>()?;
    m.add_class::<PutMessageResult>()?;
    m.add_class::<GetMessageResult>()?;
    m.add_class::<ConsumeQueueUnits>()?;
    m.add_class::<DeliverResult>()?;
    m.add_function(wrap_pyfunction!(store_config_defaults, m)?)?;
    Ok(())
}
