//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200), GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) and
//! DELETE_SUBSCRIPTIONGROUP (207), GET_SUBSCRIPTIONGROUP_CONFIG (352): the admin side of consumer groups (retry policy,
//! broadcast, consume enable).

use std::fmt::Write as _;

use rmq_protocol::body::{SubscriptionGroupConfig, SubscriptionGroupWrapper};
use rmq_protocol::header::{
    DeleteSubscriptionGroupRequestHeader, GetSubscriptionGroupConfigRequestHeader,
};
use rmq_protocol::{RemotingCommand, RemotingJson, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, json_response, reply};
use crate::state::BrokerState;

/// 200: create or replace a group's config (body: SubscriptionGroupConfig JSON).
pub(crate) fn update(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let Some(body) = req.body.as_deref() else {
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            "the request has no SubscriptionGroupConfig body",
        );
    };
    match SubscriptionGroupConfig::from_json_bytes(body) {
        Ok(config) if !config.group_name.is_empty() => {
            b.groups.update(config);
            answer(req, ResponseCode::SUCCESS, "")
        }
        Ok(_) => answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            "SubscriptionGroupConfig.groupName is empty",
        ),
        Err(e) => answer(req, ResponseCode::SYSTEM_ERROR, e.to_string()),
    }
}

/// 201: every group's config (body: SubscriptionGroupWrapper JSON).
pub(crate) fn all(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let wrapper: SubscriptionGroupWrapper = b.groups.wrapper();
    reply(req, json_response(req, &wrapper))
}

/// 352: one group's config (SubscriptionGroupConfig JSON); SUBSCRIPTION_GROUP_NOT_EXIST
/// with RocketMQ's remark when this broker has none (auto-creation is not triggered).
pub(crate) fn get(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetSubscriptionGroupConfigRequestHeader);
    match b.groups.select(&h.group) {
        Some(config) => reply(req, json_response(req, &config)),
        None => answer(
            req,
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!(
                "No group in this broker (group {} on broker {})",
                h.group, b.config.broker_name
            ),
        ),
    }
}

/// 207: forget the group's config and, with `removeOffset`, its committed offsets on every
/// topic (RocketMQ's `deleteSubscriptionGroup`). Like RocketMQ, deleting a group the broker
/// does not know is a success (mqadmin deletes on every broker of a cluster); the remark says
/// what was removed.
pub(crate) fn delete(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, DeleteSubscriptionGroupRequestHeader);
    let existed = b.groups.delete(&h.group_name);
    let mut remark = if existed {
        format!("subscription group [{}] deleted", h.group_name)
    } else {
        format!(
            "subscription group [{}] has no config on broker {}",
            h.group_name, b.config.broker_name
        )
    };
    if h.remove_offset {
        let topics = b.offsets.remove_group(&h.group_name);
        let _ = write!(
            remark,
            "; offsets removed on {} topic(s): {}",
            topics.len(),
            topics.join(", ")
        );
    }
    log::info!("DELETE_SUBSCRIPTIONGROUP: {remark}");
    answer(req, ResponseCode::SUCCESS, remark)
}
