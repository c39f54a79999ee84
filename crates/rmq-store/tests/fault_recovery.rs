//! Fault tests of CommitLog recovery (issue 13, item 1): a record damaged in the middle of the
//! log costs that record only (normal and abnormal recovery, re-dispatch around it, reads
//! through its ConsumeQueue unit), later files are kept, a torn tail is still cut, and a file
//! shorter than the configured size is served.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmq_store::format::{scan_record, Scan};
use rmq_store::MessageStore;

mod common;

const TOPIC: &str = "Fault";
const QUEUES: i32 = 4;
/// Small CommitLog files, so a few hundred messages span several.
const CONF: &[(&str, &str)] = &[
    ("mappedFileSizeCommitLog", "262144"),
    ("mappedFileSizeConsumeQueue", "6000"),
];

/// Where one message went.
#[derive(Debug, Clone, Copy)]
struct Stored {
    queue: i32,
    phy: i64,
    size: usize,
}

fn body_of(i: usize) -> Vec<u8> {
    format!("fault-{i:06}|").repeat(80).into_bytes()
}

fn index_of(body: &[u8]) -> usize {
    std::str::from_utf8(&body[6..12]).unwrap().parse().unwrap()
}

fn open(dir: &Path) -> Arc<MessageStore> {
    common::open(dir, CONF)
}

/// Put `n` messages round-robin over the queues and shut down cleanly.
fn fill(dir: &Path, n: usize) -> Vec<Stored> {
    let store = open(dir);
    let keys: Vec<String> = (0..n).map(|i| format!("key{i}")).collect();
    let stored: Vec<Stored> = (0..n)
        .map(|i| {
            let q = i32::try_from(i).unwrap() % QUEUES;
            let body = body_of(i);
            let props = common::props(&[("KEYS", &keys[i])]);
            let r = store
                .put_message(&common::msg(TOPIC, q, &body, &props))
                .unwrap();
            Stored {
                queue: q,
                phy: r.append.wrote_offset,
                size: r.append.wrote_bytes,
            }
        })
        .collect();
    for q in 0..QUEUES {
        let want = stored.iter().filter(|s: &&Stored| s.queue == q).count();
        common::wait_dispatched(&store, TOPIC, q, i64::try_from(want).unwrap(), 10);
    }
    store.shutdown().unwrap();
    stored
}

fn commit_log_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// XOR 4 bytes at global CommitLog offset `at` (files of 256 KiB).
fn flip4(dir: &Path, at: i64) {
    let size = 262_144;
    let file = dir
        .join("commitlog")
        .join(format!("{:020}", at - at % size));
    let mut raw = std::fs::read(&file).unwrap();
    let pos = usize::try_from(at % size).unwrap();
    for b in &mut raw[pos..pos + 4] {
        *b ^= 0xFF;
    }
    std::fs::write(&file, raw).unwrap();
}

/// Every message [`fill`] put that is readable through the ConsumeQueues, by index; each read back whole (CRC
/// checked) and from the queue it was put in.
fn read_all(store: &MessageStore) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    for q in 0..QUEUES {
        let mut offset = store.get_min_offset_in_queue(TOPIC, q);
        let max = store.get_max_offset_in_queue(TOPIC, q);
        while offset < max {
            let r = store.get_message(TOPIC, q, offset, 32, None);
            assert!(
                r.next_begin_offset > offset,
                "no progress at {q}/{offset}: {r:?}"
            );
            for m in &r.messages {
                let Scan::Message(rec) = scan_record(m.bytes(), true) else {
                    panic!("a damaged record was served from {q}/{offset}");
                };
                assert_eq!(rec.queue_id, q);
                if rec.body.starts_with(b"fault-") {
                    assert!(seen.insert(index_of(rec.body)), "served twice");
                }
            }
            offset = r.next_begin_offset;
        }
    }
    seen
}

fn info(store: &MessageStore) -> HashMap<&'static str, String> {
    store.runtime_info().into_iter().collect()
}

/// The message in the middle of the CommitLog file starting at `file_from`.
fn middle_of(stored: &[Stored], file_from: i64) -> usize {
    let inside: Vec<usize> = (0..stored.len())
        .filter(|&i| stored[i].phy >= file_from && stored[i].phy < file_from + 262_144)
        .collect();
    inside[inside.len() / 2]
}

fn file_start(p: &Path) -> i64 {
    p.file_name().unwrap().to_str().unwrap().parse().unwrap()
}

/// Every stored message but `victim` is read back (a put after the damage is not counted).
fn assert_only_victim_missing(store: &MessageStore, stored: &[Stored], victim: usize) {
    let seen = read_all(store);
    assert_eq!(seen.len(), stored.len() - 1, "exactly one message lost");
    assert!(!seen.contains(&victim));
}

