//! Requests for one consumer that the broker relays over that consumer's own connection,
//! relaying its answer back (RocketMQ's `AdminBrokerProcessor.callConsumer`):
//! GET_CONSUMER_RUNNING_INFO (307, `mqadmin consumerStatus`: the consumer reports its
//! subscriptions, queue states, thread dump) and CONSUME_MESSAGE_DIRECTLY (309, `mqadmin
//! queryMsgById -g G -d CLIENT`: the broker attaches the stored message and the consumer's
//! listener consumes it once more).

use std::time::Duration;

use rmq_protocol::header::{
    ConsumeMessageDirectlyResultRequestHeader, GetConsumerRunningInfoRequestHeader,
};
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, reply, response};
use crate::state::BrokerState;

/// How long the consumer has to answer (RocketMQ's `callClient` waits 10 s).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// 307.
pub async fn consumer_running_info(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetConsumerRunningInfoRequestHeader);
    let forward = RemotingCommand::new_request(req.code, req.ext_fields.clone());
    call_consumer(b, req, &h.consumer_group, &h.client_id, forward).await
}

/// 309: the message named by `msgId` (an offset message id) goes along as the body, and the
/// broker's name as `brokerName`. SYSTEM_ERROR when the id names no stored message.
pub async fn consume_message_directly(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, ConsumeMessageDirectlyResultRequestHeader);
    let msg_id = h.msg_id.as_deref().unwrap_or_default();
    let stored = rmq_common::decode_offset_msg_id(msg_id)
        .ok()
        .and_then(|(_, offset)| b.store.look_message_by_offset(offset));
    let Some(stored) = stored else {
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!(
                "no stored message with offset message id {msg_id:?} on broker {}",
                b.config.broker_name
            ),
        );
    };
    let mut ext = req.ext_fields.clone();
    ext.insert("brokerName", b.config.broker_name.clone());
    let mut forward = RemotingCommand::new_request(req.code, ext);
    forward.body = Some(bytes::Bytes::copy_from_slice(stored.bytes()));
    let client_id = h.client_id.unwrap_or_default();
    call_consumer(b, req, &h.consumer_group, &client_id, forward).await
}

/// Send `forward` to `group`'s client `client_id` and answer `req` with its response:
/// SYSTEM_ERROR when the client is not connected here, CONSUME_MSG_TIMEOUT when it does not
/// answer in time.
async fn call_consumer(
    b: &BrokerState,
    req: &RemotingCommand,
    group: &str,
    client_id: &str,
    forward: RemotingCommand,
) -> Option<Reply> {
    let channel = b
        .clients
        .consumer_channels(group)
        .into_iter()
        .find(|c| c.client_id == client_id && !c.conn.is_closed());
    let Some(channel) = channel else {
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!(
                "The Consumer <{group}> <{client_id}> not online (mqadmin consumerConnection \
                     lists the group's client ids)"
            ),
        );
    };
    let answer = match channel.conn.request(forward, CALL_TIMEOUT).await {
        Ok(mut answer) => {
            answer.opaque = req.opaque;
            answer
        }
        Err(rmq_remoting::RemotingError::Timeout { .. }) => response(
            req,
            ResponseCode::CONSUME_MSG_TIMEOUT,
            format!(
                "consumer <{group}> <{client_id}> Timeout: no answer in {} s",
                CALL_TIMEOUT.as_secs()
            ),
        ),
        Err(e) => response(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("invoke consumer <{group}> <{client_id}> Exception: {e}"),
        ),
    };
    reply(req, answer)
}
