#![expect(missing_docs, reason = "criterion_group! generates undocumented items")]
//! Storage-engine benchmarks, each against a baseline measured in the same run:
//!
//! * `append_dispatch`: one writer putting 1 KiB messages (ASYNC_FLUSH) until dispatch has
//!   built their ConsumeQueue units, vs. a raw memcpy of the same record bytes into a
//!   pre-faulted mapped file; and the same with the transient store pool on.
//! * `sync_flush`: SYNC_FLUSH group commit with 1, 16 and 64 concurrent appenders, vs. one
//!   `fdatasync` per message. p50/p99 put latencies are printed after the group.
//! * `read_by_queue_offset`: one-message `get_message` lookups by queue offset.
//!
//! Two memcpy baselines frame the append figure: into a pre-faulted mapping that is reused
//! (the speed of copying bytes into hot memory, an upper bound), and into fresh mapped files
//! (the same page-cache work every log must do for new data). Benches run on the real disk
//! under `target/bench-tmp`, or in `$RMQ_BENCH_DIR`. See benches/RESULTS.md for figures.

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use memmap2::MmapMut;
use rmq_benches::{
    append_one, bench_dir, message_props, open_store, percentile, put_one, scaled, wait_dispatched,
    BODY_1K,
};

/// Write back dirty pages of earlier runs, so one variant's disk backlog does not slow the
/// next: on this kind of machine the disk (~400 MB/s) is far slower than the append path.
fn quiesce() {
    let _ = std::process::Command::new("sync").status();
}

const FILE_256M: &str = "268435456";

/// A file of `len` bytes with its blocks allocated (`posix_fallocate`), mapped read-write:
/// what the store's mapped files are, without the store.
#[expect(
    unsafe_code,
    reason = "the baseline maps a file itself, as the store's mmap module does"
)]
fn map_allocated(path: &std::path::Path, len: usize) -> MmapMut {
    use std::os::fd::AsRawFd;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .expect("bench file");
    let off_len = libc::off_t::try_from(len).expect("bench file length");
    // SAFETY: plain FFI call on a valid, open descriptor; no memory is passed.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, off_len) };
    assert_eq!(rc, 0, "posix_fallocate {}", path.display());
    // SAFETY: the bench owns this fresh file in its own temp dir; nothing else truncates or
    // maps it while the mapping lives.
    unsafe { MmapMut::map_mut(&file) }.expect("map")
}

/// Fault every page of `map` in for writing, so the copies never take a page fault.
fn prefault(map: &mut MmapMut) {
    if map.advise(memmap2::Advice::PopulateWrite).is_err() {
        for page in map.chunks_mut(4096) {
            page[0] = 0;
        }
    }
}

/// The baseline writer: records copied into fresh mapped files, a new (allocated) file every
/// 256 MiB, the old one removed — the page-cache work any log does for new data.
struct FreshFiles {
    dir: tempfile::TempDir,
    map: MmapMut,
    n: usize,
    pos: usize,
}

impl FreshFiles {
    const LEN: usize = 256 << 20;

    fn new() -> Self {
        let dir = bench_dir();
        let map = map_allocated(&dir.path().join("raw0"), Self::LEN);
        Self {
            dir,
            map,
            n: 0,
            pos: 0,
        }
    }

    fn write(&mut self, record: &[u8]) {
        if self.pos + record.len() > Self::LEN {
            std::fs::remove_file(self.dir.path().join(format!("raw{}", self.n))).expect("rm");
            self.n += 1;
            self.map = map_allocated(&self.dir.path().join(format!("raw{}", self.n)), Self::LEN);
            self.pos = 0;
        }
        self.map[self.pos..self.pos + record.len()].copy_from_slice(black_box(record));
        self.pos += record.len();
    }
}

