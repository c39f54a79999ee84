//! Master/slave replication of the CommitLog, wire-compatible with RocketMQ 4.x's
//! `HAService` (so an Apache slave can follow an rmq master and the other way round).
//!
//! The protocol, in both directions over one TCP connection to the master's `haListenPort`:
//!
//! * slave → master: its CommitLog max offset, 8 bytes big-endian, at connect, after each
//!   batch it appended, and every `haSendHeartbeatInterval` ms;
//! * master → slave: frames of an 8-byte start offset, a 4-byte body size and that many
//!   CommitLog bytes (at most `haTransferBatchSize`, never across a file end), sent from the
//!   files with `sendfile`; an empty frame (size 0) as a heartbeat when idle. A slave that
//!   reported 0 gets the master's last CommitLog file from its start.
//!
//! The slave writes each frame at the same offset ([`crate::commit_log::CommitLog::append_data`]),
//! so its CommitLog is a byte copy; its own dispatch builds ConsumeQueues and the index, its
//! own flush settings make the bytes durable. Either side drops a peer silent for
//! `haHousekeepingInterval` ms; the slave reconnects with a backoff.
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`HaService`]: the role, the acceptor, the slave list, runtime info |
//! | [`connection`] | the master's side of one slave: reading acks, streaming frames |
//! | [`client`] | the slave's side: connect, report, receive and append frames |
//! | [`group_transfer`] | SYNC_MASTER: sends waiting until a slave acknowledged them |
//! | [`tls`] | TLS on the HA port ([`HaTls`]): one rustls connection shared by two threads |

pub mod client;
pub mod connection;
pub mod group_transfer;
pub mod tls;

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::config::{BrokerRole, StoreConfig};
use crate::error::{IoContext, Result};
use crate::store::MessageStore;
pub use group_transfer::{GroupTransfer, TransferFuture};
pub use tls::{HaServerTls, HaTls};

/// The size of a master frame's header: offset (8) and body size (4).
pub const FRAME_HEADER_SIZE: usize = 12;

/// The HA settings the threads read (from [`StoreConfig`]).
#[derive(Debug, Clone)]
pub struct HaSettings {
    /// `haSendHeartbeatInterval` (ms).
    pub heartbeat: Duration,
    /// `haHousekeepingInterval` (ms).
    pub housekeeping: Duration,
    /// `haTransferBatchSize`.
    pub batch: usize,
    /// `haMaxGapNotInSync`.
    pub max_gap: i64,
    /// `mappedFileSizeCommitLog`.
    pub file_size: i64,
}

impl HaSettings {
    fn from_config(c: &StoreConfig) -> Self {
        Self {
            heartbeat: Duration::from_millis(u64::from(c.ha_send_heartbeat_interval)),
            housekeeping: Duration::from_millis(u64::from(c.ha_housekeeping_interval)),
            batch: c.ha_transfer_batch_size,
            max_gap: c.ha_max_gap_not_in_sync,
            file_size: i64::try_from(c.mapped_file_size_commit_log).unwrap_or(i64::MAX),
        }
    }
}

/// The listening side of a master.
struct Acceptor {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// Replication state of one store: its role (which can change at run time), the acceptor
/// and connected slaves when a master, the client when a slave.
pub struct HaService {
    role: AtomicU8,
    listen_port: u32,
    pub(crate) settings: HaSettings,
    pub(crate) transfer: Arc<GroupTransfer>,
    acceptor: Mutex<Option<Acceptor>>,
    pub(crate) connections: Mutex<Vec<Arc<connection::HaConnection>>>,
    pub(crate) client: Mutex<Option<client::HaClient>>,
    pub(crate) tls: HaTls,
    pub(crate) refusals: tls::Refusals,
}

fn role_code(r: BrokerRole) -> u8 {
    match r {
        BrokerRole::AsyncMaster => 0,
        BrokerRole::SyncMaster => 1,
        BrokerRole::Slave => 2,
    }
}

impl HaService {
    pub(crate) fn new(c: &StoreConfig, tls: HaTls) -> Self {
        Self {
            role: AtomicU8::new(role_code(c.broker_role)),
            listen_port: c.ha_listen_port,
            settings: HaSettings::from_config(c),
            transfer: Arc::default(),
            acceptor: Mutex::new(None),
            connections: Mutex::new(Vec::new()),
            client: Mutex::new(None),
            tls,
            refusals: tls::Refusals::default(),
        }
    }

    /// The role now.
    #[must_use]
    pub fn role(&self) -> BrokerRole {
        match self.role.load(Ordering::Acquire) {
            0 => BrokerRole::AsyncMaster,
            1 => BrokerRole::SyncMaster,
            _ => BrokerRole::Slave,
        }
    }

