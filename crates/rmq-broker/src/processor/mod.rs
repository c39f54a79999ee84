//! Request processors, one file per family, and the one dispatch `match`.

use std::sync::Arc;

use rmq_protocol::{RemotingCommand, RemotingJson, RequestCode, ResponseCode};
use rmq_remoting::{Connection, FileRegion, Reply};
use rmq_store::SelectMappedBufferResult;

use crate::error::RequestError;
use crate::state::BrokerState;

/// Decode the request's typed header, or return the bad-header answer from the processor.
/// (Defined before the processor modules, which see it by textual scope.)
macro_rules! decode_header {
    ($req:expr, $t:ty) => {
        match <$t as rmq_protocol::CommandHeader>::from_ext_fields(&$req.ext_fields) {
            Ok(h) => h,
            Err(e) => return $crate::processor::bad_header($req, e),
        }
    };
}

pub mod acl;
pub mod admin;
pub mod call_consumer;
pub mod client;
pub mod consume_time_span;
pub mod end_transaction;
pub mod ha_status;
pub mod lock;
pub mod offset;
pub mod pull_message;
pub mod query_message;
pub mod reset_offset;
pub mod runtime_info;
pub mod send_message;
pub mod send_msg_back;
pub mod slave;
pub mod stats;
pub mod store_admin;
pub mod subscription_group;
pub mod topic;

/// A stored message range as a reply body region (sent with `writev` or `sendfile`).
pub(crate) struct StoreRegion(pub(crate) SelectMappedBufferResult);

