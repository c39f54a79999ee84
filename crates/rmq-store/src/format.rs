//! On-disk formats, exactly as Apache RocketMQ writes them (big-endian, like Java's
//! `ByteBuffer`): the CommitLog record, the end-of-file BLANK filler, ConsumeQueue units and
//! file naming. Kept in one place so the layout can be read against `CommitLog.java` and
//! `MessageDecoder.java` field by field.
//!
//! CommitLog record (IPv4 hosts, magic V1):
//!
//! | pos | size | field |
//! |----:|-----:|-------|
//! | 0 | 4 | TOTALSIZE (whole record) |
//! | 4 | 4 | MAGICCODE (V1 `0xDAA320A7`, V2 `0xDAA320AB` for topics over 127 bytes) |
//! | 8 | 4 | BODYCRC (CRC-32 of body, masked to 31 bits) |
//! | 12 | 4 | QUEUEID |
//! | 16 | 4 | FLAG |
//! | 20 | 8 | QUEUEOFFSET |
//! | 28 | 8 | PHYSICALOFFSET |
//! | 36 | 4 | SYSFLAG |
//! | 40 | 8 | BORNTIMESTAMP |
//! | 48 | 8/20 | BORNHOST (ip + port; 20 bytes when SYSFLAG bit 4) |
//! | 56 | 8 | STORETIMESTAMP |
//! | 64 | 8/20 | STOREHOSTADDRESS (20 bytes when SYSFLAG bit 5) |
//! | 72 | 4 | RECONSUMETIMES |
//! | 76 | 8 | PREPAREDTRANSACTIONOFFSET |
//! | 84 | 4+n | BODYLENGTH, BODY |
//! | | 1+n / 2+n | TOPICLENGTH (1 byte V1, 2 bytes V2), TOPIC |
//! | | 2+n | PROPERTIESLENGTH, PROPERTIES |

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use rmq_common::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};

/// Magic of a message record whose topic length takes 1 byte.
pub const MESSAGE_MAGIC_CODE_V1: i32 = 0xDAA3_20A7_u32 as i32;
/// Magic of a message record whose topic length takes 2 bytes.
pub const MESSAGE_MAGIC_CODE_V2: i32 = 0xDAA3_20AB_u32 as i32;
/// Magic of the filler that pads a CommitLog file when the next record does not fit.
pub const BLANK_MAGIC_CODE: i32 = 0xCBD4_3194_u32 as i32;
/// A BLANK filler is TOTALSIZE + MAGICCODE; a file keeps at least this much room for it.
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;
/// Longest topic with a 1-byte length field.
pub const TOPIC_V1_MAX_LEN: usize = 127;
/// Longest properties string (Java `Short.MAX_VALUE`).
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

/// Byte position of QUEUEOFFSET in a record.
pub const QUEUE_OFFSET_POS: usize = 20;
/// Byte position of PHYSICALOFFSET in a record.
pub const PHYSICAL_OFFSET_POS: usize = 28;
/// Byte position of SYSFLAG in a record.
pub const SYSFLAG_POS: usize = 36;
/// Byte position of BORNHOST in a record.
pub const BORNHOST_POS: usize = 48;

/// Size of one ConsumeQueue unit: commit log offset 8, size 4, tags code 8.
pub const CQ_STORE_UNIT_SIZE: usize = 20;

/// Name of a CommitLog or ConsumeQueue file: its start offset, 20 digits, zero-padded.
#[must_use]
pub fn file_name(offset: i64) -> String {
    format!("{offset:020}")
}

fn host_len(v6: bool) -> usize {
    if v6 {
        20
    } else {
        8
    }
}

/// Length of a record with these field sizes (`calMsgLength`).
#[must_use]
pub fn calc_msg_length(
    sys_flag: i32,
    body_len: usize,
    topic_len: usize,
    props_len: usize,
) -> usize {
    let born = host_len(sys_flag & BORNHOST_V6_FLAG != 0);
    let store = host_len(sys_flag & STOREHOSTADDRESS_V6_FLAG != 0);
    let topic_len_size = if topic_len > TOPIC_V1_MAX_LEN { 2 } else { 1 };
    4 + 4
        + 4
        + 4
        + 4
        + 8
        + 8
        + 4
        + 8
        + born
        + 8
        + store
        + 4
        + 8
        + 4
        + body_len
        + topic_len_size
        + topic_len
        + 2
        + props_len
}

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
    /// Sys flag with host-family bits.
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

