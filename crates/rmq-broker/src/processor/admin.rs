//! Queue offset lookups: GET_MAX_OFFSET (30), GET_MIN_OFFSET (31),
//! SEARCH_OFFSET_BY_TIMESTAMP (29), GET_EARLIEST_MSG_STORETIME (32).

use rmq_protocol::header::{
    GetEarliestMsgStoretimeRequestHeader, GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, SearchOffsetRequestHeader, SearchOffsetResponseHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{reply, response};
use crate::controller::Broker;

fn ok<H: CommandHeader>(req: &RemotingCommand, h: &H) -> Option<Reply> {
    reply(req, response(req, ResponseCode::SUCCESS, "").with_header(h))
}

/// 30.
pub fn max_offset(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetMaxOffsetRequestHeader);
    let offset = b.store.get_max_offset_in_queue(&h.topic, h.queue_id);
    ok(req, &GetMaxOffsetResponseHeader { offset })
}

/// 31.
pub fn min_offset(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetMinOffsetRequestHeader);
    let offset = b.store.get_min_offset_in_queue(&h.topic, h.queue_id);
    ok(req, &GetMinOffsetResponseHeader { offset })
}

/// 29.
pub fn search_offset(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, SearchOffsetRequestHeader);
    let offset = b
        .store
        .get_offset_in_queue_by_time(&h.topic, h.queue_id, h.timestamp);
    ok(req, &SearchOffsetResponseHeader { offset })
}

/// 32: store time of the queue's first message, -1 when there is none.
pub fn earliest_store_time(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetEarliestMsgStoretimeRequestHeader);
    let min = b.store.get_min_offset_in_queue(&h.topic, h.queue_id);
    let timestamp = b
        .store
        .get_message_store_timestamp(&h.topic, h.queue_id, min)
        .unwrap_or(-1);
    ok(req, &GetEarliestMsgStoretimeResponseHeader { timestamp })
}
