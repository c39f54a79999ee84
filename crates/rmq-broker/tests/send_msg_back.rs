//! CONSUMER_SEND_MSG_BACK (36) and delayed sends against a real broker on 127.0.0.1:0: the
//! retry copy parked at level 3 + reconsume times with its origin kept, its delivery into
//! `%RETRY%<group>`, the dead-letter queue after `maxReconsumeTimes` (write-only, so pulls are
//! refused) or at once for a negative level, and the errors a consumer can get; plain sends
//! to `%RETRY%<group>` (Java's orderly consumers hand messages back that way) that go to the
//! dead-letter queue once `reconsumeTimes` reaches the max.

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_common::Properties;
use rmq_protocol::header::{
    pull_sys_flag, ConsumerSendMsgBackRequestHeader, PullMessageRequestHeader,
    SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use rmq_protocol::message_decoder::{decode_messages, MessageExt};
use rmq_protocol::{CommandHeader, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Connection;
use rmq_store::SCHEDULE_TOPIC;

mod common;
use common::{assert_refused, call, send_header, send_request, Env, T};

async fn start(dir: &Path, auto_create_group: bool) -> Env {
    common::start(dir, &[("messageDelayLevel", "1s 2s 3s 4s 5s")], |c| {
        c.auto_create_subscription_group = auto_create_group;
    })
    .await
}

impl Env {
    /// The one message at `offset` of `(topic, q)`, once dispatched.
    async fn message(&self, topic: &str, q: i32, offset: i64) -> MessageExt {
        let t0 = Instant::now();
        while self.store.get_max_offset_in_queue(topic, q) <= offset {
            assert!(t0.elapsed() < T, "nothing at {topic}/{q}/{offset}");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let got = self.store.get_message(topic, q, offset, 1, None);
        let mut body = Vec::new();
        for m in &got.messages {
            body.extend_from_slice(m.bytes());
        }
        decode_messages(&Bytes::from(body)).unwrap().remove(0)
    }

    /// Deliver the message parked at `offset` of `level`'s queue, as the broker's scheduler
    /// does when it is due.
    async fn deliver(&self, level: i32, offset: i64) {
        let qid = level - 1;
        self.message(SCHEDULE_TOPIC, qid, offset).await;
        let units = self
            .store
            .get_consume_queue_units(SCHEDULE_TOPIC, qid, offset, 1);
        let units: Vec<(i64, i32)> = units.units.iter().map(|u| (u.offset, u.size)).collect();
        let out = self.store.deliver_scheduled(&units);
        assert!(out.error.is_none(), "{:?}", out.error);
    }
}

fn send(topic: &str, body: &[u8], props: &Properties) -> RemotingCommand {
    let header = SendMessageRequestHeaderV2 {
        h: 9,
        ..send_header("PG", topic, 1, props.encode())
    };
    send_request(&header, body)
}

fn send_back(offset: i64, group: &str, delay_level: i32, max: Option<i32>) -> RemotingCommand {
    RemotingCommand::request_with_header(
        RequestCode::CONSUMER_SEND_MSG_BACK.0,
        &ConsumerSendMsgBackRequestHeader {
            offset,
            group: group.into(),
            delay_level,
            origin_msg_id: Some("whatever the client says".into()),
            origin_topic: Some("Orders".into()),
            unit_mode: false,
            max_reconsume_times: max,
            broker_name: Some("broker-a".into()),
        },
    )
    .with_version(rmq_protocol::version::CURRENT_VERSION)
}

/// A plain send to a retry topic, as Java's `sendMessageBack` of orderly consumers makes it:
/// the header carries the reconsume count and (from 3.4.9 on) the max.
fn send_retry(group: &str, reconsume: i32, max: Option<i32>, version: i32) -> RemotingCommand {
    let p = props(&[
        ("DELAY", "3"),
        ("RETRY_TOPIC", "Orders"),
        ("UNIQ_KEY", "U9"),
    ]);
    let mut req = send(&format!("%RETRY%{group}"), b"again", &p).with_version(version);
    req.ext_fields.insert("j", reconsume.to_string());
    match max {
        Some(m) => req.ext_fields.insert("l", m.to_string()),
        None => req.ext_fields.remove("l"),
    };
    req
}

fn props(pairs: &[(&str, &str)]) -> Properties {
    let mut p = Properties::new();
    for (k, v) in pairs {
        p.put(*k, *v);
    }
    p
}

/// A property of `m`, owned.
fn get(m: &MessageExt, k: &str) -> Option<String> {
    m.properties.get(k).map(str::to_owned)
}

/// A broker (group auto-creation on) that stored "pay" (TagA, UNIQ1) in `Orders` queue 1:
/// the send's answer and the stored message.
async fn consumed_once(dir: &Path) -> (Env, Connection, SendMessageResponseHeader, MessageExt) {
    let env = start(dir, true).await;
    let c = env.client().await;
    let p = props(&[("TAGS", "TagA"), ("KEYS", "order-1"), ("UNIQ_KEY", "UNIQ1")]);
    let r = call(&c, send("Orders", b"pay", &p)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let sent = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap();
    let original = env.message("Orders", 1, 0).await;
    assert_eq!(original.msg_id, sent.msg_id);
    (env, c, sent, original)
}

/// `original` fails three times for group CG (max 3), each copy delivered from the level it
/// was parked at (3, 4, then 5: the table's highest); the three retried copies.
async fn three_retries(env: &Env, c: &Connection, original: &MessageExt) -> Vec<MessageExt> {
    let mut failed = original.clone();
    let mut retries = Vec::new();
    for (level, offset) in [(3, 0), (4, 0), (5, 0)] {
        let r = call(c, send_back(failed.commit_log_offset, "CG", 0, Some(3))).await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
        env.deliver(level, 0).await;
        failed = env
            .message(
                "%RETRY%CG",
                0,
                offset + i64::try_from(retries.len()).unwrap(),
            )
            .await;
        retries.push(failed.clone());
    }
    retries
}

#[tokio::test]
async fn a_failed_message_is_parked_at_level_3_then_delivered_to_the_retry_topic() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, sent, original) = consumed_once(dir.path()).await;
    let r = call(&c, send_back(original.commit_log_offset, "CG", 0, Some(3))).await;
    assert_eq!((r.code, r.remark.as_deref()), (0, None));
    let retry = env.ctl.broker().topics.select("%RETRY%CG").unwrap();
    assert_eq!((retry.read_queue_nums, retry.perm), (1, 6));
    let parked = env.message(SCHEDULE_TOPIC, 2, 0).await;
    assert_eq!(get(&parked, "REAL_TOPIC").as_deref(), Some("%RETRY%CG"));
    assert_eq!(get(&parked, "REAL_QID").as_deref(), Some("0"));
    assert_eq!(get(&parked, "DELAY").as_deref(), Some("3"));
    assert_eq!(get(&parked, "RETRY_TOPIC").as_deref(), Some("Orders"));
    assert_eq!(
        get(&parked, "ORIGIN_MESSAGE_ID").as_deref(),
        Some(sent.msg_id.as_str())
    );
    assert_eq!(get(&parked, "WAIT").as_deref(), Some("false"));
    assert_eq!(parked.reconsume_times, 1);
    assert_eq!((parked.body.as_ref(), parked.flag), (&b"pay"[..], 9));
    assert_eq!(parked.born_timestamp, original.born_timestamp);
    let unit = env
        .store
        .get_consume_queue_units(SCHEDULE_TOPIC, 2, 0, 1)
        .units[0];
    assert_eq!(unit.tags_code, parked.store_timestamp + 3000);

    // Delivered into the retry topic, with the client's id and tag intact.
    env.deliver(3, 0).await;
    let first_retry = env.message("%RETRY%CG", 0, 0).await;
    assert_eq!(first_retry.uniq_msg_id(), Some("UNIQ1"));
    assert_eq!(get(&first_retry, "DELAY"), None);
    assert_eq!(get(&first_retry, "TAGS").as_deref(), Some("TagA"));
    assert_eq!(first_retry.reconsume_times, 1);
    env.stop().await;
}

#[tokio::test]
async fn a_retried_copy_that_fails_again_keeps_its_origin() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, sent, original) = consumed_once(dir.path()).await;
    let retries = three_retries(&env, &c, &original).await;
    let reconsumed: Vec<i32> = retries.iter().map(|m| m.reconsume_times).collect();
    assert_eq!(reconsumed, [1, 2, 3]);
    for m in &retries {
        assert_eq!(get(m, "RETRY_TOPIC").as_deref(), Some("Orders"));
        assert_eq!(
            get(m, "ORIGIN_MESSAGE_ID").as_deref(),
            Some(sent.msg_id.as_str())
        );
    }
    env.stop().await;
}

