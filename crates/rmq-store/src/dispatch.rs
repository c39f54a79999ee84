//! Dispatch ("reput"): turning CommitLog records into ConsumeQueue units and IndexFile
//! entries. A message is visible to consumers only once dispatched. [`DispatchRequest`] holds
//! the decoding rules; [`ReputService`] (RocketMQ's `ReputMessageService`) owns the dispatch
//! position and runs the passes, on the `rmq-reput` thread, during recovery, and on a batch
//! put's own thread (`reput_inline`, from what the put wrote). Damaged
//! CommitLog ranges are never dispatched: those recovery found ([`crate::damaged`]) are
//! jumped over, and an invalid record it did not scan is skipped to the next valid one.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmq_common::properties::find;

use rmq_common::sys_flag::{transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE};
use rmq_common::time::now_millis;

use crate::commit_log::{AppendResult, CommitLog};
use crate::commit_log_scan::next_valid_in;
use crate::consume_queue::QueueId;
use crate::consume_queue_table::{ConsumeQueueTable, DispatchCache};
use crate::error::{Result, StoreError};
use crate::flush::Waker;
use crate::format::{scan_record, CqUnit, DecodedRecord, MessageToStore, Scan};
use crate::index_file::IndexService;
use crate::index_suspend::{GatePass, IndexGate};
pub use crate::schedule::SCHEDULE_TOPIC;
use crate::schedule::{delay_level, deliver_timestamp};

/// What dispatchers need of one record (RocketMQ's `DispatchRequest`).
#[derive(Debug, Clone)]
pub struct DispatchRequest<'a> {
    /// Topic.
    pub topic: &'a str,
    /// Queue id.
    pub queue_id: i32,
    /// CommitLog offset.
    pub commit_log_offset: i64,
    /// Record size.
    pub msg_size: i32,
    /// Tag hash, or the delivery time for delayed messages.
    pub tags_code: i64,
    /// Store time.
    pub store_timestamp: i64,
    /// Logical offset in the ConsumeQueue.
    pub consume_queue_offset: i64,
    /// KEYS property.
    pub keys: Option<&'a str>,
    /// UNIQ_KEY property.
    pub uniq_key: Option<&'a str>,
    /// Sys flag.
    pub sys_flag: i32,
}

impl<'a> DispatchRequest<'a> {
    /// Build from a decoded record; `delay_levels_ms[level - 1]` gives delayed messages their
    /// delivery time as the tags code. `None` for a record whose size does not fit the 4-byte
    /// size field (which a record read by `scan_record` never has).
    #[must_use]
    pub fn from_record(r: &DecodedRecord<'a>, delay_levels_ms: &[i64]) -> Option<Self> {
        let at = (r.physical_offset, r.total_size);
        let req = Self::stored(r.topic, r.queue_id, at, r.queue_offset, r.store_timestamp);
        Some(req?.with_properties(r.sys_flag, r.properties, delay_levels_ms))
    }

    /// The same request for a record this store has just appended, built from what it wrote
    /// (`msg` stored with `sys_flag` as `res`) instead of from the bytes.
    fn from_appended(
        msg: &MessageToStore<'a>,
        sys_flag: i32,
        res: &AppendResult,
        delay_levels_ms: &[i64],
    ) -> Option<Self> {
        let at = (res.wrote_offset, res.wrote_bytes);
        let req = Self::stored(
            msg.topic,
            msg.queue_id,
            at,
            res.queue_offset,
            res.store_timestamp,
        );
        Some(req?.with_properties(sys_flag, msg.properties, delay_levels_ms))
    }

