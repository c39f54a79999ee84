//! RemotingCommand header decoding in both serializations (JSON and ROCKETMQ's binary), and
//! the typed headers read from the decoded ext fields.
//!
//! Input: one selector byte (even: JSON, odd: ROCKETMQ), then the header bytes; the frame
//! around them is built here so that every input reaches the header parser. A header that
//! decodes must re-encode and decode back to the same command, and a typed header read from
//! it must survive `to_ext_fields` / `from_ext_fields` unchanged.
#![no_main]

use bytes::{BufMut, Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use rmq_protocol::header::{
    ConsumerSendMsgBackRequestHeader, CreateTopicRequestHeader, EndTransactionRequestHeader,
    GetRouteInfoRequestHeader, PullMessageRequestHeader, QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader, RegisterBrokerRequestHeader, SearchOffsetRequestHeader,
    SendMessageRequestHeader, SendMessageRequestHeaderV2, UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::{codec, CommandHeader, RemotingCommand, SerializeType};

fn typed<H: CommandHeader + PartialEq + std::fmt::Debug>(cmd: &RemotingCommand) {
    if let Ok(h) = cmd.decode_header::<H>() {
        let again = H::from_ext_fields(&h.to_ext_fields()).expect("a written header reads back");
        assert_eq!(again, h);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, header)) = data.split_first() else {
        return;
    };
    let st = if selector % 2 == 0 {
        SerializeType::Json
    } else {
        SerializeType::RocketMq
    };
    let Ok(header_len) = u32::try_from(header.len()) else {
        return;
    };
    if header_len > 0x00FF_FFFF {
        return;
    }
    let mut frame = BytesMut::with_capacity(4 + header.len());
    frame.put_u32((u32::from(st.code()) << 24) | header_len);
    frame.put_slice(header);
    let Ok(cmd) = codec::decode_frame(frame.freeze()) else {
        return;
    };
    assert_eq!(cmd.serialize_type, st);
    assert!(cmd.body.is_none());
    let encoded = codec::encode_header(&cmd).expect("a decoded header re-encodes");
    let mut again = BytesMut::new();
    again.put_u32((u32::from(st.code()) << 24) | u32::try_from(encoded.len()).unwrap());
    again.put_slice(&encoded);
    let again = codec::decode_frame(Bytes::from(again)).expect("a re-encoded header decodes");
    assert_eq!(again, cmd, "decode(encode(header)) != header");

    typed::<SendMessageRequestHeader>(&cmd);
    typed::<SendMessageRequestHeaderV2>(&cmd);
    typed::<PullMessageRequestHeader>(&cmd);
    typed::<QueryConsumerOffsetRequestHeader>(&cmd);
    typed::<UpdateConsumerOffsetRequestHeader>(&cmd);
    typed::<ConsumerSendMsgBackRequestHeader>(&cmd);
    typed::<EndTransactionRequestHeader>(&cmd);
    typed::<RegisterBrokerRequestHeader>(&cmd);
    typed::<GetRouteInfoRequestHeader>(&cmd);
    typed::<CreateTopicRequestHeader>(&cmd);
    typed::<QueryMessageRequestHeader>(&cmd);
    typed::<SearchOffsetRequestHeader>(&cmd);
});
