//! Broker settings, named as in RocketMQ's `BrokerConfig` (`broker.conf` keys). The fields
//! are this file's; defaults, bounds and error messages are the config schema's
//! (`rmq_common::config_schema`, shared with the store and the Python control plane).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

use rmq_common::config_schema as schema;

/// Settings of one broker. `Default` is the only source of defaults.
#[derive(Debug, Clone)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "one field per boolean key of RocketMQ's BrokerConfig"
)]
pub struct BrokerConfig {
    /// `brokerName`: the replica set this broker belongs to.
    pub broker_name: String,
    /// `brokerClusterName`.
    pub broker_cluster_name: String,
    /// `brokerId`: 0 = master.
    pub broker_id: i64,
    /// `brokerIP1:listenPort` as clients reach it; also the store host in message ids.
    pub broker_addr: SocketAddr,
    /// `autoCreateTopicEnable` (default true): TBW102 exists with the inherit bit, so sends
    /// to unknown topics create them.
    pub auto_create_topic_enable: bool,
    /// `autoCreateSubscriptionGroup` (default true).
    pub auto_create_subscription_group: bool,
    /// `defaultTopicQueueNums` (default 8): queues of TBW102.
    pub default_topic_queue_nums: i32,
    /// `brokerPermission` (default 6, read + write).
    pub broker_permission: i32,
    /// `longPollingEnable` (default true): hold pulls up to the client's suspend timeout.
    pub long_polling_enable: bool,
    /// `shortPollingTimeMills` (default 1000): hold time when long polling is off.
    pub short_polling_time_mills: u64,
    /// `transferMsgByHeap` (default false): copy pull bodies instead of `sendfile`.
    pub transfer_msg_by_heap: bool,
    /// `slaveReadEnable` (default false): pulls may be redirected to a slave
    /// (`suggestWhichBrokerId`) when their data is cold on the master.
    pub slave_read_enable: bool,
    /// Where `topics.json`, `consumerOffset.json` and `subscriptionGroup.json` live
    /// (`<storePathRootDir>/config`).
    pub config_dir: PathBuf,
    /// `regionId`, returned in send responses (`MSG_REGION`).
    pub region_id: String,
    /// `traceOn`, returned in send responses (`TRACE_ON`).
    pub trace_on: bool,
    /// `traceTopicEnable` (default false): create `msg_trace_topic_name` at start.
    pub trace_topic_enable: bool,
    /// `msgTraceTopicName` (default `RMQ_SYS_TRACE_TOPIC`): the message trace topic.
    pub msg_trace_topic_name: String,
    /// `clusterTopicEnable`: the cluster-name topic is readable and writable.
    pub cluster_topic_enable: bool,
    /// `brokerTopicEnable`: the broker-name topic is readable and writable.
    pub broker_topic_enable: bool,
    /// `channelExpiredTimeout` (ms, default 120 000): clients silent this long are dropped.
    pub channel_expired_timeout_ms: u64,
    /// `rocketmq.broker.rebalance.lockMaxLiveTime` (ms, default 60 000; a JVM system property
    /// in RocketMQ): an orderly consumer's queue lock not renewed for this long expires.
    pub rebalance_lock_max_live_time_ms: i64,
    /// `rejectTransactionMessage` (default false): refuse half messages (NO_PERMISSION).
    pub reject_transaction_message: bool,
    /// `serverChannelMaxIdleTimeSeconds` (default 120; 0 = never): a connection with no
    /// traffic either way for this long is closed.
    pub server_channel_max_idle_time_seconds: u64,
    /// The `tls.server.*` keys as given (read by `rmq_remoting::tls::ServerTls`).
    pub tls_server: HashMap<String, String>,
    /// `aclEnable` (default false): check every request against the ACL file.
    pub acl_enable: bool,
    /// `aclFilePath` (default `$ROCKETMQ_HOME/conf/plain_acl.yml`, see
    /// [`BrokerConfig::acl_file`]).
    pub acl_file_path: Option<PathBuf>,
    /// `metricsExporterType` (default NONE): PROM counts the Prometheus metrics.
    pub metrics_exporter_type: String,
}

impl Default for BrokerConfig {
    /// The config schema's defaults (`rmq_common::config_schema`); the keys whose default is
    /// worked out at start-up get fixed stand-ins (`broker-a`, `127.0.0.1:10911`).
    fn default() -> Self {
        Self {
            broker_name: "broker-a".into(),
            broker_cluster_name: schema_default("brokerClusterName"),
            broker_id: schema_default("brokerId"),
            broker_addr: SocketAddr::from(([127, 0, 0, 1], 10911)),
            auto_create_topic_enable: schema_default("autoCreateTopicEnable"),
            auto_create_subscription_group: schema_default("autoCreateSubscriptionGroup"),
            default_topic_queue_nums: schema_default("defaultTopicQueueNums"),
            broker_permission: schema_default("brokerPermission"),
            long_polling_enable: schema_default("longPollingEnable"),
            short_polling_time_mills: schema_default("shortPollingTimeMills"),
            transfer_msg_by_heap: schema_default("transferMsgByHeap"),
            slave_read_enable: schema_default("slaveReadEnable"),
            config_dir: PathBuf::from("store/config"),
            region_id: schema_default("regionId"),
            trace_on: schema_default("traceOn"),
            trace_topic_enable: schema_default("traceTopicEnable"),
            msg_trace_topic_name: schema_default("msgTraceTopicName"),
            cluster_topic_enable: schema_default("clusterTopicEnable"),
            broker_topic_enable: schema_default("brokerTopicEnable"),
            channel_expired_timeout_ms: schema_default("channelExpiredTimeout"),
            rebalance_lock_max_live_time_ms: schema_default(
                "rocketmq.broker.rebalance.lockMaxLiveTime",
            ),
            reject_transaction_message: schema_default("rejectTransactionMessage"),
            server_channel_max_idle_time_seconds: schema_default("serverChannelMaxIdleTimeSeconds"),
            tls_server: HashMap::new(),
            acl_enable: schema_default("aclEnable"),
            acl_file_path: None,
            metrics_exporter_type: schema_default("metricsExporterType"),
        }
    }
}

