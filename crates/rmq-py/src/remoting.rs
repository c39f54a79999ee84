//! The remoting transport for Python: a server whose requests a Python handler answers (the
//! nameserver, and control-plane codes of the broker), and a client. Frames are coded by
//! `rmq-protocol` in Rust, so Python never has a codec of its own. The runtime's workers hold
//! the handler as an `Arc` and never take the GIL: the handler runs on a blocking thread,
//! through `runtime::attach_if_alive`, so nothing attaches to an interpreter that is exiting.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmq_protocol::{ExtFields, RemotingCommand, ResponseCode};
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler};

use crate::errors::raise;
use crate::runtime::{attach_if_alive, runtime};

fn resolve(addr: &str) -> PyResult<SocketAddr> {
    addr.to_socket_addrs()
        .ok()
        .and_then(|mut it| it.next())
        .ok_or_else(|| {
            PyValueError::new_err(format!("{addr:?} is not an address like 127.0.0.1:9876"))
        })
}

/// A request as Python sees it.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
pub(crate) struct RemotingRequest {
    code: i32,
    language: String,
    version: i32,
    flag: i32,
    remark: Option<String>,
    ext_fields: HashMap<String, String>,
    body: Option<Py<PyBytes>>,
    connection_id: u64,
    peer: String,
}

#[pymethods]
impl RemotingRequest {
    #[getter]
    fn oneway(&self) -> bool {
        self.flag & rmq_protocol::command::FLAG_ONEWAY != 0
    }

    fn __repr__(&self) -> String {
        format!(
            "RemotingRequest(code={}, peer={}, ext_fields={:?})",
            self.code, self.peer, self.ext_fields
        )
    }
}

/// A response (built by a Python handler, or returned by the client).
#[pyclass(module = "rmq._rmq", frozen, get_all)]
pub(crate) struct RemotingResponse {
    code: i32,
    remark: Option<String>,
    ext_fields: HashMap<String, String>,
    body: Option<Py<PyBytes>>,
}

#[pymethods]
impl RemotingResponse {
    #[new]
    #[pyo3(signature = (code, remark=None, ext_fields=None, body=None))]
    fn new(
        code: i32,
        remark: Option<String>,
        ext_fields: Option<HashMap<String, String>>,
        body: Option<Py<PyBytes>>,
    ) -> Self {
        Self {
            code,
            remark,
            ext_fields: ext_fields.unwrap_or_default(),
            body,
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "RemotingResponse(code={}, remark={:?})",
            self.code, self.remark
        )
    }
}

fn to_ext(map: &HashMap<String, String>) -> ExtFields {
    map.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

fn from_command(py: Python<'_>, cmd: &RemotingCommand) -> RemotingResponse {
    RemotingResponse {
        code: cmd.code,
        remark: cmd.remark.clone(),
        ext_fields: cmd
            .ext_fields
            .iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        body: cmd.body.as_ref().map(|b| PyBytes::new(py, b).unbind()),
    }
}

/// Runs a Python handler object: `handle(request) -> RemotingResponse | None` and, if it has
/// one, `on_close(connection_id)`. The object is shared through an `Arc`, so handing it to a
/// blocking thread needs no GIL.
pub(crate) struct PyHandler {
    handler: Arc<Py<PyAny>>,
}

impl PyHandler {
    pub(crate) fn new(handler: Py<PyAny>) -> Self {
        Self {
            handler: Arc::new(handler),
        }
    }

    /// The handler's response to `req`; None when it gives none, or when the interpreter is
    /// exiting (the request then gets no reply).
    fn call(
        handler: &Py<PyAny>,
        conn: &Connection,
        req: &RemotingCommand,
    ) -> Option<RemotingCommand> {
        attach_if_alive(|py| {
            let request = RemotingRequest {
                code: req.code,
                language: req.language.name().to_owned(),
                version: req.version,
                flag: req.flag,
                remark: req.remark.clone(),
                ext_fields: req
                    .ext_fields
                    .iter()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
                body: req.body.as_ref().map(|b| PyBytes::new(py, b).unbind()),
                connection_id: conn.id(),
                peer: conn.peer().to_string(),
            };
            let outcome = handler.bind(py).call_method1("handle", (request,));
            match outcome {
                Ok(r) if r.is_none() => None,
                Ok(r) => match r.cast::<RemotingResponse>() {
                    Ok(resp) => {
                        let resp = resp.get();
                        let mut cmd =
                            RemotingCommand::response_to(req, resp.code, resp.remark.clone());
                        cmd.ext_fields = to_ext(&resp.ext_fields);
                        cmd.body = resp
                            .body
                            .as_ref()
                            .map(|b| bytes::Bytes::copy_from_slice(b.as_bytes(py)));
                        Some(cmd)
                    }
                    Err(_) => Some(system_error(
                        req,
                        "the handler returned something that is not a RemotingResponse",
                    )),
                },
                Err(e) => {
                    let msg = e.to_string();
                    e.print(py);
                    Some(system_error(
                        req,
                        &format!("error while handling request code {}: {msg}", req.code),
                    ))
                }
            }
        })
        .flatten()
    }
}

fn system_error(req: &RemotingCommand, remark: &str) -> RemotingCommand {
    RemotingCommand::response_to(req, ResponseCode::SYSTEM_ERROR.0, Some(remark.to_owned()))
}

impl RequestHandler for PyHandler {
    fn handle(&self, conn: Connection, request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let handler = Arc::clone(&self.handler);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || PyHandler::call(&handler, &conn, &request))
                .await
                .ok()
                .flatten()
                .map(Reply::Command)
        })
    }

    fn on_close(&self, conn: &Connection) {
        let id = conn.id();
        let handler = Arc::clone(&self.handler);
        runtime().spawn_blocking(move || {
            attach_if_alive(|py| {
                let h = handler.bind(py);
                if h.hasattr("on_close").unwrap_or(false) {
                    if let Err(e) = h.call_method1("on_close", (id,)) {
                        e.print(py);
                    }
                }
            });
        });
    }
}

