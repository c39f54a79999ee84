#![expect(missing_docs, reason = "criterion_group! generates undocumented items")]
//! The broker over loopback TCP, 1 KiB bodies, ASYNC_FLUSH: the load-generator core of
//! issue 3, in the same process as its baselines.
//!
//! * `produce`: SEND_MESSAGE_V2 with 64 requests in flight on one connection (as one Java
//!   producer with async sends), and SEND_BATCH_MESSAGE with batches of 32 (16 in flight).
//! * `consume`: PULL_MESSAGE over 4 queues, one puller per queue (bodies go out by `sendfile`),
//!   against a raw loopback socket copy of 256 KiB writes measured in the same run; then both
//!   again, alternating in 256 MiB chunks (printed as `consume interleaved`).
//! * `tls`: the same pulls (1024 per pull) and SEND_MESSAGE_V2 (64 in flight) over TLS
//!   (rustls; a permissive broker with one plain and one TLS connection), then plain and TLS
//!   alternating in chunks (printed as `tls interleaved`: the cost of TLS on this machine).
//! * `retry`: CONSUMER_SEND_MSG_BACK with 64 requests in flight (each looks the failed message
//!   up by offset and parks a copy for `%RETRY%<group>` at level 3), against SEND_MESSAGE_V2 with
//!   64 in flight measured in the same group as the baseline.
//! * `produce_big`: SEND_MESSAGE_V2 of 64 KiB bodies (32 in flight) and of 1 MiB (8 in
//!   flight), throughput in body bytes: the copies of a big body on the send path.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rmq_benches::{percentile, scaled};
use rmq_common::properties::Properties;
use rmq_protocol::message_decoder::{encode_batch, BatchMessage};
use rmq_protocol::{ExtFields, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Connection;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

use common::{connected_broker, connected_broker_tls, group, in_flight, BODY, T};

/// Messages per queue of the consume benchmark's topic.
const CONSUME_PER_QUEUE: i64 = 50_000;

const TAGS: &str = "TAGS\u{1}TagA\u{2}";

/// One SEND_MESSAGE_V2 of [`BODY`] with tag `TagA`; its response, asserted successful.
async fn send(c: &Connection, topic: &str, queue_id: i32) -> RemotingCommand {
    send_body(c, topic, queue_id, Bytes::from_static(&BODY)).await
}

/// One SEND_MESSAGE_V2 of `body` with tag `TagA`; its response, asserted successful.
async fn send_body(c: &Connection, topic: &str, queue_id: i32, body: Bytes) -> RemotingCommand {
    let req = RemotingCommand::new_request(
        RequestCode::SEND_MESSAGE_V2.0,
        common::send_header(topic, queue_id, TAGS, 0, false),
    )
    .with_body(body);
    let r = c.request(req, T).await.expect("send");
    assert_eq!(r.code, ResponseCode::SUCCESS.0, "{:?}", r.remark);
    r
}

/// `iters` sends to `topic` from 64 tasks on one connection; the time they took, scaled to
/// `iters` (each task sends `iters / 64` rounded up).
fn send_v2_64_in_flight(
    rt: &tokio::runtime::Runtime,
    conn: &Connection,
    topic: &'static str,
    iters: u64,
) -> Duration {
    let per = iters.div_ceil(64);
    let start = Instant::now();
    rt.block_on(async {
        in_flight(64, |t| {
            let c = conn.clone();
            async move {
                for _ in 0..per {
                    send(&c, topic, t % 4).await;
                }
            }
        })
        .await;
    });
    scaled(start.elapsed(), iters, per * 64)
}

fn produce(c: &mut Criterion) {
    let (rt, _broker, conn) = connected_broker(&[]);
    let mut g = group(c, "broker_produce_1KiB");
    g.throughput(Throughput::Elements(1));
    g.bench_function("send_v2_64_in_flight", |b| {
        b.iter_custom(|iters| send_v2_64_in_flight(&rt, &conn, "BenchProduce", iters));
    });
    let batch_body = encode_batch(
        &(0..32)
            .map(|i| {
                let mut p = Properties::new();
                p.put("UNIQ_KEY", format!("7F0000010001{i:020X}"));
                BatchMessage {
                    flag: 0,
                    body: Bytes::from_static(&BODY),
                    properties: p,
                }
            })
            .collect::<Vec<_>>(),
    )
    .expect("batch");
    g.throughput(Throughput::Elements(32));
    g.bench_function("send_batch_32_16_in_flight", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(16);
            let start = Instant::now();
            rt.block_on(async {
                in_flight(16, |t| {
                    let (c, body) = (conn.clone(), batch_body.clone());
                    async move {
                        for _ in 0..per {
                            let req = RemotingCommand::new_request(
                                RequestCode::SEND_BATCH_MESSAGE.0,
                                common::send_header("BenchBatch", t % 4, "", 0, true),
                            )
                            .with_body(body.clone());
                            let r = c.request(req, T).await.expect("batch send");
                            assert_eq!(r.code, ResponseCode::SUCCESS.0, "{:?}", r.remark);
                        }
                    }
                })
                .await;
            });
            scaled(start.elapsed(), iters, per * 16)
        });
    });
    g.finish();
}

