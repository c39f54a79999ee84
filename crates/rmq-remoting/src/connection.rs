//! A connection's shared state and its public face ([`Connection`]): sending requests and
//! awaiting their responses (matched by `opaque`, in both directions), oneways, closing; and
//! the client's [`connect`]. The reader and writer tasks are in `io.rs`, the server's accept
//! loop in `server.rs`.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmq_protocol::RemotingCommand;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::budget::{Budget, Charge, ConnectionLimits};
use crate::error::RemotingError;
use crate::io::{read_loop, write_loop, ReadSettings, WireWrite};
use crate::tls::ClientTls;

/// A byte range of a file that a reply sends as its body (a stored message).
pub trait FileRegion: Send + Sync + 'static {
    /// The file holding the bytes.
    fn file(&self) -> &std::fs::File;
    /// Position of the first byte in the file.
    fn position(&self) -> u64;
    /// Number of bytes.
    fn len(&self) -> usize;
    /// Whether the region is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The same bytes in memory (for the copying path).
    fn bytes(&self) -> &[u8];
    /// Whether [`file`](Self::file) holds the bytes yet (`sendfile` reads the file; bytes
    /// only in memory so far go out with the copying path).
    fn on_file(&self) -> bool {
        true
    }
}

/// What goes out on a connection.
pub enum Reply {
    /// A whole command (its body, if any, inside).
    Command(RemotingCommand),
    /// A command whose body is the concatenation of `regions`, sent without copying them
    /// into user space when the server allows it.
    WithFileRegions {
        /// The header part (its own body is ignored).
        command: RemotingCommand,
        /// The body.
        regions: Vec<Box<dyn FileRegion>>,
    },
}

impl Reply {
    /// The answer's code.
    #[must_use]
    pub fn code(&self) -> i32 {
        match self {
            Self::Command(c) | Self::WithFileRegions { command: c, .. } => c.code,
        }
    }
}

/// Told how long a server took to answer each request it answered (a server's RPC latency
/// metric; see [`crate::ServerConfig::timer`]). The server reads the clock only when one is
/// set, and times in its own dispatch, so timing adds no future of its own to a request.
pub trait RequestTimer: Send + Sync + std::fmt::Debug + 'static {
    /// A request with `request_code` was answered with `response_code`, `elapsed` after it
    /// was decoded.
    fn answered(&self, request_code: i32, response_code: i32, elapsed: std::time::Duration);
}

/// A boxed, sendable future.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Serves requests that arrive on connections.
pub trait RequestHandler: Send + Sync + 'static {
    /// Handle one request; `None` means no reply (or the reply is sent later through `conn`).
    fn handle(&self, conn: Connection, request: RemotingCommand) -> BoxFuture<Option<Reply>>;
    /// Whether `request` is cheap enough to start in the connection's reader: its first poll
    /// runs there (no task of its own, and its reply joins the other queued replies in one
    /// write); only if it has to wait does it become a task. Heavy requests return `false` so
    /// that they spread over the runtime's threads.
    fn run_inline(&self, _request: &RemotingCommand) -> bool {
        false
    }
    /// A connection opened.
    fn on_connect(&self, _conn: &Connection) {}
    /// A connection closed.
    fn on_close(&self, _conn: &Connection) {}
}

impl Reply {
    /// About how many bytes the reply holds until written (what the budget charges).
    fn weight(&self) -> usize {
        match self {
            Self::Command(cmd) => command_weight(cmd),
            Self::WithFileRegions { command, regions } => {
                command_weight(command) + regions.iter().map(|r| r.len()).sum::<usize>()
            }
        }
    }
}

fn command_weight(cmd: &RemotingCommand) -> usize {
    let fields: usize = cmd
        .ext_fields
        .iter()
        .map(|(k, v)| k.len() + v.len() + 8)
        .sum();
    128 + fields
        + cmd.remark.as_ref().map_or(0, String::len)
        + cmd.body.as_ref().map_or(0, bytes::Bytes::len)
}

