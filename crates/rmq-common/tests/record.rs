//! Property tests of the CommitLog record: what is encoded decodes to the same fields and
//! re-encodes to the same bytes (V1 and V2, IPv4 and IPv6 hosts); every truncation of a
//! record is a "need more" error; no input makes the decoder panic.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::Bytes;
use proptest::prelude::*;
use rmq_common::record::{
    calc_msg_length, encode_record, scan_record, DecodedRecord, MessageExt, MessageToStore, Scan,
    StoreFields, MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2,
};
use rmq_common::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};

fn host() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<u32>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V4(Ipv4Addr::from(ip)), port)),
        (any::<u128>(), any::<u16>())
            .prop_map(|(ip, port)| SocketAddr::new(IpAddr::V6(Ipv6Addr::from(ip)), port)),
    ]
}

/// Topics on both sides of the V1/V2 boundary (127 bytes), some not ASCII.
fn topic() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9_%-]{1,127}",
        "[A-Za-z0-9é]{100,300}".prop_filter("V2", |t| t.len() > 127),
        "[a-z]{1,4}€[a-z]{0,4}",
    ]
}

#[derive(Debug, Clone)]
struct Input {
    topic: String,
    body: Vec<u8>,
    properties: String,
    queue_id: i32,
    flag: i32,
    sys_flag: i32,
    born_timestamp: i64,
    born_host: SocketAddr,
    reconsume_times: i32,
    prepared_transaction_offset: i64,
    queue_offset: i64,
    physical_offset: i64,
    store_timestamp: i64,
    store_host: SocketAddr,
}

fn input() -> impl Strategy<Value = Input> {
    (
        (
            topic(),
            prop::collection::vec(any::<u8>(), 0..300),
            "[ -~\u{1}\u{2}é]{0,200}",
        ),
        (
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            any::<i64>(),
            host(),
        ),
        (any::<i32>(), any::<i64>(), any::<i64>(), any::<i64>()),
        (any::<i64>(), host()),
    )
        .prop_map(|((topic, body, properties), a, b, c)| Input {
            topic,
            body,
            properties,
            queue_id: a.0,
            flag: a.1,
            sys_flag: a.2,
            born_timestamp: a.3,
            born_host: a.4,
            reconsume_times: b.0,
            prepared_transaction_offset: b.1,
            queue_offset: b.2,
            physical_offset: b.3,
            store_timestamp: c.0,
            store_host: c.1,
        })
}

fn encode(i: &Input) -> Vec<u8> {
    let msg = MessageToStore {
        topic: &i.topic,
        queue_id: i.queue_id,
        flag: i.flag,
        body: &i.body,
        properties: i.properties.as_bytes(),
        sys_flag: i.sys_flag,
        born_timestamp: i.born_timestamp,
        born_host: i.born_host,
        reconsume_times: i.reconsume_times,
        prepared_transaction_offset: i.prepared_transaction_offset,
    };
    let sys_flag = msg.effective_sys_flag(&i.store_host);
    let f = StoreFields {
        queue_offset: i.queue_offset,
        physical_offset: i.physical_offset,
        store_timestamp: i.store_timestamp,
        store_host: i.store_host,
        body_crc: rmq_common::body_crc(&i.body),
        sys_flag,
    };
    let len = calc_msg_length(sys_flag, i.body.len(), i.topic.len(), i.properties.len());
    let mut buf = vec![0u8; len];
    encode_record(&mut buf, &msg, &f);
    buf
}

