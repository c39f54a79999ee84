//! The broker's histograms: [`Counters`], bucket counts and a sum kept as atomics in per-thread
//! shards, and [`Snapshot`], their figures as of one scrape. `prometheus-client`'s own
//! histogram takes observations one by one behind a lock; [`super::rpc`] and [`super::size`]
//! count into [`Counters`] instead and hand the encoder a [`Snapshot`] at scrape time.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// Shards of each histogram's counters: a thread adds to its own shard (threads are spread
/// over them), so the cores of a busy broker do not bounce one cache line between them on
/// every request; a scrape sums the shards.
const SHARDS: usize = 8;

/// This thread's shard, `0..SHARDS`.
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|s| *s)
}

/// One shard of a histogram's `N` bucket counts (the last: above every bound) and the sum of
/// the observations, on a cache line of its own.
#[derive(Debug)]
#[repr(align(128))]
pub(super) struct Shard<const N: usize> {
    counts: [AtomicU64; N],
    sum: AtomicU64,
}

impl<const N: usize> Shard<N> {
    /// Count `value` in the first bucket whose upper bound (inclusive) it does not pass.
    pub(super) fn observe(&self, bounds: impl IntoIterator<Item = u64>, value: u64) {
        let bucket = bounds
            .into_iter()
            .position(|max| value <= max)
            .map_or(N - 1, |i| i.min(N - 1));
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }
}

/// A histogram of `N` buckets counted in [`SHARDS`] shards.
#[derive(Debug)]
pub(super) struct Counters<const N: usize>([Shard<N>; SHARDS]);

impl<const N: usize> Default for Counters<N> {
    fn default() -> Self {
        Self(std::array::from_fn(|_| Shard {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
        }))
    }
}

impl<const N: usize> Counters<N> {
    /// The calling thread's shard (to count several observations with one look-up).
    pub(super) fn local(&self) -> &Shard<N> {
        &self.0[shard()]
    }

    /// Bucket counts and the sum of the observations over every shard.
    pub(super) fn totals(&self) -> (Vec<u64>, u64) {
        let mut counts = vec![0; N];
        let mut sum = 0;
        for s in &self.0 {
            for (c, b) in counts.iter_mut().zip(&s.counts) {
                *c += b.load(Ordering::Relaxed);
            }
            sum += s.sum.load(Ordering::Relaxed);
        }
        (counts, sum)
    }
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
