//! Live consumers (RocketMQ's `ConsumerManager`): group → client connections,
//! subscriptions and consume settings, refreshed by heartbeats. When a
//! consumer group's client set changes, every client of the group gets
//! NOTIFY_CONSUMER_IDS_CHANGED (40, oneway) so it rebalances at once. Connections are
//! dropped when they close or stay silent for `channelExpiredTimeout`.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmq_protocol::body::{
    Connection as ConnectionInfo, ConsumeFromWhere, ConsumeType, ConsumerConnection, MessageModel,
    SubscriptionData,
};
use rmq_protocol::header::NotifyConsumerIdsChangedRequestHeader;
use rmq_protocol::{LanguageCode, RemotingCommand, RequestCode};
use rmq_remoting::Connection;

/// One client connection of a group.
#[derive(Clone)]
pub struct ClientChannel {
    /// The connection.
    pub conn: Connection,
    /// `ip@instance`.
    pub client_id: String,
    /// The client's language, from its heartbeat command.
    pub language: LanguageCode,
    /// The client's version (`MQVersion` ordinal), from its heartbeat command.
    pub version: i32,
    /// Last heartbeat.
    pub last_update: Instant,
}

impl ClientChannel {
    /// The connection as admin tools list it.
    #[must_use]
    pub fn to_connection_info(&self) -> ConnectionInfo {
        ConnectionInfo {
            client_addr: self.conn.peer().to_string(),
            client_id: self.client_id.clone(),
            language: self.language,
            version: self.version,
        }
    }
}

/// One consumer group.
pub struct ConsumerGroupInfo {
    /// Clients by connection id.
    pub channels: HashMap<u64, ClientChannel>,
    /// Subscriptions by topic.
    pub subscriptions: HashMap<String, SubscriptionData>,
    /// Push or pull.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// Where new consumers start.
    pub consume_from_where: ConsumeFromWhere,
}

/// What a consumer heartbeat registers.
pub struct ConsumerRegistration {
    /// Consume type.
    pub consume_type: ConsumeType,
    /// Message model.
    pub message_model: MessageModel,
    /// Start position.
    pub consume_from_where: ConsumeFromWhere,
    /// Subscriptions.
    pub subscriptions: Vec<SubscriptionData>,
}

/// Every consumer group with live clients (producers: [`crate::producer_manager`]).
#[derive(Default)]
pub struct ConsumerManager {
    consumers: Mutex<HashMap<String, ConsumerGroupInfo>>,
}

fn notify(group: &str, conns: Vec<Connection>) {
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        return;
    };
    for conn in conns {
        let cmd = RemotingCommand::request_with_header(
            RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.0,
            &NotifyConsumerIdsChangedRequestHeader {
                consumer_group: group.to_owned(),
            },
        );
        rt.spawn(async move {
            let _ = conn.oneway(cmd).await;
        });
    }
}