/// A reply or request waiting for the writer, with what it was charged.
pub(crate) struct Outgoing {
    pub(crate) reply: Reply,
    pub(crate) weight: usize,
    pub(crate) charge: Charge,
    /// Queued by the connection's own reader, answering inline: the reader is still running
    /// on this worker, so the writer only runs once the reader's burst of frames is decoded
    /// and needs no yield to gather the burst's other replies.
    pub(crate) from_reader: bool,
}

pub(crate) struct Shared {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    tx: mpsc::UnboundedSender<Outgoing>,
    pending: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
    next_opaque: AtomicI32,
    closed: AtomicBool,
    close_signal: watch::Sender<bool>,
    pub(crate) budget: Arc<Budget>,
    tls: bool,
    /// Times the answers (a server's RPC latency metric).
    timer: Option<Arc<dyn RequestTimer>>,
}

/// One end of a connection: send replies, send requests and await their responses.
#[derive(Clone)]
pub struct Connection(Arc<Shared>);

static NEXT_CONNECTION_ID: AtomicU64 = AtomicU64::new(1);

impl Connection {
    /// Process-unique id.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Remote address.
    #[must_use]
    pub fn peer(&self) -> SocketAddr {
        self.0.peer
    }

    /// Local address.
    #[must_use]
    pub fn local(&self) -> SocketAddr {
        self.0.local
    }

    /// Whether the connection runs over TLS.
    #[must_use]
    pub fn is_tls(&self) -> bool {
        self.0.tls
    }

    /// Whether the connection has closed.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.0.closed.load(Ordering::Acquire)
    }

    fn closed_error(&self, detail: &str) -> RemotingError {
        RemotingError::Closed {
            peer: self.peer().to_string(),
            detail: detail.to_owned(),
        }
    }

    /// Queue a command of this side's own (a request, a oneway, a late reply) for sending.
    ///
    /// # Errors
    /// When the connection has closed, or when more than the connection's
    /// `max_queued_request_bytes` already wait for a peer that is not reading.
    #[expect(
        clippy::unused_async,
        reason = "async in the API: a bounded queue may make it wait again"
    )]
    pub async fn send(&self, reply: Reply) -> Result<(), RemotingError> {
        let weight = reply.weight();
        if let Err(queued) = self.0.budget.charge(Charge::Request, weight) {
            return Err(RemotingError::Backlog {
                peer: self.peer().to_string(),
                queued_bytes: queued,
            });
        }
        self.enqueue(reply, weight, Charge::Request, false)
    }

    /// Queue a reply to one of the peer's requests (never refused: the reader stops reading
    /// that peer instead while too many reply bytes wait).
    pub(crate) fn send_reply(&self, reply: Reply, from_reader: bool) {
        let weight = reply.weight();
        let _ = self.0.budget.charge(Charge::Reply, weight);
        let _ = self.enqueue(reply, weight, Charge::Reply, from_reader);
    }

    fn enqueue(
        &self,
        reply: Reply,
        weight: usize,
        charge: Charge,
        from_reader: bool,
    ) -> Result<(), RemotingError> {
        let item = Outgoing {
            reply,
            weight,
            charge,
            from_reader,
        };
        self.0.tx.send(item).map_err(|e| {
            let (replies, requests) = match e.0.charge {
                Charge::Reply => (e.0.weight, 0),
                Charge::Request => (0, e.0.weight),
            };
            self.0.budget.release(replies, requests);
            self.closed_error("")
        })
    }

    pub(crate) fn budget(&self) -> &Arc<Budget> {
        &self.0.budget
    }

    pub(crate) fn timer(&self) -> Option<&Arc<dyn RequestTimer>> {
        self.0.timer.as_ref()
    }

    /// How long since anything was read from or written to the peer.
    #[must_use]
    pub fn idle_for(&self) -> Duration {
        self.0.budget.idle_for()
    }

    /// Send a request and wait for its response.
    ///
    /// # Errors
    /// Timeout, or the connection closing first.
    pub async fn request(
        &self,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand, RemotingError> {
        let opaque = self.0.next_opaque.fetch_add(1, Ordering::Relaxed);
        cmd.opaque = opaque;
        let code = cmd.code;
        let (tx, rx) = oneshot::channel();
        self.0
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(opaque, tx);
        // The reader marks the connection closed before it drops the waiting requests: one
        // registered after that would wait for its timeout (a server that closes at once,
        // e.g. refusing a client certificate after the TLS 1.3 handshake).
        if self.is_closed() {
            self.forget(opaque);
            return Err(self.closed_error(""));
        }
        if let Err(e) = self.send(Reply::Command(cmd)).await {
            self.forget(opaque);
            return Err(e);
        }
        match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(_)) => Err(self.closed_error("before the response arrived")),
            Err(_) => {
                self.forget(opaque);
                Err(RemotingError::Timeout {
                    peer: self.peer().to_string(),
                    code,
                    timeout_ms: timeout.as_millis(),
                })
            }
        }
    }

    /// Send a request that expects no response.
    ///
    /// # Errors
    /// When the connection has closed.
    pub async fn oneway(&self, mut cmd: RemotingCommand) -> Result<(), RemotingError> {
        cmd.opaque = self.0.next_opaque.fetch_add(1, Ordering::Relaxed);
        cmd.mark_oneway();
        self.send(Reply::Command(cmd)).await
    }

    fn forget(&self, opaque: i32) {
        self.0
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&opaque);
    }

    /// Close the connection (both tasks end; pending requests fail).
    pub fn close(&self) {
        let _ = self.0.close_signal.send(true);
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.0.id)
            .field("peer", &self.0.peer)
            .finish_non_exhaustive()
    }
}