    /// Where a record of `topic`/`queue_id` was stored: `(offset, size)` in the CommitLog,
    /// its queue offset and time. `None` when the size does not fit the 4-byte size field.
    fn stored(
        topic: &'a str,
        queue_id: i32,
        (commit_log_offset, size): (i64, usize),
        consume_queue_offset: i64,
        store_timestamp: i64,
    ) -> Option<Self> {
        Some(Self {
            topic,
            queue_id,
            commit_log_offset,
            msg_size: i32::try_from(size).ok()?,
            tags_code: 0,
            store_timestamp,
            consume_queue_offset,
            keys: None,
            uniq_key: None,
            sys_flag: 0,
        })
    }

    /// The record's sys flag, and the tags code, keys and unique key of its PROPERTIES.
    fn with_properties(
        mut self,
        sys_flag: i32,
        properties: &'a [u8],
        delay_levels_ms: &[i64],
    ) -> Self {
        self.sys_flag = sys_flag;
        let [tags, keys, uniq_key] = [&find::TAGS, &find::KEYS, &find::UNIQ_KEY]
            .map(|f| f.find(properties).and_then(|v| std::str::from_utf8(v).ok()));
        self.tags_code = rmq_common::tags_hash_code(tags);
        if self.topic == SCHEDULE_TOPIC {
            // RocketMQ's CommitLog.checkMessageAndReturnSize: a parked message's unit carries
            // its delivery time, so the scheduler never reads the CommitLog to decide.
            let level = delay_level(properties).unwrap_or(0);
            if level > 0 {
                self.tags_code = deliver_timestamp(delay_levels_ms, level, self.store_timestamp);
            }
        } else if self.topic == crate::timer::TIMER_TOPIC {
            // Likewise a timer message's unit carries its slot time (TIMER_OUT_MS).
            self.tags_code = crate::timer::out_ms(properties, self.store_timestamp);
        }
        self.keys = keys;
        self.uniq_key = uniq_key;
        self
    }

    /// Whether the record goes into a ConsumeQueue (not a half or rolled-back transaction).
    #[must_use]
    pub fn is_queued(&self) -> bool {
        matches!(
            transaction_value(self.sys_flag),
            TRANSACTION_NOT_TYPE | TRANSACTION_COMMIT_TYPE
        )
    }
}

/// Called after each dispatched message: `(topic, queue_id, next queue offset, tags code,
/// store timestamp)`. The broker wakes held pulls with it.
pub type MessageArrivingListener = dyn Fn(&str, i32, i64, i64, i64) + Send + Sync;

/// What a dispatch pass writes to: the store's ConsumeQueues and (when
/// `messageIndexEnable`) its index.
pub(crate) struct DispatchTargets<'a> {
    pub(crate) commit_log: &'a CommitLog,
    pub(crate) consume_queues: &'a ConsumeQueueTable,
    pub(crate) index: Option<&'a IndexService>,
}

/// What a dispatch pass did.
struct Pass {
    /// The dispatch position moved.
    progressed: bool,
    /// A record could not be dispatched (see `report_dispatch_error`); it is retried later.
    blocked: bool,
}

/// What a pass does at a position.
enum Step<'a> {
    /// Dispatch this record.
    Dispatch(DispatchRequest<'a>),
    /// Go on at this CommitLog offset (filler or damage lies before it).
    Jump(i64),
    /// A record is cut off at the end of the bytes replicated so far: wait for more.
    PartialTail,
}

/// A batch put that dispatches its own records, from before its append until after its
/// pass. The dispatch thread sleeps while there is one. The last to end wakes it only when
/// a wake is owed ([`ReputService::owe_wake`]): records were published meanwhile that no
/// put's pass may have taken, or a put ended without its pass (it failed; its records, if
/// any, are the dispatch thread's then). Waking it after every batch, for a pass that found
/// nothing, was a tenth of the broker's CPU under 16 threads sending batches of 16.
pub(crate) struct InlineClaim<'w> {
    reput: &'w ReputService,
    dispatch_waker: &'w Waker,
    /// `ReputService::position_sets` when the claim was taken.
    position_sets: u64,
    /// The put's own pass ran.
    passed: bool,
}

