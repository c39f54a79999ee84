//! `ExtFields`: a command's header fields, by the Java header class's field names.
//!
//! A send carries about a dozen fields, nearly all of them short (field names, numbers, topic
//! and group names). Their text lives in one buffer, each key followed by its value, and a
//! field is a range of that buffer in a vector sorted by key: decoding a header writes every
//! string once, escapes resolved on the way ([`text_mut`](ExtFields::text_mut) and
//! [`place`](ExtFields::place)), with two allocations whatever the count of fields, and a
//! look-up compares key bytes in place. Each field as a small string of its own, the layout
//! before this one, spent a fifth of a sync send's broker CPU building and finding them
//! (benches/RESULTS.md, issue 18, nineteenth round). Sorted keys also keep encoding
//! deterministic (Java's `HashMap` order carries no meaning).

use std::fmt;
use std::hash::{Hash, Hasher};

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The order of two keys: bytewise, as `str`'s. Keys are field names of a few bytes (a
/// send's are single letters), so a loop the compiler inlines beats `str::cmp`'s call to
/// `memcmp`.
#[inline]
fn key_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    for (x, y) in a.iter().zip(b) {
        if x != y {
            return x.cmp(y);
        }
    }
    a.len().cmp(&b.len())
}

/// One field: its key is `text[start..key_end]`, its value `text[key_end..end]`.
#[derive(Clone, Copy, Debug)]
struct Field {
    start: usize,
    key_end: usize,
    end: usize,
}

/// Header fields as strings, sorted by key, each key at most once.
#[derive(Clone, Default)]
pub struct ExtFields {
    /// Keys and values back to back. A replaced or removed field's text stays until the
    /// fields are dropped: headers are built once and read, seldom edited.
    text: String,
    fields: Vec<Field>,
}

impl ExtFields {
    /// No fields.
    #[must_use]
    pub const fn new() -> Self {
        Self {
            text: String::new(),
            fields: Vec::new(),
        }
    }

    /// No fields, with room for `n` of them and `text` bytes of keys and values.
    #[must_use]
    pub fn with_capacity(n: usize, text: usize) -> Self {
        Self {
            text: String::with_capacity(text),
            fields: Vec::with_capacity(n),
        }
    }

    /// Number of fields.
    #[must_use]
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there are no fields.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    #[inline]
    fn key(&self, f: Field) -> &str {
        &self.text[f.start..f.key_end]
    }

    #[inline]
    fn value(&self, f: Field) -> &str {
        &self.text[f.key_end..f.end]
    }

    #[inline]
    fn position(&self, key: &str) -> Result<usize, usize> {
        let (text, key) = (self.text.as_bytes(), key.as_bytes());
        self.fields
            .binary_search_by(|f| key_cmp(&text[f.start..f.key_end], key))
    }

    /// The value of `key`.
    #[must_use]
    #[inline]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.position(key).ok().map(|i| self.value(self.fields[i]))
    }

    /// Whether `key` is present.
    #[must_use]
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Set `key` to `value`; returns the value it replaces.
    pub fn insert(&mut self, key: impl AsRef<str>, value: impl AsRef<str>) -> Option<String> {
        self.insert_with(key.as_ref(), |text| text.push_str(value.as_ref()))
    }

    /// Set `key` to what `value` appends to the text it is given; returns the value it
    /// replaces.
    pub fn insert_with(&mut self, key: &str, value: impl FnOnce(&mut String)) -> Option<String> {
        let start = self.text.len();
        self.text.push_str(key);
        let key_end = self.text.len();
        value(&mut self.text);
        self.place(start, key_end)
    }

    /// The buffer a decoder appends a field's key and then its value to, before it
    /// [`place`](Self::place)s the field.
    pub(crate) fn text_mut(&mut self) -> &mut String {
        &mut self.text
    }

    /// Make the field whose key was appended to the text from `start` to `key_end`, and whose
    /// value from there to the end of the text, one of the fields; returns the value it
    /// replaces.
    pub(crate) fn place(&mut self, start: usize, key_end: usize) -> Option<String> {
        let field = Field {
            start,
            key_end,
            end: self.text.len(),
        };
        // Headers are written and read in key order, so most fields go last.
        let key = self.key(field);
        if self
            .fields
            .last()
            .is_none_or(|&last| key_cmp(self.key(last).as_bytes(), key.as_bytes()).is_lt())
        {
            self.fields.push(field);
            return None;
        }
        match self.position(key) {
            Ok(i) => {
                let old = self.value(self.fields[i]).to_owned();
                self.fields[i] = field;
                Some(old)
            }
            Err(i) => {
                self.fields.insert(i, field);
                None
            }
        }
    }

    /// Remove `key`; returns its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.position(key).ok()?;
        let old = self.value(self.fields[i]).to_owned();
        self.fields.remove(i);
        Some(old)
    }

    /// Look-ups that expect keys in order: what a header's decoding makes.
    #[must_use]
    pub fn cursor(&self) -> FieldCursor<'_> {
        FieldCursor {
            fields: self,
            next: 0,
        }
    }

    /// The keys in order.
    #[must_use]
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.fields.iter().map(|&f| self.key(f))
    }

    /// The fields in key order.
    #[must_use]
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.fields.iter().map(|&f| (self.key(f), self.value(f)))
    }
}

