//! The start-up check of ConsumeQueues and index files against the CommitLog, run on every
//! start (clean or not) at the end of [`recovery`](super::recovery), and the read path's
//! guard that a unit's record is the one it claims to be.
//!
//! Recovery trusts a queue's units once they end inside the CommitLog; a unit overwritten,
//! shifted or zeroed would then serve another message (or none) at its queue offset. So each
//! queue is sampled: its unit sequence (every unit of the last [`SEQ_FILES`] files, a window
//! at the start, middle and end of each older file: sizes positive, records in increasing
//! CommitLog order and not overlapping) and the records behind its tail units, one unit per
//! file and [`SPREAD_UNITS`] units spread across it (the record is valid; its size, queue
//! offset, topic, queue id and tag hash are the unit's). Units below the CommitLog's min
//! offset are expired, not damaged. Cost: a few CommitLog reads per queue and file, plus the
//! ConsumeQueue tail recovery already reads; a full scan happens only to rebuild.
//!
//! The read path skips a unit whose record is another message's and notes its queue in
//! [`DAMAGED_QUEUES_FILE`], so the next start rebuilds that queue even when sampling would
//! miss the unit. It checks the units this check let through, not those this run's dispatch
//! made from records it had just read (`units_dispatched_from`): reading those again cost a
//! pull of history a third of its CPU and kept the records' pages from going out untouched.
//!
//! A damaged queue is dropped and rebuilt by one dispatch pass from the CommitLog's min
//! offset: dispatch skips every record an intact queue already holds (its units are
//! idempotent by CommitLog offset) and the index skips what it already covers, so only the
//! dropped queues get units, with their own queue offsets. An index file whose header or
//! sampled entries disagree with the CommitLog is deleted with the newer files (entries are
//! appended in CommitLog order and "already indexed" is judged by the newest file's end, so a
//! file cannot be re-filled in the middle); the same pass re-indexes from the end of the last
//! good file. The index check itself is [`verify_index`](super::verify_index).

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use rmq_common::time::now_millis;

use super::MessageStore;
use crate::consume_queue::{ConsumeQueue, QueueId};
use crate::dispatch::{DispatchRequest, SCHEDULE_TOPIC};
use crate::error::{Result, StoreError};
use crate::format::{CqUnit, DecodedRecord, CQ_STORE_UNIT_SIZE};

/// Units checked against their records at the tail of each queue.
const TAIL_UNITS: i64 = 4;
/// Units checked against their records spread evenly across each queue.
const SPREAD_UNITS: i64 = 8;
/// Newest ConsumeQueue files whose unit sequence is checked unit by unit.
const SEQ_FILES: usize = 3;
/// Units per window in the sequence check of an older file.
const SEQ_WINDOW: i64 = 4;

/// Under the store root: `topic<TAB>queueId` lines, one per queue the read path found
/// damaged; read and removed by the next start's check.
pub(crate) const DAMAGED_QUEUES_FILE: &str = "damaged_consume_queues";

#[expect(clippy::cast_possible_wrap, reason = "the constant 20")]
const UNIT: i64 = CQ_STORE_UNIT_SIZE as i64;

/// What the check and the read path found, for `brokerStatus` and tests.
#[derive(Default)]
pub(crate) struct CheckStats {
    rebuilt_queues: AtomicU64,
    pub(super) rebuilt_index_files: AtomicU64,
    skipped_units: AtomicU64,
    last_skip_log: AtomicI64,
    /// Queues already noted in [`DAMAGED_QUEUES_FILE`] by this run.
    noted: Mutex<HashSet<(String, i32)>>,
}

