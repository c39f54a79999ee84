//! END_TRANSACTION (37), as RocketMQ's `EndTransactionProcessor`: the producer (or its answer
//! to a check) commits or rolls back a half message.
//!
//! * commit: the half, found by its CommitLog offset and checked against the header (producer
//!   group, queue offset, CommitLog offset), is stored again in its real topic and queue with
//!   the COMMIT transaction type (so consumers see it), then an op record marks it done;
//! * rollback: only the op record;
//! * unknown (`commitOrRollback` 0): nothing; the check-back asks again later.
//!
//! Producers send it oneway; a request that wants an answer gets one, except for "unknown",
//! which RocketMQ leaves unanswered too.

use rmq_common::record::MessageExt;
use rmq_common::sys_flag::{
    reset_transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
};
use rmq_common::PropertyKey;
use rmq_protocol::header::EndTransactionRequestHeader;
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::{Connection, Reply};
use rmq_store::{BrokerRole, FlushDiskType, MessageToStore, StoreError};

use super::{error_response, reply, response};
use crate::error::{RequestError, TransactionError};
use crate::state::BrokerState;
use crate::transaction::{end_message_transaction, look_half_message, op_record};

/// Serve an END_TRANSACTION.
#[expect(
    clippy::unused_async,
    reason = "the same async signature as the other processors"
)]
pub async fn process(b: &BrokerState, conn: &Connection, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, EndTransactionRequestHeader);
    if b.store.broker_role() == BrokerRole::Slave {
        return reply(req, error_response(req, &TransactionError::Slave.into()));
    }
    let source = if h.from_transaction_check {
        "answering a transaction check"
    } else {
        "ending its transaction"
    };
    let state = match h.commit_or_rollback {
        TRANSACTION_COMMIT_TYPE => "commit",
        TRANSACTION_ROLLBACK_TYPE => "rollback",
        TRANSACTION_NOT_TYPE => "unknown",
        _ => return None,
    };
    // Debug, not info: one line per message would flood the log of a producer that rolls back
    // often (the transaction check logs a summary of each round).
    if h.from_transaction_check || h.commit_or_rollback != TRANSACTION_COMMIT_TYPE {
        log::debug!(
            "producer {} (group {}) {source}: {state} for message {} \
             (commit log offset {}){}",
            conn.peer(),
            h.producer_group,
            h.msg_id,
            h.commit_log_offset,
            req.remark
                .as_deref()
                .map(|r| format!("; remark: {r}"))
                .unwrap_or_default()
        );
    }
    if h.commit_or_rollback == TRANSACTION_NOT_TYPE {
        return None;
    }
    let cmd = match end(b, &h) {
        Ok(()) => response(req, ResponseCode::SUCCESS, ""),
        Err(e) => error_response(req, &e),
    };
    reply(req, cmd)
}

/// Commit or roll back the half the header names: the commit's put, then the op record.
fn end(b: &BrokerState, h: &EndTransactionRequestHeader) -> Result<(), RequestError> {
    let half = look_half_message(b, h.commit_log_offset)?;
    check_prepare_message(&half, h)?;
    if h.commit_or_rollback == TRANSACTION_COMMIT_TYPE {
        let Some((topic, queue_id, properties)) = end_message_transaction(&half) else {
            return Err(TransactionError::NoRealDestination(h.commit_log_offset).into());
        };
        let msg = MessageToStore {
            topic: &topic,
            queue_id,
            flag: half.flag,
            body: &half.body,
            properties: properties.as_bytes(),
            sys_flag: reset_transaction_value(half.sys_flag, TRANSACTION_COMMIT_TYPE),
            born_timestamp: half.born_timestamp,
            born_host: half.born_host,
            reconsume_times: half.reconsume_times,
            prepared_transaction_offset: h.commit_log_offset,
        };
        put(b, &msg)?;
    }
    write_op(b, &half);
    Ok(())
}

/// `checkPrepareMessage`: the header must name the half it points at.
fn check_prepare_message(
    half: &MessageExt,
    h: &EndTransactionRequestHeader,
) -> Result<(), TransactionError> {
    let group = half.properties.get(PropertyKey::PRODUCER_GROUP);
    if group != Some(h.producer_group.as_str()) {
        return Err(TransactionError::WrongProducerGroup {
            half: group.unwrap_or("").to_owned(),
            request: h.producer_group.clone(),
        });
    }
    if half.queue_offset != h.tran_state_table_offset {
        return Err(TransactionError::WrongQueueOffset {
            half: half.queue_offset,
            request: h.tran_state_table_offset,
        });
    }
    if half.commit_log_offset != h.commit_log_offset {
        return Err(TransactionError::WrongCommitLogOffset {
            half: half.commit_log_offset,
            request: h.commit_log_offset,
        });
    }
    Ok(())
}

/// Append without waiting for the flush (RocketMQ puts these with `waitStoreMsgOK=false`);
/// under SYNC_FLUSH the flush is still requested.
fn put(b: &BrokerState, msg: &MessageToStore<'_>) -> Result<(), StoreError> {
    let appended = b.store.append_one(msg)?;
    if b.store.config().flush_disk_type == FlushDiskType::SyncFlush {
        let f = b.store.flush_future(appended.end_offset());
        tokio::spawn(async move {
            let _ = f.await;
        });
    }
    Ok(())
}

/// `deletePrepareMessage`: the op record that tells the check-back the half is done. A
/// failure is logged; the half is then checked again, and the producer answers again.
fn write_op(b: &BrokerState, half: &MessageExt) {
    let (topic, queue_id, body, properties) = op_record(half);
    let op = MessageToStore {
        topic,
        queue_id,
        flag: 0,
        body: body.as_bytes(),
        properties: properties.as_bytes(),
        sys_flag: 0,
        born_timestamp: rmq_common::time::now_millis(),
        born_host: b.config.broker_addr,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    };
    if let Err(e) = put(b, &op) {
        log::error!(
            "writing the op record of the half message at queue offset {} \
             failed ({e}); it will be checked again",
            half.queue_offset
        );
    }
}
