//! The frame decoder (`rmq_protocol::codec::decode`) on a connection's read buffer.
//!
//! Checks, beyond "never panics": the input fed in one piece and fed in small pieces (as
//! TCP may deliver it) decodes to the same commands and the same error, and every command
//! decoded re-encodes, in its own serialization, to a frame that decodes back to it.
#![no_main]

use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;
use rmq_protocol::{codec, ProtocolError, RemotingCommand};

/// Decode everything in `data`, handing it to the decoder `chunk` bytes at a time.
fn decode_all(data: &[u8], chunk: usize) -> (Vec<RemotingCommand>, Option<ProtocolError>) {
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for piece in data.chunks(chunk) {
        buf.extend_from_slice(piece);
        loop {
            match codec::decode(&mut buf) {
                Ok(Some(cmd)) => out.push(cmd),
                Ok(None) => break,
                Err(e) => return (out, Some(e)),
            }
        }
    }
    (out, None)
}

fuzz_target!(|data: &[u8]| {
    let whole = decode_all(data, data.len().max(1));
    let chunk = 1 + data.last().map_or(0, |b| usize::from(*b % 13));
    let pieces = decode_all(data, chunk);
    assert_eq!(whole, pieces, "decoding depends on how the bytes arrived");
    for cmd in whole.0 {
        let mut frame = BytesMut::new();
        codec::encode(&cmd, &mut frame).expect("a decoded command re-encodes");
        let again = codec::decode(&mut frame)
            .expect("a re-encoded command decodes")
            .expect("a whole frame");
        assert_eq!(again, cmd, "decode(encode(cmd)) != cmd");
        assert!(frame.is_empty());
    }
});