fn append_dispatch(c: &mut Criterion) {
    let mut g = c.benchmark_group("append_dispatch_1KiB_async");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let props = message_props();
    let record_len =
        rmq_common::record::calc_msg_length(0, BODY_1K.len(), "BenchTopic".len(), props.len());

    let record = vec![7u8; record_len];
    let len = 256 << 20;
    // Baseline 1: the same bytes per message copied into a pre-faulted mapping, reused.
    quiesce();
    {
        let dir = bench_dir();
        let mut map = map_allocated(&dir.path().join("raw"), len);
        prefault(&mut map);
        let mut pos = 0usize;
        g.bench_function("baseline_memcpy_into_hot_mapped_file", |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    if pos + record_len > len {
                        pos = 0;
                    }
                    map[pos..pos + record_len].copy_from_slice(black_box(&record));
                    pos += record_len;
                }
                start.elapsed()
            });
        });
    }
    // Baseline 2: copied into fresh mapped files, a new (allocated) file every 256 MiB.
    quiesce();
    {
        let mut fresh = FreshFiles::new();
        g.bench_function("baseline_memcpy_into_fresh_mapped_files", |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    fresh.write(&record);
                }
                start.elapsed()
            });
        });
    }
    for (name, pool, index) in [
        ("store_put_until_dispatched", "false", "false"),
        ("store_put_until_dispatched_pool", "true", "false"),
        ("store_put_until_dispatched_and_indexed", "false", "true"),
    ] {
        quiesce();
        let dir = bench_dir();
        let store = open_store(
            dir.path(),
            &[
                ("mappedFileSizeCommitLog", FILE_256M),
                ("transientStorePoolEnable", pool),
                ("transientStorePoolSize", "3"),
                ("messageIndexEnable", index),
            ],
        );
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for i in 0..iters {
                    put_one(&store, "BenchTopic", (i % 4) as i32, &BODY_1K, &props);
                }
                wait_dispatched(&store);
                start.elapsed()
            });
        });
        store.shutdown().expect("shutdown");
    }
    g.finish();
}

#[expect(
    clippy::too_many_lines,
    reason = "two variants (threads, tasks) of one measurement, side by side"
)]
fn sync_flush(c: &mut Criterion) {
    let mut g = c.benchmark_group("sync_flush_group_commit_1KiB");
    g.throughput(Throughput::Elements(1));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let props = message_props();

    {
        use std::io::Write;
        let dir = bench_dir();
        let mut f = std::fs::File::create(dir.path().join("raw")).expect("file");
        g.bench_function("baseline_fdatasync_per_message", |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                for _ in 0..iters {
                    f.write_all(&BODY_1K).expect("write");
                    f.sync_data().expect("fdatasync");
                }
                start.elapsed()
            });
        });
    }

    let mut report = Vec::new();
    for appenders in [1usize, 16, 64] {
        let dir = bench_dir();
        let store = open_store(
            dir.path(),
            &[
                ("flushDiskType", "SYNC_FLUSH"),
                ("mappedFileSizeCommitLog", FILE_256M),
            ],
        );
        let latencies = Arc::new(Mutex::new(Vec::<u64>::new()));
        g.bench_with_input(
            BenchmarkId::new("store_put_sync_flush", appenders),
            &appenders,
            |b, &n| {
                b.iter_custom(|iters| {
                    let per = iters.div_ceil(n as u64);
                    let start = Instant::now();
                    let threads: Vec<_> = (0..n)
                        .map(|t| {
                            let (s, lat, p) =
                                (Arc::clone(&store), Arc::clone(&latencies), props.clone());
                            std::thread::spawn(move || {
                                let mut mine =
                                    Vec::with_capacity(usize::try_from(per).expect("per"));
                                let queue = i32::try_from(t % 8).expect("below 8");
                                for _ in 0..per {
                                    let t0 = Instant::now();
                                    put_one(&s, "BenchTopic", queue, &BODY_1K, &p);
                                    mine.push(
                                        u64::try_from(t0.elapsed().as_micros()).unwrap_or(u64::MAX),
                                    );
                                }
                                lat.lock().expect("lock").extend(mine);
                            })
                        })
                        .collect();
                    for t in threads {
                        t.join().expect("appender");
                    }
                    // Time per message as if `iters` were done (n * per >= iters).
                    scaled(start.elapsed(), iters, per * n as u64)
                });
            },
        );
        let mut lat = latencies.lock().expect("lock").clone();
        report.push((
            appenders,
            percentile(&mut lat, 0.50),
            percentile(&mut lat, 0.99),
            lat.len(),
        ));
        store.shutdown().expect("shutdown");
    }
    // The same with appenders as async tasks on a 2-thread runtime, which is how the broker
    // waits for durability: no thread blocked per in-flight send.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .expect("runtime");
    for appenders in [1usize, 16, 64] {
        let dir = bench_dir();
        let store = open_store(
            dir.path(),
            &[
                ("flushDiskType", "SYNC_FLUSH"),
                ("mappedFileSizeCommitLog", FILE_256M),
            ],
        );
        let latencies = Arc::new(Mutex::new(Vec::<u64>::new()));
        g.bench_with_input(
            BenchmarkId::new("store_put_sync_flush_tasks", appenders),
            &appenders,
            |b, &n| {
                b.iter_custom(|iters| {
                    let per = iters.div_ceil(n as u64);
                    let start = Instant::now();
                    rt.block_on(async {
                        let tasks: Vec<_> = (0..n)
                            .map(|t| {
                                let (s, lat, p) =
                                    (Arc::clone(&store), Arc::clone(&latencies), props.clone());
                                tokio::spawn(async move {
                                    let mut mine =
                                        Vec::with_capacity(usize::try_from(per).expect("per"));
                                    let queue = i32::try_from(t % 8).expect("below 8");
                                    for _ in 0..per {
                                        let t0 = Instant::now();
                                        let end = append_one(&s, "BenchTopic", queue, &BODY_1K, &p);
                                        s.flush_future(end).await.expect("durable");
                                        mine.push(
                                            u64::try_from(t0.elapsed().as_micros())
                                                .unwrap_or(u64::MAX),
                                        );
                                    }
                                    lat.lock().expect("lock").extend(mine);
                                })
                            })
                            .collect();
                        for t in tasks {
                            t.await.expect("appender task");
                        }
                    });
                    scaled(start.elapsed(), iters, per * n as u64)
                });
            },
        );
        let mut lat = latencies.lock().expect("lock").clone();
        report.push((
            appenders + 1000,
            percentile(&mut lat, 0.50),
            percentile(&mut lat, 0.99),
            lat.len(),
        ));
        store.shutdown().expect("shutdown");
    }
    g.finish();
    for (n, p50, p99, count) in report.into_iter().filter(|r| r.3 > 0) {
        let kind = if n >= 1000 { "async tasks" } else { "threads" };
        eprintln!(
            "sync_flush {kind} appenders={}: put latency p50={p50} us p99={p99} us over {count} puts",
            n % 1000
        );
    }
}

