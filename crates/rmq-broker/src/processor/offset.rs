//! QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15), as RocketMQ's
//! `ConsumerManageProcessor`, and CLONE_GROUP_OFFSET (314, mqadmin `cloneGroupOffset`), as its
//! `AdminBrokerProcessor`.

use rmq_protocol::header::{
    CloneGroupOffsetRequestHeader, QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, bad_header, reply, response};
use crate::state::BrokerState;

/// 14: the committed offset; with none, 0 when the queue still starts at 0 (a new group
/// reads from the beginning), else QUERY_NOT_FOUND.
pub fn query(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = match QueryConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    let mut offset = b.offsets.query(&h.consumer_group, &h.topic, h.queue_id);
    if offset < 0 {
        if b.store.get_min_offset_in_queue(&h.topic, h.queue_id) <= 0 {
            offset = 0;
        } else {
            return answer(
                req,
                ResponseCode::QUERY_NOT_FOUND,
                "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
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
pub fn update(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = match UpdateConsumerOffsetRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    b.offsets
        .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    answer(req, ResponseCode::SUCCESS, "")
}

/// 314: copy the source group's committed offsets to the destination group, on one topic or
/// on every topic the source has offsets on. Topics the broker does not have are skipped, and
/// unless `offline`, so are topics the source group's live consumers no longer subscribe (as
/// RocketMQ does). The remark names the topics copied.
pub fn clone_group_offset(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, CloneGroupOffsetRequestHeader);
    let topics = match h.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => std::collections::BTreeSet::from([t.to_owned()]),
        None => b.offsets.topics_of_group(&h.src_group),
    };
    let live = b.clients.subscription_count(&h.src_group) > 0;
    let mut cloned = Vec::new();
    for topic in topics {
        if b.topics.select(&topic).is_none() {
            continue;
        }
        if !h.offline && live && b.clients.find_subscription(&h.src_group, &topic).is_err() {
            continue;
        }
        if b.offsets.clone_offsets(&h.src_group, &h.dest_group, &topic) {
            cloned.push(topic);
        }
    }
    let remark = format!(
        "offsets of {} cloned to {} on {} topic(s): {}",
        h.src_group,
        h.dest_group,
        cloned.len(),
        cloned.join(", ")
    );
    answer(req, ResponseCode::SUCCESS, remark)
}
