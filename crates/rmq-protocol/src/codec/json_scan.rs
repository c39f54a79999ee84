//! A JSON header in the shape every RocketMQ client writes, read in one pass without serde:
//! an object of the command's fields (`code`, `language`, `version`, `opaque`, `flag`,
//! `remark`, `serializeTypeCurrentRPC`) whose `extFields` is an object of strings, strings
//! escaped as JSON allows (fastjson writes the property separators as `\u0001`, `\u0002`).
//!
//! Written here rather than left to serde_json: its visitor calls and the building of each
//! key and value through them were 15 % of the broker's CPU under sync sends from 128
//! threads; read in one pass, the broker's CPU per message fell 11 % (benches/RESULTS.md,
//! issue 18, eighteenth round). Anything else (numbers given as strings, other
//! value types, nulls, unknown or repeated fields, a lone surrogate, trailing bytes) makes
//! [`read`] answer `None`, and the caller reads the header with serde_json as before; the
//! tests hold the two to the same answer wherever this one gives one.

use std::borrow::Cow;

use crate::command::{ExtFields, RemotingCommand};

/// The command in `text`, or `None` when it is not in the common shape.
pub(super) fn read(text: &str) -> Option<RemotingCommand> {
    let mut s = Scan { text, pos: 0 };
    let mut h = super::json::JsonHeader::default();
    let mut serialize_type_seen = false;
    s.eat(b'{')?;
    loop {
        let key = s.string()?;
        s.eat(b':')?;
        // A field read twice is left to serde_json (which refuses it); `replace` says so.
        let first = match &*key {
            "code" => h.code.replace(s.int()?).is_none(),
            "language" => h.language.replace(s.string()?.into_owned()).is_none(),
            "version" => h.version.replace(s.int()?).is_none(),
            "opaque" => h.opaque.replace(s.int()?).is_none(),
            "flag" => h.flag.replace(s.int()?).is_none(),
            "remark" => h.remark.replace(s.string()?.into_owned()).is_none(),
            "extFields" => h.ext_fields.replace(s.ext_fields()?).is_none(),
            "serializeTypeCurrentRPC" => {
                s.string()?;
                !std::mem::replace(&mut serialize_type_seen, true)
            }
            _ => return None,
        };
        if !first {
            return None;
        }
        match s.next()? {
            b',' => {}
            b'}' => break,
            _ => return None,
        }
    }
    s.skip_space();
    (s.pos == text.len()).then_some(())?;
    h.into_command()
}

