//! Connections, the server's accept loop and the client's connect: one reader task and one
//! writer task per socket, requests and responses matched by `opaque` in both directions.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::BytesMut;
use rmq_protocol::{codec, RemotingCommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::error::RemotingError;

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

struct Shared {
    id: u64,
    peer: SocketAddr,
    local: SocketAddr,
    tx: mpsc::Sender<Reply>,
    pending: Mutex<HashMap<i32, oneshot::Sender<RemotingCommand>>>,
    next_opaque: AtomicI32,
    closed: AtomicBool,
    close_signal: watch::Sender<bool>,
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

    /// Queue a reply (or any command) for sending.
    ///
    /// # Errors
    /// When the connection has closed.
    pub async fn send(&self, reply: Reply) -> Result<(), RemotingError> {
        self.0
            .tx
            .send(reply)
            .await
            .map_err(|_| self.closed_error(""))
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

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Copy file-region bodies through user space instead of `sendfile` (RocketMQ's
    /// `transferMsgByHeap`).
    pub transfer_by_heap: bool,
    /// Connections above this are closed at once, with a log line.
    pub max_connections: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            transfer_by_heap: false,
            max_connections: 10_000,
        }
    }
}

/// A running server.
pub struct ServerHandle {
    local_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl ServerHandle {
    /// The bound address (useful with port 0).
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Stop accepting and close every connection.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

/// Bind `addr` and serve connections with `handler` until shut down.
///
/// # Errors
/// When the address cannot be bound.
pub async fn serve(
    addr: SocketAddr,
    handler: Arc<dyn RequestHandler>,
    config: ServerConfig,
) -> io::Result<ServerHandle> {
    let listener = TcpListener::bind(addr).await?;
    let local_addr = listener.local_addr()?;
    let (shutdown, mut stop) = watch::channel(false);
    let active = Arc::new(AtomicUsize::new(0));
    let stop_for_conns = shutdown.subscribe();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, peer)) => {
                        if active.load(Ordering::Acquire) >= config.max_connections {
                            eprintln!(
                                "rmq-remoting WARN: refusing connection from {peer}: {} connections \
                                 open (the limit)",
                                config.max_connections
                            );
                            drop(stream);
                            continue;
                        }
                        active.fetch_add(1, Ordering::AcqRel);
                        let (h, a, s) = (Arc::clone(&handler), Arc::clone(&active), stop_for_conns.clone());
                        let transfer_by_heap = config.transfer_by_heap;
                        tokio::spawn(async move {
                            if let Ok(conn_task) = start_connection(stream, h, transfer_by_heap, Some(s)) {
                                let _ = conn_task.1.await;
                            }
                            a.fetch_sub(1, Ordering::AcqRel);
                        });
                    }
                    Err(e) => {
                        eprintln!("rmq-remoting WARN: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                _ = stop.changed() => break,
            }
        }
    });
    Ok(ServerHandle {
        local_addr,
        shutdown,
        task,
    })
}

