//! Timer messages (RocketMQ 5, RIP-43): a message sent with `TIMER_DELIVER_MS` (an epoch
//! time), `TIMER_DELAY_SEC` or `TIMER_DELAY_MS` is delivered to its topic and queue at that
//! time, to the second, and never before.
//!
//! * On put ([`park`], RocketMQ's `HookUtils.transformTimerMessage`) the deliver time is
//!   computed (`TIMER_DELAY_SEC` first, then `TIMER_DELAY_MS`, then `TIMER_DELIVER_MS`), refused
//!   beyond `timerMaxDelaySec` (WHEEL_TIMER_MSG_ILLEGAL) and rounded to its second slot as
//!   RocketMQ does (a time on a whole second belongs to the second before it, since a second
//!   is delivered once it is over); the slot time goes into `TIMER_OUT_MS`, the real topic and
//!   queue into `REAL_TOPIC` / `REAL_QID`, and the message is stored in `rmq_sys_wheel_timer`,
//!   queue 0. A deliver time not in the future is stored as an ordinary message (delivered at
//!   once); a message that also has a delay level (`DELAY` > 0) is a delay-level message and
//!   loses its timer properties ([`crate::schedule`]).
//! * Dispatch gives its ConsumeQueue unit `TIMER_OUT_MS` as tags code ([`out_ms`]).
//! * The store's timer thread ([`service`]) links each unit into the time wheel
//!   ([`wheel`], [`log`], [`engine`]) and, once a second is over, re-puts that second's
//!   messages into their real queue with `TIMER_ENQUEUE_MS` / `TIMER_DEQUEUE_MS` set and
//!   `REAL_TOPIC` / `REAL_QID` removed, as RocketMQ's `TimerMessageStore` does.

pub mod checkpoint;
mod deliver;
pub mod engine;
pub mod log;
pub(crate) mod service;
mod stats;
pub mod wheel;

pub(crate) use stats::TimerStats;

use rmq_common::properties::{edit_properties, find_property, PropertyKey};
use rmq_common::sys_flag::{transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE};

use crate::config::StoreConfig;
use crate::error::{Result, StoreError};
use crate::format::MessageToStore;
use crate::schedule::Parked;

/// Where timer messages wait (`TimerMessageStore.TIMER_TOPIC`), all in queue 0.
pub use rmq_common::topic::TIMER_TOPIC;

/// What the names of [`TIMER_REQUEST_PROPERTIES`] and `TIMER_OUT_MS` start with.
const TIMER_NAME_PREFIX: &[u8] = b"TIMER_";

/// The properties a producer asks for a timer with; a delay-level message loses them.
pub const TIMER_REQUEST_PROPERTIES: [&str; 3] = [
    PropertyKey::TIMER_DELIVER_MS,
    PropertyKey::TIMER_DELAY_SEC,
    PropertyKey::TIMER_DELAY_MS,
];

/// The put side's timer settings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TimerSettings {
    pub(crate) enable: bool,
    pub(crate) max_delay_ms: i64,
    pub(crate) precision_ms: i64,
}

impl TimerSettings {
    pub(crate) fn from_config(c: &StoreConfig) -> Self {
        Self {
            enable: c.timer_wheel_enable,
            max_delay_ms: c.timer_max_delay_sec.saturating_mul(1000),
            precision_ms: i64::from(c.timer_precision_ms.max(1)),
        }
    }

    /// Slots of a new wheel: two rounds of the longest delay.
    pub(crate) fn wheel_slots(&self) -> usize {
        usize::try_from(self.max_delay_ms / self.precision_ms * 2).unwrap_or(usize::MAX)
    }
}

fn prop<'a>(properties: &'a [u8], name: &str) -> Option<&'a str> {
    find_property(properties, name).and_then(|v| std::str::from_utf8(v).ok())
}

/// The second-slot time RocketMQ records in `TIMER_OUT_MS` for a deliver time: rounded down to
/// the precision, and one slot earlier when it falls on a slot boundary (the slot is delivered
/// when it is over).
#[must_use]
pub fn slot_time_ms(deliver_ms: i64, precision_ms: i64) -> i64 {
    if deliver_ms % precision_ms == 0 {
        deliver_ms - precision_ms
    } else {
        deliver_ms - deliver_ms.rem_euclid(precision_ms)
    }
}