/// Encode a record into `dst`, which must be exactly `calc_msg_length(...)` bytes (the
/// caller computed it to check space); returns the length written.
pub fn encode_record(dst: &mut [u8], msg: &MessageToStore<'_>, f: &StoreFields) -> usize {
    let topic = msg.topic.as_bytes();
    let v2 = topic.len() > TOPIC_V1_MAX_LEN;
    let total = dst.len();
    let mut w = Writer { buf: dst, pos: 0 };
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    {
        w.put(&(total as i32).to_be_bytes());
        w.put(
            &if v2 {
                MESSAGE_MAGIC_CODE_V2
            } else {
                MESSAGE_MAGIC_CODE_V1
            }
            .to_be_bytes(),
        );
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
        w.put(msg.body);
        if v2 {
            w.put(&(topic.len() as i16).to_be_bytes());
        } else {
            w.put(&[topic.len() as u8]);
        }
        w.put(topic);
        w.put(&(msg.properties.len() as i16).to_be_bytes());
        w.put(msg.properties);
    }
    debug_assert_eq!(w.pos, total);
    w.pos
}

/// Write a BLANK filler of `len` (>= 8) bytes at the start of `dst`.
pub fn encode_blank(dst: &mut [u8], len: usize) {
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    dst[..4].copy_from_slice(&(len as i32).to_be_bytes());
    dst[4..8].copy_from_slice(&BLANK_MAGIC_CODE.to_be_bytes());
}

/// A record decoded in place, borrowing the mapped bytes.
#[derive(Debug, Clone)]
pub struct DecodedRecord<'a> {
    /// TOTALSIZE.
    pub total_size: usize,
    /// BODYCRC.
    pub body_crc: i32,
    /// QUEUEID.
    pub queue_id: i32,
    /// FLAG.
    pub flag: i32,
    /// QUEUEOFFSET.
    pub queue_offset: i64,
    /// PHYSICALOFFSET.
    pub physical_offset: i64,
    /// SYSFLAG.
    pub sys_flag: i32,
    /// BORNTIMESTAMP.
    pub born_timestamp: i64,
    /// BORNHOST.
    pub born_host: SocketAddr,
    /// STORETIMESTAMP.
    pub store_timestamp: i64,
    /// STOREHOSTADDRESS.
    pub store_host: SocketAddr,
    /// RECONSUMETIMES.
    pub reconsume_times: i32,
    /// PREPAREDTRANSACTIONOFFSET.
    pub prepared_transaction_offset: i64,
    /// BODY.
    pub body: &'a [u8],
    /// TOPIC (UTF-8 validated).
    pub topic: &'a str,
    /// PROPERTIES (raw).
    pub properties: &'a [u8],
}

/// What a scan finds at a position of a CommitLog file (`checkMessageAndReturnSize`).
#[derive(Debug)]
pub enum Scan<'a> {
    /// A valid record.
    Message(DecodedRecord<'a>),
    /// The BLANK filler: the rest of the file is padding.
    Blank,
    /// Not a valid record (zeroes, torn write, bad magic, bad length, CRC mismatch).
    Invalid(&'static str),
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.buf.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    fn i32(&mut self) -> Option<i32> {
        Some(i32::from_be_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_be_bytes(self.take(8)?.try_into().ok()?))
    }
    fn host(&mut self, v6: bool) -> Option<SocketAddr> {
        let ip = if v6 {
            let o: [u8; 16] = self.take(16)?.try_into().ok()?;
            IpAddr::V6(Ipv6Addr::from(o))
        } else {
            let o: [u8; 4] = self.take(4)?.try_into().ok()?;
            IpAddr::V4(Ipv4Addr::from(o))
        };
        let port = self.i32()?;
        Some(SocketAddr::new(ip, u16::try_from(port).unwrap_or(0)))
    }
}

/// Decode the record at the start of `buf` (the bytes from the record to the end of the
/// readable data). Never panics on any input.
#[must_use]
pub fn scan_record(buf: &[u8], check_crc: bool) -> Scan<'_> {
    if buf.len() < 8 {
        return Scan::Invalid("truncated header");
    }
    let total = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    let magic = i32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
    if magic == BLANK_MAGIC_CODE {
        return Scan::Blank;
    }
    if magic != MESSAGE_MAGIC_CODE_V1 && magic != MESSAGE_MAGIC_CODE_V2 {
        return Scan::Invalid("bad magic code");
    }
    let Ok(total) = usize::try_from(total) else {
        return Scan::Invalid("negative total size");
    };
    if total > buf.len() {
        return Scan::Invalid("record runs past the written data");
    }
    match decode_fields(&buf[..total], magic == MESSAGE_MAGIC_CODE_V2) {
        None => Scan::Invalid("fields do not fit the total size"),
        Some(rec) => {
            if calc_msg_length(
                rec.sys_flag,
                rec.body.len(),
                rec.topic.len(),
                rec.properties.len(),
            ) != total
            {
                return Scan::Invalid("total size does not match the field lengths");
            }
            if check_crc && rmq_common::body_crc(rec.body) != rec.body_crc {
                return Scan::Invalid("body CRC mismatch");
            }
            Scan::Message(rec)
        }
    }
}

