//! The broker's Prometheus scrape for Python (`rmq.metrics_http` serves it): the text
//! `rmq_broker::metrics::render` encodes, with the process figures Python reads.

use pyo3::prelude::*;
use rmq_broker::metrics::{render, ProcessFigures};

use crate::broker::BrokerServer;

/// One scrape of `server`'s metrics (OpenMetrics text).
#[pyfunction]
#[expect(
    clippy::needless_pass_by_value,
    reason = "pyo3 extracts Python arguments as owned values"
)]
fn broker_metrics_text(
    py: Python<'_>,
    server: PyRef<'_, BrokerServer>,
    cpu_seconds: f64,
    resident_bytes: i64,
) -> String {
    let state = std::sync::Arc::clone(server.controller.broker());
    let process = ProcessFigures {
        cpu_seconds,
        resident_bytes,
    };
    py.detach(|| render(&state, process))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(broker_metrics_text, m)?)
}
