#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Transactional against plain sends on the broker over loopback TCP, 1 KiB bodies,
//! ASYNC_FLUSH, 64 producers in flight on one connection, in the same run:
//!
//! * `plain`: SEND_MESSAGE_V2, answered once stored;
//! * `transactional`: the half message (SEND_MESSAGE_V2 with `TRAN_MSG=true`), then, on its
//!   answer, END_TRANSACTION commit, oneway, as a producer whose local transaction commits at
//!   once; the broker re-puts the half to its topic and writes an op record. Each iteration
//!   ends when the commit has been sent, so the broker's END_TRANSACTION work overlaps the
//!   next halves, as it does for a real producer; the run waits for the last commits to land.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rmq_broker::{BrokerConfig, BrokerController};
use rmq_protocol::header::{EndTransactionRequestHeader, SendMessageResponseHeader};
use rmq_protocol::{CommandHeader, ExtFields, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Connection;
use rmq_store::MessageStore;

const BODY: [u8; 1024] = [b'x'; 1024];
const T: Duration = Duration::from_secs(30);
const IN_FLIGHT: u64 = 64;

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("RMQ_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench-tmp"));
    std::fs::create_dir_all(&base).expect("bench dir");
    tempfile::tempdir_in(base).expect("bench dir")
}

struct Running {
    _dir: tempfile::TempDir,
    _controller: BrokerController,
    store: Arc<MessageStore>,
    addr: SocketAddr,
}

fn start_broker(rt: &tokio::runtime::Runtime) -> Running {
    let _ = std::process::Command::new("sync").status();
    let dir = bench_dir();
    let store_cfg = rmq_store::StoreConfig::from_pairs([("mappedFileSizeCommitLog", "268435456")])
        .expect("config");
    let store = MessageStore::open(
        dir.path().join("store"),
        store_cfg,
        "127.0.0.1:10911".parse().expect("addr"),
    )
    .expect("store");
    let cfg = BrokerConfig {
        config_dir: dir.path().join("config"),
        ..BrokerConfig::default()
    };
    let controller = BrokerController::new(cfg, Arc::clone(&store), None).expect("broker");
    let handle = rt
        .block_on(controller.start("127.0.0.1:0".parse().expect("addr")))
        .expect("listen");
    let addr = handle.local_addr();
    std::mem::forget(handle); // served until the process exits
    Running {
        _dir: dir,
        _controller: controller,
        store,
        addr,
    }
}

fn send_header(topic: &str, queue_id: i32, transactional: bool) -> ExtFields {
    let (props, sys_flag) = if transactional {
        (
            "TAGS\u{1}TagA\u{2}TRAN_MSG\u{1}true\u{2}PGROUP\u{1}bench-producer\u{2}",
            "4",
        )
    } else {
        ("TAGS\u{1}TagA\u{2}", "0")
    };
    [
        ("a", "bench-producer"),
        ("b", topic),
        ("c", "TBW102"),
        ("d", "4"),
        ("e", &queue_id.to_string()),
        ("f", sys_flag),
        ("g", "0"),
        ("h", "0"),
        ("i", props),
        ("j", "0"),
        ("k", "false"),
        ("m", "false"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// One send; for a transactional one, the commit follows (oneway).
async fn send(c: &Connection, topic: &str, queue_id: i32, transactional: bool) {
    let req = RemotingCommand::new_request(
        RequestCode::SEND_MESSAGE_V2.0,
        send_header(topic, queue_id, transactional),
    )
    .with_body(Bytes::from_static(&BODY));
    let r = c.request(req, T).await.expect("send");
    assert_eq!(r.code, ResponseCode::SUCCESS.0, "{:?}", r.remark);
    if !transactional {
        return;
    }
    let sent = SendMessageResponseHeader::from_ext_fields(&r.ext_fields).expect("header");
    let end = EndTransactionRequestHeader {
        producer_group: "bench-producer".into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset: rmq_common::decode_offset_msg_id(&sent.msg_id)
            .expect("offset id")
            .1,
        commit_or_rollback: rmq_common::sys_flag::TRANSACTION_COMMIT_TYPE,
        from_transaction_check: false,
        msg_id: sent.msg_id,
        transaction_id: None,
        broker_name: None,
    };
    c.oneway(RemotingCommand::request_with_header(
        RequestCode::END_TRANSACTION.0,
        &end,
    ))
    .await
    .expect("end transaction");
}

fn topic_total(store: &MessageStore, topic: &str) -> i64 {
    (0..4)
        .map(|q| store.get_max_offset_in_queue(topic, q))
        .sum()
}

fn produce(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("rt");
    let broker = start_broker(&rt);
    let conn = rt
        .block_on(rmq_remoting::connect(broker.addr, None, T))
        .expect("connect");
    let mut g = c.benchmark_group("broker_transactional_1KiB");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1));
    for (name, topic, transactional) in [
        ("plain_64_in_flight", "BenchPlain", false),
        ("transactional_64_in_flight", "BenchTx", true),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(IN_FLIGHT);
                let before = topic_total(&broker.store, topic);
                let start = Instant::now();
                rt.block_on(async {
                    let tasks: Vec<_> = (0..IN_FLIGHT)
                        .map(|t| {
                            let c = conn.clone();
                            tokio::spawn(async move {
                                for _ in 0..per {
                                    #[allow(clippy::cast_possible_truncation)]
                                    send(&c, topic, (t % 4) as i32, transactional).await;
                                }
                            })
                        })
                        .collect();
                    for t in tasks {
                        t.await.expect("sender");
                    }
                    // Every message in its topic (dispatched), commits included.
                    #[allow(clippy::cast_possible_wrap)]
                    let want = before + (per * IN_FLIGHT) as i64;
                    while topic_total(&broker.store, topic) < want {
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                });
                #[allow(clippy::cast_precision_loss)]
                let scale = iters as f64 / (per * IN_FLIGHT) as f64;
                start.elapsed().mul_f64(scale)
            });
        });
    }
    g.finish();
}

criterion_group!(benches, produce);
criterion_main!(benches);