fn decode_fields(rec: &[u8], v2: bool) -> Option<DecodedRecord<'_>> {
    let mut r = Reader { buf: rec, pos: 0 };
    let total_size = usize::try_from(r.i32()?).ok()?;
    r.i32()?; // magic
    let body_crc = r.i32()?;
    let queue_id = r.i32()?;
    let flag = r.i32()?;
    let queue_offset = r.i64()?;
    let physical_offset = r.i64()?;
    let sys_flag = r.i32()?;
    let born_timestamp = r.i64()?;
    let born_host = r.host(sys_flag & BORNHOST_V6_FLAG != 0)?;
    let store_timestamp = r.i64()?;
    let store_host = r.host(sys_flag & STOREHOSTADDRESS_V6_FLAG != 0)?;
    let reconsume_times = r.i32()?;
    let prepared_transaction_offset = r.i64()?;
    let body_len = usize::try_from(r.i32()?).ok()?;
    let body = r.take(body_len)?;
    let topic_len = if v2 {
        usize::try_from(i16::from_be_bytes(r.take(2)?.try_into().ok()?)).ok()?
    } else {
        usize::from(r.take(1)?[0])
    };
    let topic = std::str::from_utf8(r.take(topic_len)?).ok()?;
    let props_len = usize::try_from(i16::from_be_bytes(r.take(2)?.try_into().ok()?)).ok()?;
    let properties = r.take(props_len)?;
    Some(DecodedRecord {
        total_size,
        body_crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_timestamp,
        born_host,
        store_timestamp,
        store_host,
        reconsume_times,
        prepared_transaction_offset,
        body,
        topic,
        properties,
    })
}

/// One ConsumeQueue unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CqUnit {
    /// CommitLog offset of the message.
    pub offset: i64,
    /// Record size.
    pub size: i32,
    /// Tag hash, or delivery time (ms) in SCHEDULE_TOPIC_XXXX.
    pub tags_code: i64,
}

impl CqUnit {
    /// Encode as 20 big-endian bytes.
    #[must_use]
    pub fn encode(&self) -> [u8; CQ_STORE_UNIT_SIZE] {
        let mut b = [0u8; CQ_STORE_UNIT_SIZE];
        b[..8].copy_from_slice(&self.offset.to_be_bytes());
        b[8..12].copy_from_slice(&self.size.to_be_bytes());
        b[12..].copy_from_slice(&self.tags_code.to_be_bytes());
        b
    }