fn read_by_queue_offset(c: &mut Criterion) {
    const N: i64 = 200_000;
    let mut g = c.benchmark_group("read_by_queue_offset");
    g.throughput(Throughput::Elements(1));
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    let dir = bench_dir();
    let store = open_store(
        dir.path(),
        &[
            ("mappedFileSizeCommitLog", FILE_256M),
            ("messageIndexEnable", "false"),
        ],
    );
    let props = message_props();
    for _ in 0..N {
        put_one(&store, "BenchTopic", 0, &BODY_1K, &props);
    }
    wait_dispatched(&store);
    let mut i = 0i64;
    g.bench_function("get_message_1", |b| {
        b.iter(|| {
            i = (i + 7919) % N;
            let r = store.get_message("BenchTopic", 0, i, 1, None);
            black_box(r.messages.len())
        });
    });
    g.finish();
    store.shutdown().expect("shutdown");
}

/// Baseline and store alternate in chunks of 50 000 records within one run, so both see the
/// same state of the machine (fresh-page cost here varies ~2x between runs); medians printed.
fn append_interleaved(_c: &mut Criterion) {
    const CHUNK: usize = 50_000;
    const ROUNDS: usize = 8;
    let props = message_props();
    let record_len =
        rmq_common::record::calc_msg_length(0, BODY_1K.len(), "BenchTopic".len(), props.len());
    let record = vec![7u8; record_len];
    quiesce();
    let mut fresh = FreshFiles::new();
    let store_dir = bench_dir();
    let store = open_store(
        store_dir.path(),
        &[
            ("mappedFileSizeCommitLog", FILE_256M),
            ("messageIndexEnable", "false"),
        ],
    );
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..CHUNK {
            fresh.write(&record);
        }
        base.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX) / CHUNK as u64);
        let start = Instant::now();
        for i in 0..CHUNK {
            put_one(
                &store,
                "BenchTopic",
                i32::try_from(i % 4).expect("below 4"),
                &BODY_1K,
                &props,
            );
        }
        wait_dispatched(&store);
        ours.push(u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX) / CHUNK as u64);
    }
    store.shutdown().expect("shutdown");
    let (b, o) = (percentile(&mut base, 0.5), percentile(&mut ours, 0.5));
    #[expect(
        clippy::cast_precision_loss,
        reason = "nanoseconds per record, printed as rates"
    )]
    let (rate, ratio) = (1e9 / o as f64, b as f64 / o as f64);
    eprintln!(
        "append interleaved ({ROUNDS} rounds of {CHUNK}): baseline memcpy into fresh mapped files \
         median {b} ns/record, store put until dispatched median {o} ns/msg ({rate:.0} msg/s), \
         ratio {ratio:.2}; baseline chunks {base:?}, store chunks {ours:?}",
    );
}

criterion_group!(
    benches,
    append_dispatch,
    append_interleaved,
    sync_flush,
    read_by_queue_offset
);
criterion_main!(benches);