struct Scan<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scan<'a> {
    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while matches!(
            self.bytes().get(self.pos),
            Some(b' ' | b'\t' | b'\n' | b'\r')
        ) {
            self.pos += 1;
        }
    }

    /// The next byte that is not white space, taken.
    fn next(&mut self) -> Option<u8> {
        self.skip_space();
        let b = *self.bytes().get(self.pos)?;
        self.pos += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// An integer as JSON writes one (no leading zeros, no fraction), that fits in an `i32`.
    fn int(&mut self) -> Option<i32> {
        self.skip_space();
        let b = self.bytes();
        let negative = b.get(self.pos) == Some(&b'-');
        let start = self.pos + usize::from(negative);
        let digits = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
        let end = start + digits;
        if digits == 0 || digits > 10 || (b[start] == b'0' && digits > 1) {
            return None;
        }
        if matches!(b.get(end), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        let magnitude = b[start..end]
            .iter()
            .fold(0i64, |n, c| n * 10 + i64::from(c - b'0'));
        if negative && magnitude == 0 {
            return None;
        }
        self.pos = end;
        i32::try_from(if negative { -magnitude } else { magnitude }).ok()
    }

    /// A string, borrowed from the text unless it has escapes.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let b = self.bytes();
        let start = self.pos;
        let plain_end = plain_run_end(b, start);
        if b.get(plain_end) == Some(&b'"') {
            self.pos = plain_end + 1;
            // The text is UTF-8 and `"` is ASCII: both ends are char boundaries.
            return Some(Cow::Borrowed(&self.text[start..plain_end]));
        }
        let mut out = String::with_capacity(2 * (plain_end - start) + 16);
        self.string_rest_into(&mut out)?;
        Some(Cow::Owned(out))
    }

    /// A string, its characters appended to `out`.
    fn string_into(&mut self, out: &mut String) -> Option<()> {
        self.eat(b'"')?;
        self.string_rest_into(out)
    }

    /// The rest of a string whose opening quote is taken, appended to `out`.
    fn string_rest_into(&mut self, out: &mut String) -> Option<()> {
        let b = self.bytes();
        loop {
            let end = plain_run_end(b, self.pos);
            out.push_str(&self.text[self.pos..end]);
            self.pos = end + 1;
            match *b.get(end)? {
                b'"' => return Some(()),
                b'\\' => out.push(self.escape()?),
                _ => return None, // a control character
            }
        }
    }

    /// The character of the escape after a `\`.
    fn escape(&mut self) -> Option<char> {
        let e = *self.bytes().get(self.pos)?;
        self.pos += 1;
        Some(match e {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                match unit {
                    0xD800..=0xDBFF => {
                        // A high surrogate: only with its low one is it a character.
                        let b = self.bytes();
                        (b.get(self.pos) == Some(&b'\\') && b.get(self.pos + 1) == Some(&b'u'))
                            .then_some(())?;
                        self.pos += 2;
                        let low = self.hex4()?;
                        (0xDC00..=0xDFFF).contains(&low).then_some(())?;
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))?
                    }
                    _ => char::from_u32(unit)?,
                }
            }
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes().get(self.pos..self.pos + 4)?;
        let mut unit = 0;
        for &d in digits {
            unit = unit * 16 + char::from(d).to_digit(16)?;
        }
        self.pos += 4;
        Some(unit)
    }

    /// An object of strings, each written once into the fields' text.
    fn ext_fields(&mut self) -> Option<ExtFields> {
        // The unescaped text is never longer than what is left of the header.
        let mut fields = ExtFields::with_capacity(16, self.text.len() - self.pos);
        self.eat(b'{')?;
        self.skip_space();
        if self.bytes().get(self.pos) == Some(&b'}') {
            self.pos += 1;
            return Some(fields);
        }
        loop {
            let start = fields.text_mut().len();
            self.string_into(fields.text_mut())?;
            let key_end = fields.text_mut().len();
            self.eat(b':')?;
            self.string_into(fields.text_mut())?;
            // A key given twice: the last one holds, as serde_json reads it.
            fields.place(start, key_end);
            match self.next()? {
                b',' => {}
                b'}' => return Some(fields),
                _ => return None,
            }
        }
    }
}

