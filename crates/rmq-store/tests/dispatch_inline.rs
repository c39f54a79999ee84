//! Who dispatches: a batch is dispatched by the thread that put it, while its records are in
//! that thread's cache, unless a pass of the dispatch thread is running then (which takes the
//! batch along); a single message is left to the dispatch thread (or to the next batch's put,
//! if that comes first). Every message is dispatched once, in order, whoever does it.

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

mod common;

#[test]
fn batches_are_dispatched_by_their_put_and_single_messages_by_the_dispatch_thread() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open(dir.path(), &[]);
    // (queue id, next offset, dispatching thread) of every dispatched message.
    let seen: Arc<Mutex<Vec<(i32, i64, ThreadId)>>> = Arc::default();
    let record = Arc::clone(&seen);
    store.set_message_arriving_listener(Arc::new(move |_topic, q, next, _tags, _ts| {
        let me = std::thread::current().id();
        record.lock().unwrap().push((q, next, me));
    }));
    let putter = std::thread::current().id();
    let p = common::props(&[]);
    let bodies: Vec<Vec<u8>> = (0..64).map(|i| format!("b{i}").into_bytes()).collect();
    for _ in 0..20 {
        let batch: Vec<_> = bodies.iter().map(|b| common::msg("T", 1, b, &p)).collect();
        store.put_messages(&batch).unwrap();
        store
            .put_message(&common::msg("T", 2, b"single", &p))
            .unwrap();
        // Time for the dispatch thread's pass, so the next batch's put finds none running.
        std::thread::sleep(Duration::from_millis(5));
    }
    common::wait_dispatched(&store, "T", 1, 64 * 20, 10);
    common::wait_dispatched(&store, "T", 2, 20, 10);
    store.shutdown().unwrap();

    let seen = seen.lock().unwrap();
    for q in [1, 2] {
        let nexts: Vec<i64> = seen.iter().filter(|s| s.0 == q).map(|s| s.1).collect();
        let want: Vec<i64> = (1..=i64::try_from(nexts.len()).unwrap()).collect();
        assert_eq!(
            nexts, want,
            "queue {q}: each message dispatched once, in order"
        );
    }
    let by_putter = |q: i32| seen.iter().filter(|s| s.0 == q && s.2 == putter).count();
    // Only a pass that runs as a put ends goes the other way (a busy machine may stall one).
    assert!(
        by_putter(2) < 10,
        "single messages are the dispatch thread's: the putting thread dispatched {} of 20",
        by_putter(2)
    );
    assert!(
        by_putter(1) > 64 * 10,
        "the putting thread dispatched {} of {} batched messages",
        by_putter(1),
        64 * 20
    );
}

/// What dispatch left of `topic`/`q`: its units, and the offsets the index gives for keys.
fn dispatched(
    store: &rmq_store::MessageStore,
    queues: &[(&str, i32)],
    keys: &[String],
) -> (Vec<Vec<rmq_store::format::CqUnit>>, Vec<Vec<i64>>) {
    let units = queues
        .iter()
        .map(|(topic, q)| store.get_consume_queue_units(topic, *q, 0, 10_000).units)
        .collect();
    let found = keys
        .iter()
        .map(|k| {
            let mut offs: Vec<i64> = store
                .query_message("T", k, 1_000, 0, i64::MAX)
                .iter()
                .map(rmq_store::SelectMappedBufferResult::start_offset)
                .collect();
            offs.sort_unstable();
            offs
        })
        .collect();
    (units, found)
}

#[test]
fn a_put_dispatches_its_batch_as_a_scan_of_the_records_would() {
    // A put dispatches its batch from what it wrote, not from the records read back: the
    // ConsumeQueues and index it leaves must be those recovery builds by scanning the
    // CommitLog. Tags, keys, unique keys and parked (delayed) messages, over file ends.
    let dir = tempfile::tempdir().unwrap();
    let conf = [("messageDelayLevel", "1h 2h")];
    let body = vec![b'x'; 8 * 1024];
    let props: Vec<Vec<u8>> = (0..256)
        .map(|i| {
            let (tag, keys, uniq) = (
                format!("tag{}", i % 5),
                format!("k{i} all"),
                format!("u{i}"),
            );
            let mut pairs = vec![("TAGS", tag.as_str()), ("KEYS", keys.as_str())];
            pairs.push(("UNIQ_KEY", uniq.as_str()));
            if i % 7 == 0 {
                pairs.push(("DELAY", "2"));
            }
            common::props(&pairs)
        })
        .collect();
    let queues = [("T", 0), ("T", 1), ("SCHEDULE_TOPIC_XXXX", 1)];
    let keys: Vec<String> = ["k3", "k200", "all", "u17", "u255"]
        .map(String::from)
        .to_vec();
    let before = {
        let store = common::open(dir.path(), &conf);
        for (n, chunk) in props.chunks(32).enumerate() {
            let q = i32::try_from(n % 2).unwrap();
            let batch: Vec<_> = chunk
                .iter()
                .map(|p| common::msg("T", q, &body, p))
                .collect();
            store.put_messages(&batch).unwrap();
        }
        // 256 messages, every seventh parked: 37 in the delay queue, 219 in T's two queues.
        common::wait_dispatched(&store, "SCHEDULE_TOPIC_XXXX", 1, 37, 10);
        let got = dispatched(&store, &queues, &keys);
        store.shutdown().unwrap();
        got
    };
    assert_eq!(before.0.iter().map(Vec::len).sum::<usize>(), 256);
    assert_eq!(
        before.1[2].len(),
        219,
        "KEYS 'all' is on every message not parked"
    );
    assert!(
        before.0[2].iter().all(|u| u.tags_code > 1_000_000),
        "a parked message's unit carries its delivery time"
    );
    std::fs::remove_dir_all(dir.path().join("consumequeue")).unwrap();
    std::fs::remove_dir_all(dir.path().join("index")).unwrap();
    let store = common::open(dir.path(), &conf);
    common::wait_dispatched(&store, "SCHEDULE_TOPIC_XXXX", 1, 37, 10);
    let rebuilt = dispatched(&store, &queues, &keys);
    store.shutdown().unwrap();
    assert_eq!(before, rebuilt);
}