/// A remoting server answered by a Python handler.
#[pyclass(module = "rmq._rmq")]
pub(crate) struct RemotingServer {
    handle: Mutex<Option<rmq_remoting::ServerHandle>>,
    pub(crate) local_addr: String,
    /// With `metrics=True`: the RPC latencies of every answer (`rmq._rmq.namesrv_metrics_text`).
    pub(crate) rpc: Option<Arc<rmq_broker::metrics::RpcLatencies>>,
}

#[pymethods]
impl RemotingServer {
    /// `acl_enable`: check every request in Rust, before `handler` sees it, against the ACL
    /// file `acl_file` (default `$ROCKETMQ_HOME/conf/plain_acl.yml`) with the nameserver's
    /// rules (`rmq_acl::Policy::Namesrv`); refusals are answered NO_PERMISSION. `metrics`:
    /// time every answer for the Prometheus scrape.
    #[new]
    #[pyo3(signature = (host, port, handler, *, acl_enable=false, acl_file=None, tls=None,
                        metrics=false))]
    #[expect(
        clippy::needless_pass_by_value,
        clippy::too_many_arguments,
        reason = "pyo3 extracts Python arguments as owned values; the keywords are the Python \
                  constructor's"
    )]
    fn new(
        py: Python<'_>,
        host: &str,
        port: u16,
        handler: Py<PyAny>,
        acl_enable: bool,
        acl_file: Option<std::path::PathBuf>,
        tls: Option<HashMap<String, String>>,
        metrics: bool,
    ) -> PyResult<Self> {
        if !handler.bind(py).hasattr("handle")? {
            return Err(PyValueError::new_err(
                "the handler needs a handle(request) method",
            ));
        }
        let addr = resolve(&format!("{host}:{port}"))?;
        let mut h: Arc<dyn RequestHandler> = Arc::new(PyHandler::new(handler));
        if acl_enable {
            h = crate::acl::namesrv_acl(py, h, acl_file.as_deref())?;
        }
        let rpc = metrics.then(Arc::default);
        let config = rmq_remoting::ServerConfig {
            tls: crate::tls::server_tls(py, tls.as_ref())?,
            timer: rpc
                .clone()
                .map(|r: Arc<rmq_broker::metrics::RpcLatencies>| r as _),
            ..rmq_remoting::ServerConfig::default()
        };
        let handle = py
            .detach(|| runtime().block_on(rmq_remoting::serve(addr, h, config)))
            .map_err(|e| {
                PyRuntimeError::new_err(format!(
                    "cannot listen on {addr}: {e} (is another process using the port? choose another with -p)"
                ))
            })?;
        let local_addr = handle.local_addr().to_string();
        Ok(Self {
            handle: Mutex::new(Some(handle)),
            local_addr,
            rpc,
        })
    }

    /// The address actually bound (`host:port`).
    #[getter]
    fn local_addr(&self) -> String {
        self.local_addr.clone()
    }

    /// Stop accepting and close every connection. Idempotent.
    fn shutdown(&self, py: Python<'_>) {
        let h = self
            .handle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = h {
            py.detach(|| runtime().block_on(h.shutdown()));
        }
    }
}

