//! `pageCacheTailCommitLog`: which CommitLog pages the store gives back to the kernel (the
//! tail, what dispatch and subscription groups still need, RocketMQ's in-memory bound), and
//! that the `rmq-page-cache` thread really unmaps them while every message stays readable.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_store::format::{scan_record, Scan};
use rmq_store::{MessageStore, QueueHold};

mod common;

const FILE: i64 = 65_536;

fn open(dir: &Path, extra: &[(&str, &str)]) -> Arc<MessageStore> {
    let mut pairs = vec![
        ("mappedFileSizeCommitLog", "65536"),
        ("flushIntervalCommitLog", "10"),
        ("pageCacheTailCommitLog", "65536"),
    ];
    pairs.extend_from_slice(extra);
    MessageStore::open(dir, common::config(&pairs), common::host()).unwrap()
}

/// Puts `n` messages of 1 KiB to `T`/0; returns each one's CommitLog offset.
fn fill(store: &MessageStore, n: usize) -> Vec<i64> {
    let offsets = (0..n)
        .map(|i| {
            let body = format!("{i:08}").repeat(128);
            let r = store
                .put_message(&common::msg("T", 0, body.as_bytes(), b""))
                .unwrap();
            r.append.wrote_offset
        })
        .collect();
    store.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.dispatch_behind_bytes() > 0 {
        assert!(Instant::now() < deadline, "dispatch did not catch up");
        std::thread::sleep(Duration::from_millis(1));
    }
    offsets
}

fn group_at(store: &MessageStore, offset: i64) -> Arc<Mutex<i64>> {
    let at = Arc::new(Mutex::new(offset));
    let a = Arc::clone(&at);
    store.set_consume_progress(Arc::new(move || {
        vec![QueueHold {
            holder: "subscription group G".into(),
            topic: "T".into(),
            queue_id: 0,
            offset: *a.lock().unwrap(),
        }]
    }));
    at
}

#[test]
fn the_floor_keeps_the_tail_and_what_groups_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let offsets = fill(&store, 200);
    let end = store.get_max_phy_offset();
    assert_eq!(
        store.page_cache_floor(),
        Some(end - FILE),
        "no group: the tail alone"
    );
    let group = group_at(&store, 10);
    assert_eq!(
        store.page_cache_floor(),
        Some(offsets[10]),
        "a group at 10 keeps 10 on"
    );
    *group.lock().unwrap() = 200;
    assert_eq!(
        store.page_cache_floor(),
        Some(end - FILE),
        "all consumed: the tail again"
    );
    store.shutdown().unwrap();

    // Nothing counts as in memory: even what the group still reads may go.
    let store = open(dir.path(), &[("accessMessageInMemoryMaxRatio", "0")]);
    group_at(&store, 10);
    assert_eq!(store.page_cache_floor(), Some(end));
    store.shutdown().unwrap();

    let store = open(dir.path(), &[("pageCacheTailCommitLog", "0")]);
    assert_eq!(store.page_cache_floor(), None, "0 turns trimming off");
    store.shutdown().unwrap();
}

/// Resident KiB of this process's mappings of `dir`'s files that end at or below `below`.
fn mapped_kib(dir: &Path, below: i64) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut counting = false;
    let mut kib = 0;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or("");
        if first.contains('-') && first.chars().all(|c| c == '-' || c.is_ascii_hexdigit()) {
            // A mapping's header: range, perms, offset, device, inode, then its path if any.
            let path = fields.nth(4).map(Path::new);
            counting = path.is_some_and(|p| {
                p.parent() == Some(dir)
                    && p.file_name()
                        .and_then(|n| n.to_str()?.parse::<i64>().ok())
                        .is_some_and(|from| from + FILE <= below)
            });
        } else if counting && first == "Rss:" {
            kib += fields.next().unwrap().parse::<u64>().unwrap();
        }
    }
    kib
}

#[test]
fn the_page_cache_thread_unmaps_old_pages_and_every_message_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let commit_log = dir.path().join("commitlog");
    // 1.6 MiB: below the 2 MiB step the store gives pages back by, so all stay mapped.
    fill(&store, 1_400);
    let first = store.get_max_phy_offset() - FILE;
    assert!(
        mapped_kib(&commit_log, first) > 1024,
        "the appends mapped the pages in"
    );
    fill(&store, 2_100); // 3.9 MiB in all: the floor (a file behind the end) passes the step
    let old = first.min(store.get_max_phy_offset() - FILE - (2 << 20));
    let deadline = Instant::now() + Duration::from_secs(10);
    while mapped_kib(&commit_log, old) > 0 {
        assert!(
            Instant::now() < deadline,
            "the old pages stayed mapped: {} KiB below {old}, floor {:?}",
            mapped_kib(&commit_log, old),
            store.page_cache_floor()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = store.get_message("T", 0, 0, 32, None);
    let first = match scan_record(r.messages[0].bytes(), true) {
        Scan::Message(rec) => rec.body.to_vec(),
        other => panic!("bad record {other:?}"),
    };
    assert_eq!(first, "00000000".repeat(128).into_bytes());
    assert_eq!(r.messages.len(), 32);
    store.shutdown().unwrap();
}
