//! Latency fault avoidance (`MQFaultStrategy` + `LatencyFaultToleranceImpl`): a broker that
//! answered slowly, or not at all, is avoided for a while, the longer the slower. The tables
//! are RocketMQ's: a send that took at least `LATENCY_MAX[i]` ms keeps the broker out of
//! selection for `NOT_AVAILABLE_DURATION[i]` ms; a failed send counts as 30 s.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Latency thresholds (ms), `latencyMax`.
pub const LATENCY_MAX: [u64; 7] = [50, 100, 550, 1000, 2000, 3000, 15000];
/// Isolation for each threshold (ms), `notAvailableDuration`.
pub const NOT_AVAILABLE_DURATION: [u64; 7] = [0, 0, 30_000, 60_000, 120_000, 180_000, 600_000];
/// What a failed send counts as (ms), `isolation ? 30000 : latency`.
pub const FAILED_SEND_LATENCY: u64 = 30_000;

#[derive(Debug, Clone, Copy)]
struct FaultItem {
    latency_ms: u64,
    available_from: Instant,
}

/// Per-broker availability learnt from send latencies.
#[derive(Debug, Default)]
pub struct LatencyFaultTolerance {
    items: Mutex<HashMap<String, FaultItem>>,
}

impl LatencyFaultTolerance {
    /// Isolation for a send to a broker that took `latency_ms` (`computeNotAvailableDuration`).
    #[must_use]
    pub fn not_available_duration(latency_ms: u64) -> u64 {
        LATENCY_MAX
            .iter()
            .rposition(|&max| latency_ms >= max)
            .map_or(0, |i| NOT_AVAILABLE_DURATION[i])
    }

    /// Record a send to `broker` that took `latency_ms` (or failed, with
    /// [`FAILED_SEND_LATENCY`]).
    pub fn update(&self, broker: &str, latency_ms: u64) {
        self.update_at(broker, latency_ms, Instant::now());
    }

    fn update_at(&self, broker: &str, latency_ms: u64, now: Instant) {
        let item = FaultItem {
            latency_ms,
            available_from: now + Duration::from_millis(Self::not_available_duration(latency_ms)),
        };
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(broker.to_owned(), item);
    }

    /// Whether `broker` may be chosen now.
    #[must_use]
    pub fn is_available(&self, broker: &str) -> bool {
        self.is_available_at(broker, Instant::now())
    }

    fn is_available_at(&self, broker: &str, now: Instant) -> bool {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(broker)
            .is_none_or(|i| now >= i.available_from)
    }

    /// Forget what is known about `broker`.
    pub fn remove(&self, broker: &str) {
        self.items
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(broker);
    }

    /// Of the brokers currently avoided, the one that becomes available first, preferring
    /// lower latency (`pickOneAtLeast`): used when every broker is avoided.
    #[must_use]
    pub fn pick_one_at_least(&self) -> Option<String> {
        let items = self.items.lock().unwrap_or_else(PoisonError::into_inner);
        items
            .iter()
            .min_by_key(|(_, i)| (i.available_from, i.latency_ms))
            .map(|(b, _)| b.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_follow_rocketmqs_table() {
        for (latency, isolation) in [
            (0, 0),
            (49, 0),
            (100, 0),
            (549, 0),
            (550, 30_000),
            (999, 30_000),
            (1000, 60_000),
            (2500, 120_000),
            (3000, 180_000),
            (FAILED_SEND_LATENCY, 600_000),
        ] {
            assert_eq!(
                LatencyFaultTolerance::not_available_duration(latency),
                isolation,
                "latency {latency}"
            );
        }
    }

    #[test]
    fn a_slow_broker_is_avoided_until_its_isolation_ends() {
        let f = LatencyFaultTolerance::default();
        let t0 = Instant::now();
        f.update_at("a", 10, t0);
        f.update_at("b", 1000, t0);
        assert!(f.is_available_at("a", t0));
        assert!(!f.is_available_at("b", t0));
        assert!(!f.is_available_at("b", t0 + Duration::from_millis(59_999)));
        assert!(f.is_available_at("b", t0 + Duration::from_secs(60)));
        assert!(f.is_available_at("never-seen", t0));
        // Among the avoided, the one free soonest.
        f.update_at("c", 550, t0);
        assert_eq!(f.pick_one_at_least().as_deref(), Some("a"));
        f.remove("a");
        assert_eq!(f.pick_one_at_least().as_deref(), Some("c"));
    }
}
