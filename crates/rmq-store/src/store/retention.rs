//! Retention and the disk guard of [`MessageStore`]: deleting CommitLog files older than
//! `fileReservedTime`, or unexpired ones when forced (and the ConsumeQueue and index files below
//! the new minimum), never past the retention floor ([`super::floor`]); removing ConsumeQueues
//! of expired or unused topics; and refusing writes while the disk is above
//! `diskSpaceWarningLevelRatio`, with a remark naming what holds the disk. *When* to delete is
//! the retention scheduler's decision (Python); the `rmq-clean` thread only runs
//! [`MessageStore::check_disk_space`].

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmq_common::time::now_millis;

use super::floor::RetentionHold;
use super::MessageStore;
use crate::consume_queue::ConsumeQueue;
use crate::error::{Result, StoreError};
use crate::mapped_file_queue::DeletedFile;
use crate::schedule;

/// Why a pass may delete a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteReason {
    /// Last written more than `fileReservedTime` ago.
    Expired,
    /// Not expired, deleted by a forced pass (disk above `diskSpaceCleanForciblyRatio`).
    Forced,
}

/// What one deletion pass ([`MessageStore::clean_commit_log`]) did.
#[derive(Debug, Clone, Default)]
pub struct CleanReport {
    /// The CommitLog files deleted, oldest first, each with why.
    pub deleted: Vec<(DeletedFile, DeleteReason)>,
    /// The holder that kept the next file, which the pass would otherwise have deleted
    /// (expired, or forced): a message not consumed, not delivered, or not dispatched yet.
    pub held: Option<RetentionHold>,
}

impl CleanReport {
    /// CommitLog offsets the deleted files covered, `[from, to)`.
    #[must_use]
    pub fn deleted_range(&self) -> Option<(i64, i64)> {
        Some((self.deleted.first()?.0.from, self.deleted.last()?.0.to))
    }
}

impl MessageStore {
    /// Delete CommitLog files older than `fileReservedTime` (unexpired ones too when
    /// `force`), then the ConsumeQueue and index files below the new minimum; returns how
    /// many. See [`clean_commit_log`](Self::clean_commit_log).
    pub fn delete_expired_files(&self, force: bool) -> usize {
        self.clean_commit_log(force).deleted.len()
    }

    /// One deletion pass over the oldest CommitLog files (never the newest), then the
    /// ConsumeQueue and index files below the new minimum. A file goes when it ends at or
    /// below the retention floor ([`super::floor`]) and
    ///
    /// * it is expired (last written more than `fileReservedTime` ago) and no pending timer,
    ///   undelivered delay-level message or undispatched record lies in it; or
    /// * `force` (the disk is above `diskSpaceCleanForciblyRatio`), and no subscription group
    ///   has left a message in it unconsumed either (with `cleanUnconsumedFileForciblyEnable`,
    ///   as RocketMQ: only dispatch holds it).
    ///
    /// The pass stops at the first file that stays; files still being read are kept until
    /// `destroyMapedFileIntervalForcibly`.
    pub fn clean_commit_log(&self, force: bool) -> CleanReport {
        let c = &self.config;
        let now = now_millis();
        let expired_ms = i64::from(self.file_reserved_time()) * 3_600_000;
        let ignore_consumers = c.clean_unconsumed_file_forcibly_enable;
        // Each floor is computed at most once per pass, and only when a file needs it.
        let mut undelivered = None;
        let mut unconsumed = None;
        let mut dispatch = None;
        let mut report = CleanReport::default();
        // The reason of each file the closure agreed to (the last may then stay: a reader).
        let mut reasons = Vec::new();
        let deleted = self.commit_log.queue().delete_oldest_while(
            now,
            u64::from(c.delete_commit_log_files_interval),
            i64::from(c.destroy_mapped_file_interval_forcibly),
            |f| {
                let modified = f
                    .last_modified()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                let end = f.file_from_offset() + i64::try_from(f.file_size()).unwrap_or(0);
                let expired = now >= modified.saturating_add(expired_ms);
                let floor = if expired {
                    undelivered
                        .get_or_insert_with(|| self.undelivered_floor())
                        .clone()
                } else if force {
                    if ignore_consumers {
                        dispatch.get_or_insert_with(|| self.dispatch_hold()).clone()
                    } else {
                        let u = undelivered
                            .get_or_insert_with(|| self.undelivered_floor())
                            .clone();
                        let g = unconsumed
                            .get_or_insert_with(|| self.unconsumed_floor())
                            .clone();
                        RetentionHold::lower(u, g)
                    }
                } else {
                    return false;
                };
                match floor {
                    Some(h) if end > h.offset => {
                        report.held = Some(h);
                        false
                    }
                    _ => {
                        reasons.push(if expired {
                            DeleteReason::Expired
                        } else {
                            DeleteReason::Forced
                        });
                        true
                    }
                }
            },
        );
        if force {
            self.holds
                .last_held
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone_from(&report.held);
        }
        if !deleted.is_empty() {
            self.clean_logics();
        }
        report.deleted = deleted.into_iter().zip(reasons).collect();
        report
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

    /// Why a write is refused while the disk is full, and what to do about it.
    pub(super) fn disk_full_remark(&self) -> String {
        let held = self
            .holds
            .last_held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let why = held.map_or_else(String::new, |h| {
            format!(
                "; retention cannot free more without deleting messages still needed by {} \
                 ({})",
                h.holder, h.detail
            )
        });
        format!(
            "disk full: the disk of {} is {:.1} % used, over diskSpaceWarningLevelRatio ({} %), \
             so this broker refuses writes (reads and consumption go on){why}. Writes resume \
             once usage drops: free space on that disk, let the subscription groups consume \
             (add consumers) so retention can delete what they have read, or set \
             cleanUnconsumedFileForciblyEnable=true to let forced deletion drop unconsumed \
             messages as RocketMQ does",
            self.commit_log.queue().dir().display(),
            self.disk_used_ratio() * 100.0,
            self.config.disk_space_warning_level_ratio
        )
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
