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
use rmq_store::{BrokerRole, FlushDiskType, MessageToStore};

use super::{answer, reply, response};
use crate::controller::Broker;
use crate::error::store_error_to_response;
use crate::transaction::{end_message_transaction, look_half_message, op_record};

/// Serve an END_TRANSACTION.
pub async fn process(b: &Broker, conn: &Connection, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, EndTransactionRequestHeader);
    if b.store.config().broker_role == BrokerRole::Slave {
        return answer(
            req,
            ResponseCode::SLAVE_NOT_AVAILABLE,
            "this broker is a slave; end transactions on its master",
        );
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
    if h.from_transaction_check || h.commit_or_rollback != TRANSACTION_COMMIT_TYPE {
        eprintln!(
            "rmq-broker INFO: producer {} (group {}) {source}: {state} for message {} \
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
    let cmd = match end(b, req, &h).await {
        Ok(c) | Err(c) => c,
    };
    reply(req, cmd)
}

async fn end(
    b: &Broker,
    req: &RemotingCommand,
    h: &EndTransactionRequestHeader,
) -> Result<RemotingCommand, RemotingCommand> {
    let system_error = |remark: String| response(req, ResponseCode::SYSTEM_ERROR, remark);
    let half =
        look_half_message(b, h.commit_log_offset).map_err(|e| system_error(e.to_string()))?;
    check_prepare_message(&half, h).map_err(system_error)?;
    if h.commit_or_rollback == TRANSACTION_COMMIT_TYPE {
        let Some((topic, queue_id, properties)) = end_message_transaction(&half) else {
            return Err(system_error(format!(
                "the half message at commit log offset {} has no REAL_TOPIC/REAL_QID",
                h.commit_log_offset
            )));
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
        put(b, &msg).map_err(|(code, remark)| response(req, code, remark))?;
    }
    write_op(b, &half);
    Ok(response(req, ResponseCode::SUCCESS, ""))
}

/// `checkPrepareMessage`: the header must name the half it points at.
fn check_prepare_message(half: &MessageExt, h: &EndTransactionRequestHeader) -> Result<(), String> {
    if half.properties.get(PropertyKey::PRODUCER_GROUP) != Some(h.producer_group.as_str()) {
        return Err(format!(
            "The producer group wrong: the half message belongs to {:?}, not {:?}",
            half.properties
                .get(PropertyKey::PRODUCER_GROUP)
                .unwrap_or(""),
            h.producer_group
        ));
    }
    if half.queue_offset != h.tran_state_table_offset {
        return Err(format!(
            "The transaction state table offset wrong: the half message is at {}, not {}",
            half.queue_offset, h.tran_state_table_offset
        ));
    }
    if half.commit_log_offset != h.commit_log_offset {
        return Err(format!(
            "The commit log offset wrong: the half message is at {}, not {}",
            half.commit_log_offset, h.commit_log_offset
        ));
    }
    Ok(())
}

/// Append without waiting for the flush (RocketMQ puts these with `waitStoreMsgOK=false`);
/// under SYNC_FLUSH the flush is still requested.
fn put(b: &Broker, msg: &MessageToStore<'_>) -> Result<(), (ResponseCode, String)> {
    let appended = b
        .store
        .append_one(msg)
        .map_err(|e| store_error_to_response(&e))?;
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
fn write_op(b: &Broker, half: &MessageExt) {
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
    if let Err((_, e)) = put(b, &op) {
        eprintln!(
            "rmq-broker ERROR: writing the op record of the half message at queue offset {} \
             failed ({e}); it will be checked again",
            half.queue_offset
        );
    }
}
