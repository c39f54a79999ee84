//! Broker administration headers (what mqadmin sends).

command_header! {
    /// `CreateTopicRequestHeader` (UPDATE_AND_CREATE_TOPIC, 17).
    pub struct CreateTopicRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Template topic (`TBW102`).
        default_topic: required<String> = "defaultTopic",
        /// Readable queues.
        read_queue_nums: required<i32> = "readQueueNums",
        /// Writable queues.
        write_queue_nums: required<i32> = "writeQueueNums",
        /// `PermName` bits (read 4, write 2, inherit 1).
        perm: required<i32> = "perm",
        /// `SINGLE_TAG` or `MULTI_TAG`.
        topic_filter_type: required<String> = "topicFilterType",
        /// `TopicSysFlag` bits.
        topic_sys_flag: optional<i32> = "topicSysFlag",
        /// Ordered topic.
        order: defaulted<bool> = "order",
    }
}

command_header! {
    /// `DeleteTopicRequestHeader` (DELETE_TOPIC_IN_BROKER, 215).
    pub struct DeleteTopicRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
    }
}

command_header! {
    /// `GetTopicStatsInfoRequestHeader` (GET_TOPIC_STATS_INFO, 202).
    pub struct GetTopicStatsInfoRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
    }
}

command_header! {
    /// `GetConsumeStatsRequestHeader` (GET_CONSUME_STATS, 208).
    pub struct GetConsumeStatsRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
        /// One topic only, if set.
        topic: optional<String> = "topic",
    }
}

command_header! {
    /// `GetConsumerConnectionListRequestHeader` (GET_CONSUMER_CONNECTION_LIST, 203).
    pub struct GetConsumerConnectionListRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
    }
}

command_header! {
    /// `GetProducerConnectionListRequestHeader` (GET_PRODUCER_CONNECTION_LIST, 204).
    pub struct GetProducerConnectionListRequestHeader {
        /// Producer group.
        producer_group: required<String> = "producerGroup",
    }
}

command_header! {
    /// `QueryTopicConsumeByWhoRequestHeader` (QUERY_TOPIC_CONSUME_BY_WHO, 300).
    pub struct QueryTopicConsumeByWhoRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
    }
}

command_header! {
    /// `DeleteSubscriptionGroupRequestHeader` (DELETE_SUBSCRIPTIONGROUP, 207).
    pub struct DeleteSubscriptionGroupRequestHeader {
        /// Group.
        group_name: required<String> = "groupName",
        /// Also drop its offsets.
        remove_offset: defaulted<bool> = "removeOffset",
    }
}

command_header! {
    /// `GetBrokerConfigResponseHeader` (GET_BROKER_CONFIG, 26); the body is the config as
    /// properties text.
    pub struct GetBrokerConfigResponseHeader {
        /// Config data version (JSON of a DataVersion).
        version: required<String> = "version",
    }
}

command_header! {
    /// `GetTopicsByClusterRequestHeader` (GET_TOPICS_BY_CLUSTER, 224).
    pub struct GetTopicsByClusterRequestHeader {
        /// Cluster name.
        cluster: required<String> = "cluster",
    }
}

command_header! {
    /// `QueryConsumeTimeSpanRequestHeader` (QUERY_CONSUME_TIME_SPAN, 303).
    pub struct QueryConsumeTimeSpanRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Consumer group.
        group: required<String> = "group",
    }
}

command_header! {
    /// `CloneGroupOffsetRequestHeader` (CLONE_GROUP_OFFSET, 314).
    pub struct CloneGroupOffsetRequestHeader {
        /// Source group.
        src_group: required<String> = "srcGroup",
        /// Destination group.
        dest_group: required<String> = "destGroup",
        /// One topic only, if set.
        topic: optional<String> = "topic",
        /// Source group is offline.
        offline: defaulted<bool> = "offline",
    }
}

