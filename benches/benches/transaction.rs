#![expect(missing_docs, reason = "criterion_group! generates undocumented items")]
//! Transactional against plain sends on the broker over loopback TCP, 1 KiB bodies,
//! ASYNC_FLUSH, 64 producers in flight on one connection, in the same run:
//!
//! * `plain`: SEND_MESSAGE_V2, answered once stored;
//! * `transactional`: the half message (SEND_MESSAGE_V2 with `TRAN_MSG=true`), then, on its
//!   answer, END_TRANSACTION commit, oneway, as a producer whose local transaction commits at
//!   once; the broker re-puts the half to its topic and writes an op record. Each iteration
//!   ends when the commit has been sent, so the broker's END_TRANSACTION work overlaps the
//!   next halves, as it does for a real producer; the run waits for the last commits to land.

use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rmq_benches::scaled;
use rmq_protocol::header::{EndTransactionRequestHeader, SendMessageResponseHeader};
use rmq_protocol::{CommandHeader, ExtFields, RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::Connection;
use rmq_store::MessageStore;

mod common;

use common::{connected_broker, group, in_flight, BODY, T};

const IN_FLIGHT: i32 = 64;
/// [`IN_FLIGHT`] as a count of iterations.
const IN_FLIGHT_N: u64 = IN_FLIGHT.unsigned_abs() as u64;

fn send_header(topic: &str, queue_id: i32, transactional: bool) -> ExtFields {
    if transactional {
        let props = "TAGS\u{1}TagA\u{2}TRAN_MSG\u{1}true\u{2}PGROUP\u{1}bench-producer\u{2}";
        common::send_header(topic, queue_id, props, 4, false)
    } else {
        common::send_header(topic, queue_id, "TAGS\u{1}TagA\u{2}", 0, false)
    }
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
    let (rt, broker, conn) = connected_broker(&[]);
    let mut g = group(c, "broker_transactional_1KiB");
    g.throughput(Throughput::Elements(1));
    for (name, topic, transactional) in [
        ("plain_64_in_flight", "BenchPlain", false),
        ("transactional_64_in_flight", "BenchTx", true),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let per = iters.div_ceil(IN_FLIGHT_N);
                let before = topic_total(&broker.store, topic);
                let start = Instant::now();
                rt.block_on(async {
                    in_flight(IN_FLIGHT, |t| {
                        let c = conn.clone();
                        async move {
                            for _ in 0..per {
                                send(&c, topic, t % 4, transactional).await;
                            }
                        }
                    })
                    .await;
                    // Every message in its topic (dispatched), commits included.
                    let want = before + i64::try_from(per * IN_FLIGHT_N).expect("message count");
                    while topic_total(&broker.store, topic) < want {
                        tokio::time::sleep(Duration::from_micros(200)).await;
                    }
                });
                scaled(start.elapsed(), iters, per * IN_FLIGHT_N)
            });
        });
    }
    g.finish();
}

criterion_group!(benches, produce);
criterion_main!(benches);
