//! UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) and GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): the
//! admin side of consumer groups (retry policy, broadcast, consume enable).

use rmq_protocol::body::{SubscriptionGroupConfig, SubscriptionGroupWrapper};
use rmq_protocol::{RemotingCommand, RemotingJson, ResponseCode};
use rmq_remoting::Reply;

use super::{json_response, reply, response};
use crate::controller::Broker;

/// 200: create or replace a group's config (body: SubscriptionGroupConfig JSON).
pub(crate) fn update(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let Some(body) = req.body.as_deref() else {
        return reply(
            req,
            response(
                req,
                ResponseCode::SYSTEM_ERROR,
                "the request has no SubscriptionGroupConfig body",
            ),
        );
    };
    match SubscriptionGroupConfig::from_json_bytes(body) {
        Ok(config) if !config.group_name.is_empty() => {
            b.groups.update(config);
            reply(req, response(req, ResponseCode::SUCCESS, ""))
        }
        Ok(_) => reply(
            req,
            response(
                req,
                ResponseCode::SYSTEM_ERROR,
                "SubscriptionGroupConfig.groupName is empty",
            ),
        ),
        Err(e) => reply(
            req,
            response(req, ResponseCode::SYSTEM_ERROR, e.to_string()),
        ),
    }
}

/// 201: every group's config (body: SubscriptionGroupWrapper JSON).
pub(crate) fn all(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let wrapper: SubscriptionGroupWrapper = b.groups.wrapper();
    reply(req, json_response(req, &wrapper))
}