fn host_extra(h: &SocketAddr) -> usize {
    if h.is_ipv6() {
        12
    } else {
        0
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn encode_then_decode_gives_every_field_back(i in input()) {
        let buf = encode(&i);
        let magic = i32::from_be_bytes(buf[4..8].try_into().unwrap());
        let v2 = i.topic.len() > 127;
        prop_assert_eq!(magic, if v2 { MESSAGE_MAGIC_CODE_V2 } else { MESSAGE_MAGIC_CODE_V1 });
        let Scan::Message(r) = scan_record(&buf, true) else {
            return Err(TestCaseError::fail("the record does not scan"));
        };
        let mut flag = i.sys_flag & !(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG);
        if i.born_host.is_ipv6() {
            flag |= BORNHOST_V6_FLAG;
        }
        if i.store_host.is_ipv6() {
            flag |= STOREHOSTADDRESS_V6_FLAG;
        }
        prop_assert_eq!(r.total_size, buf.len());
        prop_assert_eq!(r.topic, i.topic.as_str());
        prop_assert_eq!(r.body, &i.body[..]);
        prop_assert_eq!(r.properties, i.properties.as_bytes());
        prop_assert_eq!((r.queue_id, r.flag, r.sys_flag), (i.queue_id, i.flag, flag));
        prop_assert_eq!((r.born_timestamp, r.born_host), (i.born_timestamp, i.born_host));
        prop_assert_eq!((r.store_timestamp, r.store_host), (i.store_timestamp, i.store_host));
        prop_assert_eq!((r.queue_offset, r.physical_offset), (i.queue_offset, i.physical_offset));
        prop_assert_eq!(r.reconsume_times, i.reconsume_times);
        prop_assert_eq!(r.prepared_transaction_offset, i.prepared_transaction_offset);
        // The owned message shares the body (no copy) and writes the same bytes back.
        let bytes = Bytes::from(buf.clone());
        let m = MessageExt::decode(&bytes).unwrap();
        let body_at = 88 + host_extra(&i.born_host) + host_extra(&i.store_host);
        if !i.body.is_empty() {
            prop_assert_eq!(m.body.as_ptr(), bytes[body_at..].as_ptr());
        }
        prop_assert_eq!(usize::try_from(m.store_size).unwrap(), buf.len());
        if m.properties.encode() == i.properties {
            prop_assert_eq!(&m.to_record().unwrap()[..], &buf[..]);
        }
    }

    #[test]
    fn every_truncation_is_a_need_more_error(i in input()) {
        let buf = encode(&i);
        let bytes = Bytes::from(buf.clone());
        for cut in 0..buf.len() {
            match scan_record(&buf[..cut], true) {
                Scan::Invalid(e) => prop_assert!(e.is_truncated(), "cut {}: {}", cut, e),
                other => return Err(TestCaseError::fail(format!("cut {cut}: {other:?}"))),
            }
            prop_assert!(DecodedRecord::parse(&buf[..cut]).is_err());
            prop_assert!(MessageExt::decode(&bytes.slice(..cut)).is_err());
        }
    }

    #[test]
    fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..400)) {
        let _ = scan_record(&b, true);
        let _ = MessageExt::decode(&Bytes::from(b));
    }

    #[test]
    fn random_fields_behind_a_valid_header_never_panic(
        v2 in any::<bool>(),
        rest in prop::collection::vec(any::<u8>(), 83..400),
    ) {
        let total = i32::try_from(rest.len() + 8).unwrap();
        let magic = if v2 { MESSAGE_MAGIC_CODE_V2 } else { MESSAGE_MAGIC_CODE_V1 };
        let mut b = total.to_be_bytes().to_vec();
        b.extend_from_slice(&magic.to_be_bytes());
        b.extend_from_slice(&rest);
        if let Scan::Message(r) = scan_record(&b, false) {
            prop_assert_eq!(r.total_size, b.len());
        }
        let _ = MessageExt::decode(&Bytes::from(b));
    }

    #[test]
    fn any_one_byte_change_never_panics(
        i in input(),
        at in any::<prop::sample::Index>(),
        x in 1u8..,
    ) {
        let mut buf = encode(&i);
        let at = at.index(buf.len());
        buf[at] ^= x;
        if let Scan::Message(r) = scan_record(&buf, true) {
            prop_assert_eq!(r.total_size, buf.len());
        }
        let _ = MessageExt::decode(&Bytes::from(buf));
    }
}
