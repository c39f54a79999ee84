//! GET_BROKER_RUNTIME_INFO (28): a KVTable of store figures and the version.

use rmq_protocol::body::KvTable;
use rmq_protocol::RemotingCommand;
use rmq_remoting::Reply;

use super::{json_response, reply};
use crate::controller::Broker;

/// 28.
pub fn process(b: &Broker, req: &RemotingCommand) -> Option<Reply> {
    let mut t = KvTable::default();
    for (k, v) in b.store.runtime_info() {
        t.table.insert(k.to_owned(), v);
    }
    t.table.insert("brokerVersionDesc".into(), "V4_9_8".into());
    t.table.insert(
        "brokerVersion".into(),
        rmq_protocol::version::CURRENT_VERSION.to_string(),
    );
    t.table
        .insert("bootTimestamp".into(), b.boot_timestamp.to_string());
    t.table.insert(
        "msgPutTotalTodayNow".into(),
        t.table
            .get("putMessageTimesTotal")
            .cloned()
            .unwrap_or_default(),
    );
    t.table.insert("brokerActive".into(), "true".into());
    reply(req, json_response(req, &t))
}
