//! [`BrokerState`]: the state every processor works on (settings, the store, the managers,
//! held pulls, locks, counters).
//!
//! It lives apart from [`crate::controller`] (which starts the server and the periodic
//! services) so that a processor depends on the broker's state, not on the machinery that
//! runs it.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use rmq_remoting::RequestHandler;
use rmq_store::MessageStore;

use crate::broker_stats::BrokerStats;
use crate::config::BrokerConfig;
use crate::consumer_manager::ConsumerManager;
use crate::consumer_offset::ConsumerOffsetManager;
use crate::error::BrokerError;
use crate::long_polling::PullRequestHoldService;
use crate::metrics::BrokerMetrics;
use crate::producer_manager::ProducerManager;
use crate::rebalance_lock::RebalanceLockManager;
use crate::stats_history::StatsHistory;
use crate::subscription_group::SubscriptionGroupManager;
use crate::topic_config::TopicConfigManager;

/// Everything a processor needs.
pub struct BrokerState {
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
    pub hold: Arc<PullRequestHoldService>,
    /// Queue locks of orderly consumers.
    pub locks: RebalanceLockManager,
    /// `brokerPermission` as it is now (starts as `config.broker_permission`; the control
    /// plane may change it while the broker runs).
    permission: AtomicI32,
    /// `Some(master address)` while this broker is a slave ("" until the nameserver named
    /// the master): writes are refused naming it. Set by the control plane.
    slave_of: RwLock<Option<String>>,
    /// Runtime-info entries the control plane adds (the broker group's epoch), served by
    /// GET_BROKER_RUNTIME_INFO with the broker's own.
    extra_runtime_info: RwLock<std::collections::BTreeMap<String, String>>,
    /// Where codes the broker does not serve go.
    pub fallback: Option<Arc<dyn RequestHandler>>,
    /// The ACL file when `aclEnable=true` (every request is checked against it).
    pub acl: Option<Arc<rmq_acl::AclFile>>,
    /// Start time (ms), for runtime info.
    pub boot_timestamp: i64,
    /// Put and get counters (runtime info).
    pub stats: BrokerStats,
    /// Per-topic and per-group message counts over time (VIEW_BROKER_STATS_DATA).
    pub history: StatsHistory,
    /// Prometheus counters (count only with `metricsExporterType = PROM`).
    pub metrics: BrokerMetrics,
}

impl BrokerState {
    /// Load the managers from `config.config_dir` over `store`; `fallback` serves the codes
    /// the broker does not handle itself.
    ///
    /// # Errors
    /// A config file exists but cannot be read.
    pub fn load(
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
        let acl = if config.acl_enable {
            Some(open_acl(&config)?)
        } else {
            None
        };
        let now = rmq_common::time::now_millis();
        let stats = BrokerStats::new(now, &config.broker_cluster_name);
        let metrics_on = config.metrics_exporter_type == crate::metrics::EXPORTER_PROM;
        Ok(Self {
            acl,
            locks: RebalanceLockManager::new(config.rebalance_lock_max_live_time_ms),
            permission: AtomicI32::new(config.broker_permission),
            slave_of: RwLock::new(None),
            extra_runtime_info: RwLock::default(),
            config,
            store,
            topics,
            offsets,
            groups,
            clients: ConsumerManager::default(),
            producers: ProducerManager::default(),
            hold: Arc::default(),
            fallback,
            boot_timestamp: now,
            stats,
            history: StatsHistory::default(),
            metrics: BrokerMetrics::new(metrics_on),
        })
    }

    /// Whether requests are checked against an ACL file (`aclEnable`).
    #[must_use]
    pub fn acl_enabled(&self) -> bool {
        self.acl.is_some()
    }

    /// The current `brokerPermission` (`PermName` bits: read 4, write 2).
    #[must_use]
    pub fn broker_permission(&self) -> i32 {
        self.permission.load(Ordering::Acquire)
    }

    /// Change `brokerPermission`; the previous value.
    pub(crate) fn swap_broker_permission(&self, perm: i32) -> i32 {
        self.permission.swap(perm, Ordering::AcqRel)
    }

    /// The master's address while this broker is a slave (see [`Self::set_slave_of`]).
    #[must_use]
    pub fn slave_of(&self) -> Option<String> {
        self.slave_of
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `Some(master address)`: this broker is a slave and refuses writes naming its master
    /// ("" while unknown); `None`: it is a master.
    pub fn set_slave_of(&self, master: Option<String>) {
        *self
            .slave_of
            .write()
            .unwrap_or_else(PoisonError::into_inner) = master;
    }

    /// Set (or with `None` remove) a runtime-info entry of the control plane's.
    pub fn set_extra_runtime_info(&self, key: &str, value: Option<String>) {
        let mut t = self
            .extra_runtime_info
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        match value {
            Some(v) => t.insert(key.to_owned(), v),
            None => t.remove(key),
        };
    }

    /// The control plane's runtime-info entries.
    #[must_use]
    pub fn extra_runtime_info(&self) -> std::collections::BTreeMap<String, String> {
        self.extra_runtime_info
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Read the ACL file `aclEnable=true` asks for; a missing or bad file stops the start.
fn open_acl(config: &BrokerConfig) -> Result<Arc<rmq_acl::AclFile>, BrokerError> {
    rmq_acl::handler::open_enabled(config.acl_file_path.as_deref(), "broker.conf")
        .map_err(BrokerError::Acl)
}
