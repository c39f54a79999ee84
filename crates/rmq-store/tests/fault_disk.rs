//! The disk policy under pressure (issue 13, item 3): forced deletion (unexpired CommitLog
//! files, the disk over `diskSpaceCleanForciblyRatio`) stops at the retention floor, the
//! oldest message a subscription group has not consumed; expiry and forced deletion keep
//! pending timers and undelivered delay-level messages; `cleanUnconsumedFileForciblyEnable`
//! restores RocketMQ's forced deletion; and a full disk refuses writes with a remark naming
//! the holder while reads go on.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmq_store::{
    CleanReport, DeleteReason, MessageStore, QueueHold, StoreError, SCHEDULE_TOPIC, TIMER_TOPIC,
};

mod common;

use common::{msg, props, wait_dispatched, SmallFilesystem};

/// 64 KiB CommitLog files, deletions without pauses, readers never wait a file's deletion.
const SMALL: &[(&str, &str)] = &[
    ("mappedFileSizeCommitLog", "65536"),
    ("deleteCommitLogFilesInterval", "0"),
    ("destroyMapedFileIntervalForcibly", "0"),
];

const BODY: [u8; 900] = [b'x'; 900];

fn open(dir: &std::path::Path, extra: &[(&str, &str)]) -> Arc<MessageStore> {
    let mut pairs = SMALL.to_vec();
    pairs.extend_from_slice(extra);
    common::open(dir, &pairs)
}

/// Put `n` plain messages alternately into `T`/0 and `T`/1.
fn fill(store: &MessageStore, n: usize) {
    for i in 0..n {
        let q = i32::try_from(i % 2).unwrap();
        store.put_message(&msg("T", q, &BODY, b"")).unwrap();
    }
}

/// The committed offsets a test sets, as the broker's offset table would give them.
#[derive(Default)]
struct Groups(Mutex<Vec<QueueHold>>);

impl Groups {
    fn commit(&self, group: &str, topic: &str, queue_id: i32, offset: i64) {
        let mut t = self.0.lock().unwrap();
        t.retain(|h| !(h.holder == group && h.topic == topic && h.queue_id == queue_id));
        t.push(QueueHold {
            holder: group.into(),
            topic: topic.into(),
            queue_id,
            offset,
        });
    }

    fn register(self: &Arc<Self>, store: &MessageStore) {
        let me = Arc::clone(self);
        store.set_consume_progress(Arc::new(move || me.0.lock().unwrap().clone()));
    }
}

