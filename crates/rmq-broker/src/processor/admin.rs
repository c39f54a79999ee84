//! Queue offset lookups: GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
//! SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32), and the raw
//! ConsumeQueue units: QUERY_CONSUME_QUEUE (321, mqadmin `queryCq`).

use rmq_protocol::body::{ConsumeQueueData, QueryConsumeQueueResponseBody};
use rmq_protocol::header::{
    GetEarliestMsgStoretimeRequestHeader, GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, QueryConsumeQueueRequestHeader, SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, error_response, json_response, reply, response};
use crate::error::RequestError;
use crate::state::BrokerState;

fn ok<H: CommandHeader>(req: &RemotingCommand, h: &H) -> Option<Reply> {
    reply(req, response(req, ResponseCode::SUCCESS, "").with_header(h))
}

/// 30.
pub fn max_offset(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetMaxOffsetRequestHeader);
    let offset = b.store.get_max_offset_in_queue(&h.topic, h.queue_id);
    ok(req, &GetMaxOffsetResponseHeader { offset })
}

/// 31.
pub fn min_offset(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetMinOffsetRequestHeader);
    let offset = b.store.get_min_offset_in_queue(&h.topic, h.queue_id);
    ok(req, &GetMinOffsetResponseHeader { offset })
}

/// 29.
pub fn search_offset(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, SearchOffsetRequestHeader);
    let offset = b
        .store
        .get_offset_in_queue_by_time(&h.topic, h.queue_id, h.timestamp);
    ok(req, &SearchOffsetResponseHeader { offset })
}

/// 32: store time of the queue's first message, -1 when there is none.
pub fn earliest_store_time(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetEarliestMsgStoretimeRequestHeader);
    let min = b.store.get_min_offset_in_queue(&h.topic, h.queue_id);
    let timestamp = b
        .store
        .get_message_store_timestamp(&h.topic, h.queue_id, min)
        .unwrap_or(-1);
    ok(req, &GetEarliestMsgStoretimeResponseHeader { timestamp })
}

/// 321: up to `count` units of the queue from `index` on (CommitLog offset, size, tag hash),
/// the queue's bounds, and with `consumerGroup` that group's subscription of the topic.
/// SYSTEM_ERROR when the queue does not exist; a remark when `index` is outside it.
pub fn query_consume_queue(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, QueryConsumeQueueRequestHeader);
    if b.store.get_consume_queue(&h.topic, h.queue_id).is_none() {
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("{}@{} is not exist!", h.queue_id, h.topic),
        );
    }
    let count = match RequestError::count("count", h.count) {
        Ok(n) => n.min(10_000),
        Err(e) => return reply(req, error_response(req, &e)),
    };
    let units = b
        .store
        .get_consume_queue_units(&h.topic, h.queue_id, h.index, count);
    let mut body = QueryConsumeQueueResponseBody {
        max_queue_index: units.max_offset,
        min_queue_index: units.min_offset,
        queue_data: units
            .units
            .iter()
            .map(|u| ConsumeQueueData {
                physic_offset: u.offset,
                physic_size: u.size,
                tags_code: u.tags_code,
                ..ConsumeQueueData::default()
            })
            .collect(),
        ..QueryConsumeQueueResponseBody::default()
    };
    if let Some(group) = &h.consumer_group {
        match b.clients.find_subscription(group, &h.topic) {
            Ok((sub, _)) => body.subscription_data = Some(sub),
            Err(_) => body.filter_data = Some(format!("{group}@{} is not online!", h.topic)),
        }
    }
    let mut resp = json_response(req, &body);
    if body.queue_data.is_empty() {
        resp.remark = Some(format!(
            "Index {} of {}@{} is not exist! (the queue holds {}..{})",
            h.index, h.queue_id, h.topic, units.min_offset, units.max_offset
        ));
    }
    reply(req, resp)
}
