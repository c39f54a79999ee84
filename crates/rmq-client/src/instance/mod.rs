//! `ClientInstance`: what RocketMQ calls `MQClientInstance`, one per client id. It owns the
//! connections (one per address, shared by every producer and consumer of the process), the
//! topic route table fetched from the nameservers, and the two timers every client runs:
//! route refresh and heartbeats. Producers and consumers register their groups here so the
//! heartbeat announces them to every broker.
//!
//! Requests brokers send back on these connections (NOTIFY_CONSUMER_IDS_CHANGED,
//! RESET_CONSUMER_CLIENT_OFFSET, CHECK_TRANSACTION_STATE) go to a [`ClientListener`]: the
//! decisions they trigger (rebalance, offset reset, transaction checks) belong to Python. So
//! do the answers to the admin calls a broker relays (GET_CONSUMER_RUNNING_INFO,
//! CONSUME_MESSAGE_DIRECTLY), which come back through [`ClientListener::on_broker_call`].
//!
//! | file | owns |
//! |---|---|
//! | `mod.rs` | [`ClientConfig`], [`ClientInstance`]: connections, requests, timers, shutdown |
//! | `route.rs` | [`TopicRoute`] and the route table (nameserver lookups, broker addresses) |
//! | `heartbeat.rs` | producer and consumer groups, HEARTBEAT and UNREGISTER_CLIENT |
//! | `broker_requests.rs` | what brokers send on client connections, to the [`ClientListener`] |
//! | `pipeline.rs` | pipelined pulls: the next pull of a queue sent while the caller consumes |

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::acl::SessionCredentials;
use rmq_protocol::body::{ConsumerData, MessageQueue};
use rmq_protocol::{ExtFields, LanguageCode, RemotingCommand, ResponseCode};
use rmq_remoting::{Connection, RequestHandler};
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::error::{ClientError, Result};

mod broker_requests;
mod broker_select;
mod heartbeat;
mod pipeline;
mod route;

use broker_requests::BrokerRequests;
pub use broker_select::FoundBroker;
pub use route::TopicRoute;

/// Permission bits of a queue (`PermName`).
pub mod perm {
    /// Consumers may read.
    pub const READ: i32 = 0x1 << 2;
    /// Producers may write.
    pub const WRITE: i32 = 0x1 << 1;
}

/// Topic the broker auto-creates topics from (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub use rmq_common::topic::AUTO_CREATE_TOPIC_KEY_TOPIC as AUTO_CREATE_TOPIC_KEY;

/// RocketMQ's default instance name, replaced by the process id in the client id.
pub const DEFAULT_INSTANCE_NAME: &str = "DEFAULT";

/// Settings shared by everything that uses one instance (`ClientConfig`).
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// Nameserver addresses (`host:port`), tried in turn.
    pub namesrv_addrs: Vec<String>,
    /// This client's IP as brokers see it in the client id.
    pub client_ip: String,
    /// Instance name; the client id is `client_ip@instance_name`, with the process id for
    /// RocketMQ's default name `DEFAULT` (as Java's `changeInstanceNameToPID`), so that two
    /// processes on one host are two clients to the brokers.
    pub instance_name: String,
    /// Route refresh period (`pollNameServerInterval`, 30 s).
    pub poll_name_server_interval: Duration,
    /// Heartbeat period (`heartbeatBrokerInterval`, 30 s).
    pub heartbeat_broker_interval: Duration,
    /// Deadline of control requests (routes, heartbeats, offsets), `mqClientApiTimeout` 3 s.
    pub api_timeout: Duration,
    /// Most bytes a pulled compressed body may decompress to (the producers'
    /// `maxMessageSize`, 4 MiB): a larger one is left as stored, with an error.
    pub max_decompressed_body_size: usize,
    /// TLS for every connection (nameservers and brokers); `None`: plain TCP.
    pub tls: Option<Arc<rmq_remoting::tls::ClientTls>>,
    /// ACL 1.0 credentials (`AclClientRPCHook`): when set, every request this instance sends
    /// (to brokers and nameservers alike) is signed as the last step before it is written.
    pub credentials: Option<SessionCredentials>,
}

impl ClientConfig {
    /// Defaults of RocketMQ's `ClientConfig` for these nameservers.
    #[must_use]
    pub fn new(namesrv_addrs: Vec<String>) -> Self {
        Self {
            namesrv_addrs,
            client_ip: "127.0.0.1".to_owned(),
            instance_name: std::process::id().to_string(),
            poll_name_server_interval: Duration::from_secs(30),
            heartbeat_broker_interval: Duration::from_secs(30),
            api_timeout: Duration::from_secs(3),
            max_decompressed_body_size: 4 * 1024 * 1024,
            tls: None,
            credentials: None,
        }
    }

