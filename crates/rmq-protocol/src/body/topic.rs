//! Topic configuration bodies: what a broker registers with nameservers (REGISTER_BROKER),
//! returns for GET_ALL_TOPIC_CONFIG, and keeps in `topics.json`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json};

/// `PermName.PERM_READ`.
pub const PERM_READ: i32 = 0x1 << 2;
/// `PermName.PERM_WRITE`.
pub const PERM_WRITE: i32 = 0x1 << 1;
/// `PermName.PERM_INHERIT`.
pub const PERM_INHERIT: i32 = 0x1;

/// `TopicFilterType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum TopicFilterType {
    /// One tag per message.
    #[default]
    SingleTag,
    /// Several tags per message.
    MultiTag,
}

impl TopicFilterType {
    /// The Java name, as headers carry it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::SingleTag => "SINGLE_TAG",
            Self::MultiTag => "MULTI_TAG",
        }
    }
}

/// `TopicConfig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicConfig {
    /// Topic attributes (5.x; empty and omitted for 4.x peers).
    #[serde(
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_default"
    )]
    pub attributes: BTreeMap<String, String>,
    /// Ordered topic.
    pub order: bool,
    /// `PermName` bits.
    pub perm: i32,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Filter type.
    #[serde(deserialize_with = "null_default")]
    pub topic_filter_type: TopicFilterType,
    /// Topic name.
    #[serde(deserialize_with = "null_default")]
    pub topic_name: String,
    /// `TopicSysFlag` bits.
    pub topic_sys_flag: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
}

impl Default for TopicConfig {
    /// Java's defaults: 16 read and write queues, read+write permission, single tag.
    fn default() -> Self {
        Self {
            attributes: BTreeMap::new(),
            order: false,
            perm: PERM_READ | PERM_WRITE,
            read_queue_nums: 16,
            topic_filter_type: TopicFilterType::SingleTag,
            topic_name: String::new(),
            topic_sys_flag: 0,
            write_queue_nums: 16,
        }
    }
}

impl TopicConfig {
    /// A topic with Java's defaults.
    #[must_use]
    pub fn new(topic_name: impl Into<String>) -> Self {
        Self {
            topic_name: topic_name.into(),
            ..Self::default()
        }
    }
}

/// `DataVersion`: a change counter that lets nameservers skip unchanged registrations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DataVersion {
    /// Bumped on every change.
    pub counter: i64,
    /// Time of the last change (ms).
    pub timestamp: i64,
}

/// `TopicConfigSerializeWrapper`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigSerializeWrapper {
    /// Version of the table.
    #[serde(default, deserialize_with = "null_default")]
    pub data_version: DataVersion,
    /// Topics by name.
    #[serde(default, deserialize_with = "null_default")]
    pub topic_config_table: BTreeMap<String, TopicConfig>,
}

/// `RegisterBrokerBody` (uncompressed form; the header's `compressed` is false).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBrokerBody {
    /// Filter servers of the broker.
    #[serde(default, deserialize_with = "null_default")]
    pub filter_server_list: Vec<String>,
    /// The broker's topics.
    #[serde(default, deserialize_with = "null_default")]
    pub topic_config_serialize_wrapper: TopicConfigSerializeWrapper,
}

remoting_json!(
    TopicConfig,
    DataVersion,
    TopicConfigSerializeWrapper,
    RegisterBrokerBody
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RemotingJson;

    #[test]
    fn register_body_round_trip_and_java_shape() {
        let mut w = TopicConfigSerializeWrapper {
            data_version: DataVersion {
                counter: 3,
                timestamp: 1_700_000_000_000,
            },
            ..Default::default()
        };
        w.topic_config_table
            .insert("TopicTest".into(), TopicConfig::new("TopicTest"));
        let body = RegisterBrokerBody {
            filter_server_list: vec![],
            topic_config_serialize_wrapper: w,
        };
        let bytes = body.to_json_bytes().unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            r#"{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},"topicConfigTable":{"TopicTest":{"order":false,"perm":6,"readQueueNums":16,"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":16}}}}"#
        );
        assert_eq!(RegisterBrokerBody::from_json_bytes(&bytes).unwrap(), body);
    }

    #[test]
    fn sparse_topic_config_gets_java_defaults() {
        let t =
            TopicConfig::from_json_bytes(br#"{"topicName":"x","attributes":{"+a":"b"}}"#).unwrap();
        assert_eq!((t.read_queue_nums, t.perm), (16, 6));
        assert_eq!(t.attributes["+a"], "b");
    }
}
