//! The broker the integration tests run: a real `BrokerController` on 127.0.0.1:0 over a
//! store in a temp dir, with small files; and what the test files share to talk to it
//! (send requests, reading a queue back, asserting a refusal, recording what the broker
//! sends a client).
#![allow(dead_code, reason = "each test file uses its own part")]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rmq_broker::{BrokerConfig, BrokerController};
use rmq_common::Properties;
use rmq_protocol::header::{
    pull_sys_flag, PullMessageRequestHeader, SendMessageRequestHeaderV2, SendMessageResponseHeader,
};
use rmq_protocol::message_decoder::{decode_message_at, MessageExt};
use rmq_protocol::{CommandHeader, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{connect, BoxFuture, Connection, Reply, RequestHandler, ServerHandle};
use rmq_store::{MessageStore, StoreConfig};

/// Timeout of the tests' requests and waits.
pub(crate) const T: Duration = Duration::from_secs(5);

/// Store keys every test broker starts from.
const SMALL_STORE: &[(&str, &str)] = &[
    ("mappedFileSizeCommitLog", "1048576"),
    ("mappedFileSizeConsumeQueue", "4000"),
    ("maxHashSlotNum", "64"),
    ("maxIndexNum", "256"),
    ("flushIntervalCommitLog", "10"),
    ("flushIntervalConsumeQueue", "10"),
    // A busy shared /tmp must not make the store refuse the test's writes.
    ("diskSpaceWarningLevelRatio", "99"),
];

pub(crate) struct Env {
    pub ctl: BrokerController,
    pub server: ServerHandle,
    pub store: Arc<MessageStore>,
    pub addr: SocketAddr,
}

/// A broker under `dir`: [`SMALL_STORE`] then the store keys `extra`, and the broker config
/// `configure` adjusts.
pub(crate) async fn start(
    dir: &Path,
    extra: &[(&str, &str)],
    configure: impl FnOnce(&mut BrokerConfig),
) -> Env {
    let sc = StoreConfig::from_pairs(SMALL_STORE.iter().chain(extra).copied()).unwrap();
    let mut cfg = BrokerConfig {
        config_dir: dir.join("config"),
        ..BrokerConfig::default()
    };
    configure(&mut cfg);
    let store = MessageStore::open(dir.join("store"), sc, cfg.broker_addr).unwrap();
    let ctl = BrokerController::new(cfg, Arc::clone(&store), None).unwrap();
    let server = ctl.start("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    Env {
        ctl,
        server,
        store,
        addr,
    }
}

impl Env {
    pub(crate) async fn client(&self) -> Connection {
        connect(self.addr, None, T).await.unwrap()
    }

    pub(crate) async fn stop(self) {
        self.ctl.shutdown().unwrap();
        self.server.shutdown().await;
        drop(self.ctl);
        self.store.shutdown().unwrap();
    }
}

impl Env {
    /// Wait until `(topic, q)` holds at least `n` messages (dispatch is asynchronous).
    pub(crate) async fn wait_dispatched(&self, topic: &str, q: i32, n: i64) {
        let t0 = Instant::now();
        while self.store.get_max_offset_in_queue(topic, q) < n {
            assert!(
                t0.elapsed() < T,
                "{topic}/{q} holds fewer than {n} messages"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// The messages of `(topic, queue)` from `offset` on, decoded, once `want` of them are
    /// there (fewer after [`T`]).
    pub(crate) async fn read(
        &self,
        topic: &str,
        queue: i32,
        offset: i64,
        want: usize,
    ) -> Vec<MessageExt> {
        let t0 = Instant::now();
        loop {
            let r = self.store.get_message(topic, queue, offset, 32, None);
            let msgs: Vec<MessageExt> = r
                .messages
                .iter()
                .map(|m| decode_message_at(&Bytes::copy_from_slice(m.bytes()), 0).unwrap())
                .collect();
            if msgs.len() >= want || t0.elapsed() > T {
                return msgs;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}

/// A SEND_MESSAGE_V2 header from producer group `group` to `(topic, queue)` with encoded
/// `properties`; the other fields as a Java 4.9 producer fills them (flag 0, sys flag 0,
/// reconsume times 0). Tests change the fields they are about with `..send_header(..)`.
pub(crate) fn send_header(
    group: &str,
    topic: &str,
    queue: i32,
    properties: String,
) -> SendMessageRequestHeaderV2 {
    SendMessageRequestHeaderV2 {
        a: group.into(),
        b: topic.into(),
        c: "TBW102".into(),
        d: 4,
        e: queue,
        f: 0,
        g: 1_700_000_000_000,
        h: 0,
        i: Some(properties),
        j: Some(0),
        k: false,
        l: None,
        m: false,
        n: Some("broker-a".into()),
    }
}

/// The SEND_MESSAGE_V2 request of `header` and `body`.
pub(crate) fn send_request(header: &SendMessageRequestHeaderV2, body: &[u8]) -> RemotingCommand {
    RemotingCommand::request_with_header(RequestCode::SEND_MESSAGE_V2.0, header)
        .with_body(Bytes::copy_from_slice(body))
}

/// Send `req` and return the answer.
pub(crate) async fn call(c: &Connection, req: RemotingCommand) -> RemotingCommand {
    c.request(req, T).await.unwrap()
}

/// Send `req`, which must succeed; its response header.
pub(crate) async fn send_ok(c: &Connection, req: RemotingCommand) -> SendMessageResponseHeader {
    let r = call(c, req).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    SendMessageResponseHeader::from_ext_fields(&r.ext_fields).unwrap()
}

/// `r` is a refusal with `code` whose remark contains `says`.
#[track_caller]
pub(crate) fn assert_refused(r: &RemotingCommand, code: ResponseCode, says: &str) {
    assert_eq!(r.code, code.0, "{:?}", r.remark);
    let remark = r.remark.as_deref().unwrap_or("");
    assert!(remark.contains(says), "{remark:?} does not say {says:?}");
}

/// A connection handler that keeps every request the broker sends (checks, notifications).
#[derive(Default)]
pub(crate) struct Recorder(pub Mutex<Vec<RemotingCommand>>);

impl RequestHandler for Recorder {
    fn handle(&self, _c: Connection, req: RemotingCommand) -> BoxFuture<Option<Reply>> {
        self.0.lock().unwrap().push(req);
        Box::pin(async { None })
    }
}

/// Properties of a test message: `tag`, `keys`, WAIT.
pub(crate) fn props(tag: &str, keys: &str) -> String {
    let mut p = Properties::new();
    p.put("TAGS", tag);
    p.put("KEYS", keys);
    p.put("WAIT", "true");
    p.encode()
}

/// SEND_MESSAGE_V2 from producer group PG with `tag` and key k1.
pub(crate) fn send_v2(topic: &str, queue: i32, tag: &str, body: &[u8]) -> RemotingCommand {
    send_request(&send_header("PG", topic, queue, props(tag, "k1")), body)
}

/// PULL_MESSAGE of consumer group CG by tag expression, suspended `suspend_ms` when nonzero.
pub(crate) fn pull(
    topic: &str,
    queue: i32,
    offset: i64,
    sub: &str,
    suspend_ms: i64,
) -> RemotingCommand {
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
