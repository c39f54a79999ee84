//! The put path of [`MessageStore`]: the write checks (shut down, slave, disk full, page
//! cache busy, no pool buffer), parking of delay-level and timer messages, the append under
//! the CommitLog put lock, and the durability wait (SYNC_FLUSH group commit, or a nudge of
//! the commit thread under ASYNC_FLUSH). Also the re-put of parked messages that the
//! scheduler says are due ([`MessageStore::deliver_scheduled`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use rmq_common::time::now_millis;

use super::MessageStore;
use crate::commit_log::AppendResult;
use crate::config::BrokerRole;
use crate::dispatch::{Appended, InlineClaim};
use crate::error::{Result, StoreError};
use crate::flush::{FlushCallback, FlushFuture, FlushOutcome};
use crate::format::MessageToStore;
use crate::schedule::{self, DeliverOutcome};

/// Status of a put that stored the message (RocketMQ's `PutMessageStatus`, stored cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMessageStatus {
    /// Stored (and, under SYNC_FLUSH, durable).
    PutOk,
    /// Stored, but not durable within `syncFlushTimeout`.
    FlushDiskTimeout,
    /// SYNC_MASTER: stored, but no slave acknowledged it within `syncFlushTimeout`.
    FlushSlaveTimeout,
    /// SYNC_MASTER: stored, but no slave is connected or in sync (`haMaxGapNotInSync`).
    SlaveNotAvailable,
}

impl PutMessageStatus {
    /// RocketMQ's name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PutOk => "PUT_OK",
            Self::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
            Self::FlushSlaveTimeout => "FLUSH_SLAVE_TIMEOUT",
            Self::SlaveNotAvailable => "SLAVE_NOT_AVAILABLE",
        }
    }
}

/// A stored message's place and status.
#[derive(Debug, Clone, Copy)]
pub struct PutMessageResult {
    /// Status.
    pub status: PutMessageStatus,
    /// Where it was written.
    pub append: AppendResult,
}

impl MessageStore {
    fn check_writable(&self) -> Result<()> {
        if self.shutdown.load(Ordering::Acquire) {
            return Err(StoreError::ServiceNotAvailable(
                "the message store is shut down".into(),
            ));
        }
        if self.ha.role() == BrokerRole::Slave {
            return Err(StoreError::ServiceNotAvailable(
                "this broker is a slave (brokerRole=SLAVE); send to its master".into(),
            ));
        }
        if self.disk_full.load(Ordering::Acquire) {
            return Err(StoreError::ServiceNotAvailable(self.disk_full_remark()));
        }
        let held = self.commit_log.lock_time_millis();
        if held > i64::from(self.config.os_page_cache_busy_timeout_mills) && held < 10_000_000 {
            return Err(StoreError::OsPageCacheBusy(held));
        }
        if self.config.fast_fail_if_no_buffer_in_store_pool {
            if let Some(p) = &self.pool {
                if p.available_buffer_nums() == 0 {
                    return Err(StoreError::NoBufferInStorePool);
                }
            }
        }
        Ok(())
    }

    /// Whether puts are accepted now.
    #[must_use]
    pub fn is_writeable(&self) -> bool {
        self.check_writable().is_ok()
    }

    /// Store one message. Under SYNC_FLUSH it returns when the bytes are durable, on a
    /// SYNC_MASTER when a slave has them too (or with FLUSH_SLAVE_TIMEOUT /
    /// SLAVE_NOT_AVAILABLE, which win over FLUSH_DISK_TIMEOUT as in RocketMQ).
    ///
    /// Every put path parks a message whose `DELAY` property names a level (see
    /// [`schedule`](crate::schedule)): it is stored in `SCHEDULE_TOPIC_XXXX` and the result
    /// describes that record.
    ///
    /// # Errors
    /// Illegal messages, refused writes (disk full, shut down, slave), I/O failures, and a
    /// failed flush — never a success for bytes that are not stored as promised.
    pub fn put_message(&self, msg: &MessageToStore<'_>) -> Result<PutMessageResult> {
        let append = self.append_one(msg)?;
        let status = self.wait_durable(append.end_offset())?;
        let status = self.wait_replicated(append.end_offset()).unwrap_or(status);
        Ok(PutMessageResult { status, append })
    }

