//! The background services of [`MessageStore`]: starting and stopping its threads (see the
//! table in [`super`]), the wakers they sleep on, and the flush of ConsumeQueues, index and
//! checkpoint that the `rmq-flush-consumequeue` thread runs and [`MessageStore::flush`]
//! forces.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::MessageStore;
use crate::dispatch::InlineClaim;
use crate::error::{IoContext, Result};
use crate::flush::{run_async_flush, run_commit, AsyncFlushConfig, GroupCommit, Waker};
use crate::timer::service::TimerService;

/// How often `rmq-page-cache` gives pages back (see [`super::page_cache`]) while the log
/// grows: the sooner pages come back, the warmer the next appends find them (every 10 ms
/// instead of 500, with the 8 MiB tail, cut sync 128's broker CPU per message by 14 % and the
/// preload's by 29 %; benches/RESULTS.md, issue 18, thirteenth round) ...
const PAGE_CACHE_TRIM_BUSY: Duration = Duration::from_millis(10);
/// ... and while it does not: an idle broker wakes the thread twice a second.
const PAGE_CACHE_TRIM_IDLE: Duration = Duration::from_millis(500);

/// Passes without a record (about a millisecond apart) after which dispatch sleeps until
/// woken, see `run_reput`.
const REPUT_IDLE_PASSES: u32 = 100;

/// The longest such sleep: a bound should a wake-up ever be missed, not a cadence.
const REPUT_IDLE_WAIT: Duration = Duration::from_millis(100);

/// The store's threads and what wakes or stops them.
#[derive(Default)]
pub(super) struct Services {
    flush_waker: Waker,
    pub(super) commit_waker: Waker,
    reput_waker: Waker,
    cq_flush_waker: Waker,
    clean_waker: Waker,
    page_cache_waker: Waker,
    threads: Mutex<Vec<JoinHandle<()>>>,
    timer_waker: Waker,
    timer_thread: Mutex<Option<JoinHandle<()>>>,
}

impl Services {
    /// Stop the timer thread and wait for it (it finishes the second it is delivering).
    pub(super) fn stop_timer(&self) {
        self.timer_waker.stop();
        let timer = self
            .timer_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = timer {
            let _ = t.join();
        }
    }

