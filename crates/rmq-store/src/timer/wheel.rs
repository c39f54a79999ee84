//! The time wheel of timer messages (RIP-43's `timerwheel` file): a fixed ring of slots, one
//! per second, mapped from `{storePathRootDir}/timerwheel`. A slot says which second it holds
//! now and where that second's chain of timer-log entries starts and ends, so a million
//! pending timers cost 32 bytes per second of the wheel, not a heap object each.
//!
//! Slot layout (32 bytes, big-endian like every RocketMQ file):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | slot time: the second (epoch ms / precision) this slot holds |
//! | 8..16 | first: timer-log position of the oldest entry of the chain |
//! | 16..24 | last: timer-log position of the newest entry (the chain runs back from it) |
//! | 24..28 | num: entries in the chain; 0 = empty |
//! | 28..32 | reserved (0) |
//!
//! The ring index of second `t` is `t mod slots`. A slot is reset when an entry for a later
//! round arrives; the engine only links seconds within one round of its read pointer, so the
//! second a slot held before has always been read by then.
//!
//! The wheel has one user, the timer thread, which owns it (`&mut self` for every change), so
//! in-place slot rewrites never race with a reader.

use std::path::{Path, PathBuf};

use crate::error::{IoContext, Result, StoreError};
use crate::mmap::OwnedMap;

/// Bytes per slot.
pub const SLOT_SIZE: usize = 32;

/// One second of the wheel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Slot {
    /// The second this slot holds (meaningful when `num > 0`).
    pub time: i64,
    /// Timer-log position of the first entry.
    pub first: i64,
    /// Timer-log position of the last entry.
    pub last: i64,
    /// Number of entries linked.
    pub num: i32,
}

impl Slot {
    /// Whether this slot holds entries for second `time`.
    #[must_use]
    pub fn holds(&self, time: i64) -> bool {
        self.num > 0 && self.time == time
    }

