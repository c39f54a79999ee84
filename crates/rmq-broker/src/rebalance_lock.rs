//! Queue locks for orderly consumers (RocketMQ's `RebalanceLockManager`): per consumer group
//! and message queue, the client id holding the lock and when it last renewed it.
//!
//! An orderly consumer locks the queues rebalance gave it (LOCK_BATCH_MQ) before consuming
//! them, renews the locks every 20 s, and unlocks a queue it gives up (UNLOCK_BATCH_MQ). A
//! lock not renewed for `lockMaxLiveTime` (60 s) has expired and goes to the next client that
//! asks, so a crashed consumer cannot block a queue for longer than that. Locks live in memory
//! only, as in RocketMQ: after a broker restart consumers simply lock again.
//!
//! Every method has an `_at` twin taking the current time in ms, so tests can drive expiry.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use rmq_common::time::now_millis;
use rmq_protocol::body::MessageQueue;

/// RocketMQ's default `rocketmq.broker.rebalance.lockMaxLiveTime` (ms).
pub const DEFAULT_LOCK_MAX_LIVE_TIME_MS: i64 = 60_000;

struct LockEntry {
    client_id: String,
    last_update_ms: i64,
}

impl LockEntry {
    fn is_expired(&self, now_ms: i64, max_live_ms: i64) -> bool {
        now_ms - self.last_update_ms > max_live_ms
    }
}

/// The lock table of one broker.
pub struct RebalanceLockManager {
    max_live_ms: i64,
    table: Mutex<HashMap<String, HashMap<MessageQueue, LockEntry>>>,
}

impl Default for RebalanceLockManager {
    fn default() -> Self {
        Self::new(DEFAULT_LOCK_MAX_LIVE_TIME_MS)
    }
}

