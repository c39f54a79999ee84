//! Retention and the disk guard of [`MessageStore`]: deleting CommitLog files older than
//! `fileReservedTime` (and the ConsumeQueue and index files below the new minimum), removing
//! ConsumeQueues of expired or unused topics, and refusing writes while the disk is above
//! `diskSpaceWarningLevelRatio`. *When* to delete is the retention scheduler's decision
//! (Python); the `rmq-clean` thread only runs [`MessageStore::check_disk_space`].

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmq_common::time::now_millis;

use super::MessageStore;
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};
use crate::schedule;

impl MessageStore {
    /// Delete CommitLog files older than `fileReservedTime` (any but the newest when
    /// `force`), then the ConsumeQueue and index files below the new minimum. Files still
    /// being read are kept until `destroyMapedFileIntervalForcibly`. Returns files deleted.
    pub fn delete_expired_files(&self, force: bool) -> usize {
        let c = &self.config;
        let n = self.commit_log.queue().delete_expired_by_time(
            now_millis(),
            i64::from(self.file_reserved_time()) * 3_600_000,
            u64::from(c.delete_commit_log_files_interval),
            i64::from(c.destroy_mapped_file_interval_forcibly),
            force,
        );
        if n > 0 {
            self.clean_logics();
        }
        n
    }

    /// Hours a CommitLog file is kept (`fileReservedTime`), as in effect now.
    #[must_use]
    pub fn file_reserved_time(&self) -> u32 {
        self.file_reserved_hours.load(Ordering::Relaxed)
    }

    /// Change `fileReservedTime` (hours) while running; the next
    /// [`delete_expired_files`](Self::delete_expired_files) uses it. The caller checks the
    /// value (the config's range).
    pub fn set_file_reserved_time(&self, hours: u32) {
        self.file_reserved_hours.store(hours, Ordering::Relaxed);
    }

    /// Drop the ConsumeQueues whose every unit points below the CommitLog's minimum offset
    /// (RocketMQ's `cleanExpiredConsumerQueue`, mqadmin `cleanExpiredCQ`): queues of topics
    /// whose messages retention has deleted entirely. The delay topic's queues are kept, and
    /// so are queues that never held a unit. The queue's next offset is forgotten too, so a
    /// later message starts it again at 0. Returns the `(topic, queue id)` removed.
    ///
    /// # Errors
    /// As [`clean_unused_topics`](Self::clean_unused_topics).
    pub fn clean_expired_consume_queues(&self) -> Result<Vec<(String, i32)>> {
        self.remove_consume_queues(|_, cq, min| {
            let last = cq.max_physic_offset();
            last != -1 && last < min
        })
    }

    /// Drop every ConsumeQueue of the topics for which `in_use` is false (RocketMQ's
    /// `cleanUnusedTopic`, mqadmin `cleanUnusedTopic`: the broker passes its topic table, so
    /// the queues of deleted topics go). The delay topic's queues are kept. Returns the
    /// `(topic, queue id)` removed.
    ///
    /// Puts wait meanwhile, and the clean-up first lets dispatch catch up (up to 3 s), so no
    /// unit is in flight to a queue being removed.
    ///
    /// # Errors
    /// Dispatch did not catch up in time (nothing was removed: try again), or a ConsumeQueue
    /// file could not be deleted.
    pub fn clean_unused_topics(&self, in_use: &dyn Fn(&str) -> bool) -> Result<Vec<(String, i32)>> {
        self.remove_consume_queues(|topic, _, _| !in_use(topic))
    }

    /// Remove the ConsumeQueues `(topic, queue, CommitLog min offset)` selects (never the
    /// delay topic's), their files and their next queue offsets, with puts stopped.
    fn remove_consume_queues(
        &self,
        select: impl Fn(&str, &ConsumeQueue, i64) -> bool,
    ) -> Result<Vec<(String, i32)>> {
        self.commit_log.with_puts_stopped(|queue_offsets| {
            for _ in 0..3000 {
                if self.dispatch_behind_bytes() == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let behind = self.dispatch_behind_bytes();
            if behind > 0 {
                return Err(StoreError::ServiceNotAvailable(format!(
                    "dispatch is {behind} bytes behind the CommitLog; nothing was cleaned, try \
                     again in a moment"
                )));
            }
            let min = self.commit_log.min_offset();
            let removed = self
                .consume_queues
                .remove(schedule::SCHEDULE_TOPIC, |topic, cq| select(topic, cq, min));
            let mut names = Vec::with_capacity(removed.len());
            for (topic, queue_id, cq) in removed {
                if let Some(slot) = queue_offsets
                    .get_mut(&topic)
                    .and_then(|next| next.get_mut(queue_id.index()))
                {
                    *slot = 0;
                }
                cq.queue().destroy()?;
                let _ = std::fs::remove_dir(cq.queue().dir());
                if let Some(topic_dir) = cq.queue().dir().parent() {
                    let _ = std::fs::remove_dir(topic_dir); // only once it is empty
                }
                names.push((topic, queue_id.get()));
            }
            names.sort();
            Ok(names)
        })
    }

    fn clean_logics(&self) {
        let min = self.commit_log.min_offset();
        for cq in self.consume_queues.all() {
            cq.delete_expired_file(min);
        }
        self.index.delete_expired_file(min);
    }

    /// Used fraction of the CommitLog's partition.
    #[must_use]
    pub fn disk_used_ratio(&self) -> f64 {
        crate::mmap::disk_used_ratio(self.commit_log.queue().dir()).unwrap_or(1.0)
    }

    /// The disk-full guard (RocketMQ's disk-full running flag): above
    /// `diskSpaceWarningLevelRatio` writes are refused until usage drops again. The store runs
    /// this every `cleanResourceInterval` ms; deciding *what to delete* to get below it is the
    /// retention scheduler's job (Python), through [`delete_expired_files`](Self::delete_expired_files).
    pub fn check_disk_space(&self) {
        let ratio = self.disk_used_ratio() * 100.0;
        let limit = f64::from(self.config.disk_space_warning_level_ratio);
        if ratio > limit {
            if !self.disk_full.swap(true, Ordering::AcqRel) {
                log::error!(
                    "disk is {ratio:.1} % full (> diskSpaceWarningLevelRatio {limit} %): \
                     refusing writes until space is freed"
                );
            }
        } else if self.disk_full.swap(false, Ordering::AcqRel) {
            log::info!("disk is {ratio:.1} % full again: accepting writes");
        }
    }
}
