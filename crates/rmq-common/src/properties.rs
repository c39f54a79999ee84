//! The message-properties string: `name\u{1}value\u{2}` repeated, RocketMQ's
//! `messageProperties2String`. The broker stores it verbatim in the PROPERTIES field, so the
//! encoding here must match the Java client's byte for byte.

/// Separates a property name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends each name/value pair.
pub const PROPERTY_SEPARATOR: char = '\u{2}';

/// Names of the properties RocketMQ gives meaning to (`MessageConst`).
pub struct PropertyKey;

#[expect(
    missing_docs,
    reason = "each constant is its own RocketMQ property name"
)]
impl PropertyKey {
    pub const KEYS: &'static str = "KEYS";
    pub const TAGS: &'static str = "TAGS";
    pub const WAIT_STORE_MSG_OK: &'static str = "WAIT";
    pub const DELAY_TIME_LEVEL: &'static str = "DELAY";
    pub const RETRY_TOPIC: &'static str = "RETRY_TOPIC";
    pub const REAL_TOPIC: &'static str = "REAL_TOPIC";
    pub const REAL_QUEUE_ID: &'static str = "REAL_QID";
    pub const TRANSACTION_PREPARED: &'static str = "TRAN_MSG";
    pub const PRODUCER_GROUP: &'static str = "PGROUP";
    pub const MIN_OFFSET: &'static str = "MIN_OFFSET";
    pub const MAX_OFFSET: &'static str = "MAX_OFFSET";
    pub const ORIGIN_MESSAGE_ID: &'static str = "ORIGIN_MESSAGE_ID";
    pub const RECONSUME_TIME: &'static str = "RECONSUME_TIME";
    pub const UNIQ_CLIENT_MESSAGE_ID_KEYIDX: &'static str = "UNIQ_KEY";
    pub const MAX_RECONSUME_TIMES: &'static str = "MAX_RECONSUME_TIMES";
    pub const CONSUME_START_TIMESTAMP: &'static str = "CONSUME_START_TIME";
    pub const SHARDING_KEY: &'static str = "__SHARDINGKEY";
    pub const TRANSACTION_PREPARED_QUEUE_OFFSET: &'static str = "TRAN_PREPARED_QUEUE_OFFSET";
    pub const TRANSACTION_CHECK_TIMES: &'static str = "TRANSACTION_CHECK_TIMES";
    pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &'static str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
    // Timer messages (RocketMQ 5, RIP-43). A producer sets one of the first three; the broker
    // records the slot time it computed in TIMER_OUT_MS, and stamps the delivered message
    // with when it entered (TIMER_ENQUEUE_MS) and left (TIMER_DEQUEUE_MS) the time wheel.
    pub const TIMER_DELIVER_MS: &'static str = "TIMER_DELIVER_MS";
    pub const TIMER_DELAY_SEC: &'static str = "TIMER_DELAY_SEC";
    pub const TIMER_DELAY_MS: &'static str = "TIMER_DELAY_MS";
    pub const TIMER_OUT_MS: &'static str = "TIMER_OUT_MS";
    pub const TIMER_ENQUEUE_MS: &'static str = "TIMER_ENQUEUE_MS";
    pub const TIMER_DEQUEUE_MS: &'static str = "TIMER_DEQUEUE_MS";
    /// The broker's cluster, which it adds to every message it stores.
    pub const CLUSTER: &'static str = "CLUSTER";
    /// The region of the broker, in send responses (and trace records).
    pub const MSG_REGION: &'static str = "MSG_REGION";
    /// Whether message trace is on (`"false"` turns it off), in send responses and messages.
    pub const TRACE_SWITCH: &'static str = "TRACE_ON";

