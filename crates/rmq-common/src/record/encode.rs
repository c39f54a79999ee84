//! Writing a record: [`encode_record`] fills a caller's buffer (on the store's append path,
//! the mapped file itself), so nothing is allocated per message.

use std::net::{IpAddr, SocketAddr};

use super::{BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2, TOPIC_V1_MAX_LEN};
use crate::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};

/// A message as handed to the store (RocketMQ's `MessageExtBrokerInner`).
#[derive(Debug, Clone)]
pub struct MessageToStore<'a> {
    /// Topic (UTF-8).
    pub topic: &'a str,
    /// Queue within the topic.
    pub queue_id: i32,
    /// Application flag.
    pub flag: i32,
    /// Body bytes.
    pub body: &'a [u8],
    /// Encoded properties string (`name\u1value\u2…`).
    pub properties: &'a [u8],
    /// System flag; the store sets the IPv6 host bits itself.
    pub sys_flag: i32,
    /// Producer-side creation time (ms).
    pub born_timestamp: i64,
    /// Producer address.
    pub born_host: SocketAddr,
    /// Delivery attempt count.
    pub reconsume_times: i32,
    /// Offset of the half message, for transaction commit/rollback records.
    pub prepared_transaction_offset: i64,
}

impl MessageToStore<'_> {
    /// The sys flag with the host-family bits set from the addresses.
    #[must_use]
    pub fn effective_sys_flag(&self, store_host: &SocketAddr) -> i32 {
        let mut f = self.sys_flag & !(BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG);
        if self.born_host.is_ipv6() {
            f |= BORNHOST_V6_FLAG;
        }
        if store_host.is_ipv6() {
            f |= STOREHOSTADDRESS_V6_FLAG;
        }
        f
    }
}

/// Fields the store fills in at append time.
#[derive(Debug, Clone, Copy)]
pub struct StoreFields {
    /// Logical offset in the ConsumeQueue.
    pub queue_offset: i64,
    /// CommitLog offset of the record.
    pub physical_offset: i64,
    /// Store time (ms).
    pub store_timestamp: i64,
    /// Broker address.
    pub store_host: SocketAddr,
    /// Body CRC (masked CRC-32).
    pub body_crc: i32,
    /// Sys flag with host-family bits ([`MessageToStore::effective_sys_flag`]).
    pub sys_flag: i32,
}

struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }

    fn host(&mut self, a: &SocketAddr) {
        match a.ip() {
            IpAddr::V4(ip) => self.put(&ip.octets()),
            IpAddr::V6(ip) => self.put(&ip.octets()),
        }
        self.put(&i32::from(a.port()).to_be_bytes());
    }
}

/// Encode a record into `dst`, which must be exactly
/// [`calc_msg_length`](super::calc_msg_length)`(f.sys_flag, body, topic, properties)` bytes
/// long: the caller computed that length to check space and limits (topic and properties
/// at most 32767 bytes, the record under 2 GiB), as the store's `validate` does. Returns
/// the length written.
///
/// # Panics
/// When `dst` is shorter than the record (a caller bug: the length was not computed with
/// `calc_msg_length`).
pub fn encode_record(dst: &mut [u8], msg: &MessageToStore<'_>, f: &StoreFields) -> usize {
    let total = dst.len();
    encode(dst, msg, f, total, true);
    total
}

/// Encode a record without its body: `dst` (exactly the record's length less the body's)
/// gets the fields before the body and, from the returned position on, those after it. The
/// record is those two parts with the body between them: a writer that gathers the three
/// (`pwritev`) writes the body from where it lies instead of copying it into `dst` first.
///
/// # Panics
/// As [`encode_record`], for `dst` shorter than the record without its body.
pub fn encode_record_around_body(
    dst: &mut [u8],
    msg: &MessageToStore<'_>,
    f: &StoreFields,
) -> usize {
    let total = dst.len() + msg.body.len();
    encode(dst, msg, f, total, false)
}

/// The record (of `total` bytes) into `dst`, with or without the body; the position where the
/// body starts (or would).
fn encode(
    dst: &mut [u8],
    msg: &MessageToStore<'_>,
    f: &StoreFields,
    total: usize,
    with_body: bool,
) -> usize {
    let topic = msg.topic.as_bytes();
    let v2 = topic.len() > TOPIC_V1_MAX_LEN;
    let end = dst.len();
    let mut w = Writer { buf: dst, pos: 0 };
    let body_at;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_possible_wrap,
        reason = "lengths were checked by the caller (see above); the casts cannot truncate"
    )]
    {
        w.put(&(total as i32).to_be_bytes());
        let magic = if v2 {
            MESSAGE_MAGIC_CODE_V2
        } else {
            MESSAGE_MAGIC_CODE_V1
        };
        w.put(&magic.to_be_bytes());
        w.put(&f.body_crc.to_be_bytes());
        w.put(&msg.queue_id.to_be_bytes());
        w.put(&msg.flag.to_be_bytes());
        w.put(&f.queue_offset.to_be_bytes());
        w.put(&f.physical_offset.to_be_bytes());
        w.put(&f.sys_flag.to_be_bytes());
        w.put(&msg.born_timestamp.to_be_bytes());
        w.host(&msg.born_host);
        w.put(&f.store_timestamp.to_be_bytes());
        w.host(&f.store_host);
        w.put(&msg.reconsume_times.to_be_bytes());
        w.put(&msg.prepared_transaction_offset.to_be_bytes());
        w.put(&(msg.body.len() as i32).to_be_bytes());
        body_at = w.pos;
        if with_body {
            w.put(msg.body);
        }
        if v2 {
            w.put(&(topic.len() as i16).to_be_bytes());
        } else {
            w.put(&[topic.len() as u8]);
        }
        w.put(topic);
        w.put(&(msg.properties.len() as i16).to_be_bytes());
        w.put(msg.properties);
    }
    debug_assert_eq!(w.pos, end);
    body_at
}

/// Write a BLANK filler header for `len` (>= 8) bytes of padding at the start of `dst`.
///
/// # Panics
/// When `dst` is shorter than 8 bytes.
pub fn encode_blank(dst: &mut [u8], len: usize) {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_possible_wrap,
        reason = "a file's remaining space: far below 2 GiB"
    )]
    dst[..4].copy_from_slice(&(len as i32).to_be_bytes());
    dst[4..8].copy_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
}
