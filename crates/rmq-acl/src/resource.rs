//! What each request code needs, as RocketMQ 4.9.7's `PlainAccessValidator.parse` and
//! `Permission.ADMIN_CODE` decide it, extended where rmq is stricter: batch sends and lite
//! pulls are checked like single sends and pulls, DLQ topics like retry topics (by their
//! group), and every state-changing admin code needs `admin: true` (RocketMQ lists five).
//! The nameserver has its own admin list ([`Policy::Namesrv`]).

use rmq_common::topic::{DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX};
use rmq_protocol::body::HeartbeatData;
use rmq_protocol::{RemotingCommand, RemotingJson, RequestCode};

use crate::perm::Perm;

/// Which server's rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// A broker: topics and groups, admin codes that change the broker.
    Broker,
    /// A nameserver: registrations, permission changes and KV writes need admin; the rest
    /// only a known account with a valid signature.
    Namesrv,
}

/// A topic or a consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Resource {
    /// A topic (not a retry or DLQ topic).
    Topic(String),
    /// A consumer group (also what its `%RETRY%` and `%DLQ%` topics are checked as).
    Group(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Topic(t) => write!(f, "topic '{t}'"),
            Self::Group(g) => write!(f, "group '{g}'"),
        }
    }
}

/// What one request needs.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// The account must have `admin: true`.
    pub admin: bool,
    /// Permissions on topics and groups.
    pub resources: Vec<(Resource, Perm)>,
}

impl Needs {
    fn topic(&mut self, topic: Option<&str>, perm: Perm) {
        if let Some(t) = topic {
            self.resources.push((topic_resource(t), perm));
        }
    }
    fn group(&mut self, group: Option<&str>) {
        if let Some(g) = group {
            self.resources
                .push((Resource::Group(g.to_owned()), Perm::SUB));
        }
    }
}

/// A topic name as a resource: `%RETRY%G` and `%DLQ%G` are the group `G`.
#[must_use]
pub fn topic_resource(topic: &str) -> Resource {
    for prefix in [RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX] {
        if let Some(g) = topic.strip_prefix(prefix) {
            return Resource::Group(g.to_owned());
        }
    }
    Resource::Topic(topic.to_owned())
}

/// Codes that need `admin: true` on a broker.
pub const BROKER_ADMIN_CODES: &[RequestCode] = &[
    // RocketMQ 4.9.7's Permission.ADMIN_CODE
    RequestCode::UPDATE_AND_CREATE_TOPIC,
    RequestCode::UPDATE_BROKER_CONFIG,
    RequestCode::DELETE_TOPIC_IN_BROKER,
    RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
    RequestCode::DELETE_SUBSCRIPTIONGROUP,
    // rmq: the other codes that change offsets, files or the ACL itself
    RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
    RequestCode::CLONE_GROUP_OFFSET,
    RequestCode::CLEAN_EXPIRED_CONSUMEQUEUE,
    RequestCode::CLEAN_UNUSED_TOPIC,
    RequestCode::DELETE_EXPIRED_COMMITLOG,
    RequestCode::UPDATE_AND_CREATE_ACL_CONFIG,
    RequestCode::DELETE_ACL_CONFIG,
    RequestCode::UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
];

/// Codes that need `admin: true` on a nameserver.
pub const NAMESRV_ADMIN_CODES: &[RequestCode] = &[
    RequestCode::REGISTER_BROKER,
    RequestCode::UNREGISTER_BROKER,
    RequestCode::WIPE_WRITE_PERM_OF_BROKER,
    RequestCode::ADD_WRITE_PERM_OF_BROKER,
    RequestCode::DELETE_TOPIC_IN_NAMESRV,
    RequestCode::PUT_KV_CONFIG,
    RequestCode::DELETE_KV_CONFIG,
    RequestCode::UPDATE_NAMESRV_CONFIG,
];

/// What `cmd` needs under `policy`.
///
/// # Errors
/// A HEART_BEAT body that is not a heartbeat (its groups cannot be known).
pub fn needs(policy: Policy, cmd: &RemotingCommand) -> Result<Needs, String> {
    let code = RequestCode(cmd.code);
    let f = |k: &str| cmd.ext_fields.get(k);
    let mut n = Needs::default();
    match policy {
        Policy::Namesrv => {
            n.admin = NAMESRV_ADMIN_CODES.contains(&code);
            return Ok(n);
        }
        Policy::Broker => n.admin = BROKER_ADMIN_CODES.contains(&code),
    }
    match code {
        RequestCode::SEND_MESSAGE => send(&mut n, f("topic")),
        RequestCode::SEND_MESSAGE_V2 | RequestCode::SEND_BATCH_MESSAGE => {
            send(&mut n, f("b"));
        }
        RequestCode::CONSUMER_SEND_MSG_BACK => n.group(f("group")),
        RequestCode::PULL_MESSAGE | RequestCode::LITE_PULL_MESSAGE => {
            n.topic(f("topic"), Perm::SUB);
            n.group(f("consumerGroup"));
        }
        RequestCode::QUERY_MESSAGE => n.topic(f("topic"), Perm::SUB),
        RequestCode::HEART_BEAT => {
            let body = cmd.body.as_deref().unwrap_or(b"{}");
            let hb = HeartbeatData::from_json_bytes(body).map_err(|e| e.to_string())?;
            for c in &hb.consumer_data_set {
                n.group(Some(&c.group_name));
                for s in &c.subscription_data_set {
                    n.topic(Some(&s.topic), Perm::SUB);
                }
            }
        }
        RequestCode::UNREGISTER_CLIENT | RequestCode::GET_CONSUMER_LIST_BY_GROUP => {
            n.group(f("consumerGroup"));
        }
        RequestCode::UPDATE_CONSUMER_OFFSET | RequestCode::QUERY_CONSUMER_OFFSET => {
            n.group(f("consumerGroup"));
            n.topic(f("topic"), Perm::SUB);
        }
        _ => {}
    }
    Ok(n)
}

/// A send needs PUB on its topic; a send to a retry (or DLQ) topic is a consumer's and needs
/// SUB on the group the topic belongs to (RocketMQ reads the group from the header, which for
/// the client's fallback send is its inner producer group: rmq checks the group touched).
fn send(n: &mut Needs, topic: Option<&str>) {
    match topic.map(topic_resource) {
        Some(Resource::Group(g)) => n.group(Some(&g)),
        Some(t @ Resource::Topic(_)) => n.resources.push((t, Perm::PUB)),
        None => {}
    }
}
