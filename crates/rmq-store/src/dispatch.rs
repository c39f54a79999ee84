//! Dispatch ("reput"): turning CommitLog records into ConsumeQueue units and IndexFile
//! entries. A message is visible to consumers only once dispatched. [`DispatchRequest`] holds
//! the decoding rules; [`ReputService`] (RocketMQ's `ReputMessageService`) owns the dispatch
//! position and runs the passes, on the `rmq-reput` thread and during recovery. Damaged
//! CommitLog ranges are never dispatched: those recovery found ([`crate::damaged`]) are
//! jumped over, and an invalid record it did not scan is skipped to the next valid one.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rmq_common::properties::find;
use rmq_common::sys_flag::{transaction_value, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE};
use rmq_common::time::now_millis;

use crate::commit_log::CommitLog;
use crate::commit_log_scan::next_valid_in;
use crate::consume_queue::QueueId;
use crate::consume_queue_table::{ConsumeQueueTable, DispatchCache};
use crate::error::{Result, StoreError};
use crate::format::{scan_record, CqUnit, DecodedRecord, Scan};
use crate::index_file::IndexService;
use crate::index_suspend::IndexGate;
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
        let msg_size = i32::try_from(r.total_size).ok()?;
        let [tags, keys, uniq_key] = [&find::TAGS, &find::KEYS, &find::UNIQ_KEY].map(|f| {
            f.find(r.properties)
                .and_then(|v| std::str::from_utf8(v).ok())
        });
        let mut tags_code = rmq_common::tags_hash_code(tags);
        if r.topic == SCHEDULE_TOPIC {
            // RocketMQ's CommitLog.checkMessageAndReturnSize: a parked message's unit carries
            // its delivery time, so the scheduler never reads the CommitLog to decide.
            let level = delay_level(r.properties).unwrap_or(0);
            if level > 0 {
                tags_code = deliver_timestamp(delay_levels_ms, level, r.store_timestamp);
            }
        } else if r.topic == crate::timer::TIMER_TOPIC {
            // Likewise a timer message's unit carries its slot time (TIMER_OUT_MS).
            tags_code = crate::timer::out_ms(r.properties, r.store_timestamp);
        }
        Some(Self {
            topic: r.topic,
            queue_id: r.queue_id,
            commit_log_offset: r.physical_offset,
            msg_size,
            tags_code,
            store_timestamp: r.store_timestamp,
            consume_queue_offset: r.queue_offset,
            keys,
            uniq_key,
            sys_flag: r.sys_flag,
        })
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

    /// One dispatch pass over what the CommitLog holds past the dispatch position, on the
    /// dispatch thread. Returns true when it made progress.
    pub(crate) fn do_reput(&self, t: &DispatchTargets<'_>) -> bool {
        let pass = self.pass(t.consume_queues.lock_dispatch_cache(), t);
        if pass.blocked {
            std::thread::sleep(Duration::from_millis(100));
        }
        pass.progressed
    }

    /// A pass on the put path, right after a batch was appended: its records are still in
    /// that thread's cache, where the dispatch thread would load them from another core's.
    /// Returns false when another pass holds the position or this one is blocked: the
    /// dispatch thread is to be woken then (and retries a blocked record on its own pace).
    pub(crate) fn reput_inline(&self, t: &DispatchTargets<'_>) -> bool {
        t.consume_queues
            .try_lock_dispatch_cache()
            .is_some_and(|cache| !self.pass(cache, t).blocked)
    }

    fn pass(&self, mut cache: DispatchCache<'_>, t: &DispatchTargets<'_>) -> Pass {
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
                match scan_record(&bytes[pos..], false) {
                    Scan::Message(r) => {
                        let Some(req) = DispatchRequest::from_record(&r, &self.delay_levels_ms)
                        else {
                            log::error!("dispatch found a record at {reput} larger than 2 GiB");
                            reput = t.commit_log.roll_next_file(reput);
                            break;
                        };
                        if let Err(e) = self.dispatch(&req, &mut cache, t, listener.as_deref()) {
                            // Keep the record undispatched and retry later, so it is not
                            // skipped (e.g. a ConsumeQueue file could not be created).
                            self.report_dispatch_error(&e, reput);
                            blocked = true;
                            break;
                        }
                        pos += r.total_size;
                        reput += i64::from(req.msg_size);
                        if damaged.skip_from(reput).is_some() {
                            break;
                        }
                    }
                    Scan::Blank => {
                        reput = t.commit_log.roll_next_file(reput);
                        break;
                    }
                    Scan::Invalid(reason) if reason.is_truncated() && room_after => {
                        // A slave's CommitLog grows by replication frames, which may end
                        // inside a record: the rest arrives with the next frame.
                        partial_tail = true;
                        break;
                    }
                    Scan::Invalid(reason) => {
                        // Published bytes are whole records: this is damage recovery did not
                        // scan (it reads only the newest files). Resume at the next valid
                        // record of the file, as recovery would, else at the next file.
                        let base = reput - i64::try_from(pos).unwrap_or(0);
                        let next = next_valid_in(bytes, base, pos + 1, bytes.len(), true);
                        let past = next.map_or_else(
                            || t.commit_log.roll_next_file(reput),
                            |p| base + i64::try_from(p).unwrap_or(0),
                        );
                        log::error!(
                            "dispatch found an invalid record at CommitLog offset {reput} \
                             ({reason}): {} damaged bytes are skipped, dispatch resumes at {past}",
                            past - reput
                        );
                        reput = past;
                        break;
                    }
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
        t: &DispatchTargets<'_>,
        listener: Option<&MessageArrivingListener>,
    ) -> Result<()> {
        self.last_dispatched_store_ts
            .fetch_max(req.store_timestamp, Ordering::AcqRel);
        if req.is_queued() {
            let cq = QueueId::new(req.queue_id).and_then(|q| cache.get_or_create(req.topic, q));
            let unit = CqUnit {
                offset: req.commit_log_offset,
                size: req.msg_size,
                tags_code: req.tags_code,
            };
            cq?.put_message_position_info(unit, req.consume_queue_offset)?;
        }
        if let Some(index) = t.index {
            // Never an error: an index that cannot be written is suspended (index_suspend),
            // and the ConsumeQueues go on.
            self.index_gate
                .index(index, req, t.commit_log, &self.delay_levels_ms);
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
