//! GET_BROKER_RUNTIME_INFO (28): a KVTable with the keys of RocketMQ's
//! `AdminBrokerProcessor.prepareRuntimeInfo` (what `mqadmin clusterList` and `brokerStatus`
//! read): the store's figures, the put/get rates and day totals of [`crate::broker_stats`],
//! the version, and the request-queue figures.
//!
//! rmq runs every request as a task on the async runtime instead of queueing it for a thread
//! pool, so the `*ThreadPoolQueueSize` and `*HeadWaitTimeMills` figures are 0: no request
//! waits in a queue. The queue capacities and `startAcceptSendRequestTimeStamp` are left out:
//! rmq has no such queues or setting (`brokerStatus` lists what is there; `clusterList` reads
//! none of them).

use rmq_protocol::body::KvTable;
use rmq_protocol::RemotingCommand;
use rmq_remoting::Reply;

use super::{json_response, reply};
use crate::state::BrokerState;

/// `MQVersion.getVersionDesc(CURRENT_VERSION)` of the release rmq speaks.
const VERSION_DESC: &str = "V4_9_8";

/// 28.
pub fn process(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let mut t = KvTable::default();
    let now = rmq_common::time::now_millis();
    let store = b.store.runtime_info();
    let stats = b.stats.runtime_info(now);
    for (k, v) in store.into_iter().chain(stats) {
        t.table.insert(k.to_owned(), v);
    }
    let puts: f64 = t
        .table
        .get("putMessageTimesTotal")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let bytes: f64 = t
        .table
        .get("putMessageSizeTotal")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let average = if puts > 0.0 { bytes / puts } else { 0.0 };
    let fixed = [
        ("brokerVersionDesc", VERSION_DESC.to_owned()),
        (
            "brokerVersion",
            rmq_protocol::version::CURRENT_VERSION.to_string(),
        ),
        ("bootTimestamp", b.boot_timestamp.to_string()),
        ("brokerActive", "true".to_owned()),
        ("putMessageAverageSize", average.to_string()),
        ("sendThreadPoolQueueSize", "0".to_owned()),
        ("pullThreadPoolQueueSize", "0".to_owned()),
        ("queryThreadPoolQueueSize", "0".to_owned()),
        ("EndTransactionQueueSize", "0".to_owned()),
        ("sendThreadPoolQueueHeadWaitTimeMills", "0".to_owned()),
        ("pullThreadPoolQueueHeadWaitTimeMills", "0".to_owned()),
        ("queryThreadPoolQueueHeadWaitTimeMills", "0".to_owned()),
    ];
    for (k, v) in fixed {
        t.table.insert(k.to_owned(), v);
    }
    t.table.extend(b.extra_runtime_info());
    reply(req, json_response(req, &t))
}
