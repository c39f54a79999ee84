//! Broker errors, and the one place an error becomes a response code and remark.
//!
//! Domain code returns typed errors: [`SendError`] (the send path's checks and its retry /
//! DLQ routing, CONSUMER_SEND_MSG_BACK), [`TransactionError`] (half messages,
//! END_TRANSACTION), the store's [`StoreError`]. A processor turns them into a response
//! at its edge with [`RequestError::to_response`] (through `processor::error_response`):
//! the code is chosen here, the remark is the error's `Display`, worded as RocketMQ's
//! remarks are (clients and tests match on them).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use rmq_protocol::{ProtocolError, ResponseCode};
use rmq_store::StoreError;

/// Errors of the broker's own machinery (persistence, start-up).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// Reading or writing a config file failed.
    #[error("{context} {}: {source}", path.display())]
    Io {
        /// What was being done.
        context: &'static str,
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A config file holds something that is not its JSON.
    #[error("config file {} is not valid: {reason}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A `tls.server.*` setting cannot be used (names the key and file).
    #[error(transparent)]
    Tls(#[from] rmq_remoting::tls::TlsError),
    /// `aclEnable=true` and the ACL file is missing or bad.
    #[error("{0}")]
    Acl(String),
}

/// Why a send (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE) or a send-back
/// (CONSUMER_SEND_MSG_BACK) was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SendError {
    /// `brokerPermission` has no write bit.
    #[error("the broker[{0}] sending message is forbidden")]
    BrokerNotWritable(SocketAddr),
    /// The topic name is not legal (`TopicValidator`).
    #[error("{0}")]
    IllegalTopic(String),
    /// The topic is `TBW102`, the auto-create template.
    #[error("the topic[{0}] is conflict with system reserved words.")]
    ReservedTopic(String),
    /// A system topic producers may not send to.
    #[error("Sending message to topic[{0}] is forbidden.")]
    TopicNotAllowed(String),
    /// The topic does not exist and may not be created.
    #[error(
        "topic[{topic}] not exist, apply first please! (autoCreateTopicEnable={auto_create}, \
         default topic {default_topic})"
    )]
    TopicNotExist {
        /// The topic sent to.
        topic: String,
        /// `autoCreateTopicEnable`.
        auto_create: bool,
        /// The header's default (template) topic.
        default_topic: String,
    },
    /// The queue id is beyond the topic's write queues.
    #[error(
        "request queueId[{queue_id}] is illegal, topic {topic} has {write_queue_nums} write queues"
    )]
    IllegalQueueId {
        /// The queue asked for.
        queue_id: i32,
        /// The topic.
        topic: String,
        /// Its write queues.
        write_queue_nums: i32,
    },
    /// The topic (or the group's retry topic) has no write permission.
    #[error("the topic[{0}] sending message is forbidden")]
    TopicNotWritable(String),
    /// The consumer group does not exist and may not be created.
    #[error(
        "subscription group not exist, {0} (autoCreateSubscriptionGroup is false: create the \
         group first, e.g. with updateSubGroup)"
    )]
    GroupNotExist(String),
    /// A batch sent to a retry topic.
    #[error("batch request does not support retry group {0} (send retries one at a time)")]
    BatchToRetryTopic(String),
    /// The batch body is not a sequence of batch entries.
    #[error("the batch body does not decode: {0}")]
    BadBatch(ProtocolError),
    /// A batch without messages.
    #[error("the batch is empty")]
    EmptyBatch,
    /// A body over `maxMessageSize`.
    #[error("the message body size over max value, MAX: {max} (body is {len} bytes)")]
    BodyTooLarge {
        /// `maxMessageSize`.
        max: usize,
        /// The body's size.
        len: usize,
    },
    /// The store appended nothing.
    #[error("nothing to store")]
    NothingStored,
    /// Send-back: no message starts at the CommitLog offset.
    #[error(
        "look message by offset failed, {0} (no message starts there: it was deleted with its \
         CommitLog file, or the offset is wrong)"
    )]
    MessageNotFound(i64),
    /// Send-back: the record at the offset is not a message.
    #[error("look message by offset failed, {0}")]
    MessageUnreadable(i64),
    /// Send-back: the copy for the retry or dead-letter topic could not be stored.
    #[error("storing the message back into {topic} failed: {source}")]
    StoreBack {
        /// `%RETRY%<group>` or `%DLQ%<group>`.
        topic: String,
        /// The store's error.
        #[source]
        source: StoreError,
    },
}