    fn encode(&self) -> [u8; SLOT_SIZE] {
        let mut b = [0u8; SLOT_SIZE];
        b[0..8].copy_from_slice(&self.time.to_be_bytes());
        b[8..16].copy_from_slice(&self.first.to_be_bytes());
        b[16..24].copy_from_slice(&self.last.to_be_bytes());
        b[24..28].copy_from_slice(&self.num.to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Self {
        let i64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            i64::from_be_bytes(a)
        };
        let mut n = [0u8; 4];
        n.copy_from_slice(&b[24..28]);
        Self {
            time: i64_at(0),
            first: i64_at(8),
            last: i64_at(16),
            num: i32::from_be_bytes(n),
        }
    }
}

/// The mapped wheel.
pub struct TimerWheel {
    path: PathBuf,
    map: OwnedMap,
    slots: usize,
}

impl TimerWheel {
    /// Open the wheel at `path`, creating it with `slots` empty slots when it does not exist.
    /// An existing wheel keeps its own size (changing `timerMaxDelaySec` later changes only
    /// how far a timer may reach: longer delays go round the wheel more than once).
    ///
    /// # Errors
    /// I/O errors, or a file whose size is not a positive multiple of 32 bytes.
    pub fn open(path: &Path, slots: usize) -> Result<Self> {
        let existing = match std::fs::metadata(path) {
            Ok(m) => Some(m.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(StoreError::io(format!("reading {}", path.display()), e)),
        };
        let (map, slots) = if let Some(len) = existing {
            let len = usize::try_from(len).unwrap_or(usize::MAX);
            if len == 0 || !len.is_multiple_of(SLOT_SIZE) {
                return Err(StoreError::Corruption {
                    file: path.to_path_buf(),
                    offset: 0,
                    reason: format!(
                        "a time wheel is a whole number of {SLOT_SIZE}-byte slots, this file \
                         has {len} bytes (damaged or not a timer wheel); move it away together \
                         with timerlog/ and config/timercheck to start an empty wheel \
                         (pending timer messages are then not delivered)"
                    ),
                });
            }
            let map = OwnedMap::open(path, len).ctx(|| format!("mapping {}", path.display()))?;
            (map, len / SLOT_SIZE)
        } else {
            if slots == 0 {
                return Err(StoreError::Config {
                    key: "timerMaxDelaySec".into(),
                    value: "0".into(),
                    allowed: "the time wheel needs at least one slot".into(),
                });
            }
            let len = slots * SLOT_SIZE;
            let map = OwnedMap::create(path, len).ctx(|| format!("creating {}", path.display()))?;
            (map, slots)
        };
        Ok(Self {
            path: path.to_path_buf(),
            map,
            slots,
        })
    }

    /// Number of slots (seconds in one round).
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// The file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Ring index of second `time`.
    #[must_use]
    pub fn index(&self, time: i64) -> usize {
        let n = i64::try_from(self.slots).unwrap_or(i64::MAX);
        usize::try_from(time.rem_euclid(n)).unwrap_or(0)
    }

    /// The slot second `time` maps to (it may hold another round: check [`Slot::holds`]).
    #[must_use]
    pub fn get(&self, time: i64) -> Slot {
        let mut b = [0u8; SLOT_SIZE];
        if self.map.read(self.index(time) * SLOT_SIZE, &mut b) {
            Slot::decode(&b)
        } else {
            Slot::default()
        }
    }

    /// Allocate the block under the slot of second `time`, so a [`put`](Self::put) to it
    /// cannot fail for want of space (the wheel file is sparse).
    ///
    /// # Errors
    /// ENOSPC or another OS error, naming the file.
    pub fn reserve(&mut self, time: i64) -> Result<()> {
        let at = self.index(time) * SLOT_SIZE;
        self.map
            .reserve(at, SLOT_SIZE)
            .ctx(|| format!("allocating a slot of {}", self.path.display()))
    }

    /// Overwrite the slot of `slot.time`.
    ///
    /// # Errors
    /// When the block under the slot cannot be allocated (see [`reserve`](Self::reserve)).
    pub fn put(&mut self, slot: &Slot) -> Result<()> {
        let at = self.index(slot.time) * SLOT_SIZE;
        self.map
            .write(at, &slot.encode())
            .ctx(|| format!("writing a slot of {}", self.path.display()))
    }

    /// Every non-empty slot (a scan of the whole file).
    pub fn occupied(&self) -> impl Iterator<Item = Slot> + '_ {
        (0..self.slots).filter_map(|i| {
            let mut b = [0u8; SLOT_SIZE];
            self.map.read(i * SLOT_SIZE, &mut b).then_some(())?;
            let s = Slot::decode(&b);
            (s.num > 0).then_some(s)
        })
    }

    /// Make the wheel durable.
    ///
    /// # Errors
    /// The OS error of the sync.
    pub fn flush(&self) -> Result<()> {
        self.map
            .flush_range(0, self.map.len())
            .ctx(|| format!("flushing {}", self.path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_arithmetic_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("timerwheel");
        let mut w = TimerWheel::open(&p, 10).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 320);
        assert_eq!(
            (w.index(0), w.index(9), w.index(10), w.index(23)),
            (0, 9, 0, 3)
        );
        assert_eq!(w.index(-1), 9);
        assert!(!w.get(3).holds(3));
        let s = Slot {
            time: 1_700_000_003,
            first: 56,
            last: 560,
            num: 4,
        };
        w.put(&s).unwrap();
        assert_eq!(w.get(1_700_000_003), s);
        assert!(w.get(1_700_000_003).holds(1_700_000_003));
        // The same ring index, another round: the slot is there but does not hold that second.
        assert!(!w.get(1_700_000_013).holds(1_700_000_013));
        assert_eq!(w.occupied().count(), 1);
        w.flush().unwrap();
        drop(w);
        // Reopened with another size, it keeps its own.
        let w = TimerWheel::open(&p, 99).unwrap();
        assert_eq!(w.slots(), 10);
        assert_eq!(w.get(1_700_000_003), s);
    }

    #[test]
    fn a_damaged_wheel_is_refused_with_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("timerwheel");
        std::fs::write(&p, [0u8; 33]).unwrap();
        let e = TimerWheel::open(&p, 10).err().unwrap().to_string();
        assert!(
            e.contains("timerwheel") && e.contains("33 bytes") && e.contains("move it away"),
            "{e}"
        );
        std::fs::write(&p, []).unwrap();
        assert!(TimerWheel::open(&p, 10).is_err());
    }
}
