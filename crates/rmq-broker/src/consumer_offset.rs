//! Committed consumer offsets (RocketMQ's `ConsumerOffsetManager`): `topic@group` → queue
//! id → offset, persisted to `consumerOffset.json` by [`ConsumerOffsetManager::persist`],
//! which the owner calls every 5 s and at shutdown.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use rmq_protocol::body::ConsumerOffsetSerializeWrapper;

use crate::error::BrokerError;
use crate::fsutil;
use crate::topic_config::pretty;

/// Offsets of every group.
pub struct ConsumerOffsetManager {
    table: Mutex<HashMap<String, HashMap<i32, i64>>>,
    persist_lock: Mutex<()>,
    path: PathBuf,
}

fn key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

impl ConsumerOffsetManager {
    /// Load `<config_dir>/consumerOffset.json` (fastjson's bare-int keys accepted).
    ///
    /// # Errors
    /// The file (and its `.bak`) exist but cannot be read.
    pub fn new(config_dir: &std::path::Path) -> Result<Self, BrokerError> {
        let path = config_dir.join("consumerOffset.json");
        let table = fsutil::load_json::<ConsumerOffsetSerializeWrapper>(&path)?
            .map(|w| {
                w.offset_table
                    .into_iter()
                    .map(|(k, v)| (k, v.into_iter().collect()))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            table: Mutex::new(table),
            persist_lock: Mutex::new(()),
            path,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, HashMap<i32, i64>>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Store `offset` for `(group, topic, queue_id)`.
    pub fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        self.lock()
            .entry(key(topic, group))
            .or_default()
            .insert(queue_id, offset);
    }

    /// The committed offset, or -1.
    #[must_use]
    pub fn query(&self, group: &str, topic: &str, queue_id: i32) -> i64 {
        self.lock()
            .get(&key(topic, group))
            .and_then(|m| m.get(&queue_id).copied())
            .unwrap_or(-1)
    }

    /// Forget every group's offsets of `topic`.
    pub fn remove_topic(&self, topic: &str) {
        let prefix = format!("{topic}@");
        self.lock().retain(|k, _| !k.starts_with(&prefix));
    }

    /// Forget every offset of `group` (DELETE_SUBSCRIPTIONGROUP with `removeOffset`);
    /// returns the topics it had offsets on.
    pub fn remove_group(&self, group: &str) -> Vec<String> {
        let mut topics = Vec::new();
        self.lock().retain(|k, _| match k.split_once('@') {
            Some((topic, g)) if g == group => {
                topics.push(topic.to_owned());
                false
            }
            _ => true,
        });
        topics.sort();
        topics
    }

    /// The sum of `group`'s committed offsets on `topic` (what it has consumed there), `None`
    /// when it has none.
    #[must_use]
    pub fn committed_sum(&self, group: &str, topic: &str) -> Option<u64> {
        self.lock()
            .get(&key(topic, group))
            .map(|m| m.values().map(|o| (*o).max(0).unsigned_abs()).sum())
    }

    /// Copy `src`'s offsets on `topic` to `dest` (replacing `dest`'s there); false when
    /// `src` has none (RocketMQ's `cloneOffset`).
    pub fn clone_offsets(&self, src: &str, dest: &str, topic: &str) -> bool {
        let mut table = self.lock();
        let Some(offsets) = table.get(&key(topic, src)).cloned() else {
            return false;
        };
        table.insert(key(topic, dest), offsets);
        true
    }

    /// Groups with offsets on `topic`.
    #[must_use]
    pub fn groups_of_topic(&self, topic: &str) -> Vec<String> {
        let prefix = format!("{topic}@");
        self.lock()
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix).map(str::to_owned))
            .collect()
    }

    /// Topics on which `group` has committed offsets (`whichTopicByConsumer`); this includes
    /// the group's retry topic `%RETRY%<group>` once its consumers commit there.
    #[must_use]
    pub fn topics_of_group(&self, group: &str) -> BTreeSet<String> {
        self.lock()
            .keys()
            .filter_map(|k| {
                let (topic, g) = k.split_once('@')?;
                (g == group).then(|| topic.to_owned())
            })
            .collect()
    }

