//! End-to-end tests of the data path: a real broker on 127.0.0.1:0 over a real store in a
//! tempdir, driven by `rmq_remoting::connect`: every send form, pulls and long polling, refusals,
//! SYNC_FLUSH acks, and what other clients' requests look like. Offsets, heartbeats, admin and
//! queue locks are in `admin.rs`.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_common::Properties;
use rmq_protocol::body::TopicConfigSerializeWrapper;
use rmq_protocol::header::{
    pull_sys_flag, PullMessageResponseHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
};
use rmq_protocol::message_decoder::{decode_messages, encode_batch, BatchMessage};
use rmq_protocol::{
    CommandHeader, ExtFields, RemotingCommand, RequestCode, ResponseCode, SerializeType,
};
use rmq_remoting::Connection;

mod common;
use common::{pull, send_ok, send_v2, Env, T};

async fn start(dir: &Path, extra: &[(&str, &str)]) -> Env {
    common::start(dir, extra, |_| {}).await
}

/// A broker to which every send form has appended to `Auto1` queue 1 (a new topic): V2 with
/// the JSON header ("m0", TagA), V2 with the ROCKETMQ header ("m1", TagB), V1 ("m2", TagA)
/// and a batch of three ("b0".."b2", TagC, flag 7); the four answers.
async fn six_sent(dir: &Path) -> (Env, Connection, Vec<SendMessageResponseHeader>) {
    let env = start(dir, &[]).await;
    let c = env.client().await;
    // V2, JSON header, to a new topic: auto-created from TBW102 with min(4, 8) queues.
    let r1 = send_ok(&c, send_v2("Auto1", 1, "TagA", b"m0")).await;
    // V2 with the ROCKETMQ binary header.
    let r2 = send_ok(
        &c,
        send_v2("Auto1", 1, "TagB", b"m1").with_serialize_type(SerializeType::RocketMq),
    )
    .await;
    // V1 (code 10).
    let v1: SendMessageRequestHeader =
        SendMessageRequestHeaderV2::from_ext_fields(&send_v2("Auto1", 1, "TagA", b"").ext_fields)
            .unwrap()
            .into();
    let r3 = send_ok(
        &c,
        RemotingCommand::request_with_header(RequestCode::SEND_MESSAGE.0, &v1)
            .with_body(Bytes::from_static(b"m2")),
    )
    .await;
    // Batch of 3.
    let batch: Vec<BatchMessage> = (0..3)
        .map(|i| {
            let mut p = Properties::new();
            p.put("TAGS", "TagC");
            p.put("UNIQ_KEY", format!("U{i}"));
            BatchMessage {
                flag: 7,
                body: Bytes::from(format!("b{i}")),
                properties: p,
            }
        })
        .collect();
    let mut req = send_v2("Auto1", 1, "", b"");
    req.code = RequestCode::SEND_BATCH_MESSAGE.0;
    req.ext_fields.insert("m", "true");
    req.ext_fields.insert("i", "WAIT\u{1}true\u{2}");
    let rb = send_ok(&c, req.with_body(encode_batch(&batch).unwrap())).await;

    (env, c, vec![r1, r2, r3, rb])
}

#[tokio::test]
async fn every_send_form_appends_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (env, _c, sent) = six_sent(dir.path()).await;
    assert_eq!((sent[0].queue_id, sent[0].queue_offset), (1, 0));
    let (host, phy) = rmq_common::decode_offset_msg_id(&sent[0].msg_id).unwrap();
    assert_eq!((host, phy), ("127.0.0.1:10911".parse().unwrap(), 0));
    let offsets: Vec<i64> = sent.iter().map(|h| h.queue_offset).collect();
    assert_eq!(offsets, [0, 1, 2, 3]);
    // The batch's answer names its three messages.
    assert_eq!(sent[3].msg_id.split(',').count(), 3);
    env.stop().await;
}

#[tokio::test]
async fn a_send_to_a_new_topic_creates_persists_and_registers_it() {
    let dir = tempfile::tempdir().unwrap();
    let (env, _c, _) = six_sent(dir.path()).await;
    let tc = env.ctl.broker().topics.select("Auto1").unwrap();
    assert_eq!(
        (tc.read_queue_nums, tc.write_queue_nums, tc.perm),
        (4, 4, 6)
    );
    let file = std::fs::read_to_string(dir.path().join("config/topics.json")).unwrap();
    let w: TopicConfigSerializeWrapper =
        rmq_protocol::json_compat::from_slice(file.as_bytes()).unwrap();
    assert!(w.topic_config_table.contains_key("Auto1"));
    assert!(env
        .ctl
        .register_body()
        .topic_config_serialize_wrapper
        .topic_config_table
        .contains_key("Auto1"));

    env.stop().await;
}

