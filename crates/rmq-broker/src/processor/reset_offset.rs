//! INVOKE_BROKER_TO_RESET_OFFSET (222): rewind (or, forced, move forward) a consumer group's
//! offsets on one topic to a point in time, as RocketMQ's `Broker2Client.resetOffset`, and tell
//! the group's consumers with RESET_CONSUMER_CLIENT_OFFSET (220, oneway).

use std::time::Duration;

use rmq_protocol::body::{MessageQueue, ResetOffsetBody};
use rmq_protocol::header::ResetOffsetRequestHeader;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, json_response, reply};
use crate::state::BrokerState;

/// How long a oneway RESET_CONSUMER_CLIENT_OFFSET may wait to be queued (RocketMQ: 5 s).
const NOTIFY_TIMEOUT: Duration = Duration::from_secs(5);

/// The offset a queue is reset to. `timestamp` -1 means the end of the queue; otherwise the
/// first message stored at or after it. Without `force`, offsets only move back: a group
/// already before that point keeps its offset.
fn target_offset(b: &BrokerState, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
    let offset = if timestamp == -1 {
        b.store.get_max_offset_in_queue(topic, queue_id)
    } else {
        b.store
            .get_offset_in_queue_by_time(topic, queue_id, timestamp)
    };
    offset.max(0)
}

/// 222: compute the new offset of every write queue of the topic, commit them on this broker,
/// send them to every connected consumer of the group, and answer them (ResetOffsetBody).
///
/// Differences from RocketMQ, on purpose:
/// * RocketMQ leaves committing to the consumers and answers CONSUMER_NOT_ONLINE when none is
///   connected, so nothing changes (admin tools then fall back to committing each queue with
///   UPDATE_CONSUMER_OFFSET). Here the broker commits the offsets itself, so a reset also works
///   while the group is offline: the answer is SUCCESS with the new offsets either way, and
///   consumers that start later read them.
/// * RocketMQ refuses the whole reset when any queue lacks a committed offset. Here only a
///   group with no committed offset on the topic at all is refused; a queue the group never
///   committed is set to the time's offset (there is nothing to keep it from).
/// * RocketMQ answers SYSTEM_ERROR when a consumer is older than 3.0.7 and sends C++ admin
///   tools a list-shaped body; neither kind of peer is supported here.
pub async fn process(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, ResetOffsetRequestHeader);
    let fail = |code: ResponseCode, remark: String| answer(req, code, remark);
    let Some(config) = b.topics.select(&h.topic) else {
        return fail(
            ResponseCode::TOPIC_NOT_EXIST,
            format!(
                "[reset-offset] reset offset failed, no topic in this broker. topic={}; check \
                 the topic name (GET_ALL_TOPIC_CONFIG lists the broker's topics)",
                h.topic
            ),
        );
    };
    let committed: Vec<i64> = (0..config.write_queue_nums)
        .map(|q| b.offsets.query(&h.group, &h.topic, q))
        .collect();
    if committed.iter().all(|&o| o < 0) {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "[reset-offset] the consumer group <{}> has no committed offset on topic {} on \
                 this broker: it has never consumed it here, so there is nothing to reset; start \
                 its consumers first, or set offsets with UPDATE_CONSUMER_OFFSET",
                h.group, h.topic
            ),
        );
    }
    let mut body = ResetOffsetBody::default();
    for (queue_id, &current) in (0..).zip(&committed) {
        let at_time = target_offset(b, &h.topic, queue_id, h.timestamp);
        let offset = if h.is_force || current < 0 || at_time < current {
            at_time
        } else {
            current
        };
        b.offsets.commit(&h.group, &h.topic, queue_id, offset);
        body.offset_table.0.insert(
            MessageQueue::new(&h.topic, &b.config.broker_name, queue_id),
            offset,
        );
    }
    let answer = json_response(req, &body);
    if answer.code != ResponseCode::SUCCESS.0 {
        return reply(req, answer);
    }
    let notice = RemotingCommand::request_with_header(
        RequestCode::RESET_CONSUMER_CLIENT_OFFSET.0,
        &ResetOffsetRequestHeader {
            topic: h.topic.clone(),
            group: h.group.clone(),
            timestamp: h.timestamp,
            is_force: h.is_force,
        },
    );
    let notice = match answer.body.clone() {
        Some(bytes) => notice.with_body(bytes),
        None => notice,
    };
    for channel in b.clients.consumer_channels(&h.group) {
        let sent = tokio::time::timeout(NOTIFY_TIMEOUT, channel.conn.oneway(notice.clone())).await;
        if !matches!(sent, Ok(Ok(()))) {
            log::warn!(
                "[reset-offset] could not tell consumer {} ({}) of group {} \
                 about the reset of topic {}; it keeps its own offsets and may commit them \
                 over the reset",
                channel.client_id,
                channel.conn.peer(),
                h.group,
                h.topic
            );
        }
    }
    reply(req, answer)
}
