//! Transactional messages: the bytes of RocketMQ's `TransactionalMessageBridge`.
//!
//! A transaction moves through three topics of the CommitLog:
//!
//! ```text
//! SEND (TRAN_MSG=true) ─► RMQ_SYS_TRANS_HALF_TOPIC queue 0     (half: REAL_TOPIC, REAL_QID,
//!                          │                                    transaction bits cleared)
//! END_TRANSACTION commit ─┼► <REAL_TOPIC> queue <REAL_QID>      (COMMIT type: consumers see it)
//!                 + both  └► RMQ_SYS_TRANS_OP_HALF_TOPIC q 0    (op record: tag "d", body =
//!                                                                 the half's queue offset)
//! ```
//!
//! * [`HalfMessage`]: what the send path stores instead of a message with `TRAN_MSG=true`.
//!   With its transaction bits cleared the half is dispatched to the half topic's
//!   ConsumeQueue (which the check-back reads), never to the real topic's.
//! * [`end_message_transaction`] and [`op_record`]: what END_TRANSACTION
//!   ([`crate::processor::end_transaction`]) writes.
//! * [`check_transaction_state`]: CHECK_TRANSACTION_STATE (39) to a producer. *When* to ask
//!   and *whom* is decided in Python (`rmq.scheduling.transaction`), which scans the half
//!   queue against the op queue, re-puts each half it checks (counting checks in
//!   `TRANSACTION_CHECK_TIMES`) and keeps its progress as consumer offsets of
//!   [`CID_SYS_RMQ_TRANS`].

use bytes::Bytes;
use rmq_common::properties::{find, PropertyKey};
use rmq_common::record::MessageExt;
use rmq_common::sys_flag::{
    reset_transaction_value, transaction_value, TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED_TYPE,
};
use rmq_protocol::header::{CheckTransactionStateRequestHeader, SendMessageRequestHeader};
use rmq_protocol::{RemotingCommand, RequestCode};
use rmq_remoting::Connection;
use rmq_store::MessageToStore;

use crate::error::{HalfMessageError, TransactionError};
use crate::state::BrokerState;
use crate::topic_config::{TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC};

pub use rmq_common::topic::CID_SYS_RMQ_TRANS;
pub use rmq_common::trans_op::REMOVE_TAG;

/// Whether a sent message starts a transaction: `TRAN_MSG` is `true` (any case, as Java's
/// `Boolean.parseBoolean`), unless it is a retry with a delay level, which clients older than
/// 4.6.1 sent back with the property still set.
#[must_use]
pub fn is_half_message(properties: &[u8], reconsume_times: i32) -> bool {
    let prepared = find::TRANSACTION_PREPARED
        .find(properties)
        .is_some_and(|v| v.eq_ignore_ascii_case(b"true"));
    if !prepared || reconsume_times <= 0 {
        return prepared;
    }
    let delayed = find::DELAY_TIME_LEVEL
        .find(properties)
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.parse::<i32>().ok())
        .is_some_and(|level| level > 0);
    !delayed
}

/// A half message as the send path stores it (`parseHalfMessageInner`).
pub struct HalfMessage {
    /// The message's properties plus `REAL_TOPIC` and `REAL_QID`.
    properties: Vec<u8>,
}

impl HalfMessage {
    /// The half of a message sent to `topic` / `queue_id` with `properties` (encoded).
    #[must_use]
    pub fn new(properties: &[u8], topic: &str, queue_id: i32) -> Self {
        let mut p = Vec::with_capacity(properties.len() + topic.len() + 32);
        p.extend_from_slice(properties);
        if !p.is_empty() && !p.ends_with(b"\x02") {
            p.push(2);
        }
        for (name, value) in [
            (PropertyKey::REAL_TOPIC, topic.to_owned()),
            (PropertyKey::REAL_QUEUE_ID, queue_id.to_string()),
        ] {
            p.extend_from_slice(name.as_bytes());
            p.push(1);
            p.extend_from_slice(value.as_bytes());
            p.push(2);
        }
        Self { properties: p }
    }

