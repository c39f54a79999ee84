//! `rocketmq_rpc_latency`: how long the broker took to answer, per request code and response
//! code, in RocketMQ 5's buckets (`RemotingMetricsManager`: 1, 3, 5, 7, 10, 100, 1000, 2000,
//! 3000 ms). A pull held by long polling is counted when it is answered from the hold
//! service's wake-up, not here (its answer leaves by another path).
//!
//! Each (request code, response code) pair has its own bucket atomics, found through a
//! read-copy-update map as the topic counters are (see the parent module). The server times
//! each request in its own dispatch and tells an [`RpcLatencies`] (a
//! [`rmq_remoting::RequestTimer`] set in its `ServerConfig::timer`): the broker's and the
//! nameserver's.

use crate::rcu_map::RcuMap;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;
use rmq_remoting::RequestTimer;

use super::histogram::{Counters, Snapshot};

/// Upper bounds (ms, inclusive) of the buckets, as RocketMQ 5 sets them.
const BOUNDS_MS: [u32; 9] = [1, 3, 5, 7, 10, 100, 1000, 2000, 3000];

/// One pair's histogram: µs in buckets of [`BOUNDS_MS`] and one above them.
type Latencies = Counters<{ BOUNDS_MS.len() + 1 }>;

fn observe(l: &Latencies, elapsed: Duration) {
    let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
    let bounds_us = BOUNDS_MS.iter().map(|&ms| u64::from(ms) * 1000);
    l.local().observe(bounds_us, us);
}

/// The histograms of every (request code, response code) pair seen.
#[derive(Debug, Default)]
pub struct RpcLatencies(RcuMap<(i32, i32), Latencies>);

impl RpcLatencies {
    /// A request with `request_code` was answered with `response_code` after `elapsed`.
    pub fn observe(&self, request_code: i32, response_code: i32, elapsed: Duration) {
        let key = (request_code, response_code);
        crate::rcu_map::with_entry(&self.0, &key, |l| observe(l, elapsed));
    }

    /// Register the histograms' current figures as `rocketmq_rpc_latency`.
    pub(super) fn register(&self, r: &mut Registry) {
        let family = Family::<RpcLabels, Snapshot>::default();
        for (&(request_code, response_code), l) in self.0.load().iter() {
            let (counts, micros) = l.totals();
            #[expect(clippy::cast_precision_loss, reason = "µs sums far below 2^52")]
            let sum_ms = micros as f64 / 1000.0;
            let labels = RpcLabels {
                protocol_type: "remoting",
                request_code,
                response_code,
            };
            family.get_or_create(&labels).set(
                sum_ms,
                BOUNDS_MS.iter().map(|&b| f64::from(b)),
                &counts,
            );
        }
        r.register(
            "rocketmq_rpc_latency",
            "Milliseconds from a request's arrival to its answer, per request and response code.",
            family,
        );
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RpcLabels {
    protocol_type: &'static str,
    request_code: i32,
    response_code: i32,
}

impl RequestTimer for RpcLatencies {
    fn answered(&self, request_code: i32, response_code: i32, elapsed: Duration) {
        self.observe(request_code, response_code, elapsed);
    }
}
