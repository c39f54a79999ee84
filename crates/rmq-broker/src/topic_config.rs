//! Topic configurations (RocketMQ's `TopicConfigManager`): system topics created at start,
//! topics created by sends (from `TBW102`), retry topics created by heartbeats, and admin
//! changes; persisted to `topics.json` as a `TopicConfigSerializeWrapper`, with a
//! `DataVersion` bumped on every change so nameservers can skip unchanged registrations.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rmq_common::time::now_millis;
use rmq_protocol::body::{
    DataVersion, RegisterBrokerBody, TopicConfig, TopicConfigSerializeWrapper, PERM_INHERIT,
    PERM_READ, PERM_WRITE,
};

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::fsutil;

pub use rmq_common::topic::{
    AUTO_CREATE_TOPIC_KEY_TOPIC, BENCHMARK_TOPIC, DLQ_GROUP_TOPIC_PREFIX, OFFSET_MOVED_EVENT,
    RETRY_GROUP_TOPIC_PREFIX, SCHEDULE_TOPIC, SCHEDULE_TOPIC_V2, SELF_TEST_TOPIC, TOPIC_MAX_LENGTH,
    TRACE_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
};

/// System topics (`TopicValidator.SYSTEM_TOPIC_SET`).
pub const SYSTEM_TOPICS: &[&str] = &[
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    SCHEDULE_TOPIC,
    BENCHMARK_TOPIC,
    TRANS_HALF_TOPIC,
    TRACE_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
    SCHEDULE_TOPIC_V2,
];

/// Topics clients may not send to (`TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET`): a send is
/// NO_PERMISSION "Sending message to topic[T] is forbidden.".
pub const NOT_ALLOWED_SEND_TOPICS: &[&str] = &[
    SCHEDULE_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
    TRANS_CHECK_MAX_TIME_TOPIC,
    SELF_TEST_TOPIC,
    OFFSET_MOVED_EVENT,
    SCHEDULE_TOPIC_V2,
];

/// Check a topic name as `TopicValidator.validateTopic` does; `Err` gives the reason.
///
/// # Errors
/// Blank, illegal characters, or too long.
pub fn validate_topic(topic: &str) -> Result<(), String> {
    if topic.trim().is_empty() {
        return Err("The specified topic is blank.".into());
    }
    if !topic
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
    {
        return Err(format!(
            "The specified topic[{topic}] contains illegal characters, allowing only \
             ^[%|a-zA-Z0-9_-]+$"
        ));
    }
    if topic.len() > TOPIC_MAX_LENGTH {
        return Err(format!(
            "The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}."
        ));
    }
    Ok(())
}

/// Called after the table changed (a new registration with nameservers is due).
pub type TopicChangeListener = dyn Fn() + Send + Sync;

struct Table {
    topics: BTreeMap<String, TopicConfig>,
    version: DataVersion,
}

/// The topic table of one broker.
pub struct TopicConfigManager {
    table: Mutex<Table>,
    persist_lock: Mutex<()>,
    path: PathBuf,
    auto_create_topic_enable: bool,
    listener: RwLock<Option<Arc<TopicChangeListener>>>,
}

fn topic(name: &str, queues: i32, perm: i32) -> TopicConfig {
    TopicConfig {
        read_queue_nums: queues,
        write_queue_nums: queues,
        perm,
        ..TopicConfig::new(name)
    }
}

