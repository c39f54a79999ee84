//! Names of RocketMQ's system topics and topic prefixes (`TopicValidator`, `MixAll`), and
//! the consumer groups the broker keeps its own progress under. Every crate and the Python
//! package (through `rmq._rmq`) takes these names from here, so a name is written once.

/// The template topic the broker auto-creates topics from
/// (`TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC`).
pub const AUTO_CREATE_TOPIC_KEY_TOPIC: &str = "TBW102";
/// Self-test topic.
pub const SELF_TEST_TOPIC: &str = "SELF_TEST_TOPIC";
/// Benchmark topic (also the benchmark tool's default topic).
pub const BENCHMARK_TOPIC: &str = "BenchmarkTest";
/// Offset-moved events.
pub const OFFSET_MOVED_EVENT: &str = "OFFSET_MOVED_EVENT";
/// Delayed messages wait here, one queue per delay level (queue id = level - 1).
pub const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Delayed messages of RocketMQ 5's second schedule store (reserved here too).
pub const SCHEDULE_TOPIC_V2: &str = "SCHEDULE_TOPIC_XXXX_V2";
/// Transaction half messages (`RMQ_SYS_TRANS_HALF_TOPIC`).
pub const TRANS_HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
/// Transaction op records (`RMQ_SYS_TRANS_OP_HALF_TOPIC`), see [`crate::trans_op`].
pub const TRANS_OP_HALF_TOPIC: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";
/// Transactions over their check limit.
pub const TRANS_CHECK_MAX_TIME_TOPIC: &str = "TRANS_CHECK_MAX_TIME_TOPIC";
/// Message traces.
pub const TRACE_TOPIC: &str = "RMQ_SYS_TRACE_TOPIC";
/// Where timer messages wait (`TimerMessageStore.TIMER_TOPIC`), all in queue 0.
pub const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
/// Prefix of retry topics (`MixAll.RETRY_GROUP_TOPIC_PREFIX`).
pub const RETRY_GROUP_TOPIC_PREFIX: &str = "%RETRY%";
/// Prefix of dead-letter topics (`MixAll.DLQ_GROUP_TOPIC_PREFIX`).
pub const DLQ_GROUP_TOPIC_PREFIX: &str = "%DLQ%";
/// Longest topic name.
pub const TOPIC_MAX_LENGTH: usize = 127;
/// The consumer group under which the transaction check-back keeps its half and op queue
/// offsets (`MixAll.CID_SYS_RMQ_TRANS`).
pub const CID_SYS_RMQ_TRANS: &str = "CID_RMQ_SYS_TRANS";

/// Every name above, by its constant's name: what `rmq._rmq` exposes to Python.
pub const ALL: &[(&str, &str)] = &[
    ("AUTO_CREATE_TOPIC_KEY_TOPIC", AUTO_CREATE_TOPIC_KEY_TOPIC),
    ("SELF_TEST_TOPIC", SELF_TEST_TOPIC),
    ("BENCHMARK_TOPIC", BENCHMARK_TOPIC),
    ("OFFSET_MOVED_EVENT", OFFSET_MOVED_EVENT),
    ("SCHEDULE_TOPIC", SCHEDULE_TOPIC),
    ("SCHEDULE_TOPIC_V2", SCHEDULE_TOPIC_V2),
    ("TRANS_HALF_TOPIC", TRANS_HALF_TOPIC),
    ("TRANS_OP_HALF_TOPIC", TRANS_OP_HALF_TOPIC),
    ("TRANS_CHECK_MAX_TIME_TOPIC", TRANS_CHECK_MAX_TIME_TOPIC),
    ("TRACE_TOPIC", TRACE_TOPIC),
    ("TIMER_TOPIC", TIMER_TOPIC),
    ("RETRY_GROUP_TOPIC_PREFIX", RETRY_GROUP_TOPIC_PREFIX),
    ("DLQ_GROUP_TOPIC_PREFIX", DLQ_GROUP_TOPIC_PREFIX),
    ("CID_SYS_RMQ_TRANS", CID_SYS_RMQ_TRANS),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_names_are_unique_and_within_the_topic_length() {
        let mut seen = std::collections::HashSet::new();
        for (name, value) in ALL {
            assert!(seen.insert(*value), "{name} repeats {value}");
            assert!(value.len() <= TOPIC_MAX_LENGTH);
        }
    }
}
