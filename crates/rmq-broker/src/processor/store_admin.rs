//! CLEAN_EXPIRED_CONSUMEQUEUE (306, `mqadmin cleanExpiredCQ`): drop the ConsumeQueues whose
//! messages retention has already deleted from the CommitLog (see
//! `MessageStore::clean_expired_consume_queues`). It briefly stops puts, so it runs on a
//! blocking thread rather than on the async runtime.

use std::sync::Arc;

use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{reply, response};
use crate::controller::Broker;
use crate::error::store_error_to_response;

/// 306: SUCCESS, the remark naming the queues removed.
pub async fn clean_expired_consume_queues(b: &Arc<Broker>, req: &RemotingCommand) -> Option<Reply> {
    let store = Arc::clone(&b.store);
    let result = tokio::task::spawn_blocking(move || store.clean_expired_consume_queues()).await;
    let cmd = match result {
        Ok(Ok(removed)) => {
            let names: Vec<String> = removed.iter().map(|(t, q)| format!("{t}:{q}")).collect();
            let remark = format!(
                "removed {} expired consume queue(s){}{}",
                names.len(),
                if names.is_empty() { "" } else { ": " },
                names.join(", ")
            );
            if !names.is_empty() {
                eprintln!("rmq-broker INFO: CLEAN_EXPIRED_CONSUMEQUEUE {remark}");
            }
            response(req, ResponseCode::SUCCESS, remark)
        }
        Ok(Err(e)) => {
            let (code, remark) = store_error_to_response(&e);
            response(req, code, remark)
        }
        Err(e) => response(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("the consume queue clean-up stopped: {e}"),
        ),
    };
    reply(req, cmd)
}