    /// Append one message without waiting for durability (the single-message form of
    /// [`append`](Self::append), without its per-batch vectors).
    ///
    /// # Errors
    /// As [`append`](Self::append).
    pub fn append_one(&self, msg: &MessageToStore<'_>) -> Result<AppendResult> {
        self.check_writable()?;
        let now = now_millis();
        let parked = self.park(msg, now)?;
        let rerouted;
        let msg = match &parked {
            Some(p) => {
                rerouted = p.apply(msg);
                &rerouted
            }
            None => msg,
        };
        let len = self.commit_log.validate(msg)?;
        let crc = rmq_common::body_crc(msg.body);
        let append = self.commit_log.put_message(msg, len, crc, now)?;
        self.after_append(
            std::slice::from_ref(msg),
            std::slice::from_ref(&append),
            None,
        );
        Ok(append)
    }

    /// Store several messages under one hold of the put lock (a batch).
    ///
    /// # Errors
    /// As [`put_message`](Self::put_message).
    pub fn put_messages(&self, msgs: &[MessageToStore<'_>]) -> Result<Vec<PutMessageResult>> {
        let results = self.append(msgs)?;
        let end = results.last().map_or(0, AppendResult::end_offset);
        let status = self.wait_durable(end)?;
        let status = self.wait_replicated(end).unwrap_or(status);
        Ok(results
            .into_iter()
            .map(|append| PutMessageResult { status, append })
            .collect())
    }

    /// Append without waiting for durability: the first half of a put, for callers that
    /// wait elsewhere (see [`wait_durable`](Self::wait_durable)).
    ///
    /// # Errors
    /// As [`put_message`](Self::put_message), flush failures excepted.
    pub fn append(&self, msgs: &[MessageToStore<'_>]) -> Result<Vec<AppendResult>> {
        self.check_writable()?;
        let now = now_millis();
        // Sized only once a message parks: most batches have none (a batch of 4 096 would
        // otherwise fill 200 KB of `None`s).
        let mut parked: Vec<Option<schedule::Parked>> = Vec::new();
        for (i, m) in msgs.iter().enumerate() {
            if let Some(p) = self.park(m, now)? {
                parked.resize_with(msgs.len(), || None);
                parked[i] = Some(p);
            }
        }
        let rerouted: Vec<MessageToStore<'_>>;
        let msgs = if parked.is_empty() {
            msgs
        } else {
            rerouted = msgs
                .iter()
                .zip(&parked)
                .map(|(m, p)| p.as_ref().map_or_else(|| m.clone(), |p| p.apply(m)))
                .collect();
            &rerouted[..]
        };
        let mut lens = Vec::with_capacity(msgs.len());
        let mut crcs = Vec::with_capacity(msgs.len());
        for m in msgs {
            lens.push(self.commit_log.validate(m)?);
            crcs.push(rmq_common::body_crc(m.body));
        }
        // Under ASYNC_FLUSH without the pool a batch is dispatched by the thread that has
        // just written it, from what it wrote, while the dispatch thread keeps out of its
        // way: 17 % less CPU per message under batches of 4 096 x 256 B than when the
        // dispatch thread raced it for the records. Single messages are left to the dispatch
        // thread, which takes many in a pass.
        let claim = (msgs.len() > 1 && self.group_commit.is_none() && self.pool.is_none())
            .then(|| self.claim_inline_dispatch());
        let results = self.commit_log.put_messages(msgs, &lens, &crcs, now)?;
        self.after_append(msgs, &results, claim);
        Ok(results)
    }

    /// Where a message waits before delivery, if it does: its delay level's queue, else the
    /// timer wheel's topic.
    fn park(&self, msg: &MessageToStore<'_>, now: i64) -> Result<Option<schedule::Parked>> {
        match schedule::park(msg, self.reput.delay_levels_ms())? {
            Some(p) => Ok(Some(p)),
            None => crate::timer::park(msg, &self.timer, now),
        }
    }

    /// Count what `msgs` stored (as `results`), then have it written, or dispatched (by
    /// this thread under `claim`).
    fn after_append(
        &self,
        msgs: &[MessageToStore<'_>],
        results: &[AppendResult],
        claim: Option<InlineClaim<'_>>,
    ) {
        let bytes: usize = results.iter().map(|r| r.wrote_bytes).sum();
        let end_offset = results.last().map_or(0, AppendResult::end_offset);
        let count = results.len();
        self.put_times.fetch_add(count as u64, Ordering::Relaxed);
        self.put_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        if let Some(gc) = &self.group_commit {
            // SYNC_FLUSH: the records are staged; the group commit's round writes them (and
            // wakes dispatch), also for a put that does not wait for it.
            gc.request(end_offset);
            return;
        }
        let dispatched = claim.is_some_and(|claim| {
            let appended = Appended::new(msgs, results, self.commit_log.store_host());
            self.reput
                .reput_inline(&self.dispatch_targets(), Some(appended), claim)
        });
        // Under load the dispatch thread polls (as RocketMQ's reput thread does), so a busy
        // put path pays no system call per message for it; an idle one is woken.
        if self.pool.is_none() && !dispatched {
            self.data_published();
        }
    }

    /// The second half of a put: under SYNC_FLUSH wait until `end_offset` is durable; under
    /// ASYNC_FLUSH nudge the flush (or commit) thread.
    ///
    /// # Errors
    /// A failed flush, or a shutdown while waiting.
    pub fn wait_durable(&self, end_offset: i64) -> Result<PutMessageStatus> {
        if let Some(gc) = &self.group_commit {
            Ok(match gc.wait_for(end_offset, self.sync_flush_timeout())? {
                FlushOutcome::Flushed => PutMessageStatus::PutOk,
                FlushOutcome::Timeout => PutMessageStatus::FlushDiskTimeout,
            })
        } else {
            // The async flush runs on its interval (flushIntervalCommitLog, as SPEC §3
            // describes it) and is not woken by puts, which would turn it into many small
            // syncs just behind the appender. The pool's commit thread is woken once
            // `least` pages wait, so committed (readable) data follows appends closely.
            if self.pool.is_some() {
                let q = self.commit_log.queue();
                let least = i64::from(self.config.commit_commit_log_least_pages) * 4096;
                if end_offset - q.committed_where() >= least {
                    self.services.commit_waker.wake();
                }
            }
            Ok(PutMessageStatus::PutOk)
        }
    }

    /// `syncFlushTimeout`: how long a SYNC_FLUSH put waits before FLUSH_DISK_TIMEOUT.
    pub(super) fn sync_flush_timeout(&self) -> Duration {
        Duration::from_millis(u64::from(self.config.sync_flush_timeout))
    }

    /// The async second half of a put: resolves once `end_offset` is durable (at once under
    /// ASYNC_FLUSH, after nudging the flush thread). Apply `syncFlushTimeout` around it.
    #[must_use]
    pub fn flush_future(&self, end_offset: i64) -> FlushFuture {
        if self.group_commit.is_none() {
            // Same nudge as the blocking path; it cannot fail under ASYNC_FLUSH.
            let _ = self.wait_durable(end_offset);
        }
        FlushFuture::new(self.group_commit.clone(), end_offset)
    }

    /// The callback form of [`flush_future`](Self::flush_future): `done` is called once
    /// `end_offset` is durable, with [`FlushOutcome::Timeout`] once `syncFlushTimeout` passes
    /// first, or with the error of the sync or shutdown that ended the wait (see
    /// [`GroupCommit::on_flushed`](crate::flush::GroupCommit::on_flushed)); at once under
    /// ASYNC_FLUSH, after nudging the flush thread.
    pub fn on_flushed(&self, end_offset: i64, done: FlushCallback) {
        match &self.group_commit {
            Some(gc) => gc.on_flushed(end_offset, self.sync_flush_timeout(), done),
            None => done(self.wait_durable(end_offset).map(|_| FlushOutcome::Flushed)),
        }
    }

    /// Deliver parked messages: for each ConsumeQueue unit `(commit_log_offset, size)` of
    /// `SCHEDULE_TOPIC_XXXX`, in order, re-put the message into the queue its `REAL_TOPIC` /
    /// `REAL_QID` name (see [`schedule::deliver`] for what is kept and what is skipped). Each
    /// message is appended under its own short hold of the put lock; under SYNC_FLUSH the
    /// call returns once the last one is durable.
    ///
    /// Stops at the first write the store refuses (see [`DeliverOutcome::error`]); messages
    /// that can never be delivered are skipped.
    pub fn deliver_scheduled(&self, units: &[(i64, i32)]) -> DeliverOutcome {
        let (mut out, end) = schedule::deliver(
            units,
            |phy| self.look_message_by_offset(phy),
            |msg| self.append_one(msg),
        );
        if out.delivered > 0 {
            if let Err(e) = self.wait_durable(end) {
                out.error.get_or_insert(e);
            }
        }
        out
    }
}
