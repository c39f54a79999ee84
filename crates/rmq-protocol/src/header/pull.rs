//! Pull path headers (PULL_MESSAGE, 11) and the pull `sysFlag` bits (`PullSysFlag`).

command_header! {
    /// `PullMessageRequestHeader`.
    pub struct PullMessageRequestHeader {
        /// Consumer group.
        consumer_group: required<String> = "consumerGroup",
        /// Topic.
        topic: required<String> = "topic",
        /// Queue.
        queue_id: required<i32> = "queueId",
        /// First ConsumeQueue offset wanted.
        queue_offset: required<i64> = "queueOffset",
        /// Most messages to return.
        max_msg_nums: required<i32> = "maxMsgNums",
        /// [`pull_sys_flag`] bits.
        sys_flag: required<i32> = "sysFlag",
        /// Offset to commit on the way (when `FLAG_COMMIT_OFFSET`).
        commit_offset: required<i64> = "commitOffset",
        /// Longest the broker may hold the request when nothing is there (ms).
        suspend_timeout_millis: required<i64> = "suspendTimeoutMillis",
        /// Subscription expression (when `FLAG_SUBSCRIPTION`).
        subscription: optional<String> = "subscription",
        /// Subscription version; a broker holding an older one answers SUBSCRIPTION_NOT_LATEST.
        sub_version: required<i64> = "subVersion",
        /// `TAG` or `SQL92`.
        expression_type: optional<String> = "expressionType",
        /// Broker the request is meant for.
        broker_name: optional<String> = "bname",
    }
}

command_header! {
    /// `PullMessageResponseHeader`.
    pub struct PullMessageResponseHeader {
        /// Broker id the consumer should pull from next (0 = master).
        suggest_which_broker_id: required<i64> = "suggestWhichBrokerId",
        /// Offset to pull from next.
        next_begin_offset: required<i64> = "nextBeginOffset",
        /// Queue's min offset.
        min_offset: required<i64> = "minOffset",
        /// Queue's max offset.
        max_offset: required<i64> = "maxOffset",
    }
}

/// `PullSysFlag` bits of [`PullMessageRequestHeader::sys_flag`].
pub mod pull_sys_flag {
    /// Commit `commitOffset` along with the pull.
    pub const FLAG_COMMIT_OFFSET: i32 = 0x1;
    /// The broker may hold the request (long polling).
    pub const FLAG_SUSPEND: i32 = 0x1 << 1;
    /// `subscription` carries the expression to filter with.
    pub const FLAG_SUBSCRIPTION: i32 = 0x1 << 2;
    /// Class filter mode.
    pub const FLAG_CLASS_FILTER: i32 = 0x1 << 3;
    /// Pull from a lite pull consumer.
    pub const FLAG_LITE_PULL_MESSAGE: i32 = 0x1 << 4;

    /// `PullSysFlag.buildSysFlag(commitOffset, suspend, subscription, classFilter)`.
    #[must_use]
    #[expect(
        clippy::fn_params_excessive_bools,
        reason = "the four flags of Java's PullSysFlag.buildSysFlag, in its order"
    )]
    pub const fn build(
        commit_offset: bool,
        suspend: bool,
        subscription: bool,
        class_filter: bool,
    ) -> i32 {
        let mut f = 0;
        if commit_offset {
            f |= FLAG_COMMIT_OFFSET;
        }
        if suspend {
            f |= FLAG_SUSPEND;
        }
        if subscription {
            f |= FLAG_SUBSCRIPTION;
        }
        if class_filter {
            f |= FLAG_CLASS_FILTER;
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::header::CommandHeader;

    #[test]
    fn pull_headers_round_trip() {
        let h = PullMessageRequestHeader {
            consumer_group: "cg".into(),
            topic: "t".into(),
            queue_id: 0,
            queue_offset: 10,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::build(true, true, true, false),
            commit_offset: 9,
            suspend_timeout_millis: 15_000,
            subscription: Some("TagA || TagB".into()),
            sub_version: 1_700_000_000_000,
            expression_type: Some("TAG".into()),
            broker_name: None,
        };
        assert_eq!(h.sys_flag, 7);
        let ext = h.to_ext_fields();
        assert_eq!(&ext["suspendTimeoutMillis"], "15000");
        assert_eq!(PullMessageRequestHeader::from_ext_fields(&ext).unwrap(), h);
        let r = PullMessageResponseHeader {
            suggest_which_broker_id: 0,
            next_begin_offset: 11,
            min_offset: 0,
            max_offset: 11,
        };
        assert_eq!(
            PullMessageResponseHeader::from_ext_fields(&r.to_ext_fields()).unwrap(),
            r
        );
    }
}
