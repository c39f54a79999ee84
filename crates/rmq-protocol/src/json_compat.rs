//! Turn fastjson's output into standard JSON before parsing it.
//!
//! Java RocketMQ serializes with fastjson, which writes the keys of non-string maps without
//! quotes: a `HashMap<Long, String>` becomes `{0:"127.0.0.1:10911"}` (BrokerData's
//! `brokerAddrs` from nameservers older than 4.9.4, `consumerOffset.json`), and a map keyed
//! by an object becomes `{{"brokerName":"b","queueId":0,"topic":"t"}:{…}}` (ConsumeStats,
//! TopicStatsTable). fastjson also reads single-quoted strings. Every place that parses
//! Java-produced JSON (headers and bodies) goes through [`normalize`] first:
//!
//! * bare keys (`0`, `-1`, `abc`) are quoted: `"0"`;
//! * object or array keys become a string holding their (normalized) JSON text, which
//!   [`crate::body::MessageQueueMap`] parses back;
//! * single-quoted strings become double-quoted.
//!
//! Standard JSON passes through unchanged and without copying. Text that is not JSON in any
//! dialect is returned as it came, so that `serde_json` reports the real error.
//! [`to_standard_json`] is the checked form: the one fastjson reader of the project, which the
//! Python side (the admin tool, the nameserver's registrations) uses through `rmq._rmq`.

use std::borrow::Cow;

/// Deepest nesting accepted; deeper input is left for `serde_json` to reject (it stops at
/// 128), so hostile input cannot exhaust the stack here.
const MAX_DEPTH: usize = 128;

/// Rewrite fastjson text as standard JSON. Borrowed when nothing needed rewriting.
#[must_use]
pub fn normalize(text: &str) -> Cow<'_, str> {
    let mut p = Rewriter {
        s: text,
        b: text.as_bytes(),
        pos: 0,
        changed: false,
        depth_exceeded: false,
    };
    let mut out = String::with_capacity(text.len() + 16);
    if p.value(&mut out, 0).is_none() {
        return Cow::Borrowed(text);
    }
    p.skip_ws();
    if p.pos != p.b.len() || !p.changed {
        return Cow::Borrowed(text);
    }
    Cow::Owned(out)
}

/// Rewrite fastjson text as standard JSON, or say why it is neither: where the reader
/// stopped (byte offset and the text there), or `serde_json`'s complaint about the rewritten
/// text, or that it nests deeper than 128 levels.
///
/// # Errors
/// The text is not JSON in either dialect.
pub fn to_standard_json(text: &str) -> Result<Cow<'_, str>, String> {
    let mut p = Rewriter {
        s: text,
        b: text.as_bytes(),
        pos: 0,
        changed: false,
        depth_exceeded: false,
    };
    let mut out = String::with_capacity(text.len() + 16);
    let read = p.value(&mut out, 0);
    if p.pos > p.b.len() {
        p.pos = p.b.len(); // an escape at the very end stepped past it
    }
    let stop = |p: &Rewriter<'_>, what: &str| {
        let near: String = text.get(p.pos..).unwrap_or("").chars().take(20).collect();
        format!("{what} at byte {} (near {near:?})", p.pos)
    };
    if read.is_none() {
        if p.depth_exceeded {
            return Err(stop(&p, "JSON nested too deeply (more than 128 levels)"));
        }
        return Err(stop(
            &p,
            "not JSON, nor fastjson's dialect of it: the reader stopped",
        ));
    }
    p.skip_ws();
    if p.pos != p.b.len() {
        return Err(stop(&p, "extra data after the JSON value"));
    }
    let standard = if p.changed {
        Cow::Owned(out)
    } else {
        Cow::Borrowed(text)
    };
    serde_json::from_str::<serde::de::IgnoredAny>(&standard)
        .map_err(|e| format!("not JSON: {e}"))?;
    Ok(standard)
}

/// Parse Java-produced JSON bytes into `T` as fastjson would: its syntax quirks normalized
/// first, then its type coercions applied ([`crate::lenient`]).
///
/// # Errors
/// Invalid UTF-8, text that is not JSON even after normalization, or a value that is not
/// one of `T` even with coercion (the message names the field's path).
pub fn from_slice<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let value: serde_json::Value =
        serde_json::from_str(&normalize(text)).map_err(|e| e.to_string())?;
    crate::lenient::from_value(value)
}

struct Rewriter<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
    changed: bool,
    /// The reader gave up because of [`MAX_DEPTH`].
    depth_exceeded: bool,
}