    /// `ip@instance`, how brokers tell clients apart.
    #[must_use]
    pub fn client_id(&self) -> String {
        if self.instance_name == DEFAULT_INSTANCE_NAME {
            format!("{}@{}", self.client_ip, std::process::id())
        } else {
            format!("{}@{}", self.client_ip, self.instance_name)
        }
    }
}

/// Added to the ext fields of a CHECK_TRANSACTION_STATE before the listener sees it: the
/// address of the broker that asked (where the answer goes).
pub const CHECK_BROKER_ADDR_FIELD: &str = "brokerAddr";
/// Added to the ext fields of a CHECK_TRANSACTION_STATE before the listener sees it: the
/// producer group of the checked message (its `PGROUP` property).
pub const CHECK_PRODUCER_GROUP_FIELD: &str = "producerGroup";

/// A listener's answer to a broker call ([`ClientListener::on_broker_call`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallAnswer {
    /// Response code.
    pub code: i32,
    /// Remark (why, when not SUCCESS).
    pub remark: Option<String>,
    /// Response body.
    pub body: Option<Bytes>,
}

/// Receives what brokers push to the client, and background failures worth a log line.
/// A CHECK_TRANSACTION_STATE arrives with [`CHECK_BROKER_ADDR_FIELD`] and
/// [`CHECK_PRODUCER_GROUP_FIELD`] added to its header fields.
pub trait ClientListener: Send + Sync + 'static {
    /// A broker sent a request (`code`) this client must act on.
    fn on_broker_request(&self, code: i32, ext_fields: ExtFields, body: Option<Bytes>);
    /// A background task (heartbeat, route refresh) failed; the text says what and why.
    fn on_warning(&self, message: String);
    /// A broker relays an admin's call this client answers (GET_CONSUMER_RUNNING_INFO,
    /// CONSUME_MESSAGE_DIRECTLY): send the answer on `answer` (dropping it answers
    /// SYSTEM_ERROR). By default the call is refused with REQUEST_CODE_NOT_SUPPORTED.
    fn on_broker_call(
        &self,
        code: i32,
        ext_fields: ExtFields,
        body: Option<Bytes>,
        answer: tokio::sync::oneshot::Sender<CallAnswer>,
    ) {
        let _ = (ext_fields, body);
        let _ = answer.send(CallAnswer {
            code: ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0,
            remark: Some(format!(
                "request code {code} is not answered by this client"
            )),
            body: None,
        });
    }
}

/// The shared client: connections, routes, heartbeats. Cheap to clone.
#[derive(Clone)]
pub struct ClientInstance {
    inner: Arc<Inner>,
}

struct Inner {
    config: ClientConfig,
    client_id: String,
    runtime: Handle,
    conns: Mutex<HashMap<String, Connection>>,
    connecting: tokio::sync::Mutex<()>,
    namesrv_index: AtomicUsize,
    routes: RwLock<HashMap<String, Arc<TopicRoute>>>,
    broker_addrs: RwLock<HashMap<String, BTreeMap<i64, String>>>,
    pull_from_which_node: Mutex<HashMap<(String, MessageQueue), i64>>,
    prefetched: pipeline::PrefetchSlots,
    producers: Mutex<BTreeSet<String>>,
    consumers: Mutex<BTreeMap<String, ConsumerData>>,
    listener: RwLock<Option<Arc<dyn ClientListener>>>,
    handler: Arc<BrokerRequests>,
    stop: watch::Sender<bool>,
}

impl ClientInstance {
    /// Start an instance on `runtime`: its timers begin at once.
    ///
    /// # Errors
    /// [`ClientError::NoNameServer`] without nameserver addresses.
    pub fn start(config: ClientConfig, runtime: Handle) -> Result<Self> {
        if config.namesrv_addrs.is_empty() {
            return Err(ClientError::NoNameServer);
        }
        let (stop, _) = watch::channel(false);
        let inner = Arc::new_cyclic(|weak: &Weak<Inner>| Inner {
            client_id: config.client_id(),
            config,
            runtime,
            conns: Mutex::new(HashMap::new()),
            connecting: tokio::sync::Mutex::new(()),
            namesrv_index: AtomicUsize::new(0),
            routes: RwLock::new(HashMap::new()),
            broker_addrs: RwLock::new(HashMap::new()),
            pull_from_which_node: Mutex::new(HashMap::new()),
            prefetched: Mutex::new(HashMap::new()),
            producers: Mutex::new(BTreeSet::new()),
            consumers: Mutex::new(BTreeMap::new()),
            listener: RwLock::new(None),
            handler: Arc::new(BrokerRequests {
                instance: weak.clone(),
            }),
            stop,
        });
        let instance = Self { inner };
        instance.spawn_timers();
        Ok(instance)
    }

