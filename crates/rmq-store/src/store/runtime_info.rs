//! Figures [`MessageStore`] reports for `brokerStatus` (RocketMQ's `getRuntimeInfo`):
//! put counters, offsets, disk use, pool state, how far the slaves lag (on a master), the
//! CommitLog ranges recovery found damaged and, with the timer wheel on, the wheel's figures.

use std::sync::atomic::Ordering;

use rmq_common::time::now_millis;

use super::MessageStore;

impl MessageStore {
    /// Figures for `brokerStatus`-style reporting.
    #[must_use]
    pub fn runtime_info(&self) -> Vec<(&'static str, String)> {
        let (damaged_ranges, damaged_bytes) = self.commit_log.damaged().totals();
        let mut info = vec![
            (
                "putMessageTimesTotal",
                self.put_times.load(Ordering::Relaxed).to_string(),
            ),
            (
                "putMessageSizeTotal",
                self.put_bytes.load(Ordering::Relaxed).to_string(),
            ),
            ("commitLogMinOffset", self.get_min_phy_offset().to_string()),
            ("commitLogMaxOffset", self.get_max_phy_offset().to_string()),
            (
                "commitLogFlushedOffset",
                self.get_flushed_phy_offset().to_string(),
            ),
            (
                "dispatchBehindBytes",
                self.dispatch_behind_bytes().to_string(),
            ),
            (
                "commitLogDiskRatio",
                format!("{:.4}", self.disk_used_ratio()),
            ),
            (
                "diskFull",
                self.disk_full.load(Ordering::Relaxed).to_string(),
            ),
            ("transientStorePoolActive", self.pool.is_some().to_string()),
            (
                "remainTransientStoreBufferNumbs",
                self.pool
                    .as_ref()
                    .map_or(0, |p| p.available_buffer_nums())
                    .to_string(),
            ),
            (
                "transientStorePoolLocked",
                self.pool
                    .as_ref()
                    .is_some_and(|p| p.is_locked())
                    .to_string(),
            ),
            ("lastExitOk", self.last_exit_ok.to_string()),
            (
                "pageCacheLockTimeMills",
                self.commit_log.lock_time_millis().to_string(),
            ),
            (
                "earliestMessageTimeStamp",
                self.earliest_message_time().to_string(),
            ),
            (
                "consumeQueueDiskRatio",
                format!(
                    "{:.4}",
                    crate::mmap::disk_used_ratio(&self.root.join("consumequeue"))
                        .or_else(|_| crate::mmap::disk_used_ratio(&self.root))
                        .unwrap_or(1.0)
                ),
            ),
            (
                "remainHowManyDataToFlush",
                human_readable_bytes(
                    (self.get_max_phy_offset() - self.get_flushed_phy_offset()).max(0),
                ),
            ),
            ("commitLogDirCapacity", self.dir_capacity()),
            ("commitLogDamagedRanges", damaged_ranges.to_string()),
            ("commitLogDamagedBytes", damaged_bytes.to_string()),
        ];
        if self.ha.role() != crate::config::BrokerRole::Slave {
            // RocketMQ's MessageStore.slaveFallBehindMuch: what the furthest slave lacks.
            let behind = self.get_max_phy_offset() - self.ha.transfer.acked();
            info.push(("slaveFallBehindMuch", behind.max(0).to_string()));
        }
        info.extend(self.check_runtime_info());
        if self.config.timer_wheel_enable {
            let queue_max = self.get_max_offset_in_queue(crate::timer::TIMER_TOPIC, 0);
            info.extend(self.timer_stats.runtime_info(now_millis(), queue_max));
        }
        info
    }

    /// What the timer thread publishes about itself.
    pub(crate) fn timer_stats(&self) -> &crate::timer::TimerStats {
        &self.timer_stats
    }

    /// `Total : 1.8 TiB, Free : 1.2 TiB.` for the store root (as RocketMQ's runtime info).
    fn dir_capacity(&self) -> String {
        match crate::mmap::disk_space(&self.root) {
            Ok(d) => format!(
                "Total : {}, Free : {}.",
                human_readable_bytes(i64::try_from(d.total).unwrap_or(i64::MAX)),
                human_readable_bytes(i64::try_from(d.available).unwrap_or(i64::MAX))
            ),
            Err(e) => format!("unknown ({e})"),
        }
    }
}

/// Bytes in binary units as RocketMQ's `MixAll.humanReadableByteCount(bytes, false)` writes
/// them: `512 B`, `1.5 KiB`, `3.0 GiB`.
#[must_use]
pub fn human_readable_bytes(bytes: i64) -> String {
    const UNIT: f64 = 1024.0;
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[expect(clippy::cast_precision_loss, reason = "printed with one decimal")]
    let b = bytes as f64;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a log of a value >= 1024, clamped to 1..=6"
    )]
    let exp = ((b.ln() / UNIT.ln()) as usize).clamp(1, 6);
    let prefix = &"KMGTPE"[exp - 1..exp];
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_possible_wrap,
        reason = "exp is in 1..=6"
    )]
    let scaled = b / UNIT.powi(exp as i32);
    format!("{scaled:.1} {prefix}iB")
}
