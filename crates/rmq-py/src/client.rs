//! `rmq._rmq.ClientInstance` (`MQClientInstance`): connections, routes and heartbeats for
//! `rmq.Producer`, the consumers and the admin tool, plus what the client faces share: the
//! mapping of client errors onto `rmq.errors`, `MessageQueue` conversion and `block_on`.
//! Requests run on the I/O runtime with the GIL released; the consumer calls of the same class
//! are in `consumer.rs`, the producer in `producer.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBytes;
use rmq_client::{CallAnswer, ClientConfig, ClientError, ClientInstance, ClientListener};

use crate::running_info::BrokerCallReply;
use rmq_protocol::body::MessageQueue;
use rmq_protocol::ExtFields;

use crate::callbacks::{call_reporting, dispatch, ensure_callback_thread};
use crate::errors::raise;
use crate::runtime::runtime;

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
        ClientError::NoMaster { .. } => "ServiceNotAvailableError",
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

pub(crate) fn to_py_queue(py: Python<'_>, q: &MessageQueue) -> PyResult<Py<PyAny>> {
    message_queue_class(py)?
        .call1((q.topic.as_str(), q.broker_name.as_str(), q.queue_id))
        .map(Bound::unbind)
}

pub(crate) fn from_py_queue(q: &Bound<'_, PyAny>) -> PyResult<MessageQueue> {
    Ok(MessageQueue::new(
        q.getattr("topic")?.extract::<String>()?,
        q.getattr("broker_name")?.extract::<String>()?,
        q.getattr("queue_id")?.extract::<i32>()?,
    ))
}

/// Hands broker pushes, warnings and broker-relayed calls to Python callables on the
/// callback thread.
/// The callables are shared through `Arc`s, so a runtime worker never needs the GIL to
/// hand work to the callback thread.
#[allow(
    clippy::struct_field_names,
    reason = "named after the Python callbacks they hold"
)]
struct PyListener {
    on_broker_request: Arc<Py<PyAny>>,
    on_warning: Arc<Py<PyAny>>,
    on_broker_call: Option<Arc<Py<PyAny>>>,
}

impl ClientListener for PyListener {
    fn on_broker_request(&self, code: i32, ext_fields: ExtFields, body: Option<Bytes>) {
        let f = self.on_broker_request.clone();
        dispatch(Box::new(move |py| {
            let fields: HashMap<String, String> = ext_fields
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let body = body.map(|b| PyBytes::new(py, &b).unbind());
            call_reporting(py, &f, (code, fields, body));
        }));
    }

    fn on_warning(&self, message: String) {
        let f = self.on_warning.clone();
        dispatch(Box::new(move |py| call_reporting(py, &f, (message,))));
    }

    fn on_broker_call(
        &self,
        code: i32,
        ext_fields: ExtFields,
        body: Option<Bytes>,
        answer: tokio::sync::oneshot::Sender<CallAnswer>,
    ) {
        let Some(f) = self.on_broker_call.clone() else {
            let _ = answer.send(CallAnswer {
                code: rmq_protocol::ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0,
                remark: Some(format!(
                    "request code {code} is not answered by this client"
                )),
                body: None,
            });
            return;
        };
        dispatch(Box::new(move |py| {
            let fields: HashMap<String, String> = ext_fields
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            let body = body.map(|b| PyBytes::new(py, &b).unbind());
            let reply = match Py::new(py, BrokerCallReply::new(answer)) {
                Ok(reply) => reply,
                Err(e) => return e.write_unraisable(py, Some(f.bind(py))),
            };
            if let Err(e) = f.call1(py, (code, fields, body, reply.clone_ref(py))) {
                reply
                    .get()
                    .answer_error(format!("the client failed to answer: {e}"));
            }
        }));
    }
}

pub(crate) fn block_on<T: Send>(
    py: Python<'_>,
    fut: impl std::future::Future<Output = Result<T, ClientError>> + Send,
) -> PyResult<T> {
    py.detach(|| runtime().block_on(fut))
        .map_err(|e| client_err(py, &e))
}

pub(crate) fn parse_enum<T>(what: &str, value: &str, allowed: &[(&str, T)]) -> PyResult<T>
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
    pub(crate) inner: ClientInstance,
}

#[pymethods]
impl ClientInstancePy {
    #[new]
    #[pyo3(signature = (namesrv_addr, instance_name=None, client_ip=None,
        poll_name_server_interval_ms=30000, heartbeat_broker_interval_ms=30000,
        api_timeout_ms=3000, access_key=None, secret_key=None, security_token=None,
        tls=false, tls_ca=None, tls_cert=None, tls_key=None, tls_verify=true))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments of ClientInstance(...)"
    )]
    fn new(
        py: Python<'_>,
        namesrv_addr: &str,
        instance_name: Option<String>,
        client_ip: Option<String>,
        poll_name_server_interval_ms: u64,
        heartbeat_broker_interval_ms: u64,
        api_timeout_ms: u64,
        access_key: Option<String>,
        secret_key: Option<String>,
        security_token: Option<String>,
        tls: bool,
        tls_ca: Option<std::path::PathBuf>,
        tls_cert: Option<std::path::PathBuf>,
        tls_key: Option<std::path::PathBuf>,
        tls_verify: bool,
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
        config.credentials =
            crate::common::session_credentials(access_key, secret_key, security_token)?;
        let (ca, cert, key, verify) = (tls_ca, tls_cert, tls_key, tls_verify);
        config.tls = crate::tls::TlsArgs {
            tls,
            ca,
            cert,
            key,
            verify,
        }
        .build(py)?;
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

    /// Route broker pushes `on_broker_request(code, ext_fields, body)`, background
    /// warnings `on_warning(text)` and broker-relayed calls `on_broker_call(code, ext_fields,
    /// body, reply)` to Python (called on the client's callback thread; a call is answered by
    /// calling `reply(code, remark, body)` once, from any thread).
    #[pyo3(signature = (on_broker_request, on_warning, on_broker_call=None))]
    fn set_listener(
        &self,
        on_broker_request: Py<PyAny>,
        on_warning: Py<PyAny>,
        on_broker_call: Option<Py<PyAny>>,
    ) {
        self.inner.set_listener(Arc::new(PyListener {
            on_broker_request: Arc::new(on_broker_request),
            on_warning: Arc::new(on_warning),
            on_broker_call: on_broker_call.map(Arc::new),
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

    /// Stop the timers and close connections. Idempotent.
    fn shutdown(&self) {
        self.inner.shutdown();
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ClientInstancePy>()?;
    Ok(())
}
