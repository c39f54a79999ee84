//! Admin bodies: runtime info, subscription groups, consumption progress, queue offsets and
//! offset resets. ConsumeStats, TopicStatsTable and ResetOffsetBody hold maps keyed by
//! [`MessageQueue`](super::MessageQueue), which they write in fastjson's object-key form.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json, MessageQueueMap, RemotingJson};
use crate::body::route::MASTER_ID;
use crate::body::topic::DataVersion;
use crate::error::{ProtocolError, Result};

/// `KVTable`: string pairs (GET_BROKER_RUNTIME_INFO, GET_KVLIST_BY_NAMESPACE).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KvTable {
    /// The pairs.
    #[serde(default, deserialize_with = "null_default")]
    pub table: BTreeMap<String, String>,
}

/// `SubscriptionGroupConfig` (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "the JSON body of Java's SubscriptionGroupConfig, field for field"
)]
#[serde(rename_all = "camelCase", default)]
pub struct SubscriptionGroupConfig {
    /// Broker id to consume from by default.
    pub broker_id: i64,
    /// Broadcasting consumers allowed.
    pub consume_broadcast_enable: bool,
    /// Consumption allowed at all.
    pub consume_enable: bool,
    /// New groups start from the min offset.
    pub consume_from_min_enable: bool,
    /// Group name.
    #[serde(deserialize_with = "null_default")]
    pub group_name: String,
    /// Tell consumers to rebalance when membership changes.
    pub notify_consumer_ids_changed_enable: bool,
    /// Redeliveries before DLQ.
    pub retry_max_times: i32,
    /// Queues of the group's retry topic.
    pub retry_queue_nums: i32,
    /// Broker id to redirect slow consumers to.
    pub which_broker_when_consume_slowly: i64,
}

impl Default for SubscriptionGroupConfig {
    /// Java's defaults.
    fn default() -> Self {
        Self {
            broker_id: MASTER_ID,
            consume_broadcast_enable: true,
            consume_enable: true,
            consume_from_min_enable: true,
            group_name: String::new(),
            notify_consumer_ids_changed_enable: true,
            retry_max_times: 16,
            retry_queue_nums: 1,
            which_broker_when_consume_slowly: 1,
        }
    }
}

/// `SubscriptionGroupWrapper` (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201;
/// `subscriptionGroup.json`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupWrapper {
    /// Version of the table.
    #[serde(default, deserialize_with = "null_default")]
    pub data_version: DataVersion,
    /// Groups by name.
    #[serde(default, deserialize_with = "null_default")]
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfig>,
}

/// `ConsumerOffsetSerializeWrapper` (GET_ALL_CONSUMER_OFFSET, 43; `consumerOffset.json`):
/// offsets by `topic@group`, then by queue id. fastjson writes the queue ids as bare keys.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerOffsetSerializeWrapper {
    /// `topic@group` → queue id → offset.
    #[serde(default, deserialize_with = "null_default")]
    pub offset_table: BTreeMap<String, BTreeMap<i32, i64>>,
}

/// `OffsetWrapper`: one queue's progress for a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OffsetWrapper {
    /// Queue's max offset.
    pub broker_offset: i64,
    /// Group's committed offset.
    pub consumer_offset: i64,
    /// Store time of the last consumed message (ms).
    pub last_timestamp: i64,
}

/// `ConsumeStats` (GET_CONSUME_STATS, 208).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeStats {
    /// Messages per second.
    #[serde(default, deserialize_with = "null_default")]
    pub consume_tps: f64,
    /// Progress per queue.
    #[serde(default)]
    pub offset_table: MessageQueueMap<OffsetWrapper>,
}

impl ConsumeStats {
    /// Messages not yet consumed, over all queues (`computeTotalDiff`).
    #[must_use]
    pub fn total_diff(&self) -> i64 {
        self.offset_table
            .0
            .values()
            .map(|o| o.broker_offset - o.consumer_offset)
            .sum()
    }
}

/// `TopicOffset`: one queue's offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopicOffset {
    /// Store time of the last message (ms).
    pub last_update_timestamp: i64,
    /// Next offset to be written.
    pub max_offset: i64,
    /// First readable offset.
    pub min_offset: i64,
}

