//! A ConsumeQueue: for one (topic, queue), 20-byte units pointing into the CommitLog, in
//! `consumequeue/<topic>/<queueId>/`. Queue offset `n` lives at byte `n * 20`. Only the
//! dispatch thread (and recovery, before sharing) writes; pullers read published units.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use crate::error::{Result, StoreError};
use crate::format::{CqUnit, CQ_STORE_UNIT_SIZE};
use crate::mapped_file::MappedFile;
use crate::mapped_file_queue::MappedFileQueue;

#[expect(clippy::cast_possible_wrap, reason = "the constant 20")]
const UNIT: i64 = CQ_STORE_UNIT_SIZE as i64;

/// A queue id that can name a ConsumeQueue: `0..=65535` (the range a put accepts). A
/// negative or larger id from the wire or from disk is an error here, so it can never alias
/// another queue (such as queue 0) in a table indexed by position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueId(u16);

impl QueueId {
    /// `queue_id` when it is in `0..=65535`.
    ///
    /// # Errors
    /// [`StoreError::MessageIllegal`] naming the id and the range.
    pub fn new(queue_id: i32) -> Result<Self> {
        u16::try_from(queue_id).map(Self).map_err(|_| {
            StoreError::MessageIllegal(format!("queue id {queue_id} is outside 0..=65535"))
        })
    }

    /// The id as RocketMQ's wire and record fields carry it.
    #[must_use]
    pub fn get(self) -> i32 {
        i32::from(self.0)
    }

    /// The id as an index into a per-topic vector.
    #[must_use]
    pub fn index(self) -> usize {
        usize::from(self.0)
    }
}

/// One topic-queue's index into the CommitLog.
pub struct ConsumeQueue {
    topic: String,
    queue_id: QueueId,
    queue: MappedFileQueue,
    /// End (offset + size) of the last record indexed; units ending at or below it exist.
    max_physic_offset: AtomicI64,
    /// Byte position of the first valid unit.
    min_logic_offset: AtomicI64,
    /// Recovery cut this queue in the middle (valid-looking units followed the cut), so the
    /// re-dispatch may not refill it: the start-up check rebuilds it.
    cut_in_middle: AtomicBool,
}

impl ConsumeQueue {
    /// The queue for `(topic, queue_id)` under `root` (`.../consumequeue`).
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(root: &Path, topic: &str, queue_id: QueueId, file_size: usize) -> Result<Self> {
        let dir = root.join(topic).join(queue_id.get().to_string());
        Ok(Self {
            topic: topic.to_owned(),
            queue_id,
            queue: MappedFileQueue::new(dir, file_size)?,
            max_physic_offset: AtomicI64::new(-1),
            min_logic_offset: AtomicI64::new(0),
            cut_in_middle: AtomicBool::new(false),
        })
    }

    /// Topic.
    #[must_use]
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Queue id.
    #[must_use]
    pub fn queue_id(&self) -> QueueId {
        self.queue_id
    }

    /// The files.
    #[must_use]
    pub fn queue(&self) -> &MappedFileQueue {
        &self.queue
    }

    /// Open existing files.
    ///
    /// # Errors
    /// A file of the wrong size or name.
    pub fn load(&self) -> Result<()> {
        self.queue.load()
    }

    /// Recovery: find the last valid unit (scanning from the third-to-last file), cut the
    /// rest. Returns the end of the last CommitLog record referenced.
    ///
    /// # Errors
    /// When a file cannot be cut.
    pub fn recover(&self) -> Result<i64> {
        let files = self.queue.files();
        if files.is_empty() {
            return Ok(-1);
        }
        let size = self.queue.file_size();
        let mut idx = files.len().saturating_sub(3);
        let mut max_phy = -1;
        let process = loop {
            let f = &files[idx];
            let raw = f.raw_from(0);
            let mut pos = 0;
            while pos + CQ_STORE_UNIT_SIZE <= size {
                match CqUnit::decode(&raw[pos..]) {
                    Some(u) if u.offset >= 0 && u.size > 0 => {
                        if u.size != i32::MAX {
                            max_phy = u.offset + i64::from(u.size);
                        }
                        pos += CQ_STORE_UNIT_SIZE;
                    }
                    _ => break,
                }
            }
            if pos == size && idx + 1 < files.len() {
                idx += 1;
                continue;
            }
            // Data after the first invalid unit (past a torn last unit): a hole, not a tail.
            let after = raw.get(pos + CQ_STORE_UNIT_SIZE..).unwrap_or(&[]);
            let later = files[idx + 1..].iter().map(|f| f.raw_from(0));
            if std::iter::once(after)
                .chain(later)
                .any(|b| b.iter().any(|&b| b != 0))
            {
                self.cut_in_middle.store(true, Ordering::Release);
            }
            break f.offset_of(pos);
        };
        self.queue.set_flushed_where(process);
        self.queue.set_committed_where(process);
        self.queue.truncate_dirty_files(process)?;
        self.max_physic_offset.store(max_phy, Ordering::Release);
        Ok(max_phy)
    }

