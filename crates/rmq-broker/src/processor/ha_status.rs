//! GET_BROKER_HA_STATUS (907, RocketMQ 5.x's `getBrokerHaStatus`, `mqadmin haStatus`): the
//! store's replication figures as an `HARuntimeInfo` body. [`ha_runtime_info`] is also what
//! the Python control plane reads (`MessageStore.ha_runtime_info`), so both show the same.

use rmq_protocol::body::{HaClientRuntimeInfo, HaConnectionRuntimeInfo, HaRuntimeInfo};
use rmq_protocol::RemotingCommand;
use rmq_remoting::Reply;
use rmq_store::MessageStore;

use super::{json_response, reply};
use crate::state::BrokerState;

/// 907.
pub fn process(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    reply(req, json_response(req, &ha_runtime_info(&b.store)))
}

/// The store's replication figures as the `HARuntimeInfo` body.
#[must_use]
pub fn ha_runtime_info(store: &MessageStore) -> HaRuntimeInfo {
    let i = store.ha_runtime_info();
    HaRuntimeInfo {
        master: i.master,
        master_commit_log_max_offset: i.master_commit_log_max_offset,
        in_sync_slave_nums: i32::try_from(i.in_sync_slave_nums).unwrap_or(i32::MAX),
        ha_connection_info: i
            .ha_connection_info
            .into_iter()
            .map(|c| HaConnectionRuntimeInfo {
                addr: c.addr,
                diff: c.diff,
                in_sync: c.in_sync,
                slave_ack_offset: c.slave_ack_offset,
                transfer_from_where: c.transfer_from_where,
                transferred_byte_in_second: c.transferred_byte_in_second,
            })
            .collect(),
        ha_client_runtime_info: i.ha_client_runtime_info.map(|c| HaClientRuntimeInfo {
            is_activated: c.is_activated,
            last_read_timestamp: c.last_read_timestamp,
            last_write_timestamp: c.last_write_timestamp,
            master_addr: c.master_addr,
            master_flush_offset: 0,
            max_offset: c.max_offset,
            transferred_byte_in_second: c.transferred_byte_in_second,
        }),
    }
}
