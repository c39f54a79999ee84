//! The client core for Python (`rmq.Producer`, the consumers and the admin tool build on
//! these). Requests run on the I/O runtime with the GIL released; async completions and
//! broker pushes are handed to one callback thread that takes the GIL, so the runtime's
//! workers never wait for Python.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict};
use rmq_client::consumer::PullRequest;
use rmq_client::{
    build_subscription, BatchEncoder, ClientConfig, ClientError, ClientInstance, ClientListener,
    HalfBatchSent, HalfMessageSent, LocalTransactionState, Message, Producer, ProducerConfig,
    PullResult, SendResult,
};
use rmq_common::Properties;
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, MessageQueue};
use rmq_protocol::header::CheckTransactionStateRequestHeader;
use rmq_protocol::{CommandHeader, ExtFields};

use crate::raise;
use crate::remoting::runtime;

type Callback = Box<dyn FnOnce(Python<'_>) + Send>;

/// Set at interpreter exit: from then on callbacks are dropped, never run.
static CALLBACKS_STOPPED: AtomicBool = AtomicBool::new(false);

/// `None` tells the callback thread to return.
type Queued = Option<Callback>;

struct CallbackQueue {
    tx: Mutex<mpsc::Sender<Queued>>,
    rx: Mutex<Option<mpsc::Receiver<Queued>>>,
    thread: PyOnceLock<Py<PyAny>>,
}

fn callback_queue() -> &'static CallbackQueue {
    static QUEUE: OnceLock<CallbackQueue> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        CallbackQueue {
            tx: Mutex::new(tx),
            rx: Mutex::new(Some(rx)),
            thread: PyOnceLock::new(),
        }
    })
}

/// Queue work for the callback thread.
fn dispatch(cb: Callback) {
    if CALLBACKS_STOPPED.load(Ordering::Acquire) {
        std::mem::forget(cb); // its Python references cannot be released without the GIL
        return;
    }
    let tx = callback_queue()
        .tx
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let _ = tx.send(Some(cb));
}

/// Run client callbacks until the interpreter exits: the body of the `rmq-callbacks` thread.
/// It is a Python thread (started by [`ensure_callback_thread`]), so callbacks keep one
/// thread state (`threading.local` works in them) and nothing attaches a foreign thread to
/// a finalizing interpreter.
#[pyfunction]
pub(crate) fn _run_callbacks(py: Python<'_>) {
    let rx = callback_queue()
        .rx
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some(mut rx) = rx else { return };
    loop {
        // The receiver moves into the GIL-free section and back (it is not `Sync`).
        let (back, next) = py.detach(move || {
            let next = rx.recv();
            (rx, next)
        });
        rx = back;
        let Ok(Some(cb)) = next else { return };
        if CALLBACKS_STOPPED.load(Ordering::Acquire) {
            std::mem::forget(cb);
        } else {
            cb(py);
        }
    }
}

/// Start the `rmq-callbacks` daemon thread once per process, and have it stopped at
/// interpreter exit (a daemon thread must not be inside Rust when the interpreter ends).
fn ensure_callback_thread(py: Python<'_>) -> PyResult<()> {
    let queue = callback_queue();
    queue.thread.get_or_try_init(py, || {
        let module = py.import("rmq._rmq")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("target", module.getattr("_run_callbacks")?)?;
        kwargs.set_item("name", "rmq-callbacks")?;
        kwargs.set_item("daemon", true)?;
        let thread = py
            .import("threading")?
            .getattr("Thread")?
            .call((), Some(&kwargs))?;
        thread.call_method0("start")?;
        py.import("atexit")?
            .getattr("register")?
            .call1((module.getattr("_stop_callbacks")?,))?;
        Ok::<_, PyErr>(thread.unbind())
    })?;
    Ok(())
}

/// Stop running client callbacks and end the callback thread (registered with `atexit`).
#[pyfunction]
pub(crate) fn _stop_callbacks(py: Python<'_>) -> PyResult<()> {
    if CALLBACKS_STOPPED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    let queue = callback_queue();
    let _ = queue
        .tx
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send(None);
    if let Some(thread) = queue.thread.get(py) {
        thread.bind(py).call_method1("join", (5.0,))?;
    }
    Ok(())
}

