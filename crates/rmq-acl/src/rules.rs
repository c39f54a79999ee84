//! The rules read from plain_acl.yml and the check of one request against them, in RocketMQ
//! 4.9.7 `PlainPermissionManager.validate`'s order: global white list (passes), AccessKey
//! present and known, the account's white address (passes), the signature, then admin and
//! the topic/group permissions. Pure and in memory: no I/O per request.

use std::collections::HashMap;
use std::net::IpAddr;

use rmq_common::topic::TRACE_TOPIC;
use rmq_protocol::acl::{signature_matches, ACCESS_KEY};
use rmq_protocol::{RemotingCommand, RequestCode};

use crate::address::AddressPattern;
use crate::perm::Perm;
use crate::resource::{needs, Policy, Resource};

/// Field that RocketMQ's clients add after signing and its servers leave out of the check
/// (`MixAll.UNIQUE_MSG_QUERY_FLAG`).
const UNIQUE_MSG_QUERY_FLAG: &str = "_UNIQUE_KEY_QUERY";

/// The file's `dataVersion` (RocketMQ's `DataVersion`, moved on by every ACL admin edit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DataVersion {
    /// Edits so far.
    pub counter: i64,
    /// When the last edit was made (ms).
    pub timestamp: i64,
}

/// One account of the file.
#[derive(Clone)]
pub struct Account {
    /// `accessKey`.
    pub access_key: String,
    /// `secretKey` (never logged: `Debug` is not derived).
    pub secret_key: String,
    /// `whiteRemoteAddress`: requests from here pass without a signature.
    pub white_remote_address: AddressPattern,
    /// `admin`.
    pub admin: bool,
    /// `defaultTopicPerm` (DENY when absent).
    pub default_topic_perm: Perm,
    /// `defaultGroupPerm` (DENY when absent).
    pub default_group_perm: Perm,
    /// `topicPerms`.
    pub topic_perms: HashMap<String, Perm>,
    /// `groupPerms`.
    pub group_perms: HashMap<String, Perm>,
}

impl Account {
    /// The permission this account owns on `resource`.
    #[must_use]
    pub fn owned(&self, resource: &Resource) -> Perm {
        match resource {
            Resource::Topic(t) => *self.topic_perms.get(t).unwrap_or(&self.default_topic_perm),
            Resource::Group(g) => *self.group_perms.get(g).unwrap_or(&self.default_group_perm),
        }
    }
}

/// Everything plain_acl.yml says.
#[derive(Clone, Default)]
pub struct AclRules {
    /// `globalWhiteRemoteAddresses`.
    pub global_white: Vec<AddressPattern>,
    /// Accounts by `accessKey`.
    pub accounts: HashMap<String, Account>,
    /// `dataVersion`.
    pub data_version: DataVersion,
}

/// Why a request was refused: the remark of the NO_PERMISSION answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

impl AclRules {
    /// Check `cmd`, received from `peer`, under `policy`.
    ///
    /// # Errors
    /// The request is not allowed; the [`Refusal`] says which account, resource and
    /// permission.
    pub fn check(
        &self,
        peer: IpAddr,
        cmd: &RemotingCommand,
        policy: Policy,
    ) -> Result<(), Refusal> {
        if self.global_white.iter().any(|p| p.matches(peer)) {
            return Ok(());
        }
        let code = code_name(cmd.code);
        let Some(ak) = cmd.ext_fields.get(ACCESS_KEY) else {
            return Err(Refusal(format!(
                "request {code} carries no AccessKey: sign it with an account of the ACL file \
                 (AclClientRPCHook, or the client's access key and secret key)"
            )));
        };
        let Some(account) = self.accounts.get(ak) else {
            return Err(Refusal(format!(
                "account '{ak}' is not known (request {code})"
            )));
        };
        if account.white_remote_address.matches(peer) {
            return Ok(());
        }
        if !signed_by(cmd, &account.secret_key) {
            return Err(Refusal(format!(
                "signature check failed for account '{ak}' (request {code}): wrong secret key, \
                 or the request was changed after signing"
            )));
        }
        let needed = needs(policy, cmd)
            .map_err(|e| Refusal(format!("account '{ak}': cannot read request {code}: {e}")))?;
        // RocketMQ lets message traces through whatever the topic permissions say.
        if let [(Resource::Topic(t), p)] = &needed.resources[..] {
            if t == TRACE_TOPIC && *p == Perm::PUB {
                return Ok(());
            }
        }
        if needed.admin && !account.admin {
            return Err(Refusal(format!(
                "account '{ak}' is not an admin: request {code} needs admin: true"
            )));
        }
        for (resource, perm) in &needed.resources {
            if !account.owned(resource).allows(*perm) {
                return Err(Refusal(format!(
                    "account '{ak}' has no {perm} permission on {resource}"
                )));
            }
        }
        Ok(())
    }
}

fn code_name(code: i32) -> String {
    match RequestCode(code).name() {
        Some(name) => format!("{name} ({code})"),
        None => format!("code {code}"),
    }
}

fn signed_by(cmd: &RemotingCommand, secret: &str) -> bool {
    if cmd.ext_fields.contains_key(UNIQUE_MSG_QUERY_FLAG) {
        let mut without = cmd.clone();
        without.ext_fields.remove(UNIQUE_MSG_QUERY_FLAG);
        return signature_matches(&without, secret);
    }
    signature_matches(cmd, secret)
}

impl std::fmt::Debug for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Account")
            .field("access_key", &self.access_key)
            .field("secret_key", &"<redacted>")
            .field("admin", &self.admin)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for AclRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclRules")
            .field("global_white", &self.global_white)
            .field("accounts", &self.accounts.values().collect::<Vec<_>>())
            .field("data_version", &self.data_version)
            .finish()
    }
}