    /// Every key above by its constant's name: what `rmq._rmq` exposes to Python (as
    /// `PROPERTY_<name>`), so the Python side never spells a key itself.
    pub const ALL: &'static [(&'static str, &'static str)] = &[
        ("KEYS", Self::KEYS),
        ("TAGS", Self::TAGS),
        ("WAIT_STORE_MSG_OK", Self::WAIT_STORE_MSG_OK),
        ("DELAY_TIME_LEVEL", Self::DELAY_TIME_LEVEL),
        ("RETRY_TOPIC", Self::RETRY_TOPIC),
        ("REAL_TOPIC", Self::REAL_TOPIC),
        ("REAL_QUEUE_ID", Self::REAL_QUEUE_ID),
        ("TRANSACTION_PREPARED", Self::TRANSACTION_PREPARED),
        ("PRODUCER_GROUP", Self::PRODUCER_GROUP),
        ("MIN_OFFSET", Self::MIN_OFFSET),
        ("MAX_OFFSET", Self::MAX_OFFSET),
        ("ORIGIN_MESSAGE_ID", Self::ORIGIN_MESSAGE_ID),
        ("RECONSUME_TIME", Self::RECONSUME_TIME),
        (
            "UNIQ_CLIENT_MESSAGE_ID_KEYIDX",
            Self::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        ),
        ("MAX_RECONSUME_TIMES", Self::MAX_RECONSUME_TIMES),
        ("CONSUME_START_TIMESTAMP", Self::CONSUME_START_TIMESTAMP),
        ("SHARDING_KEY", Self::SHARDING_KEY),
        (
            "TRANSACTION_PREPARED_QUEUE_OFFSET",
            Self::TRANSACTION_PREPARED_QUEUE_OFFSET,
        ),
        ("TRANSACTION_CHECK_TIMES", Self::TRANSACTION_CHECK_TIMES),
        (
            "CHECK_IMMUNITY_TIME_IN_SECONDS",
            Self::CHECK_IMMUNITY_TIME_IN_SECONDS,
        ),
        ("TIMER_DELIVER_MS", Self::TIMER_DELIVER_MS),
        ("TIMER_DELAY_SEC", Self::TIMER_DELAY_SEC),
        ("TIMER_DELAY_MS", Self::TIMER_DELAY_MS),
        ("TIMER_OUT_MS", Self::TIMER_OUT_MS),
        ("TIMER_ENQUEUE_MS", Self::TIMER_ENQUEUE_MS),
        ("TIMER_DEQUEUE_MS", Self::TIMER_DEQUEUE_MS),
        ("CLUSTER", Self::CLUSTER),
        ("MSG_REGION", Self::MSG_REGION),
        ("TRACE_SWITCH", Self::TRACE_SWITCH),
    ];
}

/// Separates several keys inside the KEYS property.
pub const KEY_SEPARATOR: char = ' ';

/// An ordered list of message properties. Order is kept so that encoding is deterministic.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Properties(Vec<(String, String)>);

impl Properties {
    /// An empty property list.
    #[must_use]
    pub fn new() -> Self {
        Self(Vec::new())
    }

    /// Set `name` to `value`, replacing an earlier value.
    pub fn put(&mut self, name: impl Into<String>, value: impl Into<String>) {
        let (name, value) = (name.into(), value.into());
        if let Some(slot) = self.0.iter_mut().find(|(n, _)| *n == name) {
            slot.1 = value;
        } else {
            self.0.push((name, value));
        }
    }

    /// The value of `name`, if set.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Remove `name`, returning its value.
    pub fn remove(&mut self, name: &str) -> Option<String> {
        let i = self.0.iter().position(|(n, _)| n == name)?;
        Some(self.0.remove(i).1)
    }

    /// Iterate over (name, value) pairs in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// Whether no property is set.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Encode as RocketMQ's properties string.
    #[must_use]
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(self.0.iter().map(|(n, v)| n.len() + v.len() + 2).sum());
        for (n, v) in &self.0 {
            s.push_str(n);
            s.push(NAME_VALUE_SEPARATOR);
            s.push_str(v);
            s.push(PROPERTY_SEPARATOR);
        }
        s
    }

    /// Decode a properties string. Pairs without a separator are skipped, as the Java decoder
    /// does, so malformed input never fails.
    #[must_use]
    pub fn decode(s: &str) -> Self {
        Self(
            encoded_pairs(s)
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect(),
        )
    }
}

/// The (name, value) pairs of an encoded properties string, in order, without copying them:
/// what [`Properties::decode`] keeps (a pair without its separator is skipped).
pub fn encoded_pairs(s: &str) -> impl Iterator<Item = (&str, &str)> {
    s.split(PROPERTY_SEPARATOR)
        .filter_map(|pair| pair.split_once(NAME_VALUE_SEPARATOR))
}

impl FromIterator<(String, String)> for Properties {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(iter: I) -> Self {
        let mut p = Self::new();
        for (n, v) in iter {
            p.put(n, v);
        }
        p
    }
}