    /// Redirect `msg` (the message as sent) to the half topic, queue 0, transaction bits
    /// cleared so that the half is dispatched to the half topic's ConsumeQueue.
    pub fn apply<'a>(&'a self, msg: &mut MessageToStore<'a>) {
        msg.topic = TRANS_HALF_TOPIC;
        msg.queue_id = 0;
        msg.properties = &self.properties;
        msg.sys_flag = reset_transaction_value(msg.sys_flag, TRANSACTION_NOT_TYPE);
    }
}

/// The send path's hook: `Some` half message to store instead of the message sent to
/// `h.topic` / `queue_id` with `properties` when it starts a transaction, `None` for an
/// ordinary message.
///
/// # Errors
/// [`TransactionError::Rejected`] when `rejectTransactionMessage` is set.
pub(crate) fn half_for_send(
    b: &BrokerState,
    h: &SendMessageRequestHeader,
    queue_id: i32,
    properties: &[u8],
) -> Result<Option<HalfMessage>, TransactionError> {
    if !is_half_message(properties, h.reconsume_times.unwrap_or(0)) {
        return Ok(None);
    }
    if b.config.reject_transaction_message {
        return Err(TransactionError::Rejected(b.config.broker_addr.ip()));
    }
    Ok(Some(HalfMessage::new(properties, &h.topic, queue_id)))
}

/// The batch send path's hook. RocketMQ refuses transactional batches; rmq stores a batch
/// whose header carries the TRANSACTION_PREPARED sys flag as one half message per entry (in
/// one append, so their half-queue offsets are consecutive), which lets a producer park many
/// messages in one request and end each transaction on its own. A batch without the flag must
/// not hold a transactional message: it would be delivered at once.
///
/// # Errors
/// A batch that mixes the two kinds; [`TransactionError::Rejected`] when
/// `rejectTransactionMessage` is set.
pub(crate) fn halves_for_batch<'p>(
    b: &BrokerState,
    h: &SendMessageRequestHeader,
    queue_id: i32,
    properties: impl Iterator<Item = &'p [u8]> + Clone,
) -> Result<Vec<HalfMessage>, TransactionError> {
    let flagged = transaction_value(h.sys_flag) == TRANSACTION_PREPARED_TYPE;
    let odd = properties
        .clone()
        .position(|p| is_half_message(p, h.reconsume_times.unwrap_or(0)) != flagged);
    match odd {
        None if !flagged => return Ok(Vec::new()),
        None => {}
        Some(i) if flagged => return Err(TransactionError::OrdinaryInTransactionalBatch(i)),
        Some(i) => return Err(TransactionError::TransactionalInOrdinaryBatch(i)),
    }
    let mut halves = Vec::new();
    for p in properties {
        halves.extend(half_for_send(b, h, queue_id, p)?);
    }
    Ok(halves)
}

/// The half message stored at `commit_log_offset` (`lookMessageByOffset`).
///
/// # Errors
/// Nothing there, a record that does not decode, or one outside the half topic.
pub fn look_half_message(
    b: &BrokerState,
    commit_log_offset: i64,
) -> Result<MessageExt, HalfMessageError> {
    let found = b
        .store
        .look_message_by_offset(commit_log_offset)
        .ok_or(HalfMessageError::NotFound(commit_log_offset))?;
    let record = Bytes::copy_from_slice(found.bytes());
    let msg = MessageExt::decode(&record).map_err(|e| HalfMessageError::Corrupt {
        offset: commit_log_offset,
        reason: e.to_string(),
    })?;
    if msg.topic != TRANS_HALF_TOPIC {
        return Err(HalfMessageError::NotHalf {
            offset: commit_log_offset,
            topic: msg.topic,
        });
    }
    Ok(msg)
}

/// The real topic and queue of a half message (`REAL_TOPIC`, `REAL_QID`).
fn real_destination(half: &MessageExt) -> Option<(String, i32)> {
    let topic = half.properties.get(PropertyKey::REAL_TOPIC)?;
    let queue_id = half
        .properties
        .get(PropertyKey::REAL_QUEUE_ID)?
        .parse()
        .ok()?;
    Some((topic.to_owned(), queue_id))
}

