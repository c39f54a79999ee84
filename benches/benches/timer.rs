//! Timer messages at scale: 1 000 000 timers linked into a time wheel of the default size
//! (2 × 259 200 one-second slots) through [`TimerEngine`], as the store's timer thread does for
//! each `rmq_sys_wheel_timer` unit, due seconds spread over the whole 3-day range; then every
//! second walked and its chain read back. Prints the enqueue rate and the process's anonymous
//! memory (`RssAnon`) before and after, which stays flat: a pending timer costs 56 bytes of
//! timer log on disk and no heap.
//!
//!
//! Then end to end through a [`MessageStore`]: `--e2e N` (200 000) messages of 100 bytes put
//! with `TIMER_DELIVER_MS` spread over `--span-ms` (3 000) starting 3 s ahead (about 67 000
//! due in each second; `--span-ms 0`: all in one second, a burst), against a plain put of the
//! same messages; the store's own timer thread delivers
//! them. Prints put rates, delivery rate and lateness (store time of the delivered copy minus
//! the asked deliver time; never negative, and below one second by design plus the time to
//! move a second's worth of messages).
//!
//! `cargo bench -p rmq-benches --bench timer` (`-- --runs N --timers N --e2e N`).

use std::time::{Duration, Instant};

use rmq_benches::bench_dir;
use rmq_common::properties::{find_property, Properties};
use rmq_common::record::{scan_record, Scan};
use rmq_common::time::now_millis;
use rmq_store::timer::engine::TimerEngine;
use rmq_store::timer::log::DEFAULT_FILE_SIZE;
use rmq_store::{MessageStore, MessageToStore, StoreConfig};

const MAX_DELAY_SEC: i64 = 259_200;

fn rss_anon_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("RssAnon:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(-1)
}

fn arg(name: &str, default: i64) -> i64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

struct Run {
    enqueue_per_s: f64,
    drain_per_s: f64,
    rss_growth_kib: i64,
}

fn one_run(timers: i64) -> Run {
    let dir = bench_dir();
    let now = 1_800_000_000;
    let slots = usize::try_from(2 * MAX_DELAY_SEC).unwrap_or(usize::MAX);
    let (mut engine, _) =
        TimerEngine::open(dir.path(), slots, DEFAULT_FILE_SIZE, now).expect("open");
    let before = rss_anon_kib();
    let t = Instant::now();
    // A cheap spread of due seconds over the whole range (an LCG), as many producers would.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for q in 0..timers {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let delay = i64::try_from((x >> 33) % 259_200).unwrap_or(0) + 1;
        engine
            .enqueue(now + delay, q * 300, 300, q)
            .expect("enqueue");
    }
    let enq = t.elapsed().as_secs_f64();
    let after = rss_anon_kib();
    assert_eq!(engine.pending(), timers);
    engine.sync().expect("sync");
    // Walk every second of the range and read its chain (what delivery does before re-putting).
    let t = Instant::now();
    let mut seen = 0i64;
    while engine.read_slot() <= now + MAX_DELAY_SEC {
        seen += i64::try_from(engine.due_entries().expect("chain").len()).unwrap_or(0);
        engine.advance();
    }
    let drain = t.elapsed().as_secs_f64();
    assert_eq!(seen, timers, "every timer comes out once");
    #[expect(clippy::cast_precision_loss, reason = "timer counts to rates")]
    Run {
        enqueue_per_s: timers as f64 / enq,
        drain_per_s: timers as f64 / drain,
        rss_growth_kib: after - before,
    }
}

fn open_store(dir: &std::path::Path) -> std::sync::Arc<MessageStore> {
    let c = StoreConfig::from_pairs([
        ("mappedFileSizeCommitLog", "268435456"),
        ("diskSpaceWarningLevelRatio", "99"),
        ("diskSpaceCleanForciblyRatio", "99"),
        ("messageIndexEnable", "false"),
    ])
    .expect("config");
    MessageStore::open(dir, c, "127.0.0.1:10911".parse().expect("addr")).expect("open")
}

/// Put `props[i]` messages in batches of 1 000; returns messages per second.
#[expect(clippy::cast_precision_loss, reason = "message counts to rates")]
fn put_all(store: &MessageStore, topic: &str, props: &[Vec<u8>]) -> f64 {
    let body = [b'x'; 100];
    let t = Instant::now();
    for (c, chunk) in props.chunks(1000).enumerate() {
        let msgs: Vec<MessageToStore<'_>> = chunk
            .iter()
            .map(|p| MessageToStore {
                topic,
                queue_id: i32::try_from(c % 4).unwrap_or(0),
                flag: 0,
                body: &body,
                properties: p,
                sys_flag: 0,
                born_timestamp: 0,
                born_host: "127.0.0.1:5000".parse().expect("addr"),
                reconsume_times: 0,
                prepared_transaction_offset: 0,
            })
            .collect();
        store.put_messages(&msgs).expect("put");
    }
    props.len() as f64 / t.elapsed().as_secs_f64()
}

