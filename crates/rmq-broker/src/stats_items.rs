//! Per-topic and per-group counters: the statistics RocketMQ's `BrokerStatsManager` keeps
//! under the names `TOPIC_PUT_NUMS`, `TOPIC_PUT_SIZE` (key: topic), `GROUP_GET_NUMS`,
//! `GROUP_GET_SIZE`, `SNDBCK_PUT_NUMS`, `DLQ_PUT_NUMS` (key: `topic@group`), `BROKER_PUT_NUMS` and
//! `BROKER_GET_NUMS` (key: the cluster name). Each item holds a `value` (messages or bytes)
//! and `times` (how many calls added to it), as RocketMQ's `StatsItem`; VIEW_BROKER_STATS_DATA
//! derives its minute/hour/day `sum`, `tps` and `avgpt` from them ([`crate::stats_history`]),
//! and `/metrics` reads them directly.
//!
//! The send and pull paths only do a lock-free map load and atomic adds: each table is an
//! immutable map behind an `ArcSwap` (`rcu_map.rs`), copied (read-copy-update) only
//! when a key appears for the first time. Counters start at 0 with the process, as RocketMQ's do.

use crate::rcu_map::RcuMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// `Stats.TOPIC_PUT_NUMS`: messages stored, per topic.
pub const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
/// `Stats.TOPIC_PUT_SIZE`: bytes stored (CommitLog record sizes), per topic.
pub const TOPIC_PUT_SIZE: &str = "TOPIC_PUT_SIZE";
/// `Stats.GROUP_GET_NUMS`: messages pulled, per `topic@group`.
pub const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";
/// `Stats.GROUP_GET_SIZE`: bytes pulled, per `topic@group`.
pub const GROUP_GET_SIZE: &str = "GROUP_GET_SIZE";
/// `Stats.SNDBCK_PUT_NUMS`: messages a consumer sent back for retry, per `topic@group`.
pub const SNDBCK_PUT_NUMS: &str = "SNDBCK_PUT_NUMS";
/// `BrokerStatsManager.DLQ_PUT_NUMS`: messages a consumer's send-back moved to its group's
/// dead-letter queue, per `topic@group` (the topic the message was consumed from).
pub const DLQ_PUT_NUMS: &str = "DLQ_PUT_NUMS";
/// `Stats.BROKER_PUT_NUMS`: messages stored by this broker (key: its cluster name).
pub const BROKER_PUT_NUMS: &str = "BROKER_PUT_NUMS";
/// `Stats.BROKER_GET_NUMS`: messages pulled from this broker (key: its cluster name).
pub const BROKER_GET_NUMS: &str = "BROKER_GET_NUMS";

/// Every statistic name served, in the order listed above.
pub const STATS_NAMES: [&str; 8] = [
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    DLQ_PUT_NUMS,
    BROKER_PUT_NUMS,
    BROKER_GET_NUMS,
];

/// One item's running totals.
#[derive(Debug, Default)]
pub struct StatsItem {
    value: AtomicU64,
    times: AtomicU64,
}

/// An item's totals at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ItemTotals {
    /// Sum of what was added (messages or bytes) since the broker started.
    pub value: u64,
    /// How many calls added to it.
    pub times: u64,
}

impl StatsItem {
    fn add(&self, value: u64, times: u64) {
        self.value.fetch_add(value, Ordering::Relaxed);
        self.times.fetch_add(times, Ordering::Relaxed);
    }

    fn totals(&self) -> ItemTotals {
        ItemTotals {
            value: self.value.load(Ordering::Relaxed),
            times: self.times.load(Ordering::Relaxed),
        }
    }
}

/// One statistic's items, by key.
#[derive(Debug, Default)]
pub struct StatsTable {
    items: RcuMap<String, StatsItem>,
}

impl StatsTable {
    /// Add `value` over `times` calls to the item `key`, creating it when new.
    pub fn add(&self, key: &str, value: u64, times: u64) {
        crate::rcu_map::with_entry(&self.items, key, |item| item.add(value, times));
    }

    /// The totals of item `key`; `None` when nothing was ever counted under it.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<ItemTotals> {
        self.items.load().get(key).map(|i| i.totals())
    }

    /// Every item's key and totals (for `/metrics` and the history sampler).
    #[must_use]
    pub fn snapshot(&self) -> Vec<(String, ItemTotals)> {
        self.items
            .load()
            .iter()
            .map(|(k, i)| (k.clone(), i.totals()))
            .collect()
    }
}

/// The broker's statistic tables, one field per RocketMQ statistic name.
#[derive(Debug)]
pub struct StatsItems {
    cluster: String,
    /// [`TOPIC_PUT_NUMS`].
    pub topic_put_nums: StatsTable,
    /// [`TOPIC_PUT_SIZE`].
    pub topic_put_size: StatsTable,
    /// [`GROUP_GET_NUMS`].
    pub group_get_nums: StatsTable,
    /// [`GROUP_GET_SIZE`].
    pub group_get_size: StatsTable,
    /// [`SNDBCK_PUT_NUMS`].
    pub sndbck_put_nums: StatsTable,
    /// [`DLQ_PUT_NUMS`].
    pub dlq_put_nums: StatsTable,
    /// [`BROKER_PUT_NUMS`].
    pub broker_put_nums: StatsTable,
    /// [`BROKER_GET_NUMS`].
    pub broker_get_nums: StatsTable,
}