#[tokio::test]
async fn a_message_consumed_max_times_goes_to_the_write_only_dlq() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, _sent, original) = consumed_once(dir.path()).await;
    let third_retry = three_retries(&env, &c, &original).await.remove(2);
    // Consumed 3 times, max 3: dead letter.
    let r = call(
        &c,
        send_back(third_retry.commit_log_offset, "CG", 0, Some(3)),
    )
    .await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let dlq = env.ctl.broker().topics.select("%DLQ%CG").unwrap();
    assert_eq!((dlq.read_queue_nums, dlq.perm), (1, 2), "write-only");
    let dead = env.message("%DLQ%CG", 0, 0).await;
    assert_eq!(dead.reconsume_times, 4);
    assert_eq!(get(&dead, "DELAY"), None);
    assert_eq!(get(&dead, "RETRY_TOPIC").as_deref(), Some("Orders"));
    assert_eq!(dead.uniq_msg_id(), Some("UNIQ1"));
    assert_eq!(dead.body.as_ref(), b"pay");
    // Consumers cannot pull it.
    let pull = RemotingCommand::request_with_header(
        RequestCode::PULL_MESSAGE.0,
        &PullMessageRequestHeader {
            consumer_group: "CG".into(),
            topic: "%DLQ%CG".into(),
            queue_id: 0,
            queue_offset: 0,
            max_msg_nums: 32,
            sys_flag: pull_sys_flag::build(false, false, true, false),
            commit_offset: 0,
            suspend_timeout_millis: 0,
            subscription: Some("*".into()),
            sub_version: 0,
            expression_type: Some("TAG".into()),
            broker_name: None,
        },
    );
    let r = call(&c, pull).await;
    assert_refused(
        &r,
        ResponseCode::NO_PERMISSION,
        "pulling message is forbidden",
    );
    env.stop().await;
}