/// What a commit stores (`endMessageTransaction`): the half's real topic and queue, and its
/// properties without `REAL_TOPIC`, `REAL_QID` and `TRAN_MSG` (`PGROUP` stays).
/// `None` when the half lacks its real destination.
///
/// (RocketMQ 4.9 means to drop those three too, but clears them after it has built the
/// properties string it stores, so its committed messages still carry them.)
#[must_use]
pub fn end_message_transaction(half: &MessageExt) -> Option<(String, i32, String)> {
    let (topic, queue_id) = real_destination(half)?;
    let mut props = half.properties.clone();
    props.remove(PropertyKey::REAL_TOPIC);
    props.remove(PropertyKey::REAL_QUEUE_ID);
    props.remove(PropertyKey::TRANSACTION_PREPARED);
    Some((topic, queue_id, props.encode()))
}

/// The op record that marks `half` done (`addRemoveTagInTransactionOp`): topic
/// `RMQ_SYS_TRANS_OP_HALF_TOPIC`, the half's queue, tag `d`, body = the half's queue offset
/// as decimal text. Returns (topic, queue id, body, properties).
#[must_use]
pub fn op_record(half: &MessageExt) -> (&'static str, i32, String, String) {
    let (body, properties) = rmq_common::trans_op::encode(half.queue_offset);
    (TRANS_OP_HALF_TOPIC, half.queue_id, body, properties)
}

/// Send CHECK_TRANSACTION_STATE (39, oneway) about the half message at `commit_log_offset`
/// over `conn` (`sendCheckMessage`): the header names the half (its queue and CommitLog
/// offsets, offset id, unique id as transaction id); the body is the half's record with its
/// real topic and queue, which the producer decodes and hands to its check listener.
///
/// Returns `Ok(false)` when the connection is closed.
///
/// # Errors
/// No half message at that offset.
pub async fn check_transaction_state(
    b: &BrokerState,
    conn: &Connection,
    commit_log_offset: i64,
) -> Result<bool, HalfMessageError> {
    let mut msg = look_half_message(b, commit_log_offset)?;
    let uniq = msg.uniq_msg_id().map(str::to_owned);
    let header = CheckTransactionStateRequestHeader {
        tran_state_table_offset: msg.queue_offset,
        commit_log_offset: msg.commit_log_offset,
        msg_id: uniq.clone(),
        transaction_id: uniq,
        offset_msg_id: Some(msg.msg_id.clone()),
        broker_name: None,
    };
    if let Some((topic, queue_id)) = real_destination(&msg) {
        msg.topic = topic;
        msg.queue_id = queue_id;
    }
    let record = msg.to_record().map_err(|e| HalfMessageError::Corrupt {
        offset: commit_log_offset,
        reason: e.to_string(),
    })?;
    let cmd = RemotingCommand::request_with_header(RequestCode::CHECK_TRANSACTION_STATE.0, &header)
        .with_body(record);
    Ok(conn.oneway(cmd).await.is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::Properties;

    #[test]
    fn tran_msg_marks_a_half_message_unless_an_old_client_sent_it_back_delayed() {
        assert!(is_half_message(b"TRAN_MSG\x01true\x02PGROUP\x01g\x02", 0));
        assert!(is_half_message(b"TRAN_MSG\x01TRUE\x02", 0));
        assert!(!is_half_message(b"TRAN_MSG\x01false\x02", 0));
        assert!(!is_half_message(b"KEYS\x01k\x02", 0));
        assert!(!is_half_message(b"TRAN_MSG\x01true\x02DELAY\x013\x02", 1));
        assert!(is_half_message(b"TRAN_MSG\x01true\x02DELAY\x013\x02", 0));
    }

    #[test]
    fn half_properties_name_the_real_destination() {
        let h = HalfMessage::new(b"TRAN_MSG\x01true\x02PGROUP\x01g\x02", "T", 3);
        let p = Properties::decode(std::str::from_utf8(&h.properties).unwrap());
        assert_eq!(p.get("REAL_TOPIC"), Some("T"));
        assert_eq!(p.get("REAL_QID"), Some("3"));
        assert_eq!(p.get("PGROUP"), Some("g"));
        let unterminated = HalfMessage::new(b"A\x01b", "T", 0);
        assert_eq!(&unterminated.properties[..4], b"A\x01b\x02");
    }
}
