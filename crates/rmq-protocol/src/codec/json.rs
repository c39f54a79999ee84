//! JSON headers (serialize type 0), as Java's fastjson writes them: the bean's properties in
//! alphabetical order, null properties left out, enums by name:
//!
//! ```text
//! {"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":3,
//!  "remark":"…","serializeTypeCurrentRPC":"JSON","version":409}
//! ```
//!
//! Reading is lenient the way fastjson is: any field order, unknown fields ignored, missing
//! optional fields defaulted, numbers given as strings, ext-field values given as numbers or
//! booleans, and fastjson's own non-standard output (see [`crate::json_compat`]).

use std::fmt::Write as _;

use bytes::{BufMut, BytesMut};
use serde_json::{Map, Value};

use crate::command::{language_from_json, ExtFields, LanguageCode, RemotingCommand};
use crate::error::{ProtocolError, Result};
use crate::json_compat;

use super::json_scan;

pub(super) fn encode_header(cmd: &RemotingCommand, dst: &mut BytesMut) {
    // Numbers through itoa and fixed text as slices: `write!` and its formatting machinery
    // were most of encoding a send's reply.
    let mut num = itoa::Buffer::new();
    dst.reserve(160 + 32 * cmd.ext_fields.len());
    dst.put_slice(b"{\"code\":");
    dst.put_slice(num.format(cmd.code).as_bytes());
    if !cmd.ext_fields.is_empty() {
        dst.put_slice(b",\"extFields\":{");
        for (i, (k, v)) in cmd.ext_fields.iter().enumerate() {
            if i > 0 {
                dst.put_u8(b',');
            }
            push_json_str(dst, k);
            dst.put_u8(b':');
            push_json_str(dst, v);
        }
        dst.put_u8(b'}');
    }
    dst.put_slice(b",\"flag\":");
    dst.put_slice(num.format(cmd.flag).as_bytes());
    dst.put_slice(b",\"language\":\"");
    dst.put_slice(cmd.language.name().as_bytes());
    dst.put_slice(b"\",\"opaque\":");
    dst.put_slice(num.format(cmd.opaque).as_bytes());
    if let Some(remark) = &cmd.remark {
        dst.put_slice(b",\"remark\":");
        push_json_str(dst, remark);
    }
    dst.put_slice(b",\"serializeTypeCurrentRPC\":\"JSON\",\"version\":");
    dst.put_slice(num.format(cmd.version).as_bytes());
    dst.put_u8(b'}');
}

/// Quote a string the way fastjson does: `"` and `\` escaped, control characters as the
/// short escapes or `\u00XX`, everything else (including `/` and non-ASCII) verbatim.
fn push_json_str(dst: &mut BytesMut, v: &str) {
    dst.put_u8(b'"');
    // Most values (ids, offsets, topic names) need no escaping: copy them whole. The check
    // runs over 64-byte chunks without an early exit inside one, so it compiles to vector
    // compares: a batch's response carries 33 bytes of message id per message.
    let needs_escape = |chunk: &[u8]| {
        chunk.iter().fold(0u8, |acc, &b| {
            acc | u8::from(b < 0x20) | u8::from(b == b'"') | u8::from(b == b'\\')
        }) != 0
    };
    if !v.as_bytes().chunks(64).any(needs_escape) {
        dst.put_slice(v.as_bytes());
        dst.put_u8(b'"');
        return;
    }
    let mut utf8 = [0u8; 4];
    for c in v.chars() {
        match c {
            '"' => dst.put_slice(b"\\\""),
            '\\' => dst.put_slice(b"\\\\"),
            '\n' => dst.put_slice(b"\\n"),
            '\r' => dst.put_slice(b"\\r"),
            '\t' => dst.put_slice(b"\\t"),
            '\u{8}' => dst.put_slice(b"\\b"),
            '\u{c}' => dst.put_slice(b"\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(dst, "\\u{:04X}", c as u32);
            }
            c => dst.put_slice(c.encode_utf8(&mut utf8).as_bytes()),
        }
    }
    dst.put_u8(b'"');
}

/// A header's fields as they are written, before defaults.
#[derive(Default, serde::Deserialize)]
pub(super) struct JsonHeader {
    #[serde(default)]
    pub(super) code: Option<i32>,
    #[serde(default)]
    pub(super) language: Option<String>,
    #[serde(default)]
    pub(super) version: Option<i32>,
    #[serde(default)]
    pub(super) opaque: Option<i32>,
    #[serde(default)]
    pub(super) flag: Option<i32>,
    #[serde(default)]
    pub(super) remark: Option<String>,
    #[serde(default, rename = "extFields")]
    pub(super) ext_fields: Option<ExtFields>,
}

