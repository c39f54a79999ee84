//! Seeds the fuzz targets' corpora: `rmq-fuzz-seed <repo root> <corpus dir>`.
//!
//! From every request recorded in `tests/corpus/*/*.jsonl` (real Java, Go and Node clients
//! talking to Apache RocketMQ, plus the hand-written C++ frames) it writes:
//! - `frame/`: the frame as sent (JSON header), the same command re-encoded with a ROCKETMQ
//!   header, and pairs of frames back to back;
//! - `remoting_header/`: the header alone in both serializations (selector byte first);
//! - `json_body/`: heartbeat and lock bodies (selector byte first), and for every body type
//!   its default value as the project writes it;
//! - `record/`: a CommitLog record per sent message (IPv4 and IPv6 hosts, short and long
//!   topics), built with `MessageExt::to_record`;
//! - `message_bodies/`: runs of those records (pull bodies) and the recorded batch bodies.
//!
//! Files are named by a hash of their content, so reruns do not pile up copies.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use rmq_common::record::MessageExt;
use rmq_common::Properties;
use rmq_protocol::body::{
    ClusterInfo, ConsumeStats, ConsumeStatsList, ConsumerConnection,
    ConsumerOffsetSerializeWrapper, HeartbeatData, KvTable, LockBatchRequestBody,
    QueryConsumeQueueResponseBody, RegisterBrokerBody, ResetOffsetBody, SubscriptionGroupWrapper,
    TopicConfigSerializeWrapper, TopicList, TopicRouteData, TopicStatsTable,
    UnlockBatchRequestBody,
};
use rmq_protocol::{codec, RemotingCommand, RemotingJson, RequestCode, SerializeType};

/// Selector bytes of `fuzz_targets/json_body.rs`, in its order.
const HEARTBEAT: u8 = 1;
const LOCK_BATCH: u8 = 8;
const UNLOCK_BATCH: u8 = 9;

struct Out {
    root: PathBuf,
    written: usize,
}

impl Out {
    fn put(&mut self, target: &str, data: &[u8]) {
        let dir = self.root.join(target);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut h = DefaultHasher::new();
        data.hash(&mut h);
        let path = dir.join(format!("seed-{:016x}", h.finish()));
        if !path.exists() {
            std::fs::write(&path, data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            self.written += 1;
        }
    }
}

fn with_selector(selector: u8, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(1 + data.len());
    v.push(selector);
    v.extend_from_slice(data);
    v
}

fn frame_bytes(cmd: &RemotingCommand) -> Option<Bytes> {
    let mut buf = BytesMut::new();
    codec::encode(cmd, &mut buf).ok()?;
    Some(buf.freeze())
}

/// One recorded request as a command (JSON header as sent, body).
fn recorded_command(event: &serde_json::Value) -> Option<RemotingCommand> {
    let header = event.get("header")?.as_str()?.as_bytes();
    let body = match event.get("body").and_then(serde_json::Value::as_str) {
        Some(b64) => base64::engine::general_purpose::STANDARD.decode(b64).ok()?,
        None => Vec::new(),
    };
    let mut frame = BytesMut::new();
    let word = u32::try_from(header.len()).ok()?;
    let total = i32::try_from(4 + header.len() + body.len()).ok()?;
    frame.extend_from_slice(&total.to_be_bytes());
    frame.extend_from_slice(&word.to_be_bytes());
    frame.extend_from_slice(header);
    frame.extend_from_slice(&body);
    codec::decode(&mut frame).ok().flatten()
}

/// The message a SEND_MESSAGE(_V2) request carries, stored as a record.
fn records_of_send(cmd: &RemotingCommand) -> Vec<Bytes> {
    let f = |long: &str, short: &str| {
        cmd.ext_fields
            .get(long)
            .or_else(|| cmd.ext_fields.get(short))
            .map(str::to_owned)
    };
    let Some(topic) = f("topic", "b") else {
        return Vec::new();
    };
    let properties = Properties::decode(&f("properties", "i").unwrap_or_default());
    let queue_id = f("queueId", "e").and_then(|q| q.parse().ok()).unwrap_or(0);
    let v4: SocketAddr = "127.0.0.1:10911".parse().unwrap();
    let v6: SocketAddr = "[::1]:10911".parse().unwrap();
    let body = cmd.body.clone().unwrap_or_default();
    let mut msg = MessageExt {
        topic,
        flag: 0,
        properties,
        body_crc: rmq_common::body_crc(&body),
        body,
        store_size: 0,
        queue_id,
        queue_offset: 7,
        commit_log_offset: 4096,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: v4,
        store_timestamp: 1_700_000_000_001,
        store_host: v4,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        msg_id: String::new(),
        body_error: None,
    };
    let mut out = Vec::new();
    out.extend(msg.to_record().ok());
    msg.born_host = v6;
    msg.store_host = v6;
    msg.topic = format!("{}-{}", msg.topic, "x".repeat(130)); // a V2 record
    out.extend(msg.to_record().ok());
    out
}

fn json_defaults(out: &mut Out) {
    fn one<T: RemotingJson + Default>(out: &mut Out, selector: u8) {
        if let Ok(b) = T::default().to_json_bytes() {
            out.put("json_body", &with_selector(selector, &b));
        }
    }
    one::<TopicRouteData>(out, 0);
    one::<HeartbeatData>(out, HEARTBEAT);
    one::<RegisterBrokerBody>(out, 2);
    one::<TopicConfigSerializeWrapper>(out, 3);
    one::<ClusterInfo>(out, 4);
    one::<TopicList>(out, 5);
    one::<ConsumeStats>(out, 6);
    one::<TopicStatsTable>(out, 7);
    one::<LockBatchRequestBody>(out, LOCK_BATCH);
    one::<UnlockBatchRequestBody>(out, UNLOCK_BATCH);
    one::<SubscriptionGroupWrapper>(out, 11);
    one::<ConsumerOffsetSerializeWrapper>(out, 12);
    one::<KvTable>(out, 13);
    one::<ResetOffsetBody>(out, 14);
    one::<ConsumerConnection>(out, 15);
    one::<QueryConsumeQueueResponseBody>(out, 16);
    one::<ConsumeStatsList>(out, 17);
    // fastjson's dialect, as Java nameservers and brokers write it.
    let fastjson: [(u8, &str); 3] = [
        (0, r#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"b","cluster":"c"}],"queueDatas":[{"brokerName":"b","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}"#),
        (7, r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"lastUpdateTimestamp":1,"maxOffset":9,"minOffset":0}}}"#),
        (2, "{'filterServerList':[],'topicConfigSerializeWrapper':{dataVersion:{counter:1,timestamp:1},'topicConfigTable':{'T':{'perm':6,'readQueueNums':3,'topicName':'T','writeQueueNums':3}}}}"),
    ];
    for (selector, text) in fastjson {
        out.put("json_body", &with_selector(selector, text.as_bytes()));
    }
}

