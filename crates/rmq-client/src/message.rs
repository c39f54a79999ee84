//! Outgoing messages and what a send returns: validation as RocketMQ's `Validators`, the
//! client-side unique id (`MessageClientIDSetter`) and `SendResult`. (Body compression is
//! `rmq_common::compression`, shared with every reader.)

use std::fmt::Write as _;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::OnceLock;

use bytes::Bytes;
use rmq_common::{Properties, PropertyKey};
use rmq_protocol::body::MessageQueue;

use crate::error::{ClientError, Result};

/// Longest topic name (`Validators.TOPIC_MAX_LENGTH`).
pub const TOPIC_MAX_LENGTH: usize = 127;

/// A message to send.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// Topic.
    pub topic: String,
    /// Application flag.
    pub flag: i32,
    /// Body as given (compressed on the way out when large).
    pub body: Bytes,
    /// Properties: TAGS, KEYS, DELAY, user properties, …
    pub properties: Properties,
}

impl Message {
    /// A message with a topic and a body.
    #[must_use]
    pub fn new(topic: impl Into<String>, body: impl Into<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            body: body.into(),
            ..Self::default()
        }
    }

    /// The unique id, setting a fresh one if there is none.
    pub fn ensure_uniq_id(&mut self) -> String {
        if let Some(id) = self
            .properties
            .get(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        {
            return id.to_owned();
        }
        let id = new_uniq_id();
        self.properties
            .put(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, id.clone());
        id
    }
}

/// Check `topic` as `Validators.checkTopic` does (plus RocketMQ's reserved system topics).
///
/// # Errors
/// [`ClientError::IllegalMessage`] saying what is wrong.
pub fn check_topic(topic: &str) -> Result<()> {
    let illegal = |why: String| Err(ClientError::IllegalMessage(why));
    if topic.is_empty() {
        return illegal("the topic is empty".to_owned());
    }
    if topic.len() > TOPIC_MAX_LENGTH {
        return illegal(format!(
            "topic {topic:?} is {} characters long; the most is {TOPIC_MAX_LENGTH}",
            topic.len()
        ));
    }
    if let Some(c) = topic
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '%' | '|' | '_' | '-')))
    {
        return illegal(format!(
            "topic {topic:?} contains {c:?}; topics may use letters, digits, '%', '|', '_' and '-'"
        ));
    }
    if topic == crate::instance::AUTO_CREATE_TOPIC_KEY {
        return illegal(format!("{topic} is a system topic; send to your own topic"));
    }
    Ok(())
}

/// Check a message before sending (`Validators.checkMessage`).
///
/// # Errors
/// [`ClientError::IllegalMessage`].
pub fn check_message(msg: &Message, max_message_size: usize) -> Result<()> {
    check_topic(&msg.topic)?;
    if msg.body.is_empty() {
        return Err(ClientError::IllegalMessage(
            "the message body is empty".to_owned(),
        ));
    }
    if msg.body.len() > max_message_size {
        return Err(ClientError::IllegalMessage(format!(
            "the message body is {} bytes; the most is {max_message_size} (maxMessageSize)",
            msg.body.len()
        )));
    }
    Ok(())
}

/// How a successful send was stored (`SendStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendStatus {
    /// Stored as the broker promises.
    SendOk,
    /// Stored, but the SYNC_FLUSH flush did not finish in time.
    FlushDiskTimeout,
    /// Stored on the master; the slave did not confirm in time.
    FlushSlaveTimeout,
    /// Stored on the master; no slave is available (SYNC_MASTER).
    SlaveNotAvailable,
}

impl SendStatus {
    /// RocketMQ's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::SendOk => "SEND_OK",
            Self::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
            Self::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
            Self::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
        }
    }
}