/// Call a Python callback, reporting (not raising) what it raises, as threads do.
fn call_reporting<'py>(py: Python<'py>, f: &Py<PyAny>, args: impl pyo3::call::PyCallArgs<'py>) {
    if let Err(e) = f.call1(py, args) {
        e.write_unraisable(py, Some(f.bind(py)));
    }
}

/// Map a client error onto `rmq.errors` (the one place this is decided).
pub(crate) fn client_err(py: Python<'_>, e: &ClientError) -> PyErr {
    let message = e.to_string();
    let innermost = match e {
        ClientError::SendFailed { last, .. } => last.as_ref(),
        other => other,
    };
    let class = match innermost {
        ClientError::NoNameServer | ClientError::BadAddress { .. } => "ConfigError",
        ClientError::Connect { .. } => "RemotingConnectError",
        ClientError::Timeout { .. } => "RemotingTimeoutError",
        ClientError::BadResponse { .. } => "RemotingError",
        ClientError::IllegalMessage(_) => "MessageIllegalError",
        ClientError::NoRoute { .. } => "TopicNotExistError",
        ClientError::Response { code, remark, .. } => {
            let made = py
                .import("rmq.errors")
                .and_then(|m| m.getattr("for_response"))
                .and_then(|f| f.call1((*code, message.clone(), remark.clone())));
            if let Ok(obj) = made {
                return PyErr::from_value(obj);
            }
            "BrokerResponseError"
        }
        _ => "ClientError",
    };
    raise(py, class, message)
}

fn message_queue_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CLASS
        .get_or_try_init(py, || {
            py.import("rmq.client.message_queue")?
                .getattr("MessageQueue")
                .map(Bound::unbind)
        })
        .map(|c| c.bind(py))
}

fn to_py_queue(py: Python<'_>, q: &MessageQueue) -> PyResult<Py<PyAny>> {
    message_queue_class(py)?
        .call1((q.topic.as_str(), q.broker_name.as_str(), q.queue_id))
        .map(Bound::unbind)
}

fn from_py_queue(q: &Bound<'_, PyAny>) -> PyResult<MessageQueue> {
    Ok(MessageQueue::new(
        q.getattr("topic")?.extract::<String>()?,
        q.getattr("broker_name")?.extract::<String>()?,
        q.getattr("queue_id")?.extract::<i32>()?,
    ))
}

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

/// What a pull returned.
#[pyclass(module = "rmq._rmq", frozen, get_all, name = "PullResult")]
pub(crate) struct PullResultPy {
    status: &'static str,
    next_begin_offset: i64,
    min_offset: i64,
    max_offset: i64,
    suggest_which_broker_id: i64,
    messages: Vec<Py<crate::StoredMessage>>,
}

impl PullResultPy {
    fn new(py: Python<'_>, r: PullResult) -> PyResult<Self> {
        Ok(Self {
            status: r.status.name(),
            next_begin_offset: r.next_begin_offset,
            min_offset: r.min_offset,
            max_offset: r.max_offset,
            suggest_which_broker_id: r.suggest_which_broker_id,
            messages: r
                .messages
                .into_iter()
                .map(|m| crate::stored_from_ext(py, m))
                .collect::<PyResult<_>>()?,
        })
    }
}

#[pymethods]
impl PullResultPy {
    fn __repr__(&self) -> String {
        format!(
            "PullResult(status={}, messages={}, next_begin_offset={}, min_offset={}, max_offset={})",
            self.status,
            self.messages.len(),
            self.next_begin_offset,
            self.min_offset,
            self.max_offset
        )
    }
}

/// Hands broker pushes and warnings to Python callables on the callback thread.
/// The callables are shared through `Arc`s, so a runtime worker never needs the GIL to
/// hand work to the callback thread.
struct PyListener {
    on_broker_request: Arc<Py<PyAny>>,
    on_warning: Arc<Py<PyAny>>,
}

impl ClientListener for PyListener {
    fn on_broker_request(&self, code: i32, ext_fields: ExtFields, body: Option<Bytes>) {
        let f = self.on_broker_request.clone();
        dispatch(Box::new(move |py| {
            let fields: HashMap<String, String> = ext_fields
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect();
            let body = body.map(|b| PyBytes::new(py, &b).unbind());
            call_reporting(py, &f, (code, fields, body));
        }));
    }

    fn on_warning(&self, message: String) {
        let f = self.on_warning.clone();
        dispatch(Box::new(move |py| call_reporting(py, &f, (message,))));
    }
}

