//! Transactional messages end to end on a real broker (127.0.0.1:0, tempdir store): half
//! messages stay out of their topic, END_TRANSACTION commits or rolls back with op records,
//! the header must name the half, and CHECK_TRANSACTION_STATE reaches a producer connection.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::sys_flag::{
    transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
};
use rmq_common::Properties;
use rmq_protocol::body::{HeartbeatData, ProducerData};
use rmq_protocol::header::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};
use rmq_protocol::message_decoder::decode_message_at;
use rmq_protocol::{
    CommandHeader, ExtFields, RemotingCommand, RemotingJson, RequestCode, ResponseCode,
};
use rmq_remoting::{connect, Connection, RequestHandler};

mod common;
use common::{assert_refused, call, send_header, send_ok, send_request, Env, Recorder, T};

const HALF: &str = "RMQ_SYS_TRANS_HALF_TOPIC";
const OP: &str = "RMQ_SYS_TRANS_OP_HALF_TOPIC";

async fn start(dir: &Path, reject: bool) -> Env {
    common::start(dir, &[], |c| c.reject_transaction_message = reject).await
}

fn half_send(topic: &str, queue: i32, group: &str, body: &[u8]) -> RemotingCommand {
    let mut p = Properties::new();
    p.put("TAGS", "TagT");
    p.put("KEYS", "order-1");
    p.put("UNIQ_KEY", format!("U-{}", String::from_utf8_lossy(body)));
    p.put("TRAN_MSG", "true");
    p.put("PGROUP", group);
    let header = SendMessageRequestHeaderV2 {
        f: TRANSACTION_PREPARED_TYPE,
        h: 5,
        ..send_header(group, topic, queue, p.encode())
    };
    send_request(&header, body)
}

async fn send_half(c: &Connection, topic: &str, body: &[u8]) -> SendMessageResponseHeader {
    send_ok(c, half_send(topic, 2, "PG", body)).await
}

fn end(sent: &SendMessageResponseHeader, group: &str, state: i32) -> EndTransactionRequestHeader {
    EndTransactionRequestHeader {
        producer_group: group.into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset: rmq_common::decode_offset_msg_id(&sent.msg_id).unwrap().1,
        commit_or_rollback: state,
        from_transaction_check: false,
        msg_id: "U".into(),
        transaction_id: None,
        broker_name: None,
    }
}

async fn ask(c: &Connection, h: &EndTransactionRequestHeader) -> RemotingCommand {
    call(
        c,
        RemotingCommand::request_with_header(RequestCode::END_TRANSACTION.0, h),
    )
    .await
}

/// A broker with two half messages of "PG" in `TxT` queue 2 ("a", then "b").
async fn two_halves(
    dir: &Path,
) -> (
    Env,
    Connection,
    SendMessageResponseHeader,
    SendMessageResponseHeader,
) {
    let env = start(dir, false).await;
    let c = env.client().await;
    let a = send_half(&c, "TxT", b"a").await;
    let b = send_half(&c, "TxT", b"b").await;
    (env, c, a, b)
}

#[tokio::test]
async fn a_half_message_waits_in_the_half_topic_naming_its_real_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (env, _c, a, b) = two_halves(dir.path()).await;
    // The answer names the real queue and the half queue's offsets.
    assert_eq!((a.queue_id, a.queue_offset), (2, 0));
    assert_eq!((b.queue_id, b.queue_offset), (2, 1));
    let halves = env.read(HALF, 0, 0, 2).await;
    assert_eq!(halves.len(), 2);
    let h = &halves[0];
    assert_eq!(h.properties.get("REAL_TOPIC"), Some("TxT"));
    assert_eq!(h.properties.get("REAL_QID"), Some("2"));
    assert_eq!(transaction_value(h.sys_flag), TRANSACTION_NOT_TYPE);
    assert_eq!(env.store.get_max_offset_in_queue("TxT", 2), 0);
    env.stop().await;
}

#[tokio::test]
async fn end_transaction_must_name_the_half_message() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, a, _b) = two_halves(dir.path()).await;
    let r = ask(&c, &end(&a, "OtherGroup", TRANSACTION_COMMIT_TYPE)).await;
    assert_refused(&r, ResponseCode::SYSTEM_ERROR, "producer group wrong");
    let mut wrong = end(&a, "PG", TRANSACTION_COMMIT_TYPE);
    wrong.tran_state_table_offset = 7;
    let r = ask(&c, &wrong).await;
    assert_refused(&r, ResponseCode::SYSTEM_ERROR, "state table offset wrong");
    wrong = end(&a, "PG", TRANSACTION_COMMIT_TYPE);
    wrong.commit_log_offset += 1;
    let r = ask(&c, &wrong).await;
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.0);
    env.stop().await;
}

