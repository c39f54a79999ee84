//! `RemotingCommand`: the one message shape of the RocketMQ remoting protocol. Requests and
//! responses differ only by flag bit 0; oneway requests set bit 1. The typed meaning of a
//! command lives in its `ext_fields` (see [`crate::header`]) and its body (see
//! [`crate::body`]), so the transport can move commands without understanding them.

use std::fmt;

use bytes::Bytes;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::Result;
pub use crate::ext_fields::ExtFields;
use crate::header::CommandHeader;

/// Flag bit set on responses (`RemotingCommand.RPC_TYPE`).
pub const FLAG_RESPONSE: i32 = 1 << 0;
/// Flag bit set on requests that expect no response (`RemotingCommand.RPC_ONEWAY`).
pub const FLAG_ONEWAY: i32 = 1 << 1;

/// How the header of a frame is serialized; the byte stored in the top 8 bits of the
/// header-length word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SerializeType {
    /// fastjson text, the Java default.
    #[default]
    Json,
    /// RocketMQ's compact binary layout (`RocketMQSerializable`).
    RocketMq,
}

impl SerializeType {
    /// The wire byte.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::Json => 0,
            Self::RocketMq => 1,
        }
    }

    /// The serialize type of a wire byte, if known.
    #[must_use]
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            0 => Some(Self::Json),
            1 => Some(Self::RocketMq),
            _ => None,
        }
    }

    /// Java enum name, as the JSON header's `serializeTypeCurrentRPC` holds it.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::RocketMq => "ROCKETMQ",
        }
    }
}

macro_rules! language_codes {
    ($($(#[$m:meta])* $variant:ident = $code:literal, $name:literal;)*) => {
        /// The peer's implementation language (`LanguageCode`). Carried by name in JSON
        /// headers and by number in ROCKETMQ headers; unknown values read as
        /// [`LanguageCode::Other`] so that a newer peer never fails decoding.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum LanguageCode {
            $($(#[$m])* $variant,)*
        }

        impl LanguageCode {
            /// Every language, in code order.
            pub const ALL: &'static [LanguageCode] = &[$(LanguageCode::$variant),*];

            /// The number used by the ROCKETMQ binary header.
            #[must_use]
            pub const fn code(self) -> u8 {
                match self { $(Self::$variant => $code,)* }
            }

            /// The Java enum name used by JSON headers and bodies.
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self { $(Self::$variant => $name,)* }
            }

            /// The language with this number; unknown numbers give `Other`.
            #[must_use]
            pub const fn from_code(code: u8) -> Self {
                match code { $($code => Self::$variant,)* _ => Self::Other }
            }

            /// The language with this Java name; unknown names give `Other`.
            #[must_use]
            pub fn from_name(name: &str) -> Self {
                match name { $($name => Self::$variant,)* _ => Self::Other }
            }
        }
    };
}

language_codes! {
    /// The Java client and broker; the default, as in Java.
    #[default]
    Java = 0, "JAVA";
    /// rocketmq-client-cpp.
    Cpp = 1, "CPP";
    /// .NET client.
    Dotnet = 2, "DOTNET";
    /// Python client.
    Python = 3, "PYTHON";
    /// Delphi client.
    Delphi = 4, "DELPHI";
    /// Erlang client.
    Erlang = 5, "ERLANG";
    /// Ruby client.
    Ruby = 6, "RUBY";
    /// Anything else, and every code this crate does not know.
    Other = 7, "OTHER";
    /// HTTP proxy.
    Http = 8, "HTTP";
    /// rocketmq-client-go.
    Go = 9, "GO";
    /// PHP client.
    Php = 10, "PHP";
    /// OpenMessaging.
    Oms = 11, "OMS";
    /// Rust clients.
    Rust = 12, "RUST";
}

impl Serialize for LanguageCode {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for LanguageCode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        // fastjson accepts an enum by name or by ordinal; so do we, and never fail.
        let v = serde_json::Value::deserialize(d)?;
        Ok(language_from_json(&v))
    }
}

/// Read a language from a JSON value: a name, a number or anything else (→ `Other`).
pub(crate) fn language_from_json(v: &serde_json::Value) -> LanguageCode {
    match v {
        serde_json::Value::String(s) => LanguageCode::from_name(s),
        serde_json::Value::Number(n) => n
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .map_or(LanguageCode::Other, LanguageCode::from_code),
        _ => LanguageCode::Other,
    }
}

/// One request or response of the remoting protocol.
#[derive(Clone, PartialEq, Eq)]
pub struct RemotingCommand {
    /// Request code (what to do) or response code (how it went).
    pub code: i32,
    /// Sender's implementation language.
    pub language: LanguageCode,
    /// Sender's version (`MQVersion` ordinal); brokers use it to pick compatible behaviour.
    pub version: i32,
    /// Request id, echoed by the response.
    pub opaque: i32,
    /// Bit 0 response, bit 1 oneway.
    pub flag: i32,
    /// Human-readable explanation, mostly on error responses.
    pub remark: Option<String>,
    /// Typed header fields as strings.
    pub ext_fields: ExtFields,
    /// Payload: message bytes, or a JSON body.
    pub body: Option<Bytes>,
    /// How the header is (or will be) serialized.
    pub serialize_type: SerializeType,
}

impl Default for RemotingCommand {
    fn default() -> Self {
        Self {
            code: 0,
            language: LanguageCode::Java,
            version: 0,
            opaque: 0,
            flag: 0,
            remark: None,
            ext_fields: ExtFields::new(),
            body: None,
            serialize_type: SerializeType::Json,
        }
    }
}

impl fmt::Debug for RemotingCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The body can be megabytes; show its length only.
        f.debug_struct("RemotingCommand")
            .field("code", &self.code)
            .field("language", &self.language)
            .field("version", &self.version)
            .field("opaque", &self.opaque)
            .field("flag", &format_args!("{:#b}", self.flag))
            .field("remark", &self.remark)
            .field("ext_fields", &self.ext_fields)
            .field("body_len", &self.body.as_ref().map(Bytes::len))
            .field("serialize_type", &self.serialize_type)
            .finish()
    }
}

