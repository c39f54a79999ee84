//! `HARuntimeInfo` (RocketMQ 5.x): the replication status a broker answers
//! GET_BROKER_HA_STATUS (907) with and `rmq haStatus` shows: the master's CommitLog max
//! offset and, per slave, its acknowledged offset and lag; on a slave, its client's state.

use serde::{Deserialize, Serialize};

use super::{null_default, remoting_json};

/// `HARuntimeInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HaRuntimeInfo {
    /// The slave side: its client following the master (absent on a master).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ha_client_runtime_info: Option<HaClientRuntimeInfo>,
    /// One entry per connected slave.
    #[serde(deserialize_with = "null_default")]
    pub ha_connection_info: Vec<HaConnectionRuntimeInfo>,
    /// Slaves whose lag is below `haMaxGapNotInSync`.
    pub in_sync_slave_nums: i32,
    /// Whether the broker is a master.
    pub master: bool,
    /// The broker's CommitLog max offset.
    pub master_commit_log_max_offset: i64,
}

/// `HAConnectionRuntimeInfo`: one slave as its master sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HaConnectionRuntimeInfo {
    /// The slave's address.
    pub addr: String,
    /// Master max offset minus the slave's acknowledged offset (bytes).
    pub diff: i64,
    /// Whether `diff` is below `haMaxGapNotInSync`.
    pub in_sync: bool,
    /// The slave's last acknowledged CommitLog offset.
    pub slave_ack_offset: i64,
    /// The next offset the master sends.
    pub transfer_from_where: i64,
    /// Bytes sent in the last second.
    pub transferred_byte_in_second: i64,
}

/// `HAClientRuntimeInfo`: a slave's client.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HaClientRuntimeInfo {
    /// Whether connected to the master now.
    #[serde(alias = "activated")]
    pub is_activated: bool,
    /// Last read from the master (ms since the epoch).
    pub last_read_timestamp: i64,
    /// Last offset report to the master (ms since the epoch).
    pub last_write_timestamp: i64,
    /// The master's HA address.
    pub master_addr: String,
    /// The master's flushed offset (not carried by the 4.x protocol: 0).
    pub master_flush_offset: i64,
    /// The slave's CommitLog max offset.
    pub max_offset: i64,
    /// Bytes received in the last second.
    pub transferred_byte_in_second: i64,
}

remoting_json!(HaRuntimeInfo);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RemotingJson;

    #[test]
    fn field_names_are_rocketmqs() {
        let info = HaRuntimeInfo {
            master: true,
            master_commit_log_max_offset: 7,
            in_sync_slave_nums: 1,
            ha_connection_info: vec![HaConnectionRuntimeInfo {
                addr: "127.0.0.1:5".into(),
                slave_ack_offset: 7,
                in_sync: true,
                ..Default::default()
            }],
            ha_client_runtime_info: None,
        };
        let text = String::from_utf8(info.to_json_bytes().unwrap().to_vec()).unwrap();
        for key in [
            "\"master\":true",
            "\"masterCommitLogMaxOffset\":7",
            "\"inSyncSlaveNums\":1",
            "\"haConnectionInfo\":[",
            "\"slaveAckOffset\":7",
            "\"inSync\":true",
            "\"transferFromWhere\":0",
            "\"transferredByteInSecond\":0",
        ] {
            assert!(text.contains(key), "{key} missing in {text}");
        }
        assert_eq!(
            HaRuntimeInfo::from_json_bytes(text.as_bytes()).unwrap(),
            info
        );
        let slave =
            br#"{"master":false,"haClientRuntimeInfo":{"masterAddr":"m:1","activated":true}}"#;
        let s = HaRuntimeInfo::from_json_bytes(slave).unwrap();
        assert!(s.ha_client_runtime_info.unwrap().is_activated);
    }
}
