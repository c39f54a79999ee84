//! Helpers shared by the criterion benchmarks in `benches/benches/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::properties::Properties;
use rmq_store::{MessageStore, MessageToStore, PutMessageStatus, StoreConfig};

/// A 1 KiB message body.
pub static BODY_1K: [u8; 1024] = [b'x'; 1024];

/// Properties like a real producer's: tags, keys and a unique id.
#[must_use]
pub fn message_props() -> Vec<u8> {
    let mut p = Properties::new();
    p.put("TAGS", "TagA");
    p.put("KEYS", "order-1");
    p.put("UNIQ_KEY", "7F000001000118B4AAC2000000000000");
    p.encode().into_bytes()
}

/// A fresh temporary directory for one benchmark run, under `$RMQ_BENCH_DIR` or else
/// `target/bench-tmp` (not /tmp, which may be a small tmpfs); removed when dropped.
///
/// # Panics
/// When the directory cannot be made (a benchmark cannot go on).
#[must_use]
pub fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("RMQ_BENCH_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-tmp"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&base).expect("bench dir");
    tempfile::tempdir_in(base).expect("bench dir")
}

/// Open a store under `dir` with extra config keys.
///
/// # Panics
/// When the config or the open fails (a benchmark cannot go on).
#[must_use]
pub fn open_store(dir: &Path, extra: &[(&str, &str)]) -> Arc<MessageStore> {
    let config = StoreConfig::from_pairs(extra.iter().copied()).expect("bench config");
    MessageStore::open(dir, config, "127.0.0.1:10911".parse().expect("addr")).expect("open store")
}

fn message<'a>(
    topic: &'a str,
    queue_id: i32,
    body: &'a [u8],
    props: &'a [u8],
) -> MessageToStore<'a> {
    MessageToStore {
        topic,
        queue_id,
        flag: 0,
        body,
        properties: props,
        sys_flag: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:5000".parse().expect("addr"),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
    }
}

/// Put one message, asserting it was stored.
///
/// # Panics
/// When the put fails.
pub fn put_one(store: &MessageStore, topic: &str, queue_id: i32, body: &[u8], props: &[u8]) {
    let r = store
        .put_message(&message(topic, queue_id, body, props))
        .expect("put");
    assert_eq!(r.status, PutMessageStatus::PutOk);
}

/// Append one message without waiting for durability; returns its end offset.
///
/// # Panics
/// When the append fails.
#[must_use]
pub fn append_one(
    store: &MessageStore,
    topic: &str,
    queue_id: i32,
    body: &[u8],
    props: &[u8],
) -> i64 {
    store
        .append_one(&message(topic, queue_id, body, props))
        .expect("append")
        .end_offset()
}

/// Wait until dispatch has caught up with the CommitLog.
///
/// # Panics
/// After 60 s without catching up.
pub fn wait_dispatched(store: &MessageStore) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while store.dispatch_behind_bytes() > 0 {
        assert!(Instant::now() < deadline, "dispatch did not catch up");
        std::thread::yield_now();
    }
}

/// The `q` quantile (0..=1) of `v` (sorted in place); the default (0) for an empty list.
pub fn percentile<T: Copy + Default + PartialOrd>(v: &mut [T], q: f64) -> T {
    if v.is_empty() {
        return T::default();
    }
    v.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss,
        reason = "a rank in 0..len, through f64 to apply the quantile"
    )]
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i]
}

/// The time `iters` iterations would have taken, from `elapsed` for `done` of them (for
/// `iter_custom` runs that split `iters` among tasks and so do a few more).
#[must_use]
#[expect(
    clippy::cast_precision_loss,
    reason = "iteration counts, far below 2^53"
)]
pub fn scaled(elapsed: Duration, iters: u64, done: u64) -> Duration {
    elapsed.mul_f64(iters as f64 / done as f64)
}
