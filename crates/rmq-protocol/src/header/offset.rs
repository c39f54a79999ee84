//! Offset headers: committed consumer offsets and queue min/max/by-time offsets.

command_header! {
    /// `QueryConsumerOffsetRequestHeader` (QUERY_CONSUMER_OFFSET, 14).
    pub struct QueryConsumerOffsetRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `QueryConsumerOffsetResponseHeader`.
    pub struct QueryConsumerOffsetResponseHeader {
        /// Committed offset.
        offset: required<i64> = "offset",
    }
}

command_header! {
    /// `UpdateConsumerOffsetRequestHeader` (UPDATE_CONSUMER_OFFSET, 15; usually oneway).
    pub struct UpdateConsumerOffsetRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// Offset to commit.
        commit_offset: required<i64> = "commitOffset",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `GetMaxOffsetRequestHeader` (GET_MAX_OFFSET, 30).
    pub struct GetMaxOffsetRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `GetMaxOffsetResponseHeader`.
    pub struct GetMaxOffsetResponseHeader {
        /// Next offset to be written.
        offset: required<i64> = "offset",
    }
}

command_header! {
    /// `GetMinOffsetRequestHeader` (GET_MIN_OFFSET, 31).
    pub struct GetMinOffsetRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `GetMinOffsetResponseHeader`.
    pub struct GetMinOffsetResponseHeader {
        /// First readable offset.
        offset: required<i64> = "offset",
    }
}

command_header! {
    /// `SearchOffsetRequestHeader` (SEARCH_OFFSET_BY_TIMESTAMP, 29).
    pub struct SearchOffsetRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// Store time to search for (ms).
        timestamp: required<i64> = "timestamp",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `SearchOffsetResponseHeader`.
    pub struct SearchOffsetResponseHeader {
        /// Offset found.
        offset: required<i64> = "offset",
    }
}

command_header! {
    /// `GetEarliestMsgStoretimeRequestHeader` (GET_EARLIEST_MSG_STORETIME, 32).
    pub struct GetEarliestMsgStoretimeRequestHeader {
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `GetEarliestMsgStoretimeResponseHeader`.
    pub struct GetEarliestMsgStoretimeResponseHeader {
        /// Store time of the queue's first message (ms).
        timestamp: required<i64> = "timestamp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn offset_headers_round_trip() {
        let q = QueryConsumerOffsetRequestHeader {
            consumer_group: "g".into(),
            topic: "t".into(),
            queue_id: 3,
            broker_name: Some("b".into()),
        };
        assert_eq!(
            QueryConsumerOffsetRequestHeader::from_ext_fields(&q.to_ext_fields()).unwrap(),
            q
        );
        let u = UpdateConsumerOffsetRequestHeader {
            consumer_group: "g".into(),
            topic: "t".into(),
            queue_id: 3,
            commit_offset: 77,
            broker_name: None,
        };
        assert_eq!(&u.to_ext_fields()["commitOffset"], "77");
        assert_eq!(
            UpdateConsumerOffsetRequestHeader::from_ext_fields(&u.to_ext_fields()).unwrap(),
            u
        );
        let s = SearchOffsetRequestHeader {
            topic: "t".into(),
            queue_id: 0,
            timestamp: 5,
            broker_name: None,
        };
        assert_eq!(
            SearchOffsetRequestHeader::from_ext_fields(&s.to_ext_fields()).unwrap(),
            s
        );
        let r = GetMaxOffsetResponseHeader { offset: -1 };
        assert_eq!(
            GetMaxOffsetResponseHeader::from_ext_fields(&r.to_ext_fields()).unwrap(),
            r
        );
    }
}
