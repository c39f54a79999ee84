//! Making CommitLog writes durable.
//!
//! * [`GroupCommit`] (SYNC_FLUSH): appenders stage their records in memory, register the
//!   end offset they need and wait; one thread writes everything staged with one `pwrite`,
//!   syncs once, and wakes every waiter it covered. Many appenders share one system call of
//!   each kind, which is what makes synchronous durability affordable. A failed write or
//!   sync wakes its waiters with the error: never with success.
//! * The async flush loop (ASYNC_FLUSH) syncs every `flushIntervalCommitLog` ms once
//!   `flushCommitLogLeastPages` are dirty (stopping below the folio being filled), and
//!   everything every `flushCommitLogThoroughInterval` ms. Puts do not wake it.
//! * The commit loop (transient store pool) moves buffered bytes into the file every
//!   `commitIntervalCommitLog` ms, then wakes the flush loop.

use std::sync::atomic::{fence, AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::checkpoint::StoreCheckpoint;
use crate::error::{Result, StoreError};
use crate::mapped_file_queue::MappedFileQueue;

/// How a SYNC_FLUSH wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushOutcome {
    /// The bytes are durable.
    Flushed,
    /// `syncFlushTimeout` passed first (the bytes are stored, maybe not yet durable).
    Timeout,
}

/// Who waits for a flush (or a slave's ack): a parked thread, or an async task.
pub(crate) enum Waiter {
    Thread(Thread),
    Task(std::task::Waker),
}

impl Waiter {
    pub(crate) fn wake(self) {
        match self {
            Self::Thread(t) => t.unpark(),
            Self::Task(w) => w.wake(),
        }
    }
}

/// Group commit for SYNC_FLUSH.
///
/// Waiters publish the end offset they need, register their thread, and park; they read the
/// durable position from an atomic, so a round that wakes many of them does not funnel them
/// through one mutex. The flush thread syncs everything readable, then unparks exactly the
/// waiters that round covered.
pub struct GroupCommit {
    /// Everything below is durable.
    flushed: AtomicI64,
    /// Highest end offset anyone waits for.
    requested: AtomicI64,
    /// A failed sync covered waiters up to here (-1: none), with this error.
    failed_upto: AtomicI64,
    failure: Mutex<String>,
    stopped: AtomicBool,
    waiters: Mutex<Vec<(i64, Waiter)>>,
    work: Waker,
}

impl GroupCommit {
    /// A group commit whose durable position starts at `flushed`.
    #[must_use]
    pub fn new(flushed: i64) -> Arc<Self> {
        Arc::new(Self {
            flushed: AtomicI64::new(flushed),
            requested: AtomicI64::new(flushed),
            failed_upto: AtomicI64::new(-1),
            failure: Mutex::new(String::new()),
            stopped: AtomicBool::new(false),
            waiters: Mutex::new(Vec::new()),
            work: Waker::default(),
        })
    }

    /// Wait until everything below `end_offset` is durable, at most `timeout`.
    ///
    /// # Errors
    /// [`StoreError::FlushFailed`] when the sync covering it failed, and
    /// [`StoreError::ServiceNotAvailable`] when the store shut down first.
    pub fn wait_for(&self, end_offset: i64, timeout: Duration) -> Result<FlushOutcome> {
        if self.flushed.load(Ordering::Acquire) >= end_offset {
            return Ok(FlushOutcome::Flushed);
        }
        let deadline = Instant::now() + timeout;
        self.requested.fetch_max(end_offset, Ordering::AcqRel);
        self.waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((end_offset, Waiter::Thread(std::thread::current())));
        self.work.wake();
        loop {
            if let Some(r) = self.poll_flushed(end_offset) {
                return r.map(|()| FlushOutcome::Flushed);
            }
            let now = Instant::now();
            if now >= deadline {
                // Our registration stays behind; a later round unparks it harmlessly.
                return Ok(FlushOutcome::Timeout);
            }
            std::thread::park_timeout(deadline - now);
        }
    }

    /// Ask for everything below `end_offset` to be flushed, without waiting (a slave's
    /// replicated bytes under SYNC_FLUSH).
    pub fn request(&self, end_offset: i64) {
        self.requested.fetch_max(end_offset, Ordering::AcqRel);
        self.work.wake();
    }

