//! Broker-wide put and get counters and the rates derived from them (RocketMQ's
//! `StoreStatsService` TPS figures and `BrokerStats` day totals), for GET_BROKER_RUNTIME_INFO
//! (`mqadmin clusterList`, `brokerStatus`).
//!
//! The send and pull paths only add to atomics. Once a second the broker's sampler task
//! copies the counters into a ring of the last ten minutes of snapshots; a rate over N
//! seconds compares the live counters with the newest snapshot at least N seconds old (the
//! oldest one while the broker is younger than that, so a fresh broker already reports what
//! it has done). The day totals roll over at midnight UTC.
//!
//! [`BrokerStats::items`] holds the per-topic and per-group counters (RocketMQ's
//! `BrokerStatsManager` tables, see [`crate::stats_items`]).
//!
//! Read API (for `/metrics` and the admin codes): [`BrokerStats::totals`] (broker-wide
//! counters since start), [`BrokerStats::rates`] (per-second rates over a window),
//! [`BrokerStats::runtime_info`] (GET_BROKER_RUNTIME_INFO's entries) and
//! `items.<table>.snapshot()` / `items.table(name)` (per topic / `topic@group`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::stats_items::StatsItems;

/// Snapshots kept: ten minutes at one a second, plus the one the ten-minute rate starts at.
const MAX_SAMPLES: usize = 601;
const DAY_MS: i64 = 86_400_000;

/// Upper bounds (ms, exclusive) of the put-latency buckets, as RocketMQ prints them.
const PUT_TIME_BOUNDS_MS: [u64; 12] = [
    1, 10, 50, 100, 200, 500, 1000, 2000, 3000, 4000, 5000, 10_000,
];
const PUT_TIME_LABELS: [&str; 13] = [
    "[<=0ms]",
    "[0~10ms]",
    "[10~50ms]",
    "[50~100ms]",
    "[100~200ms]",
    "[200~500ms]",
    "[500ms~1s]",
    "[1~2s]",
    "[2~3s]",
    "[3~4s]",
    "[4~5s]",
    "[5~10s]",
    "[10s~]",
];

/// Broker-wide counters since the broker started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Messages stored.
    pub put: u64,
    /// Pulls that found messages.
    pub found: u64,
    /// Pulls that found none.
    pub miss: u64,
    /// Messages handed to consumers.
    pub transferred: u64,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    at_ms: i64,
    counts: Counts,
}

#[derive(Debug, Default)]
struct DayTotals {
    day: i64,
    put_yesterday_morning: u64,
    put_today_morning: u64,
    get_yesterday_morning: u64,
    get_today_morning: u64,
}

/// The counters of one broker.
#[derive(Debug)]
pub struct BrokerStats {
    /// Per-topic and per-group tables (`TOPIC_PUT_NUMS` ...).
    pub items: StatsItems,
    boot_ms: i64,
    put_msgs: AtomicU64,
    put_failed: AtomicU64,
    put_time_max_ms: AtomicU64,
    put_time_buckets: [AtomicU64; 13],
    get_found: AtomicU64,
    get_miss: AtomicU64,
    get_transferred: AtomicU64,
    get_time_max_ms: AtomicU64,
    samples: Mutex<VecDeque<Sample>>,
    days: Mutex<DayTotals>,
}

/// Rates (per second) over one window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    /// Messages stored.
    pub put: f64,
    /// Pulls that found messages.
    pub found: f64,
    /// Pulls that found none.
    pub miss: f64,
    /// Messages handed to consumers.
    pub transferred: f64,
}

impl BrokerStats {
    /// Counters at zero, the first snapshot taken at `now_ms` (the broker's start);
    /// `cluster` keys the `BROKER_*` items.
    #[must_use]
    pub fn new(now_ms: i64, cluster: &str) -> Self {
        let first = Sample {
            at_ms: now_ms,
            counts: Counts::default(),
        };
        Self {
            items: StatsItems::new(cluster),
            boot_ms: now_ms,
            put_msgs: AtomicU64::new(0),
            put_failed: AtomicU64::new(0),
            put_time_max_ms: AtomicU64::new(0),
            put_time_buckets: Default::default(),
            get_found: AtomicU64::new(0),
            get_miss: AtomicU64::new(0),
            get_transferred: AtomicU64::new(0),
            get_time_max_ms: AtomicU64::new(0),
            samples: Mutex::new(VecDeque::from([first])),
            days: Mutex::new(DayTotals {
                day: now_ms.div_euclid(DAY_MS),
                ..DayTotals::default()
            }),
        }
    }

    /// `msgs` messages were stored by one send that took `elapsed`.
    pub fn on_put(&self, msgs: u64, elapsed: Duration) {
        self.put_msgs.fetch_add(msgs, Ordering::Relaxed);
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.put_time_max_ms.fetch_max(ms, Ordering::Relaxed);
        let bucket = PUT_TIME_BOUNDS_MS
            .iter()
            .position(|&bound| ms < bound)
            .unwrap_or(PUT_TIME_BOUNDS_MS.len());
        self.put_time_buckets[bucket].fetch_add(1, Ordering::Relaxed);
    }