impl Drop for InlineClaim<'_> {
    fn drop(&mut self) {
        let reput = self.reput;
        if !self.passed {
            reput.owe_wake();
        }
        // SeqCst, as the dispatch thread's check of `inline_claimed` after announcing its
        // sleep, and as `owe_wake`: either a publisher sees this claim gone and wakes the
        // sleeper itself, or this swap sees the wake it owes.
        if reput.inline_claims.fetch_sub(1, Ordering::SeqCst) == 1
            && reput.wake_owed.swap(false, Ordering::SeqCst)
        {
            self.dispatch_waker.wake_if_sleeping();
        }
    }
}

/// The records a put has just appended, as it wrote them: a pass on the put path builds
/// their requests from these instead of reading the records back (decoding them was 13 % of
/// the broker's CPU under batches of 4 096 x 256 B).
pub(crate) struct Appended<'s, 'm> {
    msgs: &'s [MessageToStore<'m>],
    results: &'s [AppendResult],
    store_host: SocketAddr,
    /// The first of `results` a pass has not reached.
    next: usize,
}

impl<'s, 'm> Appended<'s, 'm> {
    /// `results[i]` is where `msgs[i]` was stored by a store whose address is `store_host`.
    pub(crate) fn new(
        msgs: &'s [MessageToStore<'m>],
        results: &'s [AppendResult],
        store_host: SocketAddr,
    ) -> Self {
        Self {
            msgs,
            results,
            store_host,
            next: 0,
        }
    }

    /// The request of the record at CommitLog offset `at` when it is one of these (a pass
    /// asks in increasing order of `at`).
    fn request_at(&mut self, at: i64, delay_levels_ms: &[i64]) -> Option<DispatchRequest<'m>> {
        while self.results.get(self.next)?.wrote_offset < at {
            self.next += 1;
        }
        let res = self
            .results
            .get(self.next)
            .filter(|r| r.wrote_offset == at)?;
        let msg = self.msgs.get(self.next)?;
        self.next += 1;
        let sys_flag = msg.effective_sys_flag(&self.store_host);
        DispatchRequest::from_appended(msg, sys_flag, res, delay_levels_ms)
    }
}

/// The dispatch position and its pass (RocketMQ's `ReputMessageService`).
pub(crate) struct ReputService {
    /// CommitLog offset up to which every record is dispatched.
    reput_from_offset: AtomicI64,
    /// Store time of the last record dispatched (0 when none).
    last_dispatched_store_ts: AtomicI64,
    /// When a blocked dispatch was last reported (ms), to report it once per 5 s.
    last_error_log: AtomicI64,
    /// `messageDelayLevel` in ms: parked messages' units carry their delivery time.
    delay_levels_ms: Vec<i64>,
    /// Indexing, or suspended for want of space.
    index_gate: IndexGate,
    /// Batch puts under way that dispatch their own records (see [`InlineClaim`]).
    inline_claims: AtomicUsize,
    /// A wake of the dispatch thread is owed to the end of the claims (see [`InlineClaim`]).
    wake_owed: AtomicBool,
    /// Times the dispatch position was set (recovery, a CommitLog truncation): what a put
    /// wrote before a truncation may be gone, and other records at its offsets.
    position_sets: AtomicU64,
    listener: RwLock<Option<Arc<MessageArrivingListener>>>,
}

impl ReputService {
    pub(crate) fn new(delay_levels_ms: Vec<i64>) -> Self {
        Self {
            reput_from_offset: AtomicI64::new(0),
            last_dispatched_store_ts: AtomicI64::new(0),
            last_error_log: AtomicI64::new(0),
            delay_levels_ms,
            index_gate: IndexGate::default(),
            inline_claims: AtomicUsize::new(0),
            wake_owed: AtomicBool::new(false),
            position_sets: AtomicU64::new(0),
            listener: RwLock::new(None),
        }
    }

