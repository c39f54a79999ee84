//! `ClientInstance`: what RocketMQ calls `MQClientInstance`, one per client id. It owns the
//! connections (one per address, shared by every producer and consumer of the process), the
//! topic route table fetched from the nameservers, and the two timers every client runs:
//! route refresh and heartbeats. Producers and consumers register their groups here so the
//! heartbeat announces them to every broker.
//!
//! Requests brokers send back on these connections (NOTIFY_CONSUMER_IDS_CHANGED,
//! RESET_CONSUMER_CLIENT_OFFSET, CHECK_TRANSACTION_STATE) go to a [`ClientListener`]: the
//! decisions they trigger (rebalance, offset reset, transaction checks) belong to Python.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use rmq_protocol::body::{
    BrokerData, ConsumerData, HeartbeatData, MessageQueue, ProducerData, TopicRouteData,
    MAX_QUEUE_NUMS,
};
use rmq_protocol::header::namesrv::GetRouteInfoRequestHeader;
use rmq_protocol::{
    ExtFields, LanguageCode, RemotingCommand, RemotingJson, RequestCode, ResponseCode,
};
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler};
use tokio::runtime::Handle;
use tokio::sync::watch;

use crate::error::{ClientError, Result};

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

/// Receives what brokers push to the client, and background failures worth a log line.
/// A CHECK_TRANSACTION_STATE arrives with [`CHECK_BROKER_ADDR_FIELD`] and
/// [`CHECK_PRODUCER_GROUP_FIELD`] added to its header fields.
pub trait ClientListener: Send + Sync + 'static {
    /// A broker sent a request (`code`) this client must act on.
    fn on_broker_request(&self, code: i32, ext_fields: ExtFields, body: Option<Bytes>);
    /// A background task (heartbeat, route refresh) failed; the text says what and why.
    fn on_warning(&self, message: String);
}

/// A topic's route with the queues derived from it.
#[derive(Debug, Clone)]
pub struct TopicRoute {
    /// As the nameserver sent it.
    pub data: TopicRouteData,
    /// Writable queues on brokers with a master, in route order (`TopicPublishInfo`).
    pub publish_queues: Vec<MessageQueue>,
    /// Readable queues, sorted (`topicSubscribeInfoTable`).
    pub subscribe_queues: Vec<MessageQueue>,
}

