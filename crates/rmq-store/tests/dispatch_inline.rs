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