impl RemotingCommand {
    /// A request with these header fields. `opaque` is 0: the transport assigns the request
    /// id when it sends, since only it knows which ids are in flight.
    #[must_use]
    pub fn new_request(code: i32, ext_fields: ExtFields) -> Self {
        Self {
            code,
            ext_fields,
            ..Self::default()
        }
    }

    /// A request whose header fields come from a typed header.
    #[must_use]
    pub fn request_with_header<H: CommandHeader>(code: i32, header: &H) -> Self {
        Self::new_request(code, header.to_ext_fields())
    }

    /// A response not tied to a request yet (the caller sets `opaque` and serialize type, or
    /// uses [`RemotingCommand::response_to`]).
    #[must_use]
    pub fn new_response(code: i32, remark: Option<String>) -> Self {
        Self {
            code,
            remark,
            flag: FLAG_RESPONSE,
            ..Self::default()
        }
    }

    /// The response to `request`: same opaque and serialize type, response flag set.
    #[must_use]
    pub fn response_to(request: &Self, code: i32, remark: Option<String>) -> Self {
        Self {
            opaque: request.opaque,
            serialize_type: request.serialize_type,
            ..Self::new_response(code, remark)
        }
    }

    /// Whether flag bit 0 (response) is set.
    #[must_use]
    pub const fn is_response(&self) -> bool {
        self.flag & FLAG_RESPONSE != 0
    }

    /// Whether flag bit 1 (oneway: no response expected) is set.
    #[must_use]
    pub const fn is_oneway(&self) -> bool {
        self.flag & FLAG_ONEWAY != 0
    }

    /// Set flag bit 1: the peer must not answer.
    pub fn mark_oneway(&mut self) {
        self.flag |= FLAG_ONEWAY;
    }

