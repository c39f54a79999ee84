//! Golden bytes: frames assembled by hand from the Java sources' layout
//! (`RemotingCommand.encode`, `RocketMQSerializable`, fastjson's output), checked field by
//! field against what this crate writes and reads.

use bytes::{BufMut, Bytes, BytesMut};
use rmq_protocol::body::{RemotingJson, TopicRouteData};
use rmq_protocol::header::{
    GetRouteInfoRequestHeader, PullMessageResponseHeader, SendMessageRequestHeader,
};
use rmq_protocol::message_decoder::{decode_messages, MessageExt};
use rmq_protocol::{
    decode, encode, encode_header_for_body, ExtFields, LanguageCode, RemotingCommand, RequestCode,
    ResponseCode, SerializeType,
};

/// Frame = length (4) + (type << 24 | header length) (4) + header + body.
fn frame(serialize_type: u8, header: &[u8], body: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(
        &u32::try_from(4 + header.len() + body.len())
            .unwrap()
            .to_be_bytes(),
    );
    f.extend_from_slice(
        &((u32::from(serialize_type) << 24) | u32::try_from(header.len()).unwrap()).to_be_bytes(),
    );
    f.extend_from_slice(header);
    f.extend_from_slice(body);
    f
}

#[test]
fn json_request_frame_as_a_java_client_writes_it() {
    // A Java 4.9.8 client asking a nameserver for a route (fastjson, properties sorted).
    let header = br#"{"code":105,"extFields":{"topic":"TopicTest"},"flag":0,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":409}"#;
    let bytes = frame(0, header, b"");
    // Length word: 4 + 131 header bytes; type byte 0; header length 131.
    assert_eq!(header.len(), 131);
    assert_eq!(&bytes[..8], &[0, 0, 0, 135, 0, 0, 0, 131]);

    let cmd = RemotingCommand::request_with_header(
        RequestCode::GET_ROUTEINFO_BY_TOPIC.0,
        &GetRouteInfoRequestHeader {
            topic: "TopicTest".into(),
            accept_standard_json_only: None,
        },
    )
    .with_opaque(3)
    .with_version(409);
    let mut out = BytesMut::new();
    encode(&cmd, &mut out).unwrap();
    assert_eq!(&out[..], &bytes[..], "{}", String::from_utf8_lossy(&out));

    let got = decode(&mut BytesMut::from(&bytes[..])).unwrap().unwrap();
    assert_eq!(got.code, 105);
    assert_eq!(got.language, LanguageCode::Java);
    assert_eq!(got.version, 409);
    assert_eq!(got.opaque, 3);
    assert_eq!(got.flag, 0);
    assert_eq!(got.remark, None);
    assert_eq!(got.serialize_type, SerializeType::Json);
    assert_eq!(got.body, None);
    let h: GetRouteInfoRequestHeader = got.decode_header().unwrap();
    assert_eq!(h.topic, "TopicTest");
}

#[test]
fn rocketmq_binary_response_frame() {
    // A ROCKETMQ-serialized pull response with a 3-byte body.
    let mut header = Vec::new();
    header.extend_from_slice(&19i16.to_be_bytes()); // code PULL_NOT_FOUND
    header.push(0); // language JAVA
    header.extend_from_slice(&409i16.to_be_bytes()); // version
    header.extend_from_slice(&77i32.to_be_bytes()); // opaque
    header.extend_from_slice(&1i32.to_be_bytes()); // flag: response
    header.extend_from_slice(&19i32.to_be_bytes()); // remark length
    header.extend_from_slice(b"OFFSET_OVERFLOW_ONE");
    let ext: &[(&str, &str)] = &[
        ("maxOffset", "5"),
        ("minOffset", "0"),
        ("nextBeginOffset", "5"),
        ("suggestWhichBrokerId", "0"),
    ];
    let mut ext_bytes = Vec::new();
    for (k, v) in ext {
        ext_bytes.extend_from_slice(&i16::try_from(k.len()).unwrap().to_be_bytes());
        ext_bytes.extend_from_slice(k.as_bytes());
        ext_bytes.extend_from_slice(&i32::try_from(v.len()).unwrap().to_be_bytes());
        ext_bytes.extend_from_slice(v.as_bytes());
    }
    header.extend_from_slice(&i32::try_from(ext_bytes.len()).unwrap().to_be_bytes());
    header.extend_from_slice(&ext_bytes);
    let bytes = frame(1, &header, b"xyz");
    assert_eq!(bytes[4], 1, "serialize type byte");

    let mut request = RemotingCommand::new_request(11, ExtFields::new())
        .with_opaque(77)
        .with_serialize_type(SerializeType::RocketMq);
    request.ext_fields.insert("topic", "t");
    let resp = RemotingCommand::response_to(
        &request,
        ResponseCode::PULL_NOT_FOUND.0,
        Some("OFFSET_OVERFLOW_ONE".into()),
    )
    .with_version(409)
    .with_header(&PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: 5,
        min_offset: 0,
        max_offset: 5,
    })
    .with_body(&b"xyz"[..]);
    let mut out = BytesMut::new();
    encode(&resp, &mut out).unwrap();
    assert_eq!(&out[..], &bytes[..]);

    let got = decode(&mut BytesMut::from(&bytes[..])).unwrap().unwrap();
    assert!(got.is_response());
    assert_eq!(got.serialize_type, SerializeType::RocketMq);
    assert_eq!(got.remark.as_deref(), Some("OFFSET_OVERFLOW_ONE"));
    assert_eq!(got.body.as_deref(), Some(&b"xyz"[..]));
    let h: PullMessageResponseHeader = got.decode_header().unwrap();
    assert_eq!((h.next_begin_offset, h.max_offset), (5, 5));
}

