//! What a consumer answers to the calls an admin makes through the broker:
//! `ConsumerRunningInfo` (GET_CONSUMER_RUNNING_INFO, `mqadmin consumerStatus`: its
//! properties, subscriptions, the queues it holds and its consume rates) and
//! `ConsumeMessageDirectlyResult` (CONSUME_MESSAGE_DIRECTLY, `mqadmin queryMsgById -d`).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json, MessageQueueMap, RemotingJson, SubscriptionData};
use crate::error::{ProtocolError, Result};

/// `ConsumerRunningInfo.PROP_NAMESERVER_ADDR`.
pub const PROP_NAMESERVER_ADDR: &str = "PROP_NAMESERVER_ADDR";
/// `ConsumerRunningInfo.PROP_THREADPOOL_CORE_SIZE`.
pub const PROP_THREADPOOL_CORE_SIZE: &str = "PROP_THREADPOOL_CORE_SIZE";
/// `ConsumerRunningInfo.PROP_CONSUME_ORDERLY` (Java's value has no underscore).
pub const PROP_CONSUME_ORDERLY: &str = "PROP_CONSUMEORDERLY";
/// `ConsumerRunningInfo.PROP_CONSUME_TYPE`.
pub const PROP_CONSUME_TYPE: &str = "PROP_CONSUME_TYPE";
/// `ConsumerRunningInfo.PROP_CLIENT_VERSION`.
pub const PROP_CLIENT_VERSION: &str = "PROP_CLIENT_VERSION";
/// `ConsumerRunningInfo.PROP_CONSUMER_START_TIMESTAMP`.
pub const PROP_CONSUMER_START_TIMESTAMP: &str = "PROP_CONSUMER_START_TIMESTAMP";

/// `ProcessQueueInfo`: one held queue as the consumer sees it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ProcessQueueInfo {
    /// Messages pulled and not yet consumed.
    pub cached_msg_count: i32,
    /// Highest queue offset among them.
    pub cached_msg_max_offset: i64,
    /// Lowest queue offset among them.
    pub cached_msg_min_offset: i64,
    /// Their bodies' size, MiB.
    #[serde(rename = "cachedMsgSizeInMiB")]
    pub cached_msg_size_in_mib: i32,
    /// The offset the consumer will commit.
    pub commit_offset: i64,
    /// The queue was taken away (Java's spelling).
    pub droped: bool,
    /// Last time a batch was consumed (ms).
    pub last_consume_timestamp: i64,
    /// Last time the broker lock was taken (ms; orderly).
    pub last_lock_timestamp: i64,
    /// Last pull (ms).
    pub last_pull_timestamp: i64,
    /// The broker lock is held (orderly).
    pub locked: bool,
    /// Orderly transactional consumption (unused).
    pub transaction_msg_count: i32,
    /// Orderly transactional consumption (unused).
    pub transaction_msg_max_offset: i64,
    /// Orderly transactional consumption (unused).
    pub transaction_msg_min_offset: i64,
    /// Unlock attempts (orderly).
    pub try_unlock_times: i64,
}

/// `ConsumeStatus`: a topic's pull and consume rates in one client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ConsumeStatus {
    /// Messages that failed in the last hour.
    #[serde(rename = "consumeFailedMsgs")]
    pub consume_failed_msgs: i64,
    /// Failed messages per second.
    #[serde(rename = "consumeFailedTPS")]
    pub consume_failed_tps: f64,
    /// Consumed messages per second.
    #[serde(rename = "consumeOKTPS")]
    pub consume_ok_tps: f64,
    /// Mean consume time (ms).
    #[serde(rename = "consumeRT")]
    pub consume_rt: f64,
    /// Mean pull time (ms).
    #[serde(rename = "pullRT")]
    pub pull_rt: f64,
    /// Pulled messages per second.
    #[serde(rename = "pullTPS")]
    pub pull_tps: f64,
}

/// `ConsumerRunningInfo` (GET_CONSUMER_RUNNING_INFO, 307).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerRunningInfo {
    /// Thread stacks, when asked for (`jstackEnable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jstack: Option<String>,
    /// The queues held, by queue.
    #[serde(default)]
    pub mq_table: MessageQueueMap<ProcessQueueInfo>,
    /// The consumer's settings and the `PROP_*` keys.
    #[serde(default, deserialize_with = "null_default")]
    pub properties: BTreeMap<String, String>,
    /// Rates per subscribed topic.
    #[serde(default, deserialize_with = "null_default")]
    pub status_table: BTreeMap<String, ConsumeStatus>,
    /// Subscriptions (Java's `TreeSet`: by topic, then expression).
    #[serde(default, deserialize_with = "null_default")]
    pub subscription_set: Vec<SubscriptionData>,
}

impl RemotingJson for ConsumerRunningInfo {
    const TYPE_NAME: &'static str = "ConsumerRunningInfo";

