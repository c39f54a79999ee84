//! Indexing that cannot get space is suspended, not failed message by message.
//!
//! The IndexFile is the one part of the store a message can do without: it only serves
//! queries by key. When writing it fails (a new index file or a block of a sparse one cannot
//! be allocated on a full disk, or any other I/O error), [`IndexGate`] logs one warning,
//! remembers the CommitLog offset of the first message left unindexed and lets dispatch go
//! on: ConsumeQueues keep being written, consumers keep getting messages. Every
//! [`RETRY_MS`] the next dispatched message tries again. Once a write succeeds the gate
//! back-fills the gap from the CommitLog, in offset order and at most [`BACKFILL_STEP`] bytes
//! of CommitLog per dispatched message (the dispatch thread does it, so consumers wait that
//! long at most), then indexes new messages as before and logs that indexing resumed. Until
//! then queries by key do not find the messages stored meanwhile. A restart in between
//! catches up too: recovery re-dispatches from where the index ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmq_common::time::now_millis;

use crate::commit_log::CommitLog;
use crate::dispatch::DispatchRequest;
use crate::error::StoreError;
use crate::format::{scan_record, Scan};
use crate::index_file::{IndexFile, IndexRequest, IndexService};

/// How often a suspended index tries again (ms): one failed allocation a second is nothing.
pub(crate) const RETRY_MS: i64 = 1_000;
/// How often a still-suspended index says so again (ms).
const REMIND_MS: i64 = 300_000;
/// CommitLog bytes back-filled per dispatched message while catching up.
pub(crate) const BACKFILL_STEP: i64 = 16 << 20;

/// Why and since when indexing is suspended.
struct Suspended {
    /// First CommitLog offset whose index entries may be missing.
    from: i64,
    /// When to try again (ms).
    next_try_ms: i64,
    /// When the last warning was logged (ms).
    warned_ms: i64,
    /// Messages with keys not indexed so far (for the log lines).
    missed: u64,
}

/// The index's state as dispatch sees it: indexing, or suspended since an offset.
#[derive(Default)]
pub(crate) struct IndexGate {
    suspended: Mutex<Option<Suspended>>,
    /// Whether `suspended` held a value when the last pass ended: what
    /// [`is_suspended`](IndexGate::is_suspended) answers without waiting for a pass.
    suspended_after_pass: AtomicBool,
}

/// An index request for a record, as dispatch makes it.
fn index_request<'a>(req: &DispatchRequest<'a>) -> Option<IndexRequest<'a>> {
    (req.keys.is_some() || req.uniq_key.is_some()).then_some(IndexRequest {
        topic: req.topic,
        keys: req.keys,
        uniq_key: req.uniq_key,
        commit_log_offset: req.commit_log_offset,
        store_timestamp: req.store_timestamp,
        sys_flag: req.sys_flag,
    })
}

impl IndexGate {
    /// Whether indexing was suspended when the last dispatch pass ended.
    pub(crate) fn is_suspended(&self) -> bool {
        self.suspended_after_pass.load(Ordering::Acquire)
    }

    fn lock(&self) -> MutexGuard<'_, Option<Suspended>> {
        self.suspended
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The gate for one dispatch pass writing to `index`: locked once for the pass, not once
    /// a message.
    pub(crate) fn pass<'a>(&'a self, index: &'a IndexService) -> GatePass<'a> {
        GatePass {
            index,
            flag: &self.suspended_after_pass,
            state: self.lock(),
            last_file: None,
        }
    }
}

/// [`IndexGate`] held by a dispatch pass, with the index file its last keys went into.
pub(crate) struct GatePass<'a> {
    index: &'a IndexService,
    flag: &'a AtomicBool,
    state: MutexGuard<'a, Option<Suspended>>,
    last_file: Option<Arc<IndexFile>>,
}

impl Drop for GatePass<'_> {
    fn drop(&mut self) {
        self.flag.store(self.state.is_some(), Ordering::Release);
    }
}

