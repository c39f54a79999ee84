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