    pub(crate) fn set_role(&self, r: BrokerRole) {
        self.role.store(role_code(r), Ordering::Release);
    }

    /// The bound HA port while accepting slaves.
    #[must_use]
    pub fn listen_port(&self) -> Option<u16> {
        self.acceptor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .map(|a| a.port)
    }

    /// Connected slaves.
    #[must_use]
    pub fn connection_count(&self) -> usize {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Start accepting slaves on `haListenPort` (no-op when already accepting).
    pub(crate) fn start_acceptor(&self, store: &Arc<MessageStore>) -> Result<()> {
        let mut slot = self.acceptor.lock().unwrap_or_else(PoisonError::into_inner);
        if slot.is_some() {
            return Ok(());
        }
        let want = u16::try_from(self.listen_port).unwrap_or(0);
        let listener = TcpListener::bind(("0.0.0.0", want)).ctx(|| {
            format!(
                "binding the HA port {want} (haListenPort): another process uses it; set \
                 haListenPort to a free port"
            )
        })?;
        let port = listener
            .local_addr()
            .ctx(|| "reading the HA port".into())?
            .port();
        let stop = Arc::new(AtomicBool::new(false));
        let (weak, stop2) = (Arc::downgrade(store), Arc::clone(&stop));
        let thread = std::thread::Builder::new()
            .name("rmq-ha-accept".into())
            .spawn(move || accept_loop(&listener, &weak, &stop2))
            .ctx(|| "starting thread rmq-ha-accept".into())?;
        log::info!("HA service accepting slaves on port {port}");
        *slot = Some(Acceptor { port, stop, thread });
        Ok(())
    }

    /// Stop accepting and drop every slave.
    pub(crate) fn stop_acceptor(&self) {
        let a = self
            .acceptor
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(a) = a {
            a.stop.store(true, Ordering::Release);
            // Unblock accept().
            let _ = TcpStream::connect_timeout(
                &(std::net::Ipv4Addr::LOCALHOST, a.port).into(),
                Duration::from_secs(1),
            );
            let _ = a.thread.join();
        }
        let conns = std::mem::take(
            &mut *self
                .connections
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        );
        for c in conns {
            c.close();
        }
    }

    pub(crate) fn remove_connection(&self, c: &connection::HaConnection) {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|x| !std::ptr::eq(Arc::as_ptr(x), c));
    }

    /// Whether a SYNC_MASTER put ending at `end` may wait for a slave (RocketMQ's
    /// `isSlaveOK`): a slave is connected and the best ack lags less than `haMaxGapNotInSync`.
    #[must_use]
    pub fn is_slave_ok(&self, end: i64) -> bool {
        self.connection_count() > 0 && end - self.transfer.acked() < self.settings.max_gap
    }

    /// Stop everything (store shutdown).
    pub(crate) fn shutdown(&self) {
        self.stop_acceptor();
        client::stop(self);
        self.transfer.stop();
    }
}

fn accept_loop(listener: &TcpListener, store: &Weak<MessageStore>, stop: &AtomicBool) {
    for conn in listener.incoming() {
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(store) = store.upgrade() else { return };
        match conn {
            Ok(s) => {
                if store.ha().tls.server.is_some() {
                    // The first byte and the handshake may take a while: not on this thread.
                    let spawned = std::thread::Builder::new()
                        .name("rmq-ha-tls".into())
                        .spawn(move || start_tls(&store, s));
                    if let Err(e) = spawned {
                        log::error!("HA: could not start serving a slave: {e}");
                    }
                } else if let Err(e) = connection::HaConnection::start(&store, s, None) {
                    log::error!("HA: could not start serving a slave: {e}");
                }
            }
            Err(e) => {
                log::warn!("HA: accepting a slave failed: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
}

/// Serve a slave under `tls.server.mode`: TLS after its handshake, plain when permissive.
fn start_tls(store: &Arc<MessageStore>, s: TcpStream) {
    let Some(server) = &store.ha().tls.server else {
        return;
    };
    let duplex = match tls::accept(server, &s, &store.ha().refusals) {
        tls::Accepted::Plain => None,
        tls::Accepted::Tls(d) => Some(*d),
        tls::Accepted::Refused => {
            close_socket(&s);
            return;
        }
    };
    if let Err(e) = connection::HaConnection::start(store, s, duplex) {
        log::error!("HA: could not start serving a slave: {e}");
    }
}

/// Close both directions of `s` (wakes the thread blocked on the other half).
pub(crate) fn close_socket(s: &TcpStream) {
    let _ = s.shutdown(Shutdown::Both);
}
