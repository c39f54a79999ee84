//! `MessageSysFlag` bits, as stored in the SYSFLAG field of every CommitLog record.

/// Body is compressed, as the compression type bits say (see [`crate::compression`]).
pub const COMPRESSED_FLAG: i32 = 0x1;
/// TAGS holds several tags.
pub const MULTI_TAGS_FLAG: i32 = 0x1 << 1;
/// Not a transactional message.
pub const TRANSACTION_NOT_TYPE: i32 = 0;
/// Half message of a transaction: stored, indexed, never put in a ConsumeQueue.
pub const TRANSACTION_PREPARED_TYPE: i32 = 0x1 << 2;
/// Commit record of a transaction.
pub const TRANSACTION_COMMIT_TYPE: i32 = 0x2 << 2;
/// Rollback record of a transaction: neither queued nor indexed.
pub const TRANSACTION_ROLLBACK_TYPE: i32 = 0x3 << 2;
/// Born host is IPv6 (20 bytes instead of 8 in the record).
pub const BORNHOST_V6_FLAG: i32 = 0x1 << 4;
/// Store host is IPv6 (20 bytes instead of 8 in the record).
pub const STOREHOSTADDRESS_V6_FLAG: i32 = 0x1 << 5;
/// Compression type LZ4 (bits 8..10 = 1).
pub const COMPRESSION_LZ4_TYPE: i32 = 0x1 << 8;
/// Compression type ZSTD (bits 8..10 = 2).
pub const COMPRESSION_ZSTD_TYPE: i32 = 0x2 << 8;
/// Compression type ZLIB (bits 8..10 = 3; 0, from clients before the types, is zlib too).
pub const COMPRESSION_ZLIB_TYPE: i32 = 0x3 << 8;
/// Mask of the compression type bits.
pub const COMPRESSION_TYPE_COMPARATOR: i32 = 0x7 << 8;

/// The transaction type bits of a sys flag.
#[must_use]
pub fn transaction_value(sys_flag: i32) -> i32 {
    sys_flag & TRANSACTION_ROLLBACK_TYPE
}

/// Replace the transaction type bits of a sys flag.
#[must_use]
pub fn reset_transaction_value(sys_flag: i32, tx_type: i32) -> i32 {
    (sys_flag & !TRANSACTION_ROLLBACK_TYPE) | tx_type
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_bits_round_trip() {
        let f = COMPRESSED_FLAG | BORNHOST_V6_FLAG;
        for t in [
            TRANSACTION_NOT_TYPE,
            TRANSACTION_PREPARED_TYPE,
            TRANSACTION_COMMIT_TYPE,
            TRANSACTION_ROLLBACK_TYPE,
        ] {
            let g = reset_transaction_value(f, t);
            assert_eq!(transaction_value(g), t);
            assert_eq!(g & !TRANSACTION_ROLLBACK_TYPE, f);
        }
    }
}
