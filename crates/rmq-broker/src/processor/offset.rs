//! QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15), as RocketMQ's
//! `ConsumerManageProcessor`.

use rmq_protocol::header::{
    QueryConsumerOffsetRequestHeader, QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{bad_header, reply, response};
use crate::controller::Broker;

/// 14: the committed offset; with none, 0 when the queue still starts at 0 (a new group
/// reads from the beginning), else QUERY_NOT_FOUND.
pub fn query(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = match QueryConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, &e),
    };
    let mut offset = b.offsets.query(&h.consumer_group, &h.topic, h.queue_id);
    if offset < 0 {
        if b.store.get_min_offset_in_queue(&h.topic, h.queue_id) <= 0 {
            offset = 0;
        } else {
            return reply(
                req,
                response(
                    req,
                    ResponseCode::QUERY_NOT_FOUND,
                    "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
                ),
            );
        }
    }
    reply(
        req,
        response(req, ResponseCode::SUCCESS, "")
            .with_header(&QueryConsumerOffsetResponseHeader { offset }),
    )
}

/// 15: commit an offset (usually oneway).
pub fn update(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = match UpdateConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, &e),
    };
    b.offsets
        .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    reply(req, response(req, ResponseCode::SUCCESS, ""))
}