impl RebalanceLockManager {
    /// Locks expire `max_live_ms` after their last renewal.
    #[must_use]
    pub fn new(max_live_ms: i64) -> Self {
        Self {
            max_live_ms,
            table: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, HashMap<MessageQueue, LockEntry>>> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lock `mqs` of `group` for `client_id`; returns the queues it now holds: those that
    /// were free, expired, or already its own (which are renewed). Queues held by another
    /// live client are left out.
    pub fn try_lock_batch(
        &self,
        group: &str,
        mqs: &BTreeSet<MessageQueue>,
        client_id: &str,
    ) -> BTreeSet<MessageQueue> {
        self.try_lock_batch_at(group, mqs, client_id, now_millis())
    }

    /// [`try_lock_batch`](Self::try_lock_batch) at time `now_ms`.
    pub fn try_lock_batch_at(
        &self,
        group: &str,
        mqs: &BTreeSet<MessageQueue>,
        client_id: &str,
        now_ms: i64,
    ) -> BTreeSet<MessageQueue> {
        let mut table = self.lock();
        let locks = table.entry(group.to_owned()).or_default();
        let mut locked = BTreeSet::new();
        for mq in mqs {
            let entry = locks.entry(mq.clone()).or_insert_with(|| LockEntry {
                client_id: client_id.to_owned(),
                last_update_ms: now_ms,
            });
            if entry.client_id == client_id || entry.is_expired(now_ms, self.max_live_ms) {
                if entry.client_id != client_id {
                    log::warn!(
                        "queue lock of {}:{}:{} (group {group}) expired for \
                         {}; now held by {client_id}",
                        mq.topic,
                        mq.broker_name,
                        mq.queue_id,
                        entry.client_id
                    );
                    client_id.clone_into(&mut entry.client_id);
                }
                entry.last_update_ms = now_ms;
                locked.insert(mq.clone());
            }
        }
        locked
    }

    /// Release the locks of `mqs` that `client_id` holds (expired or not); locks of other
    /// clients stay.
    pub fn unlock_batch(&self, group: &str, mqs: &BTreeSet<MessageQueue>, client_id: &str) {
        let mut table = self.lock();
        let Some(locks) = table.get_mut(group) else {
            return;
        };
        for mq in mqs {
            if locks.get(mq).is_some_and(|e| e.client_id == client_id) {
                locks.remove(mq);
            }
        }
        if locks.is_empty() {
            table.remove(group);
        }
    }

    /// The client holding a live lock on `mq` of `group`, if any.
    #[must_use]
    pub fn holder(&self, group: &str, mq: &MessageQueue) -> Option<String> {
        self.holder_at(group, mq, now_millis())
    }

    /// [`holder`](Self::holder) at time `now_ms`.
    #[must_use]
    pub fn holder_at(&self, group: &str, mq: &MessageQueue, now_ms: i64) -> Option<String> {
        self.lock()
            .get(group)?
            .get(mq)
            .filter(|e| !e.is_expired(now_ms, self.max_live_ms))
            .map(|e| e.client_id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mqs(ids: &[i32]) -> BTreeSet<MessageQueue> {
        ids.iter()
            .map(|&i| MessageQueue::new("T", "broker-a", i))
            .collect()
    }

    #[test]
    fn two_clients_contend_and_each_keeps_its_own() {
        let m = RebalanceLockManager::new(60_000);
        let t0 = 1_000_000;
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0, 1]), "c1", t0),
            mqs(&[0, 1])
        );
        // c2 gets only the queue nobody holds.
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[1, 2]), "c2", t0 + 1),
            mqs(&[2])
        );
        // c1 renews its own and still cannot take c2's.
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0, 1, 2]), "c1", t0 + 2),
            mqs(&[0, 1])
        );
        assert_eq!(
            m.holder_at("G", &MessageQueue::new("T", "broker-a", 2), t0 + 2)
                .as_deref(),
            Some("c2")
        );
        // Another group is independent.
        assert_eq!(
            m.try_lock_batch_at("H", &mqs(&[0]), "c2", t0 + 3),
            mqs(&[0])
        );
        // Unlocking only releases the caller's own locks.
        m.unlock_batch("G", &mqs(&[0, 1, 2]), "c2");
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0, 1, 2]), "c1", t0 + 4),
            mqs(&[0, 1, 2])
        );
        m.unlock_batch("G", &mqs(&[0, 1, 2]), "c1");
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0, 1, 2]), "c2", t0 + 5),
            mqs(&[0, 1, 2])
        );
    }

    #[test]
    fn locks_expire_without_renewal() {
        let m = RebalanceLockManager::new(60_000);
        let t0 = 5_000_000;
        let q0 = MessageQueue::new("T", "broker-a", 0);
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0, 1]), "c1", t0),
            mqs(&[0, 1])
        );
        // c1 renews queue 0 only, at t0 + 50 s.
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0]), "c1", t0 + 50_000),
            mqs(&[0])
        );
        // Exactly at the limit the lock still holds (expiry is "more than 60 s").
        assert!(m
            .try_lock_batch_at("G", &mqs(&[1]), "c2", t0 + 60_000)
            .is_empty());
        // Past it, queue 1 has expired and goes to c2; queue 0 was renewed and stays.
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0, 1]), "c2", t0 + 60_001),
            mqs(&[1])
        );
        assert_eq!(m.holder_at("G", &q0, t0 + 60_001).as_deref(), Some("c1"));
        // Nothing renews queue 0 after t0 + 50 s: it expires at t0 + 110 s.
        assert_eq!(m.holder_at("G", &q0, t0 + 110_001), None);
        // An expired lock is the holder's again as soon as it renews.
        assert_eq!(
            m.try_lock_batch_at("G", &mqs(&[0]), "c1", t0 + 200_000),
            mqs(&[0])
        );
        // The old holder's unlock after a takeover does not release the new holder's lock.
        m.unlock_batch("G", &mqs(&[1]), "c1");
        assert_eq!(
            m.holder_at("G", &MessageQueue::new("T", "broker-a", 1), t0 + 60_002)
                .as_deref(),
            Some("c2")
        );
    }
}
