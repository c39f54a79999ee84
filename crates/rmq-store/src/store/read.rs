//! The pull path of [`MessageStore`] (RocketMQ's `getMessage`): from a queue offset, walk
//! the ConsumeQueue units, filter by tags code, and select the CommitLog ranges the server
//! sends without copying, within the transfer limits for hot and cold data. Also reading one
//! record by CommitLog offset.

use std::sync::atomic::Ordering;

use super::MessageStore;
use crate::config::BrokerRole;
use crate::format::{scan_record, CqUnit, Scan, CQ_STORE_UNIT_SIZE};
use crate::mapped_file::SelectMappedBufferResult;

/// RocketMQ's `GetMessageStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[expect(
    missing_docs,
    reason = "RocketMQ's GetMessageStatus names, documented as a whole"
)]
pub enum GetMessageStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

impl GetMessageStatus {
    /// RocketMQ's name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Found => "FOUND",
            Self::NoMatchedMessage => "NO_MATCHED_MESSAGE",
            Self::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
            Self::OffsetFoundNull => "OFFSET_FOUND_NULL",
            Self::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
            Self::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
            Self::OffsetTooSmall => "OFFSET_TOO_SMALL",
            Self::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
            Self::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
        }
    }
}

/// What a pull read: file ranges the server can `sendfile`, and where to go next.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    /// Status.
    pub status: GetMessageStatus,
    /// Queue offset the consumer should ask for next.
    pub next_begin_offset: i64,
    /// Smallest queue offset.
    pub min_offset: i64,
    /// Next queue offset to be written.
    pub max_offset: i64,
    /// One range per message (see [`Self::into_runs`]).
    pub messages: Vec<SelectMappedBufferResult>,
    /// Sum of the ranges' lengths.
    pub buffer_total_size: usize,
    /// The data is cold (far behind the CommitLog tail); a slave could serve it.
    pub suggest_pulling_from_slave: bool,
}

impl GetMessageResult {
    /// The messages' ranges with each run of records stored back to back in one file made
    /// one range: what a reply sends (a batch's records, or a queue's burst, are one
    /// `sendfile` then, and cost the transport one region to walk, not one per message).
    #[must_use]
    pub fn into_runs(self) -> Vec<SelectMappedBufferResult> {
        let mut runs: Vec<SelectMappedBufferResult> = Vec::with_capacity(self.messages.len());
        for m in self.messages {
            if !runs.last_mut().is_some_and(|last| last.join(&m)) {
                runs.push(m);
            }
        }
        runs
    }

    fn empty(status: GetMessageStatus, next: i64, min: i64, max: i64) -> Self {
        Self {
            status,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
            messages: Vec::new(),
            buffer_total_size: 0,
            suggest_pulling_from_slave: false,
        }
    }
}

/// ConsumeQueue units as a count of queue offsets (a unit is 20 bytes).
#[expect(clippy::cast_possible_wrap, reason = "the constant 20")]
const UNIT: i64 = CQ_STORE_UNIT_SIZE as i64;