/// Sync sends of big bodies (issue 18, item 4): 64 KiB with 32 in flight and 1 MiB with 8,
/// as benches/vs_apache's big-body scenarios; throughput in body bytes.
fn produce_big(c: &mut Criterion) {
    let (rt, _broker, conn) = connected_broker(&[]);
    let mut g = group(c, "broker_produce_big");
    for (name, size, tasks) in [("64KiB_32", 64 << 10, 32i32), ("1MiB_8", 1 << 20, 8)] {
        let n = u64::try_from(tasks).expect("positive");
        let body = Bytes::from(vec![b'x'; size]);
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_function(format!("send_v2_{name}_in_flight"), |b| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(n);
                let start = Instant::now();
                rt.block_on(async {
                    in_flight(tasks, |t| {
                        let (c, body) = (conn.clone(), body.clone());
                        async move {
                            for _ in 0..per {
                                send_body(&c, "BenchProduceBig", t % 4, body.clone()).await;
                            }
                        }
                    })
                    .await;
                });
                scaled(start.elapsed(), iters, per * n)
            });
        });
    }
    g.finish();
}

fn consume(c: &mut Criterion) {
    // Bytes per chunk and chunks of the interleaved baseline/broker comparison at the end.
    const CHUNK: u64 = 256 << 20;
    const ROUNDS: usize = 8;
    // RocketMQ's defaults cap a pull at 32 messages (256 KiB) from memory; the 1024 variant
    // raises both caps, as an operator tuning for throughput would, so that it measures the
    // transport rather than the per-request cost. A request for 32 is capped at 32 either way.
    let (rt, _broker, conn) = connected_broker(&[
        ("maxTransferCountOnMessageInMemory", "1024"),
        ("maxTransferBytesOnMessageInMemory", "2097152"),
    ]);
    // 4 queues × 50 000 messages of 1 KiB.
    rt.block_on(in_flight(64, |t| {
        let c = conn.clone();
        async move {
            for _ in 0..(CONSUME_PER_QUEUE * 4 / 64) {
                send(&c, "BenchConsume", t % 4).await;
            }
        }
    }));
    let record = rmq_common::record::calc_msg_length(
        0,
        BODY.len(),
        "BenchConsume".len(),
        "TAGS\u{1}TagA\u{2}".len() + 60,
    );
    let mut g = group(c, "broker_consume_1KiB");
    g.throughput(Throughput::Bytes(1 << 20));

    // Baseline: one loopback connection, 256 KiB writes, a reader draining it.
    let socks = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (w, r) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
        let (w, r) = (w.expect("connect"), r.expect("accept").0);
        Arc::new((tokio::sync::Mutex::new(w), tokio::sync::Mutex::new(r)))
    });
    g.bench_function("baseline_loopback_socket_copy", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            rt.block_on(socket_copy(&socks, iters * (1 << 20)));
            start.elapsed()
        });
    });

    // Pull: each iteration is 1 MiB of message bytes; pullers walk their queue and wrap.
    let offsets: Arc<Vec<AtomicI64>> = Arc::new((0..4).map(|_| AtomicI64::new(0)).collect());
    for batch in [32usize, 1024] {
        g.bench_function(format!("pull_4_queues_{batch}_per_pull"), |b| {
            b.iter_custom(|iters| {
                let start = Instant::now();
                rt.block_on(pull(&conn, &offsets, batch, iters * (1 << 20)));
                start.elapsed()
            });
        });
    }

    // The same two, alternating in chunks within one run, so that both see the same state of
    // this noisy machine (the socket copy alone varies 2× between runs).
    #[expect(clippy::cast_precision_loss, reason = "256 MiB is exact in f64")]
    let gib_s = |t: Duration| CHUNK as f64 / t.as_secs_f64() / f64::from(1u32 << 30);
    let (mut base, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        rt.block_on(socket_copy(&socks, CHUNK));
        base.push(gib_s(start.elapsed()));
        let start = Instant::now();
        rt.block_on(pull(&conn, &offsets, 1024, CHUNK));
        ours.push(gib_s(start.elapsed()));
    }
    let mut ratios: Vec<f64> = ours.iter().zip(&base).map(|(o, b)| o / b).collect();
    let median = |v: &mut Vec<f64>| percentile(v, 0.5);
    eprintln!(
        "consume interleaved ({ROUNDS} rounds of 256 MiB): socket copy median {:.2} GiB/s, pull \
         1024 per pull median {:.2} GiB/s, median of the rounds' ratios {:.2}; socket copy \
         {base:.2?}, pull {ours:.2?}",
        median(&mut base.clone()),
        median(&mut ours.clone()),
        median(&mut ratios)
    );
    g.finish();
    eprintln!("consume bench: record size ≈ {record} bytes per 1 KiB message");
}

