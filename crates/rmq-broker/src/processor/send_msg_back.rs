//! CONSUMER_SEND_MSG_BACK (36): a consumer hands back a message it failed to consume
//! (RocketMQ 4.9's `SendMessageProcessor.asyncConsumerSendMsgBack`).
//!
//! The broker looks the message up by its CommitLog offset and stores a copy for the group:
//!
//! * into `%RETRY%<group>` (created on demand: `retryQueueNums` queues, read + write) with
//!   delay level `3 + reconsumeTimes` (or the level the consumer asked for), so it is parked in
//!   `SCHEDULE_TOPIC_XXXX` by the store and comes back through the retry topic, which every
//!   clustering consumer of the group subscribes to, once that level's delay has passed;
//! * into `%DLQ%<group>` (1 queue, created on demand with write permission only, so no consumer
//!   reads it unless an operator changes that) once it has been consumed `maxReconsumeTimes`
//!   times (the request's value from clients at 3.4.9 and up, else the group's
//!   `retryMaxTimes`, 16 by default), or at once when the consumer asks with a negative level.
//!
//! The copy keeps the body, flag, sys flag, born time and host and every property, plus
//! `RETRY_TOPIC` (the topic it was first sent to, set on the first send-back),
//! `ORIGIN_MESSAGE_ID` (the first record's offset message id) and `WAIT=false` (the put does not
//! wait for a SYNC_FLUSH, as in RocketMQ); its reconsume count is one more than the original's.

use rmq_common::properties::{edit_properties, find_property, PropertyKey};
use rmq_common::record::{scan_record, Scan};
use rmq_protocol::body::{SubscriptionGroupConfig, PERM_READ, PERM_WRITE};
use rmq_protocol::header::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::version::V3_4_9;
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;
use rmq_store::{FlushDiskType, MessageToStore};

use super::{error_response, reply, response};
use crate::error::SendError;
use crate::state::BrokerState;
use crate::topic_config::{DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};

/// Queues of a group's dead-letter topic (`MixAll.DLQ_NUMS_PER_GROUP`).
pub const DLQ_NUMS_PER_GROUP: i32 = 1;

/// Delay level of the first retry; retry `n` (counting from 0) uses `n + 3` (10 s, 30 s, 1 m, …
/// with the default levels).
pub const FIRST_RETRY_DELAY_LEVEL: i32 = 3;

/// `TopicSysFlag.buildSysFlag(false, true)`: the topic has unit subscriptions.
const TOPIC_FLAG_UNIT_SUB: i32 = 0x1 << 1;

/// Serve a send-back.
#[expect(
    clippy::unused_async,
    reason = "the same async signature as the other processors"
)]
pub async fn process(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, ConsumerSendMsgBackRequestHeader);
    let cmd = match send_back(b, req, &h) {
        Ok(()) => response(req, ResponseCode::SUCCESS, ""),
        Err(e) => error_response(req, &e.into()),
    };
    reply(req, cmd)
}

/// A queue id in `0..n` (RocketMQ picks one at random).
fn pick_queue(n: i32) -> i32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .subsec_nanos();
    // Below 10^9, so it fits an i32.
    let nanos = i32::try_from(nanos).unwrap_or(i32::MAX);
    nanos % n.max(1)
}

/// The consumer group's config (created when `autoCreateSubscriptionGroup`).
pub(super) fn find_group(
    b: &BrokerState,
    group: &str,
) -> Result<SubscriptionGroupConfig, SendError> {
    b.groups
        .find_or_create(group)
        .ok_or_else(|| SendError::GroupNotExist(group.to_owned()))
}

/// Consumptions before the DLQ: the request's `maxReconsumeTimes` from clients at 3.4.9 and
/// up, else the group's `retryMaxTimes`.
pub(super) fn max_reconsume_times(
    req: &RemotingCommand,
    requested: Option<i32>,
    group: &SubscriptionGroupConfig,
) -> i32 {
    match requested {
        Some(n) if req.version >= V3_4_9 => n,
        _ => group.retry_max_times,
    }
}

/// `%DLQ%<group>`, created on demand with one write-only queue.
pub(super) fn dead_letter_topic(b: &BrokerState, group: &str) -> String {
    let topic = format!("{DLQ_GROUP_TOPIC_PREFIX}{group}");
    b.topics
        .create_in_send_back(&topic, DLQ_NUMS_PER_GROUP, PERM_WRITE, 0);
    topic
}