impl TopicConfigManager {
    /// The system topics, then whatever `topics.json` holds.
    ///
    /// # Errors
    /// `topics.json` (and its `.bak`) exist but cannot be read.
    pub fn new(cfg: &BrokerConfig) -> Result<Self, BrokerError> {
        let rw = PERM_READ | PERM_WRITE;
        let mut topics = BTreeMap::new();
        let mut add = |t: TopicConfig| {
            topics.insert(t.topic_name.clone(), t);
        };
        add(topic(SELF_TEST_TOPIC, 1, rw));
        if cfg.auto_create_topic_enable {
            add(topic(
                AUTO_CREATE_TOPIC_KEY_TOPIC,
                cfg.default_topic_queue_nums,
                PERM_INHERIT | rw,
            ));
        }
        add(topic(BENCHMARK_TOPIC, 1024, rw));
        let flagged = |on: bool| if on { PERM_INHERIT | rw } else { PERM_INHERIT };
        add(topic(
            &cfg.broker_cluster_name,
            16,
            flagged(cfg.cluster_topic_enable),
        ));
        add(topic(&cfg.broker_name, 1, flagged(cfg.broker_topic_enable)));
        add(topic(OFFSET_MOVED_EVENT, 1, rw));
        add(topic(SCHEDULE_TOPIC, 18, rw));
        add(topic(TRANS_HALF_TOPIC, 1, rw));
        if cfg.trace_topic_enable {
            // As RocketMQ's TopicConfigManager: one queue, read and write.
            add(topic(&cfg.msg_trace_topic_name, 1, rw));
        }
        add(topic(
            &format!("{}_REPLY_TOPIC", cfg.broker_cluster_name),
            1,
            rw,
        ));
        let path = cfg.config_dir.join("topics.json");
        let mut version = DataVersion::default();
        if let Some(w) = fsutil::load_json::<TopicConfigSerializeWrapper>(&path)? {
            topics.extend(w.topic_config_table);
            version = w.data_version;
        }
        Ok(Self {
            table: Mutex::new(Table { topics, version }),
            persist_lock: Mutex::new(()),
            path,
            auto_create_topic_enable: cfg.auto_create_topic_enable,
            listener: RwLock::new(None),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Register the hook called after every change.
    pub fn set_change_listener(&self, l: Arc<TopicChangeListener>) {
        *self
            .listener
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(l);
    }

    /// The config of `topic`.
    #[must_use]
    pub fn select(&self, topic: &str) -> Option<TopicConfig> {
        self.lock().topics.get(topic).cloned()
    }

    /// The current data version.
    #[must_use]
    pub fn data_version(&self) -> DataVersion {
        self.lock().version
    }

    /// `createTopicInSendMessageMethod`: create `topic` from `default_topic` when that has the
    /// inherit permission, with `min(client_queue_nums, default's write queues)` queues.
    pub fn create_in_send(
        &self,
        topic: &str,
        default_topic: &str,
        client_queue_nums: i32,
        topic_sys_flag: i32,
    ) -> Option<TopicConfig> {
        let created = {
            let mut t = self.lock();
            if let Some(c) = t.topics.get(topic) {
                return Some(c.clone());
            }
            let def = t.topics.get(default_topic)?;
            let mut def_perm = def.perm;
            if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC && !self.auto_create_topic_enable {
                def_perm = PERM_READ | PERM_WRITE;
            }
            if def_perm & PERM_INHERIT == 0 {
                log::warn!(
                    "not creating topic {topic}: default topic {default_topic} \
                     has no inherit permission (perm {def_perm})"
                );
                return None;
            }
            let queues = client_queue_nums.min(def.write_queue_nums).max(0);
            let c = TopicConfig {
                read_queue_nums: queues,
                write_queue_nums: queues,
                perm: def_perm & !PERM_INHERIT,
                topic_sys_flag,
                topic_filter_type: def.topic_filter_type,
                ..TopicConfig::new(topic)
            };
            t.topics.insert(topic.to_owned(), c.clone());
            next_version(&mut t.version);
            c
        };
        self.changed();
        Some(created)
    }

    /// `createTopicInSendMessageBackMethod`: create a retry (or DLQ) topic if missing.
    pub fn create_in_send_back(
        &self,
        topic: &str,
        queue_nums: i32,
        perm: i32,
        topic_sys_flag: i32,
    ) -> TopicConfig {
        let created = {
            let mut t = self.lock();
            if let Some(c) = t.topics.get(topic) {
                return c.clone();
            }
            let c = TopicConfig {
                read_queue_nums: queue_nums,
                write_queue_nums: queue_nums,
                perm,
                topic_sys_flag,
                ..TopicConfig::new(topic)
            };
            t.topics.insert(topic.to_owned(), c.clone());
            next_version(&mut t.version);
            c
        };
        self.changed();
        created
    }

    /// Create or replace a topic (UPDATE_AND_CREATE_TOPIC).
    pub fn update(&self, config: TopicConfig) {
        {
            let mut t = self.lock();
            t.topics.insert(config.topic_name.clone(), config);
            next_version(&mut t.version);
        }
        self.changed();
    }

    /// Remove a topic; whether it existed.
    pub fn delete(&self, topic: &str) -> bool {
        let removed = {
            let mut t = self.lock();
            let r = t.topics.remove(topic).is_some();
            if r {
                next_version(&mut t.version);
            }
            r
        };
        if removed {
            self.changed();
        }
        removed
    }

    /// Bump the data version without changing a topic (RocketMQ does this when the broker
    /// permission changes), so that nameservers take the next registration's topic table.
    pub fn next_data_version(&self) {
        next_version(&mut self.lock().version);
        self.changed();
    }

    /// A slave's copy of its master's table (RocketMQ's `SlaveSynchronize.syncTopicConfig`):
    /// when the master's data version differs from ours, take its table and version whole
    /// and persist. No change listener: the nameservers route by the master's registration.
    /// Whether anything changed.
    ///
    /// # Errors
    /// `topics.json` cannot be written (the table in memory is replaced anyway).
    pub fn replace_from_master(
        &self,
        master: TopicConfigSerializeWrapper,
    ) -> Result<bool, BrokerError> {
        {
            let mut t = self.lock();
            if t.version == master.data_version {
                return Ok(false);
            }
            t.topics = master.topic_config_table;
            t.version = master.data_version;
        }
        self.persist().map(|()| true)
    }

    /// The table as RocketMQ serializes it (GET_ALL_TOPIC_CONFIG, `topics.json`).
    #[must_use]
    pub fn wrapper(&self) -> TopicConfigSerializeWrapper {
        let t = self.lock();
        TopicConfigSerializeWrapper {
            data_version: t.version,
            topic_config_table: t.topics.clone(),
        }
    }

    /// The REGISTER_BROKER body for nameservers. A broker that is not both readable and
    /// writable (`broker_permission`) announces every topic with the broker's permission
    /// instead of the topic's, as RocketMQ's `registerBrokerAll` does, so clients stop
    /// sending to (or pulling from) it.
    #[must_use]
    pub fn to_register_body(&self, broker_permission: i32) -> RegisterBrokerBody {
        let mut wrapper = self.wrapper();
        if broker_permission & PERM_READ == 0 || broker_permission & PERM_WRITE == 0 {
            for t in wrapper.topic_config_table.values_mut() {
                t.perm = broker_permission;
            }
        }
        RegisterBrokerBody {
            filter_server_list: Vec::new(),
            topic_config_serialize_wrapper: wrapper,
        }
    }

    /// Write `topics.json`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn persist(&self) -> Result<(), BrokerError> {
        let _g = self
            .persist_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let json = pretty(&self.wrapper());
        fsutil::write_atomic(&self.path, json.as_bytes())
    }

    fn changed(&self) {
        if let Err(e) = self.persist() {
            log::error!("persisting topics: {e}");
        }
        let l = self
            .listener
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(l) = l {
            l();
        }
    }
}

fn next_version(v: &mut DataVersion) {
    v.counter += 1;
    v.timestamp = now_millis();
}

pub(crate) fn pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| "{}".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names() {
        assert!(validate_topic("Topic_A-1%RETRY%|x").is_ok());
        assert!(validate_topic("").is_err());
        assert!(validate_topic("a b")
            .unwrap_err()
            .contains("illegal characters"));
        assert!(validate_topic(&"a".repeat(128))
            .unwrap_err()
            .contains("127"));
        assert!(validate_topic(&"a".repeat(127)).is_ok());
    }

    #[test]
    fn create_from_default_topic_needs_inherit() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = BrokerConfig {
            config_dir: dir.path().to_path_buf(),
            ..BrokerConfig::default()
        };
        let m = TopicConfigManager::new(&cfg).unwrap();
        assert_eq!(m.select("TBW102").unwrap().perm, 7);
        assert_eq!(m.select(SCHEDULE_TOPIC).unwrap().read_queue_nums, 18);
        let v0 = m.data_version().counter;
        let c = m.create_in_send("T1", "TBW102", 4, 0).unwrap();
        assert_eq!((c.read_queue_nums, c.write_queue_nums, c.perm), (4, 4, 6));
        assert_eq!(m.data_version().counter, v0 + 1);
        assert!(m.create_in_send("T2", "T1", 4, 0).is_none());
        let again = TopicConfigManager::new(&cfg).unwrap();
        assert_eq!(again.select("T1"), Some(c));
        let off = BrokerConfig {
            auto_create_topic_enable: false,
            config_dir: dir.path().join("other"),
            ..BrokerConfig::default()
        };
        let m2 = TopicConfigManager::new(&off).unwrap();
        assert!(m2.select("TBW102").is_none());
        assert!(m2.create_in_send("T1", "TBW102", 4, 0).is_none());
    }
}
