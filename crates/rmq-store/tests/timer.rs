//! Timer messages in the store: parking in `rmq_sys_wheel_timer` on put, delivery by the
//! store's timer thread into the real queue once the asked second is over (never before), a
//! clean reopen that neither loses nor repeats, refusals, and no wheel file until the first
//! timer message.

use std::sync::Arc;
use std::time::Duration;

use rmq_common::properties::find_property;
use rmq_common::time::now_millis;
use rmq_store::format::{scan_record, Scan};
use rmq_store::{MessageStore, StoreError, TIMER_TOPIC};

mod common;

use common::{msg, props, wait_dispatched};

fn open_with(dir: &std::path::Path, extra: &[(&str, &str)]) -> Arc<MessageStore> {
    let mut pairs = vec![("timerMaxDelaySec", "30")];
    pairs.extend_from_slice(extra);
    common::open(dir, &pairs)
}

/// Every message of `topic`/`q`: (store timestamp, body, properties).
fn read(store: &MessageStore, topic: &str, q: i32) -> Vec<(i64, Vec<u8>, Vec<u8>)> {
    let units = store.get_consume_queue_units(topic, q, 0, 1000).units;
    units
        .iter()
        .map(|u| {
            let sel = store.look_message_by_offset(u.offset).unwrap();
            let Scan::Message(r) = scan_record(sel.bytes(), false) else {
                panic!("not a record")
            };
            (r.store_timestamp, r.body.to_vec(), r.properties.to_vec())
        })
        .collect()
}

fn prop(p: &[u8], name: &str) -> Option<String> {
    find_property(p, name).map(|v| String::from_utf8(v.to_vec()).unwrap())
}

#[test]
fn timers_are_parked_then_delivered_in_their_second_never_before() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), &[]);
    assert!(
        !dir.path().join("timerwheel").exists(),
        "no wheel before a timer message"
    );
    let asked = now_millis() + 1500;
    let at = asked.to_string();
    let p = props(&[
        ("TAGS", "A"),
        ("UNIQ_KEY", "U1"),
        ("TIMER_DELIVER_MS", &at),
        ("color", "blue"),
    ]);
    store.put_message(&msg("Real", 2, b"hello", &p)).unwrap();
    let p2 = props(&[("TIMER_DELAY_MS", "1200")]);
    let put2 = now_millis();
    let r2 = store.put_message(&msg("Real", 2, b"no-uniq", &p2)).unwrap();
    // Parked: one unit each in the timer topic, whose tags code is the slot time.
    wait_dispatched(&store, TIMER_TOPIC, 0, 2, 5);
    let units = store.get_consume_queue_units(TIMER_TOPIC, 0, 0, 10).units;
    assert_eq!(units[0].tags_code, asked - asked % 1000);
    assert_eq!(store.get_max_offset_in_queue("Real", 2), 0);

    wait_dispatched(&store, "Real", 2, 2, 6);
    let got = read(&store, "Real", 2);
    let by_body = |b: &[u8]| got.iter().find(|m| m.1 == b).unwrap();
    let (ts, _, p) = by_body(b"hello");
    assert!(*ts >= asked, "delivered {} ms early", asked - ts);
    assert!(*ts < asked + 1000 + 500, "delivered {} ms late", ts - asked);
    assert_eq!(prop(p, "UNIQ_KEY").as_deref(), Some("U1"));
    assert_eq!(prop(p, "TAGS").as_deref(), Some("A"));
    assert_eq!(prop(p, "color").as_deref(), Some("blue"));
    assert_eq!(prop(p, "TIMER_DELIVER_MS").as_deref(), Some(at.as_str()));
    assert_eq!(
        prop(p, "TIMER_OUT_MS").as_deref(),
        Some((asked - asked % 1000).to_string().as_str())
    );
    assert!(prop(p, "REAL_TOPIC").is_none() && prop(p, "REAL_QID").is_none());
    let dequeued: i64 = prop(p, "TIMER_DEQUEUE_MS").unwrap().parse().unwrap();
    let enqueued: i64 = prop(p, "TIMER_ENQUEUE_MS").unwrap().parse().unwrap();
    assert!(dequeued >= asked && enqueued < asked - 1000);
    // Without a UNIQ_KEY, the delivered copy carries the id of the parked record.
    let (ts2, _, p2) = by_body(b"no-uniq");
    assert!(*ts2 >= put2 + 1200);
    let id = rmq_common::create_offset_msg_id(
        "127.0.0.1:10911".parse().unwrap(),
        r2.append.wrote_offset,
    );
    assert_eq!(prop(p2, "UNIQ_KEY"), Some(id));
    assert!(dir.path().join("timerwheel").exists());
    // The runtime info says the wheel is up to date (RocketMQ's key names).
    let info: std::collections::HashMap<_, _> = store.runtime_info().into_iter().collect();
    assert_eq!(info["timerOffsetBehind"], "0");
    assert!(
        info["timerReadBehind"].parse::<i64>().unwrap() <= 2,
        "{info:?}"
    );
    assert!(info.contains_key("timerCongestNum") && info.contains_key("timerDequeueTps"));
    store.shutdown().unwrap();
}

#[test]
fn a_clean_reopen_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), &[]);
    let p = props(&[("TIMER_DELAY_SEC", "2")]);
    let put = now_millis();
    for i in 0..20u8 {
        store.put_message(&msg("R", 0, &[i], &p)).unwrap();
    }
    wait_dispatched(&store, TIMER_TOPIC, 0, 20, 5);
    std::thread::sleep(Duration::from_millis(300));
    store.shutdown().unwrap();
    drop(store);
    let store = open_with(dir.path(), &[]);
    wait_dispatched(&store, "R", 0, 20, 6);
    std::thread::sleep(Duration::from_millis(1200));
    let got = read(&store, "R", 0);
    assert_eq!(got.len(), 20, "delivered again after a clean reopen");
    let mut bodies: Vec<u8> = got.iter().map(|(_, b, _)| b[0]).collect();
    bodies.sort_unstable();
    assert_eq!(bodies, (0..20).collect::<Vec<u8>>());
    assert!(got.iter().all(|(ts, _, _)| *ts >= put + 2000));
    store.shutdown().unwrap();
}

#[test]
fn refusals_and_messages_stored_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), &[]);
    let too_far = props(&[("TIMER_DELAY_SEC", "31")]);
    let e = store.put_message(&msg("R", 0, b"x", &too_far)).unwrap_err();
    assert!(
        matches!(
            e,
            StoreError::WheelTimerMsgIllegal {
                max_delay_ms: 30_000
            }
        ),
        "{e}"
    );
    let bad = props(&[("TIMER_DELIVER_MS", "tomorrow")]);
    assert!(store.put_message(&msg("R", 0, b"x", &bad)).is_err());
    // A past deliver time: an ordinary message, in its queue at once.
    let past = (now_millis() - 10_000).to_string();
    let p = props(&[("TIMER_DELIVER_MS", &past)]);
    store.put_message(&msg("R", 0, b"past", &p)).unwrap();
    wait_dispatched(&store, "R", 0, 1, 2);
    assert_eq!(store.get_max_offset_in_queue(TIMER_TOPIC, 0), 0);
    store.shutdown().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = open_with(dir.path(), &[("timerWheelEnable", "false")]);
    let p = props(&[("TIMER_DELAY_SEC", "3")]);
    let e = store.put_message(&msg("R", 0, b"x", &p)).unwrap_err();
    assert!(matches!(e, StoreError::WheelTimerNotEnable), "{e}");
    store.shutdown().unwrap();
}
