//! Timer messages at scale: 1 000 000 timers linked into a time wheel of the default size
//! (2 × 259 200 one-second slots) through [`TimerEngine`], as the store's timer thread does for
//! each `rmq_sys_wheel_timer` unit, due seconds spread over the whole 3-day range; then every
//! second walked and its chain read back. Prints the enqueue rate and the process's anonymous
//! memory (`RssAnon`) before and after, which stays flat: a pending timer costs 56 bytes of
//! timer log on disk and no heap.
//!
//! `cargo bench -p rmq-benches --bench timer` (`-- --runs N --timers N`).

use std::time::Instant;

use rmq_store::timer::engine::TimerEngine;
use rmq_store::timer::log::DEFAULT_FILE_SIZE;

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
    let base = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-tmp");
    std::fs::create_dir_all(&base).expect("bench dir");
    let dir = tempfile::tempdir_in(base).expect("bench dir");
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
    #[allow(clippy::cast_precision_loss)]
    Run {
        enqueue_per_s: timers as f64 / enq,
        drain_per_s: timers as f64 / drain,
        rss_growth_kib: after - before,
    }
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
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("loadavg after: {}", load.trim());
    // Bounded: far below one heap object per timer (1 M × even 16 bytes would be 15 MiB).
    assert!(
        growth < 4096,
        "anonymous memory grew by {growth} KiB for {timers} timers"
    );
}
