//! Reading a record in place: [`DecodedRecord`] borrows the input (body, topic and
//! properties are slices of it), and [`scan_record`] says what a CommitLog walk finds at a
//! position: a record, the BLANK filler, or bytes that are not a record (with
//! [`RecordError::is_truncated`] telling "need more" from damage).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::{
    record_len, RecordError, BLANK_MAGIC_CODE, MESSAGE_MAGIC_CODE_V1, MESSAGE_MAGIC_CODE_V2,
    MIN_RECORD_BYTES, TOPIC_V1_MAX_LEN,
};
use crate::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};

/// A record decoded in place, borrowing the bytes it was read from.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// TOPIC (UTF-8 checked).
    pub topic: &'a str,
    /// PROPERTIES, raw (`name\u1value\u2…`); see [`properties_str`](Self::properties_str).
    pub properties: &'a [u8],
}

/// What a scan finds at a position of a CommitLog file (`checkMessageAndReturnSize`).
#[derive(Debug)]
pub enum Scan<'a> {
    /// A valid record.
    Message(DecodedRecord<'a>),
    /// The BLANK filler: the rest of the file is padding.
    Blank,
    /// Not a record: zeroes, damage, or (when [`RecordError::is_truncated`]) a record that
    /// runs past the bytes given.
    Invalid(RecordError),
}

/// Decode what starts at `buf[0]`: a record (its CRC checked when `check_crc`), the BLANK
/// filler, or why it is neither. `buf` may run past the record. Never panics.
#[must_use]
pub fn scan_record(buf: &[u8], check_crc: bool) -> Scan<'_> {
    match header(buf, true) {
        Ok(None) => Scan::Blank,
        Ok(Some((total, v2))) => match fields(&buf[..total], v2, check_crc) {
            Ok(r) => Scan::Message(r),
            Err(e) => Scan::Invalid(e),
        },
        Err(e) => Scan::Invalid(e),
    }
}

impl<'a> DecodedRecord<'a> {
    /// Decode the record at the start of `buf` (which may run past it; only TOTALSIZE
    /// bytes are read). The BODYCRC is not checked.
    ///
    /// # Errors
    /// Any [`RecordError`] but `CrcMismatch`; a BLANK filler is `BadMagic`.
    pub fn parse(buf: &'a [u8]) -> Result<Self, RecordError> {
        match header(buf, false)? {
            Some((total, v2)) => fields(&buf[..total], v2, false),
            None => Err(RecordError::BadMagic(BLANK_MAGIC_CODE.cast_unsigned())),
        }
    }

    /// PROPERTIES as text.
    ///
    /// # Errors
    /// [`RecordError::NotUtf8`] (the store writes only UTF-8, but old or foreign files may not).
    pub fn properties_str(&self) -> Result<&'a str, RecordError> {
        utf8(self.properties, "PROPERTIES")
    }
}

fn utf8<'a>(b: &'a [u8], field: &'static str) -> Result<&'a str, RecordError> {
    std::str::from_utf8(b).map_err(|e| RecordError::NotUtf8 {
        field,
        valid_up_to: e.valid_up_to(),
    })
}

/// TOTALSIZE and version of the record at `buf[0]`, checked against `buf`; `None` for a
/// BLANK filler when `blank_ok`.
fn header(buf: &[u8], blank_ok: bool) -> Result<Option<(usize, bool)>, RecordError> {
    let (Some(size), Some(magic)) = (buf.get(0..4), buf.get(4..8)) else {
        return Err(RecordError::Truncated {
            need: 8,
            have: buf.len(),
        });
    };
    let total = i32::from_be_bytes([size[0], size[1], size[2], size[3]]);
    let magic = i32::from_be_bytes([magic[0], magic[1], magic[2], magic[3]]);
    let v2 = match magic {
        MESSAGE_MAGIC_CODE_V1 => false,
        MESSAGE_MAGIC_CODE_V2 => true,
        BLANK_MAGIC_CODE if blank_ok => return Ok(None),
        other => return Err(RecordError::BadMagic(other.cast_unsigned())),
    };
    let bad = || RecordError::BadLength {
        field: "TOTALSIZE",
        value: i64::from(total),
        max: i32::MAX as usize,
    };
    let total = usize::try_from(total).map_err(|_| bad())?;
    if total < MIN_RECORD_BYTES {
        return Err(RecordError::SizeMismatch {
            total,
            fields: MIN_RECORD_BYTES,
        });
    }
    if total > buf.len() {
        return Err(RecordError::Truncated {
            need: total,
            have: buf.len(),
        });
    }
    Ok(Some((total, v2)))
}

