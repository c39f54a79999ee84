//! The store's own on-disk formats: ConsumeQueue units and file naming. The CommitLog
//! record (and its BLANK filler) is [`rmq_common::record`]'s, re-exported here under the
//! names the store's modules use.

pub use rmq_common::record::{
    calc_msg_length, encode_blank, encode_record, encode_record_around_body, scan_record,
    DecodedRecord, MessageToStore, RecordError, Scan, StoreFields, BLANK_MAGIC_CODE,
    END_FILE_MIN_BLANK_LENGTH, MAX_PROPERTIES_LEN,
};

/// Size of one ConsumeQueue unit: commit log offset 8, size 4, tags code 8.
pub const CQ_STORE_UNIT_SIZE: usize = 20;

/// Name of a CommitLog or ConsumeQueue file: its start offset, 20 digits, zero-padded.
#[must_use]
pub fn file_name(offset: i64) -> String {
    format!("{offset:020}")
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