pub(crate) fn block_on<T: Send>(
    py: Python<'_>,
    fut: impl std::future::Future<Output = Result<T, ClientError>> + Send,
) -> PyResult<T> {
    py.detach(|| runtime().block_on(fut))
        .map_err(|e| client_err(py, &e))
}

fn parse_enum<T>(what: &str, value: &str, allowed: &[(&str, T)]) -> PyResult<T>
where
    T: Copy,
{
    allowed
        .iter()
        .find(|(n, _)| *n == value)
        .map(|(_, v)| *v)
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
            pyo3::exceptions::PyValueError::new_err(format!(
                "{what} {value:?} is not one of {}",
                names.join(", ")
            ))
        })
}

/// One client instance (`MQClientInstance`): connections, routes, heartbeats.
#[pyclass(module = "rmq._rmq", frozen, name = "ClientInstance")]
pub(crate) struct ClientInstancePy {
    inner: ClientInstance,
}

#[pymethods]
impl ClientInstancePy {
    #[new]
    #[pyo3(signature = (namesrv_addr, instance_name=None, client_ip=None,
        poll_name_server_interval_ms=30000, heartbeat_broker_interval_ms=30000,
        api_timeout_ms=3000))]
    fn new(
        py: Python<'_>,
        namesrv_addr: &str,
        instance_name: Option<String>,
        client_ip: Option<String>,
        poll_name_server_interval_ms: u64,
        heartbeat_broker_interval_ms: u64,
        api_timeout_ms: u64,
    ) -> PyResult<Self> {
        let addrs: Vec<String> = namesrv_addr
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let mut config = ClientConfig::new(addrs);
        if let Some(n) = instance_name {
            config.instance_name = n;
        }
        config.client_ip =
            client_ip.unwrap_or_else(|| rmq_client::message::local_ipv4().to_string());
        config.poll_name_server_interval =
            Duration::from_millis(poll_name_server_interval_ms.max(10));
        config.heartbeat_broker_interval =
            Duration::from_millis(heartbeat_broker_interval_ms.max(10));
        config.api_timeout = Duration::from_millis(api_timeout_ms.max(1));
        ensure_callback_thread(py)?;
        let inner = ClientInstance::start(config, runtime().handle().clone())
            .map_err(|e| client_err(py, &e))?;
        Ok(Self { inner })
    }

    /// `ip@instance`.
    #[getter]
    fn client_id(&self) -> String {
        self.inner.client_id().to_owned()
    }

    /// Route broker pushes `on_broker_request(code, ext_fields, body)` and background
    /// warnings `on_warning(text)` to Python (called on the client's callback thread).
    fn set_listener(&self, on_broker_request: Py<PyAny>, on_warning: Py<PyAny>) {
        self.inner.set_listener(Arc::new(PyListener {
            on_broker_request: Arc::new(on_broker_request),
            on_warning: Arc::new(on_warning),
        }));
    }

    /// Readable queues of `topic`, from the nameservers (refreshes the route).
    fn fetch_subscribe_queues(&self, py: Python<'_>, topic: &str) -> PyResult<Vec<Py<PyAny>>> {
        let inst = self.inner.clone();
        let t = topic.to_owned();
        let route = block_on(py, async move { inst.update_route(&t).await })?;
        route
            .subscribe_queues
            .iter()
            .map(|q| to_py_queue(py, q))
            .collect()
    }

    /// Readable queues of `topic` from the cached route (None when never fetched).
    fn cached_subscribe_queues(
        &self,
        py: Python<'_>,
        topic: &str,
    ) -> PyResult<Option<Vec<Py<PyAny>>>> {
        self.inner
            .cached_route(topic)
            .map(|r| {
                r.subscribe_queues
                    .iter()
                    .map(|q| to_py_queue(py, q))
                    .collect()
            })
            .transpose()
    }

    /// Announce consumer group `group` in heartbeats, with its subscriptions
    /// `[(topic, expression), ...]`.
    #[pyo3(signature = (group, subscriptions, message_model="CLUSTERING",
        consume_type="CONSUME_PASSIVELY", consume_from_where="CONSUME_FROM_LAST_OFFSET"))]
    fn register_consumer(
        &self,
        group: &str,
        subscriptions: Vec<(String, String)>,
        message_model: &str,
        consume_type: &str,
        consume_from_where: &str,
    ) -> PyResult<()> {
        let message_model = parse_enum(
            "message_model",
            message_model,
            &[
                ("CLUSTERING", MessageModel::Clustering),
                ("BROADCASTING", MessageModel::Broadcasting),
            ],
        )?;
        let consume_type = parse_enum(
            "consume_type",
            consume_type,
            &[
                ("CONSUME_PASSIVELY", ConsumeType::ConsumePassively),
                ("CONSUME_ACTIVELY", ConsumeType::ConsumeActively),
            ],
        )?;
        let consume_from_where = parse_enum(
            "consume_from_where",
            consume_from_where,
            &[
                (
                    "CONSUME_FROM_LAST_OFFSET",
                    ConsumeFromWhere::ConsumeFromLastOffset,
                ),
                (
                    "CONSUME_FROM_FIRST_OFFSET",
                    ConsumeFromWhere::ConsumeFromFirstOffset,
                ),
                (
                    "CONSUME_FROM_TIMESTAMP",
                    ConsumeFromWhere::ConsumeFromTimestamp,
                ),
            ],
        )?;
        self.inner.register_consumer(ConsumerData {
            group_name: group.to_owned(),
            consume_type,
            message_model,
            consume_from_where,
            subscription_data_set: subscriptions
                .iter()
                .map(|(t, e)| build_subscription(t, e))
                .collect(),
            unit_mode: false,
        });
        Ok(())
    }

    /// Stop announcing `group` and tell the brokers (UNREGISTER_CLIENT).
    fn unregister_consumer(&self, py: Python<'_>, group: &str) {
        let inst = self.inner.clone();
        let g = group.to_owned();
        py.detach(|| runtime().block_on(async move { inst.unregister_consumer(&g).await }));
    }

    /// Heartbeat every broker now; returns how many answered.
    fn send_heartbeat(&self, py: Python<'_>) -> usize {
        let inst = self.inner.clone();
        py.detach(|| runtime().block_on(async move { inst.send_heartbeat().await }))
    }

    /// Pull from `queue` (waits; the GIL is released).
    #[pyo3(signature = (group, queue, offset, max_nums, expression="*", sub_version=0,
        commit_offset=None, suspend_ms=0, timeout_ms=3000, broker_id=0))]
    #[allow(clippy::too_many_arguments)]
    fn pull(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        offset: i64,
        max_nums: i32,
        expression: &str,
        sub_version: i64,
        commit_offset: Option<i64>,
        suspend_ms: u64,
        timeout_ms: u64,
        broker_id: i64,
    ) -> PyResult<PullResultPy> {
        let req = pull_request(
            group,
            queue,
            offset,
            max_nums,
            expression,
            sub_version,
            commit_offset,
            suspend_ms,
            timeout_ms,
            broker_id,
        )?;
        let inst = self.inner.clone();
        let r = block_on(py, async move { inst.pull(&req).await })?;
        PullResultPy::new(py, r)
    }

    /// Pull `queue` from `start` towards `end` into columns (`PulledColumns`): at most
    /// `max_rows` rows, `depth` pulls of `batch` messages in flight, the GIL released.
    /// Properties named in `skip_properties` are left out of the properties column.
    #[pyo3(signature = (group, queue, start, end, max_rows, batch=32, depth=4,
        timeout_ms=10000, skip_properties=Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn pull_columns(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        start: i64,
        end: i64,
        max_rows: usize,
        batch: i64,
        depth: usize,
        timeout_ms: u64,
        skip_properties: Vec<String>,
    ) -> PyResult<crate::columns::PulledColumns> {
        let req = pull_request(group, queue, start, 0, "*", 0, None, 0, timeout_ms, 0)?;
        crate::columns::pull_columns(
            self.inner.clone(),
            py,
            req,
            end,
            max_rows,
            (batch, depth),
            skip_properties,
        )
    }

    /// Pull without waiting: `callback(result, error)` runs on the callback thread.
    #[pyo3(signature = (callback, group, queue, offset, max_nums, expression="*",
        sub_version=0, commit_offset=None, suspend_ms=15000, timeout_ms=30000, broker_id=0))]
    #[allow(clippy::too_many_arguments)]
    fn pull_async(
        &self,
        callback: Py<PyAny>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        offset: i64,
        max_nums: i32,
        expression: &str,
        sub_version: i64,
        commit_offset: Option<i64>,
        suspend_ms: u64,
        timeout_ms: u64,
        broker_id: i64,
    ) -> PyResult<()> {
        let req = pull_request(
            group,
            queue,
            offset,
            max_nums,
            expression,
            sub_version,
            commit_offset,
            suspend_ms,
            timeout_ms,
            broker_id,
        )?;
        let inst = self.inner.clone();
        runtime().spawn(async move {
            let r = inst.pull(&req).await;
            dispatch(Box::new(move |py| {
                let args = match r {
                    Ok(r) => match PullResultPy::new(py, r).and_then(|r| Py::new(py, r)) {
                        Ok(r) => (Some(r.into_any()), None),
                        Err(e) => (None, Some(e.into_value(py).into_any())),
                    },
                    Err(e) => (None, Some(client_err(py, &e).into_value(py).into_any())),
                };
                call_reporting(py, &callback, args);
            }));
        });
        Ok(())
    }

    /// The group's committed offset of `queue` on the broker, or None.
    fn query_consumer_offset(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
    ) -> PyResult<Option<i64>> {
        let (inst, g, q) = (self.inner.clone(), group.to_owned(), from_py_queue(queue)?);
        block_on(py, async move { inst.query_consumer_offset(&g, &q).await })
    }

    /// Commit the group's offset of `queue` on the broker.
    #[pyo3(signature = (group, queue, offset, oneway=true))]
    fn update_consumer_offset(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        offset: i64,
        oneway: bool,
    ) -> PyResult<()> {
        let (inst, g, q) = (self.inner.clone(), group.to_owned(), from_py_queue(queue)?);
        block_on(py, async move {
            inst.update_consumer_offset(&g, &q, offset, oneway).await
        })
    }

    /// One past the queue's last offset.
    fn max_offset(&self, py: Python<'_>, queue: &Bound<'_, PyAny>) -> PyResult<i64> {
        let (inst, q) = (self.inner.clone(), from_py_queue(queue)?);
        block_on(py, async move { inst.max_offset(&q).await })
    }

    /// The queue's first stored offset.
    fn min_offset(&self, py: Python<'_>, queue: &Bound<'_, PyAny>) -> PyResult<i64> {
        let (inst, q) = (self.inner.clone(), from_py_queue(queue)?);
        block_on(py, async move { inst.min_offset(&q).await })
    }

    /// The offset of the first message stored at or after `timestamp_ms`.
    fn search_offset(
        &self,
        py: Python<'_>,
        queue: &Bound<'_, PyAny>,
        timestamp_ms: i64,
    ) -> PyResult<i64> {
        let (inst, q) = (self.inner.clone(), from_py_queue(queue)?);
        block_on(
            py,
            async move { inst.search_offset(&q, timestamp_ms).await },
        )
    }

    /// Client ids of the group's live consumers (from a broker of `topic`).
    fn consumer_id_list(&self, py: Python<'_>, topic: &str, group: &str) -> PyResult<Vec<String>> {
        let (inst, t, g) = (self.inner.clone(), topic.to_owned(), group.to_owned());
        block_on(py, async move { inst.consumer_id_list(&t, &g).await })
    }

    /// Lock `queues` (all on `broker_name`) for this client; returns those now held.
    fn lock_batch(
        &self,
        py: Python<'_>,
        group: &str,
        broker_name: &str,
        queues: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let mqs = queues
            .iter()
            .map(from_py_queue)
            .collect::<PyResult<BTreeSet<_>>>()?;
        let (inst, g, b) = (self.inner.clone(), group.to_owned(), broker_name.to_owned());
        let locked = block_on(py, async move { inst.lock_batch(&g, &b, mqs).await })?;
        locked.iter().map(|q| to_py_queue(py, q)).collect()
    }

    /// Release this client's locks of `queues` on `broker_name`.
    #[pyo3(signature = (group, broker_name, queues, oneway=false))]
    fn unlock_batch(
        &self,
        py: Python<'_>,
        group: &str,
        broker_name: &str,
        queues: Vec<Bound<'_, PyAny>>,
        oneway: bool,
    ) -> PyResult<()> {
        let mqs = queues
            .iter()
            .map(from_py_queue)
            .collect::<PyResult<BTreeSet<_>>>()?;
        let (inst, g, b) = (self.inner.clone(), group.to_owned(), broker_name.to_owned());
        block_on(
            py,
            async move { inst.unlock_batch(&g, &b, mqs, oneway).await },
        )
    }

    /// Hand `message` (pulled from `broker_name`) back for redelivery through the group's
    /// retry topic (CONSUMER_SEND_MSG_BACK).
    #[pyo3(signature = (group, message, broker_name, delay_level=0, max_reconsume_times=16))]
    fn send_msg_back(
        &self,
        py: Python<'_>,
        group: &str,
        message: &crate::StoredMessage,
        broker_name: &str,
        delay_level: i32,
        max_reconsume_times: i32,
    ) -> PyResult<()> {
        let back = message.send_back(group, broker_name, delay_level, max_reconsume_times);
        let inst = self.inner.clone();
        block_on(py, async move { inst.send_msg_back(&back).await })
    }

    /// Stop the timers and close connections. Idempotent.
    fn shutdown(&self) {
        self.inner.shutdown();
    }
}

