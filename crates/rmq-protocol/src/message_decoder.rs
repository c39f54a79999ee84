//! Message bytes inside command bodies.
//!
//! PULL_MESSAGE, QUERY_MESSAGE and VIEW_MESSAGE_BY_ID answer with CommitLog records copied
//! (or `sendfile`d) straight from the store, back to back; [`decode_messages`] reads them
//! into [`MessageExt`] values the way Java's `MessageDecoder.decodes` does, slicing bodies
//! out of the response without copying. SEND_BATCH_MESSAGE carries a batch in the Java
//! client's own compact layout ([`encode_batch`], [`decode_batch`]):
//!
//! ```text
//! per message: TOTALSIZE i32 | MAGICCODE i32 (0) | BODYCRC i32 (0) | FLAG i32
//!              | BODYLEN i32 + BODY | PROPSLEN i16 + PROPS
//! ```
//!
//! The CommitLog record itself (layout, decode rules, [`MessageExt`]) is
//! [`rmq_common::record`]'s; this module walks bodies of them. Compressed bodies
//! (`sys_flag` bit 0, set by Java producers above 4 KiB) are returned as stored; decompressing
//! them is the client's job (`rmq_common::compression`).

use bytes::{BufMut, Bytes, BytesMut};
use rmq_common::Properties;

pub use rmq_common::record::{MessageExt, MIN_RECORD_BYTES};

use crate::error::{ProtocolError, Result};

/// Fixed part of one batch entry (TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN, PROPSLEN).
pub const BATCH_ENTRY_FIXED_BYTES: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// Bounds-checked big-endian reader over one batch entry.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, reason: String) -> ProtocolError {
        ProtocolError::BadMessage {
            offset: self.base,
            reason,
        }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                self.err(format!(
                    "{what} needs {n} bytes at entry byte {}, entry has {}",
                    self.pos,
                    self.b.len()
                ))
            })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    fn i16(&mut self, what: &str) -> Result<i16> {
        Ok(i16::from_be_bytes(self.array(what)?))
    }

    fn i32(&mut self, what: &str) -> Result<i32> {
        Ok(i32::from_be_bytes(self.array(what)?))
    }

    fn len(&self, v: i64, what: &str) -> Result<usize> {
        usize::try_from(v).map_err(|_| self.err(format!("negative {what} length {v}")))
    }
}

/// Decode one CommitLog record ([`MessageExt::decode`]); `bytes` must start at its
/// TOTALSIZE field and may extend past it (only TOTALSIZE bytes are read). `offset` is
/// used in error messages only.
///
/// # Errors
/// [`ProtocolError::BadMessage`] with the [`rmq_common::record::RecordError`] as reason.
pub fn decode_message_at(bytes: &Bytes, offset: usize) -> Result<MessageExt> {
    MessageExt::decode(bytes).map_err(|e| ProtocolError::BadMessage {
        offset,
        reason: e.to_string(),
    })
}

/// Records one after another in a body; each item is one message or the error that stops
/// the walk (the iterator then ends).
#[derive(Debug, Clone)]
pub struct MessageIter {
    buf: Bytes,
    pos: usize,
    failed: bool,
}