#[tokio::test]
async fn a_commit_stores_the_message_in_its_topic_without_transaction_properties() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, a, _b) = two_halves(dir.path()).await;
    let half = env.read(HALF, 0, 0, 1).await.remove(0);
    let r = ask(&c, &end(&a, "PG", TRANSACTION_COMMIT_TYPE)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let got = env.read("TxT", 2, 0, 1).await;
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(&m.body[..], b"a");
    assert_eq!(m.flag, 5);
    assert_eq!(m.properties.get("PGROUP"), Some("PG"));
    assert_eq!(m.properties.get("UNIQ_KEY"), Some("U-a"));
    assert_eq!(m.properties.get("TAGS"), Some("TagT"));
    for gone in ["TRAN_MSG", "REAL_TOPIC", "REAL_QID"] {
        assert_eq!(m.properties.get(gone), None, "{gone}");
    }
    assert_eq!(transaction_value(m.sys_flag), TRANSACTION_COMMIT_TYPE);
    assert_eq!(m.prepared_transaction_offset, half.commit_log_offset);
    // Its op record marks the half done.
    let ops = env.read(OP, 0, 0, 1).await;
    assert_eq!((&ops[0].body[..], ops[0].tags()), (&b"0"[..], Some("d")));

    // The committed message's offset is not a half message.
    let mut not_half = end(&a, "PG", TRANSACTION_COMMIT_TYPE);
    not_half.commit_log_offset = m.commit_log_offset;
    let r = ask(&c, &not_half).await;
    assert_refused(&r, ResponseCode::SYSTEM_ERROR, "not a half message");
    env.stop().await;
}

#[tokio::test]
async fn a_rollback_writes_only_an_op_record_and_unknown_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, a, b) = two_halves(dir.path()).await;
    // Unknown: no answer, nothing written (sent oneway, as producers do).
    let unknown = RemotingCommand::request_with_header(
        RequestCode::END_TRANSACTION.0,
        &end(&a, "PG", TRANSACTION_NOT_TYPE),
    );
    c.oneway(unknown).await.unwrap();
    let r = ask(&c, &end(&b, "PG", TRANSACTION_ROLLBACK_TYPE)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    // One op record, b's (half queue offset 1): the unknown one, sent first, wrote none.
    let ops = env.read(OP, 0, 0, 1).await;
    let op_bodies: Vec<&[u8]> = ops.iter().map(|m| &m.body[..]).collect();
    assert_eq!(op_bodies, [&b"1"[..]]);
    assert_eq!(ops[0].tags(), Some("d"));
    assert_eq!(env.store.get_max_offset_in_queue("TxT", 2), 0);
    env.stop().await;
}

#[tokio::test]
async fn reject_transaction_message() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), true).await;
    let c = env.client().await;
    let r = call(&c, half_send("TxR", 0, "PG", b"x")).await;
    assert_refused(
        &r,
        ResponseCode::NO_PERMISSION,
        "transaction message is forbidden",
    );
    env.stop().await;
}

/// A SEND_BATCH_MESSAGE of `entries` (each `TRAN_MSG` or not) with header sys flag `sys_flag`.
fn batch_send(topic: &str, sys_flag: i32, entries: &[bool]) -> RemotingCommand {
    let mut body = bytes::BytesMut::new();
    for (i, transactional) in entries.iter().enumerate() {
        let mut p = Properties::new();
        p.put("UNIQ_KEY", format!("B-{i}"));
        if *transactional {
            p.put("TRAN_MSG", "true");
            p.put("PGROUP", "PG");
        }
        rmq_protocol::message_decoder::encode_batch_entry(
            &mut body,
            0,
            format!("entry-{i}").as_bytes(),
            p.encode().as_bytes(),
        )
        .unwrap();
    }
    let mut req = half_send(topic, 1, "PG", b"");
    req.code = RequestCode::SEND_BATCH_MESSAGE.0;
    req.ext_fields.insert("f", sys_flag.to_string());
    req.ext_fields.insert("i", String::new());
    req.with_body(body.freeze())
}