impl TopicRoute {
    /// Derive the queues of `topic` from `data`, as `MQClientInstance.topicRouteData2*`.
    #[must_use]
    pub fn new(topic: &str, data: TopicRouteData) -> Self {
        let mut queue_datas = data.queue_datas.clone();
        queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        let has_master = |name: &str| {
            data.broker_datas
                .iter()
                .any(|b| b.broker_name == name && b.master_addr().is_some())
        };
        let mut publish_queues = Vec::new();
        let mut subscribe_queues = Vec::new();
        // A route claiming absurd queue counts (a broken registration) costs at most
        // MAX_QUEUE_NUMS queues per broker.
        let queues = |n: i32| 0..n.clamp(0, MAX_QUEUE_NUMS);
        for q in &queue_datas {
            if q.perm & perm::WRITE != 0 && has_master(&q.broker_name) {
                publish_queues.extend(
                    queues(q.write_queue_nums).map(|i| MessageQueue::new(topic, &q.broker_name, i)),
                );
            }
            if q.perm & perm::READ != 0 {
                subscribe_queues.extend(
                    queues(q.read_queue_nums).map(|i| MessageQueue::new(topic, &q.broker_name, i)),
                );
            }
        }
        subscribe_queues.sort();
        Self {
            data,
            publish_queues,
            subscribe_queues,
        }
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

    fn warn(&self, message: String) {
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
        let c = rmq_remoting::connect(sock, Some(handler), self.inner.config.api_timeout)
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
        cmd.language = LanguageCode::Python;
        cmd.version = rmq_protocol::version::CURRENT_VERSION;
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
        cmd.language = LanguageCode::Python;
        cmd.version = rmq_protocol::version::CURRENT_VERSION;
        let conn = self.connection(addr).await?;
        conn.oneway(cmd)
            .await
            .map_err(|e| ClientError::from_remoting(addr, code, e))
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

    // ---- routes -------------------------------------------------------------------------

    /// The cached route of `topic`, fetching it when unknown.
    ///
    /// # Errors
    /// [`ClientError::NoRoute`] when no nameserver has it; transport errors.
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRoute>> {
        if let Some(r) = self.cached_route(topic) {
            return Ok(r);
        }
        self.update_route(topic).await
    }

    /// The cached route of `topic`, if any.
    #[must_use]
    pub fn cached_route(&self, topic: &str) -> Option<Arc<TopicRoute>> {
        self.inner
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .cloned()
    }

    /// Fetch `topic`'s route from the nameservers and cache it.
    ///
    /// # Errors
    /// As [`route`](Self::route).
    pub async fn update_route(&self, topic: &str) -> Result<Arc<TopicRoute>> {
        let data = self.fetch_route(topic).await?;
        let route = Arc::new(TopicRoute::new(topic, data));
        self.remember_brokers(&route.data.broker_datas);
        self.inner
            .routes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// Ask the nameservers for `topic`'s route without caching it.
    ///
    /// # Errors
    /// As [`route`](Self::route).
    pub async fn fetch_route(&self, topic: &str) -> Result<TopicRouteData> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        };
        let cmd =
            RemotingCommand::request_with_header(RequestCode::GET_ROUTEINFO_BY_TOPIC.0, &header);
        let resp = self.invoke_namesrv(cmd).await?;
        if resp.code == ResponseCode::TOPIC_NOT_EXIST.0 {
            return Err(ClientError::NoRoute {
                topic: topic.to_owned(),
                detail: resp.remark.unwrap_or_else(|| "topic not exist".to_owned()),
            });
        }
        let resp = expect_success("nameserver", resp)?;
        let body = resp.body.unwrap_or_default();
        TopicRouteData::from_json_bytes(&body).map_err(|e| ClientError::BadResponse {
            addr: "nameserver".to_owned(),
            detail: e.to_string(),
        })
    }

    /// Cache `route` for `topic` (a producer's route built from the auto-create template).
    pub fn remember_route(&self, topic: &str, route: Arc<TopicRoute>) {
        self.remember_brokers(&route.data.broker_datas);
        self.inner
            .routes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), route);
    }

    fn remember_brokers(&self, brokers: &[BrokerData]) {
        let mut table = self
            .inner
            .broker_addrs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for b in brokers {
            table.insert(b.broker_name.clone(), b.broker_addrs.clone());
        }
    }

    /// The master address of `broker_name`.
    ///
    /// # Errors
    /// [`ClientError::BrokerNotFound`] when no route mentioned it.
    pub fn master_addr(&self, broker_name: &str) -> Result<String> {
        self.broker_addr(broker_name, 0, true)
    }

    /// The address of broker `broker_name` with id `broker_id`; when `only_this` is false any
    /// address of the broker will do if that id has none (`findBrokerAddressInSubscribe`).
    ///
    /// # Errors
    /// [`ClientError::BrokerNotFound`].
    pub fn broker_addr(
        &self,
        broker_name: &str,
        broker_id: i64,
        only_this: bool,
    ) -> Result<String> {
        let table = self
            .inner
            .broker_addrs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let addrs = table.get(broker_name);
        let found = addrs.and_then(|a| {
            a.get(&broker_id)
                .or_else(|| (!only_this).then(|| a.values().next()).flatten())
        });
        found.cloned().ok_or_else(|| ClientError::BrokerNotFound {
            broker_name: broker_name.to_owned(),
        })
    }

    /// Every broker address known from routes: masters only, or all.
    #[must_use]
    pub fn broker_addrs(&self, masters_only: bool) -> Vec<String> {
        let table = self
            .inner
            .broker_addrs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<String> = table
            .values()
            .flat_map(|a| a.iter())
            .filter(|(id, _)| !masters_only || **id == 0)
            .map(|(_, addr)| addr.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    async fn refresh_routes(&self) {
        let mut topics: BTreeSet<String> = self
            .inner
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for c in self
            .inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            topics.extend(c.subscription_data_set.iter().map(|s| s.topic.clone()));
        }
        for topic in topics {
            if let Err(e) = self.update_route(&topic).await {
                // A deleted topic keeps its last route, as RocketMQ does; say why it is stale.
                if !matches!(e, ClientError::NoRoute { .. }) {
                    self.warn(format!("refreshing the route of topic {topic}: {e}"));
                }
            }
        }
    }

    // ---- groups and heartbeats ----------------------------------------------------------

    /// Announce producer group `group` in heartbeats.
    pub fn register_producer(&self, group: &str) {
        self.inner
            .producers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(group.to_owned());
    }

    /// Stop announcing producer group `group` and tell the brokers.
    pub async fn unregister_producer(&self, group: &str) {
        self.inner
            .producers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(group);
        self.unregister_client(Some(group), None).await;
    }

    /// Announce (or update) consumer group `data.group_name` in heartbeats.
    pub fn register_consumer(&self, data: ConsumerData) {
        self.inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(data.group_name.clone(), data);
    }

    /// Stop announcing consumer group `group` and tell the brokers.
    pub async fn unregister_consumer(&self, group: &str) {
        self.inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(group);
        self.unregister_client(None, Some(group)).await;
    }

    async fn unregister_client(&self, producer: Option<&str>, consumer: Option<&str>) {
        let mut fields = ExtFields::new();
        fields.insert("clientID", self.inner.client_id.clone());
        if let Some(p) = producer {
            fields.insert("producerGroup", p.to_owned());
        }
        if let Some(c) = consumer {
            fields.insert("consumerGroup", c.to_owned());
        }
        for addr in self.broker_addrs(false) {
            let cmd =
                RemotingCommand::new_request(RequestCode::UNREGISTER_CLIENT.0, fields.clone());
            if let Err(e) = self
                .invoke_ok(&addr, cmd, self.inner.config.api_timeout)
                .await
            {
                self.warn(format!("unregistering from broker {addr}: {e}"));
            }
        }
    }

    /// Send a heartbeat to every broker now (masters only when no consumer is registered).
    /// Returns how many brokers answered.
    pub async fn send_heartbeat(&self) -> usize {
        let data = HeartbeatData {
            client_id: self.inner.client_id.clone(),
            producer_data_set: self
                .inner
                .producers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|g| ProducerData {
                    group_name: g.clone(),
                })
                .collect(),
            consumer_data_set: self
                .inner
                .consumers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .cloned()
                .collect(),
        };
        if data.producer_data_set.is_empty() && data.consumer_data_set.is_empty() {
            return 0;
        }
        let body = match data.to_json_bytes() {
            Ok(b) => b,
            Err(e) => {
                self.warn(format!("encoding the heartbeat: {e}"));
                return 0;
            }
        };
        let masters_only = data.consumer_data_set.is_empty();
        let mut ok = 0;
        for addr in self.broker_addrs(masters_only) {
            let cmd = RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new())
                .with_body(body.clone());
            match self
                .invoke_ok(&addr, cmd, self.inner.config.api_timeout)
                .await
            {
                Ok(_) => ok += 1,
                Err(e) => self.warn(format!("heartbeat to broker {addr}: {e}")),
            }
        }
        ok
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

