//! The dispatch thread of an idle store sleeps until new CommitLog bytes wake it, instead of
//! polling every millisecond; a busy one polls and is not woken by every put; and what is
//! appended after an idle sleep is still dispatched: by the put path's wake-up, or with the
//! transient store pool by the commit thread's.

use std::collections::BTreeSet;
use std::time::Duration;

mod common;

/// The ids of this process's threads named `name`.
fn threads_named(name: &str) -> BTreeSet<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let tid = e.ok()?.file_name().into_string().ok()?;
            let comm = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
            (comm.trim() == name).then_some(tid)
        })
        .collect()
}

/// How often thread `tid` has gone to sleep.
fn voluntary_switches(tid: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn idle_then_put(extra: &[(&str, &str)]) {
    let before = threads_named("rmq-reput");
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path(), extra);
    // A new thread takes its name once it runs.
    std::thread::sleep(Duration::from_millis(200));
    let reput: Vec<_> = threads_named("rmq-reput")
        .difference(&before)
        .cloned()
        .collect();
    assert_eq!(reput.len(), 1, "one dispatch thread per store: {reput:?}");
    let p = common::props(&[]);
    store
        .put_message(&common::msg("Idle", 0, b"first", &p))
        .unwrap();
    common::wait_dispatched(&store, "Idle", 0, 1, 10);

    // Idle: a little over 100 passes a millisecond apart, then one sleep until woken.
    std::thread::sleep(Duration::from_millis(500));
    let s0 = voluntary_switches(&reput[0]);
    std::thread::sleep(Duration::from_secs(1));
    let slept = voluntary_switches(&reput[0]) - s0;
    assert!(
        slept <= 30,
        "an idle dispatch thread went to sleep {slept} times in a second (polling every ms: ~1000)"
    );

    // Busy: the put path does not wake the thread between its 1 ms polls (a wake a put would
    // cost the putter a system call each), so it sleeps about once a millisecond.
    let s0 = voluntary_switches(&reput[0]);
    let (t0, mut puts) = (std::time::Instant::now(), 0);
    while t0.elapsed() < Duration::from_secs(1) {
        store
            .put_message(&common::msg("Busy", 0, b"x", &p))
            .unwrap();
        puts += 1;
    }
    let slept = voluntary_switches(&reput[0]) - s0;
    assert!(
        slept <= 1_200,
        "the dispatch thread went to sleep {slept} times during a second of {puts} puts"
    );
    common::wait_dispatched(&store, "Busy", 0, puts, 10);

    for i in 0..5 {
        store
            .put_message(&common::msg("Idle", 0, format!("after {i}").as_bytes(), &p))
            .unwrap();
        common::wait_dispatched(&store, "Idle", 0, 2 + i, 10);
        std::thread::sleep(Duration::from_millis(300));
    }
    store.shutdown().unwrap();
}

#[test]
fn an_idle_store_sleeps_and_a_put_wakes_dispatch() {
    idle_then_put(&[]);
    idle_then_put(&[("transientStorePoolEnable", "true")]);
}
