//! End-to-end tests of the store on real files: put/get, file roll-over with BLANK filler,
//! reopen, recovery from a damaged record and a torn tail, rebuilding lost ConsumeQueues, the index,
//! tag filtering, the transient store pool, SYNC_FLUSH and retention.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::properties::Properties;
use rmq_store::format::{scan_record, Scan, BLANK_MAGIC_CODE, CQ_STORE_UNIT_SIZE};
use rmq_store::{
    GetMessageStatus, MessageStore, MessageToStore, PutMessageStatus, StoreConfig, StoreError,
};

mod common;

use common::{bodies, host};

fn small_config(extra: &[(&str, &str)]) -> StoreConfig {
    let mut pairs = vec![
        ("mappedFileSizeCommitLog", "65536"),
        ("mappedFileSizeConsumeQueue", "400"),
        ("flushIntervalCommitLog", "10"),
        ("flushIntervalConsumeQueue", "10"),
        ("deleteCommitLogFilesInterval", "0"),
    ];
    pairs.extend_from_slice(extra);
    common::config(&pairs)
}

/// A store in `dir` opened with [`small_config`]`(extra)`.
fn open(dir: &Path, extra: &[(&str, &str)]) -> Arc<MessageStore> {
    MessageStore::open(dir, small_config(extra), host()).unwrap()
}

fn props(tags: &str, keys: &str) -> Vec<u8> {
    let mut p = Properties::new();
    p.put("TAGS", tags);
    p.put("KEYS", keys);
    p.encode().into_bytes()
}

fn put(
    store: &MessageStore,
    topic: &str,
    qid: i32,
    body: &[u8],
    properties: &[u8],
) -> rmq_store::PutMessageResult {
    store
        .put_message(&MessageToStore {
            flag: 0,
            born_timestamp: 1,
            ..common::msg(topic, qid, body, properties)
        })
        .unwrap()
}

fn wait_dispatched(store: &MessageStore) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.dispatch_behind_bytes() > 0 {
        assert!(Instant::now() < deadline, "dispatch did not catch up");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn body_of(i: usize) -> Vec<u8> {
    format!("message-{i:05}-").repeat(40).into_bytes()
}

#[test]
fn put_get_across_file_rolls_with_blank_filler() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let mut offsets = Vec::new();
    for i in 0..300 {
        let r = put(
            &store,
            "TopicA",
            i32::try_from(i % 3).unwrap(),
            &body_of(i),
            &props("TagA", &format!("k{i}")),
        );
        assert_eq!(r.status, PutMessageStatus::PutOk);
        assert_eq!(r.append.queue_offset, i64::try_from(i / 3).unwrap());
        offsets.push(r.append);
    }
    wait_dispatched(&store);
    // The file holds what is flushed (appends may still be in the append window's memory).
    store.flush().unwrap();
    // ~300 * 700 bytes over 64 KiB files: several files, each padded with a BLANK record.
    let files: Vec<_> = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .collect();
    assert!(files.len() >= 3, "{} files", files.len());
    let first = std::fs::read(dir.path().join("commitlog/00000000000000000000")).unwrap();
    let mut pos = 0;
    while let Scan::Message(r) = scan_record(&first[pos..], true) {
        pos += r.total_size;
    }
    assert_eq!(
        i32::from_be_bytes(first[pos + 4..pos + 8].try_into().unwrap()),
        BLANK_MAGIC_CODE
    );
    assert_eq!(
        usize::try_from(i32::from_be_bytes(first[pos..pos + 4].try_into().unwrap())).unwrap(),
        65536 - pos
    );
    // Records never span files.
    for a in &offsets {
        assert_eq!(a.wrote_offset / 65536, (a.end_offset() - 1) / 65536);
    }
    // Every message comes back, in order, per queue.
    for q in 0..3 {
        let mut got = Vec::new();
        let mut next = 0;
        loop {
            let r = store.get_message("TopicA", q, next, 32, None);
            if r.status != GetMessageStatus::Found {
                assert_eq!(r.status, GetMessageStatus::OffsetOverflowOne);
                break;
            }
            for m in &r.messages {
                let Scan::Message(rec) = scan_record(m.bytes(), true) else {
                    panic!()
                };
                assert_eq!(rec.queue_id, q);
                got.push(rec.body.to_vec());
            }
            next = r.next_begin_offset;
        }
        let want: Vec<_> = (0..300)
            .filter(|i| i % 3 == usize::try_from(q).unwrap())
            .map(body_of)
            .collect();
        assert_eq!(got, want);
    }
    assert_eq!(store.get_max_offset_in_queue("TopicA", 0), 100);
    assert_eq!(
        store.get_message("TopicA", 0, 101, 1, None).status,
        GetMessageStatus::OffsetOverflowBadly
    );
    assert_eq!(
        store.get_message("Nope", 0, 0, 1, None).status,
        GetMessageStatus::NoMatchedLogicQueue
    );
    // By offset, by id.
    let m = store
        .look_message_by_offset(offsets[7].wrote_offset)
        .unwrap();
    let Scan::Message(rec) = scan_record(m.bytes(), true) else {
        panic!()
    };
    assert_eq!(rec.body, body_of(7));
    assert!(store
        .look_message_by_offset(offsets[7].wrote_offset + 1)
        .is_none());
    store.shutdown().unwrap();
}