/// Connect to `addr` in plain TCP; requests the server sends back go to `handler`.
///
/// # Errors
/// When the connection cannot be made within `timeout`.
pub async fn connect(
    addr: SocketAddr,
    handler: Option<Arc<dyn RequestHandler>>,
    timeout: Duration,
) -> Result<Connection, RemotingError> {
    connect_tls(addr, handler, timeout, None).await
}

/// Connect to `addr`, over TLS when `tls` is given (plain TCP otherwise); requests the
/// server sends back go to `handler`. `timeout` bounds the TCP connect and the handshake.
///
/// # Errors
/// When the connection cannot be made, or the TLS handshake fails, within `timeout`.
pub async fn connect_tls(
    addr: SocketAddr,
    handler: Option<Arc<dyn RequestHandler>>,
    timeout: Duration,
    tls: Option<Arc<ClientTls>>,
) -> Result<Connection, RemotingError> {
    let io_err = |source| RemotingError::Io {
        context: format!("connecting to {addr}"),
        source,
    };
    let timed_out = || io::Error::new(io::ErrorKind::TimedOut, "connect timed out");
    let started = tokio::time::Instant::now();
    let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| io_err(timed_out()))?
        .map_err(io_err)?;
    let stream = match tls {
        None => Transport::Plain(stream),
        Some(tls) => {
            stream.set_nodelay(true).map_err(io_err)?;
            let left = timeout.saturating_sub(started.elapsed());
            let handshake = tls
                .connector()
                .connect(ClientTls::server_name(addr), stream);
            let tls_stream = tokio::time::timeout(left, handshake)
                .await
                .map_err(|_| io_err(timed_out()))?
                .map_err(|source| RemotingError::Handshake {
                    peer: addr.to_string(),
                    source,
                })?;
            Transport::Tls(Box::new(tokio_rustls::TlsStream::Client(tls_stream)))
        }
    };
    let handler = handler.unwrap_or_else(|| Arc::new(NoRequests));
    let (conn, _task) = start_connection(
        stream,
        handler,
        true,
        ReadSettings::client(),
        ConnectionLimits::default(),
    )
    .map_err(io_err)?;
    Ok(conn)
}