impl<'a> Rewriter<'a> {
    fn skip_ws(&mut self) {
        while self.pos < self.b.len() && self.b[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn value(&mut self, out: &mut String, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            self.depth_exceeded = true;
            return None;
        }
        self.skip_ws();
        match self.peek()? {
            b'{' => self.object(out, depth + 1),
            b'[' => self.array(out, depth + 1),
            b'"' => self.dq_string(out),
            b'\'' => self.sq_string(out),
            _ => {
                let tok = self.bare_token()?;
                out.push_str(tok);
                Some(())
            }
        }
    }

    fn object(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.pos += 1; // '{'
        out.push('{');
        self.skip_ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            out.push('}');
            return Some(());
        }
        loop {
            self.skip_ws();
            self.key(out, depth)?;
            self.skip_ws();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            out.push(':');
            self.value(out, depth)?;
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    out.push(',');
                }
                b'}' => {
                    self.pos += 1;
                    out.push('}');
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn key(&mut self, out: &mut String, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.dq_string(out),
            b'\'' => self.sq_string(out),
            b'{' | b'[' => {
                // An object used as a map key: keep its text as a string key.
                let mut inner = String::new();
                self.value(&mut inner, depth)?;
                self.changed = true;
                out.push_str(&serde_json::to_string(&inner).ok()?);
                Some(())
            }
            _ => {
                let tok = self.bare_token()?;
                self.changed = true;
                out.push_str(&serde_json::to_string(tok).ok()?);
                Some(())
            }
        }
    }

    fn array(&mut self, out: &mut String, depth: usize) -> Option<()> {
        self.pos += 1; // '['
        out.push('[');
        self.skip_ws();
        if self.peek()? == b']' {
            self.pos += 1;
            out.push(']');
            return Some(());
        }
        loop {
            self.value(out, depth)?;
            self.skip_ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    out.push(',');
                }
                b']' => {
                    self.pos += 1;
                    out.push(']');
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// A standard string, copied verbatim (escapes included).
    fn dq_string(&mut self, out: &mut String) -> Option<()> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek()? {
                b'\\' => self.pos += 2,
                b'"' => {
                    self.pos += 1;
                    break;
                }
                _ => self.pos += 1,
            }
        }
        out.push_str(self.s.get(start..self.pos)?);
        Some(())
    }

    /// A single-quoted string, rewritten with double quotes.
    fn sq_string(&mut self, out: &mut String) -> Option<()> {
        self.pos += 1;
        let start = self.pos;
        let mut end = None;
        while self.pos < self.b.len() {
            match self.b[self.pos] {
                b'\\' => self.pos += 2,
                b'\'' => {
                    end = Some(self.pos);
                    self.pos += 1;
                    break;
                }
                _ => self.pos += 1,
            }
        }
        let inner = self.s.get(start..end?)?;
        self.changed = true;
        out.push('"');
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next()? {
                    '\'' => out.push('\''),
                    e => {
                        out.push('\\');
                        out.push(e);
                    }
                },
                '"' => out.push_str("\\\""),
                c => out.push(c),
            }
        }
        out.push('"');
        Some(())
    }

    /// A number, `true`/`false`/`null`, or a bare key: everything up to a delimiter.
    fn bare_token(&mut self) -> Option<&'a str> {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if matches!(c, b',' | b':' | b'}' | b']' | b'{' | b'[' | b'"' | b'\'')
                || c.is_ascii_whitespace()
            {
                break;
            }
            self.pos += 1;
        }
        if self.pos == start {
            return None;
        }
        self.s.get(start..self.pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_json_is_borrowed() {
        let s = r#"{"a":[1,2,{"b":"x\"y"}],"c":null}"#;
        assert!(matches!(normalize(s), Cow::Borrowed(_)));
    }

    #[test]
    fn bare_integer_keys_are_quoted() {
        let s = r#"{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"x":{-1:2}}"#;
        assert_eq!(
            normalize(s),
            r#"{"brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"x":{"-1":2}}"#
        );
    }

    #[test]
    fn pretty_fastjson_with_tabs_and_newlines() {
        let s = "{\n\t\"offsetTable\":{\n\t\t\"t@g\":{0:0\n\t\t}\n\t}\n}";
        let v: serde_json::Value = serde_json::from_str(&normalize(s)).unwrap();
        assert_eq!(v["offsetTable"]["t@g"]["0"], 0);
    }

    #[test]
    fn object_keys_become_string_keys() {
        let s = r#"{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:{"maxOffset":5}}}"#;
        let v: serde_json::Value = serde_json::from_str(&normalize(s)).unwrap();
        let (k, val) = v["offsetTable"].as_object().unwrap().iter().next().unwrap();
        assert_eq!(k, r#"{"brokerName":"b","queueId":0,"topic":"t"}"#);
        assert_eq!(val["maxOffset"], 5);
    }

    #[test]
    fn single_quotes_are_converted() {
        let s = r#"{'a':'it\'s "x"'}"#;
        let v: serde_json::Value = serde_json::from_str(&normalize(s)).unwrap();
        assert_eq!(v["a"], "it's \"x\"");
    }

    #[test]
    fn braces_inside_strings_are_not_structure() {
        let s = r#"{"k":"{0:1}",2:"}"}"#;
        assert_eq!(normalize(s), r#"{"k":"{0:1}","2":"}"}"#);
    }

    #[test]
    fn garbage_is_returned_unchanged() {
        for s in ["", "{", "{0:", "{\"a\" 1}", "[1,,2]", "{0:1} x", "'abc"] {
            assert_eq!(normalize(s), s);
        }
        let deep = "[".repeat(10_000);
        assert_eq!(normalize(&deep), deep.as_str());
    }

    #[test]
    fn the_checked_reader_says_where_and_why() {
        assert_eq!(to_standard_json("{0:'a'}").unwrap(), r#"{"0":"a"}"#);
        assert!(matches!(to_standard_json("[1]"), Ok(Cow::Borrowed("[1]"))));
        let e = to_standard_json("{a 1}").unwrap_err();
        assert!(e.contains("at byte 3") && e.contains("\"1}\""), "{e}");
        let e = to_standard_json("{a:1} x").unwrap_err();
        assert!(
            e.starts_with("extra data after the JSON value at byte 6"),
            "{e}"
        );
        let e = to_standard_json("{a:tru}").unwrap_err();
        assert!(e.starts_with("not JSON: "), "{e}");
        let deep = "{a:".repeat(300) + "1" + &"}".repeat(300);
        let e = to_standard_json(&deep).unwrap_err();
        assert!(e.contains("nested too deeply"), "{e}");
        for bad in ["", "{", "'abc", "[1,,2]", "\"\\"] {
            assert!(to_standard_json(bad).is_err(), "{bad:?}");
        }
    }
}