impl SendError {
    fn code(&self) -> ResponseCode {
        match self {
            Self::BrokerNotWritable(_) | Self::TopicNotAllowed(_) | Self::TopicNotWritable(_) => {
                ResponseCode::NO_PERMISSION
            }
            Self::TopicNotExist { .. } => ResponseCode::TOPIC_NOT_EXIST,
            Self::GroupNotExist(_) => ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            Self::BatchToRetryTopic(_)
            | Self::BadBatch(_)
            | Self::EmptyBatch
            | Self::BodyTooLarge { .. }
            | Self::NothingStored => ResponseCode::MESSAGE_ILLEGAL,
            Self::IllegalTopic(_)
            | Self::ReservedTopic(_)
            | Self::IllegalQueueId { .. }
            | Self::MessageNotFound(_)
            | Self::MessageUnreadable(_)
            | Self::StoreBack { .. } => ResponseCode::SYSTEM_ERROR,
        }
    }
}

/// Why a transaction step could not use the record at a CommitLog offset.
#[derive(Debug, thiserror::Error)]
pub enum HalfMessageError {
    /// Nothing readable starts there (never written, or the file is gone).
    #[error("no message at commit log offset {0} (find prepared transaction message failed)")]
    NotFound(i64),
    /// The record there does not decode.
    #[error("the message at commit log offset {offset} does not decode: {reason}")]
    Corrupt {
        /// CommitLog offset.
        offset: i64,
        /// What the decoder said.
        reason: String,
    },
    /// The record there is not in the half topic (a wrong offset from the client).
    #[error("the message at commit log offset {offset} is in topic {topic}, not a half message")]
    NotHalf {
        /// CommitLog offset.
        offset: i64,
        /// Its topic.
        topic: String,
    },
}

/// Why a transactional send or an END_TRANSACTION was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransactionError {
    /// `rejectTransactionMessage` is set.
    #[error(
        "the broker[{0}] sending transaction message is forbidden (rejectTransactionMessage=true)"
    )]
    Rejected(IpAddr),
    /// A batch flagged as a transaction holds an ordinary message (its index).
    #[error(
        "the batch is flagged as a transaction but its message {0} is not transactional (no \
         TRAN_MSG=true): a transactional batch holds transactional messages only"
    )]
    OrdinaryInTransactionalBatch(usize),
    /// A batch not flagged as a transaction holds a transactional message (its index).
    #[error(
        "message {0} of the batch is transactional (TRAN_MSG=true) but the batch is not flagged \
         as a transaction (TRANSACTION_PREPARED sys flag); send it on its own"
    )]
    TransactionalInOrdinaryBatch(usize),
    /// END_TRANSACTION on a slave.
    #[error("this broker is a slave; end transactions on its master")]
    Slave,
    /// The half message the request points at cannot be used.
    #[error(transparent)]
    HalfMessage(#[from] HalfMessageError),
    /// The header's producer group is not the half's (`checkPrepareMessage`).
    #[error("The producer group wrong: the half message belongs to {half:?}, not {request:?}")]
    WrongProducerGroup {
        /// The half's `PGROUP`.
        half: String,
        /// The header's.
        request: String,
    },
    /// The header's queue offset is not the half's.
    #[error(
        "The transaction state table offset wrong: the half message is at {half}, not {request}"
    )]
    WrongQueueOffset {
        /// The half's queue offset.
        half: i64,
        /// The header's `tranStateTableOffset`.
        request: i64,
    },
    /// The header's CommitLog offset is not the half's.
    #[error("The commit log offset wrong: the half message is at {half}, not {request}")]
    WrongCommitLogOffset {
        /// The half's CommitLog offset.
        half: i64,
        /// The header's.
        request: i64,
    },
    /// The half lacks `REAL_TOPIC` / `REAL_QID`.
    #[error("the half message at commit log offset {0} has no REAL_TOPIC/REAL_QID")]
    NoRealDestination(i64),
}

