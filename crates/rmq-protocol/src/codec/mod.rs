//! The frame codec: pure, synchronous and total.
//!
//! ```text
//! | length: i32 BE | type: u8 | header length: u24 BE | header | body |
//!   length = 4 + header length + body length (everything after the length field)
//! ```
//!
//! [`decode`] works on the connection's read buffer: it returns `Ok(None)` until a whole
//! frame is there, checks the announced length against the 16 MiB limit *before* reserving
//! room for it, and hands the body out as a zero-copy slice of the frame. It never panics on
//! any input. [`encode`] writes a whole frame; [`encode_header_for_body`] writes only the
//! length prefix and header for a body the caller sends separately (file regions sent with
//! `sendfile`), counting the body in the length. A tokio `Decoder`/`Encoder` is a thin
//! adapter over these functions.

mod json;
mod json_scan;
mod rocketmq;

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::command::{RemotingCommand, SerializeType};
use crate::error::{ProtocolError, Result};

/// Largest frame accepted, length field included (`com.rocketmq.remoting.frameMaxLength`,
/// Netty's `LengthFieldBasedFrameDecoder(16777216, 0, 4, 0, 4)`).
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;
/// Size of the length prefix.
pub const LENGTH_FIELD_BYTES: usize = 4;
/// Size of the serialize-type + header-length word.
pub const HEADER_LENGTH_FIELD_BYTES: usize = 4;
/// Largest header the 24-bit header length can describe.
pub const MAX_HEADER_BYTES: usize = 0x00FF_FFFF;

/// Most room [`decode`] reserves for the rest of a frame at a time: all of any frame up to
/// Apache's default `maxMessageSize` (4 MiB) plus 64 KiB of header, so that its bytes are read
/// straight into place (a buffer grown step by step copies what it holds at every step: a
/// 1 MiB body was copied twice that way); a bigger frame gets this much at a time. Reserved
/// pages are only touched as bytes arrive, so a peer that announces a frame and stalls makes
/// the process hold only the bytes it sent.
pub const MAX_RESERVE_BYTES: usize = 4 * 1024 * 1024 + 64 * 1024;

/// Take one command off the front of `buf`, if a whole frame is there.
///
/// On `Ok(None)` nothing is consumed (room for more of the frame may be reserved: at most
/// [`MAX_RESERVE_BYTES`] beyond what arrived, untouched until bytes arrive). On an error about
/// the length prefix nothing is consumed either; on an error inside a complete frame that frame
/// is consumed. Either way the connection should be closed, as Java does.
///
/// # Errors
/// A length outside `4..=MAX_FRAME_BYTES-4`, a header length past the frame, an unknown
/// serialize type, or a header that does not parse.
pub fn decode(buf: &mut BytesMut) -> Result<Option<RemotingCommand>> {
    decode_with_max(buf, MAX_FRAME_BYTES)
}

/// [`decode`] with a different frame limit (length field included).
///
/// # Errors
/// As [`decode`].
pub fn decode_with_max(buf: &mut BytesMut, max_frame: usize) -> Result<Option<RemotingCommand>> {
    let Some(prefix) = buf.get(..LENGTH_FIELD_BYTES) else {
        return Ok(None);
    };
    let length = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let Ok(body_len) = usize::try_from(length) else {
        return Err(ProtocolError::FrameTooShort { length });
    };
    let total = body_len + LENGTH_FIELD_BYTES;
    if total > max_frame {
        return Err(ProtocolError::FrameTooLarge {
            length: total as u64,
            max: max_frame,
        });
    }
    if body_len < HEADER_LENGTH_FIELD_BYTES {
        return Err(ProtocolError::FrameTooShort { length });
    }
    if buf.len() < total {
        buf.reserve((total - buf.len()).min(MAX_RESERVE_BYTES));
        return Ok(None);
    }
    let mut frame = buf.split_to(total).freeze();
    frame.advance(LENGTH_FIELD_BYTES);
    decode_frame(frame).map(Some)
}

