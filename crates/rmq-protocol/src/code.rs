//! Request and response codes, with RocketMQ's numbers (`RequestCode.java`,
//! `ResponseCode.java`, `RemotingSysResponseCode.java` of the 4.9.x branch).
//!
//! Both are newtypes over `i32` with associated constants rather than closed enums: a code
//! this crate does not know is still a valid value (the broker answers it with
//! [`ResponseCode::REQUEST_CODE_NOT_SUPPORTED`] instead of dropping the connection), and the
//! constants still work in `match` patterns.

use std::fmt;

macro_rules! codes {
    (
        $(#[$tmeta:meta])*
        $ty:ident {
            $(
                $(#[$gmeta:meta])*
                group $group:literal {
                    $( $(#[$cmeta:meta])* $name:ident = $value:literal, )*
                }
            )*
        }
    ) => {
        $(#[$tmeta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $ty(pub i32);

        impl $ty {
            $($(
                $(#[$cmeta])*
                pub const $name: $ty = $ty($value);
            )*)*

            /// Every named code with its Java name and group, in declaration order.
            pub const ALL: &'static [($ty, &'static str, &'static str)] = &[
                $($( ($ty($value), stringify!($name), $group), )*)*
            ];

            /// The Java constant name, if the code is known.
            #[must_use]
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($( $value => Some(stringify!($name)), )*)*
                    _ => None,
                }
            }

            /// Whether this crate knows the code.
            #[must_use]
            pub const fn is_known(self) -> bool {
                self.name().is_some()
            }

            /// The raw number.
            #[must_use]
            pub const fn value(self) -> i32 {
                self.0
            }
        }

        impl From<i32> for $ty {
            fn from(v: i32) -> Self {
                Self(v)
            }
        }

        impl From<$ty> for i32 {
            fn from(c: $ty) -> Self {
                c.0
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.name() {
                    Some(n) => write!(f, "{}({})", n, self.0),
                    None => write!(f, "{}({})", stringify!($ty), self.0),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }
    };
}

codes! {
    /// What a request asks for (`RequestCode`). Unknown values are representable.
    RequestCode {
        /// Producer send path.
        group "send" {
            /// Send one message, long field names (`SendMessageRequestHeader`).
            SEND_MESSAGE = 10,
            /// Send one message, one-letter field names (`SendMessageRequestHeaderV2`).
            SEND_MESSAGE_V2 = 310,
            /// Send a batch (V2 header; body = `MessageDecoder.encodeMessages`).
            SEND_BATCH_MESSAGE = 320,
            /// Reply to a request-reply message.
            SEND_REPLY_MESSAGE = 324,
            /// Reply, V2 header.
            SEND_REPLY_MESSAGE_V2 = 325,
            /// Broker pushes a reply to the requesting client.
            PUSH_REPLY_MESSAGE_TO_CLIENT = 326,
        }
        /// Consumer pull path and offsets.
        group "consume" {
            /// Pull messages (long polling).
            PULL_MESSAGE = 11,
            /// Query messages by key in the IndexFile.
            QUERY_MESSAGE = 12,
            /// Broker offsets (unused by 4.x clients).
            QUERY_BROKER_OFFSET = 13,
            /// Read a group's committed offset.
            QUERY_CONSUMER_OFFSET = 14,
            /// Commit a group's offset.
            UPDATE_CONSUMER_OFFSET = 15,
            /// Offset of the first message at or after a timestamp.
            SEARCH_OFFSET_BY_TIMESTAMP = 29,
            /// Next offset to be written in a queue.
            GET_MAX_OFFSET = 30,
            /// First offset still readable in a queue.
            GET_MIN_OFFSET = 31,
            /// Store time of the first message in a queue.
            GET_EARLIEST_MSG_STORETIME = 32,
            /// Read one message by its offset message id.
            VIEW_MESSAGE_BY_ID = 33,
            /// Return a message that failed consumption (retry / DLQ).
            CONSUMER_SEND_MSG_BACK = 36,
            /// Consumers of a group (for rebalance).
            GET_CONSUMER_LIST_BY_GROUP = 38,
            /// Lock queues for ordered consumption.
            LOCK_BATCH_MQ = 41,
            /// Release queue locks.
            UNLOCK_BATCH_MQ = 42,
            /// Lite pull consumer's pull.
            LITE_PULL_MESSAGE = 361,
        }
        /// Client registration and broker-to-client calls.
        group "client" {
            /// Client heartbeat with its producer and consumer groups.
            HEART_BEAT = 34,
            /// Client leaves.
            UNREGISTER_CLIENT = 35,
            /// Broker asks a producer for a transaction's state.
            CHECK_TRANSACTION_STATE = 39,
            /// Broker tells consumers to rebalance.
            NOTIFY_CONSUMER_IDS_CHANGED = 40,
            /// Validate a consumer's subscription expression.
            CHECK_CLIENT_CONFIG = 46,
            /// Broker asks a client to reset offsets.
            RESET_CONSUMER_CLIENT_OFFSET = 220,
            /// Broker asks a client for its consumption status.
            GET_CONSUMER_STATUS_FROM_CLIENT = 221,
            /// Admin asks (through the broker) for a consumer's running info.
            GET_CONSUMER_RUNNING_INFO = 307,
            /// Admin asks a consumer to consume one message now.
            CONSUME_MESSAGE_DIRECTLY = 309,
        }
        /// Transactions.
        group "transaction" {
            /// Commit or roll back a half message.
            END_TRANSACTION = 37,
            /// Resume checking a half message.
            RESUME_CHECK_HALF_MESSAGE = 323,
        }
        /// Broker administration (mqadmin).
        group "broker admin" {
            /// Create or update a topic on a broker.
            UPDATE_AND_CREATE_TOPIC = 17,
            /// All topic configs of a broker.
            GET_ALL_TOPIC_CONFIG = 21,
            /// Topic configs (unused).
            GET_TOPIC_CONFIG_LIST = 22,
            /// Topic names (unused).
            GET_TOPIC_NAME_LIST = 23,
            /// Change broker config at run time.
            UPDATE_BROKER_CONFIG = 25,
            /// Broker config as properties text.
            GET_BROKER_CONFIG = 26,
            /// Delete expired files now.
            TRIGGER_DELETE_FILES = 27,
            /// Broker runtime statistics (`KVTable`).
            GET_BROKER_RUNTIME_INFO = 28,
            /// All consumer offsets.
            GET_ALL_CONSUMER_OFFSET = 43,
            /// All delay-level offsets.
            GET_ALL_DELAY_OFFSET = 45,
            /// ACL: create or update an account.
            UPDATE_AND_CREATE_ACL_CONFIG = 50,
            /// ACL: delete an account.
            DELETE_ACL_CONFIG = 51,
            /// ACL: cluster ACL info.
            GET_BROKER_CLUSTER_ACL_INFO = 52,
            /// ACL: global white list.
            UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53,
            /// Create or update a subscription group.
            UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200,
            /// All subscription groups.
            GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201,
            /// Min/max offsets of every queue of a topic.
            GET_TOPIC_STATS_INFO = 202,
            /// Connections of a consumer group.
            GET_CONSUMER_CONNECTION_LIST = 203,
            /// Connections of a producer group.
            GET_PRODUCER_CONNECTION_LIST = 204,
            /// Delete a subscription group.
            DELETE_SUBSCRIPTIONGROUP = 207,
            /// Consumption progress of a group.
            GET_CONSUME_STATS = 208,
            /// Suspend a consumer (unused).
            SUSPEND_CONSUMER = 209,
            /// Resume a consumer (unused).
            RESUME_CONSUMER = 210,
            /// Reset offsets in a consumer (unused).
            RESET_CONSUMER_OFFSET_IN_CONSUMER = 211,
            /// Reset offsets in a broker (unused).
            RESET_CONSUMER_OFFSET_IN_BROKER = 212,
            /// Adjust a consumer's thread pool (unused).
            ADJUST_CONSUMER_THREAD_POOL = 213,
            /// Who consumed a message.
            WHO_CONSUME_THE_MESSAGE = 214,
            /// Delete a topic on a broker.
            DELETE_TOPIC_IN_BROKER = 215,
            /// Reset a group's offsets to a timestamp.
            INVOKE_BROKER_TO_RESET_OFFSET = 222,
            /// Collect consumer status through the broker.
            INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223,
            /// Groups consuming a topic.
            QUERY_TOPIC_CONSUME_BY_WHO = 300,
            /// Register a filter server.
            REGISTER_FILTER_SERVER = 301,
            /// Register a filter class.
            REGISTER_MESSAGE_FILTER_CLASS = 302,
            /// Time span of a group's consumption.
            QUERY_CONSUME_TIME_SPAN = 303,
            /// System topics of a broker.
            GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305,
            /// Drop consume queues of deleted topics.
            CLEAN_EXPIRED_CONSUMEQUEUE = 306,
            /// Correction offsets.
            QUERY_CORRECTION_OFFSET = 308,
            /// Copy one group's offsets to another.
            CLONE_GROUP_OFFSET = 314,
            /// Broker statistics.
            VIEW_BROKER_STATS_DATA = 315,
            /// Drop topics with no queue data.
            CLEAN_UNUSED_TOPIC = 316,
            /// Consumption stats of the whole broker.
            GET_BROKER_CONSUME_STATS = 317,
            /// Raw ConsumeQueue entries.
            QUERY_CONSUME_QUEUE = 321,
            /// All producers of a broker.
            GET_ALL_PRODUCER_INFO = 328,
            /// Topics a group has offsets on (5.x; `mqadmin` / dashboard).
            QUERY_TOPICS_BY_CONSUMER = 343,
            /// One topic's config (5.x, `TopicConfigAndQueueMapping`).
            GET_TOPIC_CONFIG = 351,
            /// One subscription group's config (5.x; `mqadmin getConsumerConfig`).
            GET_SUBSCRIPTIONGROUP_CONFIG = 352,
            /// Delete expired CommitLog files.
            DELETE_EXPIRED_COMMITLOG = 329,
            /// Replication status of a broker (`HARuntimeInfo`, 5.x; `mqadmin haStatus`).
            GET_BROKER_HA_STATUS = 907,
        }
        /// Nameserver.
        group "namesrv" {
            /// Store a key/value.
            PUT_KV_CONFIG = 100,
            /// Read a key/value.
            GET_KV_CONFIG = 101,
            /// Delete a key/value.
            DELETE_KV_CONFIG = 102,
            /// Broker registers its topics (every 30 s).
            REGISTER_BROKER = 103,
            /// Broker leaves.
            UNREGISTER_BROKER = 104,
            /// Route of a topic (`TopicRouteData`).
            GET_ROUTEINFO_BY_TOPIC = 105,
            /// Brokers and clusters (`ClusterInfo`).
            GET_BROKER_CLUSTER_INFO = 106,
            /// Make a broker's topics read-only.
            WIPE_WRITE_PERM_OF_BROKER = 205,
            /// Every topic the nameserver knows.
            GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206,
            /// Delete a topic's route.
            DELETE_TOPIC_IN_NAMESRV = 216,
            /// All key/values of a namespace.
            GET_KVLIST_BY_NAMESPACE = 219,
            /// Topics of a cluster.
            GET_TOPICS_BY_CLUSTER = 224,
            /// System topics.
            GET_SYSTEM_TOPIC_LIST_FROM_NS = 304,
            /// Unit topics.
            GET_UNIT_TOPIC_LIST = 311,
            /// Topics with unit subscriptions.
            GET_HAS_UNIT_SUB_TOPIC_LIST = 312,
            /// Non-unit topics with unit subscriptions.
            GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313,
            /// Change nameserver config.
            UPDATE_NAMESRV_CONFIG = 318,
            /// Nameserver config.
            GET_NAMESRV_CONFIG = 319,
            /// Has the broker's topic config changed since the last registration?
            QUERY_DATA_VERSION = 322,
            /// Give write permission back to a broker.
            ADD_WRITE_PERM_OF_BROKER = 327,
        }
    }
}

codes! {
    /// How a request went (`ResponseCode` and `RemotingSysResponseCode`). Unknown values are
    /// representable.
    ResponseCode {
        /// Remoting layer (`RemotingSysResponseCode`).
        group "system" {
            /// Done.
            SUCCESS = 0,
            /// Failed; the remark says why.
            SYSTEM_ERROR = 1,
            /// Overloaded; retry later.
            SYSTEM_BUSY = 2,
            /// The request code is not served here.
            REQUEST_CODE_NOT_SUPPORTED = 3,
            /// A transaction operation failed.
            TRANSACTION_FAILED = 4,
        }
        /// Send path.
        group "send" {
            /// Stored, but the sync flush timed out.
            FLUSH_DISK_TIMEOUT = 10,
            /// Stored, but no slave to replicate to.
            SLAVE_NOT_AVAILABLE = 11,
            /// Stored, but replication timed out.
            FLUSH_SLAVE_TIMEOUT = 12,
            /// The message is invalid (too large, bad topic, bad properties).
            MESSAGE_ILLEGAL = 13,
            /// The broker cannot serve (slave, shutting down, disk full).
            SERVICE_NOT_AVAILABLE = 14,
            /// The client version is not supported.
            VERSION_NOT_SUPPORTED = 15,
            /// Forbidden by broker, topic or group permission.
            NO_PERMISSION = 16,
            /// The topic does not exist.
            TOPIC_NOT_EXIST = 17,
            /// The topic already exists.
            TOPIC_EXIST_ALREADY = 18,
        }
        /// Pull and query.
        group "pull" {
            /// No new message (caught up).
            PULL_NOT_FOUND = 19,
            /// Try again at once (all filtered out, or slave redirect).
            PULL_RETRY_IMMEDIATELY = 20,
            /// The requested offset is out of range; use nextBeginOffset.
            PULL_OFFSET_MOVED = 21,
            /// No message matches the query.
            QUERY_NOT_FOUND = 22,
            /// The subscription expression does not parse.
            SUBSCRIPTION_PARSE_FAILED = 23,
            /// The broker has no subscription for this consumer.
            SUBSCRIPTION_NOT_EXIST = 24,
            /// The broker's subscription is older than the request's.
            SUBSCRIPTION_NOT_LATEST = 25,
            /// The subscription group does not exist.
            SUBSCRIPTION_GROUP_NOT_EXIST = 26,
            /// Filter data missing (SQL92 filtering).
            FILTER_DATA_NOT_EXIST = 27,
            /// Filter data stale.
            FILTER_DATA_NOT_LATEST = 28,
        }
        /// Transactions and units.
        group "transaction" {
            /// Commit the half message.
            TRANSACTION_SHOULD_COMMIT = 200,
            /// Roll back the half message.
            TRANSACTION_SHOULD_ROLLBACK = 201,
            /// State unknown (Java spells it UNKNOW).
            TRANSACTION_STATE_UNKNOW = 202,
            /// Wrong producer group.
            TRANSACTION_STATE_GROUP_WRONG = 203,
            /// No buyer id (unit mode).
            NO_BUYER_ID = 204,
            /// Not in the current unit.
            NOT_IN_CURRENT_UNIT = 205,
        }
        /// Admin calls answered by clients.
        group "admin" {
            /// The consumer is not connected.
            CONSUMER_NOT_ONLINE = 206,
            /// Direct consumption timed out.
            CONSUME_MSG_TIMEOUT = 207,
            /// No such message.
            NO_MESSAGE = 208,
            /// ACL update failed.
            UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209,
            /// ACL delete failed.
            DELETE_ACL_CONFIG_FAILED = 210,
            /// White-list update failed.
            UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211,
            /// Flow control.
            FLOW_CONTROL = 215,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_named() {
        for table in [
            RequestCode::ALL
                .iter()
                .map(|(c, n, _)| (c.0, *n))
                .collect::<Vec<_>>(),
            ResponseCode::ALL
                .iter()
                .map(|(c, n, _)| (c.0, *n))
                .collect::<Vec<_>>(),
        ] {
            let mut seen = HashSet::new();
            for (v, _) in &table {
                assert!(seen.insert(*v), "duplicate code {v}");
            }
        }
        assert_eq!(RequestCode(105).name(), Some("GET_ROUTEINFO_BY_TOPIC"));
        assert_eq!(RequestCode(9999).name(), None);
        assert_eq!(format!("{:?}", RequestCode(9999)), "RequestCode(9999)");
        assert_eq!(
            format!("{}", ResponseCode::PULL_NOT_FOUND),
            "PULL_NOT_FOUND(19)"
        );
    }

    /// Pins the numbers the SPEC and the reference table name, as RequestCode.java and
    /// ResponseCode.java (4.9.x) define them.
    #[test]
    fn numbers_pinned_to_java() {
        let req = [
            (RequestCode::SEND_MESSAGE, 10),
            (RequestCode::PULL_MESSAGE, 11),
            (RequestCode::QUERY_MESSAGE, 12),
            (RequestCode::QUERY_CONSUMER_OFFSET, 14),
            (RequestCode::UPDATE_CONSUMER_OFFSET, 15),
            (RequestCode::UPDATE_AND_CREATE_TOPIC, 17),
            (RequestCode::GET_ALL_TOPIC_CONFIG, 21),
            (RequestCode::UPDATE_BROKER_CONFIG, 25),
            (RequestCode::GET_BROKER_CONFIG, 26),
            (RequestCode::GET_BROKER_RUNTIME_INFO, 28),
            (RequestCode::GET_BROKER_HA_STATUS, 907),
            (RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, 29),
            (RequestCode::GET_MAX_OFFSET, 30),
            (RequestCode::GET_MIN_OFFSET, 31),
            (RequestCode::GET_EARLIEST_MSG_STORETIME, 32),
            (RequestCode::VIEW_MESSAGE_BY_ID, 33),
            (RequestCode::HEART_BEAT, 34),
            (RequestCode::UNREGISTER_CLIENT, 35),
            (RequestCode::CONSUMER_SEND_MSG_BACK, 36),
            (RequestCode::END_TRANSACTION, 37),
            (RequestCode::GET_CONSUMER_LIST_BY_GROUP, 38),
            (RequestCode::CHECK_TRANSACTION_STATE, 39),
            (RequestCode::NOTIFY_CONSUMER_IDS_CHANGED, 40),
            (RequestCode::LOCK_BATCH_MQ, 41),
            (RequestCode::UNLOCK_BATCH_MQ, 42),
            (RequestCode::GET_ALL_CONSUMER_OFFSET, 43),
            (RequestCode::GET_ALL_DELAY_OFFSET, 45),
            (RequestCode::PUT_KV_CONFIG, 100),
            (RequestCode::GET_KV_CONFIG, 101),
            (RequestCode::DELETE_KV_CONFIG, 102),
            (RequestCode::REGISTER_BROKER, 103),
            (RequestCode::UNREGISTER_BROKER, 104),
            (RequestCode::GET_ROUTEINFO_BY_TOPIC, 105),
            (RequestCode::GET_BROKER_CLUSTER_INFO, 106),
            (RequestCode::UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, 200),
            (RequestCode::GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201),
            (RequestCode::GET_TOPIC_STATS_INFO, 202),
            (RequestCode::GET_CONSUMER_CONNECTION_LIST, 203),
            (RequestCode::WIPE_WRITE_PERM_OF_BROKER, 205),
            (RequestCode::GET_ALL_TOPIC_LIST_FROM_NAMESERVER, 206),
            (RequestCode::GET_CONSUME_STATS, 208),
            (RequestCode::DELETE_TOPIC_IN_BROKER, 215),
            (RequestCode::DELETE_TOPIC_IN_NAMESRV, 216),
            (RequestCode::RESET_CONSUMER_CLIENT_OFFSET, 220),
            (RequestCode::INVOKE_BROKER_TO_RESET_OFFSET, 222),
            (RequestCode::QUERY_TOPIC_CONSUME_BY_WHO, 300),
            (RequestCode::GET_CONSUMER_RUNNING_INFO, 307),
            (RequestCode::CONSUME_MESSAGE_DIRECTLY, 309),
            (RequestCode::SEND_MESSAGE_V2, 310),
            (RequestCode::SEND_BATCH_MESSAGE, 320),
            (RequestCode::QUERY_DATA_VERSION, 322),
            (RequestCode::QUERY_CONSUME_TIME_SPAN, 303),
            (RequestCode::QUERY_TOPICS_BY_CONSUMER, 343),
            (RequestCode::GET_TOPIC_CONFIG, 351),
            (RequestCode::GET_SUBSCRIPTIONGROUP_CONFIG, 352),
            (RequestCode::LITE_PULL_MESSAGE, 361),
        ];
        for (c, v) in req {
            assert_eq!(c.0, v, "{c:?}");
        }
        let resp = [
            (ResponseCode::SUCCESS, 0),
            (ResponseCode::SYSTEM_ERROR, 1),
            (ResponseCode::SYSTEM_BUSY, 2),
            (ResponseCode::REQUEST_CODE_NOT_SUPPORTED, 3),
            (ResponseCode::FLUSH_DISK_TIMEOUT, 10),
            (ResponseCode::SLAVE_NOT_AVAILABLE, 11),
            (ResponseCode::FLUSH_SLAVE_TIMEOUT, 12),
            (ResponseCode::MESSAGE_ILLEGAL, 13),
            (ResponseCode::SERVICE_NOT_AVAILABLE, 14),
            (ResponseCode::NO_PERMISSION, 16),
            (ResponseCode::TOPIC_NOT_EXIST, 17),
            (ResponseCode::PULL_NOT_FOUND, 19),
            (ResponseCode::PULL_RETRY_IMMEDIATELY, 20),
            (ResponseCode::PULL_OFFSET_MOVED, 21),
            (ResponseCode::QUERY_NOT_FOUND, 22),
            (ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST, 26),
            (ResponseCode::TRANSACTION_STATE_UNKNOW, 202),
            (ResponseCode::NOT_IN_CURRENT_UNIT, 205),
        ];
        for (c, v) in resp {
            assert_eq!(c.0, v, "{c:?}");
        }
    }

    #[test]
    fn constants_match_in_patterns() {
        let describe = |c: RequestCode| match c {
            RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2 => "send",
            RequestCode::PULL_MESSAGE => "pull",
            _ => "other",
        };
        assert_eq!(describe(RequestCode::from(310)), "send");
        assert_eq!(describe(RequestCode::from(11)), "pull");
        assert_eq!(describe(RequestCode::from(-5)), "other");
    }
}