    /// Whether indexing is suspended (it could not be written; see `index_suspend`).
    pub(crate) fn index_suspended(&self) -> bool {
        self.index_gate.is_suspended()
    }

    /// The delay level table in milliseconds.
    pub(crate) fn delay_levels_ms(&self) -> &[i64] {
        &self.delay_levels_ms
    }

    /// Where dispatch is.
    pub(crate) fn reput_from_offset(&self) -> i64 {
        self.reput_from_offset.load(Ordering::Acquire)
    }

    /// Start dispatching at `offset` (recovery).
    pub(crate) fn set_reput_from_offset(&self, offset: i64) {
        self.position_sets.fetch_add(1, Ordering::SeqCst);
        self.reput_from_offset.store(offset, Ordering::Release);
    }

    /// Store time of the last record dispatched (0 when none).
    pub(crate) fn dispatched_store_timestamp(&self) -> i64 {
        self.last_dispatched_store_ts.load(Ordering::Acquire)
    }

    /// Register the hook that wakes held pulls.
    pub(crate) fn set_listener(&self, l: Arc<MessageArrivingListener>) {
        *self
            .listener
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(l);
    }

    /// Announce a batch put that will dispatch its own records ([`Self::reput_inline`]),
    /// before it appends them: the dispatch thread leaves them to it.
    pub(crate) fn claim_inline<'w>(&'w self, dispatch_waker: &'w Waker) -> InlineClaim<'w> {
        self.inline_claims.fetch_add(1, Ordering::SeqCst);
        InlineClaim {
            reput: self,
            dispatch_waker,
            position_sets: self.position_sets.load(Ordering::SeqCst),
            passed: false,
        }
    }

    /// Records were published for the dispatch thread: if batch puts hold claims, the last
    /// to end wakes it (call before waking it, which while claimed only puts it back to sleep).
    pub(crate) fn owe_wake(&self) {
        self.wake_owed.store(true, Ordering::SeqCst);
    }

    /// Whether batch puts are dispatching their own records: the dispatch thread waits,
    /// rather than read their records from another core's cache while they are written.
    pub(crate) fn inline_claimed(&self) -> bool {
        self.inline_claims.load(Ordering::SeqCst) > 0
    }

    /// One dispatch pass over what the CommitLog holds past the dispatch position, on the
    /// dispatch thread. Returns true when it made progress.
    pub(crate) fn do_reput(&self, t: &DispatchTargets<'_>) -> bool {
        let pass = self.pass(t.consume_queues.lock_dispatch_cache(), t, None);
        if pass.blocked {
            std::thread::sleep(Duration::from_millis(100));
        }
        pass.progressed
    }

    /// A pass under `claim` on the thread that just made records readable: a batch put
    /// right after it appended them (`appended`: what it wrote; its records are still in
    /// that thread's cache, where the dispatch thread would load them from another core's),
    /// or the group commit after a round. Waits for a pass under way (another batch's, which
    /// may take some of these records). Returns false when the pass is blocked: the dispatch
    /// thread retries the record on its own pace then.
    pub(crate) fn reput_inline(
        &self,
        t: &DispatchTargets<'_>,
        appended: Option<Appended<'_, '_>>,
        mut claim: InlineClaim<'_>,
    ) -> bool {
        let cache = t.consume_queues.lock_dispatch_cache();
        // Read under the lock a truncation holds while it sets the position: unchanged since
        // the claim, the records are still those the put wrote.
        let unmoved = self.position_sets.load(Ordering::SeqCst) == claim.position_sets;
        let pass = self.pass(cache, t, appended.filter(|_| unmoved));
        claim.passed = true;
        drop(claim);
        !pass.blocked
    }