/// Connect to `addr`; requests the server sends back go to `handler`.
///
/// # Errors
/// When the connection cannot be made within `timeout`.
pub async fn connect(
    addr: SocketAddr,
    handler: Option<Arc<dyn RequestHandler>>,
    timeout: Duration,
) -> Result<Connection, RemotingError> {
    let io_err = |source| RemotingError::Io {
        context: format!("connecting to {addr}"),
        source,
    };
    let stream = tokio::time::timeout(timeout, TcpStream::connect(addr))
        .await
        .map_err(|_| io_err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")))?
        .map_err(io_err)?;
    let handler = handler.unwrap_or_else(|| Arc::new(NoRequests));
    let (conn, _task) = start_connection(stream, handler, true, None).map_err(io_err)?;
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

fn start_connection(
    stream: TcpStream,
    handler: Arc<dyn RequestHandler>,
    transfer_by_heap: bool,
    server_stop: Option<watch::Receiver<bool>>,
) -> io::Result<(Connection, JoinHandle<()>)> {
    stream.set_nodelay(true)?;
    let peer = stream.peer_addr()?;
    let local = stream.local_addr()?;
    let (rd, wr) = stream.into_split();
    let (tx, rx) = mpsc::channel(4096);
    let (close_signal, close_rx) = watch::channel(false);
    let conn = Connection(Arc::new(Shared {
        id: NEXT_CONNECTION_ID.fetch_add(1, Ordering::Relaxed),
        peer,
        local,
        tx,
        pending: Mutex::new(HashMap::new()),
        next_opaque: AtomicI32::new(1),
        closed: AtomicBool::new(false),
        close_signal,
    }));
    handler.on_connect(&conn);
    let writer = tokio::spawn(write_loop(wr, rx, transfer_by_heap, peer, close_rx.clone()));
    let c = conn.clone();
    let task = tokio::spawn(async move {
        read_loop(rd, &c, &handler, close_rx, server_stop).await;
        c.0.closed.store(true, Ordering::Release);
        let _ = c.0.close_signal.send(true);
        c.0.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        handler.on_close(&c);
        let _ = writer.await;
    });
    Ok((conn, task))
}

async fn read_loop(
    mut rd: OwnedReadHalf,
    conn: &Connection,
    handler: &Arc<dyn RequestHandler>,
    mut close: watch::Receiver<bool>,
    mut server_stop: Option<watch::Receiver<bool>>,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    loop {
        loop {
            match codec::decode(&mut buf) {
                Ok(Some(cmd)) => dispatch(conn, handler, cmd),
                Ok(None) => break,
                Err(e) => {
                    eprintln!(
                        "rmq-remoting WARN: closing connection from {}: malformed frame: {e}",
                        conn.peer()
                    );
                    return;
                }
            }
        }
        let stop = async {
            match &mut server_stop {
                Some(s) => {
                    let _ = s.changed().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            read = rd.read_buf(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            },
            _ = close.changed() => return,
            () = stop => return,
        }
    }
}

fn dispatch(conn: &Connection, handler: &Arc<dyn RequestHandler>, cmd: RemotingCommand) {
    if cmd.is_response() {
        let waiter = conn
            .0
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&cmd.opaque);
        if let Some(tx) = waiter {
            let _ = tx.send(cmd);
        }
        return;
    }
    let oneway = cmd.is_oneway();
    if !handler.run_inline(&cmd) {
        let (c, h) = (conn.clone(), Arc::clone(handler));
        tokio::spawn(async move { reply_when_done(c.clone(), h.handle(c, cmd), oneway).await });
        return;
    }
    let mut handling = handler.handle(conn.clone(), cmd);
    match handling
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(Some(reply)) if !oneway => match conn.0.tx.try_send(reply) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(reply)) => {
                let c = conn.clone();
                tokio::spawn(async move {
                    let _ = c.send(reply).await;
                });
            }
        },
        Poll::Ready(_) => {}
        // It has to wait (group commit, a full store queue): the rest is a task, whose first
        // poll registers its own waker.
        Poll::Pending => {
            tokio::spawn(reply_when_done(conn.clone(), handling, oneway));
        }
    }
}

/// Await a request's handling and queue its reply (none for a oneway request).
async fn reply_when_done(conn: Connection, handling: BoxFuture<Option<Reply>>, oneway: bool) {
    if let Some(reply) = handling.await {
        if !oneway {
            let _ = conn.send(reply).await;
        }
    }
}