    /// Whether recovery cut this queue in the middle rather than at a torn tail.
    #[must_use]
    pub fn cut_in_middle(&self) -> bool {
        self.cut_in_middle.load(Ordering::Acquire)
    }

    /// Append the unit for queue offset `cq_offset` (dispatch). Idempotent: a unit whose
    /// record is already indexed is skipped, so re-dispatch after a crash is safe.
    ///
    /// # Errors
    /// When a new file cannot be created.
    pub fn put_message_position_info(&self, unit: CqUnit, cq_offset: i64) -> Result<()> {
        self.put_message_position_info_in(unit, cq_offset, &mut None)
    }

    /// [`put_message_position_info`](Self::put_message_position_info), given the file the
    /// caller appended this queue's last unit to (kept there for the next call). A batch's
    /// units follow one another in one file: appended there, they skip the look-up of the
    /// queue's last file (a lock and a reference count each, 5 % of the broker's CPU under
    /// 4 096-message batches).
    pub(crate) fn put_message_position_info_in(
        &self,
        unit: CqUnit,
        cq_offset: i64,
        last_file: &mut Option<Arc<MappedFile>>,
    ) -> Result<()> {
        if unit.offset + i64::from(unit.size) <= self.max_physic_offset.load(Ordering::Acquire) {
            return Ok(());
        }
        let expect = cq_offset * UNIT;
        if let Some(file) = last_file.as_deref() {
            if file.offset_of(file.wrote_position()) == expect && self.append_unit(file, unit)? {
                return Ok(());
            }
        }
        let file = self.queue.last_mapped_file_for_append(expect)?;
        let current = file.offset_of(file.wrote_position());
        if file.wrote_position() == 0 && current < expect && self.queue.files().len() == 1 {
            // A queue that starts above 0 (its head expired, or its files were lost): pad the
            // first file with blank units up to `expect` and start reading there.
            self.fill_pre_blank(&file, expect)?;
            self.min_logic_offset.store(expect, Ordering::Release);
        }
        let current = file.offset_of(file.wrote_position());
        if expect < current {
            return Ok(()); // duplicate
        }
        let file = if expect > current {
            self.fill_gap(current, expect)?
        } else {
            file
        };
        // A unit that cannot be written (no space) is an error: dispatch keeps the record
        // and retries, rather than skip a queue offset.
        self.append_unit(&file, unit)?;
        *last_file = Some(file);
        Ok(())
    }

    /// Append `unit` to `file` and move the queue's CommitLog high mark past its record;
    /// `Ok(false)`, and nothing written, when the file has no room for it.
    fn append_unit(&self, file: &MappedFile, unit: CqUnit) -> Result<bool> {
        let appended = file.append_bytes(&unit.encode())?;
        if appended {
            self.max_physic_offset
                .store(unit.offset + i64::from(unit.size), Ordering::Release);
        }
        Ok(appended)
    }

    /// Records of this queue between two dispatched ones are missing from the CommitLog
    /// (recovery skipped them as damaged): blank units stand in for them, so every later
    /// record keeps its own queue offset (reads pass blank units over). Returns the file to
    /// append the next unit to.
    fn fill_gap(&self, current: i64, expect: i64) -> Result<Arc<MappedFile>> {
        log::warn!(
            "ConsumeQueue {}/{}: queue offsets {}..{} have no record in the CommitLog (damaged \
             and skipped); blank units stand in for them",
            self.topic,
            self.queue_id.get(),
            current / UNIT,
            expect / UNIT
        );
        let blank = CqUnit {
            offset: 0,
            size: i32::MAX,
            tags_code: 0,
        }
        .encode();
        loop {
            let file = self.queue.last_mapped_file_for_append(expect)?;
            let at_expect = file.offset_of(file.wrote_position()) >= expect;
            if (at_expect && !file.is_full()) || (!at_expect && !file.append_bytes(&blank)?) {
                return Ok(file);
            }
        }
    }

