//! Topic routes: what the nameservers say a topic's queues are, the queues a producer writes
//! and a consumer reads derived from it (`MQClientInstance.topicRouteData2*`), and the broker
//! addresses learnt on the way.

use std::collections::BTreeSet;
use std::sync::{Arc, PoisonError};
use std::time::Instant;

use rmq_protocol::body::{BrokerData, MessageQueue, TopicRouteData, MASTER_ID, MAX_QUEUE_NUMS};
use rmq_protocol::header::namesrv::GetRouteInfoRequestHeader;
use rmq_protocol::{RemotingCommand, RemotingJson, RequestCode, ResponseCode};

use super::{expect_success, perm, ClientInstance};
use crate::error::{ClientError, Result};

/// A topic's route with the queues derived from it.
#[derive(Debug, Clone)]
pub struct TopicRoute {
    /// As the nameserver sent it.
    pub data: TopicRouteData,
    /// Writable queues on brokers with a master, in route order (`TopicPublishInfo`).
    pub publish_queues: Vec<MessageQueue>,
    /// Readable queues, sorted (`topicSubscribeInfoTable`).
    pub subscribe_queues: Vec<MessageQueue>,
    /// When it was built (fetched).
    pub fetched_at: Instant,
}

impl TopicRoute {
    /// Derive the queues of `topic` from `data`, as `MQClientInstance.topicRouteData2*`.
    #[must_use]
    pub fn new(topic: &str, data: TopicRouteData) -> Self {
        let mut queue_datas = data.queue_datas.clone();
        queue_datas.sort_by(|a, b| a.broker_name.cmp(&b.broker_name));
        let has_master = |name: &str| {
            data.broker_datas
                .iter()
                .any(|b| b.broker_name == name && b.master_addr().is_some())
        };
        let mut publish_queues = Vec::new();
        let mut subscribe_queues = Vec::new();
        // A route claiming absurd queue counts (a broken registration) costs at most
        // MAX_QUEUE_NUMS queues per broker.
        let queues = |n: i32| 0..n.clamp(0, MAX_QUEUE_NUMS);
        for q in &queue_datas {
            if q.perm & perm::WRITE != 0 && has_master(&q.broker_name) {
                publish_queues.extend(
                    queues(q.write_queue_nums).map(|i| MessageQueue::new(topic, &q.broker_name, i)),
                );
            }
            if q.perm & perm::READ != 0 {
                subscribe_queues.extend(
                    queues(q.read_queue_nums).map(|i| MessageQueue::new(topic, &q.broker_name, i)),
                );
            }
        }
        subscribe_queues.sort();
        Self {
            data,
            publish_queues,
            subscribe_queues,
            fetched_at: Instant::now(),
        }
    }
}

impl ClientInstance {
    /// The cached route of `topic`, fetching it when unknown.
    ///
    /// # Errors
    /// [`ClientError::NoRoute`] when no nameserver has it; transport errors.
    pub async fn route(&self, topic: &str) -> Result<Arc<TopicRoute>> {
        if let Some(r) = self.cached_route(topic) {
            return Ok(r);
        }
        self.update_route(topic).await
    }

    /// The cached route of `topic`, if any.
    #[must_use]
    pub fn cached_route(&self, topic: &str) -> Option<Arc<TopicRoute>> {
        self.inner
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .cloned()
    }

    /// Fetch `topic`'s route from the nameservers and cache it.
    ///
    /// # Errors
    /// As [`route`](Self::route).
    pub async fn update_route(&self, topic: &str) -> Result<Arc<TopicRoute>> {
        let data = self.fetch_route(topic).await?;
        let route = Arc::new(TopicRoute::new(topic, data));
        self.remember_brokers(&route.data.broker_datas);
        self.inner
            .routes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), route.clone());
        Ok(route)
    }

    /// Ask the nameservers for `topic`'s route without caching it.
    ///
    /// # Errors
    /// As [`route`](Self::route).
    pub async fn fetch_route(&self, topic: &str) -> Result<TopicRouteData> {
        let header = GetRouteInfoRequestHeader {
            topic: topic.to_owned(),
            accept_standard_json_only: None,
        };
        let cmd =
            RemotingCommand::request_with_header(RequestCode::GET_ROUTEINFO_BY_TOPIC.0, &header);
        let resp = self.invoke_namesrv(cmd).await?;
        if resp.code == ResponseCode::TOPIC_NOT_EXIST.0 {
            return Err(ClientError::NoRoute {
                topic: topic.to_owned(),
                detail: resp.remark.unwrap_or_else(|| "topic not exist".to_owned()),
            });
        }
        let resp = expect_success("nameserver", resp)?;
        let body = resp.body.unwrap_or_default();
        TopicRouteData::from_json_bytes(&body).map_err(|e| ClientError::BadResponse {
            addr: "nameserver".to_owned(),
            detail: e.to_string(),
        })
    }

    /// Cache `route` for `topic` (a producer's route built from the auto-create template).
    pub fn remember_route(&self, topic: &str, route: Arc<TopicRoute>) {
        self.remember_brokers(&route.data.broker_datas);
        self.inner
            .routes
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(topic.to_owned(), route);
    }

    fn remember_brokers(&self, brokers: &[BrokerData]) {
        let mut table = self
            .inner
            .broker_addrs
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        for b in brokers {
            table.insert(b.broker_name.clone(), b.broker_addrs.clone());
        }
    }

    /// The master address of `broker_name` (`findBrokerAddressInPublish`).
    ///
    /// # Errors
    /// [`ClientError::BrokerNotFound`] when no route gave it a master.
    pub fn master_addr(&self, broker_name: &str) -> Result<String> {
        self.find_broker_in_subscribe(broker_name, MASTER_ID, true)
            .map(|b| b.addr)
    }

    /// Every broker address known from routes: masters only, or all.
    #[must_use]
    pub fn broker_addrs(&self, masters_only: bool) -> Vec<String> {
        let table = self
            .inner
            .broker_addrs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut out: Vec<String> = table
            .values()
            .flat_map(|a| a.iter())
            .filter(|(id, _)| !masters_only || **id == 0)
            .map(|(_, addr)| addr.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    pub(super) async fn refresh_routes(&self) {
        let mut topics: BTreeSet<String> = self
            .inner
            .routes
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        for c in self
            .inner
            .consumers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            topics.extend(c.subscription_data_set.iter().map(|s| s.topic.clone()));
        }
        for topic in topics {
            if let Err(e) = self.update_route(&topic).await {
                // A deleted topic keeps its last route, as RocketMQ does; say why it is stale.
                // A refresh cut short by shutdown() is no news to the program that called it.
                if !matches!(e, ClientError::NoRoute { .. } | ClientError::Shutdown) {
                    self.warn(format!("refreshing the route of topic {topic}: {e}"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_claiming_absurd_queue_counts_costs_at_most_max_queue_nums() {
        let data = TopicRouteData::from_json_bytes(
            br#"{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"b","cluster":"c"}],
                "queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":100000000,"topicSysFlag":0,
                "writeQueueNums":-5}]}"#,
        )
        .unwrap();
        let r = TopicRoute::new("T", data);
        assert_eq!(r.subscribe_queues.len(), MAX_QUEUE_NUMS as usize);
        assert!(r.publish_queues.is_empty());
    }
}
