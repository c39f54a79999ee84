//! How far each group has pulled each queue: the next offset the broker's last answer told
//! it to pull from (`nextBeginOffset`), the "pull offset" RocketMQ 5's `ConsumerLagCalculator`
//! splits a group's lag with. Between it and the queue's max offset are the messages
//! **ready** to pull (`rocketmq_consumer_ready_messages`); between the group's committed
//! offset and it, the messages **in flight** in its consumers
//! (`rocketmq_consumer_inflight_messages`). Recorded on pulls only while the exporter is on;
//! it starts empty with the process, and a queue never pulled since counts as pulled up to
//! its committed offset.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::rcu_map::{with_entry, RcuMap};

type Queues = RcuMap<i32, AtomicI64>;

/// Per `topic@group`, per queue id, the next offset to pull.
#[derive(Debug, Default)]
pub(super) struct PullOffsets(RcuMap<String, Queues>);

impl PullOffsets {
    /// A pull of `queue_id` by the key `topic_at_group` was answered with `next`.
    pub(super) fn record(&self, topic_at_group: &str, queue_id: i32, next: i64) {
        with_entry(&self.0, topic_at_group, |queues| {
            with_entry(queues, &queue_id, |o| o.store(next, Ordering::Relaxed));
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
