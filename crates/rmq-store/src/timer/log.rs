//! The timer log (RIP-43's `timerlog/`): an append-only sequence of fixed-size entries, one per
//! timer message linked into the wheel (and one more each time a far-off timer goes round the
//! wheel again). Each entry points back to the previous entry of the same wheel slot, so a
//! slot's chain is walked from its `last` position without any index in memory. Files are
//! named by their start offset, like CommitLog files, and a file is deleted once no wheel slot
//! still to be read points into it.
//!
//! Entry layout (56 bytes, big-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | pos: the entry's own log position (a stale or foreign entry does not match) |
//! | 8..16 | prev: position of the previous entry of the same slot, -1 for the first |
//! | 16..24 | slot: the wheel second the entry is linked into |
//! | 24..32 | delayed: the timer's second (TIMER_OUT_MS / precision); above `slot` when the entry only waits for the wheel to come round |
//! | 32..40 | offset_py: CommitLog offset of the parked message |
//! | 40..48 | queue_offset: its unit in the `rmq_sys_wheel_timer` ConsumeQueue |
//! | 48..52 | size_py: size of the parked record |
//! | 52..56 | CRC32 of bytes 0..52 (sign bit cleared, as RocketMQ's body CRC) |

use std::path::PathBuf;

use crate::error::{Result, StoreError};
use crate::mapped_file_queue::MappedFileQueue;

/// Bytes per entry.
pub const ENTRY_SIZE: usize = 56;
const ENTRY_I64: i64 = 56;

/// Default size of one timer-log file: 1 Mi entries (56 MiB).
pub const DEFAULT_FILE_SIZE: usize = ENTRY_SIZE << 20;

/// One timer-log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerEntry {
    /// Its own position.
    pub pos: i64,
    /// Previous entry of the same slot (-1: none).
    pub prev: i64,
    /// Wheel second it is linked into.
    pub slot: i64,
    /// The second it is due.
    pub delayed: i64,
    /// CommitLog offset of the parked message.
    pub offset_py: i64,
    /// ConsumeQueue offset of the parked message in the timer topic.
    pub queue_offset: i64,
    /// Record size of the parked message.
    pub size_py: i32,
}

impl TimerEntry {
    /// Encoded form with its CRC.
    #[must_use]
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut b = [0u8; ENTRY_SIZE];
        for (i, v) in [
            self.pos,
            self.prev,
            self.slot,
            self.delayed,
            self.offset_py,
            self.queue_offset,
        ]
        .into_iter()
        .enumerate()
        {
            b[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
        }
        b[48..52].copy_from_slice(&self.size_py.to_be_bytes());
        let crc = rmq_common::body_crc(&b[..52]);
        b[52..56].copy_from_slice(&crc.to_be_bytes());
        b
    }

    /// Decode the entry expected at `pos`; `None` when the bytes are not a whole entry written
    /// there (bad CRC, another position, all zeros).
    #[must_use]
    pub fn decode(b: &[u8], pos: i64) -> Option<Self> {
        let b = b.get(..ENTRY_SIZE)?;
        let i64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            i64::from_be_bytes(a)
        };
        let mut w = [0u8; 4];
        w.copy_from_slice(&b[52..56]);
        if i32::from_be_bytes(w) != rmq_common::body_crc(&b[..52]) || i64_at(0) != pos {
            return None;
        }
        w.copy_from_slice(&b[48..52]);
        Some(Self {
            pos,
            prev: i64_at(1),
            slot: i64_at(2),
            delayed: i64_at(3),
            offset_py: i64_at(4),
            queue_offset: i64_at(5),
            size_py: i32::from_be_bytes(w),
        })
    }
}

/// The timer log's files.
pub struct TimerLog {
    queue: MappedFileQueue,
}

impl TimerLog {
    /// Open the log in `dir` (files of `file_size` bytes, a multiple of 56).
    ///
    /// # Errors
    /// A bad file size, or a file of the wrong size or name in `dir`.
    pub fn open(dir: impl Into<PathBuf>, file_size: usize) -> Result<Self> {
        if file_size == 0 || !file_size.is_multiple_of(ENTRY_SIZE) {
            return Err(StoreError::Config {
                key: "timer log file size".into(),
                value: file_size.to_string(),
                allowed: format!("a positive multiple of {ENTRY_SIZE}"),
            });
        }
        let queue = MappedFileQueue::new(dir, file_size)?;
        queue.load()?;
        Ok(Self { queue })
    }

