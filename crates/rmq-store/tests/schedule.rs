//! Delay levels in the store: parking on put (single, batch, and a batch that mixes delayed and
//! plain messages), delivery times as tags codes, reading level queues across ConsumeQueue files,
//! delivering into the real queue, skipping what cannot be delivered, and refusing a DELAY that
//! is not a level.

use rmq_common::properties::find_property;
use rmq_store::format::{scan_record, Scan};
use rmq_store::{MessageStore, MessageToStore, StoreError, SCHEDULE_TOPIC};

mod common;

use common::{bodies, host, props, wait_dispatched};

fn open(dir: &std::path::Path) -> std::sync::Arc<MessageStore> {
    common::open(
        dir,
        &[
            // 16 units per ConsumeQueue file, so level queues span several files.
            ("mappedFileSizeConsumeQueue", "320"),
            ("messageDelayLevel", "1s 2s 1h"),
        ],
    )
}

/// A message to put, reconsumed twice already (delivery must keep that).
fn msg<'a>(topic: &'a str, qid: i32, body: &'a [u8], props: &'a [u8]) -> MessageToStore<'a> {
    MessageToStore {
        reconsume_times: 2,
        ..common::msg(topic, qid, body, props)
    }
}

fn prop(bytes: &[u8], name: &str) -> Option<String> {
    let Scan::Message(r) = scan_record(bytes, false) else {
        panic!("not a record")
    };
    find_property(r.properties, name).map(|v| String::from_utf8(v.to_vec()).unwrap())
}

#[test]
fn delayed_puts_are_parked_and_delivered_into_their_real_queue() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    assert_eq!(store.delay_levels_ms(), [1000, 2000, 3_600_000]);
    let p = props(&[("TAGS", "A"), ("DELAY", "2"), ("UNIQ_KEY", "U1")]);
    let r = store.put_message(&msg("Real", 3, b"hello", &p)).unwrap();
    // A level above the highest is lowered to it.
    let p9 = props(&[("DELAY", "9")]);
    let r9 = store.put_message(&msg("Real", 1, b"late", &p9)).unwrap();
    // Not delayed: no DELAY, DELAY=0.
    let p0 = props(&[("DELAY", "0")]);
    store.put_message(&msg("Real", 0, b"now", &p0)).unwrap();
    wait_dispatched(&store, "Real", 0, 1, 5);
    wait_dispatched(&store, SCHEDULE_TOPIC, 1, 1, 5);
    wait_dispatched(&store, SCHEDULE_TOPIC, 2, 1, 5);
    assert_eq!(store.get_max_offset_in_queue("Real", 3), 0);

    let parked = store.look_message_by_offset(r.append.wrote_offset).unwrap();
    let Scan::Message(rec) = scan_record(parked.bytes(), false) else {
        panic!()
    };
    assert_eq!((rec.topic, rec.queue_id), (SCHEDULE_TOPIC, 1));
    assert_eq!(prop(parked.bytes(), "REAL_TOPIC").as_deref(), Some("Real"));
    assert_eq!(prop(parked.bytes(), "REAL_QID").as_deref(), Some("3"));
    let r9_bytes = store
        .look_message_by_offset(r9.append.wrote_offset)
        .unwrap();
    assert_eq!(prop(r9_bytes.bytes(), "DELAY").as_deref(), Some("3"));

    // The unit's tags code is the delivery time.
    let units = store.get_consume_queue_units(SCHEDULE_TOPIC, 1, 0, 100);
    assert_eq!((units.min_offset, units.max_offset), (0, 1));
    let u = units.units[0];
    assert_eq!(u.offset, r.append.wrote_offset);
    assert_eq!(u.tags_code, r.append.store_timestamp + 2000);
    let far = store
        .get_consume_queue_units(SCHEDULE_TOPIC, 2, 0, 100)
        .units[0];
    assert_eq!(far.tags_code, r9.append.store_timestamp + 3_600_000);

    let out = store.deliver_scheduled(&[(u.offset, u.size)]);
    assert_eq!((out.processed, out.delivered, out.skipped), (1, 1, 0));
    assert!(out.error.is_none());
    wait_dispatched(&store, "Real", 3, 1, 5);
    let got = store.get_message("Real", 3, 0, 1, None);
    let bytes = got.messages[0].bytes();
    let Scan::Message(d) = scan_record(bytes, false) else {
        panic!()
    };
    assert_eq!(
        (d.body, d.flag, d.born_timestamp, d.reconsume_times),
        (&b"hello"[..], 5, 42, 2)
    );
    assert_eq!(prop(bytes, "DELAY"), None);
    assert_eq!(prop(bytes, "UNIQ_KEY").as_deref(), Some("U1"));
    assert_eq!(prop(bytes, "TAGS").as_deref(), Some("A"));
    // The delivered message is filtered by its tag like any other.
    let tag_a = i64::from(rmq_common::java_string_hash("A"));
    let cq = store.get_consume_queue_units("Real", 3, 0, 1);
    assert_eq!(cq.units[0].tags_code, tag_a);

    // Without UNIQ_KEY, delivery gives it the parked record's offset id.
    let p = props(&[("DELAY", "1")]);
    let r = store.put_message(&msg("Real", 2, b"anon", &p)).unwrap();
    wait_dispatched(&store, SCHEDULE_TOPIC, 0, 1, 5);
    let u = store.get_consume_queue_units(SCHEDULE_TOPIC, 0, 0, 1).units[0];
    assert_eq!(store.deliver_scheduled(&[(u.offset, u.size)]).delivered, 1);
    wait_dispatched(&store, "Real", 2, 1, 5);
    let got = store.get_message("Real", 2, 0, 1, None);
    assert_eq!(
        prop(got.messages[0].bytes(), "UNIQ_KEY"),
        Some(r.append.msg_id(host()))
    );
    store.shutdown().unwrap();
}

