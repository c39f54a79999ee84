//! The Prometheus scrapes for Python (`rmq.metrics_http` serves them): the broker's, which
//! `rmq_broker::metrics::render` encodes, and the nameserver's (`render_namesrv`), with the
//! process figures (and for the nameserver, the route table's sizes) Python reads.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rmq_broker::metrics::{render, render_namesrv, NamesrvFigures, ProcessFigures};

use crate::broker::BrokerServer;
use crate::remoting::RemotingServer;

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

/// One scrape of a nameserver `server` started with `metrics=True` (OpenMetrics text).
#[pyfunction]
#[pyo3(signature = (server, *, brokers, topics, clusters, cpu_seconds, resident_bytes))]
#[expect(
    clippy::needless_pass_by_value,
    reason = "pyo3 extracts Python arguments as owned values"
)]
fn namesrv_metrics_text(
    server: PyRef<'_, RemotingServer>,
    brokers: i64,
    topics: i64,
    clusters: i64,
    cpu_seconds: f64,
    resident_bytes: i64,
) -> PyResult<String> {
    let Some(rpc) = &server.rpc else {
        return Err(PyValueError::new_err(
            "this RemotingServer was started without metrics=True",
        ));
    };
    let figures = NamesrvFigures {
        brokers,
        topics,
        clusters,
    };
    let process = ProcessFigures {
        cpu_seconds,
        resident_bytes,
    };
    Ok(render_namesrv(rpc, &server.local_addr, figures, process))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(broker_metrics_text, m)?)?;
    m.add_function(wrap_pyfunction!(namesrv_metrics_text, m)?)
}
