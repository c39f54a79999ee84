//! Dispatch ("reput"): turning CommitLog records into ConsumeQueue units and IndexFile
//! entries. A message is visible to consumers only once dispatched; the dispatch loop lives
//! in [`MessageStore`](crate::store::MessageStore), the decoding rules live here.

use rmq_common::properties::{find_property, PropertyKey};
use rmq_common::sys_flag::{transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE};

use crate::format::DecodedRecord;
pub use crate::schedule::SCHEDULE_TOPIC;
use crate::schedule::{delay_level, deliver_timestamp};

/// What dispatchers need of one record (RocketMQ's `DispatchRequest`).
#[derive(Debug, Clone)]
pub struct DispatchRequest<'a> {
    /// Topic.
    pub topic: &'a str,
    /// Queue id.
    pub queue_id: i32,
    /// CommitLog offset.
    pub commit_log_offset: i64,
    /// Record size.
    pub msg_size: i32,
    /// Tag hash, or the delivery time for delayed messages.
    pub tags_code: i64,
    /// Store time.
    pub store_timestamp: i64,
    /// Logical offset in the ConsumeQueue.
    pub consume_queue_offset: i64,
    /// KEYS property.
    pub keys: Option<&'a str>,
    /// UNIQ_KEY property.
    pub uniq_key: Option<&'a str>,
    /// Sys flag.
    pub sys_flag: i32,
}

impl<'a> DispatchRequest<'a> {
    /// Build from a decoded record; `delay_levels_ms[level - 1]` gives delayed messages their
    /// delivery time as the tags code.
    #[must_use]
    pub fn from_record(r: &DecodedRecord<'a>, delay_levels_ms: &[i64]) -> Self {
        let prop =
            |name| find_property(r.properties, name).and_then(|v| std::str::from_utf8(v).ok());
        let mut tags_code = rmq_common::tags_hash_code(prop(PropertyKey::TAGS));
        if r.topic == SCHEDULE_TOPIC {
            // RocketMQ's CommitLog.checkMessageAndReturnSize: a parked message's unit carries
            // its delivery time, so the scheduler never reads the CommitLog to decide.
            let level = delay_level(r.properties).unwrap_or(0);
            if level > 0 {
                tags_code = deliver_timestamp(delay_levels_ms, level, r.store_timestamp);
            }
        } else if r.topic == crate::timer::TIMER_TOPIC {
            // Likewise a timer message's unit carries its slot time (TIMER_OUT_MS).
            tags_code = crate::timer::out_ms(r.properties, r.store_timestamp);
        }
        Self {
            topic: r.topic,
            queue_id: r.queue_id,
            commit_log_offset: r.physical_offset,
            msg_size: i32::try_from(r.total_size).unwrap_or(i32::MAX),
            tags_code,
            store_timestamp: r.store_timestamp,
            consume_queue_offset: r.queue_offset,
            keys: prop(PropertyKey::KEYS),
            uniq_key: prop(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            sys_flag: r.sys_flag,
        }
    }

    /// Whether the record goes into a ConsumeQueue (not a half or rolled-back transaction).
    #[must_use]
    pub fn is_queued(&self) -> bool {
        matches!(
            transaction_value(self.sys_flag),
            TRANSACTION_NOT_TYPE | TRANSACTION_COMMIT_TYPE
        )
    }
}