#[tokio::test]
async fn a_pull_returns_the_messages_as_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, sent) = six_sent(dir.path()).await;
    env.wait_dispatched("Auto1", 1, 6).await;
    // Pull everything.
    let r = c.request(pull("Auto1", 1, 0, "*", 0), T).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let h = PullMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap();
    assert_eq!((h.next_begin_offset, h.min_offset, h.max_offset), (6, 0, 6));
    let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
    let bodies: Vec<&[u8]> = msgs.iter().map(|m| &m.body[..]).collect();
    assert_eq!(bodies, [&b"m0"[..], b"m1", b"m2", b"b0", b"b1", b"b2"]);
    assert_eq!(msgs[0].msg_id, sent[0].msg_id);
    assert_eq!(msgs[3].flag, 7);
    assert_eq!(msgs[4].properties.get("UNIQ_KEY"), Some("U1"));
    assert_eq!(msgs[0].properties.get("CLUSTER"), Some("DefaultCluster"));
    // As RocketMQ does: a single message is stored without WAIT (sent as true), a batch's
    // messages keep it.
    assert_eq!(msgs[0].properties.get("WAIT"), None);
    assert_eq!(msgs[0].properties.get("KEYS"), Some("k1"));
    assert_eq!(msgs[3].properties.get("WAIT"), Some("true"));
    env.stop().await;
}

#[tokio::test]
async fn a_pull_filters_by_tag_and_says_where_the_offset_stands() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, _) = six_sent(dir.path()).await;
    env.wait_dispatched("Auto1", 1, 6).await;
    // Tag filter: TagA only → m0, m2.
    let r = c
        .request(pull("Auto1", 1, 0, "TagA || TagX", 0), T)
        .await
        .unwrap();
    let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        msgs.iter().map(|m| &m.body[..]).collect::<Vec<_>>(),
        [&b"m0"[..], b"m2"]
    );
    // From offset 3 with TagA: nothing matches → retry immediately, offset moves on.
    let r = c.request(pull("Auto1", 1, 3, "TagA", 0), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::PULL_RETRY_IMMEDIATELY.0);
    assert_eq!(
        PullMessageResponseHeader::from_ext_fields(&r.ext_fields)
            .unwrap()
            .next_begin_offset,
        6
    );
    // At the max offset without suspend: not found; far past it: offset moved.
    let r = c.request(pull("Auto1", 1, 6, "*", 0), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::PULL_NOT_FOUND.0);
    let r = c.request(pull("Auto1", 1, 60, "*", 0), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::PULL_OFFSET_MOVED.0);
    env.stop().await;
}

#[tokio::test]
async fn long_polling_wakes_on_arrival_and_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    send_ok(&c, send_v2("LP", 0, "TagA", b"first")).await;
    env.wait_dispatched("LP", 0, 1).await;
    // Nothing arrives: PULL_NOT_FOUND after the suspend timeout.
    let t0 = Instant::now();
    let r = c.request(pull("LP", 0, 1, "*", 400), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::PULL_NOT_FOUND.0);
    assert!(
        t0.elapsed() >= Duration::from_millis(380),
        "{:?}",
        t0.elapsed()
    );
    // A send arrives while held: answered right after.
    let c2 = c.clone();
    let held = tokio::spawn(async move { c2.request(pull("LP", 0, 1, "*", 10_000), T).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.is_finished());
    let sent = Instant::now();
    send_ok(&c, send_v2("LP", 0, "TagA", b"second")).await;
    let r = held.await.unwrap().unwrap();
    assert!(
        sent.elapsed() < Duration::from_millis(150),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(r.code, 0);
    let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(&msgs[0].body[..], b"second");
    env.stop().await;
}

/// LITE_PULL_MESSAGE (361), as the 5.x `DefaultLitePullConsumer` sends it (sysFlag with the
/// lite bit): served as PULL_MESSAGE, long polling included.
#[tokio::test]
async fn lite_pull_message_is_served_like_pull_message() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    send_ok(&c, send_v2("Lite", 0, "TagA", b"l0")).await;
    send_ok(&c, send_v2("Lite", 0, "TagB", b"l1")).await;
    env.wait_dispatched("Lite", 0, 2).await;
    let lite = |offset: i64, sub: &str, suspend_ms: i64| {
        let mut req = pull("Lite", 0, offset, sub, suspend_ms);
        req.code = RequestCode::LITE_PULL_MESSAGE.0;
        let flag = pull_sys_flag::build(false, suspend_ms > 0, true, false)
            | pull_sys_flag::FLAG_LITE_PULL_MESSAGE;
        req.ext_fields.insert("sysFlag", flag.to_string());
        req
    };
    let r = c.request(lite(0, "*", 0), T).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        msgs.iter().map(|m| &m.body[..]).collect::<Vec<_>>(),
        [&b"l0"[..], b"l1"]
    );
    let r = c.request(lite(0, "TagB", 0), T).await.unwrap();
    let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        msgs.iter().map(|m| &m.body[..]).collect::<Vec<_>>(),
        [&b"l1"[..]]
    );
    // Held until the next message arrives.
    let c2 = c.clone();
    let held = tokio::spawn(async move { c2.request(lite(2, "*", 10_000), T).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!held.is_finished());
    send_ok(&c, send_v2("Lite", 0, "TagA", b"l2")).await;
    let r = held.await.unwrap().unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(&msgs[0].body[..], b"l2");
    env.stop().await;
}

