//! Trimming the CommitLog's page cache (`pageCacheTailCommitLog`): which flushed pages go back
//! to the kernel, run by the `rmq-page-cache` thread.
//!
//! Why: an append into a page the page cache does not hold yet makes the kernel allocate
//! and zero one. Where free memory is fresh (a VM whose host takes freed pages back, a
//! machine that has not filled its RAM yet) that costs several times the copy itself: on the
//! `polyglot` VM 7–8 µs of CPU per 4 KiB page against 2.5–3 µs for a page the kernel just got
//! back, about half of a batched message's broker CPU (benches/RESULTS.md, issue 18). Pages
//! given back as the log moves on are the ones the next appends get, still warm, and the
//! sooner they come back the warmer: the thread trims every 10 ms while the log grows.
//!
//! What stays: the last `pageCacheTailCommitLog` bytes behind the flush position (tail readers,
//! a slave just behind, pulls held for new messages), and everything from the oldest record
//! that dispatch or a subscription group still has to read ([`MessageStore::unconsumed_floor`]),
//! up to RocketMQ's own bound of what is in memory: `accessMessageInMemoryMaxRatio` of RAM
//! behind the end, past which the pull path already treats messages as on disk. Only flushed
//! pages go, so nothing is written back here, and the bytes stay in the file: a reader of a
//! dropped page (a new group from the first offset, a query by key) reads it from disk.

use super::floor::RetentionHold;
use super::MessageStore;

impl MessageStore {
    /// Bytes behind the end of the CommitLog that RocketMQ counts as in memory
    /// (`accessMessageInMemoryMaxRatio` of RAM).
    pub(super) fn in_memory_bytes(&self) -> i64 {
        let share = u128::from(self.memory_bytes)
            * u128::from(self.config.access_message_in_memory_max_ratio)
            / 100;
        i64::try_from(share).unwrap_or(i64::MAX)
    }

    /// The CommitLog offset below which cached pages may go (see the module docs); `None`
    /// when trimming is off or nothing is old enough.
    #[must_use]
    pub fn page_cache_floor(&self) -> Option<i64> {
        let tail = i64::try_from(self.config.page_cache_tail_commit_log).unwrap_or(i64::MAX);
        if tail == 0 {
            return None;
        }
        let q = self.commit_log.queue();
        let mut keep_from = q.flushed_where().saturating_sub(tail);
        if let Some(needed) = RetentionHold::lower(self.dispatch_hold(), self.unconsumed_floor()) {
            keep_from = keep_from.min(needed.offset);
        }
        let keep_from = keep_from.max(q.max_offset().saturating_sub(self.in_memory_bytes()));
        (keep_from > 0).then_some(keep_from)
    }

    /// Give the pages below [`page_cache_floor`](Self::page_cache_floor) back to the kernel;
    /// returns the bytes given back.
    ///
    /// # Errors
    /// The OS error of the first file that refused; its pages only stay cached.
    pub(super) fn trim_page_cache(&self) -> crate::error::Result<usize> {
        match self.page_cache_floor() {
            Some(floor) => self.commit_log.queue().drop_cached_below(floor),
            None => Ok(0),
        }
    }
}