/// What a send returns (`SendResult`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendResult {
    /// How it was stored.
    pub status: SendStatus,
    /// The client's unique id (`UNIQ_KEY`); for a batch, the ids joined by commas.
    pub msg_id: String,
    /// The broker's offset message id (store host + CommitLog offset); comma-joined for a
    /// batch.
    pub offset_msg_id: String,
    /// Where it went.
    pub queue: MessageQueue,
    /// Its ConsumeQueue offset (the first one, for a batch).
    pub queue_offset: i64,
    /// Transaction id, for half messages.
    pub transaction_id: Option<String>,
    /// The broker's region.
    pub region_id: String,
    /// The broker's `traceOn`: false asks a tracing producer not to trace this send.
    pub trace_on: bool,
}

/// A new client-side unique id: 32 upper-case hex digits, as `MessageClientIDSetter`
/// builds them: this host's IPv4 address (4 bytes), the process id (2), a per-process random
/// number (4), milliseconds since the start of the month (4) and a counter (2).
#[must_use]
pub fn new_uniq_id() -> String {
    static PREFIX: OnceLock<String> = OnceLock::new();
    static COUNTER: AtomicU16 = AtomicU16::new(0);
    let prefix = PREFIX.get_or_init(|| {
        let mut s = String::with_capacity(32);
        let ip = local_ipv4().octets();
        #[expect(
            clippy::cast_possible_truncation,
            reason = "the low 16 bits, as Java's (short) UtilAll.getPid()"
        )]
        let pid = std::process::id() as u16;
        let salt = random_u32();
        for b in ip
            .iter()
            .chain(&pid.to_be_bytes())
            .chain(&salt.to_be_bytes())
        {
            let _ = write!(s, "{b:02X}");
        }
        s
    });
    let now = rmq_common::time::now_millis();
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a month's milliseconds (< 2^32); Java's (int) cast would wrap the same way"
    )]
    let since_month = (now - month_start_millis(now)) as u32;
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut id = String::with_capacity(32);
    id.push_str(prefix);
    let _ = write!(id, "{since_month:08X}{count:04X}");
    id
}

/// Unix milliseconds of the first instant of the UTC month holding `now_ms`.
fn month_start_millis(now_ms: i64) -> i64 {
    const DAY_MS: i64 = 86_400_000;
    let days = now_ms.div_euclid(DAY_MS);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm), day of month only.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day_of_month = doy - (153 * mp + 2) / 5; // 0-based
    (days - day_of_month) * DAY_MS
}

/// What a client-side unique id ([`new_uniq_id`]'s layout, or a Java client's) tells: the
/// producer host's address, its process id and roughly when the id was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniqIdParts {
    /// The producer host (IPv4 for 32-digit ids, IPv6 for 56-digit ones).
    pub ip: std::net::IpAddr,
    /// The low 16 bits of the producer's process id.
    pub pid: u16,
    /// Unix milliseconds the id was made at, read as `MessageClientIDSetter
    /// .getNearlyTimeFromID` reads it: the id holds milliseconds since a month's start, taken
    /// as the latest month start that puts the time before `now_ms`.
    pub time_ms: i64,
}

/// Decode a unique id (`UNIQ_KEY`, the `msgId` a producer gets back); `None` when it is not
/// 32 or 56 hex digits.
#[must_use]
pub fn decode_uniq_id(id: &str, now_ms: i64) -> Option<UniqIdParts> {
    if !(id.len() == 32 || id.len() == 56) || !id.is_ascii() {
        return None;
    }
    let mut bytes = Vec::with_capacity(id.len() / 2);
    for i in (0..id.len()).step_by(2) {
        bytes.push(u8::from_str_radix(&id[i..i + 2], 16).ok()?);
    }
    let ip_len = if id.len() == 32 { 4 } else { 16 };
    let ip = if ip_len == 4 {
        let o: [u8; 4] = bytes[..4].try_into().ok()?;
        std::net::IpAddr::V4(Ipv4Addr::from(o))
    } else {
        let o: [u8; 16] = bytes[..16].try_into().ok()?;
        std::net::IpAddr::V6(std::net::Ipv6Addr::from(o))
    };
    let pid = u16::from_be_bytes(bytes[ip_len..ip_len + 2].try_into().ok()?);
    // After the pid: 4 bytes of per-process salt, then the milliseconds since the month start.
    let at = ip_len + 2 + 4;
    let since_month = i64::from(u32::from_be_bytes(bytes[at..at + 4].try_into().ok()?));
    let mut start = month_start_millis(now_ms);
    if start + since_month >= now_ms {
        start = month_start_millis(start - 1);
    }
    Some(UniqIdParts {
        ip,
        pid,
        time_ms: start + since_month,
    })
}