impl Iterator for MessageIter {
    type Item = Result<MessageExt>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let rest = self.buf.slice(self.pos..);
        match decode_message_at(&rest, self.pos) {
            Ok(m) => {
                // The decoder checked MIN_RECORD_BYTES <= store_size <= rest.len().
                if let Ok(size) = usize::try_from(m.store_size) {
                    self.pos += size;
                    Some(Ok(m))
                } else {
                    self.failed = true;
                    Some(Err(ProtocolError::BadMessage {
                        offset: self.pos,
                        reason: format!("negative TOTALSIZE {}", m.store_size),
                    }))
                }
            }
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Iterate over the records of a pull/query/view body.
#[must_use]
pub fn iter_messages(body: Bytes) -> MessageIter {
    MessageIter {
        buf: body,
        pos: 0,
        failed: false,
    }
}

/// Decode every record of a pull/query/view body.
///
/// # Errors
/// The first bad record (Java's `decodes` stops there too, silently).
pub fn decode_messages(body: &Bytes) -> Result<Vec<MessageExt>> {
    iter_messages(body.clone()).collect()
}

/// One message of a SEND_BATCH_MESSAGE body: the fields the Java client encodes per
/// message (topic and queue come from the request header).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BatchMessage {
    /// Application flag.
    pub flag: i32,
    /// Body.
    pub body: Bytes,
    /// Properties; the Java client sets `UNIQ_KEY` on each.
    pub properties: Properties,
}

/// Encode a batch the way `MessageDecoder.encodeMessages` does.
///
/// # Errors
/// A properties string over 32767 bytes (Java refuses it too) or an entry over 2 GiB.
pub fn encode_batch(messages: &[BatchMessage]) -> Result<Bytes> {
    let mut out = BytesMut::new();
    for m in messages {
        encode_batch_entry(&mut out, m.flag, &m.body, m.properties.encode().as_bytes())?;
    }
    Ok(out.freeze())
}

/// Append one batch entry with an already encoded properties string.
///
/// # Errors
/// As [`encode_batch`].
pub fn encode_batch_entry(
    out: &mut BytesMut,
    flag: i32,
    body: &[u8],
    properties: &[u8],
) -> Result<()> {
    let props_len = i16::try_from(properties.len()).map_err(|_| ProtocolError::Unencodable {
        what: "batch message properties",
        reason: format!("{} bytes exceed 32767", properties.len()),
    })?;
    let total = BATCH_ENTRY_FIXED_BYTES + body.len() + properties.len();
    let too_big = |what| ProtocolError::Unencodable {
        what,
        reason: format!("batch entry of {total} bytes exceeds i32"),
    };
    let total_i32 = i32::try_from(total).map_err(|_| too_big("batch message"))?;
    let body_len = i32::try_from(body.len()).map_err(|_| too_big("batch message body"))?;
    out.reserve(total);
    out.put_i32(total_i32);
    out.put_i32(0); // MAGICCODE: unused in batches
    out.put_i32(0); // BODYCRC: the broker computes it
    out.put_i32(flag);
    out.put_i32(body_len);
    out.put_slice(body);
    out.put_i16(props_len);
    out.put_slice(properties);
    Ok(())
}

/// One entry of a SEND_BATCH_MESSAGE body, its properties still encoded: what a broker
/// stores, without building a map per message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchEntry<'a> {
    /// Application flag.
    pub flag: i32,
    /// Body.
    pub body: &'a [u8],
    /// Properties as sent (`name\u1value\u2...`).
    pub properties: &'a [u8],
}

/// Decode a SEND_BATCH_MESSAGE body into its entries; bodies and properties are borrowed
/// from `body` (no copies, and no reference count to move per message).
///
/// # Errors
/// [`ProtocolError::BadMessage`] for a truncated entry or lengths that disagree with
/// TOTALSIZE.
pub fn decode_batch_entries(body: &[u8]) -> Result<Vec<BatchEntry<'_>>> {
    // Room for as many entries as the first one's size says the body holds (batches are
    // mostly alike), bounded by the body: growing by doubling through a batch of 4 096
    // copied the list eleven times.
    let first = body
        .first_chunk::<4>()
        .map_or(0, |b| i32::from_be_bytes(*b));
    let first = usize::try_from(first)
        .unwrap_or(0)
        .max(BATCH_ENTRY_FIXED_BYTES);
    let mut out = Vec::with_capacity(body.len() / first + 1);
    let mut pos = 0;
    while pos < body.len() {
        let mut r = Reader {
            b: &body[pos..],
            pos: 0,
            base: pos,
        };
        let total = r.i32("TOTALSIZE")?;
        let total = r.len(i64::from(total), "entry")?;
        if total < BATCH_ENTRY_FIXED_BYTES || total > r.b.len() {
            return Err(r.err(format!(
                "TOTALSIZE {total} outside {BATCH_ENTRY_FIXED_BYTES}..={}",
                r.b.len()
            )));
        }
        r.b = &r.b[..total];
        r.take(8, "MAGICCODE and BODYCRC")?;
        let flag = r.i32("FLAG")?;
        let body_len = r.i32("BODYLEN")?;
        let body_len = r.len(i64::from(body_len), "body")?;
        let body_start = pos + r.pos;
        r.take(body_len, "BODY")?;
        let props_len = r.i16("PROPSLEN")?;
        let props_len = r.len(i64::from(props_len), "properties")?;
        let props_start = pos + r.pos;
        r.take(props_len, "PROPERTIES")?;
        if r.pos != total {
            return Err(r.err(format!("fields end at {} but TOTALSIZE is {total}", r.pos)));
        }
        out.push(BatchEntry {
            flag,
            body: &body[body_start..body_start + body_len],
            properties: &body[props_start..props_start + props_len],
        });
        pos += total;
    }
    Ok(out)
}