/// Find one property's value in an encoded properties string without decoding the rest (the
/// first pair of that name wins). For a name read on every message, a [`PropertyFinder`]
/// answers the same faster.
#[must_use]
pub fn find_property<'a>(encoded: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let mut rest = encoded;
    loop {
        // `memchr` finds each pair's end with SIMD; a byte-by-byte `split` was a visible
        // share of every put and dispatch.
        let end = memchr::memchr(PROPERTY_SEPARATOR as u8, rest).unwrap_or(rest.len());
        let pair = &rest[..end];
        if let Some(eq) = memchr::memchr(NAME_VALUE_SEPARATOR as u8, pair) {
            if pair[..eq] == *name.as_bytes() {
                return Some(&pair[eq + 1..]);
            }
        }
        rest = rest.get(end + 1..)?;
    }
}

/// One property's look-up, prepared once: a SIMD search for `\u{2}NAME\u{1}` (or `NAME\u{1}`
/// at the start), which is where a pair named NAME begins, instead of walking the pairs. It
/// answers what [`find_property`] does (the first pair of that name), several times faster
/// for the short strings messages carry, most of all when the name is absent (the usual case
/// of `DELAY` or `TRAN_MSG`, checked for every message sent). The hot names are in [`find`].
pub struct PropertyFinder {
    name: Box<[u8]>,
    pair_start: memchr::memmem::Finder<'static>,
}

impl PropertyFinder {
    /// A finder of `name`, which must hold neither separator.
    ///
    /// # Panics
    /// When `name` holds a separator (no property name does).
    #[must_use]
    pub fn new(name: &str) -> Self {
        assert!(
            !name.contains([NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR]),
            "a property name never holds a separator"
        );
        let mut needle = Vec::with_capacity(name.len() + 2);
        needle.push(PROPERTY_SEPARATOR as u8);
        needle.extend_from_slice(name.as_bytes());
        needle.push(NAME_VALUE_SEPARATOR as u8);
        Self {
            name: name.as_bytes().into(),
            pair_start: memchr::memmem::Finder::new(&needle).into_owned(),
        }
    }

    /// The value of the first pair named as this finder's name in `encoded`.
    #[must_use]
    pub fn find<'a>(&self, encoded: &'a [u8]) -> Option<&'a [u8]> {
        let n = self.name.len();
        // The separator's byte first: it rules out nearly every string without the call to
        // `memcmp` a slice comparison makes (3 % of the broker's CPU under small batches).
        let value_at = if encoded.get(n) == Some(&(NAME_VALUE_SEPARATOR as u8))
            && encoded.starts_with(&self.name)
        {
            n + 1
        } else {
            self.pair_start.find(encoded)? + n + 2
        };
        let rest = &encoded[value_at..];
        let end = memchr::memchr(PROPERTY_SEPARATOR as u8, rest).unwrap_or(rest.len());
        Some(&rest[..end])
    }
}

/// Finders of the properties the send and dispatch paths read for every message.
pub mod find {
    use std::sync::LazyLock;

    use super::{PropertyFinder, PropertyKey};

