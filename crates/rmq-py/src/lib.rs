//! `rmq._rmq`: the Python face of the Rust crates, and the only crate that links pyo3.
//!
//! This file only registers. Each module owns one face and adds its classes and functions in
//! its `register`: the runtime and the interpreter-exit rule (`runtime`), errors
//! (`errors`), the store (`store`), stored messages (`stored_message`), the client core
//! (`client`, with its callback thread in `callbacks`), the producer (`producer`), the
//! consumer calls (`consumer`, `columns`), the broker server (`broker`), the remoting
//! transport (`remoting`), retention passes and their floor (`retention`), the bridge from
//! Rust's `log` records into Python's `logging` (`logging`), the config schema
//! (`config_schema`), the names and codes Rust owns (`names`), small protocol helpers
//! (`common`), the atomic file replacement (`files`), the TLS options (`tls`), the
//! broker's Prometheus scrape (`metrics`) and the unique message id read back (`msg_ids`).

/// The Rust side's allocator: mimalloc, a maintained allocator with per-thread free lists,
/// instead of glibc's arenas, where `malloc` and `free` were 5 % of the broker's samples under
/// sync sends (benches/RESULTS.md, issue 18 sixteenth round: 2–7 % less CPU per message and
/// 5–10 % more messages a second in the 1 KiB rows). It also keeps a freed 1 MiB frame buffer
/// for the next request without being told to, which glibc did only with its trim and mmap
/// thresholds raised (the sixth round). Built with `no_thp`: mimalloc otherwise asks for
/// transparent huge pages, and a touched byte then makes 2 MiB resident (40 stalled 16 MiB
/// frames grew the broker by 84 MiB, an idle connection cost 141 KB; tests/test_fault_transport).
/// Python's own objects keep Python's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod acl;
mod broker;
mod broker_group;
mod callbacks;
mod client;
mod columns;
mod common;
mod config_schema;
mod consumer;
mod errors;
mod files;
mod ha;
mod logging;
mod metrics;
mod msg_ids;
mod names;
mod producer;
mod remoting;
mod retention;
mod running_info;
mod runtime;
mod store;
mod stored_message;
mod tls;

use pyo3::prelude::*;

#[pymodule]
fn _rmq(m: &Bound<'_, PyModule>) -> PyResult<()> {
    logging::register(m)?;
    runtime::register(m)?;
    common::register(m)?;
    store::register(m)?;
    stored_message::register(m)?;
    broker::register(m)?;
    remoting::register(m)?;
    retention::register(m)?;
    ha::register(m)?;
    client::register(m)?;
    producer::register(m)?;
    consumer::register(m)?;
    columns::register(m)?;
    callbacks::register(m)?;
    config_schema::register(m)?;
    names::register(m)?;
    files::register(m)?;
    acl::register(m)?;
    metrics::register(m)?;
    msg_ids::register(m)?;
    running_info::register(m)?;
    Ok(())
}