    /// Every committed offset as a hold on its queue's unconsumed messages (the retention
    /// floor of forced deletion, `rmq_store::MessageStore::set_consume_progress`).
    #[must_use]
    pub fn queue_holds(&self) -> Vec<rmq_store::QueueHold> {
        let table = self.lock();
        let mut out = Vec::with_capacity(table.values().map(HashMap::len).sum());
        for (k, queues) in table.iter() {
            let Some((topic, group)) = k.split_once('@') else {
                continue;
            };
            for (&queue_id, &offset) in queues {
                out.push(rmq_store::QueueHold {
                    holder: format!("subscription group {group}"),
                    topic: topic.to_owned(),
                    queue_id,
                    offset,
                });
            }
        }
        out
    }

    /// Take every offset of `table` (RocketMQ's slave `putAll`: entries the table does not
    /// name are kept).
    pub fn put_all(&self, table: ConsumerOffsetSerializeWrapper) {
        let mut t = self.lock();
        for (k, queues) in table.offset_table {
            t.entry(k).or_default().extend(queues);
        }
    }

    /// The whole table as RocketMQ serializes it.
    #[must_use]
    pub fn wrapper(&self) -> ConsumerOffsetSerializeWrapper {
        ConsumerOffsetSerializeWrapper {
            offset_table: self
                .lock()
                .iter()
                .map(|(k, v)| (k.clone(), v.iter().map(|(q, o)| (*q, *o)).collect()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    /// Write `consumerOffset.json`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_offset_holds_its_queue_for_retention() {
        let dir = tempfile::tempdir().unwrap();
        let m = ConsumerOffsetManager::new(dir.path()).unwrap();
        m.commit("G", "T", 0, 12);
        m.commit("G@x", "T", 1, 3);
        m.commit("G", "%RETRY%G", 0, 0);
        let mut holds: Vec<_> = m
            .queue_holds()
            .into_iter()
            .map(|h| (h.holder, h.topic, h.queue_id, h.offset))
            .collect();
        holds.sort();
        let hold = |g: &str, t: &str, q, o| (format!("subscription group {g}"), t.into(), q, o);
        assert_eq!(
            holds,
            [
                hold("G", "%RETRY%G", 0, 0),
                hold("G", "T", 0, 12),
                hold("G@x", "T", 1, 3)
            ]
        );
    }

    #[test]
    fn fastjson_file_loads_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("consumerOffset.json"),
            r#"{"offsetTable":{"T@G":{0:12,1:3}}}"#,
        )
        .unwrap();
        let m = ConsumerOffsetManager::new(dir.path()).unwrap();
        assert_eq!(m.query("G", "T", 0), 12);
        assert_eq!(m.query("G", "T", 2), -1);
        m.commit("G", "T", 2, 7);
        m.persist().unwrap();
        let again = ConsumerOffsetManager::new(dir.path()).unwrap();
        assert_eq!(again.query("G", "T", 2), 7);
        again.commit("G", "%RETRY%G", 0, 1);
        again.commit("G2", "U", 0, 1);
        again.commit("G@x", "V", 0, 1);
        assert_eq!(
            again.topics_of_group("G").into_iter().collect::<Vec<_>>(),
            ["%RETRY%G", "T"]
        );
        assert_eq!(again.topics_of_group("G@x").len(), 1);
        assert!(dir.path().join("consumerOffset.json.bak").exists());
    }

    #[test]
    fn remove_clone_and_sum_a_groups_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let m = ConsumerOffsetManager::new(dir.path()).unwrap();
        m.commit("G", "T", 0, 5);
        m.commit("G", "T", 1, 7);
        m.commit("G", "U", 0, 1);
        m.commit("H", "T", 0, 9);
        assert_eq!(m.committed_sum("G", "T"), Some(12));
        assert_eq!(m.committed_sum("G", "V"), None);
        assert!(m.clone_offsets("G", "C", "T"));
        assert!(!m.clone_offsets("G", "C", "V"));
        assert_eq!((m.query("C", "T", 0), m.query("C", "T", 1)), (5, 7));
        assert_eq!(m.remove_group("G"), vec!["T".to_owned(), "U".to_owned()]);
        assert_eq!(m.query("G", "T", 0), -1);
        assert_eq!(m.query("H", "T", 0), 9, "other groups keep theirs");
        assert_eq!(m.query("C", "T", 1), 7);
    }
}