async fn write_loop(
    mut wr: OwnedWriteHalf,
    mut rx: mpsc::Receiver<Reply>,
    transfer_by_heap: bool,
    peer: SocketAddr,
    mut close: watch::Receiver<bool>,
) {
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let mut next: Option<Reply> = None;
    loop {
        let reply = match next.take() {
            Some(r) => r,
            None => tokio::select! {
                r = rx.recv() => match r { Some(r) => r, None => break },
                _ = close.changed() => break,
            },
        };
        let result = match reply {
            Reply::Command(cmd) => {
                buf.clear();
                encode_or_log(&cmd, &mut buf, peer);
                // Let the tasks that are ready run first, then coalesce what they queued
                // into one write: one `sendto` per burst instead of one per reply.
                tokio::task::yield_now().await;
                while buf.len() < 256 * 1024 {
                    match rx.try_recv() {
                        Ok(Reply::Command(more)) => encode_or_log(&more, &mut buf, peer),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                wr.write_all(&buf).await
            }
            Reply::WithFileRegions { command, regions } => {
                write_regions(&mut wr, &command, &regions, transfer_by_heap).await
            }
        };
        if let Err(e) = result {
            eprintln!("rmq-remoting WARN: write to {peer} failed, closing: {e}");
            break;
        }
    }
    let _ = wr.shutdown().await;
}

/// Encode a command; one that cannot be encoded (a header over 16 MiB) is dropped with a log
/// line rather than sent half-made.
fn encode_or_log(cmd: &RemotingCommand, buf: &mut BytesMut, peer: SocketAddr) {
    let mark = buf.len();
    if let Err(e) = codec::encode(cmd, buf) {
        buf.truncate(mark);
        eprintln!(
            "rmq-remoting ERROR: dropping command {} to {peer}: {e}",
            cmd.code
        );
    }
}

async fn write_regions(
    wr: &mut OwnedWriteHalf,
    command: &RemotingCommand,
    regions: &[Box<dyn FileRegion>],
    transfer_by_heap: bool,
) -> io::Result<()> {
    let total: usize = regions.iter().map(|r| r.len()).sum();
    let header = codec::encode_header_for_body(command, total)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
    if transfer_by_heap {
        let mut out = Vec::with_capacity(header.len() + total);
        out.extend_from_slice(&header);
        for r in regions {
            out.extend_from_slice(r.bytes());
        }
        return wr.write_all(&out).await;
    }
    if total / regions.len().max(1) < SENDFILE_MIN_REGION {
        // Many small records (the usual pull): one gathered write straight from the mapped
        // pages beats a sendfile call (and a TCP segment) per record.
        let mut slices: Vec<io::IoSlice<'_>> = Vec::with_capacity(regions.len() + 1);
        slices.push(io::IoSlice::new(&header));
        slices.extend(regions.iter().map(|r| io::IoSlice::new(r.bytes())));
        return write_all_vectored(wr, &mut slices).await;
    }
    wr.write_all(&header).await?;
    for r in regions {
        sendfile_all(wr, r.as_ref()).await?;
    }
    Ok(())
}

/// Regions smaller than this on average go out with one `writev` instead of `sendfile`s.
const SENDFILE_MIN_REGION: usize = 64 * 1024;

async fn write_all_vectored(
    wr: &mut OwnedWriteHalf,
    mut slices: &mut [io::IoSlice<'_>],
) -> io::Result<()> {
    while !slices.is_empty() {
        let n = wr.write_vectored(slices).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "socket accepted no bytes",
            ));
        }
        io::IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Send a file region with `sendfile(2)`: the bytes go from the page cache to the socket
/// without passing through user space.
async fn sendfile_all(wr: &OwnedWriteHalf, region: &dyn FileRegion) -> io::Result<()> {
    let stream: &TcpStream = wr.as_ref();
    let mut offset = region.position();
    let end = offset + region.len() as u64;
    while offset < end {
        stream.writable().await?;
        let remaining = usize::try_from(end - offset).unwrap_or(usize::MAX);
        match stream.try_io(Interest::WRITABLE, || {
            rustix::fs::sendfile(stream, region.file(), Some(&mut offset), remaining)
                .map_err(io::Error::from)
        }) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::WriteZero,
                    "sendfile wrote nothing (file shorter than the region?)",
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
