//! How far each group has pulled each queue: the next offset the broker's last answer told
//! it to pull from (`nextBeginOffset`), the "pull offset" RocketMQ 5's `ConsumerLagCalculator`
//! splits a group's lag with. Between it and the queue's max offset are the messages
//! **ready** to pull (`rocketmq_consumer_ready_messages`); between the group's committed
//! offset and it, the messages **in flight** in its consumers
//! (`rocketmq_consumer_inflight_messages`). Recorded on pulls only while the exporter is on;
//! it starts empty with the process, and a queue never pulled since counts as pulled up to
//! its committed offset.

use rmq_common::fx::FxHashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

type Queues = ArcSwap<FxHashMap<i32, Arc<AtomicI64>>>;

/// Per `topic@group`, per queue id, the next offset to pull.
#[derive(Debug, Default)]
pub(super) struct PullOffsets(ArcSwap<FxHashMap<String, Arc<Queues>>>);

impl PullOffsets {
    /// A pull of `queue_id` by the key `topic_at_group` was answered with `next`.
    pub(super) fn record(&self, topic_at_group: &str, queue_id: i32, next: i64) {
        // The common case: a store under the maps' guards, no Arc count moved.
        if let Some(queues) = self.0.load().get(topic_at_group) {
            if let Some(o) = queues.load().get(&queue_id) {
                o.store(next, Ordering::Relaxed);
                return;
            }
        }
        self.0.rcu(|old| {
            let mut new = FxHashMap::clone(old);
            new.entry(topic_at_group.to_owned()).or_default();
            new
        });
        let Some(queues) = self.0.load().get(topic_at_group).map(Arc::clone) else {
            return;
        };
        queues.rcu(|old| {
            let mut new = FxHashMap::clone(old);
            new.entry(queue_id)
                .or_default()
                .store(next, Ordering::Relaxed);
            new
        });
    }

    /// The next offset to pull of `queue_id` under `topic_at_group`, if pulled since start.
    pub(super) fn get(&self, topic_at_group: &str, queue_id: i32) -> Option<i64> {
        let queues = Arc::clone(self.0.load().get(topic_at_group)?);
        let o = queues
            .load()
            .get(&queue_id)
            .map(|o| o.load(Ordering::Relaxed));
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_the_latest_answer_per_queue() {
        let p = PullOffsets::default();
        assert_eq!(p.get("T@G", 0), None);
        p.record("T@G", 0, 32);
        p.record("T@G", 1, 7);
        p.record("T@G", 0, 64);
        assert_eq!(p.get("T@G", 0), Some(64));
        assert_eq!(p.get("T@G", 1), Some(7));
        assert_eq!(p.get("T@H", 0), None);
    }
}