#[tokio::test]
async fn a_flagged_batch_parks_one_half_per_entry_and_mixed_batches_are_illegal() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), false).await;
    let c = connect(env.addr, None, T).await.unwrap();
    let r = c
        .request(
            batch_send("TxB", TRANSACTION_PREPARED_TYPE, &[true, true, true]),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let sent = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap();
    assert_eq!(sent.msg_id.split(',').count(), 3);
    let halves = env.read(HALF, 0, 0, 3).await;
    assert_eq!(halves.len(), 3);
    assert!(halves
        .iter()
        .all(|h| h.properties.get("REAL_TOPIC") == Some("TxB")));
    assert_eq!(
        env.store.get_max_offset_in_queue("TxB", 1),
        0,
        "halves stay out of the topic"
    );
    for (flag, entries, says) in [
        (
            TRANSACTION_PREPARED_TYPE,
            &[true, false][..],
            "message 1 is not transactional",
        ),
        (
            TRANSACTION_NOT_TYPE,
            &[false, true][..],
            "message 1 of the batch is transactional",
        ),
    ] {
        let r = call(&c, batch_send("TxB", flag, entries)).await;
        assert_refused(&r, ResponseCode::MESSAGE_ILLEGAL, says);
    }
    assert_eq!(
        env.store.get_max_offset_in_queue("TxB", 1),
        0,
        "nothing of them was stored"
    );
    assert_eq!(env.store.get_max_offset_in_queue(HALF, 0), 3);
    env.stop().await;
}

#[tokio::test]
async fn check_transaction_state_goes_to_a_producer_connection() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), false).await;
    let rec = Arc::new(Recorder::default());
    let producer = connect(env.addr, Some(rec.clone() as Arc<dyn RequestHandler>), T)
        .await
        .unwrap();
    let hb = HeartbeatData {
        client_id: "10.0.0.9@p".into(),
        producer_data_set: vec![ProducerData {
            group_name: "PG".into(),
        }],
        consumer_data_set: vec![],
    };
    let r = producer
        .request(
            RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new())
                .with_body(hb.to_json_bytes().unwrap()),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.code, 0);
    let sent = send_half(&producer, "TxC", b"c").await;
    let half_offset = rmq_common::decode_offset_msg_id(&sent.msg_id).unwrap().1;

    let channels = env.ctl.broker().producers.channels("PG");
    assert_eq!(channels.len(), 1);
    assert_eq!(channels[0].client_id, "10.0.0.9@p");
    let conn_id = channels[0].conn.id();
    assert!(env
        .ctl
        .check_transaction_state(conn_id, half_offset)
        .await
        .unwrap());
    // Not a producer connection, or no half there.
    assert!(!env
        .ctl
        .check_transaction_state(conn_id + 1000, half_offset)
        .await
        .unwrap());
    assert!(env
        .ctl
        .check_transaction_state(conn_id, half_offset + 1)
        .await
        .is_err());

    let t0 = Instant::now();
    while rec.0.lock().unwrap().is_empty() {
        assert!(t0.elapsed() < T, "no check arrived");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let check = rec.0.lock().unwrap().remove(0);
    assert_eq!(check.code, RequestCode::CHECK_TRANSACTION_STATE.0);
    assert!(check.is_oneway());
    let h = CheckTransactionStateRequestHeader::from_ext_fields(&check.ext_fields).unwrap();
    assert_eq!(h.commit_log_offset, half_offset);
    assert_eq!(h.tran_state_table_offset, sent.queue_offset);
    assert_eq!(h.msg_id.as_deref(), Some("U-c"));
    assert_eq!(h.transaction_id.as_deref(), Some("U-c"));
    assert_eq!(h.offset_msg_id.as_deref(), Some(sent.msg_id.as_str()));
    let m = decode_message_at(check.body.as_ref().unwrap(), 0).unwrap();
    assert_eq!((m.topic.as_str(), m.queue_id), ("TxC", 2));
    assert_eq!(m.properties.get("PGROUP"), Some("PG"));
    assert_eq!(&m.body[..], b"c");

    // A closed producer connection leaves the group.
    producer.close();
    let t0 = Instant::now();
    while !env.ctl.broker().producers.channels("PG").is_empty() {
        assert!(t0.elapsed() < T, "closed producer still registered");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    env.stop().await;
}
