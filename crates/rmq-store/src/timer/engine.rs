//! The timer state machine over [`TimerWheel`], [`TimerLog`] and [`TimerCheckpoint`], without
//! the message store: linking timers into the wheel, walking a due second's chain, sending
//! far-off timers round the wheel again, syncing, and recovering after a restart or a
//! `kill -9`. The store's timer thread ([`super::service`]) feeds it ConsumeQueue units and
//! delivers what it hands back.
//!
//! # Linking rule
//! With `R` the next second to read and `N` the wheel's slots, a timer due at second `T` is
//! linked into second `max(T, R)` when `T < R + N`, else into `R + N - 1` (the farthest second
//! of this round), from where it is linked again, with its true `T`, when that second is read.
//! So a slot is only ever reset for a new round after its old second was read, and a delay of
//! any length is delivered in its own second.
//!
//! # Recovery
//! The checkpoint says up to where log and wheel were synced. Entries appended after that are
//! walked again: one the wheel does not link yet (the process died between appending it and
//! updating its slot) is linked; the log is cut at the first damaged entry. Enqueueing resumes
//! after the highest ConsumeQueue offset found in the log, delivery at the checkpoint's second.

use std::collections::BTreeMap;
use std::path::Path;

use super::checkpoint::{TimerCheckpoint, TimerProgress};
use super::log::{TimerEntry, TimerLog, ENTRY_SIZE};
use super::wheel::{Slot, TimerWheel};
use crate::error::{Result, StoreError};

/// The timer files under a store root.
pub mod files {
    /// The wheel.
    pub const WHEEL: &str = "timerwheel";
    /// The log directory.
    pub const LOG: &str = "timerlog";
    /// The checkpoint.
    pub const CHECKPOINT: &str = "config/timercheck";
}

/// What [`TimerEngine::open`] found.
#[derive(Debug, Default, Clone, Copy)]
pub struct Recovered {
    /// Entries walked again after the last synced checkpoint.
    pub replayed: usize,
    /// Of those, entries the wheel did not link yet.
    pub relinked: usize,
    /// Slots that pointed past the end of the log (its tail was lost: a machine crash under
    /// an unsynced log) and were cut back to their last whole entry.
    pub repaired: usize,
}

/// Wheel, log and progress of the timer messages.
pub struct TimerEngine {
    wheel: TimerWheel,
    log: TimerLog,
    checkpoint: TimerCheckpoint,
    read_slot: i64,
    queue_offset: i64,
    synced_log_pos: i64,
    /// Lowest CommitLog offset linked into each second still to read (the retention floor of
    /// pending timers, kept as timers are linked, so the chains are walked only on open).
    pending_min_py: BTreeMap<i64, i64>,
}

impl TimerEngine {
    /// Open (or create) the timer files under `root` and recover. `slots` sizes a new wheel;
    /// `now_slot` is where a first start begins reading.
    ///
    /// # Errors
    /// Damaged files (named, with what to do), or I/O errors.
    pub fn open(
        root: &Path,
        slots: usize,
        log_file_size: usize,
        now_slot: i64,
    ) -> Result<(Self, Recovered)> {
        let checkpoint = TimerCheckpoint::new(root.join(files::CHECKPOINT));
        let saved = checkpoint.load()?;
        let mut wheel = TimerWheel::open(&root.join(files::WHEEL), slots.max(2))?;
        if wheel.slots() < 2 {
            return Err(StoreError::Corruption {
                file: wheel.path().to_path_buf(),
                offset: 0,
                reason: "a time wheel needs at least 2 slots; move it away to start anew".into(),
            });
        }
        let log = TimerLog::open(root.join(files::LOG), log_file_size)?;
        let progress = saved.unwrap_or(TimerProgress {
            read_slot: now_slot,
            log_pos: 0,
            queue_offset: 0,
        });
        let mut rec = Recovered::default();
        let mut max_queue_offset = -1;
        let end = log.recover(progress.log_pos, |e| {
            rec.replayed += 1;
            max_queue_offset = max_queue_offset.max(e.queue_offset);
            if relink_recovered(&mut wheel, e) {
                rec.relinked += 1;
            }
            Ok(())
        })?;
        rec.repaired = repair_dangling(&mut wheel, &log, end);
        // Without a checkpoint but with a wheel in use (the file was deleted), reading starts
        // at the oldest second the wheel still holds: nothing pending is skipped, at the price
        // of delivering again what the last round had delivered.
        let read_slot = match saved {
            Some(p) => p.read_slot,
            None => wheel
                .occupied()
                .map(|s| s.time)
                .min()
                .map_or(now_slot, |t| t.min(now_slot)),
        };
        let mut engine = Self {
            wheel,
            log,
            checkpoint,
            read_slot,
            queue_offset: progress.queue_offset.max(max_queue_offset + 1),
            synced_log_pos: progress.log_pos.min(end),
            pending_min_py: BTreeMap::new(),
        };
        engine.load_pending_min_py();
        Ok((engine, rec))
    }

