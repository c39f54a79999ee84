//! The wire side of transactional sends (`DefaultMQProducerImpl.endTransaction` and the
//! answer to `checkTransactionState`): END_TRANSACTION, oneway, to the broker that holds the
//! half message. Sending the half message is an ordinary send of a message with
//! `TRAN_MSG=true` (the producer sets the prepared sys flag); running the local transaction and
//! the check listener is the caller's business (Python's `rmq.TransactionProducer`).

use rmq_common::sys_flag::{
    TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE,
};
use rmq_protocol::body::MessageQueue;
use rmq_protocol::header::{CheckTransactionStateRequestHeader, EndTransactionRequestHeader};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::error::{ClientError, Result};
use crate::message::SendResult;
use crate::producer::Producer;

/// How a local transaction ended (`LocalTransactionState`; `UNKNOW` is RocketMQ's spelling).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalTransactionState {
    /// Deliver the message.
    CommitMessage,
    /// Drop the message.
    RollbackMessage,
    /// Not decided yet: the broker will ask again (CHECK_TRANSACTION_STATE).
    Unknow,
}

impl LocalTransactionState {
    /// Every state with its RocketMQ name.
    pub const ALL: [(&'static str, Self); 3] = [
        ("COMMIT_MESSAGE", Self::CommitMessage),
        ("ROLLBACK_MESSAGE", Self::RollbackMessage),
        ("UNKNOW", Self::Unknow),
    ];

    /// RocketMQ's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::CommitMessage => "COMMIT_MESSAGE",
            Self::RollbackMessage => "ROLLBACK_MESSAGE",
            Self::Unknow => "UNKNOW",
        }
    }

    /// The state named `name` (as [`name`](Self::name) spells it).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
    }

    /// The `commitOrRollback` value of END_TRANSACTION (`MessageSysFlag` transaction types).
    #[must_use]
    pub const fn commit_or_rollback(self) -> i32 {
        match self {
            Self::CommitMessage => TRANSACTION_COMMIT_TYPE,
            Self::RollbackMessage => TRANSACTION_ROLLBACK_TYPE,
            Self::Unknow => TRANSACTION_NOT_TYPE,
        }
    }
}

/// Where a half message went, from its [`SendResult`]: what END_TRANSACTION names it by.
#[derive(Debug, Clone)]
pub struct HalfMessageSent {
    /// The queue it was sent to (its broker holds the half).
    pub queue: MessageQueue,
    /// The broker's offset id (store host + CommitLog offset of the half).
    pub offset_msg_id: String,
    /// The client's unique id.
    pub msg_id: String,
    /// The half's offset in the half topic's queue (`tranStateTableOffset`).
    pub queue_offset: i64,
    /// The transaction id the broker returned, if any.
    pub transaction_id: Option<String>,
}

impl From<&SendResult> for HalfMessageSent {
    fn from(r: &SendResult) -> Self {
        Self {
            queue: r.queue.clone(),
            offset_msg_id: r.offset_msg_id.clone(),
            msg_id: r.msg_id.clone(),
            queue_offset: r.queue_offset,
            transaction_id: r.transaction_id.clone(),
        }
    }
}

/// The half messages one transactional batch send parked (rmq's extension: one
/// SEND_BATCH_MESSAGE flagged as a transaction), from its [`SendResult`].
#[derive(Debug, Clone)]
pub struct HalfBatchSent {
    /// The queue the batch was sent to (its broker holds the halves).
    pub queue: MessageQueue,
    /// The halves' offset ids, comma separated, in batch order.
    pub offset_msg_ids: String,
    /// The halves' unique ids, comma separated, in batch order.
    pub msg_ids: String,
    /// The first half's offset in the half topic's queue; the others follow it.
    pub queue_offset: i64,
}

impl Producer {
    /// The address of the master that holds halves sent to `queue`: from the route, or from
    /// the offset id `id` (which names the store host) when the route does not know it.
    async fn half_broker_addr(&self, queue: &MessageQueue, id: &str) -> Result<(String, i64)> {
        let (store_host, commit_log_offset) = rmq_common::decode_offset_msg_id(id)
            .map_err(|e| ClientError::IllegalMessage(format!("offset message id {id:?}: {e}")))?;
        let broker_name = &queue.broker_name;
        let addr = match self.instance().master_addr(broker_name) {
            Ok(a) => a,
            Err(_) => match self.instance().update_route(&queue.topic).await {
                Ok(_) => self.instance().master_addr(broker_name)?,
                Err(_) => store_host.to_string(),
            },
        };
        Ok((addr, commit_log_offset))
    }

