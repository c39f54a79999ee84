//! GET_CONSUMER_RUNNING_INFO (307, `mqadmin consumerStatus`): the broker relays the request
//! to the named consumer over that consumer's own connection and relays its answer back, as
//! RocketMQ's `AdminBrokerProcessor.callConsumer` does (the consumer builds the running info:
//! subscriptions, queue states, thread dump).

use std::time::Duration;

use rmq_protocol::header::GetConsumerRunningInfoRequestHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{reply, response};
use crate::controller::Broker;

/// How long the consumer has to answer (RocketMQ's `callClient` waits 10 s).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// 307: SYSTEM_ERROR when the client is not connected here, CONSUME_MSG_TIMEOUT when it does
/// not answer in time; otherwise whatever the consumer answered.
pub async fn consumer_running_info(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetConsumerRunningInfoRequestHeader);
    let channel = b
        .clients
        .consumer_channels(&h.consumer_group)
        .into_iter()
        .find(|c| c.client_id == h.client_id && !c.conn.is_closed());
    let Some(channel) = channel else {
        return reply(
            req,
            response(
                req,
                ResponseCode::SYSTEM_ERROR,
                format!(
                    "The Consumer <{}> <{}> not online (mqadmin consumerConnection lists the \
                     group's client ids)",
                    h.consumer_group, h.client_id
                ),
            ),
        );
    };
    let mut forward = RemotingCommand::new_request(req.code, req.ext_fields.clone());
    forward.body.clone_from(&req.body);
    let answer = match channel.conn.request(forward, CALL_TIMEOUT).await {
        Ok(mut answer) => {
            answer.opaque = req.opaque;
            answer
        }
        Err(rmq_remoting::RemotingError::Timeout { .. }) => response(
            req,
            ResponseCode::CONSUME_MSG_TIMEOUT,
            format!(
                "consumer <{}> <{}> Timeout: no answer in {} s",
                h.consumer_group,
                h.client_id,
                CALL_TIMEOUT.as_secs()
            ),
        ),
        Err(e) => response(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!(
                "invoke consumer <{}> <{}> Exception: {e}",
                h.consumer_group, h.client_id
            ),
        ),
    };
    reply(req, answer)
}