/// Where the run of string bytes from `at` ends: the first `"`, `\\` or control character
/// (or the end of `b`). Eight bytes a step: serde_json reads strings the same way.
fn plain_run_end(b: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = b.get(at..at + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where it is 0 (or below 0x20); borrows only ever mark
        // bytes above the first such byte, and the lowest mark is all that is read.
        let marks = (quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w);
        let marks = marks & HIGH;
        if marks != 0 {
            return at + (marks.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + b[at..]
        .iter()
        .take_while(|&&c| c != b'"' && c != b'\\' && c >= 0x20)
        .count()
}

#[cfg(test)]
mod tests {
    use bytes::BytesMut;
    use proptest::collection::{btree_map, vec};
    use proptest::prelude::*;

    use super::read;
    use crate::codec::json::{encode_header, JsonHeader};
    use crate::command::{ExtFields, LanguageCode, RemotingCommand};

    /// What serde_json makes of `text`, the reading this one must agree with.
    fn by_serde(text: &str) -> Option<RemotingCommand> {
        serde_json::from_str::<JsonHeader>(text)
            .ok()
            .and_then(JsonHeader::into_command)
    }

    const JAVA: &str = r#"{"code":310,"extFields":{"a":"pg","b":"T","d":"4","e":"1","i":"KEYS\u0001k1\u0002TAGS\u0001A\u0002","k":"false"},"flag":0,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":409}"#;

    #[test]
    fn reads_what_clients_write_as_serde_json_does() {
        let c = read(JAVA).expect("the Java client's shape");
        assert_eq!(Some(&c), by_serde(JAVA).as_ref());
        assert_eq!((c.code, c.opaque, c.version), (310, 9, 409));
        assert_eq!(c.language, LanguageCode::Java);
        assert_eq!(
            c.ext_fields.get("i"),
            Some("KEYS\u{1}k1\u{2}TAGS\u{1}A\u{2}")
        );
        // Go's field order, white space, an escaped quote and a surrogate pair.
        let go = "{ \"code\" : 11, \"language\" : \"GO\", \"version\" : 317, \"opaque\" : -5,\n\
                  \"flag\" : 1, \"remark\" : \"say \\\"hi\\\" \\ud83d\\ude00\", \"extFields\" : {} }";
        let c = read(go).expect("another client's shape");
        assert_eq!(Some(&c), by_serde(go).as_ref());
        assert_eq!(c.remark.as_deref(), Some("say \"hi\" \u{1F600}"));
        assert_eq!((c.opaque, c.language), (-5, LanguageCode::Go));
    }

    #[test]
    fn leaves_every_other_shape_to_serde_json() {
        for text in [
            r#"{"code":"310"}"#,
            r#"{"code":310,"extFields":{"queueId":3}}"#,
            r#"{"code":310,"extFields":{"n":null}}"#,
            r#"{"code":310,"remark":null}"#,
            r#"{"code":310,"unknown":1}"#,
            r#"{"code":310,"code":311}"#,
            r#"{"opaque":1}"#,
            r#"{"code":01}"#,
            r#"{"code":-0}"#,
            r#"{"code":1.5}"#,
            r#"{"code":1e3}"#,
            r#"{"code":2147483648}"#,
            r#"{"code":12345678901}"#,
            r#"{"code":1,"remark":"\ud800"}"#,
            r#"{"code":1,"remark":"\udc00x"}"#,
            r#"{"code":1,"remark":"\x"}"#,
            "{\"code\":1,\"remark\":\"a\u{1}b\"}",
            r#"{"code":1} x"#,
            r#"{"code":1,}"#,
            r#"{"code":1"#,
            "{}",
            "",
        ] {
            assert_eq!(read(text), None, "{text}");
        }
    }

    fn any_string() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~\u{1}\u{2}\n\t\"\\\\/]{0,40}",
            any::<String>().prop_map(|s| s.chars().take(40).collect()),
        ]
    }

    fn any_command() -> impl Strategy<Value = RemotingCommand> {
        (
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            any::<i32>(),
            prop::sample::select(vec!["JAVA", "CPP", "GO", "PYTHON", "RUST", "SOMETHING_NEW"]),
            proptest::option::of(any_string()),
            btree_map(any_string(), any_string(), 0..16),
        )
            .prop_map(|(code, opaque, flag, version, lang, remark, ext)| {
                let mut cmd = RemotingCommand::new_request(code, ext.into_iter().collect());
                cmd.opaque = opaque;
                cmd.flag = flag;
                cmd.version = version;
                cmd.language = LanguageCode::from_name(lang);
                cmd.remark = remark;
                cmd
            })
    }

    proptest! {
        #[test]
        fn reads_every_header_this_codec_or_serde_json_writes(cmd in any_command()) {
            let mut ours = BytesMut::new();
            encode_header(&cmd, &mut ours);
            let ours = std::str::from_utf8(&ours).unwrap();
            prop_assert_eq!(read(ours), Some(cmd.clone()));
            let theirs = serde_json::json!({
                "code": cmd.code, "opaque": cmd.opaque, "flag": cmd.flag,
                "version": cmd.version, "language": cmd.language.name(),
                "extFields": cmd.ext_fields.iter().collect::<std::collections::BTreeMap<_, _>>(),
                "remark": cmd.remark,
            });
            let theirs = if cmd.remark.is_some() {
                serde_json::to_string_pretty(&theirs).unwrap()
            } else {
                // serde_json writes the absent remark as null, which this reading leaves to it.
                let text = serde_json::to_string(&theirs).unwrap();
                prop_assert_eq!(read(&text), None);
                text.replace(",\"remark\":null", "").replace("\"remark\":null,", "")
            };
            prop_assert_eq!(read(&theirs), Some(cmd));
        }

        #[test]
        fn agrees_with_serde_json_wherever_it_answers(
            cmd in any_command(),
            edits in vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..4),
        ) {
            let mut bytes = BytesMut::new();
            encode_header(&cmd, &mut bytes);
            let mut bytes = bytes.to_vec();
            for (at, byte, op) in edits {
                let i = at.index(bytes.len() + 1);
                match op {
                    0 => bytes.insert(i, byte),
                    1 if i < bytes.len() => { bytes.remove(i); }
                    _ if i < bytes.len() => bytes[i] = byte,
                    _ => {}
                }
            }
            if let Ok(text) = std::str::from_utf8(&bytes) {
                if let Some(c) = read(text) {
                    prop_assert_eq!(Some(c), by_serde(text), "{}", text);
                }
            }
        }
    }

    #[test]
    fn ext_fields_keep_the_last_of_a_repeated_key_as_serde_json_does() {
        let text = r#"{"code":1,"extFields":{"k":"a","k":"b"}}"#;
        let c = read(text).unwrap();
        assert_eq!(c.ext_fields, ExtFields::from_iter([("k", "b")]));
        assert_eq!(Some(c), by_serde(text));
    }
}