#[test]
fn consume_queue_units_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let a = put(&store, "T", 2, b"x", &props("TagA", "")).append;
    let b = put(&store, "T", 2, b"yy", b"").append;
    wait_dispatched(&store);
    store.shutdown().unwrap();
    let raw = std::fs::read(dir.path().join("consumequeue/T/2/00000000000000000000")).unwrap();
    assert_eq!(raw.len(), 400);
    let unit = |i: usize| &raw[i * CQ_STORE_UNIT_SIZE..(i + 1) * CQ_STORE_UNIT_SIZE];
    assert_eq!(
        i64::from_be_bytes(unit(0)[..8].try_into().unwrap()),
        a.wrote_offset
    );
    assert_eq!(
        usize::try_from(i32::from_be_bytes(unit(0)[8..12].try_into().unwrap())).unwrap(),
        a.wrote_bytes
    );
    assert_eq!(
        i64::from_be_bytes(unit(0)[12..].try_into().unwrap()),
        2_598_919,
        "\"TagA\".hashCode()"
    );
    assert_eq!(
        i64::from_be_bytes(unit(1)[..8].try_into().unwrap()),
        b.wrote_offset
    );
    assert_eq!(
        i64::from_be_bytes(unit(1)[12..].try_into().unwrap()),
        0,
        "no tag"
    );
    assert!(unit(2).iter().all(|&x| x == 0));
}

#[test]
fn clean_reopen_keeps_everything_and_continues_offsets() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), &[]);
        assert!(store.last_exit_ok());
        for i in 0..100 {
            put(&store, "T", 0, &body_of(i), b"");
        }
        store.shutdown().unwrap();
    }
    assert!(!dir.path().join("abort").exists());
    let store = open(dir.path(), &[]);
    assert!(store.last_exit_ok());
    assert_eq!(store.get_max_offset_in_queue("T", 0), 100);
    assert_eq!(put(&store, "T", 0, b"next", b"").append.queue_offset, 100);
    wait_dispatched(&store);
    assert_eq!(bodies(&store, "T", 0, 100, 1), vec![b"next".to_vec()]);
    assert_eq!(bodies(&store, "T", 0, 0, 1), vec![body_of(0)]);
    // A second open of the same directory is refused while this one holds it.
    let err = MessageStore::open(dir.path(), small_config(&[]), host()).unwrap_err();
    assert!(matches!(err, StoreError::Locked(_)), "{err}");
    store.shutdown().unwrap();
}

/// Offsets of every record in the CommitLog file at `path`.
fn record_offsets(path: &Path) -> Vec<(usize, usize)> {
    let raw = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    let mut pos = 0;
    while let Scan::Message(r) = scan_record(&raw[pos..], false) {
        out.push((pos, r.total_size));
        pos += r.total_size;
    }
    out
}

