//! Consumer-side bodies: queue locks for ordered consumption, the group's consumer list for
//! rebalance, and connection listings for admin tools.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json, MessageQueue};
use crate::body::heartbeat::{ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData};
use crate::command::LanguageCode;

/// `LockBatchRequestBody` (LOCK_BATCH_MQ, 41).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockBatchRequestBody {
    /// Client asking for the locks.
    #[serde(default, deserialize_with = "null_default")]
    pub client_id: String,
    /// Consumer group.
    #[serde(default, deserialize_with = "null_default")]
    pub consumer_group: String,
    /// Queues to lock.
    #[serde(default, deserialize_with = "null_default")]
    pub mq_set: BTreeSet<MessageQueue>,
}

/// `UnlockBatchRequestBody` (UNLOCK_BATCH_MQ, 42).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnlockBatchRequestBody {
    /// Client releasing the locks.
    #[serde(default, deserialize_with = "null_default")]
    pub client_id: String,
    /// Consumer group.
    #[serde(default, deserialize_with = "null_default")]
    pub consumer_group: String,
    /// Queues to unlock.
    #[serde(default, deserialize_with = "null_default")]
    pub mq_set: BTreeSet<MessageQueue>,
}

/// `LockBatchResponseBody`: the queues actually locked.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct LockBatchResponseBody {
    /// Queues locked for the client (Java spells the property `lockOKMQSet`).
    #[serde(rename = "lockOKMQSet", default, deserialize_with = "null_default")]
    pub lock_ok_mq_set: BTreeSet<MessageQueue>,
}

/// `GetConsumerListByGroupResponseBody` (GET_CONSUMER_LIST_BY_GROUP, 38).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetConsumerListByGroupResponseBody {
    /// Client ids of the group's consumers.
    #[serde(default, deserialize_with = "null_default")]
    pub consumer_id_list: Vec<String>,
}

/// `Connection`: one client connection as admin tools list it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Remote address.
    #[serde(default, deserialize_with = "null_default")]
    pub client_addr: String,
    /// Client id.
    #[serde(default, deserialize_with = "null_default")]
    pub client_id: String,
    /// Client language.
    #[serde(default)]
    pub language: LanguageCode,
    /// Client version.
    #[serde(default)]
    pub version: i32,
}

/// `ConsumerConnection` (GET_CONSUMER_CONNECTION_LIST, 203).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    /// Connections of the group.
    #[serde(default, deserialize_with = "null_default")]
    pub connection_set: Vec<Connection>,
    /// Where the group starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consume_from_where: Option<ConsumeFromWhere>,
    /// Pull or push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consume_type: Option<ConsumeType>,
    /// Clustering or broadcasting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_model: Option<MessageModel>,
    /// Subscriptions by topic.
    #[serde(default, deserialize_with = "null_default")]
    pub subscription_table: BTreeMap<String, SubscriptionData>,
}

/// `ProducerConnection` (GET_PRODUCER_CONNECTION_LIST, 204).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    /// Connections of the group.
    #[serde(default, deserialize_with = "null_default")]
    pub connection_set: Vec<Connection>,
}

/// `ProducerInfo`: one producer connection in [`ProducerTableInfo`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerInfo {
    /// Client id.
    #[serde(default, deserialize_with = "null_default")]
    pub client_id: String,
    /// Remote address (`remoteIP`).
    #[serde(rename = "remoteIP", default, deserialize_with = "null_default")]
    pub remote_ip: String,
    /// Client language.
    #[serde(default)]
    pub language: LanguageCode,
    /// Client version.
    #[serde(default)]
    pub version: i32,
    /// Last heartbeat (ms since the epoch).
    #[serde(default)]
    pub last_update_timestamp: i64,
}

/// `ProducerTableInfo` (GET_ALL_PRODUCER_INFO, 328): producer group → its connections.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerTableInfo {
    /// Connections per producer group.
    #[serde(default, deserialize_with = "null_default")]
    pub data: BTreeMap<String, Vec<ProducerInfo>>,
}

/// `GroupList` (QUERY_TOPIC_CONSUME_BY_WHO, 300).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    /// Group names.
    #[serde(default, deserialize_with = "null_default")]
    pub group_list: BTreeSet<String>,
}

/// `QueueTimeSpan`: one queue's store-time span and how far a group has consumed it.
/// (Java's derived `…TimeStampStr` getters are left out; readers ignore them.)
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueueTimeSpan {
    /// Store time (ms) of the last consumed message; `minTimeStamp` before any commit.
    pub consume_time_stamp: i64,
    /// How long (ms) the next unconsumed message has waited; 0 when caught up.
    pub delay_time: i64,
    /// Store time (ms) of the queue's last message (-1 when empty).
    pub max_time_stamp: i64,
    /// The queue.
    #[serde(deserialize_with = "null_default")]
    pub message_queue: MessageQueue,
    /// Store time (ms) of the queue's first message (-1 when empty).
    pub min_time_stamp: i64,
}

