//! The broker's Prometheus metrics (`metricsExporterType = PROM`), named and labelled as
//! RocketMQ 5's `BrokerMetricsConstant` and `DefaultStoreMetricsConstant` name them:
//! messages and bytes in per topic, out per topic and consumer group, messages sent to a
//! dead-letter queue, consumer lag split into ready and in-flight messages, storage size,
//! flush- and dispatch-behind bytes, topic/group/connection counts, the message size
//! histogram ([`size`]) and the RPC latency histogram of RemotingMetricsConstant ([`rpc`]).
//! Every series carries RocketMQ 5's `cluster`, `node_type` and `node_id` labels.
//!
//! # Hot path
//! The messages and bytes in and out are RocketMQ's statistic tables (`TOPIC_PUT_NUMS`,
//! `TOPIC_PUT_SIZE`, `GROUP_GET_NUMS`, `GROUP_GET_SIZE` in [`crate::stats_items`]), which the
//! send and pull paths count anyway for VIEW_BROKER_STATS_DATA: `/metrics` reads them, it
//! does not count them a second time. Only the RPC latency histogram ([`rpc`]), the message
//! sizes ([`size`]) and the groups' pull offsets ([`pull_offsets`]) are counted here, and only
//! when the exporter is on. Everything else (lag, storage, counts) is read from the
//! managers and the store when Prometheus scrapes, so it costs nothing between scrapes.
//!
//! # Encoding and serving
//! [`render`] encodes a scrape with `prometheus-client` (the Prometheus project's Rust
//! client) in the OpenMetrics text format. The HTTP side lives in Python
//! (`rmq.metrics_http`, the standard library's threaded HTTP server): the scrape is a rare,
//! small request, the Python process already owns the ports, the TLS settings and the
//! nameserver, and this keeps an HTTP stack out of the Rust build.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use rmq_remoting::RequestTimer;

use crate::state::BrokerState;

mod histogram;
mod namesrv;
mod pull_offsets;
mod rpc;
mod size;

pub use namesrv::{render_namesrv, NamesrvFigures};
pub use rpc::RpcLatencies;
pub use size::message_type;

/// `metricsExporterType` values that turn the exporter on.
pub const EXPORTER_PROM: &str = "PROM";

/// What is counted for the exporter alone (see the module doc).
#[derive(Debug, Default)]
pub struct BrokerMetrics {
    enabled: bool,
    rpc: Arc<RpcLatencies>,
    sizes: size::MessageSizes,
    pulled: pull_offsets::PullOffsets,
}

impl BrokerMetrics {
    /// Counters that count when `enabled` (`metricsExporterType = PROM`).
    #[must_use]
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// Whether the exporter is on.
    #[must_use]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// What times the server's answers into the RPC latency histogram (the server's
    /// `ServerConfig::timer`); `None` when the exporter is off, and no clock is read.
    #[must_use]
    pub fn request_timer(&self) -> Option<Arc<dyn RequestTimer>> {
        self.enabled
            .then(|| Arc::clone(&self.rpc) as Arc<dyn RequestTimer>)
    }

    /// Messages of `sizes` bytes and type `kind` ([`message_type`]) were stored to `topic`.
    pub fn on_stored(&self, topic: &str, kind: usize, sizes: impl Iterator<Item = u64>) {
        if self.enabled {
            self.sizes.observe(topic, kind, sizes);
        }
    }