/// A remoting client with one cached connection per address.
#[pyclass(module = "rmq._rmq")]
pub(crate) struct RemotingClient {
    conns: Mutex<HashMap<SocketAddr, Connection>>,
    /// Signs every request (ACL 1.0) when set.
    credentials: Option<rmq_protocol::acl::SessionCredentials>,
    tls: Option<Arc<rmq_remoting::tls::ClientTls>>,
}

impl RemotingClient {
    fn connection(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<Connection, rmq_remoting::RemotingError> {
        if let Some(c) = self
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&addr)
        {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let tls = self.tls.clone();
        let c = runtime().block_on(rmq_remoting::connect_tls(addr, None, timeout, tls))?;
        self.conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(addr, c.clone());
        Ok(c)
    }

    /// The request to send: every one passes here, and is signed last when the client has
    /// credentials.
    fn request(
        &self,
        addr: &str,
        code: i32,
        ext_fields: Option<HashMap<String, String>>,
        body: Option<&[u8]>,
    ) -> PyResult<(SocketAddr, RemotingCommand)> {
        let mut cmd = RemotingCommand::new_request(code, to_ext(&ext_fields.unwrap_or_default()));
        cmd.body = body.map(bytes::Bytes::copy_from_slice);
        if let Some(creds) = &self.credentials {
            rmq_protocol::acl::sign_request(&mut cmd, creds);
        }
        Ok((resolve(addr)?, cmd))
    }
}

fn remoting_err(py: Python<'_>, e: &rmq_remoting::RemotingError) -> PyErr {
    let class = match e {
        rmq_remoting::RemotingError::Timeout { .. } => "RemotingTimeoutError",
        _ => "RemotingConnectError",
    };
    raise(py, class, e.to_string())
}

#[pymethods]
impl RemotingClient {
    #[new]
    #[pyo3(signature = (access_key=None, secret_key=None, security_token=None, *,
        tls=false, tls_ca=None, tls_cert=None, tls_key=None, tls_verify=true))]
    #[allow(
        clippy::too_many_arguments,
        reason = "Python keyword arguments of RemotingClient(...)"
    )]
    fn new(
        py: Python<'_>,
        access_key: Option<String>,
        secret_key: Option<String>,
        security_token: Option<String>,
        tls: bool,
        tls_ca: Option<std::path::PathBuf>,
        tls_cert: Option<std::path::PathBuf>,
        tls_key: Option<std::path::PathBuf>,
        tls_verify: bool,
    ) -> PyResult<Self> {
        let tls_args = crate::tls::TlsArgs {
            tls,
            ca: tls_ca,
            cert: tls_cert,
            key: tls_key,
            verify: tls_verify,
        };
        Ok(Self {
            conns: Mutex::new(HashMap::new()),
            credentials: crate::common::session_credentials(
                access_key,
                secret_key,
                security_token,
            )?,
            tls: tls_args.build(py)?,
        })
    }

    /// Send a request to `addr` and wait for the response.
    #[pyo3(signature = (addr, code, ext_fields=None, body=None, timeout_ms=3000))]
    fn invoke(
        &self,
        py: Python<'_>,
        addr: &str,
        code: i32,
        ext_fields: Option<HashMap<String, String>>,
        body: Option<&[u8]>,
        timeout_ms: u64,
    ) -> PyResult<RemotingResponse> {
        let (addr, cmd) = self.request(addr, code, ext_fields, body)?;
        let timeout = Duration::from_millis(timeout_ms);
        let result = py.detach(|| {
            let c = self.connection(addr, timeout)?;
            runtime().block_on(c.request(cmd, timeout))
        });
        match result {
            Ok(resp) => Ok(from_command(py, &resp)),
            Err(e) => Err(remoting_err(py, &e)),
        }
    }

    /// Send a request that has no response.
    #[pyo3(signature = (addr, code, ext_fields=None, body=None, timeout_ms=3000))]
    fn invoke_oneway(
        &self,
        py: Python<'_>,
        addr: &str,
        code: i32,
        ext_fields: Option<HashMap<String, String>>,
        body: Option<&[u8]>,
        timeout_ms: u64,
    ) -> PyResult<()> {
        let (addr, cmd) = self.request(addr, code, ext_fields, body)?;
        let timeout = Duration::from_millis(timeout_ms);
        let result = py.detach(|| {
            let c = self.connection(addr, timeout)?;
            runtime().block_on(c.oneway(cmd))
        });
        result.map_err(|e| remoting_err(py, &e))
    }

    /// Close every connection.
    fn close(&self) {
        for (_, c) in self
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
        {
            c.close();
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RemotingServer>()?;
    m.add_class::<RemotingClient>()?;
    m.add_class::<RemotingRequest>()?;
    m.add_class::<RemotingResponse>()?;
    Ok(())
}