/// Serves what brokers send on client connections: pushes go to the listener; anything
/// else is answered REQUEST_CODE_NOT_SUPPORTED.
struct BrokerRequests {
    instance: Weak<Inner>,
}

impl RequestHandler for BrokerRequests {
    fn handle(&self, conn: Connection, mut request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let listener = self.instance.upgrade().and_then(|i| {
            i.listener
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        let pushed = matches!(
            RequestCode(request.code),
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED
                | RequestCode::RESET_CONSUMER_CLIENT_OFFSET
                | RequestCode::CHECK_TRANSACTION_STATE
        );
        let reply = if let (true, Some(l)) = (pushed, listener) {
            if request.code == RequestCode::CHECK_TRANSACTION_STATE.0 {
                add_check_fields(&conn, &mut request);
            }
            let oneway = request.flag & rmq_protocol::command::FLAG_ONEWAY != 0;
            let response = (!oneway)
                .then(|| RemotingCommand::response_to(&request, ResponseCode::SUCCESS.0, None));
            l.on_broker_request(request.code, request.ext_fields, request.body);
            response
        } else {
            Some(RemotingCommand::response_to(
                &request,
                ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0,
                Some(format!(
                    "request code {} is not supported by the rmq Python client",
                    request.code
                )),
            ))
        };
        Box::pin(async move { reply.map(Reply::Command) })
    }
}

/// What a CHECK_TRANSACTION_STATE listener needs beyond the header: the broker to answer
/// (`brokerAddr`: the connection's peer, as Java answers on the channel's remote address) and
/// the producer group asked (`producerGroup`: the checked message's `PGROUP`, which Java's
/// client reads from the body too).
fn add_check_fields(conn: &Connection, request: &mut RemotingCommand) {
    request
        .ext_fields
        .insert(CHECK_BROKER_ADDR_FIELD, conn.peer().to_string());
    let group = request
        .body
        .as_ref()
        .and_then(|b| rmq_protocol::message_decoder::decode_message_at(b, 0).ok())
        .and_then(|m| {
            m.properties
                .get(rmq_common::PropertyKey::PRODUCER_GROUP)
                .map(str::to_owned)
        });
    if let Some(g) = group {
        if !request.ext_fields.contains_key(CHECK_PRODUCER_GROUP_FIELD) {
            request.ext_fields.insert(CHECK_PRODUCER_GROUP_FIELD, g);
        }
    }
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

    #[test]
    fn a_route_claiming_absurd_queue_counts_costs_at_most_max_queue_nums() {
        let data = TopicRouteData::from_json_bytes(
            br#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"b","cluster":"c"}],
                "queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":100000000,"topicSysFlag":0,
                "writeQueueNums":-5}]}"#,
        )
        .unwrap();
        let r = TopicRoute::new("T", data);
        assert_eq!(r.subscribe_queues.len(), MAX_QUEUE_NUMS as usize);
        assert!(r.publish_queues.is_empty());
    }
}