#[test]
fn abnormal_recovery_skips_damaged_record_and_cuts_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), &[]);
        for i in 0..40 {
            put(&store, "T", 0, &body_of(i), &props("", &format!("key{i}")));
        }
        store.shutdown().unwrap();
    }
    let last = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .max()
        .unwrap();
    let recs = record_offsets(&last);
    let (flip_at, _) = recs[recs.len() - 3];
    let (tail_end, tail_len) = recs[recs.len() - 1];
    let mut raw = std::fs::read(&last).unwrap();
    raw[flip_at + 100] ^= 0x40; // a flipped body byte three records from the end
                                // A torn write after the last record: half a header of garbage.
    raw[tail_end + tail_len..tail_end + tail_len + 10].copy_from_slice(&[0xAB; 10]);
    std::fs::write(&last, &raw).unwrap();
    std::fs::File::create(dir.path().join("abort")).unwrap(); // as after kill -9
    let store = open(dir.path(), &[]);
    assert!(!store.last_exit_ok());
    // The damaged record (message 37) is skipped, the two valid ones after it are kept, the
    // torn tail after them is cut.
    assert_eq!(store.get_max_offset_in_queue("T", 0), 40);
    let mut got = Vec::new();
    let mut next = 0;
    while next < 40 {
        let r = store.get_message("T", 0, next, 64, None);
        for m in &r.messages {
            let Scan::Message(rec) = scan_record(m.bytes(), true) else {
                panic!("a bad record was served");
            };
            got.push(rec.body.to_vec());
        }
        next = r.next_begin_offset;
    }
    let want: Vec<_> = (0..40).filter(|&i| i != 37).map(body_of).collect();
    assert_eq!(got, want);
    assert!(store
        .query_message("T", "key37", 32, 0, i64::MAX)
        .is_empty());
    assert_eq!(store.query_message("T", "key38", 32, 0, i64::MAX).len(), 1);
    // New puts continue right after the valid end, with the right queue offset.
    let r = put(&store, "T", 0, b"after", b"");
    assert_eq!(r.append.queue_offset, 40);
    assert_eq!(
        r.append.wrote_offset,
        i64::try_from(tail_end + tail_len).unwrap()
    );
    wait_dispatched(&store);
    assert_eq!(bodies(&store, "T", 0, 40, 1), vec![b"after".to_vec()]);
    store.shutdown().unwrap();
}

#[test]
fn lost_consume_queues_and_index_are_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path(), &[]);
        for i in 0..50 {
            put(
                &store,
                "T",
                i32::try_from(i % 2).unwrap(),
                &body_of(i),
                &props("t", &format!("k{i}")),
            );
        }
        store.shutdown().unwrap();
    }
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let store = open(dir.path(), &[]);
    assert_eq!(store.get_max_offset_in_queue("T", 0), 25);
    assert_eq!(store.get_max_offset_in_queue("T", 1), 25);
    assert_eq!(bodies(&store, "T", 1, 0, 1), vec![body_of(1)]);
    assert_eq!(store.query_message("T", "k33", 32, 0, i64::MAX).len(), 1);
    assert_eq!(put(&store, "T", 1, b"z", b"").append.queue_offset, 25);
    store.shutdown().unwrap();
}

#[test]
fn index_query_by_keys_and_uniq_key_and_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let mut p = Properties::new();
    p.put("KEYS", "order-1 user-7");
    p.put("UNIQ_KEY", "AC110001000018B4AAC2");
    let a = put(&store, "T", 0, b"a", p.encode().as_bytes()).append;
    put(&store, "T", 0, b"b", &props("", "order-2"));
    put(&store, "Other", 0, b"c", &props("", "order-1"));
    wait_dispatched(&store);
    let hit = store.query_message("T", "user-7", 32, 0, i64::MAX);
    assert_eq!(hit.len(), 1);
    assert_eq!(hit[0].start_offset(), a.wrote_offset);
    assert_eq!(
        store
            .query_message("T", "AC110001000018B4AAC2", 32, 0, i64::MAX)
            .len(),
        1
    );
    assert_eq!(
        store.query_message("T", "order-1", 32, 0, i64::MAX).len(),
        1,
        "topic-scoped"
    );
    assert!(
        store
            .query_message("T", "order", 32, 0, i64::MAX)
            .is_empty(),
        "whole keys only"
    );
    assert!(store
        .query_message("T", "order-1", 32, 0, a.store_timestamp - 5000)
        .is_empty());
    store.shutdown().unwrap();
}