    /// Set flag bit 0: this command answers a request.
    pub fn mark_response(&mut self) {
        self.flag |= FLAG_RESPONSE;
    }

    /// Read the typed header out of the ext fields.
    ///
    /// # Errors
    /// A required field is missing or a field does not parse as its Java type.
    pub fn decode_header<H: CommandHeader>(&self) -> Result<H> {
        H::from_ext_fields(&self.ext_fields)
    }

    /// Write a typed header into the ext fields (fields already present are overwritten).
    pub fn write_header<H: CommandHeader>(&mut self, header: &H) {
        let fields = header.to_ext_fields();
        if self.ext_fields.is_empty() {
            self.ext_fields = fields;
        } else {
            self.ext_fields.extend(fields.iter());
        }
    }

    /// Builder form of [`RemotingCommand::write_header`].
    #[must_use]
    pub fn with_header<H: CommandHeader>(mut self, header: &H) -> Self {
        self.write_header(header);
        self
    }

    /// Builder: set the body.
    #[must_use]
    pub fn with_body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = Some(body.into());
        self
    }

    /// Builder: set the opaque.
    #[must_use]
    pub const fn with_opaque(mut self, opaque: i32) -> Self {
        self.opaque = opaque;
        self
    }

    /// Builder: set the header serialization.
    #[must_use]
    pub const fn with_serialize_type(mut self, serialize_type: SerializeType) -> Self {
        self.serialize_type = serialize_type;
        self
    }

    /// Builder: set the version.
    #[must_use]
    pub const fn with_version(mut self, version: i32) -> Self {
        self.version = version;
        self
    }

    /// Builder: set the language.
    #[must_use]
    pub const fn with_language(mut self, language: LanguageCode) -> Self {
        self.language = language;
        self
    }

    /// Length of the body in bytes (0 when there is none).
    #[must_use]
    pub fn body_len(&self) -> usize {
        self.body.as_ref().map_or(0, Bytes::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn language_codes_match_java() {
        // LanguageCode.java: JAVA 0 … RUST 12, no gaps.
        for (i, l) in LanguageCode::ALL.iter().enumerate() {
            assert_eq!(usize::from(l.code()), i);
            assert_eq!(LanguageCode::from_code(l.code()), *l);
            assert_eq!(LanguageCode::from_name(l.name()), *l);
        }
        assert_eq!(LanguageCode::Rust.code(), 12);
        assert_eq!(LanguageCode::from_code(200), LanguageCode::Other);
        assert_eq!(LanguageCode::from_name("COBOL"), LanguageCode::Other);
    }

    #[test]
    fn language_serde_is_by_name_and_lenient() {
        assert_eq!(serde_json::to_string(&LanguageCode::Go).unwrap(), "\"GO\"");
        let l: LanguageCode = serde_json::from_str("\"PYTHON\"").unwrap();
        assert_eq!(l, LanguageCode::Python);
        let l: LanguageCode = serde_json::from_str("9").unwrap();
        assert_eq!(l, LanguageCode::Go);
        let l: LanguageCode = serde_json::from_str("\"NEW\"").unwrap();
        assert_eq!(l, LanguageCode::Other);
    }

    #[test]
    fn flags_and_response_helpers() {
        let mut req = RemotingCommand::new_request(10, ExtFields::new())
            .with_opaque(77)
            .with_serialize_type(SerializeType::RocketMq);
        assert!(!req.is_response() && !req.is_oneway());
        req.mark_oneway();
        assert!(req.is_oneway());
        assert_eq!(req.flag, 2);
        let resp = RemotingCommand::response_to(&req, 0, Some("ok".into()));
        assert!(resp.is_response() && !resp.is_oneway());
        assert_eq!(resp.opaque, 77);
        assert_eq!(resp.serialize_type, SerializeType::RocketMq);
        assert_eq!(resp.flag, 1);
    }
}
