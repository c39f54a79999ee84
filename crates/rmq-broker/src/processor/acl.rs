//! The ACL admin codes, answered as RocketMQ 4.9.7's `AdminBrokerProcessor` does:
//! UPDATE_AND_CREATE_ACL_CONFIG (50), DELETE_ACL_CONFIG (51), GET_BROKER_CLUSTER_ACL_INFO
//! (52), UPDATE_GLOBAL_WHITE_ADDRS_CONFIG (53). The edits are `rmq_acl`'s (the file is
//! rewritten atomically and the new rules apply at once); the ACL check in front of the
//! dispatcher has already required `admin: true` for 50, 51 and 53.

use std::sync::Arc;

use rmq_acl::{AccountUpdate, AclError, AclFile};
use rmq_protocol::header::{
    CreateAccessConfigRequestHeader, DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader, UpdateGlobalWhiteAddrsConfigRequestHeader,
};
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, reply, response};
use crate::state::BrokerState;

const NOT_ENABLED: &str =
    "ACL is not enabled on this broker: set aclEnable=true (and aclFilePath) in broker.conf";

/// `UtilAll.split(text, ",")`: absent stays absent, blank is an empty list.
fn split(text: Option<&str>) -> Option<Vec<String>> {
    text.map(|t| {
        t.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    })
}

/// Run a file edit off the runtime's threads.
async fn edit<T: Send + 'static>(
    file: &Arc<AclFile>,
    f: impl FnOnce(&AclFile) -> Result<T, AclError> + Send + 'static,
) -> Result<T, String> {
    let file = Arc::clone(file);
    tokio::task::spawn_blocking(move || f(&file))
        .await
        .map_err(|e| format!("the ACL edit failed: {e}"))?
        .map_err(|e| e.to_string())
}

/// 50.
pub async fn update(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let failed = ResponseCode::UPDATE_AND_CREATE_ACL_CONFIG_FAILED;
    let Some(file) = &b.acl else {
        return answer(req, failed, NOT_ENABLED);
    };
    let h = decode_header!(req, CreateAccessConfigRequestHeader);
    let update = AccountUpdate {
        access_key: h.access_key.clone(),
        secret_key: h.secret_key,
        white_remote_address: h.white_remote_address,
        admin: h.admin,
        default_topic_perm: h.default_topic_perm,
        default_group_perm: h.default_group_perm,
        topic_perms: split(h.topic_perms.as_deref()),
        group_perms: split(h.group_perms.as_deref()),
    };
    match edit(file, move |f| f.update_account(&update)).await {
        Ok(()) => {
            log::info!("ACL: account '{}' created or updated", h.access_key);
            answer(req, ResponseCode::SUCCESS, "")
        }
        Err(e) => answer(req, failed, e),
    }
}

/// 51.
pub async fn delete(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let failed = ResponseCode::DELETE_ACL_CONFIG_FAILED;
    let Some(file) = &b.acl else {
        return answer(req, failed, NOT_ENABLED);
    };
    let h = decode_header!(req, DeleteAccessConfigRequestHeader);
    let ak = h.access_key.clone();
    match edit(file, move |f| f.delete_account(&ak)).await {
        Ok(true) => {
            log::info!("ACL: account '{}' deleted", h.access_key);
            answer(req, ResponseCode::SUCCESS, "")
        }
        Ok(false) => answer(
            req,
            failed,
            format!(
                "The accesskey[{}] corresponding to accessConfig has been deleted failed.",
                h.access_key
            ),
        ),
        Err(e) => answer(req, failed, e),
    }
}

/// 53.
pub async fn update_global_white(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let failed = ResponseCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED;
    let Some(file) = &b.acl else {
        return answer(req, failed, NOT_ENABLED);
    };
    let h = decode_header!(req, UpdateGlobalWhiteAddrsConfigRequestHeader);
    if let Some(p) = h.acl_file_full_path.as_deref().filter(|p| !p.is_empty()) {
        if !same_file(std::path::Path::new(p), file.path()) {
            return answer(
                req,
                failed,
                format!(
                    "this broker has one ACL file, {}; aclFileFullPath {p} is not it",
                    file.path().display()
                ),
            );
        }
    }
    let addrs = split(Some(&h.global_white_addrs)).unwrap_or_default();
    match edit(file, move |f| f.update_global_white(&addrs)).await {
        Ok(()) => answer(req, ResponseCode::SUCCESS, ""),
        Err(e) => answer(
            req,
            failed,
            format!(
                "The globalWhiteAddresses[{}] has been updated failed: {e}",
                h.global_white_addrs
            ),
        ),
    }
}

fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// 52: the ACL file's data version, with the broker's name, address and cluster.
pub fn version(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let Some(file) = &b.acl else {
        return answer(req, ResponseCode::SYSTEM_ERROR, NOT_ENABLED);
    };
    let v = file.data_version();
    let version = serde_json::json!({
        "counter": v.counter,
        "stateVersion": 0,
        "timestamp": v.timestamp,
    });
    let mut all = serde_json::Map::new();
    all.insert(file.path().display().to_string(), version.clone());
    let header = GetBrokerAclConfigResponseHeader {
        version: version.to_string(),
        all_acl_file_version: Some(serde_json::Value::Object(all).to_string()),
        broker_name: b.config.broker_name.clone(),
        broker_addr: b.config.broker_addr.to_string(),
        cluster_name: b.config.broker_cluster_name.clone(),
    };
    reply(
        req,
        response(req, ResponseCode::SUCCESS, "").with_header(&header),
    )
}