/// The two ends of the baseline's loopback connection.
type Sockets = (
    tokio::sync::Mutex<tokio::net::TcpStream>,
    tokio::sync::Mutex<tokio::net::TcpStream>,
);

/// The baseline: `bytes` through one loopback connection in 256 KiB writes, drained by a reader.
async fn socket_copy(socks: &Arc<Sockets>, bytes: u64) {
    let s = Arc::clone(socks);
    let writer = tokio::spawn(async move {
        let chunk = vec![7u8; 256 * 1024];
        let mut w = s.0.lock().await;
        let mut sent = 0u64;
        while sent < bytes {
            w.write_all(&chunk).await.expect("write");
            sent += chunk.len() as u64;
        }
    });
    let mut r = socks.1.lock().await;
    let mut buf = vec![0u8; 256 * 1024];
    let mut got = 0u64;
    while got < bytes {
        got += r.read(&mut buf).await.expect("read") as u64;
    }
    writer.await.expect("writer");
}

/// Pull `target` bytes of messages: one puller per queue of `BenchConsume`, `batch` per pull,
/// each going on from its queue's offset in `offsets` and wrapping at the end.
async fn pull(conn: &Connection, offsets: &Arc<Vec<AtomicI64>>, batch: usize, target: u64) {
    let done = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..4)
        .map(|q| {
            let (c, d, offs) = (conn.clone(), Arc::clone(&done), Arc::clone(offsets));
            tokio::spawn(async move {
                while d.load(Ordering::Relaxed) < target {
                    let mut off = offs[q].load(Ordering::Relaxed);
                    if off >= CONSUME_PER_QUEUE {
                        off = 0;
                    }
                    let header: ExtFields = [
                        ("consumerGroup", "bench".to_owned()),
                        ("topic", "BenchConsume".to_owned()),
                        ("queueId", q.to_string()),
                        ("queueOffset", off.to_string()),
                        ("maxMsgNums", batch.to_string()),
                        ("sysFlag", "4".to_owned()),
                        ("commitOffset", "0".to_owned()),
                        ("suspendTimeoutMillis", "0".to_owned()),
                        ("subscription", "*".to_owned()),
                        ("subVersion", "0".to_owned()),
                    ]
                    .into_iter()
                    .collect();
                    let req = RemotingCommand::new_request(RequestCode::PULL_MESSAGE.0, header);
                    let r = c.request(req, T).await.expect("pull");
                    assert_eq!(r.code, ResponseCode::SUCCESS.0, "{:?}", r.remark);
                    let n = r.body.as_ref().map_or(0, Bytes::len);
                    let next: i64 = r
                        .ext_fields
                        .get("nextBeginOffset")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(off);
                    offs[q].store(next, Ordering::Relaxed);
                    d.fetch_add(n as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("puller");
    }
}

async fn send_offset(c: &Connection, topic: &str, queue_id: i32) -> i64 {
    let r = send(c, topic, queue_id).await;
    let id = r.ext_fields.get("msgId").expect("msgId");
    rmq_common::decode_offset_msg_id(id).expect("offset id").1
}

fn retry(c: &mut Criterion) {
    let (rt, _broker, conn) = connected_broker(&[]);
    // 4 096 stored messages the "consumer" fails, handed back round-robin.
    let offsets: Arc<Vec<i64>> = Arc::new(rt.block_on(async {
        let mut v = Vec::with_capacity(4096);
        for i in 0..4096 {
            v.push(send_offset(&conn, "BenchRetry", i % 4).await);
        }
        v
    }));
    let mut g = group(c, "broker_retry_1KiB");
    g.throughput(Throughput::Elements(1));
    g.bench_function("baseline_send_v2_64_in_flight", |b| {
        b.iter_custom(|iters| send_v2_64_in_flight(&rt, &conn, "BenchRetryBaseline", iters));
    });
    g.bench_function("send_msg_back_64_in_flight", |b| {
        b.iter_custom(|iters| {
            let per = iters.div_ceil(64);
            let start = Instant::now();
            rt.block_on(async {
                in_flight(64, |t| {
                    let (c, offs) = (conn.clone(), Arc::clone(&offsets));
                    async move {
                        for i in 0..per {
                            let idx = (u64::from(t.unsigned_abs()) + i * 64) % offs.len() as u64;
                            let idx = usize::try_from(idx).expect("below offs.len()");
                            let header: ExtFields = [
                                ("offset", offs[idx].to_string()),
                                ("group", "bench-group".to_owned()),
                                ("delayLevel", "0".to_owned()),
                                ("originMsgId", "x".to_owned()),
                                ("originTopic", "BenchRetry".to_owned()),
                                ("unitMode", "false".to_owned()),
                                ("maxReconsumeTimes", "16".to_owned()),
                            ]
                            .into_iter()
                            .collect();
                            let req = RemotingCommand::new_request(
                                RequestCode::CONSUMER_SEND_MSG_BACK.0,
                                header,
                            )
                            .with_version(rmq_protocol::version::CURRENT_VERSION);
                            let r = c.request(req, T).await.expect("send back");
                            assert_eq!(r.code, ResponseCode::SUCCESS.0, "{:?}", r.remark);
                        }
                    }
                })
                .await;
            });
            scaled(start.elapsed(), iters, per * 64)
        });
    });
    g.finish();
}

fn tls(c: &mut Criterion) {
    const CHUNK: u64 = 128 << 20;
    const SENDS: u64 = 20_000;
    const ROUNDS: usize = 6;
    let (rt, _broker, plain, tls) = connected_broker_tls(&[
        ("maxTransferCountOnMessageInMemory", "1024"),
        ("maxTransferBytesOnMessageInMemory", "2097152"),
    ]);
    rt.block_on(in_flight(64, |t| {
        let c = plain.clone();
        async move {
            for _ in 0..(CONSUME_PER_QUEUE * 4 / 64) {
                send(&c, "BenchConsume", t % 4).await;
            }
        }
    }));
    let mut g = group(c, "broker_tls_1KiB");
    let offsets: Arc<Vec<AtomicI64>> = Arc::new((0..4).map(|_| AtomicI64::new(0)).collect());
    g.throughput(Throughput::Bytes(1 << 20));
    g.bench_function("pull_4_queues_1024_per_pull_tls", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            rt.block_on(pull(&tls, &offsets, 1024, iters * (1 << 20)));
            start.elapsed()
        });
    });
    g.throughput(Throughput::Elements(1));
    g.bench_function("send_v2_64_in_flight_tls", |b| {
        b.iter_custom(|iters| send_v2_64_in_flight(&rt, &tls, "BenchTls", iters));
    });
    g.finish();

    // Plain and TLS alternating, so that both see the same state of this noisy machine.
    #[expect(clippy::cast_precision_loss, reason = "exact below 2^53")]
    let per_s = |n: u64, t: Duration| n as f64 / t.as_secs_f64();
    let (mut pulls, mut sends) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for _ in 0..ROUNDS {
        for (i, conn) in [&plain, &tls].into_iter().enumerate() {
            let start = Instant::now();
            rt.block_on(pull(conn, &offsets, 1024, CHUNK));
            pulls[i].push(per_s(CHUNK, start.elapsed()) / f64::from(1u32 << 30));
            let took = send_v2_64_in_flight(&rt, conn, "BenchTls", SENDS);
            sends[i].push(per_s(SENDS, took));
        }
    }
    let median = |v: &[f64]| percentile(&mut v.to_vec(), 0.5);
    let ratio = |v: &[Vec<f64>; 2]| {
        let mut r: Vec<f64> = v[1].iter().zip(&v[0]).map(|(t, p)| t / p).collect();
        percentile(&mut r, 0.5)
    };
    eprintln!(
        "tls interleaved ({ROUNDS} rounds): pull 1024 per pull median plain {:.2} GiB/s, TLS \
         {:.2} GiB/s (median ratio {:.2}); send_v2 64 in flight median plain {:.0}/s, TLS \
         {:.0}/s (median ratio {:.2})",
        median(&pulls[0]),
        median(&pulls[1]),
        ratio(&pulls),
        median(&sends[0]),
        median(&sends[1]),
        ratio(&sends)
    );
}

criterion_group!(benches, produce, produce_big, consume, tls, retry);
criterion_main!(benches);