    /// A send failed in the store.
    pub fn on_put_failed(&self) {
        self.put_failed.fetch_add(1, Ordering::Relaxed);
    }

    /// A pull read `msgs` messages (0: it found none) in `elapsed`.
    pub fn on_get(&self, msgs: u64, elapsed: Duration) {
        if msgs > 0 {
            self.get_found.fetch_add(1, Ordering::Relaxed);
            self.get_transferred.fetch_add(msgs, Ordering::Relaxed);
        } else {
            self.get_miss.fetch_add(1, Ordering::Relaxed);
        }
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.get_time_max_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// The broker-wide counters now.
    #[must_use]
    pub fn totals(&self) -> Counts {
        self.counts()
    }

    fn counts(&self) -> Counts {
        Counts {
            put: self.put_msgs.load(Ordering::Relaxed),
            found: self.get_found.load(Ordering::Relaxed),
            miss: self.get_miss.load(Ordering::Relaxed),
            transferred: self.get_transferred.load(Ordering::Relaxed),
        }
    }

    /// Take the once-a-second snapshot, and roll the day totals over when `now_ms` is on a
    /// new (UTC) day.
    pub fn sample(&self, now_ms: i64) {
        let counts = self.counts();
        {
            let mut samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
            samples.push_back(Sample {
                at_ms: now_ms,
                counts,
            });
            while samples.len() > MAX_SAMPLES {
                samples.pop_front();
            }
        }
        let mut days = self.days.lock().unwrap_or_else(PoisonError::into_inner);
        let day = now_ms.div_euclid(DAY_MS);
        if day != days.day {
            days.day = day;
            days.put_yesterday_morning = days.put_today_morning;
            days.get_yesterday_morning = days.get_today_morning;
            days.put_today_morning = counts.put;
            days.get_today_morning = counts.transferred;
        }
    }

    /// Rates over the last `window_s` seconds, up to `now_ms` (see the module doc).
    #[must_use]
    pub fn rates(&self, now_ms: i64, window_s: i64) -> Rates {
        let now = self.counts();
        let since = {
            let samples = self.samples.lock().unwrap_or_else(PoisonError::into_inner);
            let start = now_ms - window_s * 1000;
            samples
                .iter()
                .rev()
                .find(|s| s.at_ms <= start)
                .or_else(|| samples.front())
                .copied()
        };
        let Some(since) = since else {
            return Rates {
                put: 0.0,
                found: 0.0,
                miss: 0.0,
                transferred: 0.0,
            };
        };
        #[expect(clippy::cast_precision_loss, reason = "a rate per second, for display")]
        let rate = |a: u64, b: u64| {
            let ms = now_ms - since.at_ms;
            if ms <= 0 {
                0.0
            } else {
                a.saturating_sub(b) as f64 * 1000.0 / ms as f64
            }
        };
        Rates {
            put: rate(now.put, since.counts.put),
            found: rate(now.found, since.counts.found),
            miss: rate(now.miss, since.counts.miss),
            transferred: rate(now.transferred, since.counts.transferred),
        }
    }

    /// The runtime-info entries these counters give, at `now_ms`: `putTps`, `getFoundTps`,
    /// `getMissTps`, `getTransferedTps` (each "10 s, 60 s, 600 s" rates, space-separated),
    /// `getTotalTps`, the day totals (`msgPutTotalTodayNow` ...), the put latency figures and
    /// `runtime`.
    #[must_use]
    pub fn runtime_info(&self, now_ms: i64) -> Vec<(&'static str, String)> {
        let windows = [10, 60, 600].map(|w| self.rates(now_ms, w));
        let joined = |f: fn(&Rates) -> f64| {
            windows
                .iter()
                .map(|r| java_double(f(r)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let now = self.counts();
        let days = self.days.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = vec![
            ("putTps", joined(|r| r.put)),
            ("getFoundTps", joined(|r| r.found)),
            ("getMissTps", joined(|r| r.miss)),
            ("getTransferedTps", joined(|r| r.transferred)),
            ("getTotalTps", joined(|r| r.found + r.miss)),
            ("msgPutTotalTodayNow", now.put.to_string()),
            (
                "msgPutTotalTodayMorning",
                days.put_today_morning.to_string(),
            ),
            (
                "msgPutTotalYesterdayMorning",
                days.put_yesterday_morning.to_string(),
            ),
            ("msgGetTotalTodayNow", now.transferred.to_string()),
            (
                "msgGetTotalTodayMorning",
                days.get_today_morning.to_string(),
            ),
            (
                "msgGetTotalYesterdayMorning",
                days.get_yesterday_morning.to_string(),
            ),
        ];
        drop(days);
        let distribution: Vec<String> = PUT_TIME_LABELS
            .iter()
            .zip(&self.put_time_buckets)
            .map(|(label, n)| format!("{label}:{}", n.load(Ordering::Relaxed)))
            .collect();
        out.extend([
            (
                "putMessageEntireTimeMax",
                self.put_time_max_ms.load(Ordering::Relaxed).to_string(),
            ),
            (
                "putMessageFailedTimes",
                self.put_failed.load(Ordering::Relaxed).to_string(),
            ),
            ("putMessageDistributeTime", distribution.join(" ")),
            (
                "getMessageEntireTimeMax",
                self.get_time_max_ms.load(Ordering::Relaxed).to_string(),
            ),
            ("runtime", format_runtime(now_ms - self.boot_ms)),
        ]);
        out
    }
}

/// A rate as Java's `Double.toString` writes it for the values seen here (`0.0`, `12.5`).
fn java_double(v: f64) -> String {
    let s = format!("{v}");
    if s.contains(['.', 'e', 'N', 'i']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// `[ 0 days, 1 hours, 2 minutes, 3 seconds ]` (`StoreStatsService.getFormatRuntime`).
fn format_runtime(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    format!(
        "[ {} days, {} hours, {} minutes, {} seconds ]",
        s / 86_400,
        s % 86_400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(info: &'a [(&'static str, String)], key: &str) -> &'a str {
        &info.iter().find(|(k, _)| *k == key).unwrap().1
    }

    #[test]
    fn rates_use_the_snapshot_a_window_ago_or_the_oldest() {
        let s = BrokerStats::new(1_000_000, "C");
        s.on_put(10, Duration::from_millis(3));
        s.sample(1_001_000);
        s.on_put(20, Duration::from_millis(60));
        s.on_get(5, Duration::ZERO);
        s.on_get(0, Duration::ZERO);
        // 2 s after boot: every window starts at the boot snapshot (30 msgs in 2 s).
        let r = s.rates(1_002_000, 10);
        assert!((r.put - 15.0).abs() < 1e-9, "{r:?}");
        assert!((r.transferred - 2.5).abs() < 1e-9);
        assert!((r.found - 0.5).abs() < 1e-9 && (r.miss - 0.5).abs() < 1e-9);
        // A 1 s window starts at the sample taken at 1 001 000: only the 20 later msgs.
        assert!((s.rates(1_002_000, 1).put - 20.0).abs() < 1e-9);

        let info = s.runtime_info(1_002_000);
        let put_tps: Vec<f64> = get(&info, "putTps")
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect();
        assert_eq!(put_tps, vec![15.0, 15.0, 15.0]);
        assert_eq!(get(&info, "msgPutTotalTodayNow"), "30");
        assert_eq!(get(&info, "msgGetTotalTodayNow"), "5");
        assert_eq!(get(&info, "getTotalTps"), "1.0 1.0 1.0");
        assert_eq!(get(&info, "putMessageEntireTimeMax"), "60");
        assert!(get(&info, "putMessageDistributeTime")
            .starts_with("[<=0ms]:0 [0~10ms]:1 [10~50ms]:0 [50~100ms]:1 "));
        assert_eq!(
            get(&info, "runtime"),
            "[ 0 days, 0 hours, 0 minutes, 2 seconds ]"
        );
    }

    #[test]
    fn day_totals_roll_over_at_midnight() {
        let s = BrokerStats::new(DAY_MS - 5000, "C");
        s.on_put(7, Duration::ZERO);
        s.on_get(3, Duration::ZERO);
        s.sample(DAY_MS + 1000);
        s.on_put(2, Duration::ZERO);
        let info = s.runtime_info(DAY_MS + 2000);
        assert_eq!(get(&info, "msgPutTotalTodayMorning"), "7");
        assert_eq!(get(&info, "msgPutTotalYesterdayMorning"), "0");
        assert_eq!(get(&info, "msgPutTotalTodayNow"), "9");
        assert_eq!(get(&info, "msgGetTotalTodayMorning"), "3");
        s.sample(2 * DAY_MS + 1);
        let info = s.runtime_info(2 * DAY_MS + 2);
        assert_eq!(get(&info, "msgPutTotalYesterdayMorning"), "7");
        assert_eq!(get(&info, "msgPutTotalTodayMorning"), "9");
    }

    #[test]
    fn the_ring_keeps_ten_minutes() {
        let s = BrokerStats::new(0, "C");
        for i in 1..=1000 {
            s.on_put(1, Duration::ZERO);
            s.sample(i * 1000);
        }
        assert_eq!(s.samples.lock().unwrap().len(), MAX_SAMPLES);
        assert!((s.rates(1_000_000, 600).put - 1.0).abs() < 1e-9);
    }
}
