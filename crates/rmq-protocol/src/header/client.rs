//! Client registration and broker ↔ client headers: consumer lists for rebalance,
//! unregistering, and the calls a broker (or an admin through it) makes on a client.

command_header! {
    /// `GetConsumerListByGroupRequestHeader` (GET_CONSUMER_LIST_BY_GROUP, 38); the answer is
    /// a [`crate::body::GetConsumerListByGroupResponseBody`].
    pub struct GetConsumerListByGroupRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
    }
}

command_header! {
    /// `UnregisterClientRequestHeader` (UNREGISTER_CLIENT, 35).
    pub struct UnregisterClientRequestHeader {
        /// Client id (`ip@instance`); Java spells the key `clientID`.
        client_id: required<String> = "clientID",
        /// Producer group leaving, if any.
        producer_group: optional<String> = "producerGroup",
        /// Consumer group leaving, if any.
        consumer_group: optional<String> = "consumerGroup",
    }
}

command_header! {
    /// `NotifyConsumerIdsChangedRequestHeader` (broker → consumer, NOTIFY_CONSUMER_IDS_CHANGED
    /// 40, oneway): rebalance now.
    pub struct NotifyConsumerIdsChangedRequestHeader {
        /// Consumer group whose membership changed.
        consumer_group: required<String> = "consumerGroup",
    }
}

command_header! {
    /// `GetConsumerRunningInfoRequestHeader` (GET_CONSUMER_RUNNING_INFO, 307).
    pub struct GetConsumerRunningInfoRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
        /// Client asked.
        client_id: required<String> = "clientId",
        /// Include a thread dump.
        jstack_enable: defaulted<bool> = "jstackEnable",
    }
}

command_header! {
    /// `ConsumeMessageDirectlyResultRequestHeader` (CONSUME_MESSAGE_DIRECTLY, 309).
    pub struct ConsumeMessageDirectlyResultRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
        /// Client asked.
        client_id: optional<String> = "clientId",
        /// Message to consume.
        msg_id: optional<String> = "msgId",
        /// Broker holding it.
        broker_name: optional<String> = "brokerName",
    }
}

command_header! {
    /// `ResetOffsetRequestHeader`: admin → broker (INVOKE_BROKER_TO_RESET_OFFSET, 222) and
    /// broker → client (RESET_CONSUMER_CLIENT_OFFSET, 220, with a
    /// [`crate::body::ResetOffsetBody`]).
    pub struct ResetOffsetRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Consumer group.
        group: required<String> = "group",
        /// Reset to the first message stored at or after this time (ms).
        timestamp: required<i64> = "timestamp",
        /// Also move offsets forward (not only back).
        is_force: defaulted<bool> = "isForce",
    }
}

command_header! {
    /// `GetConsumerStatusRequestHeader` (GET_CONSUMER_STATUS_FROM_CLIENT 221,
    /// INVOKE_BROKER_TO_GET_CONSUMER_STATUS 223).
    pub struct GetConsumerStatusRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Consumer group.
        group: required<String> = "group",
        /// One client only, if set.
        client_addr: optional<String> = "clientAddr",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn client_headers_round_trip() {
        let u = UnregisterClientRequestHeader {
            client_id: "10.0.0.1@123".into(),
            producer_group: None,
            consumer_group: Some("cg".into()),
        };
        let ext = u.to_ext_fields();
        assert!(ext.contains_key("clientID"));
        assert_eq!(
            UnregisterClientRequestHeader::from_ext_fields(&ext).unwrap(),
            u
        );
        let r = ResetOffsetRequestHeader {
            topic: "t".into(),
            group: "g".into(),
            timestamp: 1,
            is_force: true,
        };
        assert_eq!(&r.to_ext_fields()["isForce"], "true");
        assert_eq!(
            ResetOffsetRequestHeader::from_ext_fields(&r.to_ext_fields()).unwrap(),
            r
        );
        let n = NotifyConsumerIdsChangedRequestHeader {
            consumer_group: "g".into(),
        };
        assert_eq!(
            NotifyConsumerIdsChangedRequestHeader::from_ext_fields(&n.to_ext_fields()).unwrap(),
            n
        );
        let g = GetConsumerListByGroupRequestHeader {
            consumer_group: "g".into(),
        };
        assert_eq!(
            GetConsumerListByGroupRequestHeader::from_ext_fields(&g.to_ext_fields()).unwrap(),
            g
        );
    }
}