/// `TopicStatsTable` (GET_TOPIC_STATS_INFO, 202).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicStatsTable {
    /// Offsets per queue.
    #[serde(default)]
    pub offset_table: MessageQueueMap<TopicOffset>,
}

/// `ConsumeStatsList` (GET_BROKER_CONSUME_STATS, 317): every subscription group's
/// [`ConsumeStats`] per topic on one broker.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumeStatsList {
    /// The broker's address.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_addr: String,
    /// One map per group: group name → the stats of each topic it consumes.
    #[serde(default, deserialize_with = "null_default")]
    pub consume_stats_list: Vec<BTreeMap<String, Vec<ConsumeStats>>>,
    /// Messages not yet consumed, over every group and queue.
    #[serde(default)]
    pub total_diff: i64,
}

impl RemotingJson for ConsumeStatsList {
    const TYPE_NAME: &'static str = "ConsumeStatsList";

    fn to_json_bytes(&self) -> Result<Bytes> {
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(b"{\"brokerAddr\":");
        serde_json::to_writer(&mut out, &self.broker_addr)
            .map_err(unencodable("ConsumeStatsList"))?;
        out.extend_from_slice(b",\"consumeStatsList\":[");
        for (i, groups) in self.consume_stats_list.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.push(b'{');
            for (j, (group, stats)) in groups.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut out, group).map_err(unencodable("ConsumeStatsList"))?;
                out.extend_from_slice(b":[");
                for (k, s) in stats.iter().enumerate() {
                    if k > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(&s.to_json_bytes()?);
                }
                out.push(b']');
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"totalDiff\":");
        out.extend_from_slice(self.total_diff.to_string().as_bytes());
        out.push(b'}');
        Ok(Bytes::from(out))
    }

    fn from_json_bytes(bytes: &[u8]) -> Result<Self> {
        parse("ConsumeStatsList", bytes)
    }
}

/// `BrokerStatsItem`: one window of a broker statistic.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerStatsItem {
    /// Count in the window.
    pub sum: i64,
    /// Per second over the window.
    pub tps: f64,
    /// Average per call.
    pub avgpt: f64,
}

/// `BrokerStatsData` (VIEW_BROKER_STATS_DATA, 315): a statistic over the last minute, hour
/// and day.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BrokerStatsData {
    /// Last minute.
    pub stats_minute: BrokerStatsItem,
    /// Last hour.
    pub stats_hour: BrokerStatsItem,
    /// Last day.
    pub stats_day: BrokerStatsItem,
}

/// `ConsumeQueueData`: one ConsumeQueue unit in [`QueryConsumeQueueResponseBody`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ConsumeQueueData {
    /// CommitLog offset of the message.
    pub physic_offset: i64,
    /// Its size.
    pub physic_size: i32,
    /// Tag hash code.
    pub tags_code: i64,
    /// ConsumeQueue-extension unit as JSON (rmq keeps no extension: absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extend_data_json: Option<String>,
    /// Filter bit map (absent: no extension).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bit_map: Option<String>,
    /// Whether the group's filter matched (only evaluated on extension units).
    pub eval: bool,
    /// A problem with the unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub msg: Option<String>,
}

/// `QueryConsumeQueueResponseBody` (QUERY_CONSUME_QUEUE, 321, mqadmin `queryCq`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct QueryConsumeQueueResponseBody {
    /// The group's subscription of the topic, when a group was named and is online.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscription_data: Option<crate::body::SubscriptionData>,
    /// Filter data, or why there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_data: Option<String>,
    /// The units listed.
    pub queue_data: Vec<ConsumeQueueData>,
    /// Next queue offset to be written.
    pub max_queue_index: i64,
    /// First valid queue offset.
    pub min_queue_index: i64,
}

/// `ResetOffsetBody` (RESET_CONSUMER_CLIENT_OFFSET 220 and INVOKE_BROKER_TO_RESET_OFFSET
/// 222): the offset each queue was reset to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetOffsetBody {
    /// New offset per queue.
    #[serde(default)]
    pub offset_table: MessageQueueMap<i64>,
}

