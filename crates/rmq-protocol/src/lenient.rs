//! fastjson's type coercion for JSON bodies.
//!
//! Java brokers parse bodies with fastjson, which converts a JSON value to the type the Java
//! field declares: a number read into a `String` field becomes its text, `"123"` read into an
//! `int` or `long` becomes 123, an enum is read by name or by ordinal, `"true"`/`1` become a
//! `boolean`, `null` becomes the Java default of a primitive. Clients other than Java's rely on
//! this: RocketMQ's C++ core writes enums as ordinals and `subVersion` as a string, the Go
//! client writes `codeSet` as strings. [`from_value`] gives serde the same coercions, driven
//! by the type being read (which is what fastjson does too), for every body type of this
//! crate at once.
//!
//! Written here because serde has no coercing deserializer: `serde_with`/`serde-aux` coerce
//! one annotated field at a time, which would mean annotating (and keeping annotated) every
//! numeric, boolean and enum field of every body. Errors carry the path of the field that
//! failed (via `serde_path_to_error`), the value found and the type expected.
//!
//! Enums read by ordinal take the variant at that index in declaration order, so body enums
//! declare their variants in Java's order.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

type Error = serde_json::Error;

/// Read `T` from a parsed JSON value with fastjson's coercions. The error names the path of
/// the offending field (`consumerDataSet[0].consumeType: …`).
///
/// # Errors
/// The value cannot be read as `T` even with coercion.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(Lenient(value)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("{path}: {inner}")
        }
    })
}

/// A JSON value being read with fastjson's coercions.
struct Lenient(Value);

fn invalid(found: &Value, expected: &str) -> Error {
    let shown = match found {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    de::Error::custom(format!("invalid value {shown}: expected {expected}"))
}

/// The integer a value stands for: JSON integers, integral floats, decimal strings
/// (surrounding blanks allowed, as fastjson trims), booleans as 1/0, null/"" as 0.
enum Int {
    Signed(i64),
    Unsigned(u64),
}

fn integer(v: &Value) -> Result<Int, Error> {
    #[expect(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        reason = "Java's intValue() truncates; the range check is against i64's bounds as f64"
    )]
    let from_f64 = |f: f64| {
        // Java's intValue() truncates; values outside i64 are not integers for any field.
        if f.is_finite() && f.trunc() >= i64::MIN as f64 && f.trunc() <= i64::MAX as f64 {
            Some(Int::Signed(f.trunc() as i64))
        } else {
            None
        }
    };
    let found = match v {
        Value::Null => Some(Int::Signed(0)),
        Value::Bool(b) => Some(Int::Signed(i64::from(*b))),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => Some(Int::Signed(i)),
            (None, Some(u), _) => Some(Int::Unsigned(u)),
            (None, None, Some(f)) => from_f64(f),
            _ => None,
        },
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() || t == "null" {
                Some(Int::Signed(0))
            } else if let Ok(i) = t.parse::<i64>() {
                Some(Int::Signed(i))
            } else if let Ok(u) = t.parse::<u64>() {
                Some(Int::Unsigned(u))
            } else {
                None
            }
        }
        Value::Array(_) | Value::Object(_) => None,
    };
    found.ok_or_else(|| invalid(v, "an integer"))
}

fn visit_int<'de, V: Visitor<'de>>(v: &Value, visitor: V) -> Result<V::Value, Error> {
    match integer(v)? {
        Int::Signed(i) => visitor.visit_i64(i),
        Int::Unsigned(u) => visitor.visit_u64(u),
    }
}