    fn pass(
        &self,
        mut cache: DispatchCache<'_>,
        t: &DispatchTargets<'_>,
        mut appended: Option<Appended<'_, '_>>,
    ) -> Pass {
        // The position is read under the cache lock: a CommitLog truncation moves it back
        // while holding that lock.
        let mut reput = self.reput_from_offset.load(Ordering::Acquire);
        let min = t.commit_log.min_offset();
        if reput < min {
            reput = min;
        }
        let start = reput;
        let damaged = t.commit_log.damaged();
        let listener = self
            .listener
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut index = t.index.map(|i| self.index_gate.pass(i));
        let mut partial_tail = false;
        while !partial_tail && reput < t.commit_log.max_offset() {
            if let Some(past) = damaged.skip_from(reput) {
                // Recovery found these bytes damaged: nothing in them is dispatched.
                reput = past;
                continue;
            }
            let Some(data) = t.commit_log.get_data(reput) else {
                break;
            };
            let bytes = data.bytes();
            // Room left in the file past the bytes read: a record cut off there may still be
            // arriving (a slave's replication frames end anywhere), never one cut at the end.
            let room_after = data.file_pos() + bytes.len() < data.mapped_file().file_size();
            let mut pos = 0;
            let mut blocked = false;
            while pos < bytes.len() {
                let known = appended
                    .as_mut()
                    .and_then(|a| a.request_at(reput, &self.delay_levels_ms));
                let step = match known {
                    Some(req) => Step::Dispatch(req),
                    None => self.scan_step(bytes, pos, reput, room_after, t),
                };
                let req = match step {
                    Step::Dispatch(req) => req,
                    Step::Jump(to) => {
                        reput = to;
                        break;
                    }
                    Step::PartialTail => {
                        partial_tail = true;
                        break;
                    }
                };
                let gate = index.as_mut();
                if let Err(e) = self.dispatch(&req, &mut cache, gate, t, listener.as_deref()) {
                    // Keep the record undispatched and retry later, so it is not skipped
                    // (e.g. a ConsumeQueue file could not be created).
                    self.report_dispatch_error(&e, reput);
                    blocked = true;
                    break;
                }
                // Positive and below 2 GiB: both constructors checked it.
                pos += req.msg_size.unsigned_abs() as usize;
                reput += i64::from(req.msg_size);
                if damaged.skip_from(reput).is_some() {
                    break;
                }
            }
            self.reput_from_offset.store(reput, Ordering::Release);
            if blocked {
                return Pass {
                    progressed: reput != start,
                    blocked: true,
                };
            }
        }
        self.reput_from_offset.store(reput, Ordering::Release);
        Pass {
            progressed: reput != start,
            blocked: false,
        }
    }

