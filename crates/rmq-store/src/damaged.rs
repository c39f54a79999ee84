//! CommitLog byte ranges that recovery found damaged (a record that fails its magic, size,
//! CRC or physical-offset check, with valid records after it) and skipped instead of cutting
//! the log there.
//!
//! The list lives in memory only: recovery scans the CommitLog at every start and finds the
//! same ranges again, so nothing new goes to disk and the disk format stays RocketMQ's. It is
//! set once, before the store is shared, and then only read: dispatch jumps over a range
//! instead of decoding it (a damaged record may still parse when its body is what was hit),
//! and a ConsumeQueue unit that points into a range is skipped by reads ("not found"), so no
//! damaged bytes ever reach a consumer. `brokerStatus` reports the totals
//! (`commitLogDamagedRanges`, `commitLogDamagedBytes`).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

/// One damaged range of the CommitLog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DamagedRange {
    /// The CommitLog file holding it (a range never spans files).
    pub file: PathBuf,
    /// Global CommitLog offset of its first byte.
    pub offset: i64,
    /// Its length in bytes.
    pub len: i64,
}

impl DamagedRange {
    /// Global offset just past it.
    #[must_use]
    pub fn end(&self) -> i64 {
        self.offset + self.len
    }
}

/// The damaged ranges, sorted by offset, disjoint.
#[derive(Debug, Default)]
pub struct DamagedRanges {
    /// Fast path for the usual case, no damage: readers skip the lock.
    any: AtomicBool,
    ranges: RwLock<Vec<DamagedRange>>,
}

impl DamagedRanges {
    /// Replace the list (recovery).
    pub fn set(&self, mut ranges: Vec<DamagedRange>) {
        ranges.sort_by_key(|r| r.offset);
        self.any.store(!ranges.is_empty(), Ordering::Release);
        *self.ranges.write().unwrap_or_else(PoisonError::into_inner) = ranges;
    }

    /// A copy of the list.
    #[must_use]
    pub fn list(&self) -> Vec<DamagedRange> {
        self.ranges
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many ranges and how many bytes in all.
    #[must_use]
    pub fn totals(&self) -> (usize, i64) {
        let r = self.ranges.read().unwrap_or_else(PoisonError::into_inner);
        (r.len(), r.iter().map(|d| d.len).sum())
    }

    /// Whether `[offset, offset + len)` touches a damaged range.
    #[must_use]
    pub fn overlaps(&self, offset: i64, len: i64) -> bool {
        if !self.any.load(Ordering::Acquire) {
            return false;
        }
        let end = offset.saturating_add(len.max(1));
        let r = self.ranges.read().unwrap_or_else(PoisonError::into_inner);
        // The first range ending after `offset` is the only candidate (the list is disjoint).
        let i = r.partition_point(|d| d.end() <= offset);
        r.get(i).is_some_and(|d| d.offset < end)
    }

    /// When `offset` is inside a damaged range, the offset just past it.
    #[must_use]
    pub fn skip_from(&self, offset: i64) -> Option<i64> {
        if !self.any.load(Ordering::Acquire) {
            return None;
        }
        let r = self.ranges.read().unwrap_or_else(PoisonError::into_inner);
        let i = r.partition_point(|d| d.end() <= offset);
        r.get(i)
            .filter(|d| d.offset <= offset)
            .map(DamagedRange::end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(offset: i64, len: i64) -> DamagedRange {
        DamagedRange {
            file: PathBuf::from("x"),
            offset,
            len,
        }
    }

    #[test]
    fn lookups() {
        let d = DamagedRanges::default();
        assert!(!d.overlaps(0, 100));
        d.set(vec![range(500, 10), range(100, 20)]);
        assert_eq!(d.totals(), (2, 30));
        assert!(!d.overlaps(0, 100));
        assert!(d.overlaps(90, 11));
        assert!(d.overlaps(119, 1));
        assert!(!d.overlaps(120, 380));
        assert!(d.overlaps(120, 381));
        assert_eq!(d.skip_from(100), Some(120));
        assert_eq!(d.skip_from(119), Some(120));
        assert_eq!(d.skip_from(120), None);
        assert_eq!(d.skip_from(99), None);
        assert_eq!(d.skip_from(505), Some(510));
    }
}
