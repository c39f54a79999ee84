//! Delay levels, the store's half (RocketMQ's `CommitLog.putMessage` rewrite and the bytes of
//! `ScheduleMessageService`): a message whose `DELAY` property names a level is *parked* in
//! `SCHEDULE_TOPIC_XXXX`, queue `level - 1`, with its real topic and queue kept in the
//! `REAL_TOPIC` / `REAL_QID` properties; dispatch gives its ConsumeQueue unit the delivery time
//! (store time + the level's delay) as tags code; and [`deliver`] (behind
//! `MessageStore::deliver_scheduled`) re-puts parked messages into their real queue.
//!
//! *When* a parked message is due, which units to deliver and where each level's progress
//! stands is decided by the broker's control plane (Python, `rmq.scheduling.delay`), which
//! reads the level queues with `MessageStore::get_consume_queue_units`. Every level's queue
//! is in delivery-time order, because the store time is monotonic and the delay is fixed per
//! level, so the scheduler only ever looks at the head of each queue.

use rmq_common::properties::{edit_properties, find, find_property, PropertyKey};
use rmq_common::sys_flag::{transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE};

use crate::commit_log::AppendResult;
use crate::error::{Result, StoreError};
use crate::format::{scan_record, MessageToStore, Scan};
use crate::mapped_file::SelectMappedBufferResult;

/// Topic that parks delayed messages, one queue per delay level (queue id = level - 1).
pub use rmq_common::topic::SCHEDULE_TOPIC;
/// Half messages of transactions: a parked message never goes there.
use rmq_common::topic::TRANS_HALF_TOPIC;

/// Delay used for a level the table does not have (RocketMQ's `computeDeliverTimestamp`).
const UNKNOWN_LEVEL_DELAY_MS: i64 = 1000;

/// The delay level a properties string asks for: the `DELAY` property, 0 when absent.
///
/// # Errors
/// [`StoreError::MessageIllegal`] when `DELAY` is not an integer.
pub fn delay_level(properties: &[u8]) -> Result<i32> {
    let Some(v) = find::DELAY_TIME_LEVEL.find(properties) else {
        return Ok(0);
    };
    std::str::from_utf8(v)
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .ok_or_else(|| {
            StoreError::MessageIllegal(format!(
                "the DELAY property {:?} is not a delay level (an integer: 1 and up delays \
                 by messageDelayLevel, 0 or less does not delay)",
                String::from_utf8_lossy(v)
            ))
        })
}

/// `SCHEDULE_TOPIC_XXXX` queue of a delay level (`delayLevel2QueueId`).
#[must_use]
pub fn level_to_queue_id(level: i32) -> i32 {
    level - 1
}

/// Highest level of a delay table.
fn max_level(levels_ms: &[i64]) -> i32 {
    i32::try_from(levels_ms.len()).unwrap_or(i32::MAX)
}

/// When a message parked at `level` and stored at `store_timestamp` is due (ms):
/// `store_timestamp + delay(level)`, the level clamped to the table's highest, as RocketMQ's
/// `computeDeliverTimestamp` (with 1 s for a level the table does not have).
#[must_use]
pub fn deliver_timestamp(levels_ms: &[i64], level: i32, store_timestamp: i64) -> i64 {
    let level = level.min(max_level(levels_ms));
    let delay = usize::try_from(level - 1)
        .ok()
        .and_then(|i| levels_ms.get(i).copied())
        .unwrap_or(UNKNOWN_LEVEL_DELAY_MS);
    store_timestamp.saturating_add(delay)
}

/// A delayed message rewritten for the topic where it waits (`SCHEDULE_TOPIC_XXXX`, or the
/// timer topic of [`crate::timer`]).
#[derive(Debug)]
pub(crate) struct Parked {
    /// Where it waits.
    pub(crate) topic: &'static str,
    /// Queue of its level.
    pub(crate) queue_id: i32,
    /// Its properties with `REAL_TOPIC`, `REAL_QID` (and a clamped `DELAY`).
    pub(crate) properties: Vec<u8>,
}

impl Parked {
    /// `msg` as stored in the schedule topic.
    pub(crate) fn apply<'a>(&'a self, msg: &MessageToStore<'a>) -> MessageToStore<'a> {
        MessageToStore {
            topic: self.topic,
            queue_id: self.queue_id,
            properties: &self.properties,
            ..msg.clone()
        }
    }
}