#[tokio::test]
async fn illegal_messages_and_unknown_codes() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[("maxMessageSize", "2048")]).await;
    let c = env.client().await;
    // Apache 4.9.7's codes: TopicValidator.validateTopic answers SYSTEM_ERROR, a reserved
    // topic NO_PERMISSION (TBW102: SYSTEM_ERROR "reserved words"), an oversized body
    // MESSAGE_ILLEGAL.
    let long = "t".repeat(128);
    for (topic, body, code, needle) in [
        (
            "bad topic",
            &b"x"[..],
            ResponseCode::SYSTEM_ERROR,
            "illegal characters",
        ),
        (&*long, b"x", ResponseCode::SYSTEM_ERROR, "127"),
        (
            "TBW102",
            b"x",
            ResponseCode::SYSTEM_ERROR,
            "the topic[TBW102] is conflict with system reserved words.",
        ),
        (
            "SCHEDULE_TOPIC_XXXX",
            b"x",
            ResponseCode::NO_PERMISSION,
            "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
        ),
        (
            "OFFSET_MOVED_EVENT",
            b"x",
            ResponseCode::NO_PERMISSION,
            "forbidden",
        ),
        (
            "SELF_TEST_TOPIC",
            b"x",
            ResponseCode::NO_PERMISSION,
            "forbidden",
        ),
        (
            "SCHEDULE_TOPIC_XXXX_V2",
            b"x",
            ResponseCode::NO_PERMISSION,
            "forbidden",
        ),
        (
            "Big",
            &[0u8; 4096][..],
            ResponseCode::MESSAGE_ILLEGAL,
            "body size",
        ),
    ] {
        let r = c.request(send_v2(topic, 0, "a", body), T).await.unwrap();
        assert_eq!(r.code, code.0, "{topic}: {:?}", r.remark);
        assert!(
            r.remark.as_deref().unwrap_or("").contains(needle),
            "{:?}",
            r.remark
        );
    }
    let r = c.request(send_v2("Q", 9, "a", b"x"), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.0);
    let r = c
        .request(RemotingCommand::new_request(9999, ExtFields::new()), T)
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::REQUEST_CODE_NOT_SUPPORTED.0);
    assert_eq!(r.remark.as_deref(), Some("request type 9999 not supported"));
    env.stop().await;
}

#[tokio::test]
async fn sync_flush_acks_after_flush() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(
        dir.path(),
        &[
            ("flushDiskType", "SYNC_FLUSH"),
            ("flushIntervalCommitLog", "1000"),
        ],
    )
    .await;
    let c = env.client().await;
    for i in 0..5 {
        let h = send_ok(&c, send_v2("SF", 0, "a", format!("m{i}").as_bytes())).await;
        let (_, phy) = rmq_common::decode_offset_msg_id(&h.msg_id).unwrap();
        assert!(
            env.store.get_flushed_phy_offset() > phy,
            "acked before flush"
        );
    }
    env.stop().await;
}