    /// Walk the chain of every second still to read, noting its lowest CommitLog offset. A
    /// broken chain is noted as far as it goes (its second will be skipped on delivery).
    fn load_pending_min_py(&mut self) {
        let pending: Vec<Slot> = self
            .wheel
            .occupied()
            .filter(|s| s.time >= self.read_slot)
            .collect();
        for s in pending {
            let (entries, err) = self.chain(&s);
            if let Some(e) = err {
                log::warn!("timer second {}: {e}", s.time);
            }
            for e in entries {
                self.note_pending(&e);
            }
        }
    }

    fn note_pending(&mut self, e: &TimerEntry) {
        let min = self.pending_min_py.entry(e.slot).or_insert(e.offset_py);
        *min = (*min).min(e.offset_py);
    }

    /// The lowest CommitLog offset of a timer not delivered yet (`None`: none pending): the
    /// store keeps the parked record of every timer the wheel still holds.
    #[must_use]
    pub fn pending_floor(&self) -> Option<i64> {
        self.pending_min_py.values().copied().min()
    }

    /// Next second to deliver.
    #[must_use]
    pub fn read_slot(&self) -> i64 {
        self.read_slot
    }

    /// Next ConsumeQueue offset of the timer topic to enqueue.
    #[must_use]
    pub fn queue_offset(&self) -> i64 {
        self.queue_offset
    }

    /// Skip enqueueing to `offset` (the ConsumeQueue lost its head or tail; logged by the caller).
    pub fn set_queue_offset(&mut self, offset: i64) {
        self.queue_offset = offset;
    }

    /// Slots of the wheel.
    #[must_use]
    pub fn slots(&self) -> usize {
        self.wheel.slots()
    }

    /// End of the timer log.
    #[must_use]
    pub fn log_end(&self) -> i64 {
        self.log.end()
    }

    fn slots_i64(&self) -> i64 {
        i64::try_from(self.wheel.slots()).unwrap_or(i64::MAX)
    }

    /// The second a timer due at `delayed` is linked into now (see the module's linking rule).
    #[must_use]
    pub fn slot_for(&self, delayed: i64) -> i64 {
        let r = self.read_slot;
        if delayed < r {
            r
        } else if delayed - r < self.slots_i64() {
            delayed
        } else {
            r + self.slots_i64() - 1
        }
    }

    /// Put the timer of ConsumeQueue unit `queue_offset` (parked record at `offset_py`, `size_py`
    /// bytes, due in second `delayed`) into the wheel.
    ///
    /// # Errors
    /// The log cannot grow (disk full).
    pub fn enqueue(
        &mut self,
        delayed: i64,
        offset_py: i64,
        size_py: i32,
        queue_offset: i64,
    ) -> Result<()> {
        self.link(TimerEntry {
            pos: 0,
            prev: -1,
            slot: self.slot_for(delayed),
            delayed,
            offset_py,
            queue_offset,
            size_py,
        })?;
        self.queue_offset = self.queue_offset.max(queue_offset + 1);
        Ok(())
    }

    /// Link an entry read from a due slot again, for the second it is really due (it went
    /// round the wheel).
    ///
    /// # Errors
    /// As [`enqueue`](Self::enqueue).
    pub fn requeue(&mut self, e: &TimerEntry) -> Result<()> {
        self.link(TimerEntry {
            slot: self.slot_for(e.delayed),
            ..*e
        })
    }