    /// Recovery: walk the entries from `from` (clamped to the oldest file) to the first one
    /// that is not whole, call `f` on each, cut the log there and return that end.
    ///
    /// # Errors
    /// When the tail cannot be cut, or `f` fails.
    pub fn recover(&self, from: i64, mut f: impl FnMut(&TimerEntry) -> Result<()>) -> Result<i64> {
        let files = self.queue.files();
        let size = i64::try_from(self.queue.file_size()).unwrap_or(i64::MAX);
        let first = files.first().map_or(0, |f| f.file_from_offset());
        let mut pos = from.max(first);
        pos -= pos.rem_euclid(ENTRY_I64);
        'files: for file in &files {
            let start = file.file_from_offset();
            if start + size <= pos {
                continue;
            }
            if start > pos {
                break; // a missing file: the log ends at the gap
            }
            let raw = file.raw_from(0);
            while pos < start + size {
                let at = usize::try_from(pos - start).unwrap_or(usize::MAX);
                match raw.get(at..).and_then(|b| TimerEntry::decode(b, pos)) {
                    Some(e) => f(&e)?,
                    None => break 'files,
                }
                pos += ENTRY_I64;
            }
        }
        if files.is_empty() {
            // Every file was deleted (all delivered): the next file starts at a file boundary
            // at or above where the log ended.
            let from = from.max(0);
            pos = (from + size - 1) / size * size;
        }
        self.queue.set_flushed_where(pos);
        self.queue.set_committed_where(pos);
        self.queue.truncate_dirty_files(pos)?;
        Ok(pos)
    }

    /// Append `e` (its `pos` must be [`end`](Self::end)); returns that position.
    ///
    /// # Errors
    /// A new file cannot be created, or `e.pos` is not the end.
    pub fn append(&self, e: &TimerEntry) -> Result<i64> {
        let end = self.end();
        if e.pos != end {
            return Err(StoreError::Corruption {
                file: self.queue.dir().to_path_buf(),
                offset: u64::try_from(e.pos).unwrap_or(0),
                reason: format!(
                    "timer log entry appended at {} but the log ends at {end}",
                    e.pos
                ),
            });
        }
        let file = self.queue.last_mapped_file_for_append(end)?;
        if !file.append_bytes(&e.encode())? {
            return Err(StoreError::Corruption {
                file: file.path().to_path_buf(),
                offset: u64::try_from(end).unwrap_or(0),
                reason: "timer log file has no room for a whole entry".into(),
            });
        }
        Ok(end)
    }

    /// Position the next entry gets.
    #[must_use]
    pub fn end(&self) -> i64 {
        match self.queue.last_mapped_file() {
            Some(f) => f.offset_of(f.wrote_position()),
            None => self.queue.committed_where().max(0),
        }
    }

    /// The entry at `pos`.
    ///
    /// # Errors
    /// [`StoreError::Corruption`] when there is no whole entry there (a dangling link).
    pub fn read(&self, pos: i64) -> Result<TimerEntry> {
        let bad = |reason: &str| StoreError::Corruption {
            file: self.queue.dir().to_path_buf(),
            offset: u64::try_from(pos).unwrap_or(0),
            reason: reason.into(),
        };
        let file = self
            .queue
            .find_mapped_file_by_offset(pos, false)
            .ok_or_else(|| bad("no timer log file holds this position (deleted too early?)"))?;
        let at = usize::try_from(pos - file.file_from_offset()).unwrap_or(usize::MAX);
        file.read(at, ENTRY_SIZE)
            .and_then(|b| TimerEntry::decode(b, pos))
            .ok_or_else(|| bad("no whole timer log entry here (damaged, or beyond the end)"))
    }

    /// Make everything appended durable; returns the durable end.
    ///
    /// # Errors
    /// The OS error of a sync.
    pub fn flush(&self) -> Result<i64> {
        let target = self.end();
        while self.queue.flushed_where() < target {
            if !self.queue.flush(0)? {
                break;
            }
        }
        Ok(self.queue.flushed_where())
    }

    /// Delete the oldest files whose entries all lie below `min_live` (no slot still to be
    /// read points into them). Returns how many were deleted.
    pub fn delete_below(&self, min_live: i64) -> usize {
        self.queue
            .delete_expired_by_offset(ENTRY_SIZE, min_live, |b| {
                // The last entry's own position (stored first); below `min_live` = dead file.
                let mut a = [0u8; 8];
                a.copy_from_slice(&b[..8]);
                i64::from_be_bytes(a)
            })
    }

    /// Start of the oldest file (0 when empty).
    #[must_use]
    pub fn min_offset(&self) -> i64 {
        self.queue.min_offset().max(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pos: i64, prev: i64) -> TimerEntry {
        TimerEntry {
            pos,
            prev,
            slot: 100,
            delayed: 100,
            offset_py: pos * 3,
            queue_offset: pos / 56,
            size_py: 200,
        }
    }

    #[test]
    fn entries_round_trip_and_reject_damage() {
        let e = entry(112, 56);
        let b = e.encode();
        assert_eq!(TimerEntry::decode(&b, 112), Some(e));
        assert_eq!(TimerEntry::decode(&b, 168), None, "another position");
        let mut bad = b;
        bad[30] ^= 1;
        assert_eq!(TimerEntry::decode(&bad, 112), None, "bad crc");
        assert_eq!(TimerEntry::decode(&[0u8; ENTRY_SIZE], 0), None, "zeros");
        assert_eq!(TimerEntry::decode(&b[..40], 112), None, "short");
    }

    #[test]
    fn append_read_roll_files_recover_and_delete() {
        let dir = tempfile::tempdir().unwrap();
        let size = ENTRY_SIZE * 4;
        let log = TimerLog::open(dir.path(), size).unwrap();
        assert_eq!(log.end(), 0);
        for i in 0..10 {
            let pos = i * 56;
            assert_eq!(log.append(&entry(pos, pos - 56)).unwrap(), pos);
        }
        assert!(log.append(&entry(0, -1)).is_err(), "not at the end");
        assert_eq!(log.end(), 560);
        assert_eq!(log.read(280).unwrap(), entry(280, 224));
        assert!(log.read(560).is_err());
        assert_eq!(log.flush().unwrap(), 560);
        drop(log);

        // Damage entry 7: recovery keeps 0..7 and cuts the rest.
        let f = dir.path().join(crate::format::file_name(224));
        let mut bytes = std::fs::read(&f).unwrap();
        bytes[3 * 56 + 20] ^= 0xff;
        std::fs::write(&f, bytes).unwrap();
        let log = TimerLog::open(dir.path(), size).unwrap();
        let mut seen = Vec::new();
        let end = log
            .recover(112, |e| {
                seen.push(e.pos);
                Ok(())
            })
            .unwrap();
        assert_eq!(end, 7 * 56);
        assert_eq!(seen, [112, 168, 224, 280, 336]);
        assert_eq!(log.end(), end);
        assert!(!dir.path().join(crate::format::file_name(448)).exists());
        assert_eq!(log.append(&entry(end, -1)).unwrap(), end);

        // Files wholly below the live position go, the rest stay.
        assert_eq!(log.delete_below(300), 1);
        assert_eq!(log.min_offset(), 224);
        assert!(log.read(0).is_err());
        assert_eq!(log.read(224).unwrap().pos, 224);
    }

    #[test]
    fn a_bad_file_size_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let e = TimerLog::open(dir.path(), 100).err().unwrap().to_string();
        assert!(e.contains("multiple of 56"), "{e}");
        let log = TimerLog::open(dir.path(), 560).unwrap();
        log.append(&entry(0, -1)).unwrap();
        drop(log);
        // A file longer than the configured size names itself.
        let f = dir.path().join(crate::format::file_name(0));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&f)
            .unwrap()
            .set_len(1000)
            .unwrap();
        let e = TimerLog::open(dir.path(), 560).err().unwrap().to_string();
        assert!(e.contains(&f.display().to_string()), "{e}");
    }
}