/// A pull's ranges joined into runs: each run of a queue's records stored back to back in
/// one file becomes one range, and the runs carry exactly the messages' bytes, in order.
#[test]
fn pulled_records_stored_back_to_back_join_into_one_range() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    // Bursts of three records of queue 0 between single records of queue 1, over 64 KiB
    // files: a burst is one run unless a file rolls inside it.
    let mut q0 = Vec::new();
    for i in 0..160 {
        let q = i32::from(i % 4 == 3);
        let r = put(&store, "T", q, &body_of(i), &props("", ""));
        assert_eq!(r.status, PutMessageStatus::PutOk);
        if q == 0 {
            q0.push(r.append);
        }
    }
    wait_dispatched(&store);
    let mut next = 0;
    let mut rolls_inside_a_pull = 0;
    while next < 120 {
        let r = store.get_message("T", 0, next, 32, None);
        assert_eq!(r.status, GetMessageStatus::Found);
        let start = usize::try_from(next).unwrap();
        let stored = &q0[start..start + r.messages.len()];
        // From the puts: a run starts at a pull's first record and wherever a record does
        // not begin where the one before it ended.
        let want = 1 + stored
            .windows(2)
            .filter(|w| w[0].end_offset() != w[1].wrote_offset)
            .count();
        rolls_inside_a_pull += stored
            .windows(2)
            .filter(|w| w[0].wrote_offset / 65536 != w[1].wrote_offset / 65536)
            .count();
        let bytes: Vec<u8> = r.messages.iter().flat_map(|m| m.bytes().to_vec()).collect();
        next = r.next_begin_offset;
        let runs = r.into_runs();
        assert_eq!(runs.len(), want, "runs of the pull from {start}");
        let joined: Vec<u8> = runs.iter().flat_map(|m| m.bytes().to_vec()).collect();
        assert_eq!(joined, bytes);
        assert_eq!(runs[0].start_offset(), stored[0].wrote_offset);
    }
    assert!(rolls_inside_a_pull > 0, "no file rolled inside a pull");
}

#[test]
fn tag_hash_filter_and_offset_by_time() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    let mut stamps = Vec::new();
    for i in 0..20 {
        let tag = if i % 4 == 0 { "red" } else { "blue" };
        stamps.push(
            put(&store, "T", 0, &body_of(i), &props(tag, ""))
                .append
                .store_timestamp,
        );
        if i == 9 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    wait_dispatched(&store);
    let red = i64::from(rmq_common::java_string_hash("red"));
    let filter = move |code: i64| code == red;
    let r = store.get_message("T", 0, 0, 32, Some(&filter));
    assert_eq!(r.status, GetMessageStatus::Found);
    assert_eq!(r.messages.len(), 5);
    assert_eq!(r.next_begin_offset, 20);
    let none = |_: i64| false;
    let r = store.get_message("T", 0, 0, 32, Some(&none));
    assert_eq!(r.status, GetMessageStatus::NoMatchedMessage);
    assert_eq!(
        r.next_begin_offset, 20,
        "filtered units are skipped, not re-read"
    );
    assert_eq!(store.get_offset_in_queue_by_time("T", 0, stamps[10]), 10);
    assert_eq!(store.get_offset_in_queue_by_time("T", 0, 0), 0);
    assert_eq!(store.get_offset_in_queue_by_time("T", 0, i64::MAX), 20);
    assert_eq!(
        store.get_message_store_timestamp("T", 0, 19),
        Some(stamps[19])
    );
    assert_eq!(
        store.get_message_store_timestamp("T", 0, 0),
        Some(stamps[0])
    );
    assert_eq!(store.get_message_store_timestamp("T", 0, 20), None);
    assert_eq!(store.get_message_store_timestamp("T", 0, -1), None);
    assert_eq!(store.get_message_store_timestamp("T", 1, 0), None);
    store.shutdown().unwrap();
}

