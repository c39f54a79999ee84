//! Queries on [`MessageStore`] that are not the pull path: queue and CommitLog offsets, the
//! queue offset for a time (binary search over store times), a message's store time, raw
//! ConsumeQueue units (the delay scheduler and the timer read their queues with these), and
//! the key index (`queryMessage`).

use super::MessageStore;
use crate::consume_queue::ConsumeQueue;
use crate::format::{scan_record, CqUnit, Scan, CQ_STORE_UNIT_SIZE};
use crate::mapped_file::SelectMappedBufferResult;

/// ConsumeQueue units read by [`MessageStore::get_consume_queue_units`].
#[derive(Debug, Clone, Default)]
pub struct ConsumeQueueUnits {
    /// The queue's first valid offset (0 when the queue does not exist).
    pub min_offset: i64,
    /// The queue's next offset to be written (0 when the queue does not exist).
    pub max_offset: i64,
    /// The units read, from the requested offset on.
    pub units: Vec<CqUnit>,
}

impl MessageStore {
    /// Up to `max_count` ConsumeQueue units of `(topic, queue_id)` from queue offset `offset`
    /// on (fewer at the end of the queue; none when `offset` is outside
    /// `[min_offset, max_offset)`, which the result reports so the caller can correct it).
    #[must_use]
    pub fn get_consume_queue_units(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
    ) -> ConsumeQueueUnits {
        let mut out = ConsumeQueueUnits::default();
        let Some(cq) = self.get_consume_queue(topic, queue_id) else {
            return out;
        };
        out.min_offset = cq.min_offset_in_queue();
        out.max_offset = cq.max_offset_in_queue();
        if offset < out.min_offset {
            return out;
        }
        let mut at = offset;
        while out.units.len() < max_count && at < out.max_offset {
            let Some((file, pos)) = cq.units_from(at) else {
                break;
            };
            let Some(bytes) = file.read_from(pos) else {
                break;
            };
            let mut read: i64 = 0;
            for chunk in bytes.chunks_exact(CQ_STORE_UNIT_SIZE) {
                if out.units.len() >= max_count {
                    break;
                }
                match CqUnit::decode(chunk) {
                    Some(u) => out.units.push(u),
                    None => break,
                }
                read += 1;
            }
            if read == 0 {
                break;
            }
            at += read;
        }
        out
    }

    /// Messages of `topic` whose KEYS contain `key` (or whose UNIQ_KEY is `key`), stored within
    /// `[begin, end]`, newest first, at most `max_num`.
    #[must_use]
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> Vec<SelectMappedBufferResult> {
        use rmq_common::properties::{find_property, PropertyKey};
        let mut out: Vec<SelectMappedBufferResult> = Vec::new();
        for off in self
            .index
            .query_offsets(topic, key, max_num.saturating_mul(2), begin, end)
        {
            if out.len() >= max_num || out.iter().any(|s| s.start_offset() == off) {
                continue;
            }
            let Some(sel) = self.look_message_by_offset(off) else {
                continue;
            };
            let Scan::Message(r) = scan_record(sel.bytes(), false) else {
                continue;
            };
            let prop = |n| find_property(r.properties, n).and_then(|v| std::str::from_utf8(v).ok());
            let matches = r.topic == topic
                && (prop(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == Some(key)
                    || prop(PropertyKey::KEYS).is_some_and(|ks| ks.split(' ').any(|k| k == key)));
            if matches {
                out.push(sel);
            }
        }
        out
    }

    /// First queue offset whose message was stored at or after `timestamp` (the max offset
    /// when none was).
    #[must_use]
    pub fn get_offset_in_queue_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(cq) = self.get_consume_queue(topic, queue_id) else {
            return 0;
        };
        let (mut lo, mut hi) = (cq.min_offset_in_queue(), cq.max_offset_in_queue());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.store_timestamp_in(&cq, mid) {
                Some(ts) if ts < timestamp => lo = mid + 1,
                Some(_) => hi = mid,
                None => lo = mid + 1, // expired under us: look later
            }
        }
        lo
    }

    /// Store time (ms) of the message at queue offset `offset` of `(topic, queue_id)`
    /// (RocketMQ's `getMessageStoreTimeStamp`); `None` when there is no such message (never
    /// written, or already deleted).
    #[must_use]
    pub fn get_message_store_timestamp(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Option<i64> {
        let cq = self.get_consume_queue(topic, queue_id)?;
        self.store_timestamp_in(&cq, offset)
    }

    fn store_timestamp_in(&self, cq: &ConsumeQueue, offset: i64) -> Option<i64> {
        if offset < 0 || offset >= cq.max_offset_in_queue() {
            return None;
        }
        let u = cq.get_unit(offset)?;
        let sel = self
            .commit_log
            .get_message(u.offset, usize::try_from(u.size).ok()?)?;
        match scan_record(sel.bytes(), false) {
            Scan::Message(r) => Some(r.store_timestamp),
            _ => None,
        }
    }

    /// Store time (ms) of the oldest message in the CommitLog (RocketMQ's
    /// `getEarliestMessageTime`), -1 when it holds none.
    #[must_use]
    pub fn earliest_message_time(&self) -> i64 {
        self.look_message_by_offset(self.get_min_phy_offset())
            .and_then(|sel| match scan_record(sel.bytes(), false) {
                Scan::Message(r) => Some(r.store_timestamp),
                _ => None,
            })
            .unwrap_or(-1)
    }

    /// Smallest queue offset of `(topic, queue_id)`.
    #[must_use]
    pub fn get_min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.get_consume_queue(topic, queue_id)
            .map_or(0, |cq| cq.min_offset_in_queue())
    }

    /// Next queue offset to be written in `(topic, queue_id)`.
    #[must_use]
    pub fn get_max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.get_consume_queue(topic, queue_id)
            .map_or(0, |cq| cq.max_offset_in_queue())
    }

    /// Oldest CommitLog offset still stored.
    #[must_use]
    pub fn get_min_phy_offset(&self) -> i64 {
        self.commit_log.min_offset()
    }

    /// End of the readable CommitLog.
    #[must_use]
    pub fn get_max_phy_offset(&self) -> i64 {
        self.commit_log.max_offset()
    }

    /// CommitLog offset below which everything is durable.
    #[must_use]
    pub fn get_flushed_phy_offset(&self) -> i64 {
        self.commit_log.queue().flushed_where()
    }

    /// CommitLog bytes not yet dispatched.
    #[must_use]
    pub fn dispatch_behind_bytes(&self) -> i64 {
        (self.commit_log.max_offset() - self.reput.reput_from_offset()).max(0)
    }
}