fn unencodable(what: &'static str) -> impl Fn(serde_json::Error) -> ProtocolError {
    move |e| ProtocolError::Unencodable {
        what,
        reason: e.to_string(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(type_name: &'static str, bytes: &[u8]) -> Result<T> {
    crate::json_compat::from_slice(bytes)
        .map_err(|reason| ProtocolError::BadBody { type_name, reason })
}

/// Bodies with a `MessageQueue`-keyed map: written in fastjson's form (see module docs).
macro_rules! mq_keyed_body {
    ($t:ident, $write:expr) => {
        impl RemotingJson for $t {
            const TYPE_NAME: &'static str = stringify!($t);

            fn to_json_bytes(&self) -> Result<Bytes> {
                let mut out = Vec::with_capacity(64 + 96 * self.offset_table.0.len());
                ($write)(self, &mut out)?;
                Ok(Bytes::from(out))
            }

            fn from_json_bytes(bytes: &[u8]) -> Result<Self> {
                parse(stringify!($t), bytes)
            }
        }
    };
}

mq_keyed_body!(ConsumeStats, |s: &ConsumeStats,
                              out: &mut Vec<u8>|
 -> Result<()> {
    out.extend_from_slice(b"{\"consumeTps\":");
    serde_json::to_writer(&mut *out, &s.consume_tps).map_err(unencodable("ConsumeStats"))?;
    out.extend_from_slice(b",\"offsetTable\":");
    s.offset_table.write_fastjson(out)?;
    out.push(b'}');
    Ok(())
});

mq_keyed_body!(TopicStatsTable, |s: &TopicStatsTable,
                                 out: &mut Vec<u8>|
 -> Result<()> {
    out.extend_from_slice(b"{\"offsetTable\":");
    s.offset_table.write_fastjson(out)?;
    out.push(b'}');
    Ok(())
});

mq_keyed_body!(ResetOffsetBody, |s: &ResetOffsetBody,
                                 out: &mut Vec<u8>|
 -> Result<()> {
    out.extend_from_slice(b"{\"offsetTable\":");
    s.offset_table.write_fastjson(out)?;
    out.push(b'}');
    Ok(())
});

remoting_json!(
    BrokerStatsData,
    QueryConsumeQueueResponseBody,
    KvTable,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
);

/// fastjson's form, as `ConsumerOffsetManager.encode()` writes GET_ALL_CONSUMER_OFFSET's body:
/// the queue ids as bare keys (`{"offsetTable":{"T@G":{0:12}}}`).
impl RemotingJson for ConsumerOffsetSerializeWrapper {
    const TYPE_NAME: &'static str = "ConsumerOffsetSerializeWrapper";

    fn to_json_bytes(&self) -> Result<Bytes> {
        let mut out = Vec::with_capacity(32 + 48 * self.offset_table.len());
        out.extend_from_slice(b"{\"offsetTable\":{");
        for (i, (key, queues)) in self.offset_table.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key)
                .map_err(unencodable("ConsumerOffsetSerializeWrapper"))?;
            out.extend_from_slice(b":{");
            for (j, (queue_id, offset)) in queues.iter().enumerate() {
                if j > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(format!("{queue_id}:{offset}").as_bytes());
            }
            out.push(b'}');
        }
        out.extend_from_slice(b"}}");
        Ok(Bytes::from(out))
    }

    fn from_json_bytes(bytes: &[u8]) -> Result<Self> {
        parse("ConsumerOffsetSerializeWrapper", bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::MessageQueue;

    #[test]
    fn consume_stats_list_round_trips_in_fastjson_form() {
        let mut stats = ConsumeStats::default();
        stats.offset_table.0.insert(
            MessageQueue::new("T", "broker-a", 1),
            OffsetWrapper {
                broker_offset: 9,
                consumer_offset: 4,
                last_timestamp: 17,
            },
        );
        let list = ConsumeStatsList {
            broker_addr: "127.0.0.1:10911".into(),
            consume_stats_list: vec![BTreeMap::from([("G".to_owned(), vec![stats])])],
            total_diff: 5,
        };
        let bytes = list.to_json_bytes().unwrap();
        let text = std::str::from_utf8(&bytes).unwrap();
        assert!(
            text.starts_with(r#"{"brokerAddr":"127.0.0.1:10911","consumeStatsList":[{"G":[{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:"#),
            "{text}"
        );
        assert!(text.ends_with(r#"}]}],"totalDiff":5}"#), "{text}");
        assert_eq!(ConsumeStatsList::from_json_bytes(&bytes).unwrap(), list);
    }

    #[test]
    fn topic_stats_fastjson_form_both_ways() {
        // As a Java broker writes it: MessageQueue objects as map keys.
        let java = r#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000000,"maxOffset":10,"minOffset":0},{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}}}"#;
        let t = TopicStatsTable::from_json_bytes(java.as_bytes()).unwrap();
        let q0 = MessageQueue::new("T", "broker-a", 0);
        assert_eq!(t.offset_table.0[&q0].max_offset, 10);
        assert_eq!(t.offset_table.0.len(), 2);
        let out = t.to_json_bytes().unwrap();
        assert_eq!(std::str::from_utf8(&out).unwrap(), java);
        // Standard JSON (string keys) is read as well.
        let std_json = serde_json::to_vec(&t).unwrap();
        assert_eq!(TopicStatsTable::from_json_bytes(&std_json).unwrap(), t);
    }

    #[test]
    fn consume_stats_round_trip() {
        let mut s = ConsumeStats {
            consume_tps: 12.5,
            ..Default::default()
        };
        s.offset_table.0.insert(
            MessageQueue::new("T", "b", 3),
            OffsetWrapper {
                broker_offset: 10,
                consumer_offset: 4,
                last_timestamp: 1,
            },
        );
        let out = s.to_json_bytes().unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"consumeTps":12.5,"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1}}}"#
        );
        let back = ConsumeStats::from_json_bytes(&out).unwrap();
        assert_eq!(back, s);
        assert_eq!(back.total_diff(), 6);
        let r = ResetOffsetBody::from_json_bytes(
            br#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:42}}"#,
        )
        .unwrap();
        assert_eq!(r.offset_table.0[&MessageQueue::new("T", "b", 0)], 42);
    }

    #[test]
    fn consumer_offset_json_from_disk() {
        // consumerOffset.json as Java pretty-prints it (bare queue-id keys).
        let text = "{\n\t\"offsetTable\":{\n\t\t\"%RETRY%g@g\":{0:0\n\t\t},\n\t\t\"T@g\":{1:5,0:3\n\t\t}\n\t}\n}";
        let w = ConsumerOffsetSerializeWrapper::from_json_bytes(text.as_bytes()).unwrap();
        assert_eq!(w.offset_table["T@g"][&1], 5);
        assert_eq!(w.offset_table["%RETRY%g@g"][&0], 0);
    }

    #[test]
    fn consumer_offsets_are_written_as_fastjson_writes_them() {
        let mut w = ConsumerOffsetSerializeWrapper::default();
        w.offset_table
            .insert("T@G".into(), [(0, 12), (1, 3)].into_iter().collect());
        w.offset_table
            .insert("%RETRY%G@G".into(), std::iter::once((0, 0)).collect());
        let body = w.to_json_bytes().unwrap();
        assert_eq!(
            &body[..],
            br#"{"offsetTable":{"%RETRY%G@G":{0:0},"T@G":{0:12,1:3}}}"#
        );
        assert_eq!(
            ConsumerOffsetSerializeWrapper::from_json_bytes(&body).unwrap(),
            w
        );
    }

    #[test]
    fn subscription_group_defaults_and_kv() {
        let g = SubscriptionGroupConfig::from_json_bytes(br#"{"groupName":"g"}"#).unwrap();
        assert_eq!((g.retry_max_times, g.retry_queue_nums), (16, 1));
        assert!(g.consume_enable && g.consume_broadcast_enable);
        let mut kv = KvTable::default();
        kv.table.insert("msgPutTotalTodayNow".into(), "5".into());
        assert_eq!(
            &kv.to_json_bytes().unwrap()[..],
            br#"{"table":{"msgPutTotalTodayNow":"5"}}"#
        );
    }
}
