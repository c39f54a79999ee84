//! The `checkpoint` file: three store timestamps (CommitLog, ConsumeQueue, IndexFile) up to
//! which data was flushed. Abnormal recovery starts from the newest CommitLog file whose
//! first message is older than the smallest of them. Layout as RocketMQ's `StoreCheckpoint`:
//! a 4 KiB file, big-endian i64s at 0, 8 and 16.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::error::{IoContext, Result};

const FILE_SIZE: u64 = 4096;

/// Flush timestamps, persisted.
pub struct StoreCheckpoint {
    file: File,
    physic_msg_timestamp: AtomicI64,
    logics_msg_timestamp: AtomicI64,
    index_msg_timestamp: AtomicI64,
}

impl StoreCheckpoint {
    /// Open or create the checkpoint at `path`.
    ///
    /// # Errors
    /// When the file cannot be opened or read.
    pub fn open(path: &Path) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .ctx(|| format!("opening {}", path.display()))?;
        if file
            .metadata()
            .ctx(|| format!("reading {}", path.display()))?
            .len()
            < FILE_SIZE
        {
            file.set_len(FILE_SIZE)
                .ctx(|| format!("sizing {}", path.display()))?;
        }
        let mut b = [0u8; 24];
        file.read_exact_at(&mut b, 0)
            .ctx(|| format!("reading {}", path.display()))?;
        let at = |p: usize| i64::from_be_bytes(b[p..p + 8].try_into().unwrap_or([0; 8]));
        Ok(Self {
            file,
            physic_msg_timestamp: AtomicI64::new(at(0)),
            logics_msg_timestamp: AtomicI64::new(at(8)),
            index_msg_timestamp: AtomicI64::new(at(16)),
        })
    }

    /// CommitLog flush time.
    #[must_use]
    pub fn physic_msg_timestamp(&self) -> i64 {
        self.physic_msg_timestamp.load(Ordering::Acquire)
    }

    /// ConsumeQueue flush time.
    #[must_use]
    pub fn logics_msg_timestamp(&self) -> i64 {
        self.logics_msg_timestamp.load(Ordering::Acquire)
    }

    /// IndexFile flush time.
    #[must_use]
    pub fn index_msg_timestamp(&self) -> i64 {
        self.index_msg_timestamp.load(Ordering::Acquire)
    }

    /// Record the CommitLog flush time.
    pub fn set_physic_msg_timestamp(&self, ts: i64) {
        self.physic_msg_timestamp.fetch_max(ts, Ordering::AcqRel);
    }

    /// Record the ConsumeQueue flush time.
    pub fn set_logics_msg_timestamp(&self, ts: i64) {
        self.logics_msg_timestamp.fetch_max(ts, Ordering::AcqRel);
    }

    /// Record the IndexFile flush time.
    pub fn set_index_msg_timestamp(&self, ts: i64) {
        self.index_msg_timestamp.fetch_max(ts, Ordering::AcqRel);
    }

    /// `min(physic, logics) - 3 s`: messages stored before this are surely dispatched.
    #[must_use]
    pub fn min_timestamp(&self) -> i64 {
        (self.physic_msg_timestamp().min(self.logics_msg_timestamp()) - 3000).max(0)
    }

    /// [`min_timestamp`](Self::min_timestamp), also bounded by the index time.
    #[must_use]
    pub fn min_timestamp_index(&self) -> i64 {
        self.min_timestamp().min(self.index_msg_timestamp())
    }

    /// Write the three values and sync.
    ///
    /// # Errors
    /// When the write or the sync fails.
    pub fn flush(&self) -> Result<()> {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&self.physic_msg_timestamp().to_be_bytes());
        b[8..16].copy_from_slice(&self.logics_msg_timestamp().to_be_bytes());
        b[16..24].copy_from_slice(&self.index_msg_timestamp().to_be_bytes());
        self.file
            .write_all_at(&b, 0)
            .ctx(|| "writing checkpoint".into())?;
        self.file.sync_data().ctx(|| "syncing checkpoint".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn persists_big_endian_at_fixed_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("checkpoint");
        let c = StoreCheckpoint::open(&p).unwrap();
        c.set_physic_msg_timestamp(10_000);
        c.set_logics_msg_timestamp(9_000);
        c.set_index_msg_timestamp(8_000);
        c.set_physic_msg_timestamp(5); // never goes back
        c.flush().unwrap();
        assert_eq!(c.min_timestamp(), 6_000);
        assert_eq!(c.min_timestamp_index(), 6_000);
        let raw = std::fs::read(&p).unwrap();
        assert_eq!(raw.len(), 4096);
        assert_eq!(i64::from_be_bytes(raw[0..8].try_into().unwrap()), 10_000);
        assert_eq!(i64::from_be_bytes(raw[16..24].try_into().unwrap()), 8_000);
        let again = StoreCheckpoint::open(&p).unwrap();
        assert_eq!(again.logics_msg_timestamp(), 9_000);
    }
}