impl MessageStore {
    /// Check every ConsumeQueue and index file; rebuild what is damaged (see the module doc).
    pub(super) fn verify_consume_queues_and_index(&self) -> Result<()> {
        let cl_min = self.commit_log.min_offset();
        let marker = self.root.join(DAMAGED_QUEUES_FILE);
        let noted = std::fs::read_to_string(&marker).unwrap_or_default();
        let noted: HashSet<(&str, &str)> =
            noted.lines().filter_map(|l| l.split_once('\t')).collect();
        let mut damaged: Vec<(String, QueueId, String)> = Vec::new();
        for cq in self.consume_queues.all() {
            let qid = cq.queue_id().get().to_string();
            let checked = if noted.contains(&(cq.topic(), qid.as_str())) {
                Err("pulls found units pointing at other messages".to_owned())
            } else {
                self.check_queue(&cq, cl_min)
            };
            if let Err(why) = checked {
                damaged.push((cq.topic().to_owned(), cq.queue_id(), why));
            }
        }
        let mut from = i64::MAX;
        if !damaged.is_empty() {
            let set: HashSet<(&str, QueueId)> =
                damaged.iter().map(|(t, q, _)| (t.as_str(), *q)).collect();
            let removed = self
                .consume_queues
                .remove("", |t, cq| set.contains(&(t, cq.queue_id())));
            for (_, _, cq) in removed {
                cq.queue().destroy()?;
            }
            for (topic, qid, why) in &damaged {
                log::warn!(
                    "ConsumeQueue {topic}/{} is damaged ({why}); rebuilding it from the CommitLog",
                    qid.get()
                );
            }
            self.check_stats
                .rebuilt_queues
                .fetch_add(damaged.len() as u64, Ordering::Relaxed);
            from = cl_min;
        }
        if self.config.message_index_enable {
            if let Some(at) = self.check_index(cl_min)? {
                from = from.min(at);
            }
        }
        if from == i64::MAX {
            return remove_marker(&marker);
        }
        self.reput.set_reput_from_offset(from);
        let targets = self.dispatch_targets();
        while self.reput.do_reput(&targets) {}
        if self.dispatch_behind_bytes() > 0 {
            return Err(StoreError::ServiceNotAvailable(format!(
                "rebuilding damaged ConsumeQueues or index files stopped at CommitLog offset {} \
                 (see the error above, often a full disk); free space and start again",
                self.reput.reput_from_offset()
            )));
        }
        remove_marker(&marker)
    }

    /// `Err(what is wrong)` when a sampled unit or the sampled sequence is damaged.
    fn check_queue(&self, cq: &ConsumeQueue, cl_min: i64) -> std::result::Result<(), String> {
        if cq.cut_in_middle() {
            return Err("recovery cut it at a damaged unit with valid units after it".to_owned());
        }
        let files = cq.queue().files();
        let Some(first_file) = files.first() else {
            return Ok(());
        };
        // Retention deletes head files; blank units pad a queue that starts above its first
        // file's start (dispatch's `fill_pre_blank`). Neither is damage.
        let max = cq.max_offset_in_queue();
        let mut min = cq
            .min_offset_in_queue()
            .max(first_file.file_from_offset() / UNIT);
        while min < max && cq.get_unit(min).is_some_and(|u| u.size == i32::MAX) {
            min += 1;
        }
        if max <= min {
            return Ok(());
        }
        let per_file = i64::try_from(cq.queue().file_size()).unwrap_or(i64::MAX) / UNIT;
        let mut seq = SeqCheck::new(self.commit_log.max_offset());
        let mut samples: Vec<i64> = (max - TAIL_UNITS..max).collect();
        samples.extend((0..SPREAD_UNITS).map(|k| min + (max - min) * k / SPREAD_UNITS));
        for (n, f) in files.iter().enumerate() {
            let file_start = f.file_from_offset() / UNIT;
            let (first, end) = (file_start.max(min), (file_start + per_file).min(max));
            if first >= end {
                continue;
            }
            samples.push(first);
            if n + SEQ_FILES >= files.len() {
                seq.units(cq, first, end)?;
                continue;
            }
            let mut cursor = first;
            for start in [first, first + (end - first) / 2, end - SEQ_WINDOW] {
                let start = start.max(cursor);
                let stop = (start + SEQ_WINDOW).min(end);
                if start < stop {
                    seq.units(cq, start, stop)?;
                    cursor = stop;
                }
            }
        }
        samples.retain(|&i| i >= min && i < max);
        samples.sort_unstable();
        samples.dedup();
        for i in samples {
            let u = cq
                .get_unit(i)
                .ok_or_else(|| format!("unit {i} cannot be read"))?;
            // A blank unit stands in for a record recovery found damaged (`fill_gap`), and a
            // unit into a damaged range is the CommitLog's damage, not the queue's: reads pass
            // both over, and rebuilding the queue would give them back.
            let stand_in = u.size == i32::MAX
                || self
                    .commit_log
                    .damaged()
                    .overlaps(u.offset, i64::from(u.size));
            if u.offset >= cl_min && !stand_in {
                self.check_unit(cq.topic(), cq.queue_id().get(), i, &u)?;
            }
        }
        Ok(())
    }