/// fastjson's `castToBoolean`: `true`/`1`/`Y`/`T` and `false`/`0`/`N`/`F` in any case, any
/// number (non-zero is true), null as false.
fn boolean(v: &Value) -> Result<bool, Error> {
    match v {
        Value::Null => Ok(false),
        Value::Bool(b) => Ok(*b),
        Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "y" | "t" => Ok(true),
            "false" | "0" | "n" | "f" | "" | "null" => Ok(false),
            _ => Err(invalid(v, "a boolean")),
        },
        Value::Array(_) | Value::Object(_) => Err(invalid(v, "a boolean")),
    }
}

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => n.deserialize_any(visitor).map_err(de::Error::custom),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(a) => visitor.visit_seq(SeqDe(a.into_iter())),
            Value::Object(m) => visitor.visit_map(MapDe::new(m)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_bool(boolean(&self.0)?)
    }

    fn deserialize_i8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_i16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_u8<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_u16<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }
    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_int(&self.0, visitor)
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let f = match &self.0 {
            Value::Null => Some(0.0),
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        visitor.visit_f64(f.ok_or_else(|| invalid(&self.0, "a number"))?)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    /// Strings as they are; numbers and booleans as their text (fastjson's `castToString`);
    /// null as "" (the Rust field has no null).
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            Value::Number(n) => visitor.visit_string(n.to_string()),
            Value::Bool(b) => visitor.visit_string(b.to_string()),
            Value::Null => visitor.visit_str(""),
            other => Err(invalid(&other, "a string")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            v => visitor.visit_some(Lenient(v)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    /// Arrays; null as an empty collection.
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Array(a) => visitor.visit_seq(SeqDe(a.into_iter())),
            Value::Null => visitor.visit_seq(SeqDe(Vec::new().into_iter())),
            other => Err(invalid(&other, "an array")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    /// Objects; null as an empty map (a struct then gets its defaults).
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Object(m) => visitor.visit_map(MapDe::new(m)),
            Value::Null => visitor.visit_map(MapDe::new(Map::new())),
            other => Err(invalid(&other, "an object")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    /// Unit variants by name or by ordinal (a JSON number, or a string of digits that is not
    /// a variant name); anything else as serde_json reads enums.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let by_ordinal = |i: Option<u64>| {
            i.and_then(|i| usize::try_from(i).ok())
                .and_then(|i| variants.get(i).copied())
        };
        let variant = match &self.0 {
            Value::String(s) if variants.contains(&s.as_str()) => Some(s.as_str()),
            Value::String(s) => by_ordinal(s.trim().parse().ok()),
            Value::Number(n) => by_ordinal(n.as_u64()),
            Value::Object(_) => return self.0.deserialize_enum(name, variants, visitor),
            _ => None,
        };
        match variant {
            Some(v) => visitor.visit_enum(v.into_deserializer()),
            None => Err(invalid(
                &self.0,
                &format!(
                    "one of {} or its ordinal 0..{}",
                    variants.join(", "),
                    variants.len()
                ),
            )),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    forward_to_deserialize_any! { bytes byte_buf unit unit_struct }
}

struct SeqDe(std::vec::IntoIter<Value>);

impl<'de> de::SeqAccess<'de> for SeqDe {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Lenient(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct MapDe {
    entries: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl MapDe {
    fn new(m: Map<String, Value>) -> Self {
        Self {
            entries: m.into_iter(),
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for MapDe {
    type Error = Error;

    /// Keys are strings in JSON; a map keyed by numbers (`Map<Long, String>`) reads them
    /// through the same coercions.
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.entries.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(Lenient(Value::String(k))).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let v = self
            .value
            .take()
            .ok_or_else(|| <Error as de::Error>::custom("map value read before its key"))?;
        seed.deserialize(Lenient(v))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq, Default)]
    enum Kind {
        #[default]
        A,
        B,
        C,
    }

    #[derive(Debug, Deserialize, PartialEq, Default)]
    #[serde(default)]
    struct Probe {
        i: i32,
        l: i64,
        b: bool,
        s: String,
        k: Kind,
        v: Vec<i32>,
        m: BTreeMap<i64, String>,
        o: Option<i64>,
        f: f64,
    }

    fn read(v: Value) -> Result<Probe, String> {
        from_value(v)
    }

    #[test]
    fn coerces_like_fastjson() {
        let p = read(json!({
            "i": "42", "l": "1795513573873", "b": "1", "s": 7, "k": 2,
            "v": ["2598919", 3, -4], "m": {"0": "a", "1": "b"}, "o": "9", "f": "1.5",
            "unknown": {"x": [1]}
        }))
        .unwrap();
        assert_eq!(
            p,
            Probe {
                i: 42,
                l: 1_795_513_573_873,
                b: true,
                s: "7".into(),
                k: Kind::C,
                v: vec![2_598_919, 3, -4],
                m: [(0, "a".into()), (1, "b".into())].into_iter().collect(),
                o: Some(9),
                f: 1.5,
            }
        );
        // Names still work, and every Java-typed null reads as the default.
        let p = read(json!({"k": "B", "b": "false", "i": null, "s": null, "v": null, "o": null}))
            .unwrap();
        assert_eq!(
            (p.k, p.b, p.i, p.s.as_str(), p.v.len(), p.o),
            (Kind::B, false, 0, "", 0, None)
        );
        assert_eq!(
            read(json!({"k": "1", "b": 0, "i": 3.0, "l": true}))
                .unwrap()
                .k,
            Kind::B
        );
    }

    #[test]
    fn errors_name_the_path_the_value_and_the_type() {
        let e = read(json!({"v": [1, "x1"]})).unwrap_err();
        assert_eq!(e, r#"v[1]: invalid value "x1": expected an integer"#);
        let e = read(json!({"k": 3})).unwrap_err();
        assert_eq!(
            e,
            "k: invalid value 3: expected one of A, B, C or its ordinal 0..3"
        );
        let e = read(json!({"k": "Z"})).unwrap_err();
        assert!(e.starts_with(r#"k: invalid value "Z""#), "{e}");
        let e = read(json!({"i": "99999999999"})).unwrap_err();
        assert!(e.starts_with("i: invalid value"), "{e}");
        let e = read(json!({"b": "yes"})).unwrap_err();
        assert_eq!(e, r#"b: invalid value "yes": expected a boolean"#);
        let e = read(json!({"s": [1]})).unwrap_err();
        assert_eq!(e, "s: invalid value [1]: expected a string");
        assert!(read(json!([1])).is_err());
    }
}
