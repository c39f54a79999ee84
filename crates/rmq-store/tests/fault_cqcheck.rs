//! Issue 13, item 2: ConsumeQueues and index files are checked against the CommitLog on
//! every start and rebuilt when damaged (a unit overwritten in the middle, a tail unit with
//! the wrong tag hash, a zeroed span, a zeroed file, a damaged index header), and the read
//! path never serves a message at a queue offset other than its own.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmq_store::format::CQ_STORE_UNIT_SIZE;
use rmq_store::{DecodedRecord, MessageStore};

mod common;

/// 100 units per ConsumeQueue file, so a few hundred messages make several files.
const CQ_FILE: usize = 100 * CQ_STORE_UNIT_SIZE;

fn open(dir: &Path) -> Arc<MessageStore> {
    common::open(dir, &[("mappedFileSizeConsumeQueue", "2000")])
}

fn body(q: i32, i: i64) -> Vec<u8> {
    format!("q{q}-m{i}").into_bytes()
}

/// `n` messages to each of `queues` of `T`, interleaved, with tag `t{i % 3}` and key `k{q}-{i}`;
/// then a clean shutdown.
fn fill(dir: &Path, queues: i32, n: i64) {
    let store = open(dir);
    for i in 0..n {
        for q in 0..queues {
            let p = common::props(&[
                ("TAGS", &format!("t{}", i % 3)),
                ("KEYS", &format!("k{q}-{i}")),
            ]);
            let b = body(q, i);
            let r = store.put_message(&common::msg("T", q, &b, &p)).unwrap();
            assert_eq!(r.append.queue_offset, i);
        }
    }
    for q in 0..queues {
        common::wait_dispatched(&store, "T", q, n, 10);
    }
    store.shutdown().unwrap();
}

/// The ConsumeQueue file of `T/q` holding unit `i`, and the unit's byte position in it.
fn unit_at(dir: &Path, q: i32, i: i64) -> (PathBuf, u64) {
    let byte = usize::try_from(i).unwrap() * CQ_STORE_UNIT_SIZE;
    let start = byte / CQ_FILE * CQ_FILE;
    let path = dir.join(format!("consumequeue/T/{q}/{start:020}"));
    (path, (byte - start) as u64)
}

fn read_unit(dir: &Path, q: i32, i: i64) -> [u8; CQ_STORE_UNIT_SIZE] {
    let (path, pos) = unit_at(dir, q, i);
    let mut b = [0u8; CQ_STORE_UNIT_SIZE];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut b, pos)
        .unwrap();
    b
}

fn write_unit(dir: &Path, q: i32, i: i64, b: &[u8]) {
    let (path, pos) = unit_at(dir, q, i);
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(b, pos).unwrap();
    f.sync_all().unwrap();
}

/// `(queue offset, body)` of each message a pull of `max` from `offset` returns.
fn pull(store: &MessageStore, q: i32, offset: i64, max: usize) -> Vec<(i64, Vec<u8>)> {
    store
        .get_message("T", q, offset, max, None)
        .messages
        .iter()
        .map(|m| {
            let r = DecodedRecord::parse(m.bytes()).unwrap();
            (r.queue_offset, r.body.to_vec())
        })
        .collect()
}

/// Every offset of `T/q` returns its own message, one pull per offset.
fn assert_each_offset_is_its_own(store: &MessageStore, q: i32, n: i64) {
    assert_eq!(store.get_max_offset_in_queue("T", q), n, "T/{q} max offset");
    let wrong: Vec<i64> = (0..n)
        .filter(|&i| pull(store, q, i, 1) != vec![(i, body(q, i))])
        .collect();
    assert!(
        wrong.is_empty(),
        "T/{q}: {} offsets serve another message, e.g. {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
}

#[test]
fn a_unit_overwritten_in_the_middle_is_rebuilt_and_the_other_queue_kept() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 2, 600);
    // Unit 370 of T/0 (file 3 of 6) now points at the record of queue offset 599.
    let last = read_unit(dir.path(), 0, 599);
    write_unit(dir.path(), 0, 370, &last);
    let store = open(dir.path());
    assert_eq!(pull(&store, 0, 370, 1), vec![(370, body(0, 370))]);
    assert_each_offset_is_its_own(&store, 0, 600);
    assert_each_offset_is_its_own(&store, 1, 600);
    assert_eq!(store.consume_queues_rebuilt(), 1, "only T/0 is rebuilt");
    // Producers carry on at the right offsets.
    let r = store
        .put_message(&common::msg("T", 0, b"next", b""))
        .unwrap();
    assert_eq!(r.append.queue_offset, 600);
    store.shutdown().unwrap();
    // The rebuilt queue is sound: the next start rebuilds nothing.
    let store = open(dir.path());
    assert_eq!(store.consume_queues_rebuilt(), 0);
    assert_eq!(store.get_max_offset_in_queue("T", 0), 601);
    store.shutdown().unwrap();
}

