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
//! The CommitLog record layout is the store's (see `rmq-store`'s `format` module); it is
//! restated here because a client must read it without linking the store. Compressed bodies
//! (`sys_flag` bit 0, set by Java producers above 4 KiB) are returned as stored; decompressing
//! them is the client's job (`rmq_common::compression`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use bytes::{BufMut, Bytes, BytesMut};
use rmq_common::properties::PropertyKey;
use rmq_common::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};
use rmq_common::{create_offset_msg_id, Properties};

use crate::error::{ProtocolError, Result};

/// Magic of a record whose topic length takes 1 byte.
pub const MESSAGE_MAGIC_CODE_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic of a record whose topic length takes 2 bytes.
pub const MESSAGE_MAGIC_CODE_V2: i32 = 0xDAA3_20AB_u32 as i32;

/// Smallest possible record: every fixed field with IPv4 hosts, empty body, topic and
/// properties, 1-byte topic length.
pub const MIN_RECORD_BYTES: usize =
    4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + 8 + 8 + 8 + 4 + 8 + 4 + 1 + 2;

/// Fixed part of one batch entry (TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN, PROPSLEN).
pub const BATCH_ENTRY_FIXED_BYTES: usize = 4 + 4 + 4 + 4 + 4 + 2;

/// A stored message as a consumer sees it (`MessageExt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageExt {
    /// Topic.
    pub topic: String,
    /// Application flag.
    pub flag: i32,
    /// Properties (tags, keys, unique id, …).
    pub properties: Properties,
    /// Body as stored (compressed when `sys_flag` bit 0 is set).
    pub body: Bytes,
    /// Record length in the CommitLog.
    pub store_size: i32,
    /// Masked CRC-32 of the body.
    pub body_crc: i32,
    /// Queue.
    pub queue_id: i32,
    /// ConsumeQueue offset.
    pub queue_offset: i64,
    /// CommitLog offset.
    pub commit_log_offset: i64,
    /// `MessageSysFlag` bits.
    pub sys_flag: i32,
    /// Producer-side creation time (ms).
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// Store time (ms).
    pub store_timestamp: i64,
    /// Broker address.
    pub store_host: SocketAddr,
    /// Delivery attempts so far.
    pub reconsume_times: i32,
    /// Half-message offset, for transaction commit/rollback records.
    pub prepared_transaction_offset: i64,
    /// Offset message id (store host + CommitLog offset).
    pub msg_id: String,
    /// Why a client left `body` as stored although `sys_flag` marks it compressed (unknown
    /// compression type, corrupt or oversized data); always `None` from the decoder.
    pub body_error: Option<String>,
}

impl MessageExt {
    /// The producer-assigned unique id (`UNIQ_KEY`), if any.
    #[must_use]
    pub fn uniq_msg_id(&self) -> Option<&str> {
        self.properties
            .get(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    }

    /// The id a Java consumer shows (`MessageClientExt.getMsgId`): the unique id when set,
    /// else the offset id.
    #[must_use]
    pub fn client_msg_id(&self) -> &str {
        self.uniq_msg_id().unwrap_or(&self.msg_id)
    }

    /// The `TAGS` property.
    #[must_use]
    pub fn tags(&self) -> Option<&str> {
        self.properties.get(PropertyKey::TAGS)
    }

    /// The `KEYS` property.
    #[must_use]
    pub fn keys(&self) -> Option<&str> {
        self.properties.get(PropertyKey::KEYS)
    }
}

/// Bounds-checked big-endian reader over one record.
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
                    "{what} needs {n} bytes at record byte {}, record has {}",
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

    fn i64(&mut self, what: &str) -> Result<i64> {
        Ok(i64::from_be_bytes(self.array(what)?))
    }

    fn len(&self, v: i64, what: &str) -> Result<usize> {
        usize::try_from(v).map_err(|_| self.err(format!("negative {what} length {v}")))
    }

    fn host(&mut self, v6: bool, what: &str) -> Result<SocketAddr> {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>(what)?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>(what)?))
        };
        let port = self.i32(what)?;
        let port = u16::try_from(port)
            .map_err(|_| self.err(format!("{what} port {port} out of range")))?;
        Ok(SocketAddr::new(ip, port))
    }
}