    fn fill_pre_blank(&self, file: &MappedFile, until: i64) -> Result<()> {
        let blank = CqUnit {
            offset: 0,
            size: i32::MAX,
            tags_code: 0,
        }
        .encode();
        while file.offset_of(file.wrote_position()) < until {
            if !file.append_bytes(&blank)? {
                break;
            }
        }
        let at = file.offset_of(file.wrote_position());
        self.queue
            .set_flushed_where(self.queue.flushed_where().max(file.file_from_offset()));
        self.queue.set_committed_where(at);
        Ok(())
    }

    /// The unit at queue offset `index`.
    #[must_use]
    pub fn get_unit(&self, index: i64) -> Option<CqUnit> {
        let pos = index.checked_mul(UNIT)?;
        if pos < self.min_logic_offset.load(Ordering::Acquire) {
            return None;
        }
        let f = self.queue.find_mapped_file_by_offset(pos, false)?;
        let p = usize::try_from(pos - f.file_from_offset()).ok()?;
        CqUnit::decode(f.read(p, CQ_STORE_UNIT_SIZE)?)
    }

    /// Readable units from queue offset `index` to the end of their file.
    #[must_use]
    pub fn units_from(&self, index: i64) -> Option<(Arc<MappedFile>, usize)> {
        let pos = index.checked_mul(UNIT)?;
        if pos < self.min_logic_offset.load(Ordering::Acquire) {
            return None;
        }
        let f = self.queue.find_mapped_file_by_offset(pos, false)?;
        let p = usize::try_from(pos - f.file_from_offset()).ok()?;
        (p < f.read_position()).then_some((f, p))
    }

    /// Next queue offset to be written.
    #[must_use]
    pub fn max_offset_in_queue(&self) -> i64 {
        self.queue.max_offset().max(0) / UNIT
    }

    /// First valid queue offset.
    #[must_use]
    pub fn min_offset_in_queue(&self) -> i64 {
        self.min_logic_offset.load(Ordering::Acquire) / UNIT
    }

    /// End of the last CommitLog record indexed (-1 when none).
    #[must_use]
    pub fn max_physic_offset(&self) -> i64 {
        self.max_physic_offset.load(Ordering::Acquire)
    }