#[test]
fn a_tail_unit_with_a_wrong_tag_hash_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 1, 300);
    let mut u = read_unit(dir.path(), 0, 299);
    u[19] ^= 0x5a; // the tags code's low byte
    write_unit(dir.path(), 0, 299, &u);
    let store = open(dir.path());
    let want = rmq_common::tags_hash_code(Some("t2")); // 299 % 3
    assert_eq!(
        store.get_consume_queue_units("T", 0, 299, 1).units[0].tags_code,
        want
    );
    let filter = move |code: i64| code == want;
    let r = store.get_message("T", 0, 297, 8, Some(&filter));
    assert_eq!(
        r.messages.len(),
        1,
        "only queue offset 299 has tag t2 from 297 on"
    );
    assert_each_offset_is_its_own(&store, 0, 300);
    assert_eq!(store.consume_queues_rebuilt(), 1);
    store.shutdown().unwrap();
}

#[test]
fn a_zeroed_span_and_a_zeroed_file_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 2, 600);
    // 20 units in the middle of T/0's file 4 (recovery used to cut the queue there and, as
    // T/1 reaches further into the CommitLog, never refill it)...
    for i in 420..440 {
        write_unit(dir.path(), 0, i, &[0; CQ_STORE_UNIT_SIZE]);
    }
    // ...and all of T/1's file 1, which recovery does not read.
    let (f1, _) = unit_at(dir.path(), 1, 100);
    std::fs::write(&f1, vec![0u8; CQ_FILE]).unwrap();
    let store = open(dir.path());
    assert_each_offset_is_its_own(&store, 0, 600);
    assert_each_offset_is_its_own(&store, 1, 600);
    assert_eq!(store.consume_queues_rebuilt(), 2);
    store.shutdown().unwrap();
}

#[test]
fn a_damaged_index_file_is_rebuilt_and_queries_by_key_work() {
    let dir = tempfile::tempdir().unwrap();
    // maxIndexNum 256: 600 keyed messages fill three index files.
    fill(dir.path(), 1, 600);
    let files = index_files(dir.path());
    assert_eq!(files.len(), 3);
    // The second file's header is zeroed: it looks empty, its keys unfindable.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&files[1])
        .unwrap();
    f.write_all_at(&[0u8; 40], 0).unwrap();
    drop(f);
    let store = open(dir.path());
    let missing: Vec<i64> = (0..600)
        .filter(|i| {
            store
                .query_message("T", &format!("k0-{i}"), 32, 0, i64::MAX)
                .len()
                != 1
        })
        .collect();
    assert!(
        missing.is_empty(),
        "{} keys not found, e.g. {:?}",
        missing.len(),
        &missing[..missing.len().min(5)]
    );
    store.shutdown().unwrap();
    let store = open(dir.path());
    assert_eq!(
        store.index_files_rebuilt(),
        0,
        "the rebuilt files pass the check"
    );
    store.shutdown().unwrap();
}

#[test]
fn a_unit_whose_record_has_another_queue_offset_is_not_served() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 1, 600);
    let store = open(dir.path());
    assert_eq!(store.consume_queues_rebuilt(), 0);
    // Damage while running, where the start-up check's sampling does not look (file 1 of
    // 6, between its windows): unit 120 now points at the record of queue offset 119.
    let prev = read_unit(dir.path(), 0, 119);
    write_unit(dir.path(), 0, 120, &prev);
    // A pull from 120 skips the damaged unit and goes on with 121.
    assert_eq!(
        pull(&store, 0, 120, 1),
        vec![(121, body(0, 121))],
        "unit 120 must not serve message 119"
    );
    let got: Vec<i64> = pull(&store, 0, 119, 3)
        .into_iter()
        .map(|(o, _)| o)
        .collect();
    assert_eq!(got, vec![119, 121, 122], "the damaged unit is skipped");
    assert_eq!(store.consume_queue_units_skipped(), 2);
    store.shutdown().unwrap();
    let marker = dir.path().join("damaged_consume_queues");
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "T\t0\n");
    // The next start rebuilds the queue the pulls found damaged.
    let store = open(dir.path());
    assert_eq!(store.consume_queues_rebuilt(), 1);
    assert_each_offset_is_its_own(&store, 0, 600);
    assert!(
        !marker.exists(),
        "the note is removed once the queue is rebuilt"
    );
    store.shutdown().unwrap();
    let store = open(dir.path());
    assert_eq!(store.consume_queues_rebuilt(), 0);
    store.shutdown().unwrap();
}

