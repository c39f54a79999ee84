//! The broker's Prometheus metrics (`metricsExporterType = PROM`), named and labelled as
//! RocketMQ 5's `BrokerMetricsConstant` and `DefaultStoreMetricsConstant` name them:
//! messages and bytes in per topic, out per topic and consumer group, consumer lag, storage
//! size, flush- and dispatch-behind bytes, topic/group/connection counts, and the RPC latency
//! histogram of RemotingMetricsConstant ([`rpc`]).
//!
//! # Hot path
//! The messages and bytes in and out are RocketMQ's statistic tables (`TOPIC_PUT_NUMS`,
//! `TOPIC_PUT_SIZE`, `GROUP_GET_NUMS`, `GROUP_GET_SIZE` in [`crate::stats_items`]), which the
//! send and pull paths count anyway for VIEW_BROKER_STATS_DATA: `/metrics` reads them, it
//! does not count them a second time. Only the RPC latency histogram ([`rpc`]) is counted here,
//! and only when the exporter is on. Everything else (lag, storage, counts) is read from the
//! managers and the store when Prometheus scrapes, so it costs nothing between scrapes.
//!
//! # Encoding and serving
//! [`render`] encodes a scrape with `prometheus-client` (the Prometheus project's Rust
//! client) in the OpenMetrics text format. The HTTP side lives in Python
//! (`rmq.metrics_http`, the standard library's threaded HTTP server): the scrape is a rare,
//! small request, the Python process already owns the ports, the TLS settings and the
//! nameserver, and this keeps an HTTP stack out of the Rust build.

use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::state::BrokerState;

mod rpc;

/// `metricsExporterType` values that turn the exporter on.
pub const EXPORTER_PROM: &str = "PROM";

/// What is counted for the exporter alone: the RPC latencies (see the module doc).
#[derive(Debug, Default)]
pub struct BrokerMetrics {
    enabled: bool,
    rpc: rpc::RpcLatencies,
}