    /// fastjson's form: `mqTable` with the queue objects as keys, as a Java client writes it
    /// and as Java's `ConsumerRunningInfo.decode` reads it back.
    fn to_json_bytes(&self) -> Result<Bytes> {
        let err = |e: serde_json::Error| ProtocolError::Unencodable {
            what: Self::TYPE_NAME,
            reason: e.to_string(),
        };
        let mut out = Vec::with_capacity(512 + 400 * self.mq_table.0.len());
        out.push(b'{');
        if let Some(jstack) = &self.jstack {
            out.extend_from_slice(b"\"jstack\":");
            serde_json::to_writer(&mut out, jstack).map_err(err)?;
            out.push(b',');
        }
        out.extend_from_slice(b"\"mqTable\":");
        self.mq_table.write_fastjson(&mut out)?;
        out.extend_from_slice(b",\"properties\":");
        serde_json::to_writer(&mut out, &self.properties).map_err(err)?;
        out.extend_from_slice(b",\"statusTable\":");
        serde_json::to_writer(&mut out, &self.status_table).map_err(err)?;
        out.extend_from_slice(b",\"subscriptionSet\":");
        serde_json::to_writer(&mut out, &self.subscription_set).map_err(err)?;
        out.push(b'}');
        Ok(Bytes::from(out))
    }
}

/// `CMResult`: how a directly consumed message went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CmResult {
    /// Consumed.
    #[default]
    CrSuccess,
    /// The listener asked to consume it later.
    CrLater,
    /// Transactional: rolled back.
    CrRollback,
    /// Transactional: committed.
    CrCommit,
    /// The listener raised.
    CrThrowException,
    /// The listener returned nothing.
    CrReturnNull,
}

impl CmResult {
    /// Java's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::CrSuccess => "CR_SUCCESS",
            Self::CrLater => "CR_LATER",
            Self::CrRollback => "CR_ROLLBACK",
            Self::CrCommit => "CR_COMMIT",
            Self::CrThrowException => "CR_THROW_EXCEPTION",
            Self::CrReturnNull => "CR_RETURN_NULL",
        }
    }

    /// The result named `name` (Java's name).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        [
            Self::CrSuccess,
            Self::CrLater,
            Self::CrRollback,
            Self::CrCommit,
            Self::CrThrowException,
            Self::CrReturnNull,
        ]
        .into_iter()
        .find(|r| r.name() == name)
    }
}

/// `ConsumeMessageDirectlyResult` (CONSUME_MESSAGE_DIRECTLY, 309).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeMessageDirectlyResult {
    /// Offsets are committed by the consumer as usual.
    #[serde(default)]
    pub auto_commit: bool,
    /// How it went.
    #[serde(default)]
    pub consume_result: CmResult,
    /// The consumer is orderly.
    #[serde(default)]
    pub order: bool,
    /// Why (the exception, for CR_THROW_EXCEPTION).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remark: Option<String>,
    /// Time the listener took (ms; Java's spelling).
    #[serde(default)]
    pub spent_time_mills: i64,
}

remoting_json!(
    ProcessQueueInfo,
    ConsumeStatus,
    ConsumeMessageDirectlyResult
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::MessageQueue;

    #[test]
    fn running_info_writes_object_keys_and_reads_java() {
        let mut info = ConsumerRunningInfo::default();
        info.properties
            .insert(PROP_CONSUME_TYPE.into(), "CONSUME_PASSIVELY".into());
        info.mq_table.0.insert(
            MessageQueue::new("T", "b", 1),
            ProcessQueueInfo {
                commit_offset: 7,
                cached_msg_size_in_mib: 2,
                ..ProcessQueueInfo::default()
            },
        );
        info.status_table.insert(
            "T".into(),
            ConsumeStatus {
                consume_ok_tps: 1.5,
                ..ConsumeStatus::default()
            },
        );
        let bytes = info.to_json_bytes().unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(text.starts_with(
            r#"{"mqTable":{{"brokerName":"b","queueId":1,"topic":"T"}:{"cachedMsgCount":0,"#
        ));
        assert!(text.contains(r#""cachedMsgSizeInMiB":2,"commitOffset":7,"droped":false"#));
        assert!(text.contains(r#""consumeOKTPS":1.5"#));
        assert!(!text.contains("jstack"));
        // What Java's fastjson reads, ours reads back (object keys and all).
        assert_eq!(ConsumerRunningInfo::from_json_bytes(&bytes).unwrap(), info);
        info.jstack = Some("main\n".into());
        let with_stacks = info.to_json_bytes().unwrap();
        assert!(with_stacks.starts_with(br#"{"jstack":"main\n","mqTable""#));
    }

    #[test]
    fn direct_result_names_as_java() {
        let r = ConsumeMessageDirectlyResult {
            auto_commit: true,
            consume_result: CmResult::CrThrowException,
            order: false,
            remark: Some("boom".into()),
            spent_time_mills: 3,
        };
        let bytes = r.to_json_bytes().unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"autoCommit":true,"consumeResult":"CR_THROW_EXCEPTION","order":false,"remark":"boom","spentTimeMills":3}"#
        );
        assert_eq!(
            ConsumeMessageDirectlyResult::from_json_bytes(&bytes).unwrap(),
            r
        );
        assert_eq!(CmResult::from_name("CR_LATER"), Some(CmResult::CrLater));
        assert_eq!(CmResult::from_name("nope"), None);
    }
}
