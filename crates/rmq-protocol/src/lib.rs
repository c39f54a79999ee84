//! The RocketMQ 4.x remoting protocol, byte for byte: frames, both header serializations,
//! request and response codes, typed headers, JSON bodies and the message layouts found in
//! bodies. Pure: no sockets, no runtime, no store; the transport and the broker build on it.
//!
//! # Frame layout
//!
//! ```text
//! +-------------+---------+--------------------+------------------+-------------------+
//! | length      | ser.    | header length      | header           | body              |
//! | i32 BE (4)  | type (1)| u24 BE (3)         | header length B  | rest of the frame |
//! +-------------+---------+--------------------+------------------+-------------------+
//!  length = 4 + header length + body length  (everything after the length field)
//!  length + 4 <= 16 MiB;  serialize type 0 = JSON (fastjson text), 1 = ROCKETMQ (binary)
//!
//! JSON header:     {"code":…,"extFields":{…},"flag":…,"language":"JAVA","opaque":…,
//!                   "remark":…,"serializeTypeCurrentRPC":"JSON","version":…}
//! ROCKETMQ header: code i16 | language u8 | version i16 | opaque i32 | flag i32
//!                  | remark i32 len + UTF-8 | extFields i32 len + (i16 klen k, i32 vlen v)*
//! flag: bit 0 = response, bit 1 = oneway; opaque pairs a response with its request.
//! ```
//!
//! # Modules
//!
//! | module | holds |
//! |---|---|
//! | [`acl`] | ACL 1.0 request signatures ([`acl::sign_request`], [`acl::signature_matches`]) |
//! | [`command`] | [`RemotingCommand`], [`LanguageCode`], [`SerializeType`] |
//! | [`codec`] | [`decode`], [`encode`], [`encode_header_for_body`]: frames ↔ commands |
//! | [`code`] | [`RequestCode`], [`ResponseCode`] with RocketMQ's numbers |
//! | [`header`] | typed headers ↔ `extFields` ([`CommandHeader`]) |
//! | [`body`] | JSON bodies (TopicRouteData, HeartbeatData, …) ([`RemotingJson`]) |
//! | [`json_compat`] | fastjson's non-standard JSON → standard JSON, and its type coercions (`lenient`) |
//! | [`message_decoder`] | CommitLog records in pull/query/view bodies; batch bodies |
//! | [`version`] | `MQVersion` ordinals peers switch behaviour on |
//! | [`error`] | [`ProtocolError`] |
#![forbid(unsafe_code)]

pub mod acl;
pub mod body;
pub mod code;
pub mod codec;
pub mod command;
pub mod error;
pub mod ext_fields;
pub mod header;
pub mod json_compat;
mod lenient;
pub mod message_decoder;
pub mod version;

pub use body::RemotingJson;
pub use code::{RequestCode, ResponseCode};
pub use codec::{decode, encode, encode_header_for_body, MAX_FRAME_BYTES};
pub use command::{LanguageCode, RemotingCommand, SerializeType};
pub use error::{ProtocolError, Result};
pub use ext_fields::ExtFields;
pub use header::CommandHeader;