#[tokio::test]
async fn a_negative_level_sends_the_message_to_the_dlq_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, _sent, original) = consumed_once(dir.path()).await;
    let r = call(
        &c,
        send_back(original.commit_log_offset, "CG", -1, Some(16)),
    )
    .await;
    assert_eq!(r.code, 0);
    let dead = env.message("%DLQ%CG", 0, 0).await;
    assert_eq!(dead.reconsume_times, 1);
    env.stop().await;
}

#[tokio::test]
async fn without_a_max_in_the_header_or_from_old_clients_the_groups_retry_max_times_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (env, c, _sent, original) = consumed_once(dir.path()).await;
    let third_retry = three_retries(&env, &c, &original).await.remove(2);
    // The group's retryMaxTimes is 16: a fourth failure is parked again (level 5, the highest).
    let r = call(&c, send_back(third_retry.commit_log_offset, "CG", 0, None)).await;
    assert_eq!(r.code, 0);
    assert_eq!(env.message(SCHEDULE_TOPIC, 4, 1).await.reconsume_times, 4);
    // Clients older than 3.4.9: the header's max is not read.
    let old_client = send_back(third_retry.commit_log_offset, "CG", 0, Some(3)).with_version(120);
    assert_eq!(call(&c, old_client).await.code, 0);
    assert_eq!(env.message(SCHEDULE_TOPIC, 4, 2).await.reconsume_times, 4);
    env.stop().await;
}

