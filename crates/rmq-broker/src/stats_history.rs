//! Messages put per topic and consumed per (topic, group) over the last minute, hour and day,
//! for VIEW_BROKER_STATS_DATA (315; `mqadmin statsAll`'s in/out TPS and 24-hour columns). The
//! two statistics RocketMQ's `BrokerStatsManager` serves under the names `TOPIC_PUT_NUMS`
//! (key: topic) and `GROUP_GET_NUMS` (key: `topic@group`).
//!
//! Nothing is counted on the send or pull path: the messages put to a topic are the sum of
//! its queues' max offsets, and what a group consumed of a topic the sum of its committed
//! offsets. The broker's sampler records both every 10 s (the last hour kept at that
//! resolution, the last day at one sample an hour); a window compares the figure now with
//! the newest sample at least that old (the oldest one while the broker is younger). So
//! "consumed" counts commits, which trail the pulls by the consumer's commit interval.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};

use crate::state::BrokerState;

/// `Stats.TOPIC_PUT_NUMS`.
pub const TOPIC_PUT_NUMS: &str = "TOPIC_PUT_NUMS";
/// `Stats.GROUP_GET_NUMS`.
pub const GROUP_GET_NUMS: &str = "GROUP_GET_NUMS";

/// How often the broker samples (ms).
pub const SAMPLE_INTERVAL_MS: i64 = 10_000;
const HOUR_MS: i64 = 3_600_000;
const FINE_SAMPLES: usize = 361;
const COARSE_SAMPLES: usize = 25;

type Figures = HashMap<String, u64>;

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

/// The current figure of one statistic, `None` when the broker has no such item (unknown
/// topic, or a group without offsets on the topic).
#[must_use]
pub fn current(b: &BrokerState, name: &str, stats_key: &str) -> Option<u64> {
    match name {
        TOPIC_PUT_NUMS => {
            let config = b.topics.select(stats_key)?;
            let queues = config.read_queue_nums.max(config.write_queue_nums);
            Some(
                (0..queues)
                    .map(|q| {
                        b.store
                            .get_max_offset_in_queue(stats_key, q)
                            .max(0)
                            .unsigned_abs()
                    })
                    .sum(),
            )
        }
        GROUP_GET_NUMS => {
            let (topic, group) = stats_key.split_once('@')?;
            b.offsets.committed_sum(group, topic)
        }
        _ => None,
    }
}

/// Every current figure, for a sample.
fn snapshot(b: &BrokerState) -> Figures {
    let mut figures = Figures::new();
    for topic in b.topics.wrapper().topic_config_table.into_keys() {
        if let Some(v) = current(b, TOPIC_PUT_NUMS, &topic) {
            figures.insert(key(TOPIC_PUT_NUMS, &topic), v);
        }
    }
    for (topic_at_group, queues) in b.offsets.wrapper().offset_table {
        let sum = queues.values().map(|o| o.max(&0).unsigned_abs()).sum();
        figures.insert(key(GROUP_GET_NUMS, &topic_at_group), sum);
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

    /// The statistic over the last `window_ms`, given its figure `now_value` at `now_ms`.
    /// A key absent from the starting sample started at 0 (a topic or group that appeared
    /// since).
    #[must_use]
    pub fn window(
        &self,
        name: &str,
        stats_key: &str,
        now_value: u64,
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
            return WindowStats { sum: 0, tps: 0.0 };
        };
        let before = from
            .figures
            .get(&key(name, stats_key))
            .copied()
            .unwrap_or(0);
        let sum = now_value.saturating_sub(before);
        let elapsed = now_ms - from.at_ms;
        #[expect(clippy::cast_precision_loss, reason = "a rate per second, for display")]
        let tps = if elapsed > 0 {
            sum as f64 * 1000.0 / elapsed as f64
        } else {
            0.0
        };
        WindowStats { sum, tps }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(pairs: &[(&str, u64)]) -> Figures {
        pairs
            .iter()
            .map(|(k, v)| (key(TOPIC_PUT_NUMS, k), *v))
            .collect()
    }

    #[test]
    fn windows_start_at_the_newest_sample_old_enough() {
        let h = StatsHistory::default();
        h.record(0, figures(&[("T", 0)]));
        h.record(50_000, figures(&[("T", 40)]));
        h.record(70_000, figures(&[("T", 100)]));
        // At 120 s: the minute window starts at the 50 s sample (the newest <= 60 s).
        let m = h.window(TOPIC_PUT_NUMS, "T", 160, 120_000, 60_000);
        assert_eq!(m.sum, 120);
        assert!((m.tps - 120.0 / 70.0).abs() < 1e-9);
        // The hour and day windows reach back to the first sample.
        assert_eq!(
            h.window(TOPIC_PUT_NUMS, "T", 160, 120_000, HOUR_MS).sum,
            160
        );
        assert_eq!(
            h.window(TOPIC_PUT_NUMS, "T", 160, 120_000, 24 * HOUR_MS)
                .sum,
            160
        );
        // A topic the samples never saw started at 0.
        assert_eq!(h.window(TOPIC_PUT_NUMS, "New", 7, 120_000, 60_000).sum, 7);
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
        let day = h.window(TOPIC_PUT_NUMS, "T", 30 * 360, now, 24 * HOUR_MS);
        assert_eq!(day.sum, 24 * 360);
        let hour = h.window(TOPIC_PUT_NUMS, "T", 30 * 360, now, HOUR_MS);
        assert_eq!(hour.sum, 360);
    }
}
