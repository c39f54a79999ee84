//! Which address of a broker group (master id 0, slaves id ≥ 1, one `brokerName`) a request
//! goes to, as RocketMQ's `MQClientInstance` and `PullAPIWrapper` choose it: pulls follow the
//! broker's last `suggestWhichBrokerId` for the queue (`pullFromWhichNodeTable`) and fall back
//! to any address of the group when that one is not in the route
//! (`findBrokerAddressInSubscribe`), so a consumer carries on from the slave while the master
//! is gone and returns to it once it is back; offsets go to the master, or to a slave when the
//! route has no master (`findBrokerAddressInAdmin`).

use std::sync::PoisonError;

use rmq_protocol::body::{MessageQueue, MASTER_ID};

use super::ClientInstance;
use crate::error::{ClientError, Result};

/// An address picked from a broker group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundBroker {
    /// `host:port`.
    pub addr: String,
    /// It is not the group's master.
    pub slave: bool,
}

impl ClientInstance {
    /// `findBrokerAddressInSubscribe`: the address of `broker_id` in group `broker_name`; a
    /// slave id with no address falls to the next id; unless `only_this`, any address of the
    /// group (the lowest id, so the master when it is there) when that fails too.
    ///
    /// # Errors
    /// [`ClientError::BrokerNotFound`] when no route mentioned an address that fits.
    pub fn find_broker_in_subscribe(
        &self,
        broker_name: &str,
        broker_id: i64,
        only_this: bool,
    ) -> Result<FoundBroker> {
        let table = self
            .inner
            .broker_addrs
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let addrs = table.get(broker_name);
        let exact = addrs.and_then(|a| {
            a.get(&broker_id).map(|addr| (broker_id, addr)).or_else(|| {
                (broker_id != MASTER_ID)
                    .then(|| a.get(&(broker_id + 1)).map(|addr| (broker_id + 1, addr)))
                    .flatten()
            })
        });
        let found = exact.or_else(|| {
            (!only_this)
                .then(|| addrs.and_then(|a| a.iter().next().map(|(id, addr)| (*id, addr))))
                .flatten()
        });
        found
            .map(|(id, addr)| FoundBroker {
                addr: addr.clone(),
                slave: id != MASTER_ID,
            })
            .ok_or_else(|| ClientError::BrokerNotFound {
                broker_name: broker_name.to_owned(),
            })
    }

    /// `findBrokerAddressInAdmin`: the group's master, or its first slave when the route has
    /// no master (offset commits and queries carry on against the slave meanwhile).
    ///
    /// # Errors
    /// [`ClientError::BrokerNotFound`] when no route mentioned the group.
    pub fn find_broker_in_admin(&self, broker_name: &str) -> Result<FoundBroker> {
        self.find_broker_in_subscribe(broker_name, MASTER_ID, false)
    }

    /// `recalculatePullFromWhichNode`: the broker id `group` pulls `mq` from (the broker's
    /// last suggestion; the master before any).
    #[must_use]
    pub fn pull_from_which_node(&self, group: &str, mq: &MessageQueue) -> i64 {
        self.inner
            .pull_from_which_node
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(group.to_owned(), mq.clone()))
            .copied()
            .unwrap_or(MASTER_ID)
    }

    /// `updatePullFromWhichNode`: remember the broker's suggestion for `group`'s `mq`.
    pub fn update_pull_from_which_node(&self, group: &str, mq: &MessageQueue, broker_id: i64) {
        self.inner
            .pull_from_which_node
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert((group.to_owned(), mq.clone()), broker_id);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmq_protocol::body::TopicRouteData;
    use rmq_protocol::RemotingJson;

    use super::*;
    use crate::instance::{ClientConfig, TopicRoute};

    /// An instance whose route of `T` lists broker `b` with `addrs` (`{"0": .., "1": ..}`).
    fn with_group(inst: &ClientInstance, addrs: &str) {
        let json = format!(
            r#"{{"brokerDatas":[{{"brokerAddrs":{addrs},"brokerName":"b","cluster":"c"}}],
                "queueDatas":[{{"brokerName":"b","perm":6,"readQueueNums":1,"topicSysFlag":0,
                "writeQueueNums":1}}]}}"#
        );
        let data = TopicRouteData::from_json_bytes(json.as_bytes()).unwrap();
        inst.remember_route("T", Arc::new(TopicRoute::new("T", data)));
    }

    fn found(addr: &str, slave: bool) -> FoundBroker {
        FoundBroker {
            addr: addr.to_owned(),
            slave,
        }
    }

    #[tokio::test]
    async fn addresses_are_picked_as_rocketmq_clients_pick_them() {
        let config = ClientConfig::new(vec!["127.0.0.1:1".to_owned()]);
        let inst = ClientInstance::start(config, tokio::runtime::Handle::current()).unwrap();
        with_group(&inst, r#"{"0":"m:1","1":"s:1"}"#);
        assert_eq!(
            inst.find_broker_in_subscribe("b", 0, false).unwrap(),
            found("m:1", false)
        );
        assert_eq!(
            inst.find_broker_in_subscribe("b", 1, false).unwrap(),
            found("s:1", true)
        );
        // A missing slave id falls to the next one, then to any address (the master first).
        with_group(&inst, r#"{"0":"m:1","2":"s:2"}"#);
        assert_eq!(
            inst.find_broker_in_subscribe("b", 1, true).unwrap(),
            found("s:2", true)
        );
        assert_eq!(
            inst.find_broker_in_subscribe("b", 5, false).unwrap(),
            found("m:1", false)
        );
        assert!(inst.find_broker_in_subscribe("b", 5, true).is_err());
        // The master gone from the route: pulls and offsets go to the slave; sends find none.
        with_group(&inst, r#"{"1":"s:1"}"#);
        assert_eq!(
            inst.find_broker_in_subscribe("b", 0, false).unwrap(),
            found("s:1", true)
        );
        assert_eq!(inst.find_broker_in_admin("b").unwrap(), found("s:1", true));
        assert!(inst.master_addr("b").is_err());
        assert!(inst.find_broker_in_admin("nope").is_err());

        let mq = MessageQueue::new("T", "b", 0);
        assert_eq!(inst.pull_from_which_node("G", &mq), MASTER_ID);
        inst.update_pull_from_which_node("G", &mq, 1);
        assert_eq!(inst.pull_from_which_node("G", &mq), 1);
        assert_eq!(inst.pull_from_which_node("H", &mq), MASTER_ID);
        inst.shutdown();
    }
}
