//! The record layout field by field, and each strict decode rule with the bytes that break it.

use std::net::SocketAddr;

use super::*;

fn msg<'a>(topic: &'a str, body: &'a [u8], props: &'a [u8]) -> MessageToStore<'a> {
    MessageToStore {
        topic,
        queue_id: 3,
        flag: 7,
        body,
        properties: props,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        born_host: "192.168.0.1:5555".parse().unwrap(),
        reconsume_times: 2,
        prepared_transaction_offset: 0,
    }
}

fn encode(m: &MessageToStore<'_>, store: &str) -> Vec<u8> {
    let store_host: SocketAddr = store.parse().unwrap();
    let sys_flag = m.effective_sys_flag(&store_host);
    let f = StoreFields {
        queue_offset: 42,
        physical_offset: 4096,
        store_timestamp: 1_700_000_000_123,
        store_host,
        body_crc: crate::body_crc(m.body),
        sys_flag,
    };
    let mut buf =
        vec![0u8; calc_msg_length(sys_flag, m.body.len(), m.topic.len(), m.properties.len())];
    assert_eq!(encode_record(&mut buf, m, &f), buf.len());
    buf
}

fn invalid(buf: &[u8]) -> RecordError {
    match scan_record(buf, true) {
        Scan::Invalid(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn fixed_overhead_is_91_bytes() {
    assert_eq!(MIN_RECORD_BYTES, 91);
    assert_eq!(
        calc_msg_length(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG, 0, 0, 0),
        115
    );
    assert_eq!(calc_msg_length(0, 0, 128, 0), 91 + 1 + 128);
}

#[test]
fn record_layout_field_by_field() {
    let props = b"TAGS\x01a\x02";
    let m = msg("T", b"hello", props);
    let buf = encode(&m, "10.0.0.9:10911");
    let len = buf.len();
    let be32 = |p: usize| i32::from_be_bytes(buf[p..p + 4].try_into().unwrap());
    let be64 = |p: usize| i64::from_be_bytes(buf[p..p + 8].try_into().unwrap());
    assert_eq!(usize::try_from(be32(0)).unwrap(), len);
    assert_eq!(buf[4..8], [0xDA, 0xA3, 0x20, 0xA7]);
    assert_eq!(be32(8), crate::body_crc(b"hello"));
    assert_eq!(be32(12), 3);
    assert_eq!(be32(16), 7);
    assert_eq!(be64(QUEUE_OFFSET_POS), 42);
    assert_eq!(be64(PHYSICAL_OFFSET_POS), 4096);
    assert_eq!(be32(SYSFLAG_POS), 0);
    assert_eq!(be64(40), 1_700_000_000_000);
    assert_eq!(buf[BORNHOST_POS..52], [192, 168, 0, 1]);
    assert_eq!(be32(52), 5555);
    assert_eq!(be64(56), 1_700_000_000_123);
    assert_eq!(buf[64..68], [10, 0, 0, 9]);
    assert_eq!(be32(68), 10911);
    assert_eq!(be32(72), 2);
    assert_eq!(be64(76), 0);
    assert_eq!(be32(84), 5);
    assert_eq!(&buf[88..93], b"hello");
    assert_eq!(buf[93], 1);
    assert_eq!(buf[94], b'T');
    assert_eq!(
        usize::try_from(i16::from_be_bytes([buf[95], buf[96]])).unwrap(),
        props.len()
    );
    assert_eq!(&buf[97..], props);
    let Scan::Message(r) = scan_record(&buf, true) else {
        panic!("not a record")
    };
    assert_eq!(
        (r.topic, r.body, r.properties),
        ("T", &b"hello"[..], &props[..])
    );
    assert_eq!(r.born_host, m.born_host);
    assert_eq!(r.store_host, "10.0.0.9:10911".parse().unwrap());
    assert_eq!((r.queue_offset, r.total_size), (42, len));
}

#[test]
fn long_topic_takes_v2_magic_and_ipv6_hosts_set_their_flags() {
    let topic = "t".repeat(200);
    let mut m = msg(&topic, b"x", b"");
    m.born_host = "[::1]:1".parse().unwrap();
    let buf = encode(&m, "[fe80::1]:10911");
    assert_eq!(buf[4..8], [0xDA, 0xA3, 0x20, 0xAB]);
    let Scan::Message(r) = scan_record(&buf, true) else {
        panic!("not a record")
    };
    assert_eq!(r.sys_flag, BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG);
    assert_eq!(r.topic.len(), 200);
    assert_eq!(r.born_host, m.born_host);
}

#[test]
fn blank_filler_is_told_apart_from_damage_and_need_more() {
    let mut blank = [0u8; 8];
    encode_blank(&mut blank, 8);
    assert!(matches!(scan_record(&blank, true), Scan::Blank));
    // A filler is not a message where one is expected.
    assert_eq!(
        DecodedRecord::parse(&blank),
        Err(RecordError::BadMagic(0xCBD4_3194))
    );
    assert!(matches!(invalid(&[0u8; 64]), RecordError::BadMagic(0)));
    let buf = encode(&msg("T", b"hello", b""), "1.2.3.4:5");
    let short = invalid(&buf[..buf.len() - 1]);
    assert!(short.is_truncated(), "{short}");
    assert!(invalid(&buf[..5]).is_truncated());
}

#[test]
fn crc_is_checked_only_when_asked() {
    let mut buf = encode(&msg("T", b"hello", b""), "1.2.3.4:5");
    buf[90] ^= 0xFF;
    assert!(matches!(invalid(&buf), RecordError::CrcMismatch { .. }));
    assert!(matches!(scan_record(&buf, false), Scan::Message(_)));
}

#[test]
fn out_of_range_port_is_an_error_not_port_zero() {
    let mut buf = encode(&msg("T", b"b", b""), "1.2.3.4:5");
    buf[52..56].copy_from_slice(&70_000i32.to_be_bytes());
    assert_eq!(
        invalid(&buf),
        RecordError::BadPort {
            field: "BORNHOST",
            port: 70_000
        }
    );
    buf[52..56].copy_from_slice(&(-1i32).to_be_bytes());
    assert!(matches!(
        invalid(&buf),
        RecordError::BadPort { port: -1, .. }
    ));
}

#[test]
fn topic_length_is_signed_as_java_reads_it() {
    // V1: the length byte 0x80 is -128 in Java, not 128.
    let topic = "a".repeat(100);
    let mut buf = encode(&msg(&topic, b"", b""), "1.2.3.4:5");
    let at = 88; // BODYLENGTH 0, so TOPICLENGTH follows at 88
    assert_eq!(buf[at], 100);
    buf[at] = 0x80;
    assert!(matches!(
        invalid(&buf),
        RecordError::BadLength {
            field: "TOPICLENGTH",
            value: -128,
            ..
        }
    ));
    // V2: a negative short.
    let topic = "a".repeat(200);
    let mut buf = encode(&msg(&topic, b"", b""), "1.2.3.4:5");
    buf[at..at + 2].copy_from_slice(&(-2i16).to_be_bytes());
    assert!(matches!(
        invalid(&buf),
        RecordError::BadLength { value: -2, .. }
    ));
}

#[test]
fn topic_must_be_utf8_and_properties_on_request() {
    let mut buf = encode(&msg("TT", b"", b"K\x01V\x02"), "1.2.3.4:5");
    buf[89] = 0xFF;
    assert!(matches!(
        invalid(&buf),
        RecordError::NotUtf8 { field: "TOPIC", .. }
    ));
    let mut buf = encode(&msg("TT", b"", b"K\x01V\x02"), "1.2.3.4:5");
    let n = buf.len();
    buf[n - 2] = 0xFF;
    let r = DecodedRecord::parse(&buf).unwrap();
    assert!(matches!(
        r.properties_str(),
        Err(RecordError::NotUtf8 {
            field: "PROPERTIES",
            valid_up_to: 2
        })
    ));
    assert!(MessageExt::decode(&bytes::Bytes::from(buf)).is_err());
}

#[test]
fn total_size_must_match_the_fields() {
    let mut buf = encode(&msg("T", b"hello", b""), "1.2.3.4:5");
    buf.push(0);
    let n = i32::try_from(buf.len()).unwrap();
    buf[..4].copy_from_slice(&n.to_be_bytes());
    assert!(matches!(invalid(&buf), RecordError::SizeMismatch { .. }));
    buf[..4].copy_from_slice(&(-5i32).to_be_bytes());
    assert!(matches!(
        invalid(&buf),
        RecordError::BadLength {
            field: "TOTALSIZE",
            ..
        }
    ));
    buf[..4].copy_from_slice(&20i32.to_be_bytes());
    assert!(matches!(
        invalid(&buf),
        RecordError::SizeMismatch { total: 20, .. }
    ));
}

#[test]
fn a_v2_record_may_hold_a_short_topic() {
    // Java picks the topic length size from the magic, not from the topic.
    let buf = encode(&msg("T", b"", b""), "1.2.3.4:5");
    let mut v2 = Vec::new();
    v2.extend_from_slice(&(i32::try_from(buf.len()).unwrap() + 1).to_be_bytes());
    v2.extend_from_slice(&MESSAGE_MAGIC_CODE_V2.to_be_bytes());
    v2.extend_from_slice(&buf[8..88]);
    v2.extend_from_slice(&1i16.to_be_bytes());
    v2.extend_from_slice(&buf[89..]);
    let Scan::Message(r) = scan_record(&v2, true) else {
        panic!("not a record")
    };
    assert_eq!(r.topic, "T");
}
