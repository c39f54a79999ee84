//! End-to-end tests: a real broker on 127.0.0.1:0 over a real store in a tempdir, driven by
//! `rmq_remoting::connect`.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_common::Properties;
use rmq_protocol::body::{
    ConsumeStats, ConsumeType, ConsumerConnection, ConsumerData,
    GetConsumerListByGroupResponseBody, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody,
    MessageModel, MessageQueue, OffsetWrapper, ResetOffsetBody, SubscriptionData,
    TopicConfigSerializeWrapper, TopicStatsTable,
};
use rmq_protocol::header::{
    pull_sys_flag, GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader, GetTopicStatsInfoRequestHeader, PullMessageRequestHeader,
    PullMessageResponseHeader, QueryConsumerOffsetRequestHeader, ResetOffsetRequestHeader,
    SendMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::message_decoder::{decode_messages, encode_batch, BatchMessage};
use rmq_protocol::{
    CommandHeader, ExtFields, LanguageCode, RemotingCommand, RemotingJson, RequestCode,
    ResponseCode, SerializeType,
};
use rmq_remoting::{connect, Connection, RequestHandler};

mod common;
use common::{send_header, send_ok, send_request, Env, Recorder, T};

async fn start(dir: &Path, extra: &[(&str, &str)]) -> Env {
    common::start(dir, extra, |_| {}).await
}

fn props(tag: &str, keys: &str) -> String {
    let mut p = Properties::new();
    p.put("TAGS", tag);
    p.put("KEYS", keys);
    p.put("WAIT", "true");
    p.encode()
}

fn send_v2(topic: &str, queue: i32, tag: &str, body: &[u8]) -> RemotingCommand {
    send_request(&send_header("PG", topic, queue, props(tag, "k1")), body)
}

fn pull(topic: &str, queue: i32, offset: i64, sub: &str, suspend_ms: i64) -> RemotingCommand {
    RemotingCommand::request_with_header(
        RequestCode::PULL_MESSAGE.0,
        &PullMessageRequestHeader {
            consumer_group: "CG".into(),
            topic: topic.into(),
            queue_id: queue,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::build(false, suspend_ms > 0, true, false),
            commit_offset: 0,
            suspend_timeout_millis: suspend_ms,
            subscription: Some(sub.into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            broker_name: None,
        },
    )
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

fn offset_update(group: &str, q: i32, off: i64) -> RemotingCommand {
    RemotingCommand::request_with_header(
        RequestCode::UPDATE_CONSUMER_OFFSET.0,
        &UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: "OT".into(),
            queue_id: q,
            commit_offset: off,
            broker_name: None,
        },
    )
}

fn offset_query(group: &str, q: i32) -> RemotingCommand {
    RemotingCommand::request_with_header(
        RequestCode::QUERY_CONSUMER_OFFSET.0,
        &QueryConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: "OT".into(),
            queue_id: q,
            broker_name: None,
        },
    )
}

#[tokio::test]
async fn offsets_update_query_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let r = c.request(offset_update("G1", 2, 42), T).await.unwrap();
    assert_eq!(r.code, 0);
    c.oneway(offset_update("G1", 3, 7)).await.unwrap();
    let r = c.request(offset_query("G1", 2), T).await.unwrap();
    assert_eq!(r.ext_fields["offset"], "42");
    // No offset, queue starts at 0: offset 0.
    let r = c.request(offset_query("G2", 0), T).await.unwrap();
    assert_eq!((r.code, r.ext_fields["offset"].as_str()), (0, "0"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    env.stop().await;
    let text = std::fs::read_to_string(dir.path().join("config/consumerOffset.json")).unwrap();
    assert!(text.contains("OT@G1"), "{text}");
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let r = c.request(offset_query("G1", 3), T).await.unwrap();
    assert_eq!(r.ext_fields["offset"], "7");
    env.stop().await;
}

fn heartbeat(client_id: &str) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: "HG".into(),
            consume_type: ConsumeType::ConsumePassively,
            subscription_data_set: vec![SubscriptionData {
                topic: "HT".into(),
                sub_string: "*".into(),
                ..SubscriptionData::default()
            }],
            ..ConsumerData::default()
        }],
        producer_data_set: vec![],
    };
    RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new())
        .with_body(data.to_json_bytes().unwrap())
}