/// `topic@group`, RocketMQ's `buildStatsKey`.
#[must_use]
pub fn stats_key(topic: &str, group: &str) -> String {
    format!("{topic}@{group}")
}

thread_local! {
    /// The pull path's `topic@group` key, built in a buffer each thread reuses so that
    /// counting a pull allocates nothing once the buffer has grown.
    static KEY_BUF: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

/// Run `f` with `topic@group` ([`stats_key`]) borrowed from the thread's buffer.
pub(crate) fn with_stats_key<R>(topic: &str, group: &str, f: impl FnOnce(&str) -> R) -> R {
    KEY_BUF.with(|buf| {
        let mut key = buf.borrow_mut();
        key.clear();
        key.push_str(topic);
        key.push('@');
        key.push_str(group);
        f(&key)
    })
}

impl StatsItems {
    /// Empty tables; `cluster` keys the `BROKER_*` items.
    #[must_use]
    pub fn new(cluster: &str) -> Self {
        Self {
            cluster: cluster.to_owned(),
            topic_put_nums: StatsTable::default(),
            topic_put_size: StatsTable::default(),
            group_get_nums: StatsTable::default(),
            group_get_size: StatsTable::default(),
            sndbck_put_nums: StatsTable::default(),
            dlq_put_nums: StatsTable::default(),
            broker_put_nums: StatsTable::default(),
            broker_get_nums: StatsTable::default(),
        }
    }

    /// The table of statistic `name` (one of [`STATS_NAMES`]).
    #[must_use]
    pub fn table(&self, name: &str) -> Option<&StatsTable> {
        Some(match name {
            TOPIC_PUT_NUMS => &self.topic_put_nums,
            TOPIC_PUT_SIZE => &self.topic_put_size,
            GROUP_GET_NUMS => &self.group_get_nums,
            GROUP_GET_SIZE => &self.group_get_size,
            SNDBCK_PUT_NUMS => &self.sndbck_put_nums,
            DLQ_PUT_NUMS => &self.dlq_put_nums,
            BROKER_PUT_NUMS => &self.broker_put_nums,
            BROKER_GET_NUMS => &self.broker_get_nums,
            _ => return None,
        })
    }

    /// One send stored `msgs` messages of `bytes` CommitLog bytes to `topic`.
    pub fn on_put(&self, topic: &str, msgs: u64, bytes: u64) {
        self.topic_put_nums.add(topic, msgs, 1);
        self.topic_put_size.add(topic, bytes, 1);
        self.broker_put_nums.add(&self.cluster, msgs, 1);
    }

    /// One pull by a group read `msgs` messages (`bytes` bytes) of a topic (`topic_at_group`:
    /// [`stats_key`]); a pull that found nothing counts nothing, as in RocketMQ.
    pub fn on_get(&self, topic_at_group: &str, msgs: u64, bytes: u64) {
        if msgs == 0 {
            return;
        }
        self.group_get_nums.add(topic_at_group, msgs, 1);
        self.group_get_size.add(topic_at_group, bytes, 1);
        self.broker_get_nums.add(&self.cluster, msgs, 1);
    }

    /// `group` sent one message of `topic` back for retry, or to its dead-letter queue when
    /// `to_dlq`.
    pub fn on_send_back(&self, topic: &str, group: &str, to_dlq: bool) {
        with_stats_key(topic, group, |key| {
            self.sndbck_put_nums.add(key, 1, 1);
            if to_dlq {
                self.dlq_put_nums.add(key, 1, 1);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn items_count_values_and_calls_per_key() {
        let s = StatsItems::new("C");
        s.on_put("T", 3, 300);
        s.on_put("T", 1, 90);
        s.on_put("U", 2, 10);
        s.on_get(&stats_key("T", "G"), 4, 390);
        s.on_get(&stats_key("T", "G"), 0, 0);
        s.on_send_back("T", "G", false);
        s.on_send_back("T", "G", true);
        let t = s.topic_put_nums.get("T").unwrap();
        assert_eq!((t.value, t.times), (4, 2));
        assert_eq!(s.topic_put_size.get("T").unwrap().value, 390);
        assert_eq!(s.broker_put_nums.get("C").unwrap().value, 6);
        assert_eq!(s.group_get_nums.get("T@G").unwrap().times, 1);
        assert_eq!(s.group_get_size.get("T@G").unwrap().value, 390);
        assert_eq!(s.sndbck_put_nums.get("T@G").unwrap().value, 2);
        assert_eq!(s.dlq_put_nums.get("T@G").unwrap().value, 1);
        assert!(s.group_get_nums.get("U@G").is_none());
        assert_eq!(s.topic_put_nums.snapshot().len(), 2);
        assert!(s.table("NOPE").is_none());
        assert_eq!(
            STATS_NAMES.iter().filter(|n| s.table(n).is_some()).count(),
            8
        );
    }

    #[test]
    fn concurrent_first_adds_lose_nothing() {
        let s = Arc::new(StatsItems::new("C"));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let s = Arc::clone(&s);
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        s.on_put(&format!("T{}", i % 50), 1, 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let total: u64 = s
            .topic_put_nums
            .snapshot()
            .iter()
            .map(|(_, t)| t.value)
            .sum();
        assert_eq!(total, 4000);
    }
}