/// Passes until one deletes nothing and is held back, or only the newest file is left (the
/// flush and dispatch threads hold a file for an instant, which stops a pass where it is);
/// every file deleted, and the last report.
fn clean_until_stable(store: &MessageStore, force: bool) -> (usize, CleanReport) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut deleted = 0;
    loop {
        let r = store.clean_commit_log(force);
        deleted += r.deleted.len();
        let done = r.held.is_some() || files(store) == 1 || Instant::now() > deadline;
        if r.deleted.is_empty() && done {
            return (deleted, r);
        }
        if r.deleted.is_empty() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// CommitLog files in use, from the oldest kept to the one being written (the allocator may
/// have created the next one on disk already).
fn files(store: &MessageStore) -> usize {
    usize::try_from((store.get_max_phy_offset() - 1) / 65536 - store.get_min_phy_offset() / 65536)
        .unwrap()
        + 1
}

/// Messages of `topic`/`q` readable from queue offset `from` on.
fn readable(store: &MessageStore, topic: &str, q: i32, from: i64) -> usize {
    let units = store.get_consume_queue_units(topic, q, from, 100_000).units;
    units
        .iter()
        .filter(|u| store.look_message_by_offset(u.offset).is_some())
        .count()
}

/// The CommitLog offset of unit `offset` of `topic`/`q`.
fn phy(store: &MessageStore, topic: &str, q: i32, offset: i64) -> i64 {
    store.get_consume_queue_units(topic, q, offset, 1).units[0].offset
}

#[test]
fn forced_deletion_stops_at_the_oldest_message_a_group_has_not_consumed() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[]);
    fill(&store, 800); // 400 per queue, ~14 files of 64 KiB
    wait_dispatched(&store, "T", 1, 400, 10);
    let groups = Arc::new(Groups::default());
    groups.register(&store);
    // Two groups on T/0 (the slower one decides), one that consumed all of T/1.
    groups.commit("subscription group fast", "T", 0, 300);
    groups.commit("subscription group slow", "T", 0, 120);
    groups.commit("subscription group fast", "T", 1, 400);
    let floor = phy(&store, "T", 0, 120);
    assert_eq!(store.retention_floor().unwrap().offset, floor);

    // Nothing is expired (fileReservedTime 72 h): only forced deletion may delete.
    assert!(store.clean_commit_log(false).deleted.is_empty());
    let before = files(&store);
    let (deleted, last) = clean_until_stable(&store, true);
    let held = last.held.expect("the slow group holds the rest");
    assert_eq!(held.holder, "subscription group slow on T/0");
    assert_eq!(held.detail, "at queue offset 120 of 400");
    // Every file wholly below the floor went, and no other.
    let expected = usize::try_from(floor / 65536).unwrap();
    assert_eq!((deleted, files(&store)), (expected, before - expected));
    assert!(
        expected >= 3,
        "the test consumed {expected} files' worth only"
    );
    assert_eq!(store.get_min_phy_offset(), floor / 65536 * 65536);
    // Every message the slow group has not consumed is still there.
    assert_eq!(readable(&store, "T", 0, 120), 280);
    assert!(store.get_min_offset_in_queue("T", 0) <= 120);

    // Once it has consumed everything, forced deletion goes on to all but the newest file.
    groups.commit("subscription group slow", "T", 0, 400);
    groups.commit("subscription group fast", "T", 0, 400);
    assert!(store.retention_floor().is_none());
    let (more, last) = clean_until_stable(&store, true);
    assert!(last.held.is_none(), "{:?}", last.held);
    assert_eq!(files(&store), 1, "all but the newest file");
    assert_eq!(more, before - expected - 1);
    store.shutdown().unwrap();
}

#[test]
fn expiry_and_forced_deletion_keep_pending_timers_and_delay_level_messages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("messageDelayLevel", "1h 2h")]);
    // A delay-level message, then files of others, then a timer message, then more files.
    let delayed = props(&[("DELAY", "1")]);
    store
        .put_message(&msg("T", 0, b"delayed", &delayed))
        .unwrap();
    fill(&store, 300);
    let timer = props(&[("TIMER_DELAY_SEC", "3600")]);
    store.put_message(&msg("T", 0, b"timer", &timer)).unwrap();
    fill(&store, 300);
    wait_dispatched(&store, "T", 1, 300, 10);
    wait_dispatched(&store, TIMER_TOPIC, 0, 1, 10);
    let delay_at = phy(&store, SCHEDULE_TOPIC, 0, 0);
    let timer_at = phy(&store, TIMER_TOPIC, 0, 0);
    assert!(
        delay_at < 65536 && timer_at > 4 * 65536,
        "{delay_at} {timer_at}"
    );

    // Everything is expired now, and no group protects T: only the parked messages hold.
    store.set_file_reserved_time(0);
    let (deleted, last) = clean_until_stable(&store, false);
    assert_eq!(deleted, 0, "the first file holds the delay-level message");
    let held = last.held.unwrap();
    assert_eq!(
        (held.offset, held.holder.as_str()),
        (delay_at, "delay level 1 on SCHEDULE_TOPIC_XXXX/0")
    );
    // Forced deletion keeps it too.
    assert_eq!(clean_until_stable(&store, true).0, 0);
    assert_eq!(readable(&store, SCHEDULE_TOPIC, 0, 0), 1);

    // Delivered (the scheduler moved on): expiry goes on up to the timer message's file.
    store.set_delay_offsets(&[(1, 1), (2, 0)]);
    let (deleted, last) = clean_until_stable(&store, false);
    let held = last.held.unwrap();
    assert!(held.holder.contains("timer"), "{held:?}");
    assert_eq!(held.offset, timer_at);
    assert_eq!(deleted, usize::try_from(timer_at / 65536).unwrap());
    assert!(last
        .deleted
        .iter()
        .all(|(_, why)| *why == DeleteReason::Expired));
    assert_eq!(readable(&store, TIMER_TOPIC, 0, 0), 1, "the pending timer");
    assert_eq!(clean_until_stable(&store, true).0, 0, "forced keeps it too");
    assert_eq!(readable(&store, TIMER_TOPIC, 0, 0), 1);
    store.shutdown().unwrap();
}

