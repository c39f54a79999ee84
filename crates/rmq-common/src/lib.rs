//! Pure building blocks that the store, the protocol and the client all need to agree on,
//! byte for byte, with Apache RocketMQ: the message-properties string, the offset message id,
//! Java's `String.hashCode` (used for tag codes and index keys), the body CRC and the
//! system-flag bits, the body compression codecs, the CommitLog record format ([`record`])
//! that the store writes and every reader decodes, the system topic names and the transaction
//! op record; and the config schema, the one table of `broker.conf` / `namesrv.conf` keys that
//! the store, the broker and Python check with; the Python logger name of a Rust log target.
//! Nothing here does I/O.
#![forbid(unsafe_code)]

pub mod compression;
pub mod config_schema;
pub mod fx;
pub mod hash;
pub mod logger_name;
pub mod message_id;
pub mod properties;
pub mod record;
pub mod sys_flag;
pub mod time;
pub mod topic;
pub mod trans_op;

pub use compression::{decompress_body, CompressionError, CompressionType};
pub use hash::{
    body_crc, index_hash_of, index_key_hash, java_string_hash, java_string_hash_after,
    tags_hash_code,
};
pub use message_id::{
    create_offset_msg_id, decode_offset_msg_id, join_offset_msg_ids, push_offset_msg_id,
    MessageIdError,
};
pub use properties::{Properties, PropertyKey};