impl JsonHeader {
    /// The command, with Java's defaults for what is absent; `None` without a `code`.
    pub(super) fn into_command(self) -> Option<RemotingCommand> {
        Some(RemotingCommand {
            code: self.code?,
            language: self
                .language
                .as_deref()
                .map_or(LanguageCode::Java, LanguageCode::from_name),
            version: self.version.unwrap_or(0),
            opaque: self.opaque.unwrap_or(0),
            flag: self.flag.unwrap_or(0),
            remark: self.remark,
            ext_fields: self.ext_fields.unwrap_or_default(),
            body: None,
            serialize_type: crate::command::SerializeType::Json,
        })
    }
}

/// Three readings, each for what the one before does not take: the shape clients write, by
/// [`json_scan::read`]; the same fields with nulls or unknown fields, straight into
/// [`JsonHeader`] by serde_json (no `Value` tree, no compatibility pass); anything else (numbers
/// as strings, non-string ext values, fastjson's bare keys) by [`decode_lenient`].
pub(super) fn decode_header(bytes: &[u8]) -> Result<RemotingCommand> {
    // One UTF-8 check of the whole header, then parses that trust it: parsing the bytes
    // (`from_slice`) checks every string again, escaped ones twice.
    let Ok(text) = std::str::from_utf8(bytes) else {
        return decode_lenient(bytes);
    };
    if let Some(cmd) = json_scan::read(text) {
        return Ok(cmd);
    }
    match serde_json::from_str::<JsonHeader>(text).map(JsonHeader::into_command) {
        Ok(Some(cmd)) => Ok(cmd),
        _ => decode_lenient(bytes),
    }
}

fn decode_lenient(bytes: &[u8]) -> Result<RemotingCommand> {
    let bad = |reason: String| ProtocolError::BadJsonHeader { reason };
    // Java decodes with `new String(bytes, UTF_8)`, which replaces bad sequences.
    let text = String::from_utf8_lossy(bytes);
    let value: Value =
        serde_json::from_str(&json_compat::normalize(&text)).map_err(|e| bad(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(bad("header is not a JSON object".into()));
    };
    let code = int_field(&obj, "code")?.ok_or_else(|| bad("missing field `code`".into()))?;
    let language = match obj.get("language") {
        None | Some(Value::Null) => LanguageCode::Java,
        Some(v) => language_from_json(v),
    };
    let remark = match obj.get("remark") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => Some(other.to_string()),
    };
    let mut ext_fields = ExtFields::new();
    match obj.get("extFields") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                let v = match v {
                    Value::Null => continue,
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                ext_fields.insert(k.clone(), v);
            }
        }
        Some(_) => return Err(bad("`extFields` is not an object".into())),
    }
    Ok(RemotingCommand {
        code,
        language,
        version: int_field(&obj, "version")?.unwrap_or(0),
        opaque: int_field(&obj, "opaque")?.unwrap_or(0),
        flag: int_field(&obj, "flag")?.unwrap_or(0),
        remark,
        ext_fields,
        body: None,
        serialize_type: crate::command::SerializeType::Json,
    })
}