    /// Decode 20 bytes (`None` if shorter).
    #[must_use]
    pub fn decode(b: &[u8]) -> Option<Self> {
        Some(Self {
            offset: i64::from_be_bytes(b.get(..8)?.try_into().ok()?),
            size: i32::from_be_bytes(b.get(8..12)?.try_into().ok()?),
            tags_code: i64::from_be_bytes(b.get(12..20)?.try_into().ok()?),
        })
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn fixed_overhead_is_91_bytes() {
        assert_eq!(calc_msg_length(0, 0, 0, 0), 91);
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
        let store: SocketAddr = "10.0.0.9:10911".parse().unwrap();
        let f = StoreFields {
            queue_offset: 42,
            physical_offset: 4096,
            store_timestamp: 1_700_000_000_123,
            store_host: store,
            body_crc: rmq_common::body_crc(b"hello"),
            sys_flag: m.effective_sys_flag(&store),
        };
        let len = calc_msg_length(f.sys_flag, 5, 1, props.len());
        let mut buf = vec![0u8; len];
        encode_record(&mut buf, &m, &f);
        let be32 = |p: usize| i32::from_be_bytes(buf[p..p + 4].try_into().unwrap());
        let be64 = |p: usize| i64::from_be_bytes(buf[p..p + 8].try_into().unwrap());
        assert_eq!(be32(0) as usize, len);
        assert_eq!(buf[4..8], [0xDA, 0xA3, 0x20, 0xA7]);
        assert_eq!(be32(8), rmq_common::body_crc(b"hello"));
        assert_eq!(be32(12), 3);
        assert_eq!(be32(16), 7);
        assert_eq!(be64(QUEUE_OFFSET_POS), 42);
        assert_eq!(be64(PHYSICAL_OFFSET_POS), 4096);
        assert_eq!(be32(SYSFLAG_POS), 0);
        assert_eq!(be64(40), 1_700_000_000_000);
        assert_eq!(buf[48..52], [192, 168, 0, 1]);
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
        assert_eq!(i16::from_be_bytes([buf[95], buf[96]]) as usize, props.len());
        assert_eq!(&buf[97..], props);
        match scan_record(&buf, true) {
            Scan::Message(r) => {
                assert_eq!(r.topic, "T");
                assert_eq!(r.body, b"hello");
                assert_eq!(r.born_host, m.born_host);
                assert_eq!(r.store_host, store);
                assert_eq!(r.queue_offset, 42);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn v2_magic_and_ipv6_hosts() {
        let topic = "t".repeat(200);
        let mut m = msg(&topic, b"x", b"");
        m.born_host = "[::1]:1".parse().unwrap();
        let store: SocketAddr = "[fe80::1]:10911".parse().unwrap();
        let sys = m.effective_sys_flag(&store);
        assert_eq!(sys, BORNHOST_V6_FLAG | STOREHOSTADDRESS_V6_FLAG);
        let f = StoreFields {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 1,
            store_host: store,
            body_crc: rmq_common::body_crc(b"x"),
            sys_flag: sys,
        };
        let len = calc_msg_length(sys, 1, 200, 0);
        let mut buf = vec![0u8; len];
        encode_record(&mut buf, &m, &f);
        assert_eq!(buf[4..8], [0xDA, 0xA3, 0x20, 0xAB]);
        match scan_record(&buf, true) {
            Scan::Message(r) => {
                assert_eq!(r.topic.len(), 200);
                assert_eq!(r.store_host, store);
                assert_eq!(r.born_host, m.born_host);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scan_rejects_damage_and_never_panics() {
        let m = msg("T", b"hello", b"");
        let store: SocketAddr = "1.2.3.4:5".parse().unwrap();
        let f = StoreFields {
            queue_offset: 0,
            physical_offset: 0,
            store_timestamp: 1,
            store_host: store,
            body_crc: rmq_common::body_crc(b"hello"),
            sys_flag: 0,
        };
        let len = calc_msg_length(0, 5, 1, 0);
        let mut buf = vec![0u8; len];
        encode_record(&mut buf, &m, &f);
        let mut bad = buf.clone();
        bad[90] ^= 0xFF; // flip a body byte
        assert!(matches!(
            scan_record(&bad, true),
            Scan::Invalid("body CRC mismatch")
        ));
        assert!(matches!(scan_record(&bad, false), Scan::Message(_)));
        assert!(matches!(
            scan_record(&buf[..len - 1], true),
            Scan::Invalid(_)
        ));
        assert!(matches!(scan_record(&[0u8; 64], true), Scan::Invalid(_)));
        let mut blank = [0u8; 8];
        encode_blank(&mut blank, 8);
        assert!(matches!(scan_record(&blank, true), Scan::Blank));
        // Every truncation and every single-byte corruption of the header is handled.
        for cut in 0..len {
            let _ = scan_record(&buf[..cut], true);
        }
        for i in 0..len {
            let mut b = buf.clone();
            b[i] = b[i].wrapping_add(0x55);
            let _ = scan_record(&b, true);
        }
    }

    #[test]
    fn cq_unit_round_trip() {
        let u = CqUnit {
            offset: 1 << 33,
            size: 1234,
            tags_code: -5,
        };
        let b = u.encode();
        assert_eq!(b[..8], (1i64 << 33).to_be_bytes());
        assert_eq!(CqUnit::decode(&b), Some(u));
        assert_eq!(CqUnit::decode(&b[..19]), None);
        assert_eq!(file_name(6_000_000), "00000000000006000000");
    }
}