    /// The flushing thread's loop: write what the appenders staged, sync whatever is
    /// requested, wake the waiters, call `after_round` (the round made the staged bytes
    /// readable: replication is woken and they are dispatched there), repeat.
    pub fn run(
        &self,
        queue: &MappedFileQueue,
        checkpoint: &StoreCheckpoint,
        after_round: impl Fn(),
    ) {
        loop {
            let stopped = self.stopped.load(Ordering::Acquire);
            let target = self.requested.load(Ordering::Acquire);
            if target <= self.flushed.load(Ordering::Acquire) {
                if stopped {
                    self.release_all();
                    return;
                }
                self.work.wait(Duration::from_millis(10));
                continue;
            }
            // Let the appenders woken by the last round append before this sync starts, so
            // it covers them too (on few cores they would otherwise miss it by microseconds).
            std::thread::yield_now();
            // Everything appended now is covered (the flush writes what is staged first), not
            // just `target`: appenders that arrive during this sync find their bytes durable.
            match queue.flush_to(queue.max_offset().max(target)) {
                Ok(_) => {
                    self.flushed
                        .fetch_max(queue.flushed_where(), Ordering::AcqRel);
                    let ts = queue.store_timestamp();
                    if ts > 0 {
                        checkpoint.set_physic_msg_timestamp(ts);
                    }
                }
                Err(e) => {
                    *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = e.to_string();
                    self.failed_upto.fetch_max(target, Ordering::AcqRel);
                }
            }
            let covered = self
                .flushed
                .load(Ordering::Acquire)
                .max(self.failed_upto.load(Ordering::Acquire));
            let wake: Vec<Waiter> = {
                let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
                let (done, rest): (Vec<_>, Vec<_>) = w.drain(..).partition(|(t, _)| *t <= covered);
                *w = rest;
                done.into_iter().map(|(_, t)| t).collect()
            };
            for w in wake {
                w.wake();
            }
            after_round();
            if stopped {
                self.release_all();
                return;
            }
        }
    }

    /// After the last round: wake everyone still waiting (they see `stopped`).
    fn release_all(&self) {
        let waiters =
            std::mem::take(&mut *self.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, w) in waiters {
            w.wake();
        }
    }

    fn poll_flushed(&self, end_offset: i64) -> Option<Result<()>> {
        if self.flushed.load(Ordering::Acquire) >= end_offset {
            return Some(Ok(()));
        }
        if self.failed_upto.load(Ordering::Acquire) >= end_offset {
            let msg = self
                .failure
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            return Some(Err(StoreError::FlushFailed(msg)));
        }
        if self.stopped.load(Ordering::Acquire) {
            return Some(Err(StoreError::ServiceNotAvailable(
                "the store shut down before the message was flushed".into(),
            )));
        }
        None
    }

    /// Stop the loop after a last sync; waiters it did not cover get an error.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        self.work.wake();
    }
}

/// Resolves when everything below an end offset is durable: the async form of
/// [`GroupCommit::wait_for`], for servers that wait on many sends from few threads. The
/// caller applies `syncFlushTimeout` (and reports FLUSH_DISK_TIMEOUT) with its own timer.
pub struct FlushFuture {
    group: Option<Arc<GroupCommit>>,
    end_offset: i64,
}

impl FlushFuture {
    pub(crate) fn new(group: Option<Arc<GroupCommit>>, end_offset: i64) -> Self {
        Self { group, end_offset }
    }
}

impl std::future::Future for FlushFuture {
    type Output = Result<()>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<()>> {
        use std::task::Poll;
        let Some(gc) = &self.group else {
            return Poll::Ready(Ok(())); // ASYNC_FLUSH: nothing to wait for
        };
        if let Some(r) = gc.poll_flushed(self.end_offset) {
            return Poll::Ready(r);
        }
        gc.requested.fetch_max(self.end_offset, Ordering::AcqRel);
        gc.waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.end_offset, Waiter::Task(cx.waker().clone())));
        gc.work.wake();
        // A round may have finished between the check and the registration.
        match gc.poll_flushed(self.end_offset) {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        }
    }
}

/// A sleep that can be cut short by [`Waker::wake`] (RocketMQ's `waitForRunning`). Waking a
/// thread that is awake costs one atomic swap: only a sleeping thread is signalled, so the put
/// path can wake its helpers on every message without a system call each time.
#[derive(Default)]
pub struct Waker {
    notified: AtomicBool,
    sleeping: AtomicBool,
    /// Asleep in `wait_unless`: what `wake_if_sleeping` looks at.
    sleeping_until_woken: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
    stopped: AtomicBool,
}

impl Waker {
    /// Wake the sleeper now (cheap when it is awake already).
    pub fn wake(&self) {
        if !self.notified.swap(true, Ordering::SeqCst) && self.sleeping.load(Ordering::SeqCst) {
            let _g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
            self.cv.notify_one();
        }
    }

    /// Sleep up to `d` or until woken; a wake that came while awake ends the next sleep at once.
    pub fn wait(&self, d: Duration) {
        self.sleep(d, false, || false);
    }