/// After the damage: exactly `victim` is gone, its queue's later messages keep their queue
/// offsets, the range is reported, and the store carries on.
fn assert_only_victim_lost(store: &MessageStore, stored: &[Stored], victim: usize) {
    assert_only_victim_missing(store, stored, victim);
    let figures = info(store);
    assert_eq!(figures["commitLogDamagedRanges"], "1");
    assert_eq!(
        figures["commitLogDamagedBytes"],
        stored[victim].size.to_string()
    );
    // Queue offsets are unchanged: the message after the victim in its queue is still at its
    // own offset, and the next put gets the next one.
    let q = stored[victim].queue;
    let per_queue = i64::try_from(stored.iter().filter(|s| s.queue == q).count()).unwrap();
    assert_eq!(store.get_max_offset_in_queue(TOPIC, q), per_queue);
    let victim_qoff = i64::try_from(victim).unwrap() / i64::from(QUEUES);
    let r = store.get_message(TOPIC, q, victim_qoff + 1, 1, None);
    let Scan::Message(rec) = scan_record(r.messages[0].bytes(), true) else {
        panic!("bad record");
    };
    assert_eq!(index_of(rec.body), victim + 4);
    assert_eq!(rec.queue_offset, victim_qoff + 1);
    let after = store
        .put_message(&common::msg(TOPIC, q, b"after", b""))
        .unwrap();
    assert_eq!(after.append.queue_offset, per_queue);
    // Its key finds nothing; a neighbour's key finds its message.
    assert!(store
        .query_message(TOPIC, &format!("key{victim}"), 8, 0, i64::MAX)
        .is_empty());
    assert_eq!(
        store
            .query_message(TOPIC, &format!("key{}", victim + 1), 8, 0, i64::MAX)
            .len(),
        1
    );
}

#[test]
fn a_damaged_record_mid_log_costs_that_record_only_after_a_clean_stop() {
    // 4 bytes flipped in each part of a record that recovery checks: TOTALSIZE, MAGICCODE,
    // PHYSICALOFFSET, and the body (caught by the CRC).
    for flip_at in [0, 4, 28, 150] {
        let dir = tempfile::tempdir().unwrap();
        let stored = fill(dir.path(), 1200);
        let files = commit_log_files(dir.path());
        assert!(files.len() >= 5, "{files:?}");
        // Normal recovery reads the newest three files (RocketMQ's rule): damage the middle
        // one of the files that hold data.
        let last_data = files
            .iter()
            .rposition(|f| stored.iter().any(|s| s.phy >= file_start(f)))
            .unwrap();
        let victim = middle_of(&stored, file_start(&files[last_data - 1]));
        flip4(dir.path(), stored[victim].phy + flip_at);
        let store = open(dir.path());
        assert!(store.last_exit_ok());
        assert_only_victim_lost(&store, &stored, victim);
        // No file was deleted.
        assert_eq!(
            commit_log_files(dir.path())[..=last_data],
            files[..=last_data]
        );
        store.shutdown().unwrap();
        // A second restart finds the same range again and loses nothing more.
        let store = open(dir.path());
        assert_eq!(read_all(&store).len(), stored.len() - 1);
        assert_eq!(info(&store)["commitLogDamagedRanges"], "1");
        // The unit that points into the damaged range is the CommitLog's damage, not the
        // queue's: the start-up check does not rebuild the queue again at every start.
        assert_eq!(store.consume_queues_rebuilt(), 0);
        store.shutdown().unwrap();
    }
}

#[test]
fn abnormal_recovery_skips_the_damage_and_redispatches_around_it() {
    let dir = tempfile::tempdir().unwrap();
    let stored = fill(dir.path(), 1200);
    let files = commit_log_files(dir.path());
    let last_data = files
        .iter()
        .rposition(|f| stored.iter().any(|s| s.phy >= file_start(f)))
        .unwrap();
    let victim = middle_of(&stored, file_start(&files[last_data]));
    flip4(dir.path(), stored[victim].phy + 150);
    // As after kill -9, with the ConsumeQueues lost too: everything is dispatched again, and
    // dispatch must pass over the damaged range.
    std::fs::File::create(dir.path().join("abort")).unwrap();
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    std::fs::remove_file(dir.path().join("checkpoint")).unwrap();
    let store = open(dir.path());
    assert!(!store.last_exit_ok());
    assert_only_victim_lost(&store, &stored, victim);
    assert_eq!(
        commit_log_files(dir.path())[..=last_data],
        files[..=last_data]
    );
    store.shutdown().unwrap();
    // The rebuilt queue has a blank unit standing in for the lost record: a clean restart
    // accepts it (no rebuild) and serves the same messages.
    let store = open(dir.path());
    assert_eq!(store.consume_queues_rebuilt(), 0);
    assert_only_victim_missing(&store, &stored, victim);
    store.shutdown().unwrap();
}

