//! The one error type of this crate. Every variant carries the facts needed to log the
//! problem without the offending bytes at hand; none of them is a wire response code (the
//! broker maps errors to codes itself, so protocol and policy stay apart).

/// Shorthand for results of this crate.
pub type Result<T, E = ProtocolError> = std::result::Result<T, E>;

/// Why a frame, header, body or message could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// The length prefix announces a frame above the limit (Java rejects it the same way and
    /// closes the connection).
    #[error("frame of {length} bytes exceeds the maximum of {max} bytes")]
    FrameTooLarge {
        /// Frame length including the 4-byte length field.
        length: u64,
        /// The limit in force.
        max: usize,
    },
    /// The length prefix is negative or too small to hold the header-length word.
    #[error("invalid frame length {length}: must be at least 4")]
    FrameTooShort {
        /// The announced length (bytes after the length field).
        length: i32,
    },
    /// The header length (low 24 bits of the second word) runs past the end of the frame.
    #[error("header length {header_len} exceeds the {available} bytes left in the frame")]
    HeaderLengthExceedsFrame {
        /// Announced header length.
        header_len: usize,
        /// Bytes available for header and body.
        available: usize,
    },
    /// The serialize-type byte is neither 0 (JSON) nor 1 (ROCKETMQ).
    #[error("unknown header serialize type {code}")]
    UnknownSerializeType {
        /// The byte found.
        code: u8,
    },
    /// A JSON header that is not valid JSON (even after fastjson leniency) or has a field of
    /// the wrong shape.
    #[error("bad JSON header: {reason}")]
    BadJsonHeader {
        /// What was wrong.
        reason: String,
    },
    /// A ROCKETMQ binary header that is truncated or has impossible lengths.
    #[error("bad ROCKETMQ binary header at byte {position}: {reason}")]
    BadBinaryHeader {
        /// Offset inside the header where reading failed.
        position: usize,
        /// What was wrong.
        reason: String,
    },
    /// A header field that the Java class marks `@CFNotNull` is absent.
    #[error("missing required header field `{field}`")]
    MissingField {
        /// The extFields key.
        field: &'static str,
    },
    /// A header field whose text does not parse as its Java type.
    #[error("header field `{field}` has invalid value {value:?}: expected {expected}")]
    InvalidField {
        /// The extFields key.
        field: &'static str,
        /// The text found.
        value: String,
        /// The Java type expected (`int`, `long`, `boolean`).
        expected: &'static str,
    },
    /// A value that cannot be represented on the wire (a code that does not fit the binary
    /// header's 16 bits, a key longer than 32767 bytes, a header over 16 MiB, …).
    #[error("cannot encode {what}: {reason}")]
    Unencodable {
        /// The field or structure.
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// A JSON body that does not match the RocketMQ class it should hold.
    #[error("bad {type_name} body: {reason}")]
    BadBody {
        /// The body type being read.
        type_name: &'static str,
        /// The parser's message.
        reason: String,
    },
    /// A message record (pull/query/view body or batch body) that is truncated or
    /// inconsistent.
    #[error("bad message record at byte {offset}: {reason}")]
    BadMessage {
        /// Offset of the record's first byte in the body.
        offset: usize,
        /// What was wrong.
        reason: String,
    },
}