    /// End every half of `sent` as `state` says, each with its own END_TRANSACTION request:
    /// the halves of one queue one after the other, in order (so a commit keeps the queue's
    /// order), the queues in parallel. When this returns `Ok`, every broker has stored the
    /// outcome. Returns how many halves were ended.
    ///
    /// # Errors
    /// Ids that do not decode, or the first failed END_TRANSACTION (the other queues are still
    /// ended; the broker checks back the halves left open).
    pub async fn end_transactions(
        &self,
        sent: &[HalfBatchSent],
        state: LocalTransactionState,
    ) -> Result<usize> {
        let mut per_queue: Vec<(MessageQueue, String, Vec<RemotingCommand>)> = Vec::new();
        for batch in sent {
            let offsets: Vec<&str> = batch.offset_msg_ids.split(',').collect();
            let ids: Vec<&str> = batch.msg_ids.split(',').collect();
            if offsets.len() != ids.len() {
                return Err(ClientError::IllegalMessage(format!(
                    "{} offset ids but {} message ids for one batch of halves",
                    offsets.len(),
                    ids.len()
                )));
            }
            let slot = if let Some(i) = per_queue.iter().position(|(q, _, _)| *q == batch.queue) {
                i
            } else {
                let (addr, _) = self.half_broker_addr(&batch.queue, offsets[0]).await?;
                per_queue.push((batch.queue.clone(), addr, Vec::new()));
                per_queue.len() - 1
            };
            let tran_state_offsets = batch.queue_offset..;
            for (tran_state_table_offset, (offset_id, msg_id)) in
                tran_state_offsets.zip(offsets.iter().zip(&ids))
            {
                let (_, commit_log_offset) =
                    rmq_common::decode_offset_msg_id(offset_id).map_err(|e| {
                        ClientError::IllegalMessage(format!("offset message id {offset_id:?}: {e}"))
                    })?;
                let header = EndTransactionRequestHeader {
                    producer_group: self.config().group.clone(),
                    tran_state_table_offset,
                    commit_log_offset,
                    commit_or_rollback: state.commit_or_rollback(),
                    from_transaction_check: false,
                    msg_id: (*msg_id).to_owned(),
                    transaction_id: Some((*msg_id).to_owned()),
                    broker_name: Some(batch.queue.broker_name.clone()),
                };
                per_queue[slot].2.push(RemotingCommand::request_with_header(
                    RequestCode::END_TRANSACTION.0,
                    &header,
                ));
            }
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (_, addr, commands) in per_queue {
            let (instance, timeout) = (self.instance().clone(), self.config().send_timeout);
            tasks.spawn(async move {
                let mut ended = 0;
                for cmd in commands {
                    instance.invoke_ok(&addr, cmd, timeout).await?;
                    ended += 1;
                }
                Ok::<usize, ClientError>(ended)
            });
        }
        let (mut ended, mut first_error) = (0, None);
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(n)) => ended += n,
                Ok(Err(e)) => {
                    first_error.get_or_insert(e);
                }
                // Only a runtime shutting down cancels the tasks.
                Err(_) => {
                    first_error.get_or_insert(ClientError::Shutdown);
                }
            }
        }
        first_error.map_or(Ok(ended), Err)
    }

    /// `endTransaction`: tell the broker holding `sent`'s half message how the local
    /// transaction ended (END_TRANSACTION, oneway). `remark` travels with it (RocketMQ puts
    /// the local transaction's exception there).
    ///
    /// # Errors
    /// An offset id that does not decode, no address for the broker, or a failed write.
    pub async fn end_transaction(
        &self,
        sent: &HalfMessageSent,
        state: LocalTransactionState,
        remark: Option<String>,
    ) -> Result<()> {
        let id = if sent.offset_msg_id.is_empty() {
            &sent.msg_id
        } else {
            &sent.offset_msg_id
        };
        let (addr, commit_log_offset) = self.half_broker_addr(&sent.queue, id).await?;
        let broker_name = &sent.queue.broker_name;
        let header = EndTransactionRequestHeader {
            producer_group: self.config().group.clone(),
            tran_state_table_offset: sent.queue_offset,
            commit_log_offset,
            commit_or_rollback: state.commit_or_rollback(),
            from_transaction_check: false,
            msg_id: sent.msg_id.clone(),
            transaction_id: sent.transaction_id.clone(),
            broker_name: Some(broker_name.clone()),
        };
        self.send_end_transaction(&addr, &header, remark).await
    }

    /// Answer a CHECK_TRANSACTION_STATE that `broker_addr` sent (`checkTransactionState`):
    /// END_TRANSACTION, oneway, with `fromTransactionCheck`. `msg_id` is the checked
    /// message's unique id (its offset id when it has none).
    ///
    /// # Errors
    /// A failed write.
    pub async fn end_transaction_from_check(
        &self,
        broker_addr: &str,
        check: &CheckTransactionStateRequestHeader,
        msg_id: &str,
        state: LocalTransactionState,
        remark: Option<String>,
    ) -> Result<()> {
        let header = EndTransactionRequestHeader {
            producer_group: self.config().group.clone(),
            tran_state_table_offset: check.tran_state_table_offset,
            commit_log_offset: check.commit_log_offset,
            commit_or_rollback: state.commit_or_rollback(),
            from_transaction_check: true,
            msg_id: msg_id.to_owned(),
            transaction_id: check.transaction_id.clone(),
            broker_name: check.broker_name.clone(),
        };
        self.send_end_transaction(broker_addr, &header, remark)
            .await
    }

    async fn send_end_transaction(
        &self,
        addr: &str,
        header: &EndTransactionRequestHeader,
        remark: Option<String>,
    ) -> Result<()> {
        let mut cmd = RemotingCommand::request_with_header(RequestCode::END_TRANSACTION.0, header);
        cmd.remark = remark;
        self.instance().invoke_oneway(addr, cmd).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_map_to_rocketmq_names_and_sys_flag_types() {
        for (name, s) in LocalTransactionState::ALL {
            assert_eq!(s.name(), name);
            assert_eq!(LocalTransactionState::from_name(name), Some(s));
        }
        assert_eq!(LocalTransactionState::from_name("UNKNOWN"), None);
        assert_eq!(LocalTransactionState::CommitMessage.commit_or_rollback(), 8);
        assert_eq!(
            LocalTransactionState::RollbackMessage.commit_or_rollback(),
            12
        );
        assert_eq!(LocalTransactionState::Unknow.commit_or_rollback(), 0);
    }
}
