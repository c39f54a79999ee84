//! Store housekeeping on demand, each on a blocking thread (they stop puts briefly or delete
//! files): CLEAN_EXPIRED_CONSUMEQUEUE (306, `mqadmin cleanExpiredCQ`: the ConsumeQueues whose
//! messages retention has already deleted), CLEAN_UNUSED_TOPIC (316, `cleanUnusedTopic`: the
//! ConsumeQueues of topics the broker no longer has) and DELETE_EXPIRED_COMMITLOG (329,
//! `deleteExpiredCommitLog`: a retention pass now, whatever the `deleteWhen` hour).

use std::sync::Arc;

use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{error_response, reply, response};
use crate::state::BrokerState;

/// 306: SUCCESS, the remark naming the queues removed.
pub async fn clean_expired_consume_queues(
    b: &Arc<BrokerState>,
    req: &RemotingCommand,
) -> Option<Reply> {
    let store = Arc::clone(&b.store);
    let result = tokio::task::spawn_blocking(move || store.clean_expired_consume_queues()).await;
    removed_reply(req, "CLEAN_EXPIRED_CONSUMEQUEUE", "expired", result)
}

/// 316: SUCCESS, the remark naming the queues removed.
pub async fn clean_unused_topics(b: &Arc<BrokerState>, req: &RemotingCommand) -> Option<Reply> {
    let broker = Arc::clone(b);
    let result = tokio::task::spawn_blocking(move || {
        broker
            .store
            .clean_unused_topics(&|topic| broker.topics.select(topic).is_some())
    })
    .await;
    removed_reply(req, "CLEAN_UNUSED_TOPIC", "unused", result)
}

/// 329: run the retention pass (files older than `fileReservedTime`) now.
pub async fn delete_expired_commit_log(
    b: &Arc<BrokerState>,
    req: &RemotingCommand,
) -> Option<Reply> {
    let store = Arc::clone(&b.store);
    let cmd = match tokio::task::spawn_blocking(move || store.delete_expired_files(false)).await {
        Ok(n) => {
            if n > 0 {
                log::info!("DELETE_EXPIRED_COMMITLOG deleted {n} CommitLog file(s)");
            }
            response(
                req,
                ResponseCode::SUCCESS,
                format!("deleted {n} expired CommitLog file(s)"),
            )
        }
        Err(e) => response(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("the CommitLog clean-up stopped: {e}"),
        ),
    };
    reply(req, cmd)
}

fn removed_reply(
    req: &RemotingCommand,
    what: &str,
    kind: &str,
    result: Result<rmq_store::Result<Vec<(String, i32)>>, tokio::task::JoinError>,
) -> Option<Reply> {
    let cmd = match result {
        Ok(Ok(removed)) => {
            let names: Vec<String> = removed.iter().map(|(t, q)| format!("{t}:{q}")).collect();
            let remark = format!(
                "removed {} {kind} consume queue(s){}{}",
                names.len(),
                if names.is_empty() { "" } else { ": " },
                names.join(", ")
            );
            if !names.is_empty() {
                log::info!("{what} {remark}");
            }
            response(req, ResponseCode::SUCCESS, remark)
        }
        Ok(Err(e)) => error_response(req, &e.into()),
        Err(e) => response(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("the consume queue clean-up stopped: {e}"),
        ),
    };
    reply(req, cmd)
}
