//! `{storePathRootDir}/config/timercheck`: where the timer service stands (RocketMQ's
//! `TimerCheckpoint`, in a layout of our own with a CRC so a damaged file is recognised).
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | magic `TMRC` |
//! | 4..8 | version (1) |
//! | 8..16 | read_slot: the next wheel second to deliver; every second before it is delivered |
//! | 16..24 | log_pos: timer-log position up to which log and wheel were synced; recovery re-links entries from here |
//! | 24..32 | queue_offset: next `rmq_sys_wheel_timer` unit to put into the wheel |
//! | 32..36 | CRC32 of bytes 0..32 |
//!
//! Written to `timercheck.tmp` and renamed over the file: after each delivered second without
//! an fsync (a process killed afterwards keeps it in the page cache, so a `kill -9` repeats at
//! most the second being delivered), and with an fsync (after syncing log and wheel) every
//! flush interval and at shutdown.

use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};

const MAGIC: &[u8; 4] = b"TMRC";
const VERSION: u32 = 1;
const LEN: usize = 36;

/// The persisted progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerProgress {
    /// Next wheel second to deliver.
    pub read_slot: i64,
    /// Synced end of the timer log.
    pub log_pos: i64,
    /// Next ConsumeQueue offset of the timer topic to enqueue.
    pub queue_offset: i64,
}

impl TimerProgress {
    fn encode(&self) -> [u8; LEN] {
        let mut b = [0u8; LEN];
        b[0..4].copy_from_slice(MAGIC);
        b[4..8].copy_from_slice(&VERSION.to_be_bytes());
        b[8..16].copy_from_slice(&self.read_slot.to_be_bytes());
        b[16..24].copy_from_slice(&self.log_pos.to_be_bytes());
        b[24..32].copy_from_slice(&self.queue_offset.to_be_bytes());
        let crc = rmq_common::body_crc(&b[..32]);
        b[32..36].copy_from_slice(&crc.to_be_bytes());
        b
    }
}

/// The checkpoint file.
pub struct TimerCheckpoint {
    path: PathBuf,
}

impl TimerCheckpoint {
    /// The checkpoint at `path` (its directory is created on first write).
    #[must_use]
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The saved progress; `None` when there is no file yet.
    ///
    /// # Errors
    /// [`StoreError::Corruption`] for a short or damaged file, naming it and what to do.
    pub fn load(&self) -> Result<Option<TimerProgress>> {
        let b = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(StoreError::io(
                    format!("reading {}", self.path.display()),
                    e,
                ))
            }
        };
        let bad = |reason: String| StoreError::Corruption {
            file: self.path.clone(),
            offset: 0,
            reason: format!(
                "{reason}; it is not a timer checkpoint or it is damaged. Delete it to rebuild \
                 the timer state from the timer wheel and log (timer messages the wheel still \
                 holds may then be delivered twice)"
            ),
        };
        if b.len() != LEN {
            return Err(bad(format!(
                "the file has {} bytes, expected {LEN}",
                b.len()
            )));
        }
        if &b[0..4] != MAGIC {
            return Err(bad("no TMRC magic at its start".into()));
        }
        let word = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if word(4) != VERSION {
            return Err(bad(format!("version {} is not {VERSION}", word(4))));
        }
        let crc = rmq_common::body_crc(&b[..32]);
        if word(32) != u32::from_be_bytes(crc.to_be_bytes()) {
            return Err(bad("its CRC does not match".into()));
        }
        let at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            i64::from_be_bytes(a)
        };
        Ok(Some(TimerProgress {
            read_slot: at(8),
            log_pos: at(16),
            queue_offset: at(24),
        }))
    }

    /// Save `p` (with `sync`: fsync the file and its directory).
    ///
    /// # Errors
    /// The I/O error.
    pub fn save(&self, p: &TimerProgress, sync: bool) -> Result<()> {
        crate::atomic_file::write_file_atomic(
            &self.path,
            &p.encode(),
            crate::atomic_file::AtomicWrite {
                backup: false,
                sync,
            },
        )
        .map_err(|e| StoreError::io(format!("{} {}", e.step, e.path.display()), e.source))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saves_loads_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let c = TimerCheckpoint::new(dir.path().join("config/timercheck"));
        assert_eq!(c.load().unwrap(), None);
        let p = TimerProgress {
            read_slot: 1_700_000_000,
            log_pos: 560,
            queue_offset: 10,
        };
        c.save(&p, true).unwrap();
        c.save(&p, false).unwrap();
        assert_eq!(c.load().unwrap(), Some(p));
        let mut b = std::fs::read(c.path()).unwrap();
        b[12] ^= 1;
        std::fs::write(c.path(), &b).unwrap();
        let e = c.load().unwrap_err().to_string();
        assert!(e.contains("timercheck") && e.contains("CRC"), "{e}");
        std::fs::write(c.path(), &b[..10]).unwrap();
        let e = c.load().unwrap_err().to_string();
        assert!(e.contains("10 bytes, expected 36"), "{e}");
    }
}
