//! [`BrokerController`]: owns the store, the managers, the hold service and the server.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmq_protocol::body::RegisterBrokerBody;
use rmq_protocol::RemotingCommand;
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler, ServerConfig, ServerHandle};
use rmq_store::MessageStore;
use tokio::task::JoinHandle;

use crate::broker_stats::BrokerStats;
use crate::config::BrokerConfig;
use crate::consumer_manager::ConsumerManager;
use crate::consumer_offset::ConsumerOffsetManager;
use crate::error::BrokerError;
use crate::long_polling::PullRequestHoldService;
use crate::processor;
use crate::producer_manager::ProducerManager;
use crate::rebalance_lock::RebalanceLockManager;
use crate::stats_history::StatsHistory;
use crate::subscription_group::SubscriptionGroupManager;
use crate::topic_config::{TopicChangeListener, TopicConfigManager};

/// Everything a processor needs.
pub struct Broker {
    /// Settings.
    pub config: BrokerConfig,
    /// The store.
    pub store: Arc<MessageStore>,
    /// Topics.
    pub topics: TopicConfigManager,
    /// Committed offsets.
    pub offsets: ConsumerOffsetManager,
    /// Subscription groups.
    pub groups: SubscriptionGroupManager,
    /// Live consumers.
    pub clients: ConsumerManager,
    /// Live producers.
    pub producers: ProducerManager,
    /// Held pulls.
    pub hold: PullRequestHoldService,
    /// Queue locks of orderly consumers.
    pub locks: RebalanceLockManager,
    /// `brokerPermission` as it is now (starts as `config.broker_permission`; the control
    /// plane may change it while the broker runs).
    permission: AtomicI32,
    /// Where codes the broker does not serve go.
    pub fallback: Option<Arc<dyn RequestHandler>>,
    /// Start time (ms), for runtime info.
    pub boot_timestamp: i64,
    /// Put and get counters (runtime info).
    pub stats: BrokerStats,
    /// Per-topic and per-group message counts over time (VIEW_BROKER_STATS_DATA).
    pub history: StatsHistory,
}

impl Broker {
    /// The current `brokerPermission` (`PermName` bits: read 4, write 2).
    #[must_use]
    pub fn broker_permission(&self) -> i32 {
        self.permission.load(Ordering::Acquire)
    }
}

/// The broker: build it with [`BrokerController::new`], then [`start`](Self::start) it.
pub struct BrokerController {
    broker: Arc<Broker>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

struct Dispatcher(Arc<Broker>);

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
    /// A config file exists but cannot be read.
    pub fn new(
        config: BrokerConfig,
        store: Arc<MessageStore>,
        fallback: Option<Arc<dyn RequestHandler>>,
    ) -> Result<Self, BrokerError> {
        let topics = TopicConfigManager::new(&config)?;
        let offsets = ConsumerOffsetManager::new(&config.config_dir)?;
        let groups = SubscriptionGroupManager::new(
            &config.config_dir,
            config.auto_create_subscription_group,
        )?;
        let now = rmq_common::time::now_millis();
        let broker = Arc::new(Broker {
            locks: RebalanceLockManager::new(config.rebalance_lock_max_live_time_ms),
            permission: AtomicI32::new(config.broker_permission),
            config,
            store,
            topics,
            offsets,
            groups,
            clients: ConsumerManager::default(),
            producers: ProducerManager::default(),
            hold: PullRequestHoldService::default(),
            fallback,
            boot_timestamp: now,
            stats: BrokerStats::new(now),
            history: StatsHistory::default(),
        });
        let weak = Arc::downgrade(&broker);
        broker.store.set_message_arriving_listener(Arc::new(
            move |topic: &str, qid: i32, next: i64, tags: i64, _ts: i64| {
                if let Some(b) = weak.upgrade() {
                    b.hold.notify_message_arriving(topic, qid, next, Some(tags));
                }
            },
        ));
        Ok(Self {
            broker,
            tasks: Mutex::new(Vec::new()),
        })
    }

    /// The shared state (for embedding and tests).
    #[must_use]
    pub fn broker(&self) -> &Arc<Broker> {
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
                    eprintln!(
                        "rmq-broker WARN: producer {} sent no heartbeat for {} ms, closing",
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
                    // Walks the topic and offset tables: off the runtime's worker.
                    let b2 = Arc::clone(&b);
                    let _ = tokio::task::spawn_blocking(move || b2.history.sample(&b2, now)).await;
                    next_history = now + crate::stats_history::SAMPLE_INTERVAL_MS;
                }
            }
        });
        self.tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend([hold_task, scan_task, stats_task]);
        let idle = b.config.server_channel_max_idle_time_seconds;
        let server_config = ServerConfig {
            transfer_by_heap: b.config.transfer_msg_by_heap,
            idle_timeout: (idle > 0).then(|| Duration::from_secs(idle)),
            ..ServerConfig::default()
        };
        rmq_remoting::serve(listen_addr, Arc::new(Dispatcher(b)), server_config).await
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
        let old = self.broker.permission.swap(perm, Ordering::AcqRel);
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
    ) -> Result<bool, crate::transaction::HalfMessageError> {
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
    pub fn persist(&self) -> Result<(), BrokerError> {
        let a = self.broker.offsets.persist();
        let b = self.broker.groups.persist();
        let c = self.broker.topics.persist();
        a.and(b).and(c)
    }

    /// Stop the periodic services and persist. The server handle is shut down by its owner.
    ///
    /// # Errors
    /// As [`persist`](Self::persist).
    pub fn shutdown(&self) -> Result<(), BrokerError> {
        for t in self
            .tasks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            t.abort();
        }
        self.persist()
    }
}

impl Drop for BrokerController {
    fn drop(&mut self) {
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