    /// Recovery: drop units whose record ends beyond `phy_offset`.
    ///
    /// # Errors
    /// When a file cannot be cut.
    pub fn truncate_dirty_logic_files(&self, phy_offset: i64) -> Result<()> {
        let files = self.queue.files();
        let mut cut_at: Option<i64> = None;
        let mut max_phy = -1;
        'files: for f in &files {
            let raw = f.raw_from(0);
            let mut pos = 0;
            while pos + CQ_STORE_UNIT_SIZE <= f.wrote_position() {
                let Some(u) = CqUnit::decode(&raw[pos..]) else {
                    break;
                };
                if u.size != i32::MAX && u.offset + i64::from(u.size) > phy_offset {
                    cut_at = Some(f.offset_of(pos));
                    // A later unit inside the CommitLog: this one was damage, not a tail.
                    if let Some(n) =
                        CqUnit::decode(raw.get(pos + CQ_STORE_UNIT_SIZE..).unwrap_or(&[]))
                    {
                        if n.size > 0
                            && n.size != i32::MAX
                            && n.offset + i64::from(n.size) <= phy_offset
                        {
                            self.cut_in_middle.store(true, Ordering::Release);
                        }
                    }
                    break 'files;
                }
                if u.size != i32::MAX {
                    max_phy = u.offset + i64::from(u.size);
                }
                pos += CQ_STORE_UNIT_SIZE;
            }
        }
        if let Some(at) = cut_at {
            self.queue.truncate_dirty_files(at)?;
            self.queue.set_committed_where(at);
            self.queue
                .set_flushed_where(self.queue.flushed_where().min(at));
            self.max_physic_offset.store(max_phy, Ordering::Release);
        }
        Ok(())
    }

    /// Move the min offset to the first unit whose record is still in the CommitLog.
    pub fn correct_min_offset(&self, phy_min: i64) {
        let Some(first) = self.queue.first_mapped_file() else {
            return;
        };
        let mut pos = usize::try_from(
            (self.min_logic_offset.load(Ordering::Acquire) - first.file_from_offset()).max(0),
        )
        .unwrap_or(0);
        while let Some(b) = first.read(pos, CQ_STORE_UNIT_SIZE) {
            let Some(u) = CqUnit::decode(b) else { break };
            if u.size != i32::MAX && u.offset >= phy_min {
                break;
            }
            pos += CQ_STORE_UNIT_SIZE;
        }
        let at = first.offset_of(pos);
        self.min_logic_offset.fetch_max(at, Ordering::AcqRel);
    }

    /// Delete files wholly below CommitLog offset `phy_min`; fix the min offset.
    pub fn delete_expired_file(&self, phy_min: i64) -> usize {
        let n = self
            .queue
            .delete_expired_by_offset(CQ_STORE_UNIT_SIZE, phy_min, |b| {
                CqUnit::decode(b).map_or(i64::MAX, |u| u.offset)
            });
        self.correct_min_offset(phy_min);
        n
    }

    /// Flush units to disk.
    ///
    /// # Errors
    /// When the sync fails.
    pub fn flush(&self, least_pages: usize) -> Result<bool> {
        self.queue.flush(least_pages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(i: i64) -> CqUnit {
        CqUnit {
            offset: i * 100,
            size: 100,
            tags_code: i,
        }
    }

    #[test]
    fn units_are_idempotent_and_readable() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", QueueId::new(1).unwrap(), 20 * 16).unwrap();
        for i in 0..40 {
            cq.put_message_position_info(unit(i), i).unwrap();
        }
        // Re-dispatch of what is already there changes nothing.
        cq.put_message_position_info(unit(10), 10).unwrap();
        assert_eq!(cq.max_offset_in_queue(), 40);
        assert_eq!(cq.get_unit(17), Some(unit(17)));
        assert_eq!(cq.max_physic_offset(), 40 * 100);
        assert!(
            dir.path().join("T/1/00000000000000000320").exists(),
            "16 units per file"
        );
    }

    #[test]
    fn units_put_through_the_last_file_land_where_the_look_up_puts_them() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", QueueId::new(2).unwrap(), 20 * 16).unwrap();
        let mut last_file = None;
        // Across two file ends, with a duplicate and a unit already held in between.
        for i in (0..20).chain([7, 19]).chain(20..40) {
            cq.put_message_position_info_in(unit(i), i, &mut last_file)
                .unwrap();
        }
        let file = last_file.expect("the file appended to is kept");
        assert_eq!(file.file_from_offset(), 2 * 20 * 16, "the third file");
        assert_eq!(cq.max_offset_in_queue(), 40);
        assert_eq!(
            (0..40).map(|i| cq.get_unit(i)).collect::<Vec<_>>(),
            (0..40).map(|i| Some(unit(i))).collect::<Vec<_>>()
        );
        // A held file that is not where the next unit goes is passed over.
        cq.put_message_position_info_in(unit(41), 41, &mut Some(Arc::clone(&file)))
            .unwrap();
        assert_eq!(
            cq.get_unit(40),
            Some(CqUnit {
                offset: 0,
                size: i32::MAX,
                tags_code: 0
            })
        );
        assert_eq!(cq.get_unit(41), Some(unit(41)));
    }

    #[test]
    fn a_queue_starting_above_zero_is_padded() {
        let dir = tempfile::tempdir().unwrap();
        let cq = ConsumeQueue::new(dir.path(), "T", QueueId::new(0).unwrap(), 20 * 16).unwrap();
        cq.put_message_position_info(unit(5), 5).unwrap();
        assert_eq!(cq.min_offset_in_queue(), 5);
        assert_eq!(cq.max_offset_in_queue(), 6);
        assert_eq!(cq.get_unit(4), None);
        assert_eq!(cq.get_unit(5), Some(unit(5)));
    }

    #[test]
    fn recover_and_truncate_by_commit_log_end() {
        let dir = tempfile::tempdir().unwrap();
        {
            let cq = ConsumeQueue::new(dir.path(), "T", QueueId::new(0).unwrap(), 20 * 16).unwrap();
            for i in 0..20 {
                cq.put_message_position_info(unit(i), i).unwrap();
            }
        }
        let cq = ConsumeQueue::new(dir.path(), "T", QueueId::new(0).unwrap(), 20 * 16).unwrap();
        cq.load().unwrap();
        assert_eq!(cq.recover().unwrap(), 20 * 100);
        assert_eq!(cq.max_offset_in_queue(), 20);
        // The CommitLog turned out to end at 1250: units whose record ends beyond go.
        cq.truncate_dirty_logic_files(1250).unwrap();
        assert_eq!(cq.max_offset_in_queue(), 12);
        assert_eq!(cq.max_physic_offset(), 1200);
        cq.correct_min_offset(500);
        assert_eq!(cq.min_offset_in_queue(), 5);
    }
}
