//! The nameserver's Prometheus scrape (`metricsExporterType = PROM` in `namesrv.conf`).
//! RocketMQ 5 exports no nameserver metrics; rmq's follow the broker's conventions: the same
//! `rocketmq_rpc_latency` histogram (timed by the nameserver's server, its
//! `ServerConfig::timer`), the route table's sizes, which Python hands over at scrape time,
//! and the process figures, with `node_type="nameserver"` and `node_id` its address.

use prometheus_client::registry::Registry;

use super::{gauge, register_process, ProcessFigures, RpcLatencies};

/// The route table's sizes at one scrape.
#[derive(Debug, Clone, Copy, Default)]
pub struct NamesrvFigures {
    /// Live brokers (addresses that registered and were not dropped as inactive).
    pub brokers: i64,
    /// Topics in the route table.
    pub topics: i64,
    /// Clusters.
    pub clusters: i64,
}

/// One scrape of a nameserver listening on `node_id`, in the OpenMetrics text format.
#[must_use]
pub fn render_namesrv(
    rpc: &RpcLatencies,
    node_id: &str,
    figures: NamesrvFigures,
    process: ProcessFigures,
) -> String {
    let mut r = Registry::with_labels(
        [
            ("node_type".into(), "nameserver".into()),
            ("node_id".into(), node_id.to_owned().into()),
        ]
        .into_iter(),
    );
    rpc.register(&mut r);
    gauge(
        &mut r,
        "rocketmq_namesrv_broker_number",
        "Live brokers registered with this nameserver.",
        figures.brokers,
    );
    gauge(
        &mut r,
        "rocketmq_namesrv_topic_number",
        "Topics in this nameserver's route table.",
        figures.topics,
    );
    gauge(
        &mut r,
        "rocketmq_namesrv_cluster_number",
        "Clusters in this nameserver's route table.",
        figures.clusters,
    );
    register_process(&mut r, process);
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &r);
    out
}
