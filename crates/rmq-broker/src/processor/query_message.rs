//! QUERY_MESSAGE (12, by key through the IndexFile) and VIEW_MESSAGE_BY_ID (33, by CommitLog
//! offset); bodies are stored records back to back.

use rmq_protocol::header::{
    QueryMessageRequestHeader, QueryMessageResponseHeader, ViewMessageRequestHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::{FileRegion, Reply};
use rmq_store::SelectMappedBufferResult;

use super::{answer, bad_header, error_response, reply, response, StoreRegion};
use crate::error::RequestError;
use crate::state::BrokerState;

/// `MixAll.UNIQUE_MSG_QUERY_FLAG`.
const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";
/// `defaultQueryMaxNum`.
const DEFAULT_QUERY_MAX_NUM: i32 = 32;

fn regions(v: Vec<SelectMappedBufferResult>) -> Vec<Box<dyn FileRegion>> {
    v.into_iter()
        .map(|r| Box::new(StoreRegion(r)) as Box<dyn FileRegion>)
        .collect()
}

/// 12.
pub fn by_key(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let mut h = match QueryMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    // Java: Boolean.parseBoolean, so "TRUE" counts too.
    if req
        .ext_fields
        .get(UNIQUE_MSG_QUERY_FLAG)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    {
        h.max_num = DEFAULT_QUERY_MAX_NUM;
    }
    let max_num = match RequestError::count("maxNum", h.max_num) {
        Ok(n) => n,
        Err(e) => return reply(req, error_response(req, &e)),
    };
    let found = b.store.query_message(
        &h.topic,
        &h.key,
        max_num,
        h.begin_timestamp,
        h.end_timestamp,
    );
    let header = QueryMessageResponseHeader {
        index_last_update_timestamp: rmq_common::time::now_millis(),
        index_last_update_phyoffset: b.store.get_max_phy_offset(),
    };
    if found.is_empty() {
        return reply(
            req,
            response(
                req,
                ResponseCode::QUERY_NOT_FOUND,
                "can not find message, maybe time range not correct",
            )
            .with_header(&header),
        );
    }
    let command = response(req, ResponseCode::SUCCESS, "").with_header(&header);
    Some(Reply::WithFileRegions {
        command,
        regions: regions(found),
    })
}

/// 33.
pub fn by_id(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = match ViewMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    match b.store.look_message_by_offset(h.offset) {
        Some(r) => Some(Reply::WithFileRegions {
            command: response(req, ResponseCode::SUCCESS, ""),
            regions: regions(vec![r]),
        }),
        None => answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("can not find message by the offset, {}", h.offset),
        ),
    }
}