#[test]
fn transient_store_pool_commits_then_serves() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_config(&[
        ("transientStorePoolEnable", "true"),
        ("transientStorePoolSize", "3"),
        ("commitIntervalCommitLog", "5"),
    ]);
    let store = MessageStore::open(dir.path(), cfg, host()).unwrap();
    assert!(store.transient_store_pool_active());
    for i in 0..200 {
        put(&store, "T", 0, &body_of(i), b"");
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while store.get_max_offset_in_queue("T", 0) < 200 {
        assert!(
            Instant::now() < deadline,
            "pool commit never made messages visible"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut got = Vec::new();
    while got.len() < 200 {
        got.extend(bodies(
            &store,
            "T",
            0,
            i64::try_from(got.len()).unwrap(),
            32,
        ));
    }
    assert_eq!(got, (0..200).map(body_of).collect::<Vec<_>>());
    store.shutdown().unwrap();
    let store = open(dir.path(), &[]);
    assert_eq!(store.get_max_offset_in_queue("T", 0), 200);
    store.shutdown().unwrap();
}

#[test]
fn sync_flush_acks_only_durable_bytes_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("flushDiskType", "SYNC_FLUSH")]);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let s = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..50 {
                    let r = put(&s, "T", t, &body_of(i), b"");
                    assert_eq!(r.status, PutMessageStatus::PutOk);
                    let flushed = s.get_flushed_phy_offset();
                    assert!(flushed >= r.append.end_offset(), "acked before durable");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    store.shutdown().unwrap();
}

#[test]
fn sync_flush_puts_that_do_not_wait_are_read_in_order_and_kept() {
    // Small records are staged for the group commit's round, big ones written at once: a
    // put that does not wait for its round still becomes readable, in put order, and a
    // clean shutdown keeps it.
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("flushDiskType", "SYNC_FLUSH")]);
    let body = |i: usize| {
        if i % 10 == 5 {
            vec![u8::try_from(i).unwrap(); 20_000]
        } else {
            body_of(i)
        }
    };
    for i in 0..40 {
        let b = body(i);
        store
            .append(&[MessageToStore {
                flag: 0,
                born_timestamp: 1,
                ..common::msg("T", 0, &b, b"")
            }])
            .unwrap();
    }
    common::wait_dispatched(&store, "T", 0, 40, 10);
    let want: Vec<Vec<u8>> = (0..40).map(body).collect();
    let all = |s: &MessageStore| {
        let mut got = bodies(s, "T", 0, 0, 20);
        got.extend(bodies(s, "T", 0, 20, 20));
        got
    };
    assert_eq!(all(&store), want);
    store.shutdown().unwrap();
    let store = open(dir.path(), &[("flushDiskType", "SYNC_FLUSH")]);
    assert!(store.last_exit_ok());
    assert_eq!(all(&store), want);
    store.shutdown().unwrap();
}

