//! Routing bodies served by nameservers: a topic's route (GET_ROUTEINFO_BY_TOPIC), the
//! cluster map (GET_BROKER_CLUSTER_INFO) and topic lists.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json};

/// Broker id of a master (`MixAll.MASTER_ID`).
pub const MASTER_ID: i64 = 0;

/// Most read or write queues of one topic on one broker that rmq creates, registers or acts
/// on (RocketMQ sets no bound; its `BenchmarkTest` topic has 1 024 queues). A route that
/// claims more, from a broken or hostile registration, would make every client allocate one
/// queue per claimed queue: brokers refuse to create such a topic, the nameserver refuses the
/// registration, and clients use at most this many.
pub const MAX_QUEUE_NUMS: i32 = 65_536;

/// `TopicRouteData`: which brokers hold a topic and their queue counts.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicRouteData {
    /// Brokers holding the topic, with their addresses.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_datas: Vec<BrokerData>,
    /// Filter servers per broker address (legacy class filtering).
    #[serde(default, deserialize_with = "null_default")]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    /// Ordered-topic config (`brokerName:queueNum;…`), when the topic is ordered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_topic_conf: Option<String>,
    /// Queue counts and permissions per broker.
    #[serde(default, deserialize_with = "null_default")]
    pub queue_datas: Vec<QueueData>,
}

/// `QueueData`: a topic's queues on one broker.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    /// Broker name.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_name: String,
    /// `PermName` bits.
    #[serde(default)]
    pub perm: i32,
    /// Readable queues.
    #[serde(default)]
    pub read_queue_nums: i32,
    /// `TopicSysFlag` bits (`topicSynFlag` before 4.9).
    #[serde(default, alias = "topicSynFlag")]
    pub topic_sys_flag: i32,
    /// Writable queues.
    #[serde(default)]
    pub write_queue_nums: i32,
}

/// `BrokerData`: one broker name (a master and its slaves) and its addresses by broker id.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    /// Address by broker id (0 = master). fastjson writes the ids as bare keys.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_addrs: BTreeMap<i64, String>,
    /// Broker name.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_name: String,
    /// Cluster name.
    #[serde(default, deserialize_with = "null_default")]
    pub cluster: String,
}

impl BrokerData {
    /// The master's address, if it is registered.
    #[must_use]
    pub fn master_addr(&self) -> Option<&str> {
        self.broker_addrs.get(&MASTER_ID).map(String::as_str)
    }

    /// The master's address, or else any slave's (`selectBrokerAddr` without the random
    /// pick: the lowest id).
    #[must_use]
    pub fn select_broker_addr(&self) -> Option<&str> {
        self.master_addr()
            .or_else(|| self.broker_addrs.values().next().map(String::as_str))
    }
}

/// `ClusterInfo` (GET_BROKER_CLUSTER_INFO).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// Brokers by broker name.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// Broker names by cluster name.
    #[serde(default, deserialize_with = "null_default")]
    pub cluster_addr_table: BTreeMap<String, BTreeSet<String>>,
}

/// `TopicList` (GET_ALL_TOPIC_LIST_FROM_NAMESERVER and friends).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    /// Broker the list came from, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broker_addr: Option<String>,
    /// Topic names.
    #[serde(default, deserialize_with = "null_default")]
    pub topic_list: BTreeSet<String>,
}

remoting_json!(
    TopicRouteData,
    QueueData,
    BrokerData,
    ClusterInfo,
    TopicList
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RemotingJson;

    /// What a pre-4.9.4 Java nameserver sends (fastjson, `Map<Long,String>` with bare keys).
    const JAVA_ROUTE: &str = r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSynFlag":0,"writeQueueNums":4}]}"#;

    #[test]
    fn parses_java_route_with_bare_keys() {
        let r = TopicRouteData::from_json_bytes(JAVA_ROUTE.as_bytes()).unwrap();
        assert_eq!(r.broker_datas.len(), 1);
        let b = &r.broker_datas[0];
        assert_eq!(b.master_addr(), Some("127.0.0.1:10911"));
        assert_eq!(b.broker_addrs[&1], "127.0.0.1:10921");
        assert_eq!(r.queue_datas[0].perm, 6);
        assert_eq!(r.order_topic_conf, None);
    }

    #[test]
    fn writes_standard_json_fastjson_can_read() {
        let r = TopicRouteData::from_json_bytes(JAVA_ROUTE.as_bytes()).unwrap();
        let out = r.to_json_bytes().unwrap();
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#
        );
        assert_eq!(TopicRouteData::from_json_bytes(&out).unwrap(), r);
    }

    #[test]
    fn nulls_and_unknown_fields_are_tolerated() {
        let r = TopicRouteData::from_json_bytes(
            br#"{"queueDatas":null,"brokerDatas":[],"topicQueueMappingByBroker":{"x":1}}"#,
        )
        .unwrap();
        assert!(r.queue_datas.is_empty());
        assert!(TopicRouteData::from_json_bytes(b"{\"queueDatas\":3}").is_err());
    }

    #[test]
    fn cluster_info_round_trip() {
        let mut c = ClusterInfo::default();
        c.broker_addr_table.insert(
            "broker-a".into(),
            BrokerData {
                broker_addrs: [(0, "127.0.0.1:10911".to_owned())].into(),
                broker_name: "broker-a".into(),
                cluster: "C".into(),
            },
        );
        c.cluster_addr_table
            .insert("C".into(), ["broker-a".to_owned()].into());
        let back = ClusterInfo::from_json_bytes(&c.to_json_bytes().unwrap()).unwrap();
        assert_eq!(back, c);
        let t = TopicList {
            broker_addr: None,
            topic_list: ["a".to_owned(), "b".to_owned()].into(),
        };
        assert_eq!(
            &t.to_json_bytes().unwrap()[..],
            br#"{"topicList":["a","b"]}"#
        );
    }
}