#[expect(clippy::cast_precision_loss, reason = "message counts to rates")]
fn end_to_end(n: usize) {
    let keys = |i: usize| {
        let mut p = Properties::new();
        p.put("TAGS", "T");
        p.put("KEYS", format!("k{i}"));
        p
    };
    let dir = bench_dir();
    let store = open_store(dir.path());
    let plain: Vec<Vec<u8>> = (0..n).map(|i| keys(i).encode().into_bytes()).collect();
    let plain_rate = put_all(&store, "Plain", &plain);
    let start = now_millis() + 3000;
    let span = arg("--span-ms", 3000);
    let n_i64 = i64::try_from(n).unwrap_or(i64::MAX);
    let timed: Vec<Vec<u8>> = (0..n)
        .map(|i| {
            let mut p = keys(i);
            let at = start + i64::try_from(i).unwrap_or(0) * span / n_i64;
            p.put("TIMER_DELIVER_MS", at.to_string());
            p.encode().into_bytes()
        })
        .collect();
    let timer_rate = put_all(&store, "Timed", &timed);
    assert!(
        now_millis() < start,
        "putting took longer than the lead time"
    );
    let delivered = |s: &MessageStore| {
        (0..4)
            .map(|q| s.get_max_offset_in_queue("Timed", q))
            .sum::<i64>()
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while delivered(&store) < n_i64 {
        assert!(Instant::now() < deadline, "not all delivered within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut late = Vec::with_capacity(n);
    let mut first_store = i64::MAX;
    let mut last_store = 0;
    for q in 0..4 {
        let mut off = 0;
        loop {
            let units = store.get_consume_queue_units("Timed", q, off, 4096).units;
            if units.is_empty() {
                break;
            }
            off += i64::try_from(units.len()).unwrap_or(0);
            for u in units {
                let sel = store.look_message_by_offset(u.offset).expect("message");
                let Scan::Message(r) = scan_record(sel.bytes(), false) else {
                    panic!("not a record")
                };
                let asked: i64 = find_property(r.properties, "TIMER_DELIVER_MS")
                    .and_then(|v| std::str::from_utf8(v).ok())
                    .and_then(|v| v.parse().ok())
                    .expect("TIMER_DELIVER_MS");
                late.push(r.store_timestamp - asked);
                first_store = first_store.min(r.store_timestamp);
                last_store = last_store.max(r.store_timestamp);
            }
        }
    }
    store.shutdown().expect("shutdown");
    let early = late.iter().filter(|l| **l < 0).count();
    let mut p = |q| rmq_benches::percentile(&mut late, q);
    let (p50, p99, max) = (p(0.5), p(0.99), p(1.0));
    let first_due = start;
    let rate = n as f64 / (((last_store - first_due).max(1)) as f64 / 1000.0);
    println!(
        "e2e {n} timer messages: plain put {plain_rate:.0} msg/s, timer put {timer_rate:.0} msg/s \
         ({:.2} of plain); lateness p50 {p50} ms, p99 {p99} ms, max {max} ms, early {early}; \
         delivered {rate:.0} msg/s (first due to last delivered)",
        timer_rate / plain_rate
    );
    assert_eq!(early, 0, "a timer message was delivered early");
}

fn main() {
    let runs = arg("--runs", 3);
    let timers = arg("--timers", 1_000_000);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "timer bench: {timers} timers, wheel of {} slots, {runs} runs; loadavg before: {}",
        2 * MAX_DELAY_SEC,
        load.trim()
    );
    let mut results = Vec::new();
    for i in 0..runs {
        let r = one_run(timers);
        println!(
            "run {}: enqueue {:.0} timers/s, walk {:.0} timers/s, RssAnon growth {} KiB",
            i + 1,
            r.enqueue_per_s,
            r.drain_per_s,
            r.rss_growth_kib
        );
        results.push(r);
    }
    let growth = results.iter().map(|r| r.rss_growth_kib).max().unwrap_or(0);
    println!(
        "median: enqueue {:.0} timers/s, walk {:.0} timers/s; largest RssAnon growth {growth} KiB",
        median(results.iter().map(|r| r.enqueue_per_s).collect()),
        median(results.iter().map(|r| r.drain_per_s).collect()),
    );
    let e2e = usize::try_from(arg("--e2e", 200_000)).unwrap_or(0);
    if e2e > 0 {
        end_to_end(e2e);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("loadavg after: {}", load.trim());
    // Bounded: far below one heap object per timer (1 M × even 16 bytes would be 15 MiB).
    assert!(
        growth < 4096,
        "anonymous memory grew by {growth} KiB for {timers} timers"
    );
}
