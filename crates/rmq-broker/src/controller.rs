//! [`BrokerController`]: builds the [`BrokerState`], runs the periodic services (held-pull
//! check, client expiry, stats sampling) and the server, persists at shutdown.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmq_protocol::body::RegisterBrokerBody;
use rmq_protocol::RemotingCommand;
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler, ServerConfig, ServerHandle};
use rmq_store::MessageStore;
use tokio::task::JoinHandle;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::processor;
use crate::state::BrokerState;
use crate::topic_config::TopicChangeListener;

/// The broker: build it with [`BrokerController::new`], then [`start`](Self::start) it.
pub struct BrokerController {
    broker: Arc<BrokerState>,
    tls: Option<Arc<rmq_remoting::tls::ServerTls>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

struct Dispatcher(Arc<BrokerState>);

/// SYNC_FLUSH: the task that makes the group commit's rounds on this runtime, where the
/// sends that wait for them were served (see `GroupCommit::attach_runner`); none under
/// ASYNC_FLUSH. When it ends (the broker stops) the store's group-commit thread takes over.
fn spawn_group_commit_runner(store: &Arc<MessageStore>) -> Option<JoinHandle<()>> {
    struct Detach(std::sync::Weak<MessageStore>);
    impl Drop for Detach {
        fn drop(&mut self) {
            if let Some(store) = self.0.upgrade() {
                store.detach_group_commit_runner();
            }
        }
    }
    let due = Arc::new(tokio::sync::Notify::new());
    let wake = Arc::clone(&due);
    if !store.attach_group_commit_runner(Box::new(move || wake.notify_one())) {
        return None;
    }
    let detach = Detach(Arc::downgrade(store));
    Some(tokio::spawn(async move {
        loop {
            due.notified().await;
            // The tasks that are ready first (a reader with more sends): the round covers
            // them too.
            tokio::task::yield_now().await;
            let Some(store) = detach.0.upgrade() else {
                break;
            };
            store.run_group_commit_round();
        }
    }))
}

impl RequestHandler for Dispatcher {
    fn handle(&self, conn: Connection, request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        Box::pin(processor::dispatch(Arc::clone(&self.0), conn, request))
    }
    fn run_inline(&self, request: &RemotingCommand) -> bool {
        processor::is_cheap(request)
    }
    fn on_connect(&self, conn: &Connection) {
        if let Some(f) = &self.0.fallback {
            f.on_connect(conn);
        }
    }
    fn on_close(&self, conn: &Connection) {
        self.0.clients.do_channel_close(conn.id());
        self.0.producers.do_channel_close(conn.id());
        if let Some(f) = &self.0.fallback {
            f.on_close(conn);
        }
    }
}

impl BrokerController {
    /// Load the managers from `config.config_dir` and hook the hold service to `store`.
    /// `fallback` serves the codes the broker does not handle itself.
    ///
    /// # Errors
    /// A config file exists but cannot be read; a `tls.server.*` setting cannot be used.
    pub fn new(
        config: BrokerConfig,
        store: Arc<MessageStore>,
        fallback: Option<Arc<dyn RequestHandler>>,
    ) -> Result<Self, BrokerError> {
        let tls = rmq_remoting::tls::ServerTls::from_settings(&config.tls_server)?.map(Arc::new);
        let broker = Arc::new(BrokerState::load(config, store, fallback)?);
        // The hold service itself, not the broker through a weak reference: upgrading one per
        // dispatched message made every putting thread write the broker's reference count.
        let hold = Arc::clone(&broker.hold);
        broker.store.set_message_arriving_listener(Arc::new(
            move |topic: &str, qid: i32, next: i64, tags: i64, _ts: i64| {
                hold.notify_message_arriving(topic, qid, next, Some(tags));
            },
        ));
        // Forced deletion keeps what a group has not consumed (the store's retention floor).
        let weak = Arc::downgrade(&broker);
        broker.store.set_consume_progress(Arc::new(move || {
            weak.upgrade()
                .map(|b| b.offsets.queue_holds())
                .unwrap_or_default()
        }));
        Ok(Self {
            broker,
            tls,
            tasks: Mutex::new(Vec::new()),
        })
    }

