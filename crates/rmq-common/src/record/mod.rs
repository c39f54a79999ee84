//! The CommitLog record (RocketMQ's `MessageExt` layout), owned once: the store appends and
//! recovers it, the broker reads it back (send-back, transactions), PULL/QUERY/VIEW bodies
//! carry it to clients, and every one of them uses this module.
//!
//! - [`view`]: [`scan_record`] / [`DecodedRecord::parse`], a borrowing view (numbers and
//!   slices of the input, nothing copied) and the [`Scan`] a store walk needs;
//! - [`encode`]: [`encode_record`] into a caller's buffer (the store's mapped file; no
//!   allocation) from a [`MessageToStore`] plus the [`StoreFields`] the store fills in;
//! - [`message`]: [`MessageExt`], the owned message a consumer holds (body shared, not copied).
//!
//! Layout (big-endian; hosts are 20 bytes instead of 8 when SYSFLAG bit 4 / bit 5 is set):
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
//! | 48 | 8/20 | BORNHOST (ip + port i32) |
//! | 56 | 8 | STORETIMESTAMP |
//! | 64 | 8/20 | STOREHOSTADDRESS (ip + port i32) |
//! | 72 | 4 | RECONSUMETIMES |
//! | 76 | 8 | PREPAREDTRANSACTIONOFFSET |
//! | 84 | 4+n | BODYLENGTH, BODY |
//! | | 1+n / 2+n | TOPICLENGTH (1 byte V1, 2 bytes V2), TOPIC |
//! | | 2+n | PROPERTIESLENGTH, PROPERTIES |
//!
//! # Decode rules (one set, strict)
//! Two copies of this decoder used to disagree; each difference is settled here against
//! Apache RocketMQ (`MessageDecoder.decode`, `MessageVersion`, `CommitLog.checkMessageAndReturnSize`):
//! - **Topic length is signed**, as Java reads it (`get()` for V1, `getShort()` for V2): a V1
//!   length above 127 or a negative V2 length is an error (Java fails with
//!   `NegativeArraySizeException`). The encoder never writes either.
//! - **A host port outside 0..=65535 is an error** (Java's `new InetSocketAddress` throws and
//!   `decode` returns null), never silently port 0.
//! - **TOPIC must be UTF-8** (Java would substitute U+FFFD; the encoder only takes `&str`, so
//!   every stored topic is valid). PROPERTIES stay bytes in the view (the store reads single
//!   properties without decoding the string); [`MessageExt`] decodes them strictly too.
//! - **TOTALSIZE must equal the field lengths** (`checkMessageAndReturnSize` checks it too):
//!   a record whose fields end early or run past TOTALSIZE is corrupt.
//! - Every short input is an error ([`RecordError::Truncated`] when TOTALSIZE reaches past
//!   the bytes given: "need more"), never a panic; lengths are checked against the input
//!   before anything is sliced, and nothing is allocated from a length field.

mod encode;
mod message;
mod view;

pub use encode::{
    encode_blank, encode_record, encode_record_around_body, MessageToStore, StoreFields,
};
pub use message::MessageExt;
pub use view::{scan_record, DecodedRecord, Scan};

use crate::sys_flag::{BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG};

/// Magic of a message record whose topic length takes 1 byte.
pub const MESSAGE_MAGIC_CODE_V1: i32 = i32::from_be_bytes([0xDA, 0xA3, 0x20, 0xA7]);
/// Magic of a message record whose topic length takes 2 bytes.
pub const MESSAGE_MAGIC_CODE_V2: i32 = i32::from_be_bytes([0xDA, 0xA3, 0x20, 0xAB]);
/// Magic of the filler that pads a CommitLog file when the next record does not fit.
pub const BLANK_MAGIC_CODE: i32 = i32::from_be_bytes([0xCB, 0xD4, 0x31, 0x94]);
/// A BLANK filler is TOTALSIZE + MAGICCODE; a file keeps at least this much room for it.
pub const END_FILE_MIN_BLANK_LENGTH: usize = 8;
/// Longest topic with a 1-byte length field (Java `Byte.MAX_VALUE`).
pub const TOPIC_V1_MAX_LEN: usize = 127;
/// Longest topic of a V2 record (Java `Short.MAX_VALUE`).
pub const TOPIC_V2_MAX_LEN: usize = i16::MAX as usize;
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