    /// `ip@instance`.
    #[must_use]
    pub fn client_id(&self) -> &str {
        &self.inner.client_id
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &ClientConfig {
        &self.inner.config
    }

    /// The runtime the instance's work runs on.
    #[must_use]
    pub fn runtime(&self) -> &Handle {
        &self.inner.runtime
    }

    /// Where broker pushes and background warnings go.
    pub fn set_listener(&self, listener: Arc<dyn ClientListener>) {
        *self
            .inner
            .listener
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    pub(crate) fn warn(&self, message: String) {
        let l = self
            .inner
            .listener
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(l) = l {
            l.on_warning(message);
        }
    }

    fn is_stopped(&self) -> bool {
        *self.inner.stop.borrow()
    }

    // ---- connections and requests -------------------------------------------------------

    async fn connection(&self, addr: &str) -> Result<Connection> {
        if let Some(c) = self.cached(addr) {
            return Ok(c);
        }
        if self.is_stopped() {
            return Err(ClientError::Shutdown);
        }
        // One connect at a time: concurrent first sends share the connection made.
        let _guard = self.inner.connecting.lock().await;
        if let Some(c) = self.cached(addr) {
            return Ok(c);
        }
        let sock = resolve(addr).await?;
        let handler: Arc<dyn RequestHandler> = self.inner.handler.clone();
        let (timeout, tls) = (self.inner.config.api_timeout, self.inner.config.tls.clone());
        let c = rmq_remoting::connect_tls(sock, Some(handler), timeout, tls)
            .await
            .map_err(|e| ClientError::from_remoting(addr, 0, e))?;
        self.inner
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(addr.to_owned(), c.clone());
        Ok(c)
    }

    fn cached(&self, addr: &str) -> Option<Connection> {
        let conns = self
            .inner
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        conns.get(addr).filter(|c| !c.is_closed()).cloned()
    }

    /// Send `cmd` to `addr` and wait up to `timeout` for the response (any code).
    ///
    /// # Errors
    /// Transport failures and timeouts.
    pub async fn invoke(
        &self,
        addr: &str,
        mut cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let code = cmd.code;
        self.finish_request(&mut cmd);
        let conn = self.connection(addr).await?;
        conn.request(cmd, timeout).await.map_err(|e| {
            if conn.is_closed() {
                self.forget(addr);
            }
            ClientError::from_remoting(addr, code, e)
        })
    }

    /// [`invoke`](Self::invoke), then fail unless the response code is SUCCESS.
    ///
    /// # Errors
    /// As `invoke`, and [`ClientError::Response`] for any other code.
    pub async fn invoke_ok(
        &self,
        addr: &str,
        cmd: RemotingCommand,
        timeout: Duration,
    ) -> Result<RemotingCommand> {
        let resp = self.invoke(addr, cmd, timeout).await?;
        expect_success(addr, resp)
    }

    /// Send `cmd` without waiting for an answer.
    ///
    /// # Errors
    /// Transport failures.
    pub async fn invoke_oneway(&self, addr: &str, mut cmd: RemotingCommand) -> Result<()> {
        let code = cmd.code;
        self.finish_request(&mut cmd);
        let conn = self.connection(addr).await?;
        conn.oneway(cmd)
            .await
            .map_err(|e| ClientError::from_remoting(addr, code, e))
    }

    /// The one place every outgoing request passes (`invoke` and `invoke_oneway`; the
    /// nameserver requests, heartbeats, pulls, sends and offset commits all go through them):
    /// stamp language and version, then sign when the instance has credentials.
    fn finish_request(&self, cmd: &mut RemotingCommand) {
        cmd.language = LanguageCode::Python;
        cmd.version = rmq_protocol::version::CURRENT_VERSION;
        if let Some(creds) = &self.inner.config.credentials {
            rmq_protocol::acl::sign_request(cmd, creds);
        }
    }

    fn forget(&self, addr: &str) {
        self.inner
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(addr);
    }

    /// Ask the nameservers, starting with the last one that answered and failing over to
    /// the next on transport errors.
    ///
    /// # Errors
    /// The last nameserver's error when none answered.
    pub async fn invoke_namesrv(&self, cmd: RemotingCommand) -> Result<RemotingCommand> {
        let addrs = &self.inner.config.namesrv_addrs;
        let start = self.inner.namesrv_index.load(Ordering::Relaxed);
        let mut last = ClientError::NoNameServer;
        for i in 0..addrs.len() {
            let idx = (start + i) % addrs.len();
            match self
                .invoke(&addrs[idx], cmd.clone(), self.inner.config.api_timeout)
                .await
            {
                Ok(resp) if resp.code == ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0 => {
                    return Err(not_a_nameserver(&addrs[idx], &resp));
                }
                Ok(resp) => {
                    self.inner.namesrv_index.store(idx, Ordering::Relaxed);
                    return Ok(resp);
                }
                Err(e) if e.is_transport() => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }

    fn spawn_timers(&self) {
        let weak = Arc::downgrade(&self.inner);
        let mut stop = self.inner.stop.subscribe();
        let routes_every = self.inner.config.poll_name_server_interval;
        let heartbeat_every = self.inner.config.heartbeat_broker_interval;
        self.inner.runtime.spawn(async move {
            let mut routes = tokio::time::interval(routes_every);
            let mut heartbeat = tokio::time::interval(heartbeat_every);
            routes.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first ticks are immediate; the producers and consumers that start the
            // instance already fetch routes and heartbeat when they need to.
            routes.tick().await;
            heartbeat.tick().await;
            loop {
                let route_tick = tokio::select! {
                    _ = routes.tick() => true,
                    _ = heartbeat.tick() => false,
                    _ = stop.changed() => return,
                };
                let Some(inner) = weak.upgrade() else { return };
                let instance = ClientInstance { inner };
                if route_tick {
                    instance.refresh_routes().await;
                } else {
                    instance.send_heartbeat().await;
                }
            }
        });
    }

    /// Stop the timers and close every connection. Idempotent.
    pub fn shutdown(&self) {
        self.inner.stop.send_replace(true);
        let conns: Vec<Connection> = self
            .inner
            .conns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .map(|(_, c)| c)
            .collect();
        for c in conns {
            c.close();
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// Fail unless `resp` is SUCCESS, with the peer's remark.
///
/// # Errors
/// [`ClientError::Response`].
pub(crate) fn expect_success(addr: &str, resp: RemotingCommand) -> Result<RemotingCommand> {
    if resp.code == ResponseCode::SUCCESS.0 {
        return Ok(resp);
    }
    Err(response_error(addr, &resp))
}

/// REQUEST_CODE_NOT_SUPPORTED from a nameserver address: what a broker's port answers to the
/// nameserver's codes, so the error says to check the address.
fn not_a_nameserver(addr: &str, resp: &RemotingCommand) -> ClientError {
    let mut e = response_error(addr, resp);
    if let ClientError::Response { remark, .. } = &mut e {
        *remark = format!(
            "{remark} — is {addr} a nameserver? namesrv_addr takes nameserver addresses (port \
             9876 by default), not a broker's"
        );
    }
    e
}

/// The error for a non-success response.
pub(crate) fn response_error(addr: &str, resp: &RemotingCommand) -> ClientError {
    ClientError::Response {
        addr: addr.to_owned(),
        code: resp.code,
        code_name: ResponseCode(resp.code).name().unwrap_or("UNKNOWN"),
        remark: resp.remark.clone().unwrap_or_default(),
    }
}

async fn resolve(addr: &str) -> Result<SocketAddr> {
    let bad = || ClientError::BadAddress {
        addr: addr.to_owned(),
    };
    if let Ok(a) = addr.parse() {
        return Ok(a);
    }
    tokio::net::lookup_host(addr)
        .await
        .map_err(|_| bad())?
        .next()
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_instance_name_is_the_process_id_in_the_client_id() {
        let mut c = ClientConfig::new(vec![]);
        c.instance_name = DEFAULT_INSTANCE_NAME.to_owned();
        assert_eq!(c.client_id(), format!("127.0.0.1@{}", std::process::id()));
        c.instance_name = "orders".to_owned();
        assert_eq!(c.client_id(), "127.0.0.1@orders");
    }
}