/// The parking of `msg` when it asks for a delay (`DELAY` > 0) and is neither a transaction
/// half message nor a rollback (RocketMQ's rule: only non-transactional and commit records are
/// delayed); `None` when it is stored as it is. A level above the table's highest is lowered to
/// it (and `DELAY` rewritten), as RocketMQ does. Timer properties (`TIMER_DELIVER_MS`, ...) are
/// dropped: a message with a delay level is a delay-level message (RocketMQ's
/// `HookUtils.checkIfTimerMessage`).
///
/// # Errors
/// `DELAY` is not an integer.
pub(crate) fn park(msg: &MessageToStore<'_>, levels_ms: &[i64]) -> Result<Option<Parked>> {
    if !matches!(
        transaction_value(msg.sys_flag),
        TRANSACTION_NOT_TYPE | TRANSACTION_COMMIT_TYPE
    ) || levels_ms.is_empty()
    {
        return Ok(None);
    }
    let asked = delay_level(msg.properties)?;
    if asked <= 0 {
        return Ok(None);
    }
    let level = asked.min(max_level(levels_ms));
    let qid = msg.queue_id.to_string();
    let clamped = level.to_string();
    let mut set = vec![
        (PropertyKey::REAL_TOPIC, msg.topic),
        (PropertyKey::REAL_QUEUE_ID, qid.as_str()),
    ];
    if level != asked {
        set.insert(0, (PropertyKey::DELAY_TIME_LEVEL, clamped.as_str()));
    }
    Ok(Some(Parked {
        topic: SCHEDULE_TOPIC,
        queue_id: level_to_queue_id(level),
        properties: edit_properties(
            msg.properties,
            &crate::timer::TIMER_REQUEST_PROPERTIES,
            &set,
        ),
    }))
}

/// What one `MessageStore::deliver_scheduled` call did.
#[derive(Debug, Default)]
pub struct DeliverOutcome {
    /// Units dealt with, from the first: delivered or skipped. The scheduler's offset for the
    /// level moves on by this much.
    pub processed: usize,
    /// Messages re-put into their real queue.
    pub delivered: usize,
    /// Units skipped for good (the message is gone, is not a parked message, or can never be
    /// stored), each logged as a warning.
    pub skipped: usize,
    /// Why the call stopped before the end (the store refused a write: disk full, busy, shut
    /// down; or the durability wait failed); the units from `processed` on are to be tried
    /// again later.
    pub error: Option<StoreError>,
}

/// A parked record that cannot be delivered, and why.
fn skip(phy_offset: i64, why: &str) {
    log::warn!("delayed message at CommitLog offset {phy_offset} skipped: {why}");
}