/// The deliver time a message asks for (ms), `None` when it has no timer property.
fn requested_deliver_ms(properties: &[u8], now_ms: i64, max_delay_ms: i64) -> Result<Option<i64>> {
    let illegal = || StoreError::WheelTimerMsgIllegal { max_delay_ms };
    let parse = |v: &str| v.trim().parse::<i64>().map_err(|_| illegal());
    if let Some(v) = prop(properties, PropertyKey::TIMER_DELAY_SEC) {
        return Ok(Some(now_ms.saturating_add(parse(v)?.saturating_mul(1000))));
    }
    if let Some(v) = prop(properties, PropertyKey::TIMER_DELAY_MS) {
        return Ok(Some(now_ms.saturating_add(parse(v)?)));
    }
    match prop(properties, PropertyKey::TIMER_DELIVER_MS) {
        Some(v) => parse(v).map(Some),
        None if TIMER_REQUEST_PROPERTIES
            .iter()
            .any(|n| find_property(properties, n).is_some()) =>
        {
            Err(illegal()) // present but not UTF-8
        }
        None => Ok(None),
    }
}

/// The timer parking of `msg` (see the module docs), `None` when it is stored as it is.
///
/// # Errors
/// [`StoreError::WheelTimerMsgIllegal`] for an unparsable or too distant time,
/// [`StoreError::WheelTimerNotEnable`] when timers are switched off.
pub(crate) fn park(
    msg: &MessageToStore<'_>,
    s: &TimerSettings,
    now_ms: i64,
) -> Result<Option<Parked>> {
    // Every put passes here: one scan for the names' common prefix rules out almost every
    // message before the exact look-ups below.
    // Built once: a searcher made per call costs more than the search of ~100 bytes.
    static PREFIX: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(TIMER_NAME_PREFIX));
    if PREFIX.find(msg.properties).is_none()
        || !matches!(
            transaction_value(msg.sys_flag),
            TRANSACTION_NOT_TYPE | TRANSACTION_COMMIT_TYPE
        )
        || msg.topic == TIMER_TOPIC
        || find_property(msg.properties, PropertyKey::TIMER_OUT_MS).is_some()
        || !TIMER_REQUEST_PROPERTIES
            .iter()
            .any(|n| find_property(msg.properties, n).is_some())
    {
        return Ok(None);
    }
    if !s.enable {
        return Err(StoreError::WheelTimerNotEnable);
    }
    let Some(deliver_ms) = requested_deliver_ms(msg.properties, now_ms, s.max_delay_ms)? else {
        return Ok(None);
    };
    if deliver_ms <= now_ms {
        return Ok(None);
    }
    if deliver_ms - now_ms > s.max_delay_ms {
        return Err(StoreError::WheelTimerMsgIllegal {
            max_delay_ms: s.max_delay_ms,
        });
    }
    let out = slot_time_ms(deliver_ms, s.precision_ms).to_string();
    let qid = msg.queue_id.to_string();
    Ok(Some(Parked {
        topic: TIMER_TOPIC,
        queue_id: 0,
        properties: edit_properties(
            msg.properties,
            &[],
            &[
                (PropertyKey::TIMER_OUT_MS, out.as_str()),
                (PropertyKey::REAL_TOPIC, msg.topic),
                (PropertyKey::REAL_QUEUE_ID, qid.as_str()),
            ],
        ),
    }))
}