    /// Wake the sleeper only if it sleeps in [`wait_unless`](Self::wait_unless), not in a
    /// short [`wait`](Self::wait) between polls: one fence and one load otherwise, for a hot
    /// path whose work the sleeper polls for while busy. Call it after publishing the work.
    pub fn wake_if_sleeping(&self) {
        // Pairs with the fence in `wait_unless`: either this load sees the sleep announced,
        // or the sleeper's check sees the work published before the fence.
        fence(Ordering::SeqCst);
        if self.sleeping_until_woken.load(Ordering::SeqCst) {
            self.wake();
        }
    }

    /// Whether the sleeper is asleep in [`wait_unless`](Self::wait_unless) now.
    #[cfg(test)]
    pub(crate) fn sleeps_until_woken(&self) -> bool {
        self.sleeping_until_woken.load(Ordering::SeqCst)
    }

    /// [`wait`](Self::wait), for a sleeper woken by [`wake_if_sleeping`](Self::wake_if_sleeping):
    /// the sleep is announced first, then `work` is checked, and there is no sleep when it says
    /// work is waiting, so work published just before the announcement is never slept through.
    pub fn wait_unless(&self, d: Duration, work: impl FnOnce() -> bool) {
        self.sleep(d, true, work);
    }

    /// Sleep up to `d` unless woken, notified meanwhile, stopped, or `work` says work waits
    /// (checked after the sleep is announced); `until_woken` lets `wake_if_sleeping` see it.
    fn sleep(&self, d: Duration, until_woken: bool, work: impl FnOnce() -> bool) {
        let g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.sleeping.store(true, Ordering::SeqCst);
        self.sleeping_until_woken
            .store(until_woken, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        if !work() && !self.notified.swap(false, Ordering::SeqCst) && !self.is_stopped() {
            let _g = self
                .cv
                .wait_timeout(g, d)
                .unwrap_or_else(PoisonError::into_inner);
        }
        self.sleeping_until_woken.store(false, Ordering::SeqCst);
        self.sleeping.store(false, Ordering::SeqCst);
    }

    /// Ask the loop to end, and wake it.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.notified.store(false, Ordering::SeqCst);
        self.wake();
    }

    /// Whether [`stop`](Self::stop) was called.
    #[must_use]
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }
}

/// Settings of the async flush loop.
#[derive(Debug, Clone, Copy)]
pub struct AsyncFlushConfig {
    /// Period (ms).
    pub interval_ms: u64,
    /// Dirty pages needed.
    pub least_pages: usize,
    /// Longest gap between real flushes (ms).
    pub thorough_interval_ms: u64,
    /// Fixed sleep instead of a wakeable wait.
    pub timed: bool,
}

/// The async flush loop; returns when `waker` is stopped, after a final full flush.
pub fn run_async_flush(
    queue: &MappedFileQueue,
    checkpoint: &StoreCheckpoint,
    waker: &Waker,
    c: AsyncFlushConfig,
) {
    let mut last_thorough = Instant::now();
    while !waker.is_stopped() {
        let mut least = c.least_pages;
        if last_thorough.elapsed() >= Duration::from_millis(c.thorough_interval_ms) {
            last_thorough = Instant::now();
            least = 0;
        }
        if c.timed {
            std::thread::sleep(Duration::from_millis(c.interval_ms));
        } else {
            waker.wait(Duration::from_millis(c.interval_ms));
        }
        match queue.flush(least) {
            Ok(_) => {
                let ts = queue.store_timestamp();
                if ts > 0 {
                    checkpoint.set_physic_msg_timestamp(ts);
                }
            }
            Err(e) => log::error!("{e}; will retry"),
        }
    }
    for _ in 0..10 {
        match queue.flush(0) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => log::error!("final flush: {e}"),
        }
    }
    let ts = queue.store_timestamp();
    if ts > 0 {
        checkpoint.set_physic_msg_timestamp(ts);
    }
}

/// The transient-pool commit loop; wakes `flush_waker` whenever it moved data, and
/// `dispatch_waker` if it sleeps (committed data is what dispatch reads).
pub fn run_commit(
    queue: &MappedFileQueue,
    waker: &Waker,
    flush_waker: &Waker,
    dispatch_waker: &Waker,
    interval_ms: u64,
    least_pages: usize,
    thorough_ms: u64,
) {
    let mut last_commit = Instant::now();
    while !waker.is_stopped() {
        let mut least = least_pages;
        if last_commit.elapsed() >= Duration::from_millis(thorough_ms) {
            least = 0;
        }
        if queue.commit(least) {
            last_commit = Instant::now();
            flush_waker.wake();
            dispatch_waker.wake_if_sleeping();
        }
        waker.wait(Duration::from_millis(interval_ms));
    }
    for _ in 0..10 {
        if !queue.commit(0) {
            break;
        }
    }
    flush_waker.wake();
}
