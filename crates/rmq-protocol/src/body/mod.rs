//! JSON bodies, as RocketMQ's Java classes serialize them with fastjson: camelCase
//! property names exactly as the Java getters give them, enums by name, nulls left out.
//! Fields are declared in alphabetical order so that our output has fastjson's property
//! order too (which makes captures diffable against Java's).
//!
//! Reading goes through [`crate::json_compat`], so bare map keys (`{0:"addr"}`) and
//! object map keys (`{{"topic":…}:…}`) from Java parse; unknown properties (newer Java
//! versions add some) are ignored and missing collections read as empty; values are coerced
//! to the field's type as fastjson does (numbers from strings, enums by ordinal, …), so
//! enums declare their variants in the Java enum's order. Writing produces
//! standard JSON, which fastjson reads, except for maps keyed by [`MessageQueue`]: those are
//! written the way fastjson writes them (object keys), since that is the only form every
//! Java version is known to read back.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{ProtocolError, Result};
use crate::json_compat;

pub mod admin;
pub mod consumer;
pub mod ha;
pub mod heartbeat;
pub mod route;
pub mod running_info;
pub mod topic;

pub use admin::*;
pub use consumer::*;
pub use ha::*;
pub use heartbeat::*;
pub use route::*;
pub use running_info::*;
pub use topic::*;

/// A body type that travels as RocketMQ JSON.
pub trait RemotingJson: Serialize + DeserializeOwned {
    /// Name used in error messages.
    const TYPE_NAME: &'static str;

    /// Serialize as the body bytes Java expects.
    ///
    /// # Errors
    /// Only if a value cannot be represented in JSON (never for the types of this crate).
    fn to_json_bytes(&self) -> Result<Bytes> {
        serde_json::to_vec(self)
            .map(Bytes::from)
            .map_err(|e| ProtocolError::Unencodable {
                what: Self::TYPE_NAME,
                reason: e.to_string(),
            })
    }

    /// Parse body bytes written by Java (fastjson) or by us.
    ///
    /// # Errors
    /// [`ProtocolError::BadBody`] when the bytes are not this type's JSON.
    fn from_json_bytes(bytes: &[u8]) -> Result<Self> {
        json_compat::from_slice(bytes).map_err(|reason| ProtocolError::BadBody {
            type_name: Self::TYPE_NAME,
            reason,
        })
    }
}

macro_rules! remoting_json {
    ($($t:ident),* $(,)?) => {$(
        impl $crate::body::RemotingJson for $t {
            const TYPE_NAME: &'static str = stringify!($t);
        }
    )*};
}
pub(crate) use remoting_json;

/// Read `null` as the default value (fastjson omits nulls, but other clients send them).
pub(crate) fn null_default<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `MessageQueue`: one queue of a topic on one broker.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageQueue {
    /// Broker holding the queue.
    #[serde(default, deserialize_with = "null_default")]
    pub broker_name: String,
    /// Queue number within the topic on that broker.
    #[serde(default)]
    pub queue_id: i32,
    /// Topic.
    #[serde(default, deserialize_with = "null_default")]
    pub topic: String,
}

impl MessageQueue {
    /// A queue.
    #[must_use]
    pub fn new(topic: impl Into<String>, broker_name: impl Into<String>, queue_id: i32) -> Self {
        Self {
            broker_name: broker_name.into(),
            queue_id,
            topic: topic.into(),
        }
    }
}

impl Ord for MessageQueue {
    /// Java's `MessageQueue.compareTo`: topic, then broker name, then queue id.
    fn cmp(&self, other: &Self) -> Ordering {
        self.topic
            .cmp(&other.topic)
            .then_with(|| self.broker_name.cmp(&other.broker_name))
            .then_with(|| self.queue_id.cmp(&other.queue_id))
    }
}

impl PartialOrd for MessageQueue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A Java `Map<MessageQueue, V>`. fastjson writes it with JSON objects as keys, which is
/// not JSON; [`json_compat`] turns such keys into strings holding the object's text, and
/// this type parses them back. Serde serialization (standard JSON) writes the same string
/// keys; [`MessageQueueMap::write_fastjson`] writes fastjson's form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageQueueMap<V>(pub BTreeMap<MessageQueue, V>);

impl<V> Default for MessageQueueMap<V> {
    fn default() -> Self {
        Self(BTreeMap::new())
    }
}

impl<V> MessageQueueMap<V> {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        Self(BTreeMap::new())
    }
}

impl<V: Serialize> MessageQueueMap<V> {
    /// Append the map as fastjson writes it: `{{"brokerName":…,"queueId":…,"topic":…}:v,…}`.
    ///
    /// # Errors
    /// Only if a value cannot be represented in JSON.
    pub fn write_fastjson(&self, out: &mut Vec<u8>) -> Result<()> {
        let err = |e: serde_json::Error| ProtocolError::Unencodable {
            what: "MessageQueueMap",
            reason: e.to_string(),
        };
        out.push(b'{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut *out, k).map_err(err)?;
            out.push(b':');
            serde_json::to_writer(&mut *out, v).map_err(err)?;
        }
        out.push(b'}');
        Ok(())
    }
}

impl<V: Serialize> Serialize for MessageQueueMap<V> {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::{Error, SerializeMap};
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            let key = serde_json::to_string(k).map_err(S::Error::custom)?;
            m.serialize_entry(&key, v)?;
        }
        m.end()
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for MessageQueueMap<V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        use serde::de::Error;
        let raw = Option::<BTreeMap<String, V>>::deserialize(d)?.unwrap_or_default();
        let mut out = BTreeMap::new();
        for (k, v) in raw {
            let mq: MessageQueue = json_compat::from_slice(k.as_bytes())
                .map_err(|e| D::Error::custom(format!("bad MessageQueue key {k:?}: {e}")))?;
            out.insert(mq, v);
        }
        Ok(Self(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_queue_orders_like_java() {
        let mut v = [
            MessageQueue::new("b", "x", 0),
            MessageQueue::new("a", "y", 1),
            MessageQueue::new("a", "y", 0),
            MessageQueue::new("a", "x", 5),
        ];
        v.sort();
        assert_eq!(
            v.iter()
                .map(|m| format!("{}/{}/{}", m.topic, m.broker_name, m.queue_id))
                .collect::<Vec<_>>(),
            ["a/x/5", "a/y/0", "a/y/1", "b/x/0"]
        );
        assert_eq!(
            serde_json::to_string(&v[0]).unwrap(),
            r#"{"brokerName":"x","queueId":5,"topic":"a"}"#
        );
    }

    #[test]
    fn message_queue_map_both_forms() {
        let mut m = MessageQueueMap::new();
        m.0.insert(MessageQueue::new("t", "b", 1), 7i64);
        let mut fj = Vec::new();
        m.write_fastjson(&mut fj).unwrap();
        assert_eq!(
            std::str::from_utf8(&fj).unwrap(),
            r#"{{"brokerName":"b","queueId":1,"topic":"t"}:7}"#
        );
        let back: MessageQueueMap<i64> = json_compat::from_slice(&fj).unwrap();
        assert_eq!(back, m);
        let std_json = serde_json::to_string(&m).unwrap();
        let back: MessageQueueMap<i64> = serde_json::from_str(&std_json).unwrap();
        assert_eq!(back, m);
    }
}