/// The read path checks only units an earlier run made: this run's dispatch made its own from
/// records it had just read whole (re-reading them cost a pull a third of its CPU), until a
/// truncation, after which every unit is checked again.
#[test]
fn only_units_of_an_earlier_run_or_from_before_a_truncation_are_checked_on_read() {
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 1, 300);
    let store = open(dir.path());
    for i in 300..600 {
        let b = body(0, i);
        let r = store
            .put_message(&common::msg("T", 0, &b, &common::props(&[])))
            .unwrap();
        assert_eq!(r.append.queue_offset, i);
    }
    common::wait_dispatched(&store, "T", 0, 600, 10);
    // An earlier run's unit pointing at its neighbour's record is caught and skipped ...
    write_unit(dir.path(), 0, 120, &read_unit(dir.path(), 0, 119));
    assert_eq!(pull(&store, 0, 120, 1), vec![(121, body(0, 121))]);
    // ... this run's is served as it says (as RocketMQ serves every unit): only damage to the
    // file under the running broker makes it lie, and the next start's check samples it.
    write_unit(dir.path(), 0, 450, &read_unit(dir.path(), 0, 449));
    assert_eq!(pull(&store, 0, 450, 1), vec![(449, body(0, 449))]);
    assert_eq!(store.consume_queue_units_skipped(), 1);
    // After a truncation every unit is checked again.
    let cut = store.get_message("T", 0, 500, 1, None).messages[0]
        .bytes()
        .to_vec();
    let cut = DecodedRecord::parse(&cut).unwrap().physical_offset;
    store.truncate_commit_log(cut).unwrap();
    assert_eq!(pull(&store, 0, 450, 1), vec![(451, body(0, 451))]);
    write_unit(dir.path(), 0, 460, &read_unit(dir.path(), 0, 459));
    assert_eq!(pull(&store, 0, 460, 1), vec![(461, body(0, 461))]);
    assert_eq!(
        store.consume_queue_units_skipped(),
        3,
        "units 450 and 460 are skipped"
    );
    store.shutdown().unwrap();
}

#[test]
fn expired_heads_and_queues_starting_above_zero_are_not_damage() {
    let dir = tempfile::tempdir().unwrap();
    let extra = [
        ("mappedFileSizeConsumeQueue", "2000"),
        ("mappedFileSizeCommitLog", "65536"),
        ("destroyMapedFileIntervalForcibly", "0"),
    ];
    let big = vec![b'x'; 1000];
    let store = common::open(dir.path(), &extra);
    for _ in 0..300 {
        store.put_message(&common::msg("T", 0, &big, b"")).unwrap();
    }
    common::wait_dispatched(&store, "T", 0, 300, 10);
    store.set_file_reserved_time(0);
    while store.get_min_phy_offset() < 3 * 65536 {
        store.delete_expired_files(false);
    }
    let min = store.get_min_offset_in_queue("T", 0);
    assert!(
        min > 100,
        "the queue's head files went with the CommitLog's: min {min}"
    );
    store.shutdown().unwrap();
    // Expired head files are not damage.
    let store = common::open(dir.path(), &extra);
    assert_eq!(store.consume_queues_rebuilt(), 0);
    assert_eq!(store.get_min_offset_in_queue("T", 0), min);
    store.shutdown().unwrap();
    // Lost queue files are rebuilt from what the CommitLog still holds: the queue starts
    // above its first file's start, padded with blank units; that is not damage either.
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    let store = common::open(dir.path(), &extra);
    assert_eq!(store.get_min_offset_in_queue("T", 0), min);
    store.shutdown().unwrap();
    let store = common::open(dir.path(), &extra);
    assert_eq!(store.consume_queues_rebuilt(), 0);
    assert_eq!(store.get_min_offset_in_queue("T", 0), min);
    assert_eq!(store.get_max_offset_in_queue("T", 0), 300);
    store.shutdown().unwrap();
}

#[test]
fn an_index_file_cut_short_is_rebuilt_instead_of_stopping_the_start() {
    // A power loss while an index file was being made can leave it at 0 bytes: the store
    // still opens, and the keys it held are found again.
    let dir = tempfile::tempdir().unwrap();
    fill(dir.path(), 1, 600);
    let files = index_files(dir.path());
    assert_eq!(files.len(), 3);
    std::fs::File::create(&files[1]).unwrap(); // truncated to 0 bytes
    let store = open(dir.path());
    let found = (0..600)
        .filter(|i| {
            store
                .query_message("T", &format!("k0-{i}"), 32, 0, i64::MAX)
                .len()
                == 1
        })
        .count();
    assert_eq!(found, 600);
    store.shutdown().unwrap();
}

/// The index files of the store in `dir`, oldest first.
fn index_files(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join("index"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}
