//! HEART_BEAT (34) body: who a client is and which producer and consumer groups it runs,
//! with each consumer's subscriptions. Brokers build their consumer tables from it.

use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json};

/// `HeartbeatData`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HeartbeatData {
    /// Client id (`ip@instanceName`); Java spells the property `clientID`.
    #[serde(rename = "clientID", default, deserialize_with = "null_default")]
    pub client_id: String,
    /// Consumer groups of the client.
    #[serde(rename = "consumerDataSet", default, deserialize_with = "null_default")]
    pub consumer_data_set: Vec<ConsumerData>,
    /// Producer groups of the client.
    #[serde(rename = "producerDataSet", default, deserialize_with = "null_default")]
    pub producer_data_set: Vec<ProducerData>,
}

/// `ProducerData`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerData {
    /// Producer group.
    #[serde(default, deserialize_with = "null_default")]
    pub group_name: String,
}

/// `ConsumerData`: one consumer group of a client.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerData {
    /// Where a new group starts.
    #[serde(default, deserialize_with = "null_default")]
    pub consume_from_where: ConsumeFromWhere,
    /// Pull or push.
    #[serde(default, deserialize_with = "null_default")]
    pub consume_type: ConsumeType,
    /// Consumer group.
    #[serde(default, deserialize_with = "null_default")]
    pub group_name: String,
    /// Clustering or broadcasting.
    #[serde(default, deserialize_with = "null_default")]
    pub message_model: MessageModel,
    /// Subscriptions, one per topic.
    #[serde(default, deserialize_with = "null_default")]
    pub subscription_data_set: Vec<SubscriptionData>,
    /// Unit mode.
    #[serde(default)]
    pub unit_mode: bool,
}

/// Expression type of tag subscriptions (`ExpressionType.TAG`).
pub const EXPRESSION_TYPE_TAG: &str = "TAG";
/// Expression type of SQL92 subscriptions.
pub const EXPRESSION_TYPE_SQL92: &str = "SQL92";
/// Subscription expression that matches everything (`SubscriptionData.SUB_ALL`).
pub const SUB_ALL: &str = "*";

/// `SubscriptionData`: a consumer's interest in one topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionData {
    /// Legacy class filtering.
    #[serde(default)]
    pub class_filter_mode: bool,
    /// Java hash codes of the tags in `tags_set` (what ConsumeQueue entries are matched by).
    #[serde(default, deserialize_with = "null_default")]
    pub code_set: Vec<i32>,
    /// `TAG` or `SQL92`.
    #[serde(
        default = "default_expression_type",
        deserialize_with = "expression_type"
    )]
    pub expression_type: String,
    /// The expression as given (`TagA || TagB`, `*`, or SQL).
    #[serde(default, deserialize_with = "null_default")]
    pub sub_string: String,
    /// Version (creation time, ms); newer wins.
    #[serde(default)]
    pub sub_version: i64,
    /// Tags of a tag expression.
    #[serde(default, deserialize_with = "null_default")]
    pub tags_set: Vec<String>,
    /// Topic.
    #[serde(default, deserialize_with = "null_default")]
    pub topic: String,
}

fn default_expression_type() -> String {
    EXPRESSION_TYPE_TAG.to_owned()
}

fn expression_type<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_else(default_expression_type))
}

impl Default for SubscriptionData {
    fn default() -> Self {
        Self {
            class_filter_mode: false,
            code_set: Vec::new(),
            expression_type: default_expression_type(),
            sub_string: String::new(),
            sub_version: 0,
            tags_set: Vec::new(),
            topic: String::new(),
        }
    }
}

/// `ConsumeType`: who drives consumption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumeType {
    /// Pull consumer ("PULL").
    ConsumeActively,
    /// Push consumer ("PUSH").
    #[default]
    ConsumePassively,
}

/// `MessageModel`: how a group shares messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum MessageModel {
    /// Every consumer gets every message.
    Broadcasting,
    /// Each message goes to one consumer of the group.
    #[default]
    Clustering,
}

/// `ConsumeFromWhere`: where a group with no committed offset starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ConsumeFromWhere {
    /// From the end of the queue.
    #[default]
    ConsumeFromLastOffset,
    /// Deprecated; as `ConsumeFromLastOffset`.
    ConsumeFromLastOffsetAndFromMinWhenBootFirst,
    /// Deprecated; as `ConsumeFromFirstOffset`.
    ConsumeFromMinOffset,
    /// Deprecated; as `ConsumeFromLastOffset`.
    ConsumeFromMaxOffset,
    /// From the first message still stored.
    ConsumeFromFirstOffset,
    /// From the first message stored at or after the consumer's `consumeTimestamp`.
    ConsumeFromTimestamp,
}