/// Requests as RocketMQ's C++ core and the Go client send them, which Apache's broker accepts
/// (fastjson coerces): header booleans as "0", heartbeat enums as ordinals, `subVersion` and
/// `codeSet` elements as strings. The heartbeat's tag subscription must then filter pulls
/// that carry no subscription of their own.
#[tokio::test]
async fn other_clients_heartbeats_and_headers_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    for (i, tag) in ["TagA", "TagB", "TagA", "TagC"].into_iter().enumerate() {
        let mut req = send_v2("QT", 0, tag, format!("m{i}").as_bytes());
        req.ext_fields.insert("k", "0");
        req.ext_fields.insert("m", "0");
        send_ok(&c, req).await;
    }
    env.wait_dispatched("QT", 0, 4).await;
    let bodies = [
        // C++ core: ordinals (CONSUME_PASSIVELY, CLUSTERING, CONSUME_FROM_FIRST_OFFSET).
        r#"{"clientID":"10.0.0.9@cpp","consumerDataSet":[{"groupName":"CPP","consumeType":1,"messageModel":1,"consumeFromWhere":4,"unitMode":"0","subscriptionDataSet":[{"topic":"QT","subString":"TagA","tagsSet":["TagA"],"codeSet":[2598919],"subVersion":"1795513573873","expressionType":"TAG","classFilterMode":"false"}]}],"producerDataSet":[{"groupName":"P"}]}"#,
        // Go client: codeSet elements as strings.
        r#"{"clientID":"10.0.0.9@go","producerDataSet":[],"consumerDataSet":[{"groupName":"GO","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","unitMode":false,"subscriptionDataSet":[{"classFilterMode":false,"topic":"QT","subString":"TagA","tagsSet":["TagA"],"codeSet":["2598919"],"subVersion":1795513573873,"expressionType":"TAG"}]}]}"#,
    ];
    for (body, group) in bodies.into_iter().zip(["CPP", "GO"]) {
        let hb = RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new())
            .with_body(Bytes::from_static(body.as_bytes()));
        let r = c.request(hb, T).await.unwrap();
        assert_eq!(r.code, 0, "{group}: {:?}", r.remark);
        let mut p = pull("QT", 0, 0, "*", 0);
        p.ext_fields.remove("subscription");
        p.ext_fields.insert("sysFlag", "0");
        p.ext_fields.insert("consumerGroup", group);
        let r = c.request(p, T).await.unwrap();
        assert_eq!(r.code, 0, "{group}: {:?}", r.remark);
        let msgs = decode_messages(r.body.as_ref().unwrap()).unwrap();
        let got: Vec<_> = msgs.iter().map(|m| m.body.as_ref().to_vec()).collect();
        assert_eq!(got, [b"m0".to_vec(), b"m2".to_vec()], "{group}");
    }
    // A heartbeat rmq cannot read says which field, which value and what was expected.
    let hb = RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new()).with_body(
        Bytes::from_static(
            br#"{"clientID":"x","consumerDataSet":[{"groupName":"G","consumeType":9}]}"#,
        ),
    );
    let r = c.request(hb, T).await.unwrap();
    let remark = r.remark.unwrap_or_default();
    assert!(
        remark.contains("consumerDataSet[0].consumeType: invalid value 9"),
        "{remark}"
    );
    env.stop().await;
}

/// A topic is created with 0 to MAX_QUEUE_NUMS queues per broker: more would make every
/// client of its route allocate one queue object per claimed queue.
#[tokio::test]
async fn absurd_queue_counts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let mut req =
        RemotingCommand::new_request(RequestCode::UPDATE_AND_CREATE_TOPIC.0, ExtFields::new());
    for (k, v) in [
        ("topic", "Huge"),
        ("defaultTopic", "TBW102"),
        ("readQueueNums", "100000000"),
        ("writeQueueNums", "4"),
        ("perm", "6"),
        ("topicFilterType", "SINGLE_TAG"),
        ("topicSysFlag", "0"),
        ("order", "false"),
    ] {
        req.ext_fields.insert(k, v);
    }
    let r = c.request(req, T).await.unwrap();
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.0);
    let remark = r.remark.unwrap_or_default();
    assert!(
        remark.contains("readQueueNums = 100000000 is out of range"),
        "{remark}"
    );
    assert!(env.ctl.broker().topics.select("Huge").is_none());
    env.stop().await;
}

#[tokio::test]
async fn negative_counts_are_refused_not_read_as_zero() {
    use rmq_protocol::header::{QueryConsumeQueueRequestHeader, QueryMessageRequestHeader};
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    send_ok(&c, send_v2("NegT", 0, "a", b"x")).await;
    env.wait_dispatched("NegT", 0, 1).await; // the queue exists once dispatched
    let query = QueryMessageRequestHeader {
        topic: "NegT".into(),
        key: "k1".into(),
        max_num: -1,
        begin_timestamp: 0,
        end_timestamp: i64::MAX,
    };
    let r = common::call(
        &c,
        RemotingCommand::request_with_header(RequestCode::QUERY_MESSAGE.0, &query),
    )
    .await;
    common::assert_refused(
        &r,
        ResponseCode::SYSTEM_ERROR,
        "maxNum is -1 in the request header: it must not be negative",
    );
    let units = QueryConsumeQueueRequestHeader {
        topic: "NegT".into(),
        queue_id: 0,
        index: 0,
        count: -5,
        consumer_group: None,
    };
    let r = common::call(
        &c,
        RemotingCommand::request_with_header(RequestCode::QUERY_CONSUME_QUEUE.0, &units),
    )
    .await;
    common::assert_refused(&r, ResponseCode::SYSTEM_ERROR, "count is -5");
    env.stop().await;
}
