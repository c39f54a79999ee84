//! `rocketmq_message_size`: the sizes of stored messages per topic and message type, in
//! RocketMQ 5's buckets (1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB, above), counted when a
//! send is stored and only while the exporter is on.
//!
//! The type is RocketMQ 5's `TopicMessageType` as its broker derives it from a send:
//! Transaction (a half message), Delay (a delay level or a timer property), FIFO (a sharding
//! key), else Normal.

use crate::rcu_map::RcuMap;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use rmq_common::properties::{PropertyKey, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR};
use rmq_common::sys_flag;

use super::histogram::{Counters, Snapshot};

/// Upper bounds (bytes, inclusive) of the buckets.
const BOUNDS: [u64; 6] = [1 << 10, 4 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20];

/// `TopicMessageType`'s values, in label order.
const TYPES: [&str; 4] = ["Normal", "FIFO", "Delay", "Transaction"];

/// The type of a message with `sys_flag` and encoded `properties` (an index into [`TYPES`]),
/// found in one pass over the properties (this runs on every send while the exporter is on).
#[must_use]
pub fn message_type(sys_flag: i32, properties: &[u8]) -> usize {
    if sys_flag & sys_flag::TRANSACTION_PREPARED_TYPE != 0 {
        return 3;
    }
    let mut fifo = false;
    for pair in properties.split(|&b| b == PROPERTY_SEPARATOR as u8) {
        let Some(i) = pair.iter().position(|&b| b == NAME_VALUE_SEPARATOR as u8) else {
            continue;
        };
        let (name, value) = (&pair[..i], &pair[i + 1..]);
        if value.is_empty() || value == b"0" {
            continue;
        }
        let delay = [
            PropertyKey::DELAY_TIME_LEVEL,
            PropertyKey::TIMER_DELIVER_MS,
            PropertyKey::TIMER_DELAY_SEC,
            PropertyKey::TIMER_DELAY_MS,
        ];
        if delay.iter().any(|k| k.as_bytes() == name) {
            return 2;
        }
        fifo |= name == PropertyKey::SHARDING_KEY.as_bytes();
    }
    usize::from(fifo)
}

/// One histogram: bytes in buckets of [`BOUNDS`] and one above them.
type Buckets = Counters<{ BOUNDS.len() + 1 }>;

/// Per topic, one histogram per message type.
#[derive(Debug, Default)]
pub(super) struct MessageSizes(RcuMap<String, [Buckets; TYPES.len()]>);

impl MessageSizes {
    /// Messages of `sizes` bytes, of type `kind` ([`message_type`]), were stored to `topic`.
    pub(super) fn observe(&self, topic: &str, kind: usize, sizes: impl Iterator<Item = u64>) {
        crate::rcu_map::with_entry(&self.0, topic, |t| Self::add(t, kind, sizes));
    }

    fn add(per_type: &[Buckets; TYPES.len()], kind: usize, sizes: impl Iterator<Item = u64>) {
        let Some(b) = per_type.get(kind) else { return };
        let shard = b.local();
        for size in sizes {
            shard.observe(BOUNDS, size);
        }
    }

    /// Register the histograms as `rocketmq_message_size`.
    pub(super) fn register(&self, r: &mut Registry) {
        let family = Family::<SizeLabels, Snapshot>::default();
        for (topic, per_type) in self.0.load().iter() {
            for (kind, b) in TYPES.iter().zip(per_type.iter()) {
                let (counts, sum) = b.totals();
                if counts.iter().all(|&n| n == 0) {
                    continue;
                }
                #[expect(clippy::cast_precision_loss, reason = "bucket bounds are exact")]
                let bounds = BOUNDS.iter().map(|&b| b as f64);
                #[expect(clippy::cast_precision_loss, reason = "byte sums far below 2^52")]
                let sum = sum as f64;
                let labels = SizeLabels {
                    topic: topic.clone(),
                    message_type: kind,
                };
                family.get_or_create(&labels).set(sum, bounds, &counts);
            }
        }
        r.register(
            "rocketmq_message_size",
            "Bytes per stored message (body and properties as sent), per topic and message type.",
            family,
        );
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SizeLabels {
    topic: String,
    message_type: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_follow_rocketmq_5() {
        let p = |s: &str| s.replace(',', "\u{2}").replace('=', "\u{1}").into_bytes();
        assert_eq!(TYPES[message_type(0, &p("KEYS=k"))], "Normal");
        assert_eq!(TYPES[message_type(0, &p("DELAY=3"))], "Delay");
        assert_eq!(TYPES[message_type(0, &p("DELAY=0"))], "Normal");
        assert_eq!(TYPES[message_type(0, &p("TIMER_DELIVER_MS=5"))], "Delay");
        assert_eq!(TYPES[message_type(0, &p("__SHARDINGKEY=a"))], "FIFO");
        let half = sys_flag::TRANSACTION_PREPARED_TYPE;
        assert_eq!(TYPES[message_type(half, &p("DELAY=3"))], "Transaction");
    }

    #[test]
    fn sizes_land_in_their_buckets() {
        let s = MessageSizes::default();
        s.observe("T", 0, [10, 1024, 1025, 5 << 20].into_iter());
        let mut r = Registry::default();
        s.register(&mut r);
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &r);
        assert!(
            text.contains(
                "rocketmq_message_size_bucket{le=\"1024.0\",topic=\"T\",message_type=\"Normal\"} 2"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "rocketmq_message_size_bucket{le=\"4096.0\",topic=\"T\",message_type=\"Normal\"} 3"
            ),
            "{text}"
        );
        assert!(
            text.contains("rocketmq_message_size_count{topic=\"T\",message_type=\"Normal\"} 4"),
            "{text}"
        );
    }
}
