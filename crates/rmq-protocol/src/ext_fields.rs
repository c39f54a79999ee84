//! `ExtFields`: a command's header fields, by the Java header class's field names.
//!
//! Almost every key and value is short (field names, numbers, topic and group names), and a
//! send carries about a dozen of them. Keys and values are therefore small strings kept inline
//! up to 24 bytes, and the pairs live in one vector sorted by key: building or decoding a
//! header costs one allocation instead of two per field plus a tree's nodes, which was a
//! tenth of a single send's cost on both ends of the wire. Sorted keys also keep encoding
//! deterministic (Java's `HashMap` order carries no meaning).

use std::fmt;

use compact_str::CompactString;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The order of two keys: bytewise, as `str`'s. Keys are field names of a few bytes (a
/// send's are single letters), so a loop the compiler inlines beats `str::cmp`'s call to
/// `memcmp`, which was the largest item of decoding a send header.
#[inline]
fn key_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// A key or value of [`ExtFields`]: a string stored inline when it fits in 24 bytes.
pub type FieldStr = CompactString;

/// Header fields as strings, sorted by key, each key at most once.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct ExtFields(Vec<(FieldStr, FieldStr)>);

impl ExtFields {
    /// No fields.
    #[must_use]
    pub const fn new() -> Self {
        Self(Vec::new())
    }

    /// No fields, with room for `n`.
    #[must_use]
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Number of fields.
    #[must_use]
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are no fields.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        let key = key.as_bytes();
        self.0.binary_search_by(|(k, _)| key_cmp(k.as_bytes(), key))
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.position(key).ok().map(|i| self.0[i].1.as_str())
    }

    /// Whether `key` is present.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Set `key` to `value`; returns the value it replaces.
    #[inline]
    pub fn insert(
        &mut self,
        key: impl Into<FieldStr>,
        value: impl Into<FieldStr>,
    ) -> Option<FieldStr> {
        let (key, value) = (key.into(), value.into());
        // Headers are written and read in key order, so most inserts append.
        if self
            .0
            .last()
            .is_none_or(|(last, _)| key_cmp(last.as_bytes(), key.as_bytes()).is_lt())
        {
            self.0.push((key, value));
            return None;
        }
        match self.position(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.0[i].1, value)),
            Err(i) => {
                self.0.insert(i, (key, value));
                None
            }
        }
    }

    /// Remove `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<FieldStr> {
        self.position(key).ok().map(|i| self.0.remove(i).1)
    }

    /// The keys in order.
    #[must_use]
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// The fields in key order.
    #[must_use]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl std::ops::Index<&str> for ExtFields {
    type Output = FieldStr;

    /// # Panics
    /// When `key` is absent, as a map's index does.
    fn index(&self, key: &str) -> &FieldStr {
        let Ok(i) = self.position(key) else {
            panic!("no ext field `{key}`")
        };
        &self.0[i].1
    }
}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Into<FieldStr>, V: Into<FieldStr>> Extend<(K, V)> for ExtFields {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: Into<FieldStr>, V: Into<FieldStr>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut fields = Self::new();
        fields.extend(iter);
        fields
    }
}

impl IntoIterator for ExtFields {
    type Item = (FieldStr, FieldStr);
    type IntoIter = std::vec::IntoIter<(FieldStr, FieldStr)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Serialize for ExtFields {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for ExtFields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct FieldsVisitor;
        impl<'de> Visitor<'de> for FieldsVisitor {
            type Value = ExtFields;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ExtFields, A::Error> {
                let mut fields = ExtFields::with_capacity(map.size_hint().unwrap_or(16));
                while let Some((k, v)) = map.next_entry::<FieldStr, FieldStr>()? {
                    fields.insert(k, v);
                }
                Ok(fields)
            }
        }
        d.deserialize_map(FieldsVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_keys_sorted_and_unique() {
        let mut f = ExtFields::new();
        assert_eq!(f.insert("m", "1"), None);
        assert_eq!(f.insert("b", "2"), None);
        assert_eq!(f.insert("z", "3"), None);
        assert_eq!(f.insert("b", "4").as_deref(), Some("2"));
        assert_eq!(
            f.iter().collect::<Vec<_>>(),
            [("b", "4"), ("m", "1"), ("z", "3")]
        );
        assert_eq!(f.get("m"), Some("1"));
        assert_eq!(f.get("a"), None);
        assert!(f.contains_key("z") && !f.contains_key("y"));
        assert_eq!(f.remove("m").as_deref(), Some("1"));
        assert_eq!(f.remove("m"), None);
        assert_eq!(f.len(), 2);
        assert_eq!(&f["z"], "3");
    }

    #[test]
    fn serde_round_trip_as_a_json_object() {
        let f: ExtFields = [("topic", "T"), ("queueId", "3")].into_iter().collect();
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, r#"{"queueId":"3","topic":"T"}"#);
        let back: ExtFields = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
        assert!(serde_json::from_str::<ExtFields>(r#"{"a":1}"#).is_err());
    }
}