#[test]
fn java_nameserver_route_response_with_bare_integer_keys() {
    // What a Java nameserver older than 4.9.4 answers (fastjson header and body).
    let header = br#"{"code":0,"flag":1,"language":"JAVA","opaque":3,"serializeTypeCurrentRPC":"JSON","version":399}"#;
    let body = br#"{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSynFlag":0,"writeQueueNums":4}]}"#;
    let mut buf = BytesMut::from(&frame(0, header, body)[..]);
    let cmd = decode(&mut buf).unwrap().unwrap();
    assert!(cmd.is_response());
    assert_eq!(cmd.code, ResponseCode::SUCCESS.0);
    let route = TopicRouteData::from_json_bytes(cmd.body.as_deref().unwrap()).unwrap();
    assert_eq!(route.broker_datas[0].master_addr(), Some("127.0.0.1:10911"));
    assert_eq!(route.queue_datas[0].write_queue_nums, 4);
}

#[test]
fn java_send_v2_header_with_escaped_properties() {
    // fastjson escapes the property separators \u0001 and \u0002; any order, any case.
    let header = r#"{"code":310,"extFields":{"a":"pg","b":"TopicTest","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0","i":"TAGS\u0001TagA\u0002UNIQ_KEY\u0001AC11\u0002","j":"0","k":"false","m":"false","n":"broker-a"},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":409}"#;
    let cmd = decode(&mut BytesMut::from(
        &frame(0, header.as_bytes(), b"body")[..],
    ))
    .unwrap()
    .unwrap();
    let h = SendMessageRequestHeader::from_request(cmd.code, &cmd.ext_fields).unwrap();
    assert_eq!(h.topic, "TopicTest");
    assert_eq!(h.queue_id, 1);
    assert_eq!(h.born_timestamp, 1_700_000_000_000);
    assert_eq!(
        h.properties.as_deref(),
        Some("TAGS\u{1}TagA\u{2}UNIQ_KEY\u{1}AC11\u{2}")
    );
    assert_eq!(h.broker_name.as_deref(), Some("broker-a"));
    assert_eq!(cmd.body.as_deref(), Some(&b"body"[..]));
}

#[test]
fn zero_copy_pull_response_header_plus_records() {
    let mut m = MessageExt {
        topic: "TopicTest".into(),
        flag: 0,
        properties: rmq_common::Properties::decode("TAGS\u{1}TagA\u{2}"),
        body: Bytes::from_static(b"payload"),
        store_size: 0,
        body_crc: rmq_common::body_crc(b"payload"),
        queue_id: 0,
        queue_offset: 4,
        commit_log_offset: 4096,
        sys_flag: 0,
        born_timestamp: 1,
        born_host: "127.0.0.1:5000".parse().unwrap(),
        store_timestamp: 2,
        store_host: "127.0.0.1:10911".parse().unwrap(),
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        msg_id: String::new(),
        body_error: None,
    };
    let rec = m.to_record().unwrap();
    m.store_size = i32::try_from(rec.len()).unwrap();
    m.msg_id = "7F00000100002A9F0000000000001000".into();

    let resp = RemotingCommand::new_response(0, Some("FOUND".into()))
        .with_opaque(5)
        .with_header(&PullMessageResponseHeader {
            suggest_which_broker_id: 0,
            next_begin_offset: 5,
            min_offset: 0,
            max_offset: 5,
        });
    // The server writes the header, then sendfile()s the records.
    let head = encode_header_for_body(&resp, rec.len() * 2).unwrap();
    let announced = u32::from_be_bytes(head[..4].try_into().unwrap()) as usize;
    assert_eq!(announced + 4, head.len() + rec.len() * 2);
    let mut wire = BytesMut::from(&head[..]);
    wire.put_slice(&rec);
    assert_eq!(
        decode(&mut wire).unwrap(),
        None,
        "half the body is not a frame"
    );
    wire.put_slice(&rec);
    let got = decode(&mut wire).unwrap().unwrap();
    let msgs = decode_messages(got.body.as_ref().unwrap()).unwrap();
    assert_eq!(msgs, vec![m.clone(), m]);
}