/// The schema's default of `key`, parsed. The schema's tests check that every default passes
/// its own check; `defaults_come_from_the_schema` below that these keys have one.
fn schema_default<T: FromStr>(key: &str) -> T {
    schema::broker_key(key)
        .and_then(|k| k.default)
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("the config schema has no valid default for broker key {key}"))
}

impl BrokerConfig {
    /// Set one `broker.conf` key from its text, checked and bounded by the config schema
    /// (`rmq_common::config_schema`, the same rules and messages as the store's and Python's).
    ///
    /// # Errors
    /// A key the broker server does not read, or a value the schema refuses, named in the
    /// message.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn parse<T: FromStr>(key: &str, v: &str) -> Result<T, String> {
            let text = schema::check_broker_value(key, v)
                .map_err(|e| format!("broker config: {e}"))?
                .text;
            text.parse()
                .map_err(|_| format!("broker config: {key} = {text:?} does not fit its field"))
        }
        match key {
            "brokerName" => self.broker_name = parse(key, value)?,
            "brokerClusterName" => self.broker_cluster_name = parse(key, value)?,
            "brokerId" => self.broker_id = parse(key, value)?,
            "brokerAddr" => self.broker_addr = parse(key, value)?,
            "autoCreateTopicEnable" => self.auto_create_topic_enable = parse(key, value)?,
            "autoCreateSubscriptionGroup" => {
                self.auto_create_subscription_group = parse(key, value)?;
            }
            "defaultTopicQueueNums" => self.default_topic_queue_nums = parse(key, value)?,
            "brokerPermission" => self.broker_permission = parse(key, value)?,
            "longPollingEnable" => self.long_polling_enable = parse(key, value)?,
            "shortPollingTimeMills" => self.short_polling_time_mills = parse(key, value)?,
            "transferMsgByHeap" => self.transfer_msg_by_heap = parse(key, value)?,
            "slaveReadEnable" => self.slave_read_enable = parse(key, value)?,
            "regionId" => self.region_id = parse(key, value)?,
            "traceOn" => self.trace_on = parse(key, value)?,
            "traceTopicEnable" => self.trace_topic_enable = parse(key, value)?,
            "msgTraceTopicName" => self.msg_trace_topic_name = parse(key, value)?,
            "clusterTopicEnable" => self.cluster_topic_enable = parse(key, value)?,
            "brokerTopicEnable" => self.broker_topic_enable = parse(key, value)?,
            "channelExpiredTimeout" => self.channel_expired_timeout_ms = parse(key, value)?,
            "rocketmq.broker.rebalance.lockMaxLiveTime" => {
                self.rebalance_lock_max_live_time_ms = parse(key, value)?;
            }
            "rejectTransactionMessage" => self.reject_transaction_message = parse(key, value)?,
            "serverChannelMaxIdleTimeSeconds" => {
                self.server_channel_max_idle_time_seconds = parse(key, value)?;
            }
            k if rmq_remoting::tls::SERVER_KEYS.contains(&k) => {
                let text: String = parse(key, value)?;
                self.tls_server.insert(key.to_owned(), text);
            }
            "aclEnable" => self.acl_enable = parse(key, value)?,
            "aclFilePath" => self.acl_file_path = Some(parse(key, value)?),
            "metricsExporterType" => self.metrics_exporter_type = parse(key, value)?,
            _ => return Err(format!("broker config: {key} is not a broker server key")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::body::{PERM_READ, PERM_WRITE};

    #[test]
    fn defaults_come_from_the_schema() {
        let c = BrokerConfig::default();
        assert_eq!(c.broker_cluster_name, "DefaultCluster");
        assert_eq!(c.default_topic_queue_nums, 8);
        assert_eq!(c.broker_permission, PERM_READ | PERM_WRITE);
        assert_eq!(c.channel_expired_timeout_ms, 120_000);
        assert_eq!(c.region_id, "DefaultRegion");
    }

    #[test]
    fn set_checks_through_the_schema() {
        let mut c = BrokerConfig::default();
        c.set("brokerPermission", "4").unwrap();
        assert_eq!(c.broker_permission, 4);
        c.set("autoCreateTopicEnable", "FALSE").unwrap();
        assert!(!c.auto_create_topic_enable);
        let e = c.set("brokerPermission", "5").unwrap_err();
        assert_eq!(
            e,
            "broker config: brokerPermission = '5' is not allowed; use 6 (read and write), \
             4 (read only) or 2 (write only)"
        );
        let e = c.set("defaultTopicQueueNums", "0").unwrap_err();
        assert!(e.ends_with("use an integer from 1 to 1024"), "{e}");
        let e = c.set("flushDiskType", "SYNC_FLUSH").unwrap_err();
        assert!(e.contains("not a broker server key"), "{e}");
        c.set("brokerAddr", "10.0.0.5:10911").unwrap();
        assert_eq!(c.broker_addr.to_string(), "10.0.0.5:10911");
    }
}