impl FileRegion for StoreRegion {
    fn file(&self) -> &std::fs::File {
        self.0.mapped_file().file()
    }
    fn position(&self) -> u64 {
        self.0.file_pos() as u64
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn bytes(&self) -> &[u8] {
        self.0.bytes()
    }
    fn on_file(&self) -> bool {
        self.0.on_file()
    }
}

/// A response to `req` with `code` and `remark`.
pub(crate) fn response(
    req: &RemotingCommand,
    code: ResponseCode,
    remark: impl Into<String>,
) -> RemotingCommand {
    let remark: String = remark.into();
    RemotingCommand::response_to(req, code.0, (!remark.is_empty()).then_some(remark))
}

/// A SUCCESS response carrying `body` as RocketMQ JSON (SYSTEM_ERROR if it cannot be
/// encoded, which the body types of this crate never cause).
pub(crate) fn json_response<T: RemotingJson>(req: &RemotingCommand, body: &T) -> RemotingCommand {
    match body.to_json_bytes() {
        Ok(bytes) => response(req, ResponseCode::SUCCESS, "").with_body(bytes),
        Err(e) => response(req, ResponseCode::SYSTEM_ERROR, e.to_string()),
    }
}

/// A reply, unless the request was oneway.
pub(crate) fn reply(req: &RemotingCommand, cmd: RemotingCommand) -> Option<Reply> {
    (!req.is_oneway()).then_some(Reply::Command(cmd))
}

/// The reply `code` with `remark` (none for a oneway request).
pub(crate) fn answer(
    req: &RemotingCommand,
    code: ResponseCode,
    remark: impl Into<String>,
) -> Option<Reply> {
    reply(req, response(req, code, remark))
}

/// The response to a request that ended with `e`: its code and remark as
/// [`RequestError::to_response`] maps them (the one mapping).
pub(crate) fn error_response(req: &RemotingCommand, e: &RequestError) -> RemotingCommand {
    let (code, remark) = e.to_response();
    response(req, code, remark)
}

/// The answer to a header that does not decode (Java's `RemotingCommandException`).
pub(crate) fn bad_header(req: &RemotingCommand, e: rmq_protocol::ProtocolError) -> Option<Reply> {
    reply(req, error_response(req, &RequestError::BadHeader(e)))
}

/// Requests cheap enough to start in the connection's reader (see
/// `RequestHandler::run_inline`): single sends and the small bookkeeping calls. Batches,
/// pulls and admin work get a task each, so that they spread over the runtime's threads.
#[must_use]
pub fn is_cheap(req: &RemotingCommand) -> bool {
    match RequestCode(req.code) {
        RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2 => {
            req.body.as_ref().map_or(0, bytes::Bytes::len) <= 16 * 1024
        }
        RequestCode::QUERY_CONSUMER_OFFSET
        | RequestCode::UPDATE_CONSUMER_OFFSET
        | RequestCode::GET_MAX_OFFSET
        | RequestCode::GET_MIN_OFFSET => true,
        _ => false,
    }
}

/// Route one request to its processor.
///
/// This future is boxed for every request, so it is kept under 1 KiB, where glibc serves it
/// from its per-thread cache (at 1 296 bytes it took the slower path that consolidates free
/// chunks): rare requests whose state is large are boxed apart.
pub async fn dispatch(
    b: Arc<BrokerState>,
    conn: Connection,
    req: RemotingCommand,
) -> Option<Reply> {
    if let Some(refused) = slave::refuse_write(&b, &req) {
        return refused;
    }
    match RequestCode(req.code) {
        RequestCode::SEND_MESSAGE
        | RequestCode::SEND_MESSAGE_V2
        | RequestCode::SEND_BATCH_MESSAGE => send_message::process(&b, &conn, &req).await,
        RequestCode::CONSUMER_SEND_MSG_BACK => send_msg_back::process(&b, &req).await,
        // The 5.x lite pull consumer sends LITE_PULL_MESSAGE; RocketMQ registers the same
        // PullMessageProcessor for both codes (only its executor and a kill switch differ).
        RequestCode::PULL_MESSAGE | RequestCode::LITE_PULL_MESSAGE => {
            pull_message::process(&b, &req).await
        }
        RequestCode::END_TRANSACTION => end_transaction::process(&b, &conn, &req).await,
        RequestCode::QUERY_CONSUMER_OFFSET => offset::query(&b, &req),
        RequestCode::UPDATE_CONSUMER_OFFSET => offset::update(&b, &req),
        RequestCode::GET_MAX_OFFSET => admin::max_offset(&b, &req),
        RequestCode::GET_MIN_OFFSET => admin::min_offset(&b, &req),
        RequestCode::SEARCH_OFFSET_BY_TIMESTAMP => admin::search_offset(&b, &req),
        RequestCode::GET_EARLIEST_MSG_STORETIME => admin::earliest_store_time(&b, &req),
        RequestCode::QUERY_MESSAGE => query_message::by_key(&b, &req),
        RequestCode::VIEW_MESSAGE_BY_ID => query_message::by_id(&b, &req),
        RequestCode::HEART_BEAT => client::heartbeat(&b, &conn, &req),
        RequestCode::UNREGISTER_CLIENT => client::unregister(&b, &conn, &req),
        RequestCode::GET_CONSUMER_LIST_BY_GROUP => client::consumer_list(&b, &req),
        RequestCode::GET_CONSUMER_CONNECTION_LIST => client::consumer_connections(&b, &req),
        RequestCode::LOCK_BATCH_MQ => lock::lock_batch(&b, &req),
        RequestCode::UNLOCK_BATCH_MQ => lock::unlock_batch(&b, &req),
        RequestCode::GET_TOPIC_STATS_INFO => stats::topic_stats(&b, &req),
        RequestCode::GET_CONSUME_STATS => stats::consume_stats(&b, &req),
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET => {
            Box::pin(reset_offset::process(&b, &req)).await
        }
        RequestCode::UPDATE_AND_CREATE_TOPIC => topic::create(&b, &req),
        RequestCode::GET_ALL_TOPIC_CONFIG => topic::all(&b, &req),
        RequestCode::DELETE_TOPIC_IN_BROKER => topic::delete(&b, &req),
        RequestCode::GET_BROKER_RUNTIME_INFO => runtime_info::process(&b, &req),
        RequestCode::GET_BROKER_HA_STATUS => ha_status::process(&b, &req),
        RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP => subscription_group::update(&b, &req),
        RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG => subscription_group::all(&b, &req),
        RequestCode::DELETE_SUBSCRIPTIONGROUP => subscription_group::delete(&b, &req),
        RequestCode::GET_PRODUCER_CONNECTION_LIST => client::producer_connections(&b, &req),
        RequestCode::QUERY_TOPIC_CONSUME_BY_WHO => client::topic_consumed_by(&b, &req),
        RequestCode::GET_BROKER_CONSUME_STATS => stats::broker_consume_stats(&b, &req),
        RequestCode::VIEW_BROKER_STATS_DATA => stats::view_stats(&b, &req),
        RequestCode::QUERY_CONSUME_QUEUE => admin::query_consume_queue(&b, &req),
        RequestCode::CLONE_GROUP_OFFSET => offset::clone_group_offset(&b, &req),
        RequestCode::GET_CONSUMER_RUNNING_INFO => {
            Box::pin(call_consumer::consumer_running_info(&b, &req)).await
        }
        RequestCode::CONSUME_MESSAGE_DIRECTLY => {
            Box::pin(call_consumer::consume_message_directly(&b, &req)).await
        }
        RequestCode::CLEAN_EXPIRED_CONSUMEQUEUE => {
            store_admin::clean_expired_consume_queues(&b, &req).await
        }
        RequestCode::CLEAN_UNUSED_TOPIC => store_admin::clean_unused_topics(&b, &req).await,
        RequestCode::DELETE_EXPIRED_COMMITLOG => {
            store_admin::delete_expired_commit_log(&b, &req).await
        }
        RequestCode::GET_SYSTEM_TOPIC_LIST_FROM_BROKER => topic::system_topics(&b, &req),
        RequestCode::GET_ALL_PRODUCER_INFO => client::all_producers(&b, &req),
        RequestCode::QUERY_TOPICS_BY_CONSUMER => client::topics_by_consumer(&b, &req),
        RequestCode::GET_TOPIC_CONFIG => topic::get(&b, &req),
        RequestCode::GET_SUBSCRIPTIONGROUP_CONFIG => subscription_group::get(&b, &req),
        RequestCode::QUERY_CONSUME_TIME_SPAN => consume_time_span::process(&b, &req),
        RequestCode::GET_ALL_CONSUMER_OFFSET => slave::all_consumer_offsets(&b, &req),
        RequestCode::UPDATE_AND_CREATE_ACL_CONFIG => acl::update(&b, &req).await,
        RequestCode::DELETE_ACL_CONFIG => acl::delete(&b, &req).await,
        RequestCode::GET_BROKER_CLUSTER_ACL_INFO => acl::version(&b, &req),
        RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG => acl::update_global_white(&b, &req).await,
        _ => match &b.fallback {
            Some(f) => f.handle(conn, req).await,
            None => reply(
                &req,
                response(
                    &req,
                    ResponseCode::REQUEST_CODE_NOT_SUPPORTED,
                    format!("request type {} not supported", req.code),
                ),
            ),
        },
    }
}