/// Re-put parked messages: for each ConsumeQueue unit `(commit_log_offset, size)` of
/// `SCHEDULE_TOPIC_XXXX`, in order, `append` the message found by `look` into the queue its
/// `REAL_TOPIC` / `REAL_QID` name, with `DELAY` removed and everything else kept (body, flag,
/// sys flag, born time and host, reconsume times, properties; RocketMQ's `messageTimeup`). A
/// message without `UNIQ_KEY` gets the offset id of its parked record as `UNIQ_KEY`, so
/// consumers see the id its producer was given. Stops at the first append that fails for a
/// reason other than the message itself; messages that can never be delivered are skipped.
/// Returns what was done and the end offset of the last message delivered, for the caller's
/// durability wait.
pub(crate) fn deliver(
    units: &[(i64, i32)],
    look: impl Fn(i64) -> Option<SelectMappedBufferResult>,
    append: impl Fn(&MessageToStore<'_>) -> Result<AppendResult>,
) -> (DeliverOutcome, i64) {
    let mut out = DeliverOutcome::default();
    let mut end = 0;
    for &(phy, size) in units {
        match deliver_one(phy, size, &look, &append) {
            Ok(Some(e)) => {
                out.delivered += 1;
                end = e;
            }
            Ok(None) => out.skipped += 1,
            Err(e) => {
                out.error = Some(e);
                break;
            }
        }
        out.processed += 1;
    }
    (out, end)
}

/// Re-put one parked message; `Ok(Some(end offset))` when delivered, `Ok(None)` when skipped
/// for good.
fn deliver_one(
    phy: i64,
    size: i32,
    look: &impl Fn(i64) -> Option<SelectMappedBufferResult>,
    append: &impl Fn(&MessageToStore<'_>) -> Result<AppendResult>,
) -> Result<Option<i64>> {
    let Some(sel) = look(phy) else {
        skip(
            phy,
            "no such message (already deleted with its CommitLog file?)",
        );
        return Ok(None);
    };
    let Scan::Message(r) = scan_record(sel.bytes(), false) else {
        skip(phy, "not a message record");
        return Ok(None);
    };
    if r.topic != SCHEDULE_TOPIC || i32::try_from(r.total_size).ok() != Some(size) {
        skip(
            phy,
            "the record there is not the parked message its unit points to",
        );
        return Ok(None);
    }
    let prop = |n| find_property(r.properties, n).and_then(|v| std::str::from_utf8(v).ok());
    let (Some(topic), Some(qid)) = (
        prop(PropertyKey::REAL_TOPIC),
        prop(PropertyKey::REAL_QUEUE_ID).and_then(|q| q.parse::<i32>().ok()),
    ) else {
        skip(phy, "it has no REAL_TOPIC / REAL_QID property");
        return Ok(None);
    };
    if topic == TRANS_HALF_TOPIC {
        skip(phy, "its real topic is the transaction half topic");
        return Ok(None);
    }
    let offset_id;
    let mut set = Vec::new();
    if prop(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX).is_none() {
        offset_id = rmq_common::create_offset_msg_id(r.store_host, r.physical_offset);
        set.push((
            PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            offset_id.as_str(),
        ));
    }
    let properties = edit_properties(r.properties, &[PropertyKey::DELAY_TIME_LEVEL], &set);
    let msg = MessageToStore {
        topic,
        queue_id: qid,
        flag: r.flag,
        body: r.body,
        properties: &properties,
        sys_flag: r.sys_flag,
        born_timestamp: r.born_timestamp,
        born_host: r.born_host,
        reconsume_times: r.reconsume_times,
        prepared_transaction_offset: 0,
    };
    match append(&msg) {
        Ok(a) => Ok(Some(a.end_offset())),
        Err(e @ (StoreError::MessageIllegal(_) | StoreError::PropertiesSizeExceeded(_))) => {
            skip(
                phy,
                &format!("its real queue {topic}/{qid} refuses it: {e}"),
            );
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn msg(props: &[u8], sys_flag: i32) -> MessageToStore<'_> {
        MessageToStore {
            topic: "T",
            queue_id: 3,
            flag: 0,
            body: b"b",
            properties: props,
            sys_flag,
            born_timestamp: 0,
            born_host: SocketAddr::from(([127, 0, 0, 1], 1)),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    #[test]
    fn levels_clamp_and_deliver_times() {
        let levels = [1000, 5000, 10_000];
        assert_eq!(deliver_timestamp(&levels, 1, 100), 1100);
        assert_eq!(deliver_timestamp(&levels, 3, 100), 10_100);
        assert_eq!(deliver_timestamp(&levels, 9, 100), 10_100);
        assert_eq!(deliver_timestamp(&levels, 0, 100), 1100);
        assert_eq!(level_to_queue_id(1), 0);
    }

    #[test]
    fn park_sets_real_topic_and_clamps() {
        let levels = [1000, 5000];
        let p = "TAGS\u{1}A\u{2}DELAY\u{1}9\u{2}".as_bytes();
        let parked = park(&msg(p, 0), &levels).unwrap().unwrap();
        assert_eq!(parked.queue_id, 1);
        assert_eq!(
            std::str::from_utf8(&parked.properties).unwrap(),
            "TAGS\u{1}A\u{2}DELAY\u{1}2\u{2}REAL_TOPIC\u{1}T\u{2}REAL_QID\u{1}3\u{2}"
        );
        let m = msg(p, 0);
        let stored = parked.apply(&m);
        assert_eq!((stored.topic, stored.queue_id), (SCHEDULE_TOPIC, 1));
        // Not delayed: no DELAY, DELAY 0 or negative, transaction halves and rollbacks.
        assert!(park(&msg(b"TAGS\x01A\x02", 0), &levels).unwrap().is_none());
        assert!(park(&msg(b"DELAY\x010\x02", 0), &levels).unwrap().is_none());
        assert!(park(&msg(b"DELAY\x01-1\x02", 0), &levels)
            .unwrap()
            .is_none());
        let half = rmq_common::sys_flag::TRANSACTION_PREPARED_TYPE;
        assert!(park(&msg(b"DELAY\x011\x02", half), &levels)
            .unwrap()
            .is_none());
        // A delay level wins over timer properties, which are dropped.
        let both = "TIMER_DELAY_SEC\u{1}9\u{2}DELAY\u{1}1\u{2}TIMER_DELIVER_MS\u{1}5\u{2}";
        let parked = park(&msg(both.as_bytes(), 0), &levels).unwrap().unwrap();
        assert_eq!(
            std::str::from_utf8(&parked.properties).unwrap(),
            "DELAY\u{1}1\u{2}REAL_TOPIC\u{1}T\u{2}REAL_QID\u{1}3\u{2}"
        );
        let commit = rmq_common::sys_flag::TRANSACTION_COMMIT_TYPE;
        assert!(park(&msg(b"DELAY\x011\x02", commit), &levels)
            .unwrap()
            .is_some());
        let e = park(&msg(b"DELAY\x01soon\x02", 0), &levels).err().unwrap();
        assert!(
            e.to_string().contains("\"soon\" is not a delay level"),
            "{e}"
        );
    }
}
