//! `rmq._rmq`: the Python face of the Rust crates, and the only crate that links pyo3.
//!
//! Every call that touches files or waits releases the interpreter (`py.detach`), so Python
//! threads keep running while the store appends, flushes or reads. Errors are raised as
//! classes of the pure-Python `rmq.errors` module, so Python has one exception tree.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use rmq_common::properties::{Properties, PropertyKey};
use rmq_store::format::{scan_record, Scan};
use rmq_store::{MessageStore, MessageToStore, SelectMappedBufferResult, StoreConfig, StoreError};

mod broker;
mod client;
mod columns;
mod names;
mod remoting;

/// The `rmq.errors` class a store error is raised as.
fn error_class(e: &StoreError) -> &'static str {
    match e {
        StoreError::Config { .. } => "ConfigError",
        StoreError::MessageIllegal(_)
        | StoreError::PropertiesSizeExceeded(_)
        | StoreError::WheelTimerMsgIllegal { .. } => "MessageIllegalError",
        StoreError::WheelTimerNotEnable => "BrokerSystemError",
        StoreError::ServiceNotAvailable(_) => "ServiceNotAvailableError",
        StoreError::OsPageCacheBusy(_) | StoreError::NoBufferInStorePool => "SystemBusyError",
        _ => "StoreError",
    }
}

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

fn store_err(py: Python<'_>, e: &StoreError) -> PyErr {
    raise(py, error_class(e), e.to_string())
}

fn parse_addr(s: &str, what: &str) -> PyResult<SocketAddr> {
    s.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "{what} {s:?} is not an address like 127.0.0.1:10911"
        ))
    })
}

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

