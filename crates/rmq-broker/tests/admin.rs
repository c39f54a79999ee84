//! End-to-end tests of the broker's client and admin requests over a real broker (see
//! `broker.rs` for the data path): consumer offsets, heartbeats and consumer lists, queries by
//! key and id, topic and consume stats, offset resets, queue locks, broker permission.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_protocol::body::{
    ConsumeStats, ConsumeType, ConsumerConnection, ConsumerData,
    GetConsumerListByGroupResponseBody, HeartbeatData, LockBatchRequestBody, LockBatchResponseBody,
    MessageModel, MessageQueue, OffsetWrapper, ResetOffsetBody, SubscriptionData,
    TopicConfigSerializeWrapper, TopicStatsTable,
};
use rmq_protocol::header::{
    GetConsumeStatsRequestHeader, GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader, GetTopicStatsInfoRequestHeader,
    QueryConsumerOffsetRequestHeader, ResetOffsetRequestHeader, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::message_decoder::decode_messages;
use rmq_protocol::{
    CommandHeader, ExtFields, LanguageCode, RemotingCommand, RemotingJson, RequestCode,
    ResponseCode,
};
use rmq_remoting::{connect, Connection, RequestHandler};

mod common;
use common::{pull, send_ok, send_v2, Env, Recorder, T};

async fn start(dir: &Path, extra: &[(&str, &str)]) -> Env {
    common::start(dir, extra, |_| {}).await
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
    assert_eq!(&r.ext_fields["offset"], "42");
    // No offset, queue starts at 0: offset 0.
    let r = c.request(offset_query("G2", 0), T).await.unwrap();
    assert_eq!((r.code, &r.ext_fields["offset"]), (0, "0"));
    tokio::time::sleep(Duration::from_millis(50)).await;
    env.stop().await;
    let text = std::fs::read_to_string(dir.path().join("config/consumerOffset.json")).unwrap();
    assert!(text.contains("OT@G1"), "{text}");
    let env = start(dir.path(), &[]).await;
    let c = env.client().await;
    let r = c.request(offset_query("G1", 3), T).await.unwrap();
    assert_eq!(&r.ext_fields["offset"], "7");
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
    assert_eq!(&r.ext_fields["offset"], "3");
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
    assert_eq!(&r.ext_fields["offset"], "0");
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
    assert_eq!((r.code, &r.ext_fields["offset"]), (0, "0"));
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