/// An `int` property: a JSON integer or a string holding one; null or absent is `None`.
fn int_field(obj: &Map<String, Value>, name: &str) -> Result<Option<i32>> {
    let bad = |v: &Value| ProtocolError::BadJsonHeader {
        reason: format!("field `{name}` is not a 32-bit integer: {v}"),
    };
    match obj.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::Number(n)) => n
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| bad(v)),
        Some(v @ Value::String(s)) => s.trim().parse::<i32>().map(Some).map_err(|_| bad(v)),
        Some(v) => Err(bad(v)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Result<RemotingCommand> {
        decode_header(s.as_bytes())
    }

    #[test]
    fn strings_are_copied_whole_or_escaped() {
        let quoted = |v: &str| {
            let mut s = BytesMut::new();
            push_json_str(&mut s, v);
            String::from_utf8(s.to_vec()).unwrap()
        };
        assert_eq!(quoted("0A01,FF é/x"), "\"0A01,FF é/x\"");
        assert_eq!(quoted("a\"b\\c\nd\u{1}"), "\"a\\\"b\\\\c\\nd\\u0001\"");
        // Checked a chunk of 64 bytes at a time: an escape in the second chunk is found.
        let long = format!("{}\"", "0".repeat(70));
        assert_eq!(quoted(&long), format!("\"{}\\\"\"", "0".repeat(70)));
    }

    #[test]
    fn writes_fastjson_field_order() {
        let mut cmd = RemotingCommand::new_request(105, ExtFields::new()).with_opaque(3);
        cmd.ext_fields.insert("topic", "T\u{1}\"x\"");
        cmd.remark = Some("a/b é".into());
        let mut b = BytesMut::new();
        encode_header(&cmd, &mut b);
        assert_eq!(
            std::str::from_utf8(&b).unwrap(),
            "{\"code\":105,\"extFields\":{\"topic\":\"T\\u0001\\\"x\\\"\"},\"flag\":0,\
             \"language\":\"JAVA\",\"opaque\":3,\"remark\":\"a/b é\",\
             \"serializeTypeCurrentRPC\":\"JSON\",\"version\":0}"
        );
        assert_eq!(decode_header(&b).unwrap(), cmd);
    }

    #[test]
    fn lenient_reading() {
        let c = dec(
            r#"{"version":"12","opaque":7,"code":"34","extra":[1,{"x":2}],
            "extFields":{"queueId":3,"unitMode":false,"n":null,"s":"v"},"language":9}"#,
        )
        .unwrap();
        assert_eq!((c.code, c.version, c.opaque, c.flag), (34, 12, 7, 0));
        assert_eq!(c.language, LanguageCode::Go);
        assert_eq!(c.ext_fields.get("queueId"), Some("3"));
        assert_eq!(c.ext_fields.get("unitMode"), Some("false"));
        assert!(!c.ext_fields.contains_key("n"));
        assert_eq!(c.remark, None);
        let c = dec(r#"{"code":0,"language":"SOMETHING_NEW","remark":null}"#).unwrap();
        assert_eq!(c.language, LanguageCode::Other);
    }

    #[test]
    fn bad_utf8_is_replaced_as_java_does() {
        let mut bytes = br#"{"code":10,"remark":"a?b","extFields":{"topic":"T?"}}"#.to_vec();
        for b in &mut bytes {
            if *b == b'?' {
                *b = 0xFF;
            }
        }
        let c = decode_header(&bytes).unwrap();
        assert_eq!(c.code, 10);
        assert_eq!(c.remark.as_deref(), Some("a\u{FFFD}b"));
        assert_eq!(c.ext_fields.get("topic"), Some("T\u{FFFD}"));
    }

    #[test]
    fn typed_errors() {
        for s in [
            "",
            "[]",
            "{\"opaque\":1}",
            "{\"code\":1.5}",
            "{\"code\":4294967296}",
            "{\"code\":\"x\"}",
            "{\"code\":1,\"extFields\":3}",
            "{\"code\":1",
        ] {
            assert!(
                matches!(dec(s), Err(ProtocolError::BadJsonHeader { .. })),
                "{s}"
            );
        }
    }
}

#[cfg(test)]
mod fast_path_tests {
    use super::decode_header;
    use crate::command::LanguageCode;

    #[test]
    fn typical_and_unusual_headers_decode_the_same_way() {
        // What the Java client sends: the typed fast path.
        let java = br#"{"code":310,"extFields":{"a":"g","b":"T"},"flag":0,"language":"JAVA","opaque":7,"serializeTypeCurrentRPC":"JSON","version":409}"#;
        let c = decode_header(java).unwrap();
        assert_eq!(
            (c.code, c.opaque, c.version, c.language),
            (310, 7, 409, LanguageCode::Java)
        );
        assert_eq!(c.ext_fields.get("b"), Some("T"));
        // Numbers as strings, a numeric ext value, a null and fastjson's bare key: the lenient
        // path, same result shape.
        let odd = br#"{"code":"310","extFields":{"a":"g","n":5,"z":null},"opaque":"7",flag:0}"#;
        let c = decode_header(odd).unwrap();
        assert_eq!((c.code, c.opaque, c.flag), (310, 7, 0));
        assert_eq!(c.ext_fields.get("n"), Some("5"));
        assert!(!c.ext_fields.contains_key("z"));
        assert!(
            decode_header(br#"{"opaque":1}"#).is_err(),
            "code is required on both paths"
        );
    }
}