#[test]
fn retention_deletes_old_files_but_waits_for_readers() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_config(&[("destroyMapedFileIntervalForcibly", "3600000")]);
    let store = MessageStore::open(dir.path(), cfg, host()).unwrap();
    for i in 0..300 {
        put(&store, "T", 0, &body_of(i), &props("", &format!("k{i}")));
    }
    wait_dispatched(&store);
    // Within the default 72 h nothing expires; fileReservedTime can change while running.
    assert_eq!(store.file_reserved_time(), 72);
    assert_eq!(store.delete_expired_files(false), 0);
    store.set_file_reserved_time(0);
    // Files in use (the allocator may have pre-created one more, unused, file on disk).
    let files_before = usize::try_from(store.get_max_phy_offset() / 65536 + 1).unwrap();
    assert!(files_before >= 3);
    // A reader holds a message of the first file: it must survive the pass.
    let held = store.get_message("T", 0, 0, 1, None).messages.remove(0);
    assert_eq!(
        store.delete_expired_files(false),
        0,
        "oldest file is being read"
    );
    assert!(dir.path().join("commitlog/00000000000000000000").exists());
    drop(held);
    // Flush and dispatch threads hold files for an instant; a pass that meets such a hold
    // stops there and the next one goes on, as the periodic clean service does.
    let mut deleted = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while deleted < files_before - 1 && Instant::now() < deadline {
        deleted += store.delete_expired_files(false);
    }
    assert_eq!(deleted, files_before - 1, "all but the active file");
    assert!(!dir.path().join("commitlog/00000000000000000000").exists());
    let min = store.get_min_offset_in_queue("T", 0);
    assert!(min > 0, "queue min offset moved past deleted data");
    let r = store.get_message("T", 0, 0, 1, None);
    assert_eq!(r.status, GetMessageStatus::OffsetTooSmall);
    assert_eq!(r.next_begin_offset, min);
    assert_eq!(bodies(&store, "T", 0, min, 1).len(), 1);
    assert_eq!(store.get_min_phy_offset() % 65536, 0);
    store.shutdown().unwrap();
}

#[test]
fn illegal_messages_get_reasons_and_store_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("maxMessageSize", "2048")]);
    let msg = |topic: &'static str, body: &'static [u8], props: &'static [u8]| MessageToStore {
        flag: 0,
        born_timestamp: 0,
        born_host: "127.0.0.1:1".parse().unwrap(),
        ..common::msg(topic, 0, body, props)
    };
    let big: &'static [u8] = Box::leak(vec![0u8; 4096].into_boxed_slice());
    let e = store.put_message(&msg("T", big, b"")).unwrap_err();
    assert!(
        matches!(e, StoreError::MessageIllegal(_)) && e.to_string().contains("maxMessageSize"),
        "{e}"
    );
    let e = store.put_message(&msg("", b"x", b"")).unwrap_err();
    assert!(e.to_string().contains("topic is empty"), "{e}");
    let long_props: &'static [u8] = Box::leak(vec![b'a'; 40_000].into_boxed_slice());
    assert!(matches!(
        store.put_message(&msg("T", b"x", long_props)).unwrap_err(),
        StoreError::PropertiesSizeExceeded(40_000)
    ));
    // Readers decode PROPERTIES strictly (rmq_common::record): non-UTF-8 is refused here.
    let e = store
        .put_message(&msg("T", b"x", b"K\x01\xFF\x02"))
        .unwrap_err();
    assert!(
        matches!(e, StoreError::MessageIllegal(_)) && e.to_string().contains("not UTF-8"),
        "{e}"
    );
    put(&store, "T", 0, b"fine", b"");
    store.shutdown().unwrap();
    let e = store.put_message(&msg("T", b"x", b"")).unwrap_err();
    assert!(matches!(e, StoreError::ServiceNotAvailable(_)), "{e}");
}

#[test]
fn sync_flush_future_resolves_only_when_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("flushDiskType", "SYNC_FLUSH")]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..32)
            .map(|t| tokio::spawn(append_and_flush(Arc::clone(&store), t, 20)))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    store.shutdown().unwrap();
    // After shutdown a wait cannot succeed by accident.
    let r = rt.block_on(store.flush_future(i64::MAX));
    assert!(
        matches!(r, Err(StoreError::ServiceNotAvailable(_))),
        "{r:?}"
    );
}

/// Append `n` messages to queue `q` of "T" and await each one's flush.
async fn append_and_flush(s: Arc<MessageStore>, q: i32, n: usize) {
    for i in 0..n {
        let body = body_of(i);
        let msg = MessageToStore {
            flag: 0,
            born_timestamp: 0,
            born_host: "127.0.0.1:1".parse().unwrap(),
            ..common::msg("T", q, &body, b"")
        };
        let end = s.append(std::slice::from_ref(&msg)).unwrap()[0].end_offset();
        s.flush_future(end).await.unwrap();
        assert!(
            s.get_flushed_phy_offset() >= end,
            "future resolved before the bytes were durable"
        );
    }
}