#[test]
fn dispatch_resynchronises_at_damage_recovery_did_not_scan() {
    // After a clean stop recovery reads only the newest three files; damage in the first file
    // is met by dispatch when the ConsumeQueues are rebuilt from the CommitLog.
    let dir = tempfile::tempdir().unwrap();
    let stored = fill(dir.path(), 1200);
    let files = commit_log_files(dir.path());
    assert!(files.len() >= 5, "{files:?}");
    let victim = middle_of(&stored, 0);
    flip4(dir.path(), stored[victim].phy + 4); // the magic code
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    let store = open(dir.path());
    assert_only_victim_missing(&store, &stored, victim);
    store.shutdown().unwrap();
}

#[test]
fn a_torn_tail_is_still_cut_and_later_empty_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let stored = fill(dir.path(), 1200);
    let last = stored.last().unwrap();
    let end = last.phy + i64::try_from(last.size).unwrap();
    // Half a record of garbage after the last one, as a torn write leaves it.
    flip4(dir.path(), end);
    flip4(dir.path(), end + 4);
    std::fs::File::create(dir.path().join("abort")).unwrap();
    let store = open(dir.path());
    assert_eq!(store.get_max_phy_offset(), end);
    assert_eq!(read_all(&store).len(), stored.len());
    assert_eq!(info(&store)["commitLogDamagedRanges"], "0");
    let r = store
        .put_message(&common::msg(TOPIC, 0, b"after", b""))
        .unwrap();
    assert_eq!(r.append.wrote_offset, end);
    // The file after the last data is gone only if it held nothing (none holds data here).
    assert!(commit_log_files(dir.path())
        .iter()
        .all(|f| file_start(f) <= end));
    store.shutdown().unwrap();
}

#[test]
fn a_short_commit_log_file_is_extended_and_served() {
    let dir = tempfile::tempdir().unwrap();
    let stored = fill(dir.path(), 1200);
    let files = commit_log_files(dir.path());
    let last = stored.last().unwrap();
    let end = last.phy + i64::try_from(last.size).unwrap();
    // The newest file copied without its zero tail: every message is still there.
    let newest = files.iter().rfind(|f| file_start(f) <= last.phy).unwrap();
    let cut = u64::try_from(end - file_start(newest)).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(newest)
        .unwrap()
        .set_len(cut)
        .unwrap();
    // A middle file cut inside its records: those after the cut are lost, nothing else.
    let middle = &files[1];
    let from = file_start(middle);
    let cut_at = stored[middle_of(&stored, from)].phy + 10;
    std::fs::OpenOptions::new()
        .write(true)
        .open(middle)
        .unwrap()
        .set_len(u64::try_from(cut_at - from).unwrap())
        .unwrap();
    let gone: BTreeSet<usize> = (0..stored.len())
        .filter(|&i| {
            let s = stored[i];
            s.phy + i64::try_from(s.size).unwrap() > cut_at && s.phy < from + 262_144
        })
        .collect();
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    std::fs::remove_file(dir.path().join("checkpoint")).unwrap();
    std::fs::File::create(dir.path().join("abort")).unwrap();
    let store = open(dir.path());
    assert_eq!(std::fs::metadata(newest).unwrap().len(), 262_144);
    assert_eq!(std::fs::metadata(middle).unwrap().len(), 262_144);
    assert_eq!(store.get_max_phy_offset(), end);
    let seen = read_all(&store);
    let want: BTreeSet<usize> = (0..stored.len()).filter(|i| !gone.contains(i)).collect();
    assert!(!gone.is_empty());
    assert_eq!(seen, want, "only the records past the cut are lost");
    assert_eq!(info(&store)["commitLogDamagedRanges"], "1");
    let r = store
        .put_message(&common::msg(TOPIC, 0, b"after", b""))
        .unwrap();
    assert_eq!(r.append.wrote_offset, end);
    store.shutdown().unwrap();
}

#[test]
fn a_long_commit_log_file_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 10);
    let first = &commit_log_files(dir.path())[0];
    std::fs::OpenOptions::new()
        .write(true)
        .open(first)
        .unwrap()
        .set_len(262_144 + 4096)
        .unwrap();
    let e = MessageStore::open(dir.path(), common::config(CONF), common::host())
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&first.display().to_string()) && e.contains("longer than the configured"),
        "{e}"
    );
}

#[test]
fn a_store_killed_with_a_sparse_unwritten_file_reopens_empty() {
    // Killed right after making its first CommitLog file: sparse, nothing written. Such a
    // file is readable only up to its data, none: that is the end of the log, not a full
    // file (this once made recovery claim the whole file and then fail to dispatch it).
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("commitlog")).unwrap();
    std::fs::File::create(dir.path().join("commitlog").join(format!("{:020}", 0)))
        .unwrap()
        .set_len(262_144)
        .unwrap();
    std::fs::File::create(dir.path().join("abort")).unwrap();
    let store = open(dir.path());
    assert!(!store.last_exit_ok());
    let first = store
        .put_message(&common::msg(TOPIC, 0, b"one", b""))
        .unwrap();
    assert_eq!(first.append.wrote_offset, 0);
    assert_eq!(first.append.queue_offset, 0);
    store.shutdown().unwrap();
}