    fn link(&mut self, mut e: TimerEntry) -> Result<()> {
        // The slot's block first: an entry appended to the log must not miss its link.
        self.wheel.reserve(e.slot)?;
        let s = self.wheel.get(e.slot);
        e.pos = self.log.end();
        let slot = if s.holds(e.slot) {
            e.prev = s.last;
            Slot {
                last: e.pos,
                num: s.num.saturating_add(1),
                ..s
            }
        } else {
            e.prev = -1;
            Slot {
                time: e.slot,
                first: e.pos,
                last: e.pos,
                num: 1,
            }
        };
        self.log.append(&e)?;
        self.wheel.put(&slot)?;
        self.note_pending(&e);
        Ok(())
    }

    /// Whether the next second to read is over at `now_ms` (a second is delivered once it has
    /// passed, so nothing is early).
    #[must_use]
    pub fn is_due(&self, now_ms: i64, precision_ms: i64) -> bool {
        self.read_slot
            .checked_add(1)
            .and_then(|s| s.checked_mul(precision_ms))
            .is_some_and(|end| end <= now_ms)
    }

    /// The chain of the next second to read, oldest first. Entries with `delayed` above it
    /// only wait for the wheel to come round: [`requeue`](Self::requeue) them.
    ///
    /// # Errors
    /// A broken chain (a damaged log), naming the position.
    pub fn due_entries(&self) -> Result<Vec<TimerEntry>> {
        let t = self.read_slot;
        let s = self.wheel.get(t);
        if !s.holds(t) {
            return Ok(Vec::new());
        }
        match self.chain(&s) {
            (entries, None) => Ok(entries),
            (_, Some(e)) => Err(e),
        }
    }

    /// The entries of slot `s`'s chain, oldest first, and the error that cut it short.
    fn chain(&self, s: &Slot) -> (Vec<TimerEntry>, Option<StoreError>) {
        let t = s.time;
        let mut out = Vec::with_capacity(usize::try_from(s.num).unwrap_or(0));
        let mut p = s.last;
        let mut err = None;
        // A chain never holds more entries than the log; the bound stops a cycle in a
        // damaged log.
        let bound = (self.log.end() - self.log.min_offset()) / ENTRY_I64 + 1;
        while p >= 0 && i64::try_from(out.len()).unwrap_or(i64::MAX) < bound {
            let e = match self.log.read(p) {
                Ok(e) => e,
                Err(e) => {
                    err = Some(e);
                    break;
                }
            };
            if e.slot != t {
                err = Some(StoreError::Corruption {
                    file: self.wheel.path().to_path_buf(),
                    offset: u64::try_from(p).unwrap_or(0),
                    reason: format!(
                        "the chain of second {t} reaches a timer log entry of second {}",
                        e.slot
                    ),
                });
                break;
            }
            out.push(e);
            if p == s.first {
                break;
            }
            p = e.prev;
        }
        out.reverse();
        (out, err)
    }

    /// The next second was delivered: move on.
    pub fn advance(&mut self) {
        self.pending_min_py.remove(&self.read_slot);
        self.read_slot += 1;
    }

    /// Timers in the wheel not delivered yet (a scan of the wheel).
    #[must_use]
    pub fn pending(&self) -> i64 {
        self.wheel
            .occupied()
            .filter(|s| s.time >= self.read_slot)
            .map(|s| i64::from(s.num))
            .sum()
    }

    /// Oldest timer-log position a second still to read needs.
    fn min_live_pos(&self) -> i64 {
        self.wheel
            .occupied()
            .filter(|s| s.time >= self.read_slot)
            .map(|s| s.first)
            .min()
            .unwrap_or_else(|| self.log.end())
    }

    fn progress(&self) -> TimerProgress {
        TimerProgress {
            read_slot: self.read_slot,
            log_pos: self.synced_log_pos,
            queue_offset: self.queue_offset,
        }
    }

    /// Save where delivery and enqueueing stand, without syncing (cheap: after each second).
    ///
    /// # Errors
    /// The I/O error.
    pub fn save_progress(&self) -> Result<()> {
        self.checkpoint.save(&self.progress(), false)
    }