pub(crate) fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    #[expect(
        clippy::cast_possible_truncation,
        reason = "the low 32 bits of the hash"
    )]
    let low = h.finish() as u32;
    low
}

/// The address this host uses to reach the outside, or loopback.
#[must_use]
pub fn local_ipv4() -> Ipv4Addr {
    // Connecting a UDP socket sends nothing; it only asks the kernel for a route.
    std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| {
            s.connect("10.255.255.255:1")?;
            s.local_addr()
        })
        .ok()
        .and_then(|a| match a.ip() {
            std::net::IpAddr::V4(ip) if !ip.is_unspecified() => Some(ip),
            _ => None,
        })
        .unwrap_or(Ipv4Addr::LOCALHOST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniq_ids_are_32_hex_digits_and_distinct() {
        let a = new_uniq_id();
        let b = new_uniq_id();
        assert_eq!(a.len(), 32);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_lowercase()));
        assert_ne!(a, b);
        assert_eq!(a[..20], b[..20], "same process prefix");
    }

    #[test]
    fn month_start() {
        // 2026-11-22T05:51:24Z → 2026-11-01T00:00:00Z
        assert_eq!(month_start_millis(1_795_326_684_000), 1_793_491_200_000);
        assert_eq!(month_start_millis(1_793_491_200_000), 1_793_491_200_000);
        // 2024-03-01 just after a leap day
        assert_eq!(month_start_millis(1_709_251_200_000 + 5), 1_709_251_200_000);
    }

    #[test]
    fn uniq_id_decodes_to_its_host_pid_and_time() {
        let before = rmq_common::time::now_millis();
        let id = new_uniq_id();
        let now = rmq_common::time::now_millis() + 1;
        let parts = decode_uniq_id(&id, now).expect("a fresh id decodes");
        assert_eq!(parts.ip, std::net::IpAddr::V4(local_ipv4()));
        #[expect(
            clippy::cast_possible_truncation,
            reason = "the id keeps the low 16 bits"
        )]
        let pid = std::process::id() as u16;
        assert_eq!(parts.pid, pid);
        assert!(
            (before..now).contains(&parts.time_ms),
            "{parts:?} not in {before}..{now}"
        );
        // An id made later in the month than `now` belongs to the month before.
        let start = month_start_millis(now);
        let late = format!("7F000001000100000000{:08X}0000", 5_000u32);
        let parts = decode_uniq_id(&late, start + 1_000).expect("decodes");
        assert_eq!(parts.time_ms, month_start_millis(start - 1) + 5_000);
        assert_eq!(parts.pid, 1);
        assert!(decode_uniq_id("XYZ", now).is_none());
        assert!(decode_uniq_id(&"G".repeat(32), now).is_none());
        assert_eq!(
            decode_uniq_id(&"0".repeat(56), now).map(|p| p.ip.is_ipv6()),
            Some(true)
        );
    }

    #[test]
    fn topic_rules() {
        assert!(check_topic("Topic-A_1%x|y").is_ok());
        for bad in ["", "a b", "TBW102", "tópico", &"t".repeat(128)] {
            let e = check_topic(bad).unwrap_err().to_string();
            assert!(e.starts_with("message illegal: "), "{e}");
        }
    }

    #[test]
    fn message_rules() {
        let m = Message::new("T", Bytes::new());
        assert!(check_message(&m, 10)
            .unwrap_err()
            .to_string()
            .contains("empty"));
        let m = Message::new("T", vec![0u8; 11]);
        assert!(check_message(&m, 10)
            .unwrap_err()
            .to_string()
            .contains("11 bytes"));
        assert!(check_message(&Message::new("T", vec![1u8; 10]), 10).is_ok());
    }
}
