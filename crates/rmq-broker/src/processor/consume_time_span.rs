//! QUERY_CONSUME_TIME_SPAN (303): per write queue of a topic, the store times of its first
//! and last message, of the group's last consumed message, and how long the next unconsumed
//! one has waited (RocketMQ's `AdminBrokerProcessor.queryConsumeTimeSpan`; the dashboard's
//! and `mqadmin`'s view of consumption lag in time).

use rmq_protocol::body::{MessageQueue, QueryConsumeTimeSpanBody, QueueTimeSpan};
use rmq_protocol::header::QueryConsumeTimeSpanRequestHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, json_response, reply};
use crate::state::BrokerState;

/// Answer 303: TOPIC_NOT_EXIST ("topic[T] not exist", as RocketMQ) for an unknown topic. A time is
/// minus one where the queue has no such message; `delayTime` is 0 when the group is caught up.
pub fn process(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, QueryConsumeTimeSpanRequestHeader);
    let Some(config) = b.topics.select(&h.topic) else {
        return answer(
            req,
            ResponseCode::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist", h.topic),
        );
    };
    let now = rmq_common::time::now_millis();
    let store_time = |queue_id: i32, offset: i64| {
        b.store
            .get_message_store_timestamp(&h.topic, queue_id, offset)
            .unwrap_or(-1)
    };
    let mut body = QueryConsumeTimeSpanBody::default();
    for queue_id in 0..config.write_queue_nums {
        let min_offset = b.store.get_min_offset_in_queue(&h.topic, queue_id);
        let max_offset = b.store.get_max_offset_in_queue(&h.topic, queue_id);
        let min_time = store_time(queue_id, min_offset);
        let consumed = b.offsets.query(&h.group, &h.topic, queue_id);
        let consume_time = if consumed > 0 {
            store_time(queue_id, consumed - 1)
        } else {
            min_time
        };
        // The next message to consume: the committed offset, or the queue's first message
        // when the group has committed nothing (or its offset fell behind retention).
        let next = consumed.max(min_offset);
        let delay_time = if next < max_offset {
            let t = store_time(queue_id, next);
            if t >= 0 {
                (now - t).max(0)
            } else {
                0
            }
        } else {
            0
        };
        body.consume_time_span_set.push(QueueTimeSpan {
            consume_time_stamp: consume_time,
            delay_time,
            max_time_stamp: store_time(queue_id, max_offset - 1),
            message_queue: MessageQueue::new(&h.topic, &b.config.broker_name, queue_id),
            min_time_stamp: min_time,
        });
    }
    reply(req, json_response(req, &body))
}