    /// `Err(what is wrong)` unless `u` (queue offset `index`) points at its own record.
    fn check_unit(
        &self,
        topic: &str,
        queue_id: i32,
        index: i64,
        u: &CqUnit,
    ) -> std::result::Result<(), String> {
        let at = u.offset;
        let size =
            usize::try_from(u.size).map_err(|_| format!("unit {index} has size {}", u.size))?;
        let sel = self.commit_log.get_message(at, size).ok_or_else(|| {
            format!(
                "unit {index} points at CommitLog offset {at} size {size}, outside the CommitLog"
            )
        })?;
        let r = DecodedRecord::parse(sel.bytes())
            .map_err(|e| format!("unit {index}: no valid record at CommitLog offset {at}: {e}"))?;
        if r.total_size != size || r.physical_offset != at {
            return Err(format!(
                "unit {index} says size {size} at {at}; the record there is {} bytes at {}",
                r.total_size, r.physical_offset
            ));
        }
        if r.topic != topic || r.queue_id != queue_id || r.queue_offset != index {
            return Err(format!(
                "unit {index} points at the record of {}/{} queue offset {} (CommitLog offset {at})",
                r.topic, r.queue_id, r.queue_offset
            ));
        }
        // A parked message's unit carries its delivery time, computed with the delay levels
        // configured when it was dispatched; they may have changed since.
        if topic != SCHEDULE_TOPIC {
            let tags =
                DispatchRequest::from_record(&r, self.reput.delay_levels_ms()).map(|d| d.tags_code);
            if tags != Some(u.tags_code) {
                return Err(format!(
                    "unit {index} has tags code {}, its record {tags:?}",
                    u.tags_code
                ));
            }
        }
        Ok(())
    }