impl ConsumerManager {
    fn consumers(&self) -> std::sync::MutexGuard<'_, HashMap<String, ConsumerGroupInfo>> {
        self.consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Register (or refresh) a consumer; returns whether the group changed (new client or
    /// subscribed topics changed), in which case the group's clients were notified when
    /// `notify_enable`.
    pub fn register_consumer(
        &self,
        group: &str,
        channel: ClientChannel,
        reg: ConsumerRegistration,
        notify_enable: bool,
    ) -> bool {
        let (changed, conns) = {
            let mut all = self.consumers();
            let info = all
                .entry(group.to_owned())
                .or_insert_with(|| ConsumerGroupInfo {
                    channels: HashMap::new(),
                    subscriptions: HashMap::new(),
                    consume_type: reg.consume_type,
                    message_model: reg.message_model,
                    consume_from_where: reg.consume_from_where,
                });
            info.consume_type = reg.consume_type;
            info.message_model = reg.message_model;
            info.consume_from_where = reg.consume_from_where;
            let id = channel.conn.id();
            let mut changed = if let Some(c) = info.channels.get_mut(&id) {
                c.last_update = channel.last_update;
                c.client_id = channel.client_id;
                c.language = channel.language;
                c.version = channel.version;
                false
            } else {
                info.channels.insert(id, channel);
                true
            };
            let mut topics = std::collections::HashSet::new();
            for sub in reg.subscriptions {
                topics.insert(sub.topic.clone());
                match info.subscriptions.get_mut(&sub.topic) {
                    None => {
                        info.subscriptions.insert(sub.topic.clone(), sub);
                        changed = true;
                    }
                    Some(old) if sub.sub_version > old.sub_version => *old = sub,
                    Some(_) => {}
                }
            }
            let before = info.subscriptions.len();
            info.subscriptions.retain(|t, _| topics.contains(t));
            changed |= info.subscriptions.len() != before;
            let conns = info.channels.values().map(|c| c.conn.clone()).collect();
            (changed, conns)
        };
        if changed && notify_enable {
            notify(group, conns);
        }
        changed
    }

    /// A client left the group (UNREGISTER_CLIENT).
    pub fn unregister_consumer(&self, group: &str, conn: &Connection, notify_enable: bool) {
        let remaining = {
            let mut all = self.consumers();
            let Some(info) = all.get_mut(group) else {
                return;
            };
            if info.channels.remove(&conn.id()).is_none() {
                return;
            }
            if info.channels.is_empty() {
                all.remove(group);
                return;
            }
            info.channels.values().map(|c| c.conn.clone()).collect()
        };
        if notify_enable {
            notify(group, remaining);
        }
    }

    /// A connection closed: drop it everywhere and tell the rest of its groups.
    pub fn do_channel_close(&self, conn_id: u64) {
        let mut notices = Vec::new();
        {
            let mut all = self.consumers();
            all.retain(|group, info| {
                if info.channels.remove(&conn_id).is_some() && !info.channels.is_empty() {
                    notices.push((
                        group.clone(),
                        info.channels.values().map(|c| c.conn.clone()).collect(),
                    ));
                }
                !info.channels.is_empty()
            });
        }
        for (g, conns) in notices {
            notify(&g, conns);
        }
    }

    /// Drop clients silent for longer than `timeout` (closing their connections).
    pub fn scan_not_active(&self, timeout: Duration) {
        let now = Instant::now();
        let mut stale = Vec::new();
        {
            let all = self.consumers();
            for info in all.values() {
                for c in info.channels.values() {
                    if now.duration_since(c.last_update) > timeout {
                        stale.push(c.conn.clone());
                    }
                }
            }
        }
        for conn in stale {
            log::warn!(
                "client {} sent no heartbeat for {} ms, closing",
                conn.peer(),
                timeout.as_millis()
            );
            self.do_channel_close(conn.id());
            conn.close();
        }
    }

    /// Client ids of a consumer group (`None` when the group has no client).
    #[must_use]
    pub fn consumer_ids(&self, group: &str) -> Option<Vec<String>> {
        let all = self.consumers();
        let info = all.get(group)?;
        let mut ids: Vec<String> = info
            .channels
            .values()
            .map(|c| c.client_id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        Some(ids)
    }

    /// The group's subscription of `topic`: `Err(false)` when the group is unknown,
    /// `Err(true)` when it does not subscribe `topic`.
    ///
    /// # Errors
    /// As described.
    pub fn find_subscription(
        &self,
        group: &str,
        topic: &str,
    ) -> Result<(SubscriptionData, MessageModel), bool> {
        let all = self.consumers();
        let info = all.get(group).ok_or(false)?;
        let sub = info.subscriptions.get(topic).ok_or(true)?;
        Ok((sub.clone(), info.message_model))
    }

    /// Number of topics the group's live consumers subscribe (0 when it has none).
    #[must_use]
    pub fn subscription_count(&self, group: &str) -> usize {
        self.consumers()
            .get(group)
            .map_or(0, |info| info.subscriptions.len())
    }

    /// The group's connections, subscriptions and consume settings as admin tools list them
    /// (GET_CONSUMER_CONNECTION_LIST); `None` when no client of the group is connected.
    #[must_use]
    pub fn consumer_connection(&self, group: &str) -> Option<ConsumerConnection> {
        let all = self.consumers();
        let info = all.get(group)?;
        let mut connection_set: Vec<ConnectionInfo> = info
            .channels
            .values()
            .map(ClientChannel::to_connection_info)
            .collect();
        connection_set
            .sort_by(|a, b| (&a.client_id, &a.client_addr).cmp(&(&b.client_id, &b.client_addr)));
        Some(ConsumerConnection {
            connection_set,
            consume_from_where: Some(info.consume_from_where),
            consume_type: Some(info.consume_type),
            message_model: Some(info.message_model),
            subscription_table: info
                .subscriptions
                .iter()
                .map(|(t, s)| (t.clone(), s.clone()))
                .collect(),
        })
    }

    /// The connections of the group's consumers (to send them requests).
    #[must_use]
    pub fn consumer_channels(&self, group: &str) -> Vec<ClientChannel> {
        self.consumers()
            .get(group)
            .map(|info| info.channels.values().cloned().collect())
            .unwrap_or_default()
    }

    /// Groups whose live consumers subscribe `topic` (`queryTopicConsumeByWho`).
    #[must_use]
    pub fn groups_subscribing(&self, topic: &str) -> Vec<String> {
        self.consumers()
            .iter()
            .filter(|(_, info)| info.subscriptions.contains_key(topic))
            .map(|(g, _)| g.clone())
            .collect()
    }

    /// Names of the consumer groups with clients.
    #[must_use]
    pub fn groups(&self) -> Vec<String> {
        self.consumers().keys().cloned().collect()
    }
}