#[tokio::test]
async fn heartbeat_retry_topic_consumer_list_and_notify() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let rec = Arc::new(Recorder::default());
    let c1 = connect(env.addr, Some(rec.clone() as Arc<dyn RequestHandler>), T)
        .await
        .unwrap();
    let r = c1.request(heartbeat("10.0.0.1@one"), T).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let retry = env.ctl.broker().topics.select("%RETRY%HG").unwrap();
    assert_eq!(retry.read_queue_nums, 1);
    let list = |c: Connection| async move {
        let r = c
            .request(
                RemotingCommand::request_with_header(
                    RequestCode::GET_CONSUMER_LIST_BY_GROUP.0,
                    &GetConsumerListByGroupRequestHeader {
                        consumer_group: "HG".into(),
                    },
                ),
                T,
            )
            .await
            .unwrap();
        GetConsumerListByGroupResponseBody::from_json_bytes(r.body.as_ref().unwrap())
            .unwrap()
            .consumer_id_list
    };
    assert_eq!(list(c1.clone()).await, ["10.0.0.1@one"]);
    let before = rec.0.lock().unwrap().len();
    let c2 = env.client().await;
    c2.request(heartbeat("10.0.0.2@two"), T).await.unwrap();
    assert_eq!(list(c2.clone()).await, ["10.0.0.1@one", "10.0.0.2@two"]);
    let t0 = Instant::now();
    loop {
        let got = rec.0.lock().unwrap()[before..].iter().any(|r| {
            r.code == RequestCode::NOTIFY_CONSUMER_IDS_CHANGED.0
                && r.ext_fields.get("consumerGroup") == Some("HG")
        });
        if got {
            break;
        }
        assert!(t0.elapsed() < T, "no NOTIFY_CONSUMER_IDS_CHANGED");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Pull without a subscription in the request uses the heartbeat's.
    let mut p = pull("HT", 0, 0, "*", 0);
    p.ext_fields.insert("sysFlag", "0");
    p.ext_fields.insert("consumerGroup", "HG");
    send_ok(&c2, send_v2("HT", 0, "x", b"hb")).await;
    env.wait_dispatched("HT", 0, 1).await;
    let r = c2.request(p, T).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    // A closed connection leaves the group.
    c2.close();
    let t0 = Instant::now();
    while list(c1.clone()).await.len() != 1 {
        assert!(t0.elapsed() < T);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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

#[tokio::test]
async fn admin_offsets_query_by_key_and_view_by_id() {
    use rmq_protocol::header::{
        GetMaxOffsetRequestHeader, GetMinOffsetRequestHeader, QueryMessageRequestHeader,
        SearchOffsetRequestHeader, ViewMessageRequestHeader,
    };
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(
            send_ok(&c, send_v2("AQ", 2, "a", format!("q{i}").as_bytes()))
                .await
                .msg_id,
        );
    }
    env.wait_dispatched("AQ", 2, 3).await;
    let ask = |code: RequestCode, h: ExtFields| {
        let c = c.clone();
        async move {
            c.request(RemotingCommand::new_request(code.0, h), T)
                .await
                .unwrap()
        }
    };
    let r = ask(
        RequestCode::GET_MAX_OFFSET,
        GetMaxOffsetRequestHeader {
            topic: "AQ".into(),
            queue_id: 2,
            broker_name: None,
        }
        .to_ext_fields(),
    )
    .await;
    assert_eq!(r.ext_fields["offset"], "3");
    let r = ask(
        RequestCode::GET_MIN_OFFSET,
        GetMinOffsetRequestHeader {
            topic: "AQ".into(),
            queue_id: 2,
            broker_name: None,
        }
        .to_ext_fields(),
    )
    .await;
    assert_eq!(r.ext_fields["offset"], "0");
    let r = ask(
        RequestCode::SEARCH_OFFSET_BY_TIMESTAMP,
        SearchOffsetRequestHeader {
            topic: "AQ".into(),
            queue_id: 2,
            timestamp: 0,
            broker_name: None,
        }
        .to_ext_fields(),
    )
    .await;
    assert_eq!((r.code, r.ext_fields["offset"].as_str()), (0, "0"));
    let (_, phy) = rmq_common::decode_offset_msg_id(&ids[1]).unwrap();
    let r = ask(
        RequestCode::VIEW_MESSAGE_BY_ID,
        ViewMessageRequestHeader { offset: phy }.to_ext_fields(),
    )
    .await;
    assert_eq!(r.code, 0);
    let m = decode_messages(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        (&m[0].body[..], m[0].msg_id.as_str()),
        (&b"q1"[..], ids[1].as_str())
    );
    let r = ask(
        RequestCode::QUERY_MESSAGE,
        QueryMessageRequestHeader {
            topic: "AQ".into(),
            key: "k1".into(),
            max_num: 32,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
        }
        .to_ext_fields(),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    assert!(r.ext_fields.contains_key("indexLastUpdatePhyoffset"));
    assert_eq!(decode_messages(r.body.as_ref().unwrap()).unwrap().len(), 3);
    let r = ask(RequestCode::GET_BROKER_RUNTIME_INFO, ExtFields::new()).await;
    assert_eq!(r.code, 0);
    let r = ask(RequestCode::GET_ALL_TOPIC_CONFIG, ExtFields::new()).await;
    let w = TopicConfigSerializeWrapper::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert!(w.topic_config_table.contains_key("AQ"));
    env.stop().await;
}

fn consumer_heartbeat(client_id: &str, group: &str, topics: &[&str]) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        consumer_data_set: vec![ConsumerData {
            group_name: group.into(),
            consume_type: ConsumeType::ConsumePassively,
            subscription_data_set: topics
                .iter()
                .map(|t| SubscriptionData {
                    topic: (*t).into(),
                    sub_string: "*".into(),
                    ..SubscriptionData::default()
                })
                .collect(),
            ..ConsumerData::default()
        }],
        producer_data_set: vec![],
    };
    let mut cmd = RemotingCommand::new_request(RequestCode::HEART_BEAT.0, ExtFields::new())
        .with_body(data.to_json_bytes().unwrap());
    cmd.version = 409;
    cmd
}