    /// Stop every other thread and wait for them; each does a last pass first.
    pub(super) fn stop(&self, group_commit: Option<&GroupCommit>) {
        self.reput_waker.stop();
        self.clean_waker.stop();
        self.page_cache_waker.stop();
        self.commit_waker.stop();
        if let Some(gc) = group_commit {
            gc.stop();
        }
        self.flush_waker.stop();
        self.cq_flush_waker.stop();
        let threads: Vec<_> = self
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for t in threads {
            let _ = t.join();
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .ctx(|| format!("starting thread {name}"))
}

impl MessageStore {
    /// Start the threads; `timer` is the timer wheel's service when `timerWheelEnable`.
    pub(super) fn start_services(self: &Arc<Self>, timer: Option<TimerService>) -> Result<()> {
        let mut threads = self
            .services
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(gc) = &self.group_commit {
            let (s, gc) = (Arc::clone(self), Arc::clone(gc));
            threads.push(spawn("rmq-group-commit", move || s.run_group_commit(&gc))?);
        } else {
            let s = Arc::clone(self);
            let c = AsyncFlushConfig {
                interval_ms: u64::from(s.config.flush_interval_commit_log),
                least_pages: s.config.flush_commit_log_least_pages as usize,
                thorough_interval_ms: u64::from(s.config.flush_commit_log_thorough_interval),
                timed: s.config.flush_commit_log_timed,
            };
            threads.push(spawn("rmq-flush-commitlog", move || {
                run_async_flush(
                    s.commit_log.queue(),
                    &s.checkpoint,
                    &s.services.flush_waker,
                    c,
                );
            })?);
        }
        if self.pool.is_some() {
            let s = Arc::clone(self);
            threads.push(spawn("rmq-commit-commitlog", move || {
                run_commit(
                    s.commit_log.queue(),
                    &s.services.commit_waker,
                    &s.services.flush_waker,
                    &s.services.reput_waker,
                    u64::from(s.config.commit_interval_commit_log),
                    s.config.commit_commit_log_least_pages as usize,
                    u64::from(s.config.commit_commit_log_thorough_interval),
                );
            })?);
        }
        if self.commit_log.queue().has_window() {
            threads.push(self.spawn_append_window()?);
        }
        let s = Arc::clone(self);
        threads.push(spawn("rmq-reput", move || s.run_reput())?);
        let s = Arc::clone(self);
        threads.push(spawn("rmq-flush-consumequeue", move || {
            s.run_flush_consume_queue();
        })?);
        let s = Arc::clone(self);
        threads.push(spawn("rmq-clean", move || {
            while !s.services.clean_waker.is_stopped() {
                s.check_disk_space();
                s.services.clean_waker.wait(Duration::from_millis(u64::from(
                    s.config.clean_resource_interval,
                )));
            }
        })?);
        if self.config.page_cache_tail_commit_log > 0 {
            let s = Arc::clone(self);
            threads.push(spawn("rmq-page-cache", move || {
                let waker = &s.services.page_cache_waker;
                let mut failing = false;
                let mut seen_end = -1;
                while !waker.is_stopped() {
                    let end = s.commit_log.queue().max_offset();
                    match s.trim_page_cache() {
                        Ok(_) => failing = false,
                        Err(e) if !failing => {
                            failing = true;
                            log::warn!("{e}; those pages stay cached (said once until it works)");
                        }
                        Err(_) => {}
                    }
                    let grew = end != seen_end;
                    seen_end = end;
                    waker.wait(if grew {
                        PAGE_CACHE_TRIM_BUSY
                    } else {
                        PAGE_CACHE_TRIM_IDLE
                    });
                }
            })?);
        }
        drop(threads);
        if let Some(t) = timer {
            let s = Arc::clone(self);
            let handle = spawn("rmq-timer", move || t.run(&s, &s.services.timer_waker))?;
            *self
                .services
                .timer_thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(handle);
        }
        Ok(())
    }

    /// The group commit's thread (SYNC_FLUSH; see `GroupCommit::run`).
    fn run_group_commit(&self, gc: &GroupCommit) {
        gc.run(self.commit_log.queue(), &self.checkpoint, || {
            self.after_group_commit_round();
        });
    }

    /// After a group commit's round, on the thread that made it: a round's records are
    /// dispatched there, once their senders are woken, rather than by waking the dispatch
    /// thread after every round: one thread less to wake a round (see `InlineClaim`).
    fn after_group_commit_round(&self) {
        self.wake_ha_writers();
        let claim = self.claim_inline_dispatch();
        if !self
            .reput
            .reput_inline(&self.dispatch_targets(), None, claim)
        {
            self.data_published();
        }
    }

    /// SYNC_FLUSH: let a server's I/O runtime make the group commit's rounds (see
    /// [`GroupCommit::attach_runner`]): `wake` wakes its runner, which then calls
    /// [`run_group_commit_round`](Self::run_group_commit_round). False under ASYNC_FLUSH or
    /// when one was attached before.
    pub fn attach_group_commit_runner(&self, wake: Box<dyn Fn() + Send + Sync>) -> bool {
        self.group_commit
            .as_ref()
            .is_some_and(|gc| gc.attach_runner(wake))
    }

    /// The attached runner's round (see [`GroupCommit::run_round`]).
    pub fn run_group_commit_round(&self) {
        if let Some(gc) = &self.group_commit {
            gc.run_round(self.commit_log.queue(), &self.checkpoint, || {
                self.after_group_commit_round();
            });
        }
    }

    /// The attached runner stopped: the group-commit thread makes the rounds again.
    pub fn detach_group_commit_runner(&self) {
        if let Some(gc) = &self.group_commit {
            gc.detach_runner();
        }
    }

    /// The append window's thread (see `append_window`).
    fn spawn_append_window(self: &Arc<Self>) -> Result<JoinHandle<()>> {
        let s = Arc::clone(self);
        spawn("rmq-append-window", move || {
            let waker = &s.services.commit_waker;
            while !waker.is_stopped() {
                s.commit_log.queue().commit_window();
                waker.wait(crate::append_window::COMMIT_INTERVAL);
            }
        })
    }

    /// The dispatch loop. While records arrive it keeps RocketMQ's ReputMessageService
    /// cadence, a pass then 1 ms, so that a busy put path never wakes it (a pass dispatches
    /// all that was appended meanwhile). After [`REPUT_IDLE_PASSES`] passes that found
    /// nothing it sleeps until new CommitLog bytes wake it ([`Self::data_published`]), or for
    /// [`REPUT_IDLE_WAIT`]: an idle broker, or one serving only pulls, no longer wakes a
    /// thousand times a second for nothing.
    /// While batch puts dispatch their own records it sleeps, until the last of them wakes it
    /// for records none of them took (see `InlineClaim`).
    fn run_reput(&self) {
        let targets = self.dispatch_targets();
        let waker = &self.services.reput_waker;
        let mut idle_passes = 0;
        while !waker.is_stopped() {
            if self.reput.inline_claimed() {
                waker.wait_unless(REPUT_IDLE_WAIT, || !self.reput.inline_claimed());
                continue;
            }
            // Read only by an idle thread, before its pass: no lock per pass while busy.
            let seen = (idle_passes >= REPUT_IDLE_PASSES).then(|| self.commit_log.max_offset());
            if self.reput.do_reput(&targets) {
                idle_passes = 0;
            } else if let Some(seen) = seen {
                // Not "dispatch is behind": a slave's last record may be cut off, and only
                // more bytes let the next pass on.
                waker.wait_unless(REPUT_IDLE_WAIT, || self.commit_log.max_offset() != seen);
            } else {
                idle_passes += 1;
                waker.wait(Duration::from_millis(1));
            }
        }
    }

    /// A batch put's claim to dispatch its own records (see `ReputService::reput_inline`).
    pub(super) fn claim_inline_dispatch(&self) -> InlineClaim<'_> {
        self.reput.claim_inline(&self.services.reput_waker)
    }

    /// New CommitLog bytes can be read (appended, committed from the pool, replicated): wake
    /// dispatch if it sleeps idle (a fence and a load otherwise), or have the last batch put
    /// dispatching its own records wake it if it keeps out of their way.
    pub(super) fn data_published(&self) {
        self.reput.owe_wake();
        self.services.reput_waker.wake_if_sleeping();
    }

    fn run_flush_consume_queue(&self) {
        let mut last_thorough = Instant::now();
        let waker = &self.services.cq_flush_waker;
        loop {
            let stopped = waker.is_stopped();
            let mut least = self.config.flush_consume_queue_least_pages as usize;
            if stopped
                || last_thorough.elapsed()
                    >= Duration::from_millis(u64::from(
                        self.config.flush_consume_queue_thorough_interval,
                    ))
            {
                last_thorough = Instant::now();
                least = 0;
            }
            if let Err(e) = self.flush_logics(least) {
                log::error!("{e}; will retry");
            }
            if stopped {
                return;
            }
            waker.wait(Duration::from_millis(u64::from(
                self.config.flush_interval_consume_queue,
            )));
        }
    }

    /// Flush ConsumeQueues and the index, then record and persist the checkpoint.
    fn flush_logics(&self, least_pages: usize) -> Result<()> {
        // Dispatch time of what the ConsumeQueues hold now, read before flushing them.
        let logics_ts = self.reput.dispatched_store_timestamp();
        for cq in self.consume_queues.all() {
            cq.flush(least_pages)?;
        }
        if least_pages == 0 && self.config.message_index_enable {
            let ts = self.index.flush()?;
            self.checkpoint.set_index_msg_timestamp(ts);
        }
        if logics_ts > 0 {
            self.checkpoint.set_logics_msg_timestamp(logics_ts);
        }
        self.checkpoint.flush()
    }

    /// Flush everything now; returns the durable CommitLog offset.
    ///
    /// # Errors
    /// When a sync fails.
    pub fn flush(&self) -> Result<i64> {
        let q = self.commit_log.queue();
        for _ in 0..10 {
            if !q.commit(0) {
                break;
            }
        }
        q.flush_to(q.max_offset())?;
        let ts = q.store_timestamp();
        if ts > 0 {
            self.checkpoint.set_physic_msg_timestamp(ts);
        }
        self.flush_logics(0)?;
        Ok(q.flushed_where())
    }
}