impl BrokerMetrics {
    /// Counters that count when `enabled` (`metricsExporterType = PROM`).
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            rpc: rpc::RpcLatencies::default(),
        }
    }

    /// Whether the exporter is on.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A request with `request_code` was answered with `response_code` after `elapsed`.
    pub fn on_rpc(&self, request_code: i32, response_code: i32, elapsed: std::time::Duration) {
        if self.enabled {
            self.rpc.observe(request_code, response_code, elapsed);
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TopicLabels {
    topic: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    topic: String,
    consumer_group: String,
}

/// Figures of the process the Python side reads (`resource`, `/proc`).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessFigures {
    /// User + system CPU seconds.
    pub cpu_seconds: f64,
    /// Resident set size in bytes.
    pub resident_bytes: i64,
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: i64) {
    let g = Gauge::<i64>::default();
    g.set(value);
    registry.register(name, help, g);
}

fn runtime_figure(info: &[(&str, String)], key: &str) -> i64 {
    info.iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

/// One scrape of `b`, in the OpenMetrics text format.
#[must_use]
pub fn render(b: &BrokerState, process: ProcessFigures) -> String {
    let mut r = Registry::default();
    let (msgs_in, bytes_in) = (
        Family::<TopicLabels, Counter>::default(),
        Family::<TopicLabels, Counter>::default(),
    );
    let (msgs_out, bytes_out) = (
        Family::<GroupLabels, Counter>::default(),
        Family::<GroupLabels, Counter>::default(),
    );
    let items = &b.stats.items;
    for (family, table) in [
        (&msgs_in, &items.topic_put_nums),
        (&bytes_in, &items.topic_put_size),
    ] {
        for (topic, totals) in table.snapshot() {
            family
                .get_or_create(&TopicLabels { topic })
                .inc_by(totals.value);
        }
    }
    for (family, table) in [
        (&msgs_out, &items.group_get_nums),
        (&bytes_out, &items.group_get_size),
    ] {
        for (key, totals) in table.snapshot() {
            // `topic@group` (RocketMQ's stats key); neither name may hold an '@'.
            let Some((topic, group)) = key.split_once('@') else {
                continue;
            };
            let labels = GroupLabels {
                topic: topic.to_owned(),
                consumer_group: group.to_owned(),
            };
            family.get_or_create(&labels).inc_by(totals.value);
        }
    }
    r.register("rocketmq_messages_in", "Messages put, per topic.", msgs_in);
    r.register(
        "rocketmq_throughput_in",
        "Stored bytes put, per topic.",
        bytes_in,
    );
    r.register(
        "rocketmq_messages_out",
        "Messages pulled, per topic and consumer group.",
        msgs_out,
    );
    r.register(
        "rocketmq_throughput_out",
        "Stored bytes pulled, per topic and consumer group.",
        bytes_out,
    );
    register_lag(&mut r, b);
    let info = b.store.runtime_info();
    let max = runtime_figure(&info, "commitLogMaxOffset");
    let min = runtime_figure(&info, "commitLogMinOffset");
    let flushed = runtime_figure(&info, "commitLogFlushedOffset");
    gauge(
        &mut r,
        "rocketmq_storage_size",
        "Bytes of CommitLog kept (max - min physical offset).",
        max - min,
    );
    gauge(
        &mut r,
        "rocketmq_storage_flush_behind_bytes",
        "CommitLog bytes written but not yet flushed.",
        (max - flushed).max(0),
    );
    gauge(
        &mut r,
        "rocketmq_storage_dispatch_behind_bytes",
        "CommitLog bytes not yet dispatched to the ConsumeQueues.",
        runtime_figure(&info, "dispatchBehindBytes"),
    );
    register_counts(&mut r, b);
    b.metrics.rpc.register(&mut r);
    let cpu = Counter::<f64, AtomicU64>::default();
    cpu.inc_by(process.cpu_seconds);
    r.register(
        "process_cpu_seconds",
        "User and system CPU time of the broker process.",
        cpu,
    );
    gauge(
        &mut r,
        "process_resident_memory_bytes",
        "Resident memory of the broker process.",
        process.resident_bytes,
    );
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &r);
    out
}

/// `rocketmq_consumer_lag_messages`: per group and topic, the messages between the group's
/// committed offsets and the queues' max offsets; `rocketmq_consumer_lag_latency`: how long
/// (ms) the oldest of them has been stored (0 when the group is caught up).
fn register_lag(r: &mut Registry, b: &BrokerState) {
    let lag = Family::<GroupLabels, Gauge>::default();
    let latency = Family::<GroupLabels, Gauge>::default();
    let now = rmq_common::time::now_millis();
    for (topic_at_group, queues) in b.offsets.wrapper().offset_table {
        let Some((topic, group)) = topic_at_group.split_once('@') else {
            continue;
        };
        let (mut behind, mut oldest_ms) = (0, 0);
        for (&q, &committed) in &queues {
            let next = committed.max(0);
            let n = (b.store.get_max_offset_in_queue(topic, q) - next).max(0);
            if n > 0 {
                behind += n;
                if let Some(stored) = b.store.get_message_store_timestamp(topic, q, next) {
                    oldest_ms = oldest_ms.max(now - stored);
                }
            }
        }
        let labels = GroupLabels {
            topic: topic.to_owned(),
            consumer_group: group.to_owned(),
        };
        lag.get_or_create(&labels).set(behind);
        latency.get_or_create(&labels).set(oldest_ms.max(0));
    }
    r.register(
        "rocketmq_consumer_lag_messages",
        "Messages not yet consumed (committed), per consumer group and topic.",
        lag,
    );
    r.register(
        "rocketmq_consumer_lag_latency",
        "Milliseconds the oldest message not yet consumed has been stored, per consumer group \
         and topic.",
        latency,
    );
}

/// Topic, group and connection counts.
fn register_counts(r: &mut Registry, b: &BrokerState) {
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    gauge(
        r,
        "rocketmq_topic_number",
        "Topics on this broker.",
        count(b.topics.wrapper().topic_config_table.len()),
    );
    gauge(
        r,
        "rocketmq_consumer_group_number",
        "Subscription groups on this broker.",
        count(b.groups.len()),
    );
    let producers: usize = b.producers.all().iter().map(|(_, c)| c.len()).sum();
    gauge(
        r,
        "rocketmq_producer_connections",
        "Producer connections.",
        count(producers),
    );
    let consumers: usize = b
        .clients
        .groups()
        .iter()
        .map(|g| b.clients.consumer_channels(g).len())
        .sum();
    gauge(
        r,
        "rocketmq_consumer_connections",
        "Consumer connections.",
        count(consumers),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_no_latency_when_off() {
        let off = BrokerMetrics::new(false);
        off.on_rpc(10, 0, std::time::Duration::from_millis(2));
        let mut r = Registry::default();
        off.rpc.register(&mut r);
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &r);
        assert!(!text.contains("request_code=\"10\""), "{text}");
    }
}
