//! The server side: its settings, the accept loop, and the table of open connections that
//! lets a full server make room for a new client by closing the longest-idle one (a server
//! that refused everyone at its limit could be locked by idle sockets).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::budget::ConnectionLimits;
use crate::connection::{start_connection, Connection, RequestHandler, RequestTimer, Transport};
use crate::io::ReadSettings;
use crate::tls::{ServerTls, TlsMode};

/// Settings of a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Copy file-region bodies through user space instead of `sendfile` (RocketMQ's
    /// `transferMsgByHeap`).
    pub transfer_by_heap: bool,
    /// Open connections at most; at the limit the longest-idle one is closed to admit a new
    /// one.
    pub max_connections: usize,
    /// A connection with no traffic either way for this long is closed (RocketMQ's
    /// `serverChannelMaxIdleTimeSeconds`, 120 s). Clients heartbeat every 30 s.
    pub idle_timeout: Option<Duration>,
    /// A frame that gets no more bytes for this long closes its connection.
    pub frame_stall_timeout: Option<Duration>,
    /// What one connection may make the server hold.
    pub limits: ConnectionLimits,
    /// TLS (`tls.server.mode` permissive or enforcing); `None` serves plain TCP only.
    pub tls: Option<Arc<ServerTls>>,
    /// Told how long each answered request took (`None`: no clock is read).
    pub timer: Option<Arc<dyn RequestTimer>>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            transfer_by_heap: false,
            max_connections: 10_000,
            idle_timeout: Some(Duration::from_secs(120)),
            frame_stall_timeout: Some(Duration::from_secs(30)),
            limits: ConnectionLimits::default(),
            tls: None,
            timer: None,
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

/// The open connections by id.
#[derive(Default)]
struct Open(Mutex<HashMap<u64, Connection>>);

impl Open {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Connection>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// At the limit, close the connection idle the longest; false when none could go.
    fn make_room(&self, max: usize, newcomer: SocketAddr) -> bool {
        let open = self.lock();
        if open.len() < max {
            return true;
        }
        let Some(victim) = open.values().max_by_key(|c| c.idle_for()) else {
            return false;
        };
        log::warn!(
            "{max} connections open (the limit): closing the one from {} \
             (idle for {} s) to admit {newcomer}",
            victim.peer(),
            victim.idle_for().as_secs()
        );
        victim.close();
        true
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
    serve_listeners(vec![listener], &handler, &config)
}

/// Serve connections accepted on every one of `listeners` with `handler` until shut down:
/// one connection table, one connection limit and one shutdown for all (a broker's main
/// port and its VIP channel port). The handle's `local_addr` is the first listener's.
///
/// # Errors
/// When `listeners` is empty or the first one has no local address.
pub fn serve_listeners(
    listeners: Vec<TcpListener>,
    handler: &Arc<dyn RequestHandler>,
    config: &ServerConfig,
) -> io::Result<ServerHandle> {
    let local_addr = listeners
        .first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no listener to serve"))?
        .local_addr()?;
    let (shutdown, _) = watch::channel(false);
    let open = Arc::new(Open::default());
    let accepts: Vec<JoinHandle<()>> = listeners
        .into_iter()
        .map(|listener| {
            let handler = Arc::clone(handler);
            let config = config.clone();
            let open = Arc::clone(&open);
            let stop = shutdown.subscribe();
            tokio::spawn(accept_loop(listener, handler, config, open, stop))
        })
        .collect();
    let task = tokio::spawn(async move {
        for accept in accepts {
            let _ = accept.await;
        }
    });
    Ok(ServerHandle {
        local_addr,
        shutdown,
        task,
    })
}

async fn accept_loop(
    listener: TcpListener,
    handler: Arc<dyn RequestHandler>,
    config: ServerConfig,
    open: Arc<Open>,
    mut stop: watch::Receiver<bool>,
) {
    let stop_for_conns = stop.clone();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    if open.make_room(config.max_connections, peer) {
                        admit(stream, &handler, &config, &open, stop_for_conns.clone());
                    }
                }
                Err(e) => {
                    log::warn!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = stop.changed() => break,
        }
    }
}

fn admit(
    stream: TcpStream,
    handler: &Arc<dyn RequestHandler>,
    config: &ServerConfig,
    open: &Arc<Open>,
    stop: watch::Receiver<bool>,
) {
    let Some(tls) = config.tls.clone() else {
        start(Transport::Plain(stream), handler, config, open, stop);
        return;
    };
    let (handler, config, open) = (Arc::clone(handler), config.clone(), Arc::clone(open));
    tokio::spawn(async move {
        let wait = config
            .frame_stall_timeout
            .or(config.idle_timeout)
            .unwrap_or(Duration::from_secs(30));
        if let Some(transport) = tls_or_plain(stream, &tls, wait).await {
            start(transport, &handler, &config, &open, stop);
        }
    });
}

/// What a TLS server makes of a new connection: a TLS stream once the handshake is done, the
/// plain stream in permissive mode when the first byte is not a TLS handshake record (0x16:
/// never the first byte of a frame, whose length is below 16 MiB), nothing when enforcing
/// refuses it, the handshake fails or nothing arrives within `wait`.
async fn tls_or_plain(stream: TcpStream, tls: &ServerTls, wait: Duration) -> Option<Transport> {
    const HANDSHAKE: u8 = 0x16;
    let peer = stream.peer_addr().ok()?;
    let mut first = [0u8; 1];
    match tokio::time::timeout(wait, stream.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return None,
    }
    if first[0] != HANDSHAKE {
        if tls.mode() == TlsMode::Permissive {
            return Some(Transport::Plain(stream));
        }
        if tls.should_log_refusal(peer.ip()) {
            log::warn!(
                "closing plain connection from {peer}: tls.server.mode = enforcing accepts \
                 TLS only; the client must use TLS (Java: -Dtls.enable=true, rmq SDK: \
                 tls=True, rmq admin: --tls), or set tls.server.mode = permissive"
            );
        }
        return None;
    }
    match tokio::time::timeout(wait, tls.acceptor().accept(stream)).await {
        Ok(Ok(s)) => Some(Transport::Tls(Box::new(tokio_rustls::TlsStream::Server(s)))),
        Ok(Err(e)) => {
            if tls.should_log_refusal(peer.ip()) {
                log::warn!("TLS handshake with {peer} failed, closing: {e}");
            }
            None
        }
        Err(_) => {
            log::info!(
                "closing connection from {peer}: TLS handshake unfinished after {} s",
                wait.as_secs()
            );
            None
        }
    }
}

fn start(
    stream: Transport,
    handler: &Arc<dyn RequestHandler>,
    config: &ServerConfig,
    open: &Arc<Open>,
    stop: watch::Receiver<bool>,
) {
    let settings = ReadSettings {
        idle_timeout: config.idle_timeout,
        frame_stall_timeout: config.frame_stall_timeout,
        server_stop: Some(stop),
        timer: config.timer.clone(),
    };
    let Ok((conn, task)) = start_connection(
        stream,
        Arc::clone(handler),
        config.transfer_by_heap,
        settings,
        config.limits,
    ) else {
        return;
    };
    open.lock().insert(conn.id(), conn.clone());
    let open = Arc::clone(open);
    tokio::spawn(async move {
        let _ = task.await;
        open.lock().remove(&conn.id());
    });
}
