//! The per-topic and per-group statistics of [`crate::stats_items`] over the last minute,
//! hour and day, for VIEW_BROKER_STATS_DATA (315; `mqadmin statsAll`'s in/out TPS and 24-hour
//! columns) and GET_CONSUME_STATS's `consumeTps`, as RocketMQ's `StatsItem` computes them.
//!
//! The broker's sampler copies every item's totals every 10 s (the last hour kept at that
//! resolution, the last day at one sample an hour); a window compares the totals now with the
//! newest sample at least that old (the oldest one while the broker is younger): `sum` is the
//! value added since, `tps` that per second, `avgpt` the value per call (messages per send or
//! pull for the `*_NUMS` statistics).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use crate::state::BrokerState;
#[cfg(test)]
use crate::stats_items::TOPIC_PUT_NUMS;
use crate::stats_items::{ItemTotals, STATS_NAMES};

/// How often the broker samples (ms).
pub const SAMPLE_INTERVAL_MS: i64 = 10_000;
const HOUR_MS: i64 = 3_600_000;
const FINE_SAMPLES: usize = 361;
const COARSE_SAMPLES: usize = 25;

type Figures = HashMap<String, ItemTotals>;

struct Sample {
    at_ms: i64,
    figures: Figures,
}

/// One window's figures, as `BrokerStatsItem` carries them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowStats {
    /// Messages in the window.
    pub sum: u64,
    /// Messages per second over the window.
    pub tps: f64,
    /// Value per call over the window (0 when no call).
    pub avgpt: f64,
}

/// The sampled history.
#[derive(Default)]
pub struct StatsHistory {
    fine: Mutex<VecDeque<Sample>>,
    coarse: Mutex<VecDeque<Sample>>,
}

fn key(name: &str, stats_key: &str) -> String {
    format!("{name}\u{1}{stats_key}")
}

/// The current totals of one statistic item, `None` when nothing was counted under it
/// since the broker started (or `name` is not a statistic rmq keeps).
#[must_use]
pub fn current(b: &BrokerState, name: &str, stats_key: &str) -> Option<ItemTotals> {
    b.stats.items.table(name)?.get(stats_key)
}

/// Every item's totals, for a sample.
fn snapshot(b: &BrokerState) -> Figures {
    let mut figures = Figures::new();
    for name in STATS_NAMES {
        if let Some(table) = b.stats.items.table(name) {
            for (k, totals) in table.snapshot() {
                figures.insert(key(name, &k), totals);
            }
        }
    }
    figures
}

impl StatsHistory {
    /// Record the broker's figures as of `now_ms` (every [`SAMPLE_INTERVAL_MS`]).
    pub fn sample(&self, b: &BrokerState, now_ms: i64) {
        self.record(now_ms, snapshot(b));
    }

    fn record(&self, now_ms: i64, figures: Figures) {
        let mut coarse = self.coarse.lock().unwrap_or_else(PoisonError::into_inner);
        if coarse.back().is_none_or(|s| now_ms - s.at_ms >= HOUR_MS) {
            coarse.push_back(Sample {
                at_ms: now_ms,
                figures: figures.clone(),
            });
            while coarse.len() > COARSE_SAMPLES {
                coarse.pop_front();
            }
        }
        drop(coarse);
        let mut fine = self.fine.lock().unwrap_or_else(PoisonError::into_inner);
        fine.push_back(Sample {
            at_ms: now_ms,
            figures,
        });
        while fine.len() > FINE_SAMPLES {
            fine.pop_front();
        }
    }

    /// The statistic over the last `window_ms`, given its totals `now_value` at `now_ms`.
    /// A key absent from the starting sample started at 0 (a topic or group that appeared
    /// since).
    #[must_use]
    pub fn window(
        &self,
        name: &str,
        stats_key: &str,
        now_value: ItemTotals,
        now_ms: i64,
        window_ms: i64,
    ) -> WindowStats {
        let samples = if window_ms > HOUR_MS {
            &self.coarse
        } else {
            &self.fine
        };
        let samples = samples.lock().unwrap_or_else(PoisonError::into_inner);
        let start = now_ms - window_ms;
        let Some(from) = samples
            .iter()
            .rev()
            .find(|s| s.at_ms <= start)
            .or_else(|| samples.front())
        else {
            return WindowStats {
                sum: 0,
                tps: 0.0,
                avgpt: 0.0,
            };
        };
        let before = from
            .figures
            .get(&key(name, stats_key))
            .copied()
            .unwrap_or_default();
        let sum = now_value.value.saturating_sub(before.value);
        let calls = now_value.times.saturating_sub(before.times);
        let elapsed = now_ms - from.at_ms;
        #[expect(clippy::cast_precision_loss, reason = "a rate per second, for display")]
        let tps = if elapsed > 0 {
            sum as f64 * 1000.0 / elapsed as f64
        } else {
            0.0
        };
        #[expect(clippy::cast_precision_loss, reason = "an average, for display")]
        let avgpt = if calls > 0 {
            sum as f64 / calls as f64
        } else {
            0.0
        };
        WindowStats { sum, tps, avgpt }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(pairs: &[(&str, u64)]) -> Figures {
        pairs
            .iter()
            .map(|(k, v)| (key(TOPIC_PUT_NUMS, k), t(*v, *v / 2)))
            .collect()
    }

    fn t(value: u64, times: u64) -> ItemTotals {
        ItemTotals { value, times }
    }

    #[test]
    fn windows_start_at_the_newest_sample_old_enough() {
        let h = StatsHistory::default();
        h.record(0, figures(&[("T", 0)]));
        h.record(50_000, figures(&[("T", 40)]));
        h.record(70_000, figures(&[("T", 100)]));
        // At 120 s: the minute window starts at the 50 s sample (the newest <= 60 s).
        let m = h.window(TOPIC_PUT_NUMS, "T", t(160, 80), 120_000, 60_000);
        assert_eq!(m.sum, 120);
        assert!((m.tps - 120.0 / 70.0).abs() < 1e-9);
        assert!((m.avgpt - 2.0).abs() < 1e-9, "{m:?}");
        // The hour and day windows reach back to the first sample.
        assert_eq!(
            h.window(TOPIC_PUT_NUMS, "T", t(160, 80), 120_000, HOUR_MS)
                .sum,
            160
        );
        assert_eq!(
            h.window(TOPIC_PUT_NUMS, "T", t(160, 80), 120_000, 24 * HOUR_MS)
                .sum,
            160
        );
        // A topic the samples never saw started at 0.
        assert_eq!(
            h.window(TOPIC_PUT_NUMS, "New", t(7, 1), 120_000, 60_000)
                .sum,
            7
        );
    }

    #[test]
    fn the_day_keeps_one_sample_an_hour() {
        let h = StatsHistory::default();
        for i in 0..=(30 * 360) {
            h.record(
                i * SAMPLE_INTERVAL_MS,
                figures(&[("T", u64::try_from(i).unwrap())]),
            );
        }
        assert_eq!(h.fine.lock().unwrap().len(), FINE_SAMPLES);
        assert_eq!(h.coarse.lock().unwrap().len(), COARSE_SAMPLES);
        let now = 30 * HOUR_MS;
        let day = h.window(TOPIC_PUT_NUMS, "T", t(30 * 360, 0), now, 24 * HOUR_MS);
        assert_eq!(day.sum, 24 * 360);
        let hour = h.window(TOPIC_PUT_NUMS, "T", t(30 * 360, 0), now, HOUR_MS);
        assert_eq!(hour.sum, 360);
    }
}