#[test]
fn the_key_restores_rocketmqs_forced_deletion() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path(), &[("cleanUnconsumedFileForciblyEnable", "true")]);
    let delayed = props(&[("DELAY", "1")]);
    store
        .put_message(&msg("T", 0, b"delayed", &delayed))
        .unwrap();
    fill(&store, 600);
    wait_dispatched(&store, "T", 1, 300, 10);
    let groups = Arc::new(Groups::default());
    groups.register(&store);
    groups.commit("subscription group idle", "T", 0, 0);
    groups.commit("subscription group idle", "T", 1, 0);
    let before = files(&store);
    // Unexpired and unconsumed, the delay-level message waiting: forced deletion takes all
    // but the newest file anyway, as RocketMQ's does.
    let (deleted, last) = clean_until_stable(&store, true);
    assert!(last.held.is_none(), "{:?}", last.held);
    assert_eq!((deleted, files(&store)), (before - 1, 1));
    assert!(
        store.get_min_offset_in_queue("T", 0) > 200,
        "unconsumed messages gone"
    );
    assert_eq!(readable(&store, SCHEDULE_TOPIC, 0, 0), 0);
    store.shutdown().unwrap();
}

#[test]
fn a_full_disk_refuses_writes_naming_the_holder_and_reads_go_on() {
    let base = tempfile::tempdir().unwrap();
    let fs = SmallFilesystem::mount(&base.path().join("disk"), 4);
    let store = open(
        fs.path(),
        &[
            ("diskSpaceWarningLevelRatio", "90"),
            ("messageIndexEnable", "false"),
            ("mappedFileSizeConsumeQueue", "6000"),
        ],
    );
    fill(&store, 400);
    wait_dispatched(&store, "T", 1, 200, 10);
    let groups = Arc::new(Groups::default());
    groups.register(&store);
    groups.commit("subscription group G", "T", 0, 10);
    // Another process fills the disk.
    let filler = fs.path().join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![7u8; 64 << 10];
    while std::io::Write::write_all(&mut f, &chunk).is_ok() {}
    drop(f);
    // Retention's forced pass frees what is consumed and stops at the group.
    let (_, last) = clean_until_stable(&store, true);
    assert_eq!(last.held.unwrap().holder, "subscription group G on T/0");
    store.check_disk_space();
    let e = store.put_message(&msg("T", 0, b"more", b"")).unwrap_err();
    let StoreError::ServiceNotAvailable(remark) = e else {
        panic!("{e:?}")
    };
    for part in [
        "over diskSpaceWarningLevelRatio (90 %)",
        "reads and consumption go on",
        "subscription group G on T/0 (at queue offset 10 of 200)",
        "free space on that disk",
        "add consumers",
        "cleanUnconsumedFileForciblyEnable=true",
    ] {
        assert!(remark.contains(part), "{part:?} not in {remark:?}");
    }
    // Reads go on: every message the group has not consumed.
    assert_eq!(readable(&store, "T", 0, 10), 190);
    // The other file goes: writes resume.
    std::fs::remove_file(&filler).unwrap();
    store.check_disk_space();
    store.put_message(&msg("T", 0, b"more", b"")).unwrap();
    store.shutdown().unwrap();
    drop(fs);
}
