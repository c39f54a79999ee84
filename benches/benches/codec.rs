#![expect(missing_docs, reason = "criterion_group! generates undocumented items")]
//! The frame codec on the send path: decoding a SEND_MESSAGE_V2 request as Apache's Java
//! client writes it (a fastjson header whose properties carry `\u0001`/`\u0002` escapes, a
//! 1 KiB body) and reading its header fields, as every send a broker serves does; and the
//! property look-ups every stored message gets (`DELAY` and `TRAN_MSG` on the send path,
//! `TAGS`, `KEYS`, `UNIQ_KEY` in dispatch), by walking the pairs and by a `PropertyFinder`.

use std::hint::black_box;
use std::time::Duration;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rmq_common::properties::{find, find_property, PropertyFinder, PropertyKey};
use rmq_protocol::decode;
use rmq_protocol::header::SendMessageRequestHeader;

/// A Java 4.9.8 client's SEND_MESSAGE_V2 header (fastjson: fields in its order, the property
/// separators escaped).
const JAVA_SEND_V2: &str = r#"{"code":310,"extFields":{"a":"ProducerGroupName","b":"TopicTest","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0","i":"KEYS\u0001OrderID188\u0002UNIQ_KEY\u00017F000001562C18B4AAC23E0F06D60000\u0002WAIT\u0001true\u0002TAGS\u0001TagA\u0002","j":"0","k":"false","l":"0","m":"false","n":"broker-a"},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":409}"#;

fn frame(header: &[u8], body: &[u8]) -> Vec<u8> {
    let len = u32::try_from(4 + header.len() + body.len()).expect("small frame");
    let mut f = len.to_be_bytes().to_vec();
    f.extend_from_slice(
        &u32::try_from(header.len())
            .expect("small header")
            .to_be_bytes(),
    );
    f.extend_from_slice(header);
    f.extend_from_slice(body);
    f
}

fn decode_send(c: &mut Criterion) {
    let bytes = frame(JAVA_SEND_V2.as_bytes(), &[7u8; 1024]);
    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(1));
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("decode_java_send_v2_and_header", |b| {
        b.iter(|| {
            let mut buf = BytesMut::from(black_box(&bytes[..]));
            let cmd = decode(&mut buf).expect("valid").expect("whole");
            let h = SendMessageRequestHeader::from_request(cmd.code, &cmd.ext_fields)
                .expect("a send header");
            black_box((h.queue_id, h.topic.len(), cmd.body.map(|b| b.len())))
        });
    });
    g.finish();
}

/// A batched message's properties as the Java client and the broker leave them.
const BATCH_PROPERTIES: &[u8] =
    b"UNIQ_KEY\x017F000001562C18B4AAC23E0F06D60000\x02WAIT\x01true\x02CLUSTER\x01DefaultCluster\x02";

fn property_lookups(c: &mut Criterion) {
    let mut g = c.benchmark_group("properties");
    g.throughput(Throughput::Elements(1));
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let cluster = PropertyFinder::new(PropertyKey::CLUSTER);
    for (label, name, finder) in [
        (
            "absent DELAY",
            PropertyKey::DELAY_TIME_LEVEL,
            &*find::DELAY_TIME_LEVEL,
        ),
        ("last CLUSTER", PropertyKey::CLUSTER, &cluster),
    ] {
        g.bench_function(format!("walk, {label}"), |b| {
            b.iter(|| find_property(black_box(BATCH_PROPERTIES), name));
        });
        g.bench_function(format!("finder, {label}"), |b| {
            b.iter(|| finder.find(black_box(BATCH_PROPERTIES)));
        });
    }
    g.finish();
}

criterion_group!(benches, decode_send, property_lookups);
criterion_main!(benches);