    /// Sync log and wheel, then the checkpoint; delete log files no second still to read
    /// needs. Returns how many files were deleted.
    ///
    /// # Errors
    /// A failed sync (the checkpoint is then not moved).
    pub fn sync(&mut self) -> Result<usize> {
        let end = self.log.flush()?;
        self.wheel.flush()?;
        self.synced_log_pos = end;
        self.checkpoint.save(&self.progress(), true)?;
        Ok(self.log.delete_below(self.min_live_pos()))
    }
}

#[expect(clippy::cast_possible_wrap, reason = "the constant 56")]
const ENTRY_I64: i64 = ENTRY_SIZE as i64;

/// Recovery after the log's tail was lost: every slot whose chain ends at or beyond `end` is
/// cut back to its last entry below `end` (found by walking the log forward from its first
/// entry, since the lost entries held the back links), or emptied. Returns how many slots were
/// changed.
fn repair_dangling(wheel: &mut TimerWheel, log: &TimerLog, end: i64) -> usize {
    let dangling: Vec<Slot> = wheel.occupied().filter(|s| s.last >= end).collect();
    for s in &dangling {
        let mut fixed = Slot { num: 0, ..*s };
        let mut p = s.first.max(log.min_offset());
        while p < end {
            if let Ok(e) = log.read(p) {
                if e.slot == s.time {
                    if fixed.num == 0 {
                        fixed.first = p;
                    }
                    fixed.last = p;
                    fixed.num += 1;
                }
            }
            p += ENTRY_I64;
        }
        log::warn!(
            "timer wheel second {} pointed past the end of the timer log ({end}); \
             kept {} of its {} timers (the rest were lost with the log's unsynced tail)",
            s.time,
            fixed.num,
            s.num
        );
        if let Err(err) = wheel.put(&fixed) {
            log::error!("repairing timer wheel second {}: {err}", s.time);
        }
    }
    dangling.len()
}

/// Recovery of one entry found after the synced checkpoint: link it when its slot does not
/// have it yet. Returns whether it was linked.
fn relink_recovered(wheel: &mut TimerWheel, e: &TimerEntry) -> bool {
    let s = wheel.get(e.slot);
    if s.holds(e.slot) {
        if s.last >= e.pos {
            return false;
        }
        return put_or_log(
            wheel,
            &Slot {
                last: e.pos,
                num: s.num.saturating_add(1),
                ..s
            },
        );
    }
    if s.num > 0 && s.time > e.slot {
        return false; // the slot moved on to a later round: this second was read
    }
    put_or_log(
        wheel,
        &Slot {
            time: e.slot,
            first: e.pos,
            last: e.pos,
            num: 1,
        },
    )
}