/// Decode one CommitLog record; `record` must start at its TOTALSIZE field and may extend
/// past it (only TOTALSIZE bytes are read). `offset` is used in error messages only.
///
/// # Errors
/// [`ProtocolError::BadMessage`] on a short record, unknown magic, impossible lengths or an
/// out-of-range port.
pub fn decode_message_at(record: &Bytes, offset: usize) -> Result<MessageExt> {
    let mut r = Reader {
        b: record,
        pos: 0,
        base: offset,
    };
    let store_size = r.i32("TOTALSIZE")?;
    let total = r.len(i64::from(store_size), "record")?;
    if total < MIN_RECORD_BYTES || total > record.len() {
        return Err(r.err(format!(
            "TOTALSIZE {total} outside {MIN_RECORD_BYTES}..={}",
            record.len()
        )));
    }
    r.b = &record[..total];
    let magic = r.i32("MAGICCODE")?;
    let v2 = match magic {
        MESSAGE_MAGIC_CODE_V1 => false,
        MESSAGE_MAGIC_CODE_V2 => true,
        other => return Err(r.err(format!("unknown magic code {:#010X}", other as u32))),
    };
    let body_crc = r.i32("BODYCRC")?;
    let queue_id = r.i32("QUEUEID")?;
    let flag = r.i32("FLAG")?;
    let queue_offset = r.i64("QUEUEOFFSET")?;
    let commit_log_offset = r.i64("PHYSICALOFFSET")?;
    let sys_flag = r.i32("SYSFLAG")?;
    let born_timestamp = r.i64("BORNTIMESTAMP")?;
    let born_host = r.host(sys_flag & BORNHOST_V6_FLAG != 0, "BORNHOST")?;
    let store_timestamp = r.i64("STORETIMESTAMP")?;
    let store_host = r.host(sys_flag & STOREHOSTADDRESS_V6_FLAG != 0, "STOREHOST")?;
    let reconsume_times = r.i32("RECONSUMETIMES")?;
    let prepared_transaction_offset = r.i64("PREPAREDTRANSACTIONOFFSET")?;
    let body_len = r.i32("BODYLEN")?;
    let body_len = r.len(i64::from(body_len), "body")?;
    let body_start = r.pos;
    r.take(body_len, "BODY")?;
    let body = record.slice(body_start..body_start + body_len);
    let topic_len = if v2 {
        usize::from(u16::from_be_bytes(r.array("TOPICLEN")?))
    } else {
        usize::from(r.array::<1>("TOPICLEN")?[0])
    };
    let topic = String::from_utf8_lossy(r.take(topic_len, "TOPIC")?).into_owned();
    let props_len = r.i16("PROPSLEN")?;
    let props_len = r.len(i64::from(props_len), "properties")?;
    let properties = Properties::decode(&String::from_utf8_lossy(r.take(props_len, "PROPERTIES")?));
    let msg_id = create_offset_msg_id(store_host, commit_log_offset);
    Ok(MessageExt {
        topic,
        flag,
        properties,
        body,
        store_size,
        body_crc,
        queue_id,
        queue_offset,
        commit_log_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        msg_id,
        body_error: None,
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
                // decode_message_at checked MIN_RECORD_BYTES <= store_size <= rest.len().
                self.pos += m.store_size as usize;
                Some(Ok(m))
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
pub struct BatchEntry {
    /// Application flag.
    pub flag: i32,
    /// Body.
    pub body: Bytes,
    /// Properties as sent (`name\u1value\u2...`).
    pub properties: Bytes,
}

/// Decode a SEND_BATCH_MESSAGE body into its entries; bodies and properties are slices of
/// `body` (no copies).
///
/// # Errors
/// [`ProtocolError::BadMessage`] for a truncated entry or lengths that disagree with
/// TOTALSIZE.
pub fn decode_batch_entries(body: &Bytes) -> Result<Vec<BatchEntry>> {
    let mut out = Vec::new();
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
            body: body.slice(body_start..body_start + body_len),
            properties: body.slice(props_start..props_start + props_len),
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
            body: e.body,
            properties: Properties::decode(&String::from_utf8_lossy(&e.properties)),
        })
        .collect())
}

/// Encode one CommitLog record, as the store writes it. For tests and tools that need
/// pull bodies without a store; the store has its own encoder on the hot path.
#[doc(hidden)]
#[must_use]
pub fn encode_record(m: &MessageExt) -> Bytes {
    let topic = m.topic.as_bytes();
    let v2 = topic.len() > 127;
    let props = m.properties.encode();
    let host_len = |a: &SocketAddr| if a.is_ipv6() { 20 } else { 8 };
    let total = MIN_RECORD_BYTES - 16
        + host_len(&m.born_host)
        + host_len(&m.store_host)
        + m.body.len()
        + usize::from(v2)
        + topic.len()
        + props.len();
    let mut b = BytesMut::with_capacity(total);
    let put_host = |b: &mut BytesMut, a: &SocketAddr| {
        match a.ip() {
            IpAddr::V4(ip) => b.put_slice(&ip.octets()),
            IpAddr::V6(ip) => b.put_slice(&ip.octets()),
        }
        b.put_i32(i32::from(a.port()));
    };
    let mut sys_flag = m.sys_flag & !(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG);
    if m.born_host.is_ipv6() {
        sys_flag |= BORNHOST_V6_FLAG;
    }
    if m.store_host.is_ipv6() {
        sys_flag |= STOREHOSTADDRESS_V6_FLAG;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    {
        b.put_i32(total as i32);
        b.put_i32(if v2 {
            MESSAGE_MAGIC_CODE_V2
        } else {
            MESSAGE_MAGIC_CODE_V1
        });
        b.put_i32(m.body_crc);
        b.put_i32(m.queue_id);
        b.put_i32(m.flag);
        b.put_i64(m.queue_offset);
        b.put_i64(m.commit_log_offset);
        b.put_i32(sys_flag);
        b.put_i64(m.born_timestamp);
        put_host(&mut b, &m.born_host);
        b.put_i64(m.store_timestamp);
        put_host(&mut b, &m.store_host);
        b.put_i32(m.reconsume_times);
        b.put_i64(m.prepared_transaction_offset);
        b.put_i32(m.body.len() as i32);
        b.put_slice(&m.body);
        if v2 {
            b.put_u16(topic.len() as u16);
        } else {
            b.put_u8(topic.len() as u8);
        }
        b.put_slice(topic);
        b.put_i16(props.len() as i16);
        b.put_slice(props.as_bytes());
    }
    b.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn decodes_concatenated_records_v4_v6_v2() {
        let long_topic = "T".repeat(200);
        let msgs = [
            sample("TopicTest", "10.0.0.1:50000", "10.0.0.2:10911", 0),
            sample("TopicTest", "[::1]:50000", "[fe80::1]:10911", 300),
            sample(&long_topic, "10.0.0.1:1", "10.0.0.2:10911", 900),
        ];
        let mut body = BytesMut::new();
        let mut expected = Vec::new();
        for m in msgs {
            let rec = encode_record(&m);
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
        let rec = encode_record(&sample("T", "1.2.3.4:5", "1.2.3.4:6", 0));
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
