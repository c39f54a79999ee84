//! Live producers (RocketMQ's `ProducerManager`): producer group → client connections,
//! registered by heartbeats, dropped on UNREGISTER_CLIENT, when the connection closes, or when
//! it stays silent for `channelExpiredTimeout`. The transaction check-back (Python) picks one
//! of a group's connections to ask about a half message it never heard the end of.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use rmq_remoting::Connection;

use crate::consumer_manager::ClientChannel;

/// Every producer group with live clients.
#[derive(Default)]
pub struct ProducerManager {
    /// Group → connection id → client.
    groups: Mutex<HashMap<String, HashMap<u64, ClientChannel>>>,
}

impl ProducerManager {
    fn groups(&self) -> MutexGuard<'_, HashMap<String, HashMap<u64, ClientChannel>>> {
        self.groups.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Register (or refresh) a producer of `group`.
    pub fn register(&self, group: &str, channel: ClientChannel) {
        let mut groups = self.groups();
        let channels = groups.entry(group.to_owned()).or_default();
        match channels.get_mut(&channel.conn.id()) {
            Some(c) => c.last_update = channel.last_update,
            None => {
                channels.insert(channel.conn.id(), channel);
            }
        }
    }

    /// A producer left `group` (UNREGISTER_CLIENT).
    pub fn unregister(&self, group: &str, conn: &Connection) {
        let mut groups = self.groups();
        if let Some(channels) = groups.get_mut(group) {
            channels.remove(&conn.id());
            if channels.is_empty() {
                groups.remove(group);
            }
        }
    }

    /// A connection closed: drop it from every group.
    pub fn do_channel_close(&self, conn_id: u64) {
        self.groups().retain(|_, channels| {
            channels.remove(&conn_id);
            !channels.is_empty()
        });
    }

    /// Connections silent for longer than `timeout`: dropped here, returned for closing.
    pub fn scan_not_active(&self, timeout: Duration) -> Vec<Connection> {
        let now = Instant::now();
        let mut stale = Vec::new();
        self.groups().retain(|_, channels| {
            channels.retain(|_, c| {
                let alive = now.duration_since(c.last_update) <= timeout;
                if !alive {
                    stale.push(c.conn.clone());
                }
                alive
            });
            !channels.is_empty()
        });
        stale
    }

    /// The group's open connections, oldest connection first.
    #[must_use]
    pub fn channels(&self, group: &str) -> Vec<ClientChannel> {
        let mut out: Vec<ClientChannel> = self
            .groups()
            .get(group)
            .map(|channels| {
                channels
                    .values()
                    .filter(|c| !c.conn.is_closed())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by_key(|c| c.conn.id());
        out
    }

    /// Every group's open connections (GET_ALL_PRODUCER_INFO), groups by name, connections
    /// oldest first.
    #[must_use]
    pub fn all(&self) -> Vec<(String, Vec<ClientChannel>)> {
        let mut groups: Vec<String> = self.groups().keys().cloned().collect();
        groups.sort();
        groups
            .into_iter()
            .map(|g| {
                let channels = self.channels(&g);
                (g, channels)
            })
            .filter(|(_, channels)| !channels.is_empty())
            .collect()
    }

    /// The connection with id `conn_id` if it is an open producer connection.
    #[must_use]
    pub fn find_channel(&self, conn_id: u64) -> Option<ClientChannel> {
        self.groups()
            .values()
            .find_map(|channels| channels.get(&conn_id))
            .filter(|c| !c.conn.is_closed())
            .cloned()
    }
}