remoting_json!(HeartbeatData, SubscriptionData);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RemotingJson;

    /// A Java 4.9 push consumer's heartbeat, as fastjson writes it.
    const JAVA_HEARTBEAT: &str = r#"{"clientID":"192.168.0.2@12345","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","consumeType":"CONSUME_PASSIVELY","groupName":"cg","messageModel":"CLUSTERING","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB","subVersion":1700000000000,"tagsSet":["TagA","TagB"],"topic":"TopicTest"},{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1700000000001,"tagsSet":[],"topic":"%RETRY%cg"}],"unitMode":false}],"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}"#;

    #[test]
    fn parses_and_rewrites_java_heartbeat_byte_for_byte() {
        let h = HeartbeatData::from_json_bytes(JAVA_HEARTBEAT.as_bytes()).unwrap();
        assert_eq!(h.client_id, "192.168.0.2@12345");
        let c = &h.consumer_data_set[0];
        assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
        assert_eq!(c.message_model, MessageModel::Clustering);
        assert_eq!(
            c.consume_from_where,
            ConsumeFromWhere::ConsumeFromFirstOffset
        );
        assert_eq!(c.subscription_data_set[0].code_set, [2_598_919, 2_598_920]);
        assert_eq!(h.producer_data_set[0].group_name, "CLIENT_INNER_PRODUCER");
        // Field order and names match fastjson's, so the output is identical.
        assert_eq!(
            std::str::from_utf8(&h.to_json_bytes().unwrap()).unwrap(),
            JAVA_HEARTBEAT
        );
    }

    /// Names, and ordinals: the variants are declared in the Java enums' order, so an
    /// ordinal (as RocketMQ's C++ core sends) reads as the variant Java would pick.
    #[test]
    fn enum_names_and_ordinals() {
        for (ordinal, (v, s)) in [
            (
                ConsumeFromWhere::ConsumeFromLastOffset,
                "CONSUME_FROM_LAST_OFFSET",
            ),
            (
                ConsumeFromWhere::ConsumeFromLastOffsetAndFromMinWhenBootFirst,
                "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
            ),
            (
                ConsumeFromWhere::ConsumeFromMinOffset,
                "CONSUME_FROM_MIN_OFFSET",
            ),
            (
                ConsumeFromWhere::ConsumeFromMaxOffset,
                "CONSUME_FROM_MAX_OFFSET",
            ),
            (
                ConsumeFromWhere::ConsumeFromFirstOffset,
                "CONSUME_FROM_FIRST_OFFSET",
            ),
            (
                ConsumeFromWhere::ConsumeFromTimestamp,
                "CONSUME_FROM_TIMESTAMP",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(serde_json::to_string(&v).unwrap(), format!("\"{s}\""));
            let body = format!(r#"{{"consumerDataSet":[{{"consumeFromWhere":{ordinal}}}]}}"#);
            let h = HeartbeatData::from_json_bytes(body.as_bytes()).unwrap();
            assert_eq!(h.consumer_data_set[0].consume_from_where, v);
        }
        assert_eq!(
            serde_json::to_string(&ConsumeType::ConsumeActively).unwrap(),
            "\"CONSUME_ACTIVELY\""
        );
        assert_eq!(
            serde_json::to_string(&MessageModel::Broadcasting).unwrap(),
            "\"BROADCASTING\""
        );
        let h = HeartbeatData::from_json_bytes(
            br#"{"consumerDataSet":[{"consumeType":0,"messageModel":0}]}"#,
        )
        .unwrap();
        let c = &h.consumer_data_set[0];
        assert_eq!(c.consume_type, ConsumeType::ConsumeActively);
        assert_eq!(c.message_model, MessageModel::Broadcasting);
    }

    /// What fastjson accepts from other clients, Apache's broker accepts: RocketMQ's C++ core
    /// writes enums as ordinals, `subVersion` and `unitMode` as strings; the Go client writes
    /// `codeSet` elements as strings.
    #[test]
    fn heartbeats_of_other_clients_read_as_fastjson_reads_them() {
        let cpp = br#"{"clientID":"10.0.0.1@4242","consumerDataSet":[{"groupName":"cg","consumeFromWhere":4,"consumeType":1,"messageModel":1,"unitMode":"0","subscriptionDataSet":[{"topic":"T","subString":"TagA","tagsSet":["TagA"],"codeSet":[2598919],"classFilterMode":"false","subVersion":"1795513573873","expressionType":"TAG"}]}],"producerDataSet":[]}"#;
        let go = br#"{"clientID":"10.0.0.1@go","producerDataSet":[],"consumerDataSet":[{"groupName":"cg","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{"classFilterMode":false,"topic":"T","subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":1795513573873,"expressionType":"TAG"}],"unitMode":false}]}"#;
        for body in [&cpp[..], &go[..]] {
            let h = HeartbeatData::from_json_bytes(body).unwrap();
            let c = &h.consumer_data_set[0];
            assert_eq!(c.consume_type, ConsumeType::ConsumePassively);
            assert_eq!(c.message_model, MessageModel::Clustering);
            assert_eq!(
                c.consume_from_where,
                ConsumeFromWhere::ConsumeFromFirstOffset
            );
            assert!(!c.unit_mode);
            let s = &c.subscription_data_set[0];
            assert_eq!(s.code_set[0], 2_598_919);
            assert_eq!(s.sub_version, 1_795_513_573_873);
        }
        // Refusals name the field, the value and what was expected.
        let bad = br#"{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["x"]}]}]}"#;
        let e = HeartbeatData::from_json_bytes(bad).unwrap_err().to_string();
        assert!(
            e.contains(r#"consumerDataSet[0].subscriptionDataSet[0].codeSet[0]: invalid value "x": expected an integer"#),
            "{e}"
        );
        let bad = br#"{"consumerDataSet":[{"consumeType":7}]}"#;
        let e = HeartbeatData::from_json_bytes(bad).unwrap_err().to_string();
        assert!(e.contains("consumerDataSet[0].consumeType: invalid value 7: expected one of CONSUME_ACTIVELY, CONSUME_PASSIVELY"), "{e}");
    }

    #[test]
    fn sparse_subscription_gets_java_defaults() {
        let s = SubscriptionData::from_json_bytes(
            br#"{"topic":"t","subString":"*","expressionType":null}"#,
        )
        .unwrap();
        assert_eq!(s.expression_type, "TAG");
        assert!(s.tags_set.is_empty());
    }
}