impl TransactionError {
    fn code(&self) -> ResponseCode {
        match self {
            Self::Rejected(_) => ResponseCode::NO_PERMISSION,
            Self::OrdinaryInTransactionalBatch(_) | Self::TransactionalInOrdinaryBatch(_) => {
                ResponseCode::MESSAGE_ILLEGAL
            }
            Self::Slave => ResponseCode::SLAVE_NOT_AVAILABLE,
            Self::HalfMessage(_)
            | Self::WrongProducerGroup { .. }
            | Self::WrongQueueOffset { .. }
            | Self::WrongCommitLogOffset { .. }
            | Self::NoRealDestination(_) => ResponseCode::SYSTEM_ERROR,
        }
    }
}

/// Any error a request can end with: what [`to_response`](Self::to_response) maps.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// The request header does not decode (Java's `RemotingCommandException`).
    #[error(transparent)]
    BadHeader(#[from] ProtocolError),
    /// A send or send-back was refused.
    #[error(transparent)]
    Send(#[from] SendError),
    /// A transaction step was refused.
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A header field that counts something is negative.
    #[error("{field} is {value} in the request header: it must not be negative")]
    NegativeCount {
        /// The header field (RocketMQ's name).
        field: &'static str,
        /// Its value.
        value: i64,
    },
}

impl RequestError {
    /// `value` of the header field `field` as a count, or [`RequestError::NegativeCount`].
    ///
    /// # Errors
    /// `value` is negative.
    pub fn count(field: &'static str, value: i32) -> Result<usize, Self> {
        usize::try_from(value).map_err(|_| Self::NegativeCount {
            field,
            value: value.into(),
        })
    }
}

impl From<HalfMessageError> for RequestError {
    fn from(e: HalfMessageError) -> Self {
        Self::Transaction(e.into())
    }
}

impl RequestError {
    /// The response code and remark of this error: the one mapping of the crate.
    #[must_use]
    pub fn to_response(&self) -> (ResponseCode, String) {
        let code = match self {
            Self::BadHeader(_) | Self::NegativeCount { .. } => ResponseCode::SYSTEM_ERROR,
            Self::Send(e) => e.code(),
            Self::Transaction(e) => e.code(),
            Self::Store(e) => store_error_code(e),
        };
        (code, self.to_string())
    }
}

/// The response code of a failed put (RocketMQ's `handlePutMessageResult`).
fn store_error_code(e: &StoreError) -> ResponseCode {
    match e {
        StoreError::MessageIllegal(_)
        | StoreError::PropertiesSizeExceeded(_)
        | StoreError::WheelTimerMsgIllegal { .. } => ResponseCode::MESSAGE_ILLEGAL,
        StoreError::ServiceNotAvailable(_) => ResponseCode::SERVICE_NOT_AVAILABLE,
        StoreError::OsPageCacheBusy(_) | StoreError::NoBufferInStorePool => {
            ResponseCode::SYSTEM_BUSY
        }
        _ => ResponseCode::SYSTEM_ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapped(e: impl Into<RequestError>) -> (ResponseCode, String) {
        e.into().to_response()
    }

    #[test]
    fn store_mapping_is_pinned() {
        let c = |e: StoreError| mapped(e).0;
        assert_eq!(
            c(StoreError::MessageIllegal("x".into())),
            ResponseCode::MESSAGE_ILLEGAL
        );
        assert_eq!(
            c(StoreError::PropertiesSizeExceeded(40_000)),
            ResponseCode::MESSAGE_ILLEGAL
        );
        assert_eq!(
            c(StoreError::ServiceNotAvailable("full".into())),
            ResponseCode::SERVICE_NOT_AVAILABLE
        );
        assert_eq!(
            c(StoreError::OsPageCacheBusy(1200)),
            ResponseCode::SYSTEM_BUSY
        );
        assert_eq!(
            c(StoreError::NoBufferInStorePool),
            ResponseCode::SYSTEM_BUSY
        );
        assert_eq!(
            c(StoreError::FlushFailed("eio".into())),
            ResponseCode::SYSTEM_ERROR
        );
    }

    #[test]
    fn refused_timer_messages_keep_rocketmq_5s_code_and_remark() {
        let e = StoreError::WheelTimerMsgIllegal {
            max_delay_ms: 259_200_000,
        };
        assert_eq!(
            mapped(e),
            (
                ResponseCode::MESSAGE_ILLEGAL,
                "timer message illegal, the delay time should not be bigger than the max delay \
                 259200000ms; or if set del msg, the delay time should be bigger than the current \
                 time"
                    .to_string()
            )
        );
        assert_eq!(
            mapped(StoreError::WheelTimerNotEnable),
            (
                ResponseCode::SYSTEM_ERROR,
                "accurate timer message is not enabled, timerWheelEnable is false".to_string()
            )
        );
    }

    #[test]
    fn send_refusals_map_to_rocketmq_codes() {
        let addr: SocketAddr = "127.0.0.1:10911".parse().unwrap();
        assert_eq!(
            mapped(SendError::BrokerNotWritable(addr)),
            (
                ResponseCode::NO_PERMISSION,
                "the broker[127.0.0.1:10911] sending message is forbidden".to_string()
            )
        );
        assert_eq!(
            mapped(SendError::TopicNotExist {
                topic: "T".into(),
                auto_create: false,
                default_topic: "TBW102".into(),
            }),
            (
                ResponseCode::TOPIC_NOT_EXIST,
                "topic[T] not exist, apply first please! (autoCreateTopicEnable=false, default \
                 topic TBW102)"
                    .to_string()
            )
        );
        assert_eq!(
            mapped(SendError::GroupNotExist("G".into())).0,
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST
        );
        assert_eq!(
            mapped(SendError::EmptyBatch).0,
            ResponseCode::MESSAGE_ILLEGAL
        );
        // A send-back that cannot be stored is a SYSTEM_ERROR whatever the store said.
        let back = SendError::StoreBack {
            topic: "%RETRY%G".into(),
            source: StoreError::OsPageCacheBusy(1200),
        };
        assert_eq!(mapped(back).0, ResponseCode::SYSTEM_ERROR);
    }

    #[test]
    fn transaction_refusals_map_to_rocketmq_codes() {
        assert_eq!(
            mapped(TransactionError::Rejected([10, 0, 0, 1].into())),
            (
                ResponseCode::NO_PERMISSION,
                "the broker[10.0.0.1] sending transaction message is forbidden \
                 (rejectTransactionMessage=true)"
                    .to_string()
            )
        );
        assert_eq!(
            mapped(TransactionError::Slave).0,
            ResponseCode::SLAVE_NOT_AVAILABLE
        );
        assert_eq!(
            mapped(HalfMessageError::NotFound(7)),
            (
                ResponseCode::SYSTEM_ERROR,
                "no message at commit log offset 7 (find prepared transaction message failed)"
                    .to_string()
            )
        );
        assert_eq!(
            mapped(TransactionError::TransactionalInOrdinaryBatch(2)).0,
            ResponseCode::MESSAGE_ILLEGAL
        );
    }
}
