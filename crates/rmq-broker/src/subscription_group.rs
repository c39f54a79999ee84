//! Subscription groups (RocketMQ's `SubscriptionGroupManager`): created on first use when
//! `autoCreateSubscriptionGroup` is on, persisted to `subscriptionGroup.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use rmq_common::time::now_millis;
use rmq_protocol::body::{DataVersion, SubscriptionGroupConfig, SubscriptionGroupWrapper};

use crate::error::BrokerError;
use crate::fsutil;
use crate::topic_config::pretty;

/// Groups RocketMQ creates at start.
const SYSTEM_GROUPS: &[&str] = &[
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    rmq_common::topic::CID_SYS_RMQ_TRANS,
];

struct Table {
    groups: BTreeMap<String, SubscriptionGroupConfig>,
    version: DataVersion,
}

/// The subscription groups of one broker.
pub struct SubscriptionGroupManager {
    table: Mutex<Table>,
    persist_lock: Mutex<()>,
    path: PathBuf,
    auto_create: bool,
}

impl SubscriptionGroupManager {
    /// System groups, then `<config_dir>/subscriptionGroup.json`.
    ///
    /// # Errors
    /// The file exists but cannot be read.
    pub fn new(config_dir: &std::path::Path, auto_create: bool) -> Result<Self, BrokerError> {
        let path = config_dir.join("subscriptionGroup.json");
        let mut groups: BTreeMap<String, SubscriptionGroupConfig> = SYSTEM_GROUPS
            .iter()
            .map(|g| {
                (
                    (*g).to_owned(),
                    SubscriptionGroupConfig {
                        group_name: (*g).to_owned(),
                        ..SubscriptionGroupConfig::default()
                    },
                )
            })
            .collect();
        let mut version = DataVersion::default();
        if let Some(w) = fsutil::load_json::<SubscriptionGroupWrapper>(&path)? {
            groups.extend(w.subscription_group_table);
            version = w.data_version;
        }
        Ok(Self {
            table: Mutex::new(Table { groups, version }),
            persist_lock: Mutex::new(()),
            path,
            auto_create,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `findSubscriptionGroupConfig`: the group, created with defaults when auto-creation is on.
    pub fn find_or_create(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        {
            let mut t = self.lock();
            if let Some(c) = t.groups.get(group) {
                return Some(c.clone());
            }
            if !self.auto_create {
                return None;
            }
            t.groups.insert(
                group.to_owned(),
                SubscriptionGroupConfig {
                    group_name: group.to_owned(),
                    ..SubscriptionGroupConfig::default()
                },
            );
            t.version.counter += 1;
            t.version.timestamp = now_millis();
        }
        if let Err(e) = self.persist() {
            log::error!("persisting subscription groups: {e}");
        }
        self.select(group)
    }

    /// How many groups there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.lock().groups.len()
    }

    /// Whether there are no groups.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The group, if it exists.
    #[must_use]
    pub fn select(&self, group: &str) -> Option<SubscriptionGroupConfig> {
        self.lock().groups.get(group).cloned()
    }

    /// Create or replace a group.
    pub fn update(&self, config: SubscriptionGroupConfig) {
        let mut t = self.lock();
        t.groups.insert(config.group_name.clone(), config);
        t.version.counter += 1;
        t.version.timestamp = now_millis();
    }

    /// Forget `group`'s config (DELETE_SUBSCRIPTIONGROUP); false when there was none. With
    /// `autoCreateSubscriptionGroup` on, its next consumer heartbeat creates it again, as in
    /// RocketMQ.
    pub fn delete(&self, group: &str) -> bool {
        let mut t = self.lock();
        let existed = t.groups.remove(group).is_some();
        if existed {
            t.version.counter += 1;
            t.version.timestamp = now_millis();
        }
        existed
    }

    /// A slave's copy of its master's groups (`SlaveSynchronize.syncSubscriptionGroupConfig`):
    /// when the data versions differ, take the master's table and version whole and persist.
    /// Whether anything changed.
    ///
    /// # Errors
    /// `subscriptionGroup.json` cannot be written (memory is replaced anyway).
    pub fn replace_from_master(
        &self,
        master: SubscriptionGroupWrapper,
    ) -> Result<bool, BrokerError> {
        {
            let mut t = self.lock();
            if t.version == master.data_version {
                return Ok(false);
            }
            t.groups = master.subscription_group_table;
            t.version = master.data_version;
        }
        self.persist().map(|()| true)
    }

    /// The table as RocketMQ serializes it.
    #[must_use]
    pub fn wrapper(&self) -> SubscriptionGroupWrapper {
        let t = self.lock();
        SubscriptionGroupWrapper {
            data_version: t.version,
            subscription_group_table: t.groups.clone(),
        }
    }

    /// Write `subscriptionGroup.json`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn persist(&self) -> Result<(), BrokerError> {
        let _g = self
            .persist_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        fsutil::write_atomic(&self.path, pretty(&self.wrapper()).as_bytes())
    }
}