/// Recovery's slot write: true when written; a failure (a full disk) is logged and the entry
/// stays unlinked.
fn put_or_log(wheel: &mut TimerWheel, slot: &Slot) -> bool {
    match wheel.put(slot) {
        Ok(()) => true,
        Err(err) => {
            log::error!(
                "relinking a recovered timer of second {}: {err}; it is not delivered",
                slot.time
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG_FILE: usize = 56 * 64;

    fn open(dir: &Path, slots: usize, now: i64) -> TimerEngine {
        TimerEngine::open(dir, slots, LOG_FILE, now).unwrap().0
    }

    /// Deliver every second up to `until` (inclusive); returns (second, delayed, queue offset)
    /// of each delivered timer.
    fn run_until(e: &mut TimerEngine, until: i64) -> Vec<(i64, i64, i64)> {
        let mut out = Vec::new();
        while e.read_slot() <= until {
            for t in e.due_entries().unwrap() {
                if t.delayed > e.read_slot() {
                    e.requeue(&t).unwrap();
                } else {
                    out.push((e.read_slot(), t.delayed, t.queue_offset));
                }
            }
            e.advance();
        }
        out
    }

    #[test]
    fn chains_link_back_and_come_out_oldest_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 16, 1000);
        e.enqueue(1003, 0, 100, 0).unwrap();
        e.enqueue(1001, 100, 100, 1).unwrap();
        e.enqueue(1003, 200, 100, 2).unwrap();
        e.enqueue(1003, 300, 100, 3).unwrap();
        assert_eq!(e.pending(), 4);
        assert_eq!(e.queue_offset(), 4);
        assert!(e.due_entries().unwrap().is_empty());
        assert!(!e.is_due(1_000_999, 1000) && e.is_due(1_001_000, 1000));
        e.advance();
        e.advance();
        e.advance();
        let chain = e.due_entries().unwrap();
        let q: Vec<_> = chain.iter().map(|t| t.queue_offset).collect();
        assert_eq!(q, [0, 2, 3]);
        assert_eq!(chain[1].prev, chain[0].pos);
        assert_eq!(chain[2].prev, chain[1].pos);
        assert_eq!(chain[0].prev, -1);
    }

    #[test]
    fn past_timers_go_to_the_next_second_to_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 16, 1000);
        e.enqueue(10, 0, 1, 0).unwrap();
        assert_eq!(run_until(&mut e, 1000), [(1000, 10, 0)]);
    }

    #[test]
    fn delays_longer_than_the_wheel_go_round_and_arrive_in_their_second() {
        let dir = tempfile::tempdir().unwrap();
        // 8 slots: reading from second 0, a timer at 7 fits, 8 and more go round.
        let mut e = open(dir.path(), 8, 0);
        assert_eq!(e.slot_for(7), 7);
        assert_eq!(e.slot_for(8), 7);
        assert_eq!(e.slot_for(100), 7);
        let due = [3, 7, 8, 9, 15, 16, 23, 100, 101];
        for (i, d) in due.iter().enumerate() {
            e.enqueue(*d, 0, 1, i64::try_from(i).unwrap()).unwrap();
        }
        let got = run_until(&mut e, 200);
        let seconds: Vec<_> = got.iter().map(|(s, d, _)| (*s, *d)).collect();
        assert_eq!(seconds, due.iter().map(|d| (*d, *d)).collect::<Vec<_>>());
        assert_eq!(e.pending(), 0);
        // Slots of an earlier round are reused without losing anything.
        e.enqueue(205, 0, 1, 99).unwrap();
        assert_eq!(run_until(&mut e, 210), [(205, 205, 99)]);
    }

    #[test]
    fn the_pending_floor_is_the_oldest_undelivered_record_across_rounds_and_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 8, 0);
        assert_eq!(e.pending_floor(), None);
        // (due second, CommitLog offset): the oldest record is due last, beyond this round.
        for (i, (d, py)) in [(2, 500), (5, 300), (30, 100)].into_iter().enumerate() {
            e.enqueue(d, py, 1, i64::try_from(i).unwrap()).unwrap();
        }
        assert_eq!(e.pending_floor(), Some(100));
        // Delivering seconds 2 and 5 (and sending the far timer round) keeps it.
        assert_eq!(run_until(&mut e, 6), [(2, 2, 0), (5, 5, 1)]);
        assert_eq!(e.pending_floor(), Some(100));
        e.sync().unwrap();
        drop(e);
        // A restart walks the chains again.
        let (mut e, _) = TimerEngine::open(dir.path(), 8, LOG_FILE, 999).unwrap();
        assert_eq!(e.pending_floor(), Some(100));
        e.enqueue(40, 900, 1, 3).unwrap();
        assert_eq!(run_until(&mut e, 30), [(30, 30, 2)]);
        assert_eq!(e.pending_floor(), Some(900), "only the later timer is left");
        assert_eq!(run_until(&mut e, 40), [(40, 40, 3)]);
        assert_eq!(e.pending_floor(), None);
    }

    #[test]
    fn a_clean_restart_keeps_everything_pending_and_repeats_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 8, 0);
        for (i, d) in [2, 5, 30].into_iter().enumerate() {
            e.enqueue(d, 0, 1, i64::try_from(i).unwrap()).unwrap();
        }
        assert_eq!(run_until(&mut e, 3), [(2, 2, 0)]);
        e.sync().unwrap();
        drop(e);
        let (mut e, rec) = TimerEngine::open(dir.path(), 8, LOG_FILE, 999).unwrap();
        assert_eq!(rec.relinked, 0);
        assert_eq!((e.read_slot(), e.queue_offset()), (4, 3));
        assert_eq!(run_until(&mut e, 40), [(5, 5, 1), (30, 30, 2)]);
    }

    #[test]
    fn recovery_links_entries_the_wheel_missed_after_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 8, 0);
        e.enqueue(3, 0, 1, 0).unwrap();
        e.sync().unwrap();
        e.enqueue(3, 0, 1, 1).unwrap();
        e.enqueue(4, 0, 1, 2).unwrap();
        e.save_progress().unwrap();
        let wheel_path = dir.path().join(files::WHEEL);
        drop(e);
        // A process killed after appending to the log but before updating the wheel: put the
        // wheel back as it was at the checkpoint (second 3 with one entry, second 4 empty).
        let mut w = TimerWheel::open(&wheel_path, 8).unwrap();
        w.put(&Slot {
            time: 3,
            first: 0,
            last: 0,
            num: 1,
        })
        .unwrap();
        w.put(&Slot {
            time: 4,
            first: 0,
            last: 0,
            num: 0,
        })
        .unwrap();
        drop(w);
        let (mut e, rec) = TimerEngine::open(dir.path(), 8, LOG_FILE, 0).unwrap();
        assert_eq!((rec.replayed, rec.relinked), (2, 2));
        assert_eq!(e.queue_offset(), 3);
        assert_eq!(run_until(&mut e, 10), [(3, 3, 0), (3, 3, 1), (4, 4, 2)]);
    }

    #[test]
    fn recovery_cuts_a_damaged_tail_and_a_bad_checkpoint_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 8, 0);
        e.sync().unwrap();
        e.enqueue(3, 0, 1, 0).unwrap();
        e.enqueue(3, 0, 1, 1).unwrap();
        drop(e);
        let f = dir
            .path()
            .join(files::LOG)
            .join(crate::format::file_name(0));
        let mut b = std::fs::read(&f).unwrap();
        b[56 + 10] ^= 0xff; // the second entry is torn
        std::fs::write(&f, b).unwrap();
        let (e, rec) = TimerEngine::open(dir.path(), 8, LOG_FILE, 0).unwrap();
        assert_eq!(rec.replayed, 1);
        assert_eq!(e.log_end(), 56);
        assert_eq!(e.queue_offset(), 1);
        assert_eq!(rec.repaired, 1);
        let mut e = e;
        assert_eq!(run_until(&mut e, 5), [(3, 3, 0)]);
        drop(e);
        std::fs::write(dir.path().join(files::CHECKPOINT), b"short").unwrap();
        let err = TimerEngine::open(dir.path(), 8, LOG_FILE, 0)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("timercheck") && err.contains("5 bytes"),
            "{err}"
        );
    }

    #[test]
    fn a_lost_checkpoint_rereads_the_wheel_from_its_oldest_second() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open(dir.path(), 8, 0);
        e.enqueue(2, 0, 1, 0).unwrap();
        e.enqueue(6, 0, 1, 1).unwrap();
        assert_eq!(run_until(&mut e, 3), [(2, 2, 0)]);
        e.sync().unwrap();
        drop(e);
        std::fs::remove_file(dir.path().join(files::CHECKPOINT)).unwrap();
        let mut e = open(dir.path(), 8, 50);
        assert_eq!((e.read_slot(), e.queue_offset()), (2, 2));
        assert_eq!(run_until(&mut e, 50), [(2, 2, 0), (6, 6, 1)]);
    }

    #[test]
    fn sync_deletes_log_files_no_pending_second_needs() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = TimerEngine::open(dir.path(), 8, 56 * 4, 0).unwrap().0;
        for i in 0..10 {
            e.enqueue(1, 0, 1, i).unwrap();
        }
        e.enqueue(5, 0, 1, 10).unwrap();
        assert_eq!(e.sync().unwrap(), 0);
        assert_eq!(run_until(&mut e, 1).len(), 10);
        // Second 5's entry (position 560, third file) is all that is live.
        assert_eq!(e.sync().unwrap(), 2);
        assert_eq!(run_until(&mut e, 6), [(5, 5, 10)]);
    }
}