/// Bounds-checked big-endian reader over exactly one record.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], RecordError> {
        let s = self
            .pos
            .checked_add(n)
            .and_then(|end| self.buf.get(self.pos..end))
            .ok_or(RecordError::FieldOverrun {
                field,
                at: self.pos,
                need: n,
                total: self.buf.len(),
            })?;
        self.pos += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], RecordError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, field)?);
        Ok(a)
    }

    fn i32(&mut self, field: &'static str) -> Result<i32, RecordError> {
        Ok(i32::from_be_bytes(self.array(field)?))
    }

    fn i64(&mut self, field: &'static str) -> Result<i64, RecordError> {
        Ok(i64::from_be_bytes(self.array(field)?))
    }

    fn len(value: i64, field: &'static str, max: usize) -> Result<usize, RecordError> {
        usize::try_from(value)
            .ok()
            .filter(|&n| n <= max)
            .ok_or(RecordError::BadLength { field, value, max })
    }

    fn host(&mut self, v6: bool, field: &'static str) -> Result<SocketAddr, RecordError> {
        let ip = if v6 {
            IpAddr::V6(Ipv6Addr::from(self.array::<16>(field)?))
        } else {
            IpAddr::V4(Ipv4Addr::from(self.array::<4>(field)?))
        };
        let port = self.i32(field)?;
        let port = u16::try_from(port).map_err(|_| RecordError::BadPort { field, port })?;
        Ok(SocketAddr::new(ip, port))
    }
}

/// Every field of `rec`, which is exactly TOTALSIZE bytes.
fn fields(rec: &[u8], v2: bool, check_crc: bool) -> Result<DecodedRecord<'_>, RecordError> {
    let mut r = Reader { buf: rec, pos: 8 };
    let body_crc = r.i32("BODYCRC")?;
    let queue_id = r.i32("QUEUEID")?;
    let flag = r.i32("FLAG")?;
    let queue_offset = r.i64("QUEUEOFFSET")?;
    let physical_offset = r.i64("PHYSICALOFFSET")?;
    let sys_flag = r.i32("SYSFLAG")?;
    let born_timestamp = r.i64("BORNTIMESTAMP")?;
    let born_host = r.host(sys_flag & BORNHOST_V6_FLAG != 0, "BORNHOST")?;
    let store_timestamp = r.i64("STORETIMESTAMP")?;
    let store_host = r.host(sys_flag & STOREHOSTADDRESS_V6_FLAG != 0, "STOREHOSTADDRESS")?;
    let reconsume_times = r.i32("RECONSUMETIMES")?;
    let prepared_transaction_offset = r.i64("PREPAREDTRANSACTIONOFFSET")?;
    let body_len = r.i32("BODYLENGTH")?;
    let body_len = Reader::len(i64::from(body_len), "BODYLENGTH", i32::MAX as usize)?;
    let body = r.take(body_len, "BODY")?;
    // Java reads the topic length signed (`get()` / `getShort()`); negative is an error.
    let topic_len = if v2 {
        i64::from(i16::from_be_bytes(r.array("TOPICLENGTH")?))
    } else {
        i64::from(i8::from_be_bytes(r.array("TOPICLENGTH")?))
    };
    let max_topic = if v2 {
        i16::MAX as usize
    } else {
        TOPIC_V1_MAX_LEN
    };
    let topic_len = Reader::len(topic_len, "TOPICLENGTH", max_topic)?;
    let topic = utf8(r.take(topic_len, "TOPIC")?, "TOPIC")?;
    let props_len = i16::from_be_bytes(r.array("PROPERTIESLENGTH")?);
    let props_len = Reader::len(i64::from(props_len), "PROPERTIESLENGTH", i16::MAX as usize)?;
    let properties = r.take(props_len, "PROPERTIES")?;
    let expected = record_len(sys_flag, body.len(), v2, topic.len(), properties.len());
    if expected != rec.len() {
        return Err(RecordError::SizeMismatch {
            total: rec.len(),
            fields: expected,
        });
    }
    if check_crc {
        let computed = crate::body_crc(body);
        if computed != body_crc {
            return Err(RecordError::CrcMismatch {
                stored: body_crc,
                computed,
            });
        }
    }
    Ok(DecodedRecord {
        total_size: rec.len(),
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
