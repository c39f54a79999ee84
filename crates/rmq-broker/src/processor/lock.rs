//! LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42): queue locks for orderly consumers, kept by
//! the [`RebalanceLockManager`](crate::rebalance_lock::RebalanceLockManager).

use rmq_protocol::body::{LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody};
use rmq_protocol::{RemotingCommand, RemotingJson, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, json_response, reply};
use crate::state::BrokerState;

/// The request body as `T`, or a remark saying what is wrong with it.
fn parse<T: RemotingJson>(req: &RemotingCommand) -> Result<T, String> {
    let Some(bytes) = req.body.as_deref() else {
        return Err(format!(
            "request code {} needs a {} JSON body (clientId, consumerGroup, mqSet)",
            req.code,
            T::TYPE_NAME
        ));
    };
    T::from_json_bytes(bytes).map_err(|e| e.to_string())
}

fn check_names(client_id: &str, group: &str) -> Result<(), String> {
    let missing = if group.is_empty() {
        "consumerGroup"
    } else if client_id.is_empty() {
        "clientId"
    } else {
        return Ok(());
    };
    Err(format!(
        "the lock request body has no {missing}; set it to the consumer's"
    ))
}

fn refuse(req: &RemotingCommand, remark: String) -> Option<Reply> {
    answer(req, ResponseCode::SYSTEM_ERROR, remark)
}

/// 41: lock the queues for the client; the answer lists the queues it now holds
/// (`lockOKMQSet`): free, expired or already its own. Queues held by another live client are
/// left out, and the consumer retries them at its next rebalance.
pub fn lock_batch(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let body = match parse::<LockBatchRequestBody>(req)
        .and_then(|b| check_names(&b.client_id, &b.consumer_group).map(|()| b))
    {
        Ok(b) => b,
        Err(remark) => return refuse(req, remark),
    };
    let locked = b
        .locks
        .try_lock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    reply(
        req,
        json_response(
            req,
            &LockBatchResponseBody {
                lock_ok_mq_set: locked,
            },
        ),
    )
}

/// 42: release the client's own locks on the queues (locks of other clients stay).
pub fn unlock_batch(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let body = match parse::<UnlockBatchRequestBody>(req)
        .and_then(|b| check_names(&b.client_id, &b.consumer_group).map(|()| b))
    {
        Ok(b) => b,
        Err(remark) => return refuse(req, remark),
    };
    b.locks
        .unlock_batch(&body.consumer_group, &body.mq_set, &body.client_id);
    answer(req, ResponseCode::SUCCESS, "")
}