    /// The shared state (for embedding and tests).
    #[must_use]
    pub fn broker(&self) -> &Arc<BrokerState> {
        &self.broker
    }

    /// Called after every topic-table change: register with the nameservers soon.
    pub fn set_topic_change_listener(&self, l: Arc<TopicChangeListener>) {
        self.broker.topics.set_change_listener(l);
    }

    /// Serve on `listen_addr` and start the periodic services (held-pull check, client
    /// expiry). Must run inside a tokio runtime.
    ///
    /// # Errors
    /// The address cannot be bound.
    pub async fn start(&self, listen_addr: SocketAddr) -> std::io::Result<ServerHandle> {
        let b = Arc::clone(&self.broker);
        let check = if b.config.long_polling_enable {
            Duration::from_secs(5)
        } else {
            Duration::from_millis(b.config.short_polling_time_mills.max(1))
        };
        let weak = Arc::downgrade(&b);
        let hold_task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(check);
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(b) = weak.upgrade() else { break };
                b.hold
                    .check_held(|t, q| b.store.get_max_offset_in_queue(t, q));
            }
        });
        let weak = Arc::downgrade(&b);
        let expire = Duration::from_millis(b.config.channel_expired_timeout_ms);
        let scan_task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(10));
            tick.tick().await;
            loop {
                tick.tick().await;
                let Some(b) = weak.upgrade() else { break };
                b.clients.scan_not_active(expire);
                for conn in b.producers.scan_not_active(expire) {
                    log::warn!(
                        "producer {} sent no heartbeat for {} ms, closing",
                        conn.peer(),
                        expire.as_millis()
                    );
                    conn.close();
                }
            }
        });
        let weak = Arc::downgrade(&b);
        let stats_task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            let mut next_history = 0;
            loop {
                tick.tick().await;
                let Some(b) = weak.upgrade() else { break };
                let now = rmq_common::time::now_millis();
                b.stats.sample(now);
                if now >= next_history {
                    // Copies every stats item: off the runtime's worker.
                    let b2 = Arc::clone(&b);
                    let _ = tokio::task::spawn_blocking(move || b2.history.sample(&b2, now)).await;
                    next_history = now + crate::stats_history::SAMPLE_INTERVAL_MS;
                }
            }
        });
        let runner = spawn_group_commit_runner(&b.store);
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend([hold_task, scan_task, stats_task].into_iter().chain(runner));
        let idle = b.config.server_channel_max_idle_time_seconds;
        let idle_timeout = (idle > 0).then(|| Duration::from_secs(idle));
        let defaults = ServerConfig::default();
        // A frame stalled mid-way is idle traffic too: never given longer than an idle
        // connection (RocketMQ's all-idle handler closes both after the same time).
        let frame_stall_timeout = match (defaults.frame_stall_timeout, idle_timeout) {
            (Some(stall), Some(idle)) => Some(stall.min(idle)),
            (stall, _) => stall,
        };
        let server_config = ServerConfig {
            transfer_by_heap: b.config.transfer_msg_by_heap,
            idle_timeout,
            frame_stall_timeout,
            tls: self.tls.clone(),
            // Times every answer, ACL refusals too, when the exporter is on.
            timer: b.metrics.request_timer(),
            ..defaults
        };
        let main = tokio::net::TcpListener::bind(listen_addr).await?;
        let mut listeners = vec![main];
        if let Some(vip) = vip_channel_listener(listen_addr).await {
            listeners.push(vip);
        }
        let (acl, dispatcher) = (b.acl.clone(), Arc::new(Dispatcher(Arc::clone(&b))));
        let mut handler: Arc<dyn rmq_remoting::RequestHandler> = dispatcher;
        if let Some(file) = acl {
            handler = Arc::new(rmq_acl::AclHandler::new(
                handler,
                file,
                rmq_acl::Policy::Broker,
            ));
        }
        rmq_remoting::serve_listeners(listeners, &handler, &server_config)
    }

    /// The REGISTER_BROKER body (topic table and data version) for the nameservers.
    #[must_use]
    pub fn register_body(&self) -> RegisterBrokerBody {
        self.broker
            .topics
            .to_register_body(self.broker.broker_permission())
    }

    /// Change `brokerPermission` while running (UPDATE_BROKER_CONFIG): sends and pulls check
    /// the new value at once, and the topic data version moves on so that the next
    /// registration (triggered through the topic change listener) carries it to the
    /// nameservers, as RocketMQ's `updateBrokerConfig` does.
    pub fn set_broker_permission(&self, perm: i32) {
        let old = self.broker.swap_broker_permission(perm);
        if old != perm {
            self.broker.topics.next_data_version();
        }
    }

    /// Send CHECK_TRANSACTION_STATE about the half message at `commit_log_offset` to the
    /// producer connection `conn_id` (see [`crate::transaction::check_transaction_state`]).
    /// `Ok(false)` when `conn_id` is not (or no longer) an open producer connection.
    ///
    /// # Errors
    /// No half message at that offset.
    pub async fn check_transaction_state(
        &self,
        conn_id: u64,
        commit_log_offset: i64,
    ) -> Result<bool, crate::error::HalfMessageError> {
        let Some(channel) = self.broker.producers.find_channel(conn_id) else {
            return Ok(false);
        };
        crate::transaction::check_transaction_state(&self.broker, &channel.conn, commit_log_offset)
            .await
    }

    /// Write consumer offsets, subscription groups and topics (every 5 s and at shutdown).
    ///
    /// # Errors
    /// A file cannot be written (the others are still attempted).
    /// A file that cannot be written keeps its previous version; the first error is returned
    /// and any further one logged, so each file that failed is named once.
    pub fn persist(&self) -> Result<(), BrokerError> {
        let results = [
            self.broker.offsets.persist(),
            self.broker.groups.persist(),
            self.broker.topics.persist(),
        ];
        let mut first = None;
        for r in results {
            if let Err(e) = r {
                if first.is_none() {
                    first = Some(e);
                } else {
                    log::error!("{e}; its previous version is kept");
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Stop the periodic services and persist. The server handle is shut down by its owner.
    ///
    /// # Errors
    /// As [`persist`](Self::persist).
    pub fn shutdown(&self) -> Result<(), BrokerError> {
        self.stop_tasks();
        self.persist()
    }

    fn stop_tasks(&self) {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            t.abort();
        }
    }
}

impl Drop for BrokerController {
    fn drop(&mut self) {
        self.stop_tasks();
    }
}

/// RocketMQ's "VIP channel": every Apache broker also serves on `listenPort - 2`, and some
/// peers go there unasked (a 4.x slave copies its master's topic config through it; clients
/// with `vipChannelEnabled` send through it). Best effort: with an ephemeral main port there
/// is none, and a port in use costs only a warning (those peers then fail to connect).
async fn vip_channel_listener(main: SocketAddr) -> Option<tokio::net::TcpListener> {
    let port = main
        .port()
        .checked_sub(2)
        .filter(|p| *p > 0 && main.port() > 0)?;
    let addr = SocketAddr::new(main.ip(), port);
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => Some(l),
        Err(e) => {
            log::warn!(
                "cannot listen on {addr}, the VIP channel port (listenPort - 2), as RocketMQ \
                 brokers do: {e}. Slaves of this broker that run Apache RocketMQ cannot copy \
                 its topic config, and clients with vipChannelEnabled cannot send, until that \
                 port is free"
            );
            None
        }
    }
}