/// Look-ups in the order a header declares its fields, which is the order clients write them
/// (a send's `a` to `n`): each tries the field after the last one found before it searches,
/// so reading a whole header costs a comparison a field.
pub struct FieldCursor<'a> {
    fields: &'a ExtFields,
    next: usize,
}

impl<'a> FieldCursor<'a> {
    /// The value of `key`.
    #[inline]
    pub fn get(&mut self, key: &str) -> Option<&'a str> {
        let fields = self.fields;
        let i = match fields.fields.get(self.next) {
            Some(&f) if key_cmp(fields.key(f).as_bytes(), key.as_bytes()).is_eq() => self.next,
            _ => fields.position(key).ok()?,
        };
        self.next = i + 1;
        Some(fields.value(fields.fields[i]))
    }
}

impl PartialEq for ExtFields {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for ExtFields {}

impl Hash for ExtFields {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.len().hash(state);
        for field in self.iter() {
            field.hash(state);
        }
    }
}

impl std::ops::Index<&str> for ExtFields {
    type Output = str;

    /// # Panics
    /// When `key` is absent, as a map's index does.
    fn index(&self, key: &str) -> &str {
        let Some(v) = self.get(key) else {
            panic!("no ext field `{key}`")
        };
        v
    }
}

impl fmt::Debug for ExtFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: AsRef<str>, V: AsRef<str>> Extend<(K, V)> for ExtFields {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for ExtFields {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut fields = Self::new();
        fields.extend(iter);
        fields
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
                let n = map.size_hint().unwrap_or(16).min(64);
                let mut fields = ExtFields::with_capacity(n, 16 * n);
                while let Some((k, v)) =
                    map.next_entry::<std::borrow::Cow<'de, str>, std::borrow::Cow<'de, str>>()?
                {
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
    fn fields_equal_and_hash_by_what_they_hold_not_by_how_they_were_built() {
        use std::collections::hash_map::DefaultHasher;
        let hash = |f: &ExtFields| {
            let mut h = DefaultHasher::new();
            f.hash(&mut h);
            h.finish()
        };
        let plain: ExtFields = [("a", "1"), ("b", "2")].into_iter().collect();
        let mut edited = ExtFields::new();
        edited.insert("b", "2");
        edited.insert("a", "9");
        edited.insert("z", "gone");
        assert_eq!(edited.insert("a", "1").as_deref(), Some("9"));
        assert_eq!(edited.remove("z").as_deref(), Some("gone"));
        assert_eq!(edited, plain);
        assert_eq!(hash(&edited), hash(&plain));
        edited.insert("a", "2");
        assert_ne!(edited, plain);
    }

    #[test]
    fn a_cursor_finds_every_key_in_any_order() {
        let f: ExtFields = [("a", "1"), ("b", "2"), ("c", "3"), ("e", "5")]
            .into_iter()
            .collect();
        let mut c = f.cursor();
        // In order (one comparison each), then around: skipped, absent and earlier keys.
        assert_eq!(
            ["a", "b", "e", "d", "c", "a", "b", "x", "e"].map(|k| c.get(k)),
            [
                Some("1"),
                Some("2"),
                Some("5"),
                None,
                Some("3"),
                Some("1"),
                Some("2"),
                None,
                Some("5")
            ]
        );
        assert_eq!(ExtFields::new().cursor().get("a"), None);
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
