//! Property tests: round trips for arbitrary commands, headers and batches, and totality of
//! the decoders on arbitrary and truncated input.

use bytes::{Bytes, BytesMut};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use rmq_protocol::header::{CommandHeader, SendMessageRequestHeader, SendMessageRequestHeaderV2};
use rmq_protocol::message_decoder::{decode_batch, decode_messages, encode_batch, BatchMessage};
use rmq_protocol::{
    codec, decode, encode, json_compat, LanguageCode, RemotingCommand, SerializeType,
};

fn any_string() -> impl Strategy<Value = String> {
    // Mix of ASCII (with control characters and quotes) and arbitrary Unicode.
    prop_oneof![
        "[ -~\u{1}\u{2}\n\t\"\\\\]{0,24}",
        any::<String>().prop_map(|s| s.chars().take(24).collect()),
    ]
}

fn any_command() -> impl Strategy<Value = RemotingCommand> {
    (
        any::<bool>(),
        any::<i16>(),
        0..LanguageCode::ALL.len(),
        any::<i16>(),
        any::<i32>(),
        any::<i32>(),
        proptest::option::of(any_string()),
        btree_map(any_string(), any_string(), 0..8),
        proptest::option::of(vec(any::<u8>(), 1..64)),
    )
        .prop_map(
            |(binary, code, lang, version, opaque, flag, remark, ext_fields, body)| {
                let serialize_type = if binary {
                    SerializeType::RocketMq
                } else {
                    SerializeType::Json
                };
                RemotingCommand {
                    code: i32::from(code),
                    language: LanguageCode::ALL[lang],
                    version: i32::from(version),
                    opaque,
                    flag,
                    // The binary header cannot tell an empty remark from none (Java reads
                    // length 0 as null), so only generate what each form can carry.
                    remark: if binary {
                        remark.filter(|r| !r.is_empty())
                    } else {
                        remark
                    },
                    ext_fields: ext_fields.into_iter().collect(),
                    body: body.map(Bytes::from),
                    serialize_type,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn encode_decode_round_trip(cmd in any_command()) {
        let mut buf = BytesMut::new();
        encode(&cmd, &mut buf).unwrap();
        let len = buf.len();
        let got = decode(&mut buf).unwrap().unwrap();
        prop_assert_eq!(&got, &cmd);
        prop_assert!(buf.is_empty());
        // The header-for-body form produces the same prefix.
        let head = codec::encode_header_for_body(&cmd, cmd.body_len()).unwrap();
        prop_assert_eq!(head.len() + cmd.body_len(), len);
    }

    #[test]
    fn every_truncation_is_incomplete(cmd in any_command()) {
        let mut full = BytesMut::new();
        encode(&cmd, &mut full).unwrap();
        for cut in 0..full.len() {
            let mut part = BytesMut::from(&full[..cut]);
            prop_assert_eq!(decode(&mut part).unwrap(), None);
        }
    }

    #[test]
    fn decode_is_total_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..256)) {
        let mut buf = BytesMut::from(&bytes[..]);
        // Whatever comes back, it must come back: no panic, and room reserved only for a
        // frame whose announced length passed the checks, and never more than
        // MAX_RESERVE_BYTES past what arrived (room a stalled frame never touches).
        let res = decode(&mut buf);
        let announced = bytes
            .get(..4)
            .map_or(0, |p| i32::from_be_bytes([p[0], p[1], p[2], p[3]]));
        let allowed = match res {
            Ok(None) => usize::try_from(announced).map_or(0, |n| n + 4),
            _ => 0,
        };
        prop_assert!(allowed <= rmq_protocol::MAX_FRAME_BYTES);
        prop_assert!(buf.capacity() <= 2 * bytes.len().max(allowed) + 64);
        prop_assert!(buf.capacity() <= 2 * (bytes.len() + rmq_protocol::codec::MAX_RESERVE_BYTES) + 64);
    }

    #[test]
    fn decode_is_total_on_corrupted_frames(cmd in any_command(), pos in any::<usize>(), byte in any::<u8>()) {
        let mut full = BytesMut::new();
        encode(&cmd, &mut full).unwrap();
        let i = pos % full.len();
        full[i] = byte;
        for cut in [full.len(), i + 1, full.len() / 2] {
            let mut part = BytesMut::from(&full[..cut.min(full.len())]);
            let _ = decode(&mut part);
        }
    }

    #[test]
    fn header_parsers_are_total(
        binary in any::<bool>(),
        raw in vec(any::<u8>(), 0..128),
        jsonish in "[{}\\[\\]:,\"'0-9a-zA-Z .-]{0,96}",
        body in vec(any::<u8>(), 0..8),
    ) {
        let header = if binary { raw } else { jsonish.into_bytes() };
        let mut frame = Vec::new();
        frame.extend_from_slice(&u32::try_from(4 + header.len() + body.len()).unwrap().to_be_bytes());
        frame.extend_from_slice(&((u32::from(binary) << 24) | u32::try_from(header.len()).unwrap()).to_be_bytes());
        frame.extend_from_slice(&header);
        frame.extend_from_slice(&body);
        let mut buf = BytesMut::from(&frame[..]);
        if let Ok(Some(cmd)) = decode(&mut buf) {
            // Whatever parsed must encode again.
            let mut out = BytesMut::new();
            let _ = encode(&cmd, &mut out);
        }
    }

    #[test]
    fn frame_body_decoders_are_total(bytes in vec(any::<u8>(), 0..512)) {
        let b = Bytes::from(bytes);
        let _ = decode_messages(&b);
        let _ = decode_batch(&b);
        let _ = codec::decode_frame(b);
    }

    #[test]
    fn json_compat_is_total_and_identity_on_standard_json(s in any::<String>(), v in json_value()) {
        let _ = json_compat::normalize(&s);
        let text = serde_json::to_string(&v).unwrap();
        prop_assert_eq!(json_compat::normalize(&text), text.as_str());
    }

    #[test]
    fn send_header_v1_v2_round_trip(
        pg in any_string(), topic in any_string(), qid in any::<i32>(), born in any::<i64>(),
        props in proptest::option::of(any_string()), rt in proptest::option::of(any::<i32>()),
        unit in any::<bool>(), batch in any::<bool>(), mrt in proptest::option::of(any::<i32>()),
        bname in proptest::option::of(any_string()),
    ) {
        let v1 = SendMessageRequestHeader {
            producer_group: pg,
            topic,
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: qid,
            sys_flag: qid.wrapping_mul(3),
            born_timestamp: born,
            flag: qid.wrapping_add(1),
            properties: props,
            reconsume_times: rt,
            unit_mode: unit,
            batch,
            max_reconsume_times: mrt,
            broker_name: bname,
        };
        prop_assert_eq!(&SendMessageRequestHeader::from_ext_fields(&v1.to_ext_fields()).unwrap(), &v1);
        let v2 = SendMessageRequestHeaderV2::from(v1.clone());
        let ext = v2.to_ext_fields();
        prop_assert!(ext.keys().all(|k| k.len() == 1));
        prop_assert_eq!(SendMessageRequestHeader::from_request(310, &ext).unwrap(), v1);
    }

    #[test]
    fn batch_round_trip(msgs in vec((any::<i32>(), vec(any::<u8>(), 0..64), btree_map("[A-Z_]{1,8}", "[ -~]{0,16}", 0..4)), 0..8)) {
        let batch: Vec<BatchMessage> = msgs
            .into_iter()
            .map(|(flag, body, props)| BatchMessage {
                flag,
                body: Bytes::from(body),
                properties: props.into_iter().collect(),
            })
            .collect();
        let enc = encode_batch(&batch).unwrap();
        prop_assert_eq!(decode_batch(&enc).unwrap(), batch);
    }
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(serde_json::Value::from),
        any_string().prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            btree_map(any_string(), inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}