#[tokio::test]
async fn a_level_the_consumer_asks_for_is_used() {
    // ConsumeConcurrentlyContext.delayLevelWhenNextConsume.
    let dir = tempfile::tempdir().unwrap();
    let (env, c, _sent, original) = consumed_once(dir.path()).await;
    let r = call(&c, send_back(original.commit_log_offset, "CG", 2, Some(16))).await;
    assert_eq!(r.code, 0);
    let parked = env.message(SCHEDULE_TOPIC, 1, 0).await;
    assert_eq!(get(&parked, "DELAY").as_deref(), Some("2"));
    assert_eq!(get(&parked, "REAL_TOPIC").as_deref(), Some("%RETRY%CG"));
    env.stop().await;
}

#[tokio::test]
async fn a_group_with_retry_max_times_1_dead_letters_the_second_failure() {
    // What old clients get, whose header carries no max.
    let dir = tempfile::tempdir().unwrap();
    let (env, c, _sent, original) = consumed_once(dir.path()).await;
    env.ctl
        .broker()
        .groups
        .update(rmq_protocol::body::SubscriptionGroupConfig {
            group_name: "CG1".into(),
            retry_max_times: 1,
            ..Default::default()
        });
    let r = call(&c, send_back(original.commit_log_offset, "CG1", 0, None)).await;
    assert_eq!(r.code, 0);
    assert_eq!(env.message(SCHEDULE_TOPIC, 2, 0).await.reconsume_times, 1);
    env.deliver(3, 0).await;
    let first_retry = env.message("%RETRY%CG1", 0, 0).await;
    let r = call(&c, send_back(first_retry.commit_log_offset, "CG1", 0, None)).await;
    assert_eq!(r.code, 0);
    assert_eq!(env.message("%DLQ%CG1", 0, 0).await.reconsume_times, 2);
    env.stop().await;
}

#[tokio::test]
async fn retry_topic_sends_past_max_reconsume_times_go_to_the_dlq() {
    use rmq_protocol::version::CURRENT_VERSION;
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), true).await;
    let c = env.client().await;
    let get = |m: &MessageExt, k: &str| m.properties.get(k).map(str::to_owned);

    // Under the max: an ordinary delayed retry, parked at its level for %RETRY%CG.
    let r = call(&c, send_retry("CG", 2, Some(3), CURRENT_VERSION)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let parked = env.message(SCHEDULE_TOPIC, 2, 0).await;
    assert_eq!(get(&parked, "REAL_TOPIC").as_deref(), Some("%RETRY%CG"));
    assert_eq!(parked.reconsume_times, 2);
    assert!(env.ctl.broker().topics.select("%DLQ%CG").is_none());

    // At the max: the dead-letter topic (write-only, one queue), stored at once, no delay.
    let r = call(&c, send_retry("CG", 3, Some(3), CURRENT_VERSION)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let dlq = env.ctl.broker().topics.select("%DLQ%CG").unwrap();
    assert_eq!((dlq.write_queue_nums, dlq.perm), (1, 2));
    let dead = env.message("%DLQ%CG", 0, 0).await;
    assert_eq!(
        (dead.body.as_ref(), dead.reconsume_times),
        (&b"again"[..], 3)
    );
    assert_eq!(get(&dead, "DELAY"), None);
    assert_eq!(get(&dead, "RETRY_TOPIC").as_deref(), Some("Orders"));
    assert_eq!(dead.uniq_msg_id(), Some("U9"));
    let h = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap();
    assert_eq!((h.queue_id, h.queue_offset, h.msg_id), (0, 0, dead.msg_id));
    assert_eq!(env.store.get_max_offset_in_queue(SCHEDULE_TOPIC, 2), 1);

    // Without the header's max, or from a client older than 3.4.9, the group's
    // retryMaxTimes (16) counts.
    let r = call(&c, send_retry("CG", 3, None, CURRENT_VERSION)).await;
    assert_eq!(r.code, 0);
    let r = call(&c, send_retry("CG", 3, Some(3), 120)).await;
    assert_eq!(r.code, 0);
    assert_eq!(env.message(SCHEDULE_TOPIC, 2, 2).await.reconsume_times, 3);
    let r = call(&c, send_retry("CG", 16, None, CURRENT_VERSION)).await;
    assert_eq!(r.code, 0);
    assert_eq!(env.message("%DLQ%CG", 0, 1).await.reconsume_times, 16);
    assert_eq!(env.store.get_max_offset_in_queue("%DLQ%CG", 0), 2);

    // Batches cannot go to a retry topic.
    let mut batch = send("%RETRY%CG", b"", &Properties::new());
    batch.code = RequestCode::SEND_BATCH_MESSAGE.0;
    let r = call(&c, batch).await;
    assert_eq!(r.code, ResponseCode::MESSAGE_ILLEGAL.0);
    assert!(r
        .remark
        .unwrap()
        .contains("batch request does not support retry group %RETRY%CG"));
    env.stop().await;
}

#[tokio::test]
async fn delayed_sends_are_parked_until_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), true).await;
    let c = env.client().await;
    let p = props(&[("TAGS", "TagA"), ("DELAY", "2"), ("UNIQ_KEY", "U2")]);
    let r = call(&c, send("Later", b"soon", &p)).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let h = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap();
    // The answer names the queue the producer chose; the message waits in level 2's queue.
    assert_eq!((h.queue_id, h.queue_offset), (1, 0));
    let parked = env.message(SCHEDULE_TOPIC, 1, 0).await;
    assert_eq!(parked.msg_id, h.msg_id);
    assert_eq!(env.store.get_max_offset_in_queue("Later", 1), 0);
    env.deliver(2, 0).await;
    let delivered = env.message("Later", 1, 0).await;
    assert_eq!(
        (
            delivered.body.as_ref(),
            delivered.uniq_msg_id(),
            delivered.flag
        ),
        (&b"soon"[..], Some("U2"), 9)
    );
    assert_eq!(delivered.properties.get("DELAY"), None);
    assert_eq!(delivered.properties.get("REAL_TOPIC"), Some("Later"));
    // A DELAY that is not a level is refused with the reason.
    let bad = props(&[("DELAY", "x")]);
    let r = call(&c, send("Later", b"x", &bad)).await;
    assert_eq!(r.code, ResponseCode::MESSAGE_ILLEGAL.0);
    assert!(r.remark.unwrap().contains("not a delay level"));
    env.stop().await;
}