/// Decode a SEND_BATCH_MESSAGE body, properties parsed.
///
/// # Errors
/// As [`decode_batch_entries`].
pub fn decode_batch(body: &Bytes) -> Result<Vec<BatchMessage>> {
    Ok(decode_batch_entries(body)?
        .into_iter()
        .map(|e| BatchMessage {
            flag: e.flag,
            body: body.slice_ref(e.body),
            properties: Properties::decode(&String::from_utf8_lossy(e.properties)),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::create_offset_msg_id;
    use rmq_common::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};
    use std::net::SocketAddr;

    fn sample(topic: &str, born: &str, store: &str, off: i64) -> MessageExt {
        let mut properties = Properties::new();
        properties.put("TAGS", "TagA");
        properties.put("UNIQ_KEY", "AC1100020000");
        let store_host: SocketAddr = store.parse().unwrap();
        let body = Bytes::from_static(b"hello world");
        MessageExt {
            topic: topic.into(),
            flag: 7,
            properties,
            store_size: 0,
            body_crc: rmq_common::body_crc(&body),
            body,
            queue_id: 2,
            queue_offset: 5,
            commit_log_offset: off,
            sys_flag: 0,
            born_timestamp: 1_700_000_000_000,
            born_host: born.parse().unwrap(),
            store_timestamp: 1_700_000_000_001,
            store_host,
            reconsume_times: 1,
            prepared_transaction_offset: 0,
            msg_id: create_offset_msg_id(store_host, off),
            body_error: None,
        }
    }

    fn normalized(mut m: MessageExt, rec: &Bytes) -> MessageExt {
        m.store_size = i32::try_from(rec.len()).unwrap();
        if m.born_host.is_ipv6() {
            m.sys_flag |= BORNHOST_V6_FLAG;
        }
        if m.store_host.is_ipv6() {
            m.sys_flag |= STOREHOSTADDRESS_V6_FLAG;
        }
        m
    }

    #[test]
    fn reads_concatenated_records_v4_v6_v2() {
        let long_topic = "T".repeat(200);
        let msgs = [
            sample("TopicTest", "10.0.0.1:50000", "10.0.0.2:10911", 0),
            sample("TopicTest", "[::1]:50000", "[fe80::1]:10911", 300),
            sample(&long_topic, "10.0.0.1:1", "10.0.0.2:10911", 900),
        ];
        let mut body = BytesMut::new();
        let mut expected = Vec::new();
        for m in msgs {
            let rec = m.to_record().unwrap();
            body.extend_from_slice(&rec);
            expected.push(normalized(m, &rec));
        }
        let got = decode_messages(&body.freeze()).unwrap();
        assert_eq!(got, expected);
        assert_eq!(got[0].msg_id, "0A00000200002A9F0000000000000000");
        assert_eq!(got[0].client_msg_id(), "AC1100020000");
        assert_eq!(got[0].tags(), Some("TagA"));
        assert_eq!(got[1].msg_id.len(), 56);
        assert_eq!(got[2].topic.len(), 200);
    }

    #[test]
    fn bad_records_are_errors_not_panics() {
        let rec = sample("T", "1.2.3.4:5", "1.2.3.4:6", 0)
            .to_record()
            .unwrap();
        for cut in 0..rec.len() {
            assert!(decode_messages(&rec.slice(..cut)).is_err() || cut == 0);
        }
        let mut bad = BytesMut::from(&rec[..]);
        bad[4] = 0;
        assert!(matches!(
            decode_messages(&bad.freeze()),
            Err(ProtocolError::BadMessage { offset: 0, .. })
        ));
        // Second record broken: error names its offset.
        let mut two = BytesMut::from(&rec[..]);
        two.extend_from_slice(&rec[..10]);
        let err = decode_messages(&two.freeze()).unwrap_err();
        assert!(matches!(err, ProtocolError::BadMessage { offset, .. } if offset == rec.len()));
    }

    #[test]
    fn batch_layout_matches_java() {
        let mut p = Properties::new();
        p.put("UNIQ_KEY", "X");
        let batch = vec![
            BatchMessage {
                flag: 1,
                body: Bytes::from_static(b"ab"),
                properties: p,
            },
            BatchMessage::default(),
        ];
        let enc = encode_batch(&batch).unwrap();
        let first: Vec<u8> = [
            &35i32.to_be_bytes()[..], // 22 fixed + 2 body + 11 properties
            &[0; 8],
            &1i32.to_be_bytes(),
            &2i32.to_be_bytes(),
            b"ab",
            &11i16.to_be_bytes(),
            b"UNIQ_KEY\x01X\x02",
        ]
        .concat();
        assert_eq!(&enc[..35], &first[..]);
        assert_eq!(enc.len(), 35 + 22);
        assert_eq!(decode_batch(&enc).unwrap(), batch);
        for cut in 1..enc.len() {
            if cut != 35 {
                assert!(decode_batch(&enc.slice(..cut)).is_err(), "cut {cut}");
            }
        }
    }
}