/// Store a copy of the message at `h.offset` for the group's retry topic or its DLQ.
/// `Ok` also when the group wants no retries (the message is dropped).
fn send_back(
    b: &BrokerState,
    req: &RemotingCommand,
    h: &ConsumerSendMsgBackRequestHeader,
) -> Result<(), SendError> {
    let group = find_group(b, &h.group)?;
    if b.broker_permission() & PERM_WRITE == 0 {
        return Err(SendError::BrokerNotWritable(b.config.broker_addr));
    }
    if group.retry_queue_nums <= 0 {
        // The group wants no retries: the message is dropped, as in RocketMQ.
        return Ok(());
    }
    let retry_topic = format!("{RETRY_GROUP_TOPIC_PREFIX}{}", h.group);
    let topic_sys_flag = if h.unit_mode { TOPIC_FLAG_UNIT_SUB } else { 0 };
    let retry = b.topics.create_in_send_back(
        &retry_topic,
        group.retry_queue_nums,
        PERM_READ | PERM_WRITE,
        topic_sys_flag,
    );
    if retry.perm & PERM_WRITE == 0 {
        return Err(SendError::TopicNotWritable(retry_topic));
    }
    let Some(sel) = b.store.look_message_by_offset(h.offset) else {
        return Err(SendError::MessageNotFound(h.offset));
    };
    let Scan::Message(r) = scan_record(sel.bytes(), false) else {
        return Err(SendError::MessageUnreadable(h.offset));
    };

    let max = max_reconsume_times(req, h.max_reconsume_times, &group);
    let to_dlq = r.reconsume_times >= max || h.delay_level < 0;
    let (topic, queue_id) = if to_dlq {
        (
            dead_letter_topic(b, &h.group),
            pick_queue(DLQ_NUMS_PER_GROUP),
        )
    } else {
        (retry_topic, pick_queue(group.retry_queue_nums))
    };

    let prop = |n| find_property(r.properties, n).and_then(|v| std::str::from_utf8(v).ok());
    // SNDBCK_PUT_NUMS counts under the topic the message was first sent to.
    let back_topic = prop(PropertyKey::RETRY_TOPIC).unwrap_or(r.topic).to_owned();
    let origin_id;
    let level;
    let mut set: Vec<(&str, &str)> = Vec::with_capacity(4);
    if prop(PropertyKey::RETRY_TOPIC).is_none() {
        set.push((PropertyKey::RETRY_TOPIC, r.topic));
    }
    set.push((PropertyKey::WAIT_STORE_MSG_OK, "false"));
    if prop(PropertyKey::ORIGIN_MESSAGE_ID).is_none_or(str::is_empty) {
        origin_id = rmq_common::create_offset_msg_id(r.store_host, r.physical_offset);
        set.push((PropertyKey::ORIGIN_MESSAGE_ID, origin_id.as_str()));
    }
    let mut remove: &[&str] = &[];
    if to_dlq {
        // Stored as it is: no delay, whatever the message carried.
        remove = &[PropertyKey::DELAY_TIME_LEVEL];
    } else {
        let l = if h.delay_level == 0 {
            FIRST_RETRY_DELAY_LEVEL.saturating_add(r.reconsume_times)
        } else {
            h.delay_level
        };
        level = l.to_string();
        set.push((PropertyKey::DELAY_TIME_LEVEL, level.as_str()));
    }
    let properties = edit_properties(r.properties, remove, &set);
    let msg = MessageToStore {
        topic: &topic,
        queue_id,
        flag: r.flag,
        body: r.body,
        properties: &properties,
        sys_flag: r.sys_flag,
        born_timestamp: r.born_timestamp,
        born_host: r.born_host,
        reconsume_times: r.reconsume_times.saturating_add(1),
        prepared_transaction_offset: 0,
    };
    let appended = b
        .store
        .append_one(&msg)
        .map_err(|source| SendError::StoreBack {
            topic: topic.clone(),
            source,
        })?;
    b.stats.items.on_send_back(&back_topic, &h.group, to_dlq);
    // WAIT=false: no wait for the disk, but a SYNC_FLUSH store still gets the flush request.
    let f = b.store.flush_future(appended.end_offset());
    if b.store.config().flush_disk_type == FlushDiskType::SyncFlush {
        tokio::spawn(async move {
            let _ = f.await;
        });
    }
    Ok(())
}