#[tokio::test]
async fn a_send_back_for_a_group_that_does_not_exist_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), false).await;
    let c = env.client().await;
    let r = call(&c, send_back(0, "NoSuchGroup", 0, Some(16))).await;
    assert_refused(
        &r,
        ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
        "NoSuchGroup",
    );
    // So is a plain send to the retry topic of a group that does not exist.
    let r = call(&c, send_retry("NoSuchGroup", 0, Some(16), 400)).await;
    assert_refused(
        &r,
        ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
        "NoSuchGroup",
    );
    env.stop().await;
}

#[tokio::test]
async fn a_send_back_where_no_message_starts_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), false).await;
    let c = env.client().await;
    // A system group exists; an offset where no message starts is refused.
    let r = call(&c, send_back(123_456, "TOOLS_CONSUMER", 0, Some(16))).await;
    assert_refused(
        &r,
        ResponseCode::SYSTEM_ERROR,
        "look message by offset failed, 123456",
    );
    env.stop().await;
}

#[tokio::test]
async fn a_send_back_without_its_offset_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), false).await;
    let c = env.client().await;
    let mut req = send_back(0, "TOOLS_CONSUMER", 0, None);
    req.ext_fields.remove("offset");
    let r = call(&c, req).await;
    assert_refused(&r, ResponseCode::SYSTEM_ERROR, "offset");
    env.stop().await;
}

#[tokio::test]
async fn a_broker_that_takes_no_writes_refuses_send_backs() {
    let dir = tempfile::tempdir().unwrap();
    let env = start(dir.path(), false).await;
    let c = env.client().await;
    env.ctl.set_broker_permission(4);
    let r = call(&c, send_back(0, "TOOLS_CONSUMER", 0, None)).await;
    assert_refused(
        &r,
        ResponseCode::NO_PERMISSION,
        "sending message is forbidden",
    );
    env.stop().await;
}