fn seed_from_flow(path: &Path, out: &mut Out, records: &mut Vec<Bytes>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut previous: Option<Bytes> = None;
    for line in text.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if event.get("kind").and_then(serde_json::Value::as_str) != Some("request") {
            continue;
        }
        let Some(cmd) = recorded_command(&event) else {
            continue;
        };
        let Some(frame) = frame_bytes(&cmd) else {
            continue;
        };
        out.put("frame", &frame);
        if let Some(prev) = previous.replace(frame.clone()) {
            out.put("frame", &[&prev[..], &frame[..]].concat());
        }
        let header = codec::encode_header(&cmd).expect("a decoded header re-encodes");
        out.put("remoting_header", &with_selector(0, &header));
        let mut binary = cmd.clone();
        binary.serialize_type = SerializeType::RocketMq;
        if let Some(f) = frame_bytes(&binary) {
            out.put("frame", &f);
        }
        if let Ok(h) = codec::encode_header(&binary) {
            out.put("remoting_header", &with_selector(1, &h));
        }
        let body = cmd.body.clone().unwrap_or_default();
        match RequestCode::from(cmd.code) {
            RequestCode::HEART_BEAT => {
                out.put("json_body", &with_selector(HEARTBEAT, &body));
            }
            RequestCode::LOCK_BATCH_MQ => {
                out.put("json_body", &with_selector(LOCK_BATCH, &body));
            }
            RequestCode::UNLOCK_BATCH_MQ => {
                out.put("json_body", &with_selector(UNLOCK_BATCH, &body));
            }
            RequestCode::SEND_BATCH_MESSAGE => out.put("message_bodies", &body),
            RequestCode::SEND_MESSAGE | RequestCode::SEND_MESSAGE_V2 => {
                records.extend(records_of_send(&cmd));
            }
            _ => {}
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, repo, corpus] = &args[..] else {
        eprintln!("usage: rmq-fuzz-seed <repository root> <corpus dir>");
        std::process::exit(2);
    };
    let mut out = Out {
        root: PathBuf::from(corpus),
        written: 0,
    };
    let flows_dir = Path::new(repo).join("tests/corpus");
    let mut flows: Vec<PathBuf> = std::fs::read_dir(&flows_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", flows_dir.display()))
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.is_dir())
        .flat_map(|d| std::fs::read_dir(d).into_iter().flatten())
        .filter_map(|d| d.ok().map(|d| d.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    flows.sort();
    assert!(
        !flows.is_empty(),
        "no recorded flows under {}",
        flows_dir.display()
    );
    let mut records = Vec::new();
    for flow in &flows {
        seed_from_flow(flow, &mut out, &mut records);
    }
    json_defaults(&mut out);
    for r in &records {
        out.put("record", r);
    }
    for run in records.chunks(3) {
        out.put("message_bodies", &run.concat());
    }
    println!(
        "seeded {} new inputs from {} recorded flows and {} records into {corpus}",
        out.written,
        flows.len(),
        records.len()
    );
}