impl MessageStore {
    /// Read up to `max_msg_nums` messages of `(topic, queue_id)` from queue offset `offset`
    /// (RocketMQ's `getMessage`), keeping those whose tags code `filter` accepts.
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: usize,
        filter: Option<&dyn Fn(i64) -> bool>,
    ) -> GetMessageResult {
        use GetMessageStatus as S;
        // `nextOffsetCorrection`: a slave (its queues may lag the master's) never moves a
        // consumer's offset; the consumer keeps it and asks again (RocketMQ's
        // `offsetCheckInSlave` = false).
        let slave = self.broker_role() == BrokerRole::Slave;
        let correct = |next: i64| if slave { offset } else { next };
        let Some(cq) = self.get_consume_queue(topic, queue_id) else {
            return GetMessageResult::empty(S::NoMatchedLogicQueue, correct(0), 0, 0);
        };
        let (min, max) = (cq.min_offset_in_queue(), cq.max_offset_in_queue());
        if max == 0 {
            return GetMessageResult::empty(S::NoMessageInQueue, correct(0), min, max);
        }
        if offset < min {
            return GetMessageResult::empty(S::OffsetTooSmall, correct(min), min, max);
        }
        if offset == max {
            return GetMessageResult::empty(S::OffsetOverflowOne, offset, min, max);
        }
        if offset > max {
            let next = if min == 0 { min } else { max };
            return GetMessageResult::empty(S::OffsetOverflowBadly, correct(next), min, max);
        }
        let Some((file, pos)) = cq.units_from(offset) else {
            let next = cq.queue().roll_next_file(offset * UNIT) / UNIT;
            return GetMessageResult::empty(S::OffsetFoundNull, correct(next), min, max);
        };
        let units = file.read_from(pos).unwrap_or(&[]);
        let max_phy = self.commit_log.max_offset();
        let memory = self.in_memory_bytes();
        let max_filter_bytes = (max_msg_nums * CQ_STORE_UNIT_SIZE).max(16_000);
        let mut res = GetMessageResult::empty(S::NoMatchedMessage, offset, min, max);
        let mut next_phy_file_start = i64::MIN;
        let mut max_phy_pulling = 0;
        let mut read_units: i64 = 0;
        let mut held = None;
        let mut i = 0;
        while i + CQ_STORE_UNIT_SIZE <= units.len() && i < max_filter_bytes {
            let Some(u) = CqUnit::decode(&units[i..]) else {
                break;
            };
            i += CQ_STORE_UNIT_SIZE;
            read_units += 1;
            max_phy_pulling = u.offset;
            if next_phy_file_start != i64::MIN && u.offset < next_phy_file_start {
                continue;
            }
            if u.size == i32::MAX {
                // A blank unit: no record (a queue's padded head, or one recovery found damaged).
                continue;
            }
            let in_disk = max_phy - u.offset > memory;
            // A unit with a negative size (damage) points at no message: skip it rather than
            // read it as an empty one.
            let Ok(size) = usize::try_from(u.size) else {
                continue;
            };
            if self.is_batch_full(
                size,
                max_msg_nums,
                res.buffer_total_size,
                res.messages.len(),
                in_disk,
            ) {
                read_units -= 1;
                break;
            }
            if let Some(f) = filter {
                if !f(u.tags_code) {
                    continue;
                }
            }
            if let Some(sel) = self.commit_log.get_message_in(u.offset, size, &mut held) {
                // A damaged unit may point into damaged bytes or at another message: never
                // serve it at this offset.
                if !self.servable(&sel, &u, topic, queue_id, offset + read_units - 1) {
                    continue;
                }
                res.buffer_total_size += sel.len();
                res.messages.push(sel);
                res.status = S::Found;
                next_phy_file_start = i64::MIN;
            } else {
                if res.messages.is_empty() {
                    res.status = S::MessageWasRemoving;
                }
                next_phy_file_start = self.commit_log.roll_next_file(u.offset);
            }
        }
        res.next_begin_offset = offset + read_units;
        res.suggest_pulling_from_slave = max_phy - max_phy_pulling > memory;
        res
    }

    /// Whether the record `sel` that unit `u` (queue offset `index`) selected may be sent:
    /// not in a range recovery found damaged, and the unit's own record (damage recovery did
    /// not look at, as it reads only the newest files after a clean stop, or a unit pointing
    /// at another message). Otherwise the unit is passed over rather than wrong bytes sent.
    /// A unit this run's dispatch made is its record's by construction: it is not read again
    /// (the record's pages then go to the socket untouched, see `rmq_remoting::io`).
    fn servable(
        &self,
        sel: &SelectMappedBufferResult,
        u: &CqUnit,
        topic: &str,
        qid: i32,
        index: i64,
    ) -> bool {
        !self
            .commit_log
            .damaged()
            .overlaps(u.offset, i64::from(u.size))
            && (u.offset >= self.units_dispatched_from.load(Ordering::Acquire)
                || self.record_is_units(sel.bytes(), u, topic, qid, index))
    }

    fn is_batch_full(
        &self,
        size: usize,
        max_msg_nums: usize,
        total: usize,
        count: usize,
        in_disk: bool,
    ) -> bool {
        if total == 0 || count == 0 {
            return false;
        }
        if count >= max_msg_nums {
            return true;
        }
        let c = &self.config;
        if in_disk {
            total + size > c.max_transfer_bytes_on_message_in_disk
                || count >= c.max_transfer_count_on_message_in_disk
        } else {
            total + size > c.max_transfer_bytes_on_message_in_memory
                || count >= c.max_transfer_count_on_message_in_memory
        }
    }

    /// The record at CommitLog offset `phy_offset` (`None` when it is not there, or lies in a
    /// range recovery found damaged).
    #[must_use]
    pub fn look_message_by_offset(&self, phy_offset: i64) -> Option<SelectMappedBufferResult> {
        if self.commit_log.damaged().overlaps(phy_offset, 1) {
            return None;
        }
        let head = self.commit_log.get_message(phy_offset, 4)?;
        let size = usize::try_from(i32::from_be_bytes(head.bytes().try_into().ok()?)).ok()?;
        if size < 8 {
            return None;
        }
        let sel = self.commit_log.get_message(phy_offset, size)?;
        matches!(scan_record(sel.bytes(), false), Scan::Message(_)).then_some(sel)
    }
}