#[allow(clippy::too_many_arguments)]
fn pull_request(
    group: &str,
    queue: &Bound<'_, PyAny>,
    offset: i64,
    max_nums: i32,
    expression: &str,
    sub_version: i64,
    commit_offset: Option<i64>,
    suspend_ms: u64,
    timeout_ms: u64,
    broker_id: i64,
) -> PyResult<PullRequest> {
    let queue = from_py_queue(queue)?;
    let mut subscription = build_subscription(&queue.topic, expression);
    if sub_version != 0 {
        subscription.sub_version = sub_version;
    }
    Ok(PullRequest {
        group: group.to_owned(),
        queue,
        offset,
        max_nums,
        subscription,
        commit_offset,
        suspend: Duration::from_millis(suspend_ms),
        timeout: Duration::from_millis(timeout_ms),
        broker_id,
    })
}

/// The native producer under `rmq.Producer`.
#[pyclass(module = "rmq._rmq", frozen, name = "NativeProducer")]
pub(crate) struct NativeProducer {
    inner: Arc<Producer>,
}

#[pymethods]
impl NativeProducer {
    #[new]
    #[pyo3(signature = (instance, group, send_timeout_ms=3000, retry_times_when_send_failed=2,
        retry_another_broker_when_not_store_ok=false, max_message_size=4194304,
        compress_msg_body_over_howmuch=4096, compress_level=5,
        send_latency_fault_enable=false, default_topic_queue_nums=4, compress_type="ZLIB"))]
    #[allow(clippy::too_many_arguments)]
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
            .map_err(|e| crate::raise(py, "ConfigError", format!("compress_type: {e}")))?;
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
    #[pyo3(signature = (topic, queue, start, end, body_offsets, body_data, id_head, first_id,
        tags=None, keys=None, properties=None))]
    #[allow(clippy::too_many_arguments)]
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
        let bad = |what: &str| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "send_batch_columns: {what} does not cover rows {start}..{end}"
            ))
        };
        let common: Vec<(String, String)> = properties.into_iter().flatten().collect();
        let rows = end.saturating_sub(start);
        let mut batch = BatchEncoder::new(topic.to_owned(), &common, body_data.len() + rows * 96);
        let mut id = String::with_capacity(id_head.len() + 12);
        for i in start..end {
            let (a, b) = column_slice(body_offsets, body_data.len(), i)
                .ok_or_else(|| bad("body_offsets"))?;
            id.clear();
            // Writing to a String cannot fail.
            let _ = write!(id, "{id_head}{:012}", first_id + (i - start) as u64);
            let tag = match &tags {
                Some(c) => column_str(c, i).map_err(bad)?,
                None => None,
            };
            let key = match &keys {
                Some(c) => column_str(c, i).map_err(bad)?,
                None => None,
            };
            batch
                .push(&body_data[a..b], &id, tag, key)
                .map_err(|e| client_err(py, &e))?;
        }
        let queue = queue.map(from_py_queue).transpose()?;
        let p = self.inner.clone();
        let r = block_on(py, async move { p.send_encoded_batch(batch, queue).await })?;
        SendResultPy::new(py, r)
    }

    /// Send messages of one topic as one SEND_BATCH_MESSAGE.
    #[pyo3(signature = (messages, queue=None))]
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