/// The tags code of a timer-topic unit: its `TIMER_OUT_MS` (the store time when it has none,
/// so a damaged message is delivered at once rather than never).
#[must_use]
pub fn out_ms(properties: &[u8], store_timestamp: i64) -> i64 {
    prop(properties, PropertyKey::TIMER_OUT_MS)
        .and_then(|v| v.parse().ok())
        .unwrap_or(store_timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn every_timer_property_has_the_prefix_the_put_path_scans_for() {
        for name in TIMER_REQUEST_PROPERTIES
            .iter()
            .chain(&[PropertyKey::TIMER_OUT_MS])
        {
            assert!(name.as_bytes().starts_with(TIMER_NAME_PREFIX), "{name}");
        }
    }

    const S: TimerSettings = TimerSettings {
        enable: true,
        max_delay_ms: 60_000,
        precision_ms: 1000,
    };
    const NOW: i64 = 1_700_000_000_500;

    fn msg(props: &[u8]) -> MessageToStore<'_> {
        MessageToStore {
            topic: "T",
            queue_id: 3,
            flag: 0,
            body: b"b",
            properties: props,
            sys_flag: 0,
            born_timestamp: 0,
            born_host: SocketAddr::from(([127, 0, 0, 1], 1)),
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        }
    }

    fn out_of(p: &Parked) -> i64 {
        out_ms(&p.properties, -1)
    }

    #[test]
    fn slot_times_round_as_rocketmq() {
        assert_eq!(slot_time_ms(10_500, 1000), 10_000);
        assert_eq!(slot_time_ms(10_000, 1000), 9_000);
        assert_eq!(slot_time_ms(10_999, 1000), 10_000);
    }

    #[test]
    fn the_three_properties_and_their_precedence() {
        let at = |p: &str| park(&msg(p.as_bytes()), &S, NOW).unwrap().unwrap();
        let p = at("TIMER_DELIVER_MS\u{1}1700000010000\u{2}");
        assert_eq!(out_of(&p), 1_700_000_009_000);
        assert_eq!((p.topic, p.queue_id), (TIMER_TOPIC, 0));
        assert_eq!(
            std::str::from_utf8(&p.properties).unwrap(),
            "TIMER_DELIVER_MS\u{1}1700000010000\u{2}TIMER_OUT_MS\u{1}1700000009000\u{2}\
             REAL_TOPIC\u{1}T\u{2}REAL_QID\u{1}3\u{2}"
        );
        assert_eq!(out_of(&at("TIMER_DELAY_SEC\u{1}3\u{2}")), 1_700_000_003_000);
        assert_eq!(
            out_of(&at("TIMER_DELAY_MS\u{1}2700\u{2}")),
            1_700_000_003_000
        );
        // SEC wins over MS, MS over DELIVER_MS.
        assert_eq!(
            out_of(&at(
                "TIMER_DELIVER_MS\u{1}1700000050000\u{2}TIMER_DELAY_MS\u{1}9000\u{2}\
                 TIMER_DELAY_SEC\u{1}2\u{2}"
            )),
            1_700_000_002_000
        );
        assert_eq!(
            out_of(&at(
                "TIMER_DELIVER_MS\u{1}1700000050000\u{2}TIMER_DELAY_MS\u{1}9000\u{2}"
            )),
            1_700_000_009_000
        );
    }

    #[test]
    fn not_timers_refused_and_switched_off() {
        let none = |p: &str| park(&msg(p.as_bytes()), &S, NOW).unwrap().is_none();
        assert!(none("TAGS\u{1}A\u{2}"));
        assert!(
            none("TIMER_DELIVER_MS\u{1}1700000000000\u{2}"),
            "past: at once"
        );
        assert!(none("TIMER_DELAY_SEC\u{1}0\u{2}"));
        assert!(none("TIMER_DELAY_MS\u{1}-5\u{2}"));
        assert!(
            none("TIMER_DELAY_SEC\u{1}5\u{2}TIMER_OUT_MS\u{1}1\u{2}"),
            "already delivered by the wheel"
        );
        let half = rmq_common::sys_flag::TRANSACTION_PREPARED_TYPE;
        let p = b"TIMER_DELAY_SEC\x015\x02";
        assert!(park(
            &MessageToStore {
                sys_flag: half,
                ..msg(p)
            },
            &S,
            NOW
        )
        .unwrap()
        .is_none());
        let err = |p: &str, s: &TimerSettings| park(&msg(p.as_bytes()), s, NOW).unwrap_err();
        assert!(matches!(
            err("TIMER_DELAY_SEC\u{1}61\u{2}", &S),
            StoreError::WheelTimerMsgIllegal {
                max_delay_ms: 60_000
            }
        ));
        // Exactly the maximum is accepted.
        assert!(!none("TIMER_DELAY_SEC\u{1}60\u{2}"));
        assert!(matches!(
            err("TIMER_DELAY_SEC\u{1}soon\u{2}", &S),
            StoreError::WheelTimerMsgIllegal { .. }
        ));
        let off = TimerSettings { enable: false, ..S };
        assert!(matches!(
            err("TIMER_DELAY_SEC\u{1}5\u{2}", &off),
            StoreError::WheelTimerNotEnable
        ));
    }
}
