//! Requests brokers send on client connections, handed to the [`ClientListener`]: pushes
//! (NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET, CHECK_TRANSACTION_STATE),
//! answered at once, and calls an admin makes through the broker (GET_CONSUMER_RUNNING_INFO,
//! CONSUME_MESSAGE_DIRECTLY), answered with what the listener sends back.

use std::sync::{PoisonError, Weak};
use std::time::Duration;

use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{BoxFuture, Connection, Reply, RequestHandler};

use super::{CallAnswer, Inner, CHECK_BROKER_ADDR_FIELD, CHECK_PRODUCER_GROUP_FIELD};

/// How long a call may take in the listener (the broker gives up after 10 s).
const CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// Serves what brokers send on client connections: pushes go to the listener; anything
/// else is answered REQUEST_CODE_NOT_SUPPORTED.
pub(super) struct BrokerRequests {
    pub(super) instance: Weak<Inner>,
}

impl RequestHandler for BrokerRequests {
    fn handle(&self, conn: Connection, mut request: RemotingCommand) -> BoxFuture<Option<Reply>> {
        let listener = self.instance.upgrade().and_then(|i| {
            i.listener
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone()
        });
        let called = matches!(
            RequestCode(request.code),
            RequestCode::GET_CONSUMER_RUNNING_INFO | RequestCode::CONSUME_MESSAGE_DIRECTLY
        );
        if let (true, Some(l)) = (called, &listener) {
            let (tx, rx) = tokio::sync::oneshot::channel();
            l.on_broker_call(
                request.code,
                request.ext_fields.clone(),
                request.body.take(),
                tx,
            );
            return Box::pin(async move {
                let answer = match tokio::time::timeout(CALL_TIMEOUT, rx).await {
                    Ok(Ok(answer)) => answer,
                    Ok(Err(_)) => CallAnswer {
                        code: ResponseCode::SYSTEM_ERROR.0,
                        remark: Some("the client's handler ended without an answer".into()),
                        body: None,
                    },
                    Err(_) => CallAnswer {
                        code: ResponseCode::SYSTEM_ERROR.0,
                        remark: Some(format!(
                            "the client did not answer in {} s",
                            CALL_TIMEOUT.as_secs()
                        )),
                        body: None,
                    },
                };
                let mut response =
                    RemotingCommand::response_to(&request, answer.code, answer.remark);
                response.body = answer.body;
                Some(Reply::Command(response))
            });
        }
        let pushed = matches!(
            RequestCode(request.code),
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED
                | RequestCode::RESET_CONSUMER_CLIENT_OFFSET
                | RequestCode::CHECK_TRANSACTION_STATE
        );
        let reply = if let (true, Some(l)) = (pushed, listener) {
            if request.code == RequestCode::CHECK_TRANSACTION_STATE.0 {
                add_check_fields(&conn, &mut request);
            }
            let oneway = request.flag & rmq_protocol::command::FLAG_ONEWAY != 0;
            let response = (!oneway)
                .then(|| RemotingCommand::response_to(&request, ResponseCode::SUCCESS.0, None));
            l.on_broker_request(request.code, request.ext_fields, request.body);
            response
        } else {
            Some(RemotingCommand::response_to(
                &request,
                ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0,
                Some(format!(
                    "request code {} is not supported by the rmq Python client",
                    request.code
                )),
            ))
        };
        Box::pin(async move { reply.map(Reply::Command) })
    }
}

/// What a CHECK_TRANSACTION_STATE listener needs beyond the header: the broker to answer
/// (`brokerAddr`: the connection's peer, as Java answers on the channel's remote address) and
/// the producer group asked (`producerGroup`: the checked message's `PGROUP`, which Java's
/// client reads from the body too).
fn add_check_fields(conn: &Connection, request: &mut RemotingCommand) {
    request
        .ext_fields
        .insert(CHECK_BROKER_ADDR_FIELD, conn.peer().to_string());
    let group = request
        .body
        .as_ref()
        .and_then(|b| rmq_protocol::message_decoder::decode_message_at(b, 0).ok())
        .and_then(|m| {
            m.properties
                .get(rmq_common::PropertyKey::PRODUCER_GROUP)
                .map(str::to_owned)
        });
    if let Some(g) = group {
        if !request.ext_fields.contains_key(CHECK_PRODUCER_GROUP_FIELD) {
            request.ext_fields.insert(CHECK_PRODUCER_GROUP_FIELD, g);
        }
    }
}
