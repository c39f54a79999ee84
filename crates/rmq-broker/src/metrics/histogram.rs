//! A histogram as of one scrape. `prometheus-client`'s own histogram takes observations one
//! by one behind a lock; the broker keeps its buckets as atomics instead ([`super::rpc`],
//! [`super::size`]) and hands the encoder their counts at scrape time through this type.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Shards of each histogram's counters: a thread adds to its own shard (threads are spread
/// over them), so the cores of a busy broker do not bounce one cache line between them on
/// every request; a scrape sums the shards.
pub(super) const SHARDS: usize = 8;

/// This thread's shard, `0..SHARDS`.
pub(super) fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

#[derive(Debug)]
struct Figures {
    sum: f64,
    count: u64,
    buckets: Vec<(f64, u64)>,
}

/// Bucket counts, their sum and count, set once per scrape.
#[derive(Debug, Default)]
pub(super) struct Snapshot(OnceLock<Figures>);

impl Snapshot {
    /// The figures: `counts[i]` observations at most `bounds[i]`, and above every bound the
    /// last one (so `counts` has one entry more than `bounds`); `sum` of the observations.
    pub(super) fn set(&self, sum: f64, bounds: impl Iterator<Item = f64>, counts: &[u64]) {
        // Per-bucket counts: the encoder sums them into Prometheus' cumulative ones;
        // prometheus-client writes `le="+Inf"` for f64::MAX.
        let buckets: Vec<(f64, u64)> = bounds
            .chain([f64::MAX])
            .zip(counts.iter().copied())
            .collect();
        let count = buckets.iter().map(|(_, n)| n).sum();
        let _ = self.0.set(Figures {
            sum,
            count,
            buckets,
        });
    }
}

impl TypedMetric for Snapshot {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for Snapshot {
    fn encode(&self, mut encoder: MetricEncoder<'_>) -> Result<(), std::fmt::Error> {
        match self.0.get() {
            Some(f) => encoder.encode_histogram::<NoLabelSet>(f.sum, f.count, &f.buckets, None),
            None => Ok(()),
        }
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}