/// Clients that serve nothing answer server-initiated requests with "not supported".
struct NoRequests;

impl RequestHandler for NoRequests {
    fn handle(&self, _conn: Connection, request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let reply = RemotingCommand::response_to(
            &request,
            rmq_protocol::ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0,
            Some(format!(
                "request code {} is not supported by this client",
                request.code
            )),
        );
        Box::pin(async move { Some(Reply::Command(reply)) })
    }
}

/// A connected stream: plain TCP (file regions go out with `sendfile`) or TLS over TCP.
pub(crate) enum Transport {
    /// Plain TCP.
    Plain(TcpStream),
    /// TLS (either side's).
    Tls(Box<tokio_rustls::TlsStream<TcpStream>>),
}

/// Start the reader and writer tasks of `stream`; the handle ends when both have.
pub(crate) fn start_connection(
    stream: Transport,
    handler: Arc<dyn RequestHandler>,
    transfer_by_heap: bool,
    settings: ReadSettings,
    limits: ConnectionLimits,
) -> io::Result<(Connection, JoinHandle<()>)> {
    let tcp = match &stream {
        Transport::Plain(s) => s,
        Transport::Tls(s) => s.get_ref().0,
    };
    tcp.set_nodelay(true)?;
    let ends = Ends {
        peer: tcp.peer_addr()?,
        local: tcp.local_addr()?,
        handler,
        transfer_by_heap,
        settings,
        limits,
    };
    Ok(match stream {
        Transport::Plain(s) => {
            let (rd, wr) = s.into_split();
            run(rd, wr, ends, false)
        }
        Transport::Tls(s) => {
            let (rd, wr) = tokio::io::split(*s);
            run(rd, wr, ends, true)
        }
    })
}

/// What a connection's tasks are started with, besides the stream's two halves.
struct Ends {
    peer: SocketAddr,
    local: SocketAddr,
    handler: Arc<dyn RequestHandler>,
    transfer_by_heap: bool,
    settings: ReadSettings,
    limits: ConnectionLimits,
}

fn run<R, W>(rd: R, wr: W, ends: Ends, tls: bool) -> (Connection, JoinHandle<()>)
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: WireWrite,
{
    let Ends {
        peer,
        local,
        handler,
        transfer_by_heap,
        mut settings,
        limits,
    } = ends;
    let (tx, rx) = mpsc::unbounded_channel();
    let (close_signal, close_rx) = watch::channel(false);
    let budget = Arc::new(Budget::new(limits));
    let conn = Connection(Arc::new(Shared {
        id: NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        local,
        tx,
        pending: Mutex::new(HashMap::new()),
        next_opaque: AtomicI32::new(1),
        closed: AtomicBool::new(false),
        close_signal,
        budget: Arc::clone(&budget),
        tls,
        timer: settings.timer.take(),
    }));
    handler.on_connect(&conn);
    let writer = tokio::spawn(write_loop(
        wr,
        rx,
        transfer_by_heap,
        peer,
        budget,
        close_rx.clone(),
    ));
    let c = conn.clone();
    let task = tokio::spawn(async move {
        read_loop(rd, &c, &handler, close_rx, settings).await;
        c.0.closed.store(true, Ordering::Release);
        let _ = c.0.close_signal.send(true);
        c.0.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        handler.on_close(&c);
        let _ = writer.await;
    });
    (conn, task)
}

impl Connection {
    /// Hand a response to the request waiting for it (false when none waits: timed out).
    pub(crate) fn complete(&self, response: RemotingCommand) -> bool {
        let waiter = self
            .0
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&response.opaque);
        waiter.is_some_and(|tx| tx.send(response).is_ok())
    }
}