impl GatePass<'_> {
    /// Index the keys of one dispatched record (see the module doc). Never fails: a failure
    /// suspends indexing.
    pub(crate) fn index(
        &mut self,
        req: &DispatchRequest<'_>,
        commit_log: &CommitLog,
        delay_levels_ms: &[i64],
    ) {
        let Some(ireq) = index_request(req) else {
            return;
        };
        let index = self.index;
        let state = &mut *self.state;
        let Some(s) = state.as_mut() else {
            if let Err(e) = index.build_index_in(&ireq, &mut self.last_file) {
                *state = Some(suspend(req.commit_log_offset, &e));
            }
            return;
        };
        // Suspended: back-filling writes the index without this pass's file.
        self.last_file = None;
        let now = now_millis();
        if now < s.next_try_ms {
            s.missed += 1;
            if now - s.warned_ms >= REMIND_MS {
                s.warned_ms = now;
                log::warn!(
                    "indexing is still suspended (from CommitLog offset {}; {} messages with \
                     keys not indexed yet); it resumes and back-fills once the disk has space",
                    s.from,
                    s.missed
                );
            }
            return;
        }
        let upto = req.commit_log_offset;
        match backfill(index, commit_log, delay_levels_ms, s.from, upto) {
            Ok(at) if at >= upto => {
                if index.build_index(&ireq).is_ok() {
                    log::info!(
                        "indexing resumed: the keys of {} messages stored while it was \
                         suspended are indexed again (back-filled from CommitLog offset {})",
                        s.missed,
                        s.from
                    );
                    *state = None;
                } else {
                    s.from = upto;
                    s.next_try_ms = now + RETRY_MS;
                    s.missed += 1;
                }
            }
            Ok(at) => {
                // Caught up part of the way: go on with the next message, no pause.
                s.from = at;
                s.missed += 1;
            }
            Err(at) => {
                s.from = at;
                s.next_try_ms = now + RETRY_MS;
                s.missed += 1;
            }
        }
    }
}

fn suspend(at: i64, e: &StoreError) -> Suspended {
    log::warn!(
        "indexing suspended at CommitLog offset {at}: {e}. Messages are still stored and \
         consumed; queries by key will not find those stored from now on until the index can \
         be written again (retried every {} s, then back-filled from the CommitLog). Free space \
         on the store's partition",
        RETRY_MS / 1000
    );
    let now = now_millis();
    Suspended {
        from: at,
        next_try_ms: now + RETRY_MS,
        warned_ms: now,
        missed: 1,
    }
}

/// Index the records in `[from, upto)` (at most [`BACKFILL_STEP`] bytes of them). Returns
/// where it stopped: `upto` when done; on a failed write, `Err` with the offset of the record
/// that could not be indexed.
fn backfill(
    index: &IndexService,
    commit_log: &CommitLog,
    delay_levels_ms: &[i64],
    from: i64,
    upto: i64,
) -> Result<i64, i64> {
    let mut at = from.max(commit_log.min_offset());
    let stop = upto.min(from.saturating_add(BACKFILL_STEP));
    while at < stop {
        let Some(data) = commit_log.get_data(at) else {
            return Ok(upto); // nothing readable left below `upto`
        };
        let bytes = data.bytes();
        let mut pos = 0;
        let mut next_file = false;
        while pos < bytes.len() && at < stop {
            match scan_record(&bytes[pos..], false) {
                Scan::Message(r) => {
                    let Some(req) = DispatchRequest::from_record(&r, delay_levels_ms) else {
                        next_file = true;
                        break;
                    };
                    if let Some(ireq) = index_request(&req) {
                        if index.build_index(&ireq).is_err() {
                            return Err(at);
                        }
                    }
                    pos += r.total_size;
                    at += i64::from(req.msg_size);
                }
                Scan::Blank | Scan::Invalid(_) => {
                    next_file = true;
                    break;
                }
            }
        }
        if next_file {
            at = commit_log.roll_next_file(at);
        }
    }
    Ok(at.min(upto))
}