    /// The read path: whether the record `bytes` read through unit `u` (queue offset
    /// `index` of `(topic, queue_id)`) is that unit's: a valid record of the unit's size at
    /// the unit's offset, of this queue and queue offset. A mismatch is counted and logged
    /// (once per 10 s).
    pub(super) fn record_is_units(
        &self,
        bytes: &[u8],
        u: &CqUnit,
        topic: &str,
        queue_id: i32,
        index: i64,
    ) -> bool {
        let why = match DecodedRecord::parse(bytes) {
            Ok(r)
                if i64::try_from(r.total_size).is_ok_and(|n| n == i64::from(u.size))
                    && r.physical_offset == u.offset
                    && r.topic == topic
                    && r.queue_id == queue_id
                    && r.queue_offset == index =>
            {
                return true
            }
            Ok(r) => format!(
                "the record of {}/{} queue offset {} ({} bytes at {})",
                r.topic, r.queue_id, r.queue_offset, r.total_size, r.physical_offset
            ),
            Err(e) => format!("no valid record ({e})"),
        };
        let n = self
            .check_stats
            .skipped_units
            .fetch_add(1, Ordering::Relaxed)
            + 1;
        self.note_damaged_queue(topic, queue_id);
        let now = now_millis();
        let last = self.check_stats.last_skip_log.load(Ordering::Relaxed);
        if now - last >= 10_000
            && self
                .check_stats
                .last_skip_log
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            log::error!(
                "ConsumeQueue {topic}/{queue_id} unit {index} points at {why}: the unit is \
                 damaged and skipped ({n} skipped so far); the next start rebuilds the queue \
                 from the CommitLog"
            );
        }
        false
    }

    /// Note `(topic, queue_id)` in [`DAMAGED_QUEUES_FILE`] (once per run) for the next start.
    fn note_damaged_queue(&self, topic: &str, queue_id: i32) {
        let mut noted = self
            .check_stats
            .noted
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !noted.insert((topic.to_owned(), queue_id)) {
            return;
        }
        let path = self.root.join(DAMAGED_QUEUES_FILE);
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{topic}\t{queue_id}").and_then(|()| f.sync_all()));
        if let Err(e) = written {
            log::error!(
                "could not note damaged ConsumeQueue {topic}/{queue_id} in {}: {e}",
                path.display()
            );
        }
    }

    /// The check's figures for `brokerStatus`.
    pub(super) fn check_runtime_info(&self) -> [(&'static str, String); 3] {
        [
            (
                "consumeQueueRebuiltAtStart",
                self.consume_queues_rebuilt().to_string(),
            ),
            (
                "indexFileRebuiltAtStart",
                self.index_files_rebuilt().to_string(),
            ),
            (
                "consumeQueueUnitSkipped",
                self.consume_queue_units_skipped().to_string(),
            ),
        ]
    }

    /// ConsumeQueues rebuilt at start-up.
    #[must_use]
    pub fn consume_queues_rebuilt(&self) -> u64 {
        self.check_stats.rebuilt_queues.load(Ordering::Relaxed)
    }

    /// Index files deleted as damaged at start-up (their range was re-indexed).
    #[must_use]
    pub fn index_files_rebuilt(&self) -> u64 {
        self.check_stats.rebuilt_index_files.load(Ordering::Relaxed)
    }

    /// ConsumeQueue units the read path skipped because their record is another message's.
    #[must_use]
    pub fn consume_queue_units_skipped(&self) -> u64 {
        self.check_stats.skipped_units.load(Ordering::Relaxed)
    }
}

fn remove_marker(path: &std::path::Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(StoreError::io(format!("removing {}", path.display()), e))
        }
        _ => Ok(()),
    }
}

/// The sequence check: units in increasing CommitLog order, each a record's size.
struct SeqCheck {
    cl_max: i64,
    /// `(queue offset, end of its record)` of the last unit seen.
    last: Option<(i64, i64)>,
}

impl SeqCheck {
    fn new(cl_max: i64) -> Self {
        Self { cl_max, last: None }
    }

    /// Check units `from..to` of `cq` (after those checked before).
    fn units(&mut self, cq: &ConsumeQueue, from: i64, to: i64) -> std::result::Result<(), String> {
        let mut i = from;
        while i < to {
            let (file, pos) = cq
                .units_from(i)
                .ok_or_else(|| format!("unit {i} cannot be read"))?;
            let bytes = file.read_from(pos).unwrap_or(&[]);
            let mut read = 0;
            for chunk in bytes.chunks_exact(CQ_STORE_UNIT_SIZE) {
                if i >= to {
                    break;
                }
                let u = CqUnit::decode(chunk).ok_or("short unit")?;
                self.unit(i, &u)?;
                i += 1;
                read += 1;
            }
            if read == 0 {
                return Err(format!("unit {i} cannot be read"));
            }
        }
        Ok(())
    }

    fn unit(&mut self, i: i64, u: &CqUnit) -> std::result::Result<(), String> {
        if u.size == i32::MAX && u.offset == 0 {
            return Ok(()); // a blank unit standing in for a damaged record (`fill_gap`)
        }
        if u.size <= 0 || u.size == i32::MAX || u.offset < 0 {
            return Err(format!(
                "unit {i} is zeroed or malformed (offset {}, size {})",
                u.offset, u.size
            ));
        }
        let end = u.offset + i64::from(u.size);
        if end > self.cl_max {
            return Err(format!(
                "unit {i} ends at {end}, past the CommitLog's end {}",
                self.cl_max
            ));
        }
        if let Some((j, prev_end)) = self.last {
            if u.offset < prev_end {
                return Err(format!(
                    "unit {i} points at CommitLog offset {}, before the end {prev_end} of unit \
                     {j}'s record",
                    u.offset
                ));
            }
        }
        self.last = Some((i, end));
        Ok(())
    }
}