#[test]
fn a_batch_parks_its_delayed_messages_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let (plain, delayed) = (props(&[("K", "v")]), props(&[("DELAY", "2")]));
    let msgs = [
        msg("M", 0, b"a", &plain),
        msg("M", 0, b"b", &delayed),
        msg("M", 0, b"c", &plain),
        msg("M", 0, b"d", &delayed),
    ];
    store.put_messages(&msgs).unwrap();
    wait_dispatched(&store, "M", 0, 2, 5);
    wait_dispatched(&store, SCHEDULE_TOPIC, 1, 2, 5);
    assert_eq!(
        bodies(&store, "M", 0, 0, 10),
        [b"a".to_vec(), b"c".to_vec()]
    );
    assert_eq!(
        bodies(&store, SCHEDULE_TOPIC, 1, 0, 10),
        [b"b".to_vec(), b"d".to_vec()]
    );
    assert_eq!(
        store.get_max_offset_in_queue("M", 0),
        2,
        "nothing else in M"
    );
}

#[test]
fn level_queues_are_read_across_files_and_bad_units_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let p = props(&[("DELAY", "1")]);
    let bodies: Vec<Vec<u8>> = (0..40).map(|i| format!("m{i}").into_bytes()).collect();
    // A batch: each delayed message is parked.
    let msgs: Vec<MessageToStore<'_>> = bodies.iter().map(|b| msg("B", 0, b, &p)).collect();
    store.put_messages(&msgs).unwrap();
    wait_dispatched(&store, SCHEDULE_TOPIC, 0, 40, 5);
    let all = store.get_consume_queue_units(SCHEDULE_TOPIC, 0, 0, 1000);
    assert_eq!(all.units.len(), 40, "three ConsumeQueue files of 16 units");
    let some = store.get_consume_queue_units(SCHEDULE_TOPIC, 0, 14, 5);
    assert_eq!(some.units, all.units[14..19]);
    assert!(store
        .get_consume_queue_units(SCHEDULE_TOPIC, 0, 40, 5)
        .units
        .is_empty());
    assert!(store
        .get_consume_queue_units("Nope", 0, 0, 5)
        .units
        .is_empty());
    let ts: Vec<i64> = all.units.iter().map(|u| u.tags_code).collect();
    assert!(
        ts.windows(2).all(|w| w[0] <= w[1]),
        "delivery times in order"
    );

    // A unit that does not point at a parked message (a plain record, or nothing) is skipped.
    let plain = store
        .put_message(&msg("Plain", 0, b"x", &props(&[])))
        .unwrap();
    let units: Vec<(i64, i32)> = all.units[..3].iter().map(|u| (u.offset, u.size)).collect();
    let mixed = [
        units[0],
        (plain.append.wrote_offset, 1),
        (i64::MAX / 2, 100),
        units[1],
        units[2],
    ];
    let out = store.deliver_scheduled(&mixed);
    assert_eq!((out.processed, out.delivered, out.skipped), (5, 3, 2));
    wait_dispatched(&store, "B", 0, 3, 5);

    // A refused write stops the call where it is.
    store.shutdown().unwrap();
    let rest: Vec<(i64, i32)> = all.units[3..].iter().map(|u| (u.offset, u.size)).collect();
    let out = store.deliver_scheduled(&rest);
    assert_eq!((out.processed, out.delivered), (0, 0));
    assert!(matches!(
        out.error,
        Some(StoreError::ServiceNotAvailable(_))
    ));
}

#[test]
fn a_delay_that_is_not_a_level_is_refused_and_transaction_halves_are_not_parked() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let p = props(&[("DELAY", "soon")]);
    let e = store.put_message(&msg("T", 0, b"x", &p)).unwrap_err();
    assert!(matches!(e, StoreError::MessageIllegal(_)), "{e}");
    assert!(e.to_string().contains("DELAY property \"soon\""), "{e}");
    let p = props(&[("DELAY", "1")]);
    let half = MessageToStore {
        sys_flag: rmq_common::sys_flag::TRANSACTION_PREPARED_TYPE,
        ..msg("T", 0, b"half", &p)
    };
    let r = store.put_message(&half).unwrap();
    let sel = store.look_message_by_offset(r.append.wrote_offset).unwrap();
    let Scan::Message(rec) = scan_record(sel.bytes(), false) else {
        panic!()
    };
    assert_eq!(rec.topic, "T");
    store.shutdown().unwrap();
}