/// `QueryConsumeTimeSpanBody` (QUERY_CONSUME_TIME_SPAN, 303).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueryConsumeTimeSpanBody {
    /// One entry per write queue of the topic on the broker.
    #[serde(default, deserialize_with = "null_default")]
    pub consume_time_span_set: Vec<QueueTimeSpan>,
}

remoting_json!(
    QueueTimeSpan,
    QueryConsumeTimeSpanBody,
    LockBatchRequestBody,
    UnlockBatchRequestBody,
    LockBatchResponseBody,
    GetConsumerListByGroupResponseBody,
    ConsumerConnection,
    ProducerConnection,
    ProducerTableInfo,
    GroupList,
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RemotingJson;

    #[test]
    fn lock_bodies_round_trip() {
        let req = LockBatchRequestBody {
            client_id: "c1".into(),
            consumer_group: "g".into(),
            mq_set: [
                MessageQueue::new("t", "b", 0),
                MessageQueue::new("t", "b", 1),
            ]
            .into(),
        };
        let bytes = req.to_json_bytes().unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"clientId":"c1","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":0,"topic":"t"},{"brokerName":"b","queueId":1,"topic":"t"}]}"#
        );
        assert_eq!(LockBatchRequestBody::from_json_bytes(&bytes).unwrap(), req);
        let resp = LockBatchResponseBody {
            lock_ok_mq_set: req.mq_set.clone(),
        };
        let bytes = resp.to_json_bytes().unwrap();
        assert!(bytes.starts_with(b"{\"lockOKMQSet\":["));
        assert_eq!(
            LockBatchResponseBody::from_json_bytes(&bytes).unwrap(),
            resp
        );
    }

    #[test]
    fn consumer_list_and_connections() {
        let b = GetConsumerListByGroupResponseBody::from_json_bytes(
            br#"{"consumerIdList":["a@1","b@2"]}"#,
        )
        .unwrap();
        assert_eq!(b.consumer_id_list, ["a@1", "b@2"]);
        let c = ConsumerConnection::from_json_bytes(
            br#"{"connectionSet":[{"clientAddr":"1.2.3.4:5","clientId":"x","language":"JAVA","version":409}],"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","subscriptionTable":{"t":{"topic":"t","subString":"*"}}}"#,
        )
        .unwrap();
        assert_eq!(c.connection_set[0].language, LanguageCode::Java);
        assert_eq!(c.subscription_table["t"].sub_string, "*");
        assert_eq!(
            ConsumerConnection::from_json_bytes(&c.to_json_bytes().unwrap()).unwrap(),
            c
        );
    }

    #[test]
    fn consumer_connection_writes_fastjson_order() {
        // What a Java 4.9 broker sends for one push consumer (fastjson sorts properties).
        let java = r#"{"connectionSet":[{"clientAddr":"127.0.0.1:50000","clientId":"127.0.0.1@1","language":"JAVA","version":409}],"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000000,"tagsSet":[],"topic":"T"}}}"#;
        let c = ConsumerConnection::from_json_bytes(java.as_bytes()).unwrap();
        assert_eq!(
            std::str::from_utf8(&c.to_json_bytes().unwrap()).unwrap(),
            java
        );
    }

    #[test]
    fn consume_time_span_reads_java_and_writes_its_names() {
        // A 5.x broker's answer (fastjson also writes the derived *Str getters).
        let java = r#"{"consumeTimeSpanSet":[{"consumeTimeStamp":1700000000500,"consumeTimeStampStr":"2023-11-14 22:13:20,500","delayTime":0,"maxTimeStamp":1700000000900,"maxTimeStampStr":"x","messageQueue":{"brokerName":"b","queueId":1,"topic":"T"},"minTimeStamp":1700000000000,"minTimeStampStr":"y"}]}"#;
        let body = QueryConsumeTimeSpanBody::from_json_bytes(java.as_bytes()).unwrap();
        let span = &body.consume_time_span_set[0];
        assert_eq!(span.message_queue, MessageQueue::new("T", "b", 1));
        assert_eq!(
            (
                span.min_time_stamp,
                span.max_time_stamp,
                span.consume_time_stamp
            ),
            (1_700_000_000_000, 1_700_000_000_900, 1_700_000_000_500)
        );
        assert_eq!(
            std::str::from_utf8(&body.to_json_bytes().unwrap()).unwrap(),
            r#"{"consumeTimeSpanSet":[{"consumeTimeStamp":1700000000500,"delayTime":0,"maxTimeStamp":1700000000900,"messageQueue":{"brokerName":"b","queueId":1,"topic":"T"},"minTimeStamp":1700000000000}]}"#
        );
    }
}
