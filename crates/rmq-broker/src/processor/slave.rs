//! What a broker group's roles add to the request path: a slave refuses writes (sends,
//! batches, send-backs) with SERVICE_NOT_AVAILABLE and a remark naming its master, as
//! RocketMQ's store refuses a slave's puts; and a master serves its consumer offsets to the
//! slaves' 10 s copy, GET_ALL_CONSUMER_OFFSET (43), in `ConsumerOffsetSerializeWrapper` JSON.
//! (The slave's copy itself is the control plane's: `rmq.broker.slave_sync`.)

use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, json_response, reply};
use crate::state::BrokerState;

/// The refusal of a write on a slave; `None` on a master or for a request that is no write.
#[must_use]
pub fn refuse_write(b: &BrokerState, req: &RemotingCommand) -> Option<Option<Reply>> {
    match RequestCode(req.code) {
        RequestCode::SEND_MESSAGE
        | RequestCode::SEND_MESSAGE_V2
        | RequestCode::SEND_BATCH_MESSAGE
        | RequestCode::CONSUMER_SEND_MSG_BACK => {}
        _ => return None,
    }
    let master = b.slave_of()?;
    let master = if master.is_empty() {
        "not known yet (no nameserver has named it)".to_owned()
    } else {
        master
    };
    Some(answer(
        req,
        ResponseCode::SERVICE_NOT_AVAILABLE,
        format!(
            "service not available now: this broker of group {} is a slave and takes no \
             writes; its master is {master}",
            b.config.broker_name
        ),
    ))
}

/// 43: every committed offset, as the master's slaves copy them.
pub fn all_consumer_offsets(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    reply(req, json_response(req, &b.offsets.wrapper()))
}