    /// `TAGS`.
    pub static TAGS: LazyLock<PropertyFinder> =
        LazyLock::new(|| PropertyFinder::new(PropertyKey::TAGS));
    /// `KEYS`.
    pub static KEYS: LazyLock<PropertyFinder> =
        LazyLock::new(|| PropertyFinder::new(PropertyKey::KEYS));
    /// `UNIQ_KEY`.
    pub static UNIQ_KEY: LazyLock<PropertyFinder> =
        LazyLock::new(|| PropertyFinder::new(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
    /// `DELAY`.
    pub static DELAY_TIME_LEVEL: LazyLock<PropertyFinder> =
        LazyLock::new(|| PropertyFinder::new(PropertyKey::DELAY_TIME_LEVEL));
    /// `TRAN_MSG`.
    pub static TRANSACTION_PREPARED: LazyLock<PropertyFinder> =
        LazyLock::new(|| PropertyFinder::new(PropertyKey::TRANSACTION_PREPARED));
    /// `WAIT`.
    pub static WAIT_STORE_MSG_OK: LazyLock<PropertyFinder> =
        LazyLock::new(|| PropertyFinder::new(PropertyKey::WAIT_STORE_MSG_OK));
}

/// Append the pairs of `encoded` whose name `drop` does not pick to `out`, each followed by
/// its separator (empty pairs are left out too): the copying half of [`edit_properties`], for
/// callers that build into a buffer of their own.
pub fn copy_properties_except(encoded: &[u8], drop: impl Fn(&[u8]) -> bool, out: &mut Vec<u8>) {
    for pair in encoded.split(|&b| b == PROPERTY_SEPARATOR as u8) {
        let name = pair
            .iter()
            .position(|&b| b == NAME_VALUE_SEPARATOR as u8)
            .map_or(pair, |i| &pair[..i]);
        if pair.is_empty() || drop(name) {
            continue;
        }
        out.extend_from_slice(pair);
        out.push(PROPERTY_SEPARATOR as u8);
    }
}

/// Re-encode `encoded` with the properties named in `remove` dropped and each `(name, value)`
/// of `set` replacing any earlier value of that name (appended at the end), without decoding
/// into owned strings. Other pairs keep their bytes and order; empty pairs are dropped. This
/// is the broker's `MessageAccessor.putProperty`/`clearProperty` on a stored properties string
/// (e.g. parking a delayed message: `REAL_TOPIC`/`REAL_QID` set; delivering it: `DELAY` removed).
#[must_use]
pub fn edit_properties(encoded: &[u8], remove: &[&str], set: &[(&str, &str)]) -> Vec<u8> {
    let extra: usize = set.iter().map(|(n, v)| n.len() + v.len() + 2).sum();
    let mut out = Vec::with_capacity(encoded.len() + extra);
    copy_properties_except(
        encoded,
        |name| {
            remove.iter().any(|r| r.as_bytes() == name)
                || set.iter().any(|(n, _)| n.as_bytes() == name)
        },
        &mut out,
    );
    for (n, v) in set {
        out.extend_from_slice(n.as_bytes());
        out.push(NAME_VALUE_SEPARATOR as u8);
        out.extend_from_slice(v.as_bytes());
        out.push(PROPERTY_SEPARATOR as u8);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_like_java_client() {
        let mut p = Properties::new();
        p.put("TAGS", "TagA");
        p.put("KEYS", "k1 k2");
        assert_eq!(p.encode(), "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}");
        assert_eq!(Properties::decode(&p.encode()), p);
    }

    #[test]
    fn put_replaces_and_remove_works() {
        let mut p = Properties::new();
        p.put("A", "1");
        p.put("A", "2");
        assert_eq!(p.get("A"), Some("2"));
        assert_eq!(p.remove("A").as_deref(), Some("2"));
        assert!(p.is_empty());
    }

    #[test]
    fn decode_tolerates_garbage() {
        let p = Properties::decode("no-separator\u{2}\u{2}K\u{1}V\u{2}trailing");
        assert_eq!(p.iter().collect::<Vec<_>>(), vec![("K", "V")]);
    }

    proptest::proptest! {
        /// The look-ups answer what splitting into pairs and taking the first match does.
        #[test]
        fn find_property_agrees_with_a_plain_split(
            encoded in proptest::collection::vec(
                proptest::sample::select(vec![b'A', b'B', 1u8, 2u8]), 0..200),
            name in "[AB]{1,3}",
            other in "[AB]{0,2}",
        ) {
            let first = |name: &str| encoded.split(|&b| b == 2).find_map(|pair| {
                (pair.len() > name.len() && pair.starts_with(name.as_bytes())
                    && pair[name.len()] == 1).then(|| &pair[name.len() + 1..])
            });
            proptest::prop_assert_eq!(find_property(&encoded, &name), first(&name));
            proptest::prop_assert_eq!(PropertyFinder::new(&name).find(&encoded), first(&name));
            proptest::prop_assert_eq!(find_property(&encoded, &other), first(&other));
        }
    }

    #[test]
    fn find_property_matches_whole_names_only() {
        let enc = "TAGSX\u{1}no\u{2}TAGS\u{1}yes\u{2}".as_bytes();
        assert_eq!(find_property(enc, "TAGS"), Some(&b"yes"[..]));
        assert_eq!(find_property(enc, "KEYS"), None);
        assert_eq!(find_property(b"TAGS\x01\x02", "TAGS"), Some(&b""[..]));
    }

    #[test]
    fn edit_properties_removes_replaces_and_appends() {
        let enc = "TAGS\u{1}A\u{2}DELAY\u{1}3\u{2}REAL_TOPIC\u{1}old\u{2}KEYS\u{1}k".as_bytes();
        let out = edit_properties(enc, &["DELAY"], &[("REAL_TOPIC", "T"), ("REAL_QID", "2")]);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            "TAGS\u{1}A\u{2}KEYS\u{1}k\u{2}REAL_TOPIC\u{1}T\u{2}REAL_QID\u{1}2\u{2}"
        );
        assert_eq!(edit_properties(b"", &["X"], &[]), b"");
        // A name that only starts like a removed one stays.
        assert_eq!(
            edit_properties("DELAYED\u{1}1\u{2}".as_bytes(), &["DELAY"], &[]),
            "DELAYED\u{1}1\u{2}".as_bytes()
        );
    }
}
