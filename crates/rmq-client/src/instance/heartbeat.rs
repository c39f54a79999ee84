//! Producer and consumer groups of this instance, announced to every broker by HEARTBEAT
//! and withdrawn by UNREGISTER_CLIENT.

use std::sync::PoisonError;

use rmq_protocol::body::{ConsumerData, HeartbeatData, ProducerData};
use rmq_protocol::{ExtFields, RemotingCommand, RemotingJson, RequestCode};

use super::ClientInstance;

impl ClientInstance {
    /// Announce producer group `group` in heartbeats.
    pub fn register_producer(&self, group: &str) {
        self.inner
            .producers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(group.to_owned());
    }

    /// Stop announcing producer group `group` and tell the brokers.
    pub async fn unregister_producer(&self, group: &str) {
        self.inner
            .producers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(group);
        self.unregister_client(Some(group), None).await;
    }

    /// Announce (or update) consumer group `data.group_name` in heartbeats.
    pub fn register_consumer(&self, data: ConsumerData) {
        self.inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(data.group_name.clone(), data);
    }

    /// What this client announces for consumer group `group` (its subscriptions as the
    /// brokers have them), if it is registered.
    #[must_use]
    pub fn consumer_data(&self, group: &str) -> Option<ConsumerData> {
        self.inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(group)
            .cloned()
    }

    /// Stop announcing consumer group `group` and tell the brokers.
    pub async fn unregister_consumer(&self, group: &str) {
        self.inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(group);
        self.unregister_client(None, Some(group)).await;
    }

    async fn unregister_client(&self, producer: Option<&str>, consumer: Option<&str>) {
        let mut fields = ExtFields::new();
        fields.insert("clientID", self.inner.client_id.clone());
        if let Some(p) = producer {
            fields.insert("producerGroup", p);
        }
        if let Some(c) = consumer {
            fields.insert("consumerGroup", c);
        }
        for addr in self.broker_addrs(false) {
            let cmd =
                RemotingCommand::new_request(RequestCode::UNREGISTER_CLIENT.0, fields.clone());
            if let Err(e) = self
                .invoke_ok(&addr, cmd, self.inner.config.api_timeout)
                .await
            {
                self.warn(format!("unregistering from broker {addr}: {e}"));
            }
        }
    }

    /// Send a heartbeat to every broker now (masters only when no consumer is registered).
    /// Returns how many brokers answered.
    pub async fn send_heartbeat(&self) -> usize {
        let data = HeartbeatData {
            client_id: self.inner.client_id.clone(),
            producer_data_set: self
                .inner
                .producers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|g| ProducerData {
                    group_name: g.clone(),
                })
                .collect(),
            consumer_data_set: self
                .inner
                .consumers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .values()
                .cloned()
                .collect(),
        };
        if data.producer_data_set.is_empty() && data.consumer_data_set.is_empty() {
            return 0;
        }
        let body = match data.to_json_bytes() {
            Ok(b) => b,
            Err(e) => {
                self.warn(format!("encoding the heartbeat: {e}"));
                return 0;
            }
        };
        let masters_only = data.consumer_data_set.is_empty();
        let mut ok = 0;
        for addr in self.broker_addrs(masters_only) {
            let cmd = RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new())
                .with_body(body.clone());
            match self
                .invoke_ok(&addr, cmd, self.inner.config.api_timeout)
                .await
            {
                Ok(_) => ok += 1,
                Err(e) => self.warn(format!("heartbeat to broker {addr}: {e}")),
            }
        }
        ok
    }
}