/// Decode one frame whose length prefix has already been stripped (what a
/// length-delimited transport hands over).
///
/// # Errors
/// As [`decode`], for everything after the length field.
pub fn decode_frame(mut frame: Bytes) -> Result<RemotingCommand> {
    if frame.len() < HEADER_LENGTH_FIELD_BYTES {
        return Err(ProtocolError::FrameTooShort {
            length: i32::try_from(frame.len()).unwrap_or(i32::MAX),
        });
    }
    let word = frame.get_u32();
    let type_code = (word >> 24) as u8;
    let header_len = (word & 0x00FF_FFFF) as usize;
    let serialize_type = SerializeType::from_code(type_code)
        .ok_or(ProtocolError::UnknownSerializeType { code: type_code })?;
    if header_len > frame.len() {
        return Err(ProtocolError::HeaderLengthExceedsFrame {
            header_len,
            available: frame.len(),
        });
    }
    let body = frame.split_off(header_len);
    let mut cmd = match serialize_type {
        SerializeType::Json => json::decode_header(&frame)?,
        SerializeType::RocketMq => rocketmq::decode_header(&frame)?,
    };
    cmd.serialize_type = serialize_type;
    cmd.body = (!body.is_empty()).then_some(body);
    Ok(cmd)
}

/// Append one whole frame for `cmd` to `dst`, header serialized as `cmd.serialize_type`
/// (a response made with [`RemotingCommand::response_to`] carries its request's type).
///
/// # Errors
/// The header or frame would exceed the protocol limits, or a ROCKETMQ header field does
/// not fit its binary width. `dst` is left as it was.
pub fn encode(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<()> {
    let start = dst.len();
    let body_len = cmd.body_len();
    let res = write_prefix_and_header(cmd, body_len, dst);
    if let Err(e) = res {
        dst.truncate(start);
        return Err(e);
    }
    if let Some(body) = &cmd.body {
        dst.extend_from_slice(body);
    }
    Ok(())
}

/// Length prefix and header for a body of `body_len` bytes that the caller sends itself
/// (zero-copy transfer of CommitLog regions). `cmd.body` is ignored.
///
/// # Errors
/// As [`encode`].
pub fn encode_header_for_body(cmd: &RemotingCommand, body_len: usize) -> Result<Bytes> {
    let mut dst = BytesMut::with_capacity(256);
    write_prefix_and_header(cmd, body_len, &mut dst)?;
    Ok(dst.freeze())
}

/// The serialized header alone (no length words), as `cmd.serialize_type` dictates.
///
/// # Errors
/// As [`encode`].
pub fn encode_header(cmd: &RemotingCommand) -> Result<Bytes> {
    let mut dst = BytesMut::with_capacity(256);
    write_header(cmd, &mut dst)?;
    Ok(dst.freeze())
}

fn write_header(cmd: &RemotingCommand, dst: &mut BytesMut) -> Result<()> {
    match cmd.serialize_type {
        SerializeType::Json => {
            json::encode_header(cmd, dst);
            Ok(())
        }
        SerializeType::RocketMq => rocketmq::encode_header(cmd, dst),
    }
}

fn write_prefix_and_header(
    cmd: &RemotingCommand,
    body_len: usize,
    dst: &mut BytesMut,
) -> Result<()> {
    let start = dst.len();
    dst.put_u64(0); // length and header-length words, patched below
    write_header(cmd, dst)?;
    let header_len = dst.len() - start - LENGTH_FIELD_BYTES - HEADER_LENGTH_FIELD_BYTES;
    if header_len > MAX_HEADER_BYTES {
        return Err(ProtocolError::Unencodable {
            what: "header",
            reason: format!("{header_len} bytes exceed the 24-bit header length"),
        });
    }
    let total = LENGTH_FIELD_BYTES + HEADER_LENGTH_FIELD_BYTES + header_len + body_len;
    if total > MAX_FRAME_BYTES {
        return Err(ProtocolError::FrameTooLarge {
            length: total as u64,
            max: MAX_FRAME_BYTES,
        });
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "total <= 16 MiB, checked above"
    )]
    let length = (total - LENGTH_FIELD_BYTES) as u32;
    #[expect(
        clippy::cast_possible_truncation,
        reason = "header_len < 2^24, checked above"
    )]
    let word = (u32::from(cmd.serialize_type.code()) << 24) | header_len as u32;
    dst[start..start + 4].copy_from_slice(&length.to_be_bytes());
    dst[start + 4..start + 8].copy_from_slice(&word.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::ExtFields;

    fn sample(st: SerializeType) -> RemotingCommand {
        let mut ext = ExtFields::new();
        ext.insert("topic", "TopicTest");
        ext.insert("queueId", "3");
        RemotingCommand::new_request(105, ext)
            .with_opaque(42)
            .with_version(409)
            .with_serialize_type(st)
            .with_body(&b"hello"[..])
    }

    #[test]
    fn round_trip_both_types() {
        for st in [SerializeType::Json, SerializeType::RocketMq] {
            let cmd = sample(st);
            let mut buf = BytesMut::new();
            encode(&cmd, &mut buf).unwrap();
            let got = decode(&mut buf).unwrap().unwrap();
            assert_eq!(got, cmd);
            assert!(buf.is_empty());
        }
    }

    #[test]
    fn incomplete_input_is_none_and_untouched() {
        let mut full = BytesMut::new();
        encode(&sample(SerializeType::Json), &mut full).unwrap();
        for cut in 0..full.len() {
            let mut part = BytesMut::from(&full[..cut]);
            assert_eq!(decode(&mut part).unwrap(), None);
            assert_eq!(&part[..], &full[..cut]);
        }
    }

    #[test]
    fn two_frames_back_to_back() {
        let mut buf = BytesMut::new();
        encode(&sample(SerializeType::Json), &mut buf).unwrap();
        encode(&sample(SerializeType::RocketMq), &mut buf).unwrap();
        assert_eq!(
            decode(&mut buf).unwrap().unwrap().serialize_type,
            SerializeType::Json
        );
        assert_eq!(
            decode(&mut buf).unwrap().unwrap().serialize_type,
            SerializeType::RocketMq
        );
        assert_eq!(decode(&mut buf).unwrap(), None);
    }

    #[test]
    fn oversized_length_is_rejected_before_allocating() {
        let mut buf = BytesMut::from(&[0x7F, 0xFF, 0xFF, 0xFF][..]);
        let err = decode(&mut buf).unwrap_err();
        assert!(matches!(err, ProtocolError::FrameTooLarge { .. }));
        assert!(buf.capacity() < 1024);
        // The limit itself: length + 4 == 16 MiB is allowed, one more is not.
        let ok = u32::try_from(MAX_FRAME_BYTES - 4).unwrap().to_be_bytes();
        assert_eq!(decode(&mut BytesMut::from(&ok[..])).unwrap(), None);
        let bad = u32::try_from(MAX_FRAME_BYTES - 3).unwrap().to_be_bytes();
        assert!(decode(&mut BytesMut::from(&bad[..])).is_err());
    }

    #[test]
    fn short_and_negative_lengths() {
        for len in [-1i32, 0, 3] {
            let mut buf = BytesMut::from(&len.to_be_bytes()[..]);
            assert_eq!(
                decode(&mut buf).unwrap_err(),
                ProtocolError::FrameTooShort { length: len }
            );
        }
    }

    #[test]
    fn header_length_past_frame_and_unknown_type() {
        let mut buf = BytesMut::new();
        buf.put_i32(8);
        buf.put_u32(5); // JSON, header 5 bytes, only 4 left
        buf.put_u32(0);
        assert_eq!(
            decode(&mut buf).unwrap_err(),
            ProtocolError::HeaderLengthExceedsFrame {
                header_len: 5,
                available: 4
            }
        );
        let mut buf = BytesMut::new();
        buf.put_i32(4);
        buf.put_u32(2 << 24);
        assert_eq!(
            decode(&mut buf).unwrap_err(),
            ProtocolError::UnknownSerializeType { code: 2 }
        );
    }

    #[test]
    fn header_for_body_counts_the_body() {
        let cmd = sample(SerializeType::RocketMq);
        let mut whole = BytesMut::new();
        encode(&cmd, &mut whole).unwrap();
        let head = encode_header_for_body(&cmd, 5).unwrap();
        assert_eq!(&whole[..whole.len() - 5], &head[..]);
        let mut joined = BytesMut::from(&head[..]);
        joined.extend_from_slice(b"hello");
        assert_eq!(decode(&mut joined).unwrap().unwrap(), cmd);
    }

    #[test]
    fn encode_refuses_oversized_frames_and_leaves_dst_alone() {
        let cmd = sample(SerializeType::Json).with_body(vec![0u8; MAX_FRAME_BYTES]);
        let mut dst = BytesMut::from(&b"xy"[..]);
        assert!(matches!(
            encode(&cmd, &mut dst).unwrap_err(),
            ProtocolError::FrameTooLarge { .. }
        ));
        assert_eq!(&dst[..], b"xy");
    }
}