    /// What to do with the bytes at `bytes[pos..]`, CommitLog offset `reput`, when no put
    /// has said what they hold: dispatch the record there, or jump past filler or damage.
    fn scan_step<'a>(
        &self,
        bytes: &'a [u8],
        pos: usize,
        reput: i64,
        room_after: bool,
        t: &DispatchTargets<'_>,
    ) -> Step<'a> {
        match scan_record(&bytes[pos..], false) {
            Scan::Message(r) => {
                if let Some(req) = DispatchRequest::from_record(&r, &self.delay_levels_ms) {
                    Step::Dispatch(req)
                } else {
                    log::error!("dispatch found a record at {reput} larger than 2 GiB");
                    Step::Jump(t.commit_log.roll_next_file(reput))
                }
            }
            Scan::Blank => Step::Jump(t.commit_log.roll_next_file(reput)),
            // A slave's CommitLog grows by replication frames, which may end inside a
            // record: the rest arrives with the next frame.
            Scan::Invalid(reason) if reason.is_truncated() && room_after => Step::PartialTail,
            Scan::Invalid(reason) => {
                // Published bytes are whole records: this is damage recovery did not scan
                // (it reads only the newest files). Resume at the next valid record of the
                // file, as recovery would, else at the next file.
                let base = reput - i64::try_from(pos).unwrap_or(0);
                let next = next_valid_in(bytes, base, pos + 1, bytes.len(), true);
                let past = next.map_or_else(
                    || t.commit_log.roll_next_file(reput),
                    |p| base + i64::try_from(p).unwrap_or(0),
                );
                log::error!(
                    "dispatch found an invalid record at CommitLog offset {reput} ({reason}): \
                     {} damaged bytes are skipped, dispatch resumes at {past}",
                    past - reput
                );
                Step::Jump(past)
            }
        }
    }

    fn report_dispatch_error(&self, e: &StoreError, at: i64) {
        let now = now_millis();
        let last = self.last_error_log.load(Ordering::Relaxed);
        if now - last >= 5_000 {
            self.last_error_log.store(now, Ordering::Relaxed);
            log::error!(
                "dispatch is blocked ({e}); stored messages past offset {at} stay invisible to \
                 consumers until this is fixed (retrying)"
            );
        }
    }

    fn dispatch(
        &self,
        req: &DispatchRequest<'_>,
        cache: &mut DispatchCache<'_>,
        index: Option<&mut GatePass<'_>>,
        t: &DispatchTargets<'_>,
        listener: Option<&MessageArrivingListener>,
    ) -> Result<()> {
        self.last_dispatched_store_ts
            .fetch_max(req.store_timestamp, Ordering::AcqRel);
        if req.is_queued() {
            let unit = CqUnit {
                offset: req.commit_log_offset,
                size: req.msg_size,
                tags_code: req.tags_code,
            };
            cache.put_unit(
                req.topic,
                QueueId::new(req.queue_id)?,
                unit,
                req.consume_queue_offset,
            )?;
        }
        if let Some(gate) = index {
            // Never an error: an index that cannot be written is suspended (index_suspend),
            // and the ConsumeQueues go on.
            gate.index(req, t.commit_log, &self.delay_levels_ms);
        }
        if req.is_queued() {
            if let Some(l) = listener {
                l(
                    req.topic,
                    req.queue_id,
                    req.consume_queue_offset + 1,
                    req.tags_code,
                    req.store_timestamp,
                );
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::{InlineClaim, ReputService};
    use crate::flush::Waker;

    /// How long a thread sleeping as the dispatch thread does under a claim (until no claim
    /// is left and it is woken, or for `limit`) sleeps on after `end` ends that claim.
    fn sleep_after(limit: Duration, end: impl FnOnce(InlineClaim<'_>, &ReputService)) -> Duration {
        let reput = Arc::new(ReputService::new(Vec::new()));
        let waker = Arc::new(Waker::default());
        let claim = reput.claim_inline(&waker);
        let (r, w) = (Arc::clone(&reput), Arc::clone(&waker));
        let sleeper = std::thread::spawn(move || w.wait_unless(limit, || !r.inline_claimed()));
        while !waker.sleeps_until_woken() {
            std::thread::yield_now();
        }
        let ended = Instant::now();
        end(claim, &reput);
        sleeper.join().unwrap();
        ended.elapsed()
    }

    #[test]
    fn the_last_claim_wakes_the_dispatch_thread_only_when_a_wake_is_owed() {
        let passed = |mut c: InlineClaim<'_>| c.passed = true;
        let quiet = sleep_after(Duration::from_millis(500), |c, _| passed(c));
        assert!(
            quiet >= Duration::from_millis(400),
            "a put whose pass took its records woke the dispatch thread after {quiet:?}"
        );
        let owed = sleep_after(Duration::from_secs(30), |c, reput| {
            reput.owe_wake();
            passed(c);
        });
        assert!(
            owed < Duration::from_secs(10),
            "records published under the claim: the dispatch thread slept on {owed:?}"
        );
        let failed = sleep_after(Duration::from_secs(30), |c, _| drop(c));
        assert!(
            failed < Duration::from_secs(10),
            "a put that ended without its pass: the dispatch thread slept on {failed:?}"
        );
    }
}