/// Smallest possible record: IPv4 hosts, empty body, topic and properties.
pub const MIN_RECORD_BYTES: usize = calc_msg_length(0, 0, 0, 0);

/// Why bytes are not a record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    /// The input ends before the record does ("need more"): at the tail of written data
    /// this is a torn or unfinished write.
    #[error("the record needs {need} bytes but only {have} are there")]
    Truncated {
        /// Bytes the record needs (8 for the header, else TOTALSIZE).
        need: usize,
        /// Bytes given.
        have: usize,
    },
    /// MAGICCODE is neither V1 nor V2 (nor BLANK where a filler is allowed).
    #[error("unknown magic code {0:#010X}")]
    BadMagic(u32),
    /// A length field is negative or over its limit.
    #[error("{field} {value} is outside 0..={max}")]
    BadLength {
        /// Field name as in the layout.
        field: &'static str,
        /// Value read.
        value: i64,
        /// Largest allowed.
        max: usize,
    },
    /// A field reaches past TOTALSIZE.
    #[error("{field} needs {need} bytes at record byte {at} but TOTALSIZE is {total}")]
    FieldOverrun {
        /// Field name as in the layout.
        field: &'static str,
        /// Where it starts.
        at: usize,
        /// Its length.
        need: usize,
        /// TOTALSIZE.
        total: usize,
    },
    /// TOTALSIZE disagrees with the fields (`calMsgLength`).
    #[error("TOTALSIZE {total} does not match the fields, which take {fields} bytes")]
    SizeMismatch {
        /// TOTALSIZE.
        total: usize,
        /// Sum of the field lengths.
        fields: usize,
    },
    /// A host port outside 0..=65535.
    #[error("{field} port {port} is outside 0..=65535")]
    BadPort {
        /// BORNHOST or STOREHOSTADDRESS.
        field: &'static str,
        /// Value read.
        port: i32,
    },
    /// TOPIC or PROPERTIES is not UTF-8.
    #[error("{field} is not UTF-8 (valid up to byte {valid_up_to})")]
    NotUtf8 {
        /// TOPIC or PROPERTIES.
        field: &'static str,
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// BODYCRC does not match the body.
    #[error("body CRC mismatch: BODYCRC {stored}, the body's CRC {computed}")]
    CrcMismatch {
        /// BODYCRC.
        stored: i32,
        /// CRC of the body read.
        computed: i32,
    },
    /// A field too long to encode (the store's put checks reject such messages first).
    #[error("{field} is {len} bytes, the record format allows at most {max}")]
    TooLong {
        /// TOPIC, BODY or PROPERTIES.
        field: &'static str,
        /// Its length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl RecordError {
    /// Whether more bytes could make this a record (the input ends inside it).
    #[must_use]
    pub fn is_truncated(&self) -> bool {
        matches!(self, Self::Truncated { .. })
    }
}

const fn host_len(v6: bool) -> usize {
    if v6 {
        20
    } else {
        8
    }
}

/// Length of a record with these field sizes (`calMsgLength`); `sys_flag` picks the host
/// sizes, a topic over 127 bytes takes a 2-byte length (V2).
#[must_use]
pub const fn calc_msg_length(
    sys_flag: i32,
    body_len: usize,
    topic_len: usize,
    props_len: usize,
) -> usize {
    record_len(
        sys_flag,
        body_len,
        topic_len > TOPIC_V1_MAX_LEN,
        topic_len,
        props_len,
    )
}

/// [`calc_msg_length`] with the record version given (a V2 record may hold a short topic).
const fn record_len(
    sys_flag: i32,
    body_len: usize,
    v2: bool,
    topic_len: usize,
    props_len: usize,
) -> usize {
    let born = host_len(sys_flag & BORNHOST_V6_FLAG != 0);
    let store = host_len(sys_flag & STOREHOSTADDRESS_V6_FLAG != 0);
    let topic_len_size = if v2 { 2 } else { 1 };
    // TOTALSIZE MAGIC BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSICALOFFSET SYSFLAG BORNTIMESTAMP
    4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8
        + born
        + 8 // STORETIMESTAMP
        + store
        + 4 // RECONSUMETIMES
        + 8 // PREPAREDTRANSACTIONOFFSET
        + 4
        + body_len
        + topic_len_size
        + topic_len
        + 2
        + props_len
}

#[cfg(test)]
mod tests;