command_header! {
    /// `GetConsumeStatsInBrokerHeader` (GET_BROKER_CONSUME_STATS, 317).
    pub struct GetConsumeStatsInBrokerHeader {
        /// Ordered topics only.
        is_order: defaulted<bool> = "isOrder",
    }
}

command_header! {
    /// `ViewBrokerStatsDataRequestHeader` (VIEW_BROKER_STATS_DATA, 315).
    pub struct ViewBrokerStatsDataRequestHeader {
        /// Statistic name.
        stats_name: required<String> = "statsName",
        /// Statistic key.
        stats_key: required<String> = "statsKey",
    }
}

command_header! {
    /// `QueryConsumeQueueRequestHeader` (QUERY_CONSUME_QUEUE, 321).
    pub struct QueryConsumeQueueRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// First queue offset to list.
        index: required<i64> = "index",
        /// Units to list.
        count: required<i32> = "count",
        /// Show this group's subscription too.
        consumer_group: optional<String> = "consumerGroup",
    }
}

command_header! {
    /// `QueryTopicsByConsumerRequestHeader` (QUERY_TOPICS_BY_CONSUMER, 343).
    pub struct QueryTopicsByConsumerRequestHeader {
        /// Consumer group.
        group: required<String> = "group",
    }
}

command_header! {
    /// `GetTopicConfigRequestHeader` (GET_TOPIC_CONFIG, 351).
    pub struct GetTopicConfigRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// 5.x logic-queue flag: also return the static-topic mapping (rmq has none).
        lo: optional<bool> = "lo",
    }
}

command_header! {
    /// `GetSubscriptionGroupConfigRequestHeader` (GET_SUBSCRIPTIONGROUP_CONFIG, 352).
    pub struct GetSubscriptionGroupConfigRequestHeader {
        /// Consumer group.
        group: required<String> = "group",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn create_topic_round_trip_and_missing_field() {
        let c = CreateTopicRequestHeader {
            topic: "t".into(),
            default_topic: "TBW102".into(),
            read_queue_nums: 8,
            write_queue_nums: 8,
            perm: 6,
            topic_filter_type: "SINGLE_TAG".into(),
            topic_sys_flag: Some(0),
            order: false,
        };
        let mut ext = c.to_ext_fields();
        assert_eq!(CreateTopicRequestHeader::from_ext_fields(&ext).unwrap(), c);
        ext.remove("perm");
        assert_eq!(
            CreateTopicRequestHeader::from_ext_fields(&ext).unwrap_err(),
            crate::error::ProtocolError::MissingField { field: "perm" }
        );
        let s = GetConsumeStatsRequestHeader {
            consumer_group: "g".into(),
            topic: None,
        };
        assert_eq!(
            GetConsumeStatsRequestHeader::from_ext_fields(&s.to_ext_fields()).unwrap(),
            s
        );
    }

    #[test]
    fn single_key_lookups_round_trip_and_require_their_key() {
        let t = GetTopicConfigRequestHeader {
            topic: "T".into(),
            lo: None,
        };
        let ext = t.to_ext_fields();
        assert_eq!(ext.get("topic"), Some("T"));
        assert_eq!(ext.get("lo"), None);
        assert_eq!(
            GetTopicConfigRequestHeader::from_ext_fields(&ext).unwrap(),
            t
        );
        let g = GetSubscriptionGroupConfigRequestHeader { group: "G".into() };
        assert_eq!(g.to_ext_fields().get("group"), Some("G"));
        let q = QueryTopicsByConsumerRequestHeader { group: "G".into() };
        assert_eq!(
            QueryTopicsByConsumerRequestHeader::from_ext_fields(&q.to_ext_fields()).unwrap(),
            q
        );
        let empty = crate::command::ExtFields::new();
        assert_eq!(
            GetSubscriptionGroupConfigRequestHeader::from_ext_fields(&empty).unwrap_err(),
            crate::error::ProtocolError::MissingField { field: "group" }
        );
    }
}