async fn ask<H: CommandHeader>(c: &Connection, code: RequestCode, h: &H) -> RemotingCommand {
    c.request(RemotingCommand::request_with_header(code.0, h), T)
        .await
        .unwrap()
}

fn mq(topic: &str, q: i32) -> MessageQueue {
    MessageQueue::new(topic, "broker-a", q)
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "three admin views (topic stats, consume stats, connections) of the same sends"
)]
async fn topic_stats_consume_stats_and_consumer_connections() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let stats = |topic: &str| GetTopicStatsInfoRequestHeader {
        topic: topic.into(),
    };
    let r = ask(&c, RequestCode::GET_TOPIC_STATS_INFO, &stats("NoSuchTopic")).await;
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST.0);
    assert!(r.remark.unwrap().contains("NoSuchTopic"));

    for i in 0..3 {
        send_ok(&c, send_v2("ST", 0, "t", format!("s{i}").as_bytes())).await;
    }
    env.wait_dispatched("ST", 0, 3).await;
    let r = ask(&c, RequestCode::GET_TOPIC_STATS_INFO, &stats("ST")).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let t = TopicStatsTable::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(t.offset_table.0.len(), 4, "auto-created with 4 queues");
    let q0 = t.offset_table.0[&mq("ST", 0)];
    let last = env.store.get_message_store_timestamp("ST", 0, 2).unwrap();
    assert_eq!(
        (q0.min_offset, q0.max_offset, q0.last_update_timestamp),
        (0, 3, last)
    );
    let q1 = t.offset_table.0[&mq("ST", 1)];
    assert_eq!(
        (q1.min_offset, q1.max_offset, q1.last_update_timestamp),
        (0, 0, 0)
    );
    // Java's form: MessageQueue objects as map keys.
    assert!(r
        .body
        .as_ref()
        .unwrap()
        .starts_with(br#"{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"ST"}:{"#));

    // Connections: none until a heartbeat.
    let conns = |group: &str| GetConsumerConnectionListRequestHeader {
        consumer_group: group.into(),
    };
    let r = ask(&c, RequestCode::GET_CONSUMER_CONNECTION_LIST, &conns("SG")).await;
    assert_eq!(r.code, ResponseCode::CONSUMER_NOT_ONLINE.0);
    assert!(r.remark.unwrap().contains("[SG] not online"));
    let consumer = env.client().await;
    let r = consumer
        .request(
            consumer_heartbeat("10.0.0.9@c1", "SG", &["ST", "%RETRY%SG"]),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.code, 0);
    let r = ask(&c, RequestCode::GET_CONSUMER_CONNECTION_LIST, &conns("SG")).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let cc = ConsumerConnection::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(cc.connection_set.len(), 1);
    let info = &cc.connection_set[0];
    assert_eq!(
        (info.client_id.as_str(), info.version, info.language),
        ("10.0.0.9@c1", 409, LanguageCode::Java)
    );
    assert_eq!(info.client_addr, consumer.local().to_string());
    assert_eq!(cc.consume_type, Some(ConsumeType::ConsumePassively));
    assert_eq!(cc.message_model, Some(MessageModel::Clustering));
    assert_eq!(
        cc.subscription_table.keys().collect::<Vec<_>>(),
        ["%RETRY%SG", "ST"]
    );

    // Consume stats: offsets on ST queue 0 and on the retry topic.
    c.request(
        RemotingCommand::request_with_header(
            RequestCode::UPDATE_CONSUMER_OFFSET.0,
            &UpdateConsumerOffsetRequestHeader {
                consumer_group: "SG".into(),
                topic: "ST".into(),
                queue_id: 0,
                commit_offset: 2,
                broker_name: None,
            },
        ),
        T,
    )
    .await
    .unwrap();
    env.ctl.broker().offsets.commit("SG", "%RETRY%SG", 0, 0);
    let cs = |topic: Option<&str>| GetConsumeStatsRequestHeader {
        consumer_group: "SG".into(),
        topic: topic.map(str::to_owned),
    };
    let r = ask(&c, RequestCode::GET_CONSUME_STATS, &cs(None)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let s = ConsumeStats::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(
        s.offset_table.0.len(),
        5,
        "4 queues of ST + the retry queue"
    );
    let q0 = s.offset_table.0[&mq("ST", 0)];
    let second = env.store.get_message_store_timestamp("ST", 0, 1).unwrap();
    assert_eq!(
        (q0.broker_offset, q0.consumer_offset, q0.last_timestamp),
        (3, 2, second)
    );
    assert_eq!(s.offset_table.0[&mq("ST", 3)], OffsetWrapper::default());
    assert!(s.offset_table.0.contains_key(&mq("%RETRY%SG", 0)));
    assert_eq!(s.total_diff(), 1);
    assert!(r
        .body
        .as_ref()
        .unwrap()
        .starts_with(b"{\"consumeTps\":0.0,"));
    let r = ask(&c, RequestCode::GET_CONSUME_STATS, &cs(Some("ST"))).await;
    let s = ConsumeStats::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(s.offset_table.0.len(), 4);
    // A topic the live group does not subscribe, an unknown topic, an unknown group: empty
    // tables (RocketMQ's answer), with a remark saying why.
    send_ok(&c, send_v2("Other", 0, "t", b"o")).await;
    env.ctl.broker().offsets.commit("SG", "Other", 0, 0);
    let r = ask(&c, RequestCode::GET_CONSUME_STATS, &cs(Some("Other"))).await;
    assert_eq!(r.code, 0);
    assert!(r.remark.unwrap().contains("does not subscribe"));
    let r = ask(&c, RequestCode::GET_CONSUME_STATS, &cs(Some("NoSuchTopic"))).await;
    assert!(r.remark.unwrap().contains("not exist"));
    let r = ask(
        &c,
        RequestCode::GET_CONSUME_STATS,
        &GetConsumeStatsRequestHeader {
            consumer_group: "Nobody".into(),
            topic: None,
        },
    )
    .await;
    assert_eq!(r.code, 0);
    let s = ConsumeStats::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert!(s.offset_table.0.is_empty());
    assert!(r.remark.unwrap().contains("no consumer offsets"));
    env.stop().await;
}

fn reset(topic: &str, group: &str, timestamp: i64, force: bool) -> ResetOffsetRequestHeader {
    ResetOffsetRequestHeader {
        topic: topic.into(),
        group: group.into(),
        timestamp,
        is_force: force,
    }
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one offset history: each reset starts from the offsets the previous one left"
)]
async fn reset_offset_commits_and_tells_the_consumers() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    for i in 0..10 {
        send_ok(&c, send_v2("RT", 0, "t", format!("r{i}").as_bytes())).await;
        if i == 4 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    env.wait_dispatched("RT", 0, 10).await;
    let b = env.ctl.broker();
    let r = ask(
        &c,
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
        &reset("RT", "RG", 0, false),
    )
    .await;
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.0);
    assert!(r.remark.unwrap().contains("no committed offset"));
    for q in 0..4 {
        b.offsets.commit("RG", "RT", q, 10);
    }
    b.offsets.commit("RG", "RT", 1, 0);
    let rec = Arc::new(Recorder::default());
    let consumer = connect(env.addr, Some(rec.clone() as Arc<dyn RequestHandler>), T)
        .await
        .unwrap();
    consumer
        .request(consumer_heartbeat("10.0.0.5@r", "RG", &["RT"]), T)
        .await
        .unwrap();

    // Back to the 6th message (stored after the pause): queue 0 moves back to 5, the empty
    // queues to 0, and queue 1 (already at 0) stays.
    let ts = env.store.get_message_store_timestamp("RT", 0, 5).unwrap();
    let r = ask(
        &c,
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
        &reset("RT", "RG", ts, false),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let body = ResetOffsetBody::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    let got: Vec<i64> = (0..4).map(|q| body.offset_table.0[&mq("RT", q)]).collect();
    assert_eq!(got, [5, 0, 0, 0]);
    assert_eq!(
        (0..4)
            .map(|q| b.offsets.query("RG", "RT", q))
            .collect::<Vec<_>>(),
        [5, 0, 0, 0]
    );
    let t0 = Instant::now();
    let notice = loop {
        let found = rec
            .0
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.code == RequestCode::RESET_CONSUMER_CLIENT_OFFSET.0)
            .cloned();
        if let Some(n) = found {
            break n;
        }
        assert!(t0.elapsed() < T, "no RESET_CONSUMER_CLIENT_OFFSET");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(notice.is_oneway());
    let h = ResetOffsetRequestHeader::from_ext_fields(&notice.ext_fields).unwrap();
    assert_eq!(h, reset("RT", "RG", ts, false));
    assert_eq!(notice.body, r.body);

    // To the end, not forced: offsets only move back, so nothing changes; forced: they move.
    let r = ask(
        &c,
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
        &reset("RT", "RG", -1, false),
    )
    .await;
    let body = ResetOffsetBody::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(body.offset_table.0[&mq("RT", 0)], 5);
    let r = ask(
        &c,
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
        &reset("RT", "RG", -1, true),
    )
    .await;
    let body = ResetOffsetBody::from_json_bytes(r.body.as_ref().unwrap()).unwrap();
    assert_eq!(body.offset_table.0[&mq("RT", 0)], 10);

    // With no consumer online the offsets are still reset (and the answer is SUCCESS).
    consumer.close();
    let t0 = Instant::now();
    while b.clients.consumer_ids("RG").is_some() {
        assert!(t0.elapsed() < T);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let r = ask(
        &c,
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
        &reset("RT", "RG", 0, true),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    assert_eq!(b.offsets.query("RG", "RT", 0), 0);

    let r = ask(
        &c,
        RequestCode::INVOKE_BROKER_TO_RESET_OFFSET,
        &reset("Nope", "RG", 0, true),
    )
    .await;
    assert_eq!(r.code, ResponseCode::TOPIC_NOT_EXIST.0);
    assert!(r.remark.unwrap().contains("topic=Nope"));
    env.stop().await;
}

fn lock_request(code: RequestCode, client: &str, queues: &[i32]) -> RemotingCommand {
    let body = LockBatchRequestBody {
        client_id: client.into(),
        consumer_group: "OG".into(),
        mq_set: queues.iter().map(|&q| mq("OT", q)).collect(),
    };
    RemotingCommand::new_request(code.0, ExtFields::new()).with_body(body.to_json_bytes().unwrap())
}

#[tokio::test]
async fn lock_and_unlock_batch_between_two_clients() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let lock = |client: &'static str, queues: &'static [i32]| {
        let c = c.clone();
        async move {
            let r = c
                .request(lock_request(RequestCode::LOCK_BATCH_MQ, client, queues), T)
                .await
                .unwrap();
            assert_eq!(r.code, 0, "{:?}", r.remark);
            let body = r.body.unwrap();
            assert!(body.starts_with(b"{\"lockOKMQSet\":["));
            LockBatchResponseBody::from_json_bytes(&body)
                .unwrap()
                .lock_ok_mq_set
                .into_iter()
                .map(|m| m.queue_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(lock("c1", &[0, 1]).await, [0, 1]);
    assert_eq!(lock("c2", &[1, 2, 3]).await, [2, 3]);
    assert_eq!(lock("c1", &[0, 1, 2]).await, [0, 1]);
    let r = c
        .request(lock_request(RequestCode::UNLOCK_BATCH_MQ, "c2", &[1, 2]), T)
        .await
        .unwrap();
    assert_eq!(r.code, 0);
    assert_eq!(lock("c1", &[1, 2, 3]).await, [1, 2]);
    let r = c
        .request(
            RemotingCommand::new_request(RequestCode::LOCK_BATCH_MQ.0, ExtFields::new()),
            T,
        )
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::SYSTEM_ERROR.0);
    assert!(r.remark.unwrap().contains("LockBatchRequestBody"));
    env.stop().await;
}

#[tokio::test]
async fn broker_permission_changes_while_running() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    send_ok(&c, send_v2("PT", 0, "t", b"p")).await;
    let v0 = env
        .ctl
        .register_body()
        .topic_config_serialize_wrapper
        .data_version;
    env.ctl.set_broker_permission(4);
    let r = c.request(send_v2("PT", 0, "t", b"p"), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::NO_PERMISSION.0);
    let w = env.ctl.register_body().topic_config_serialize_wrapper;
    assert!(w.data_version.counter > v0.counter);
    assert!(w.topic_config_table.values().all(|t| t.perm == 4));
    assert_eq!(env.ctl.broker().topics.select("PT").unwrap().perm, 6);
    env.ctl.set_broker_permission(6);
    send_ok(&c, send_v2("PT", 0, "t", b"p")).await;
    assert_eq!(
        env.ctl
            .register_body()
            .topic_config_serialize_wrapper
            .topic_config_table["PT"]
            .perm,
        6
    );
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
