//! Broker settings, named as in RocketMQ's `BrokerConfig` (`broker.conf` keys).

use std::net::SocketAddr;
use std::path::PathBuf;

use rmq_protocol::body::{PERM_READ, PERM_WRITE};

/// Settings of one broker. `Default` is the only source of defaults.
#[derive(Debug, Clone)]
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
    /// Where `topics.json`, `consumerOffset.json` and `subscriptionGroup.json` live
    /// (`<storePathRootDir>/config`).
    pub config_dir: PathBuf,
    /// `regionId`, returned in send responses (`MSG_REGION`).
    pub region_id: String,
    /// `traceOn`, returned in send responses (`TRACE_ON`).
    pub trace_on: bool,
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
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            broker_name: "broker-a".into(),
            broker_cluster_name: "DefaultCluster".into(),
            broker_id: 0,
            broker_addr: SocketAddr::from(([127, 0, 0, 1], 10911)),
            auto_create_topic_enable: true,
            auto_create_subscription_group: true,
            default_topic_queue_nums: 8,
            broker_permission: PERM_READ | PERM_WRITE,
            long_polling_enable: true,
            short_polling_time_mills: 1000,
            transfer_msg_by_heap: false,
            config_dir: PathBuf::from("store/config"),
            region_id: "DefaultRegion".into(),
            trace_on: true,
            cluster_topic_enable: true,
            broker_topic_enable: true,
            channel_expired_timeout_ms: 120_000,
            rebalance_lock_max_live_time_ms: 60_000,
            reject_transaction_message: false,
            server_channel_max_idle_time_seconds: 120,
        }
    }
}

impl BrokerConfig {
    /// Set one `broker.conf` key from its text.
    ///
    /// # Errors
    /// An unknown key, or a value that does not parse, named in the message.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn parse<T: std::str::FromStr>(key: &str, v: &str) -> Result<T, String> {
            v.trim()
                .parse()
                .map_err(|_| format!("broker config: {key} = {v:?} does not parse"))
        }
        match key {
            "brokerName" => self.broker_name = value.to_owned(),
            "brokerClusterName" => self.broker_cluster_name = value.to_owned(),
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
            "regionId" => self.region_id = value.to_owned(),
            "traceOn" => self.trace_on = parse(key, value)?,
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
            _ => return Err(format!("broker config: unknown key {key}")),
        }
        Ok(())
    }
}
