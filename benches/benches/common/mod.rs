//! What the broker benchmarks (`broker.rs`, `transaction.rs`) share: a broker serving loopback
//! TCP over a fresh store, the runtime they drive it from, the SEND_MESSAGE_V2 header and the
//! criterion group settings.
//!
//! Each benchmark is its own crate and uses only some of these, hence `dead_code` allowed.
#![allow(dead_code, reason = "each bench file uses its own part")]

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion};
use rmq_benches::bench_dir;
use rmq_broker::{BrokerConfig, BrokerController};
use rmq_protocol::ExtFields;
use rmq_remoting::Connection;
use rmq_store::MessageStore;

/// A 1 KiB message body.
pub(crate) const BODY: [u8; 1024] = [b'x'; 1024];
/// The timeout of every request.
pub(crate) const T: Duration = Duration::from_secs(30);

/// A broker listening on a loopback port until the process exits.
pub(crate) struct Running {
    _dir: tempfile::TempDir,
    _controller: BrokerController,
    pub(crate) store: Arc<MessageStore>,
    pub(crate) addr: SocketAddr,
}

/// The multi-threaded runtime (2 workers) the benchmarks send from and the broker serves on.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt")
}

/// A broker with a 256 MiB CommitLog file size and `extra` store settings, after a `sync` so
/// that the dirty pages of earlier runs do not slow this one.
pub(crate) fn start_broker(rt: &tokio::runtime::Runtime, extra: &[(&str, &str)]) -> Running {
    start_broker_with_tls(rt, extra, HashMap::new())
}

/// [`start_broker`] with these `tls.server.*` settings.
pub(crate) fn start_broker_with_tls(
    rt: &tokio::runtime::Runtime,
    extra: &[(&str, &str)],
    tls_server: HashMap<String, String>,
) -> Running {
    let _ = std::process::Command::new("sync").status();
    let dir = bench_dir();
    let pairs = [("mappedFileSizeCommitLog", "268435456")]
        .iter()
        .chain(extra)
        .copied();
    let store_cfg = rmq_store::StoreConfig::from_pairs(pairs).expect("config");
    let store = MessageStore::open(
        dir.path().join("store"),
        store_cfg,
        "127.0.0.1:10911".parse().expect("addr"),
    )
    .expect("store");
    let cfg = BrokerConfig {
        config_dir: dir.path().join("config"),
        tls_server,
        // RMQ_BENCH_METRICS=PROM counts the Prometheus metrics (their cost on the bench).
        metrics_exporter_type: std::env::var("RMQ_BENCH_METRICS")
            .unwrap_or_else(|_| "NONE".to_owned()),
        ..BrokerConfig::default()
    };
    let controller = BrokerController::new(cfg, Arc::clone(&store), None).expect("broker");
    let handle = rt
        .block_on(controller.start("127.0.0.1:0".parse().expect("addr")))
        .expect("listen");
    let addr = handle.local_addr();
    std::mem::forget(handle); // served until the process exits
    Running {
        _dir: dir,
        _controller: controller,
        store,
        addr,
    }
}

/// The runtime, a broker started on it with `extra` store settings (see [`start_broker`]) and
/// one connection to that broker.
pub(crate) fn connected_broker(
    extra: &[(&str, &str)],
) -> (tokio::runtime::Runtime, Running, Connection) {
    let rt = runtime();
    let broker = start_broker(&rt, extra);
    let conn = rt
        .block_on(rmq_remoting::connect(broker.addr, None, T))
        .expect("connect");
    (rt, broker, conn)
}

/// SEND_MESSAGE_V2's (or SEND_BATCH_MESSAGE's, with `batch`) short-named header from
/// `bench-producer`.
pub(crate) fn send_header(
    topic: &str,
    queue_id: i32,
    properties: &str,
    sys_flag: i32,
    batch: bool,
) -> ExtFields {
    [
        ("a", "bench-producer".to_owned()),
        ("b", topic.to_owned()),
        ("c", "TBW102".to_owned()),
        ("d", "4".to_owned()),
        ("e", queue_id.to_string()),
        ("f", sys_flag.to_string()),
        ("g", "0".to_owned()),
        ("h", "0".to_owned()),
        ("i", properties.to_owned()),
        ("j", "0".to_owned()),
        ("k", "false".to_owned()),
        ("m", batch.to_string()),
    ]
    .into_iter()
    .collect()
}

/// A benchmark group with the settings every broker benchmark uses: 10 samples, 0.5 s warm-up,
/// 2 s of measurement.
pub(crate) fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g
}

/// Run `task(t)` for every `t` in `0..tasks`, each as its own tokio task (so that `tasks`
/// requests are in flight at once), and wait for them all.
pub(crate) async fn in_flight<F, Fut>(tasks: i32, task: F)
where
    F: Fn(i32) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let handles: Vec<_> = (0..tasks).map(|t| tokio::spawn(task(t))).collect();
    for h in handles {
        h.await.expect("in-flight task");
    }
}

/// A broker in TLS permissive mode (a certificate made here, rcgen) with `extra` store
/// settings, and two connections to it: one plain, one TLS (verifying the certificate).
pub(crate) fn connected_broker_tls(
    extra: &[(&str, &str)],
) -> (tokio::runtime::Runtime, Running, Connection, Connection) {
    let certs = tempfile::tempdir().expect("cert dir");
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    let cert = params.self_signed(&key).expect("cert");
    let (cert_path, key_path) = (
        certs.path().join("server.pem"),
        certs.path().join("server.key"),
    );
    std::fs::write(&cert_path, cert.pem()).expect("write cert");
    std::fs::write(&key_path, key.serialize_pem()).expect("write key");
    let text = |p: &std::path::Path| p.to_str().expect("utf-8 path").to_owned();
    let settings: HashMap<String, String> = [
        ("tls.server.mode", "permissive".to_owned()),
        ("tls.server.certPath", text(&cert_path)),
        ("tls.server.keyPath", text(&key_path)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let rt = runtime();
    let broker = start_broker_with_tls(&rt, extra, settings);
    let options = rmq_remoting::tls::ClientTlsOptions {
        trust_cert_path: Some(cert_path),
        verify_server: true,
        ..Default::default()
    };
    let client = Arc::new(rmq_remoting::tls::ClientTls::new(&options).expect("client tls"));
    let (plain, tls) = rt.block_on(async {
        let plain = rmq_remoting::connect(broker.addr, None, T).await;
        let tls = rmq_remoting::connect_tls(broker.addr, None, T, Some(client)).await;
        (plain.expect("connect"), tls.expect("connect over TLS"))
    });
    (rt, broker, plain, tls)
}