/// A stored message, decoded.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
struct StoredMessage {
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

fn decode_message(py: Python<'_>, sel: &SelectMappedBufferResult) -> Option<StoredMessage> {
    decode_record(py, sel.bytes())
}

fn decode_record(py: Python<'_>, bytes: &[u8]) -> Option<StoredMessage> {
    let Scan::Message(r) = scan_record(bytes, false) else {
        return None;
    };
    let props = Properties::decode(&String::from_utf8_lossy(r.properties));
    Some(StoredMessage {
        topic: r.topic.to_owned(),
        queue_id: r.queue_id,
        queue_offset: r.queue_offset,
        commit_log_offset: r.physical_offset,
        store_size: r.total_size,
        body: PyBytes::new(py, r.body).unbind(),
        body_crc: r.body_crc,
        flag: r.flag,
        sys_flag: r.sys_flag,
        born_timestamp: r.born_timestamp,
        born_host: r.born_host.to_string(),
        store_timestamp: r.store_timestamp,
        store_host: r.store_host.to_string(),
        reconsume_times: r.reconsume_times,
        prepared_transaction_offset: r.prepared_transaction_offset,
        properties: props
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        msg_id: client_msg_id(&props, r.store_host, r.physical_offset),
        offset_msg_id: rmq_common::create_offset_msg_id(r.store_host, r.physical_offset),
        body_error: None,
    })
}

impl StoredMessage {
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

/// The id a client knows a message by: its `UNIQ_KEY`, or the offset id when it has none.
pub(crate) fn client_msg_id(props: &Properties, store_host: SocketAddr, offset: i64) -> String {
    props
        .get(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        .map_or_else(
            || rmq_common::create_offset_msg_id(store_host, offset),
            str::to_owned,
        )
}

/// A message a consumer pulled, as Python sees it.
pub(crate) fn stored_from_ext(
    py: Python<'_>,
    m: rmq_protocol::message_decoder::MessageExt,
) -> PyResult<Py<StoredMessage>> {
    let msg = StoredMessage {
        msg_id: client_msg_id(&m.properties, m.store_host, m.commit_log_offset),
        offset_msg_id: m.msg_id,
        body_error: m.body_error,
        topic: m.topic,
        queue_id: m.queue_id,
        queue_offset: m.queue_offset,
        commit_log_offset: m.commit_log_offset,
        store_size: usize::try_from(m.store_size).unwrap_or_default(),
        body: PyBytes::new(py, &m.body).unbind(),
        body_crc: m.body_crc,
        flag: m.flag,
        sys_flag: m.sys_flag,
        born_timestamp: m.born_timestamp,
        born_host: m.born_host.to_string(),
        store_timestamp: m.store_timestamp,
        store_host: m.store_host.to_string(),
        reconsume_times: m.reconsume_times,
        prepared_transaction_offset: m.prepared_transaction_offset,
        properties: m
            .properties
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    };
    Py::new(py, msg)
}

fn decode_all(
    py: Python<'_>,
    sels: &[SelectMappedBufferResult],
) -> PyResult<Vec<Py<StoredMessage>>> {
    sels.iter()
        .filter_map(|s| decode_message(py, s))
        .map(|m| Py::new(py, m))
        .collect()
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
    #[pyo3(signature = (store_path_root_dir, config=None, store_host="127.0.0.1:10911"))]
    fn new(
        py: Python<'_>,
        store_path_root_dir: &str,
        config: Option<HashMap<String, String>>,
        store_host: &str,
    ) -> PyResult<Self> {
        let mut c = StoreConfig::default();
        for (k, v) in config.unwrap_or_default() {
            c.set(&k, &v).map_err(|e| store_err(py, &e))?;
        }
        let host = parse_addr(store_host, "store_host")?;
        let root = store_path_root_dir.to_owned();
        let inner = py
            .detach(|| MessageStore::open(&root, c, host))
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

    #[pyo3(signature = (topic, queue_id, body, properties=None, *, flag=0, sys_flag=0, born_timestamp=0, born_host="127.0.0.1:0", reconsume_times=0, prepared_transaction_offset=0))]
    #[allow(clippy::too_many_arguments)]
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
        let props = encode_properties(properties)?;
        let born = parse_addr(born_host, "born_host")?;
        let store = Arc::clone(&self.inner);
        let res = py.detach(|| {
            store.put_message(&MessageToStore {
                topic,
                queue_id,
                flag,
                body,
                properties: &props,
                sys_flag,
                born_timestamp,
                born_host: born,
                reconsume_times,
                prepared_transaction_offset,
            })
        });
        let r = res.map_err(|e| store_err(py, &e))?;
        Ok(self.put_result(&r))
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
            #[allow(clippy::cast_possible_truncation)]
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
        sel.and_then(|s| decode_message(py, &s))
            .map(|m| Py::new(py, m))
            .transpose()
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
        let sels =
            py.detach(|| store.query_message(topic, key, max_num, begin_timestamp, end_timestamp));
        decode_all(py, &sels)
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

    /// Change `fileReservedTime` while running; the next expired-file pass uses it.
    fn set_file_reserved_time(&self, py: Python<'_>, hours: i64) -> PyResult<()> {
        const MAX_HOURS: i64 = 24 * 365 * 100;
        match u32::try_from(hours) {
            Ok(h) if hours <= MAX_HOURS => {
                self.inner.set_file_reserved_time(h);
                Ok(())
            }
            _ => Err(raise(
                py,
                "ConfigError",
                format!(
                    "fileReservedTime = {hours} is not allowed; use hours from 0 to {MAX_HOURS}"
                ),
            )),
        }
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
    fn __exit__(&self, py: Python<'_>, _exc: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<()> {
        self.shutdown(py)
    }

    fn __repr__(&self) -> String {
        format!("MessageStore({:?})", self.root)
    }
}

impl PyMessageStore {
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

/// RocketMQ's request codes by Java name (`RequestCode.java`), as `rmq-protocol` knows them.
#[pyfunction]
fn request_codes() -> HashMap<String, i32> {
    rmq_protocol::RequestCode::ALL
        .iter()
        .map(|(c, name, _)| ((*name).to_owned(), c.0))
        .collect()
}

/// RocketMQ's response codes by Java name (`ResponseCode.java`).
#[pyfunction]
fn response_codes() -> HashMap<String, i32> {
    rmq_protocol::ResponseCode::ALL
        .iter()
        .map(|(c, name, _)| ((*name).to_owned(), c.0))
        .collect()
}

/// Decode a body of concatenated CommitLog records (a PULL_MESSAGE, QUERY_MESSAGE or
/// VIEW_MESSAGE_BY_ID response). Stops at the first record that is not whole.
#[pyfunction]
fn decode_messages(py: Python<'_>, body: &[u8]) -> PyResult<Vec<Py<StoredMessage>>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < body.len() {
        let Scan::Message(r) = scan_record(&body[pos..], true) else {
            break;
        };
        let size = r.total_size;
        if let Some(m) = decode_record(py, &body[pos..pos + size]) {
            out.push(Py::new(py, m)?);
        }
        pos += size;
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

#[pymodule]
fn _rmq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_QUEUE_NUMS", rmq_protocol::body::MAX_QUEUE_NUMS)?;
    m.add_class::<PyMessageStore>()?;
    m.add_class::<PutMessageResult>()?;
    m.add_class::<StoredMessage>()?;
    m.add_class::<GetMessageResult>()?;
    m.add_class::<ConsumeQueueUnits>()?;
    m.add_class::<DeliverResult>()?;
    m.add_class::<broker::BrokerServer>()?;
    m.add_class::<remoting::RemotingServer>()?;
    m.add_class::<remoting::RemotingClient>()?;
    m.add_class::<remoting::RemotingRequest>()?;
    m.add_class::<remoting::RemotingResponse>()?;
    m.add_function(wrap_pyfunction!(store_config_defaults, m)?)?;
    m.add_class::<client::ClientInstancePy>()?;
    m.add_class::<client::NativeProducer>()?;
    m.add_class::<client::SendResultPy>()?;
    m.add_class::<client::PullResultPy>()?;
    m.add_class::<columns::PulledColumns>()?;
    m.add_function(wrap_pyfunction!(client::_stop_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(client::_run_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(decode_messages, m)?)?;
    m.add_function(wrap_pyfunction!(decompress_body, m)?)?;
    m.add_function(wrap_pyfunction!(request_codes, m)?)?;
    m.add_function(wrap_pyfunction!(response_codes, m)?)?;
    m.add_function(wrap_pyfunction!(java_string_hash, m)?)?;
    m.add_function(wrap_pyfunction!(create_offset_msg_id, m)?)?;
    m.add_function(wrap_pyfunction!(decode_offset_msg_id, m)?)?;
    names::register(m)?;
    Ok(())
}