#[test]
fn sync_flush_rounds_run_on_an_attached_runner_and_fall_back_to_the_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("flushDiskType", "SYNC_FLUSH")]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // A runner as a server attaches one: woken when a round is due, it makes it.
    let due = Arc::new(tokio::sync::Notify::new());
    let wake = Arc::clone(&due);
    assert!(store.attach_group_commit_runner(Box::new(move || wake.notify_one())));
    assert!(
        !store.attach_group_commit_runner(Box::new(|| {})),
        "one runner per store"
    );
    let advanced = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (s, a) = (Arc::clone(&store), Arc::clone(&advanced));
    let runner = rt.spawn(async move {
        loop {
            due.notified().await;
            let before = s.get_flushed_phy_offset();
            s.run_group_commit_round();
            if s.get_flushed_phy_offset() > before {
                a.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    rt.block_on(async {
        let tasks: Vec<_> = (0..8)
            .map(|q| tokio::spawn(append_and_flush(Arc::clone(&store), q, 50)))
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let by_runner = advanced.load(std::sync::atomic::Ordering::Relaxed);
    assert!(by_runner > 0, "the runner made no round");
    // A runner that stops running rounds (a stalled runtime) loses no flush: the
    // group-commit thread stands by and makes the rounds left waiting.
    runner.abort();
    let _ = rt.block_on(runner);
    rt.block_on(async {
        let stand_by = append_and_flush(Arc::clone(&store), 0, 5);
        tokio::time::timeout(Duration::from_secs(5), stand_by)
            .await
            .expect("the group-commit thread made no round for a stalled runner");
    });
    assert_eq!(
        advanced.load(std::sync::atomic::Ordering::Relaxed),
        by_runner
    );
    // Detached (a server that stops), the thread makes them at once, and a blocking put
    // too.
    store.detach_group_commit_runner();
    rt.block_on(append_and_flush(Arc::clone(&store), 1, 20));
    put(&store, "T", 2, b"blocking", b"");
    store.shutdown().unwrap();
}

#[test]
fn expired_consume_queues_are_cleaned_and_start_again_at_zero() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_config(&[("destroyMapedFileIntervalForcibly", "0")]);
    let store = MessageStore::open(dir.path(), cfg, host()).unwrap();
    assert_eq!(store.earliest_message_time(), -1, "empty store");
    for i in 0..100 {
        put(&store, "Old", 1, &body_of(i), b"");
    }
    for i in 0..300 {
        put(&store, "New", 0, &body_of(i), b"");
    }
    wait_dispatched(&store);
    // Nothing expired yet: nothing is cleaned.
    assert!(store.clean_expired_consume_queues().unwrap().is_empty());
    store.set_file_reserved_time(0);
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.get_min_phy_offset() == 0 && Instant::now() < deadline {
        store.delete_expired_files(false);
    }
    assert!(
        store.get_min_phy_offset() > 0,
        "old CommitLog files deleted"
    );
    assert!(store.earliest_message_time() > 0);
    let removed = store.clean_expired_consume_queues().unwrap();
    assert_eq!(removed, vec![("Old".to_owned(), 1)]);
    assert!(store.get_consume_queue("Old", 1).is_none());
    assert!(!dir.path().join("consumequeue/Old/1").exists());
    assert!(
        store.get_consume_queue("New", 0).is_some(),
        "a queue with live data stays"
    );
    // The queue starts again at offset 0 and serves what is written now.
    let r = put(&store, "Old", 1, b"fresh", b"");
    assert_eq!(r.append.queue_offset, 0);
    wait_dispatched(&store);
    assert_eq!(bodies(&store, "Old", 1, 0, 8), vec![b"fresh".to_vec()]);
    store.shutdown().unwrap();
}

#[test]
fn human_readable_bytes_as_rocketmq_prints_them() {
    assert_eq!(rmq_store::store::human_readable_bytes(0), "0 B");
    assert_eq!(rmq_store::store::human_readable_bytes(1023), "1023 B");
    assert_eq!(rmq_store::store::human_readable_bytes(1536), "1.5 KiB");
    assert_eq!(rmq_store::store::human_readable_bytes(3 << 30), "3.0 GiB");
}

#[test]
fn unused_topics_lose_their_consume_queues() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    for q in 0..2 {
        put(&store, "Gone", q, b"g", b"");
    }
    put(&store, "Kept", 0, b"k", b"");
    wait_dispatched(&store);
    let removed = store.clean_unused_topics(&|t| t == "Kept").unwrap();
    assert_eq!(
        removed,
        vec![("Gone".to_owned(), 0), ("Gone".to_owned(), 1)]
    );
    assert!(!dir.path().join("consumequeue/Gone").exists());
    assert_eq!(bodies(&store, "Kept", 0, 0, 8), vec![b"k".to_vec()]);
    assert_eq!(put(&store, "Gone", 1, b"again", b"").append.queue_offset, 0);
    store.shutdown().unwrap();
}

/// The `/dev/shm` window directories of the store at `root` (see `append_window`).
fn windows_of(root: &Path) -> Vec<std::path::PathBuf> {
    let root = root.canonicalize().unwrap();
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read(p.join("store")).is_ok_and(|s| s == root.as_os_str().as_encoded_bytes())
        })
        .collect()
}

/// Every message of queue 0 of `topic`, in order.
fn all_of(store: &MessageStore, topic: &str) -> Vec<rmq_store::SelectMappedBufferResult> {
    let mut out = Vec::new();
    loop {
        let got = store.get_message(topic, 0, i64::try_from(out.len()).unwrap(), 32, None);
        if got.messages.is_empty() {
            return out;
        }
        out.extend(got.messages);
    }
}

/// `got` holds 400 records with the bodies [`body_of`] gives.
fn assert_bodies(got: &[rmq_store::SelectMappedBufferResult]) {
    assert_eq!(got.len(), 400);
    for (i, m) in got.iter().enumerate() {
        let Scan::Message(rec) = scan_record(m.bytes(), true) else {
            panic!("record {i}")
        };
        assert_eq!(rec.body, body_of(i));
    }
}

#[test]
fn async_flush_appends_through_the_append_window_and_keeps_every_message() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // 64 KiB CommitLog files: 16 KiB segments, four ranges a file.
    let store = open(&root, &[]);
    assert_eq!(
        windows_of(&root).len(),
        1,
        "an ASYNC_FLUSH store appends through a window"
    );
    for i in 0..400 {
        let r = put(
            &store,
            "W",
            0,
            &body_of(i),
            &props("TagA", &format!("k{i}")),
        );
        assert_eq!(r.status, PutMessageStatus::PutOk);
    }
    wait_dispatched(&store);
    // Every message reads back while the newest are still in the window's memory.
    let got = all_of(&store, "W");
    let windows = windows_of(&root);
    assert!(windows[0].join("segment-0").exists(), "segments were taken");
    // The window's thread writes full ranges out and maps the file back within a step.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !got[0].on_file() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        got[0].on_file(),
        "the oldest was written out and its range retired"
    );
    assert_bodies(&got);
    drop(got);
    store.shutdown().unwrap();
    assert!(
        windows_of(&root).is_empty(),
        "a clean shutdown removes the window"
    );
    // The files hold every record: a store opened again reads them all from disk.
    let store = open(&root, &[]);
    let got = all_of(&store, "W");
    assert_bodies(&got);
    drop(got);
    store.shutdown().unwrap();
}

#[test]
fn sync_flush_stores_have_no_append_window() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("flushDiskType", "SYNC_FLUSH")]);
    assert!(windows_of(dir.path()).is_empty());
    store.shutdown().unwrap();
}