    /// A pull of queue `queue_id` by a group (`topic_at_group`: [`crate::stats_items::stats_key`])
    /// found messages up to `next` (the answer's `nextBeginOffset`).
    pub fn on_pulled(&self, topic_at_group: &str, queue_id: i32, next: i64) {
        if self.enabled {
            self.pulled.record(topic_at_group, queue_id, next);
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

/// The process's CPU time and resident memory (`process_*`, Prometheus' own names).
fn register_process(r: &mut Registry, process: ProcessFigures) {
    let cpu = Counter::<f64, AtomicU64>::default();
    cpu.inc_by(process.cpu_seconds);
    r.register(
        "process_cpu_seconds",
        "User and system CPU time of the process.",
        cpu,
    );
    gauge(
        r,
        "process_resident_memory_bytes",
        "Resident memory of the process.",
        process.resident_bytes,
    );
}

/// One scrape of `b`, in the OpenMetrics text format.
#[must_use]
pub fn render(b: &BrokerState, process: ProcessFigures) -> String {
    // RocketMQ 5's attributes of every broker series (`BrokerMetricsManager`).
    let mut r = Registry::with_labels(
        [
            (
                "cluster".into(),
                b.config.broker_cluster_name.clone().into(),
            ),
            ("node_type".into(), "broker".into()),
            ("node_id".into(), b.config.broker_name.clone().into()),
        ]
        .into_iter(),
    );
    register_traffic(&mut r, b);
    b.metrics.sizes.register(&mut r);
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
    register_process(&mut r, process);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &r);
    out
}

/// Messages and bytes in per topic, out per topic and group, and dead-lettered per topic
/// and group, from the statistic tables.
fn register_traffic(r: &mut Registry, b: &BrokerState) {
    let (msgs_in, bytes_in) = (
        Family::<TopicLabels, Counter>::default(),
        Family::<TopicLabels, Counter>::default(),
    );
    let (msgs_out, bytes_out, to_dlq) = (
        Family::<GroupLabels, Counter>::default(),
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
        (&to_dlq, &items.dlq_put_nums),
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
    r.register(
        "rocketmq_send_to_dlq_messages",
        "Messages moved to a consumer group's dead-letter queue, per group and the topic they \
         were consumed from.",
        to_dlq,
    );
}

/// Per group and topic: `rocketmq_consumer_lag_messages`, the messages between the group's
/// committed offsets and the queues' max offsets, split at the pull offsets
/// ([`pull_offsets`]) into `rocketmq_consumer_ready_messages` (not pulled yet) and
/// `rocketmq_consumer_inflight_messages` (pulled, not committed);
/// `rocketmq_consumer_lag_latency` and `rocketmq_consumer_queueing_latency`: how long (ms) the
/// oldest not committed, and the oldest not pulled, message has been stored (0 when none).
fn register_lag(r: &mut Registry, b: &BrokerState) {
    let names = [
        (
            "rocketmq_consumer_lag_messages",
            "Messages not yet consumed (committed), per consumer group and topic.",
        ),
        (
            "rocketmq_consumer_ready_messages",
            "Messages not yet pulled, per consumer group and topic.",
        ),
        (
            "rocketmq_consumer_inflight_messages",
            "Messages pulled but not yet committed, per consumer group and topic.",
        ),
        (
            "rocketmq_consumer_lag_latency",
            "Milliseconds the oldest message not yet consumed has been stored, per consumer \
             group and topic.",
        ),
        (
            "rocketmq_consumer_queueing_latency",
            "Milliseconds the oldest message not yet pulled has been stored, per consumer group \
             and topic.",
        ),
    ];
    let families: [Family<GroupLabels, Gauge>; 5] = Default::default();
    let now = rmq_common::time::now_millis();
    let age = |topic: &str, q: i32, offset: i64| {
        b.store
            .get_message_store_timestamp(topic, q, offset)
            .map_or(0, |stored| (now - stored).max(0))
    };
    for (topic_at_group, queues) in b.offsets.wrapper().offset_table {
        let Some((topic, group)) = topic_at_group.split_once('@') else {
            continue;
        };
        let mut figures = [0i64; 5];
        for (&q, &committed) in &queues {
            let committed = committed.max(0);
            let max = b.store.get_max_offset_in_queue(topic, q);
            let pulled = b
                .metrics
                .pulled
                .get(&topic_at_group, q)
                .map_or(committed, |p| p.clamp(committed, max.max(committed)));
            let (lag, ready) = ((max - committed).max(0), (max - pulled).max(0));
            figures[0] += lag;
            figures[1] += ready;
            figures[2] += pulled - committed;
            if lag > 0 {
                figures[3] = figures[3].max(age(topic, q, committed));
            }
            if ready > 0 {
                figures[4] = figures[4].max(age(topic, q, pulled));
            }
        }
        let labels = GroupLabels {
            topic: topic.to_owned(),
            consumer_group: group.to_owned(),
        };
        for (family, value) in families.iter().zip(figures) {
            family.get_or_create(&labels).set(value);
        }
    }
    for ((name, help), family) in names.into_iter().zip(families) {
        r.register(name, help, family);
    }
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
    fn times_nothing_when_off() {
        assert!(BrokerMetrics::new(false).request_timer().is_none());
        let on = BrokerMetrics::new(true);
        let timer = on.request_timer().expect("a timer when the exporter is on");
        timer.answered(10, 0, std::time::Duration::from_micros(1500));
        let mut r = Registry::default();
        on.rpc.register(&mut r);
        let mut text = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut text, &r);
        assert!(
            text.contains("rocketmq_rpc_latency_bucket{le=\"3.0\",protocol_type=\"remoting\",request_code=\"10\",response_code=\"0\"} 1"),
            "{text}"
        );
    }
}
