//! Making CommitLog writes durable.
//!
//! * [`GroupCommit`] (SYNC_FLUSH): appenders register the end offset they need and wait;
//!   one thread syncs once for everything appended so far and wakes every waiter it
//!   covered. Many appenders share one `msync`, which is what makes synchronous durability
//!   affordable. A failed sync wakes its waiters with the error: never with success.
//! * The async flush loop (ASYNC_FLUSH) syncs every `flushIntervalCommitLog` ms once
//!   `flushCommitLogLeastPages` are dirty, and everything every
//!   `flushCommitLogThoroughInterval` ms.
//! * The commit loop (transient store pool) moves buffered bytes into the file every
//!   `commitIntervalCommitLog` ms, then wakes the flush loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
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

#[derive(Default)]
struct GroupState {
    /// Highest end offset anyone waits for.
    requested: i64,
    /// Everything below is durable.
    flushed: i64,
    /// A failed sync covered waiters up to here, with this error.
    failed: Option<(i64, String)>,
    stopped: bool,
}

/// Group commit for SYNC_FLUSH.
pub struct GroupCommit {
    state: Mutex<GroupState>,
    work: Condvar,
    done: Condvar,
}

impl GroupCommit {
    /// A group commit whose durable position starts at `flushed`.
    #[must_use]
    pub fn new(flushed: i64) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(GroupState {
                flushed,
                requested: flushed,
                ..GroupState::default()
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        })
    }

    /// Wait until everything below `end_offset` is durable, at most `timeout`.
    ///
    /// # Errors
    /// [`StoreError::FlushFailed`] when the sync covering it failed, and
    /// [`StoreError::ServiceNotAvailable`] when the store shut down first.
    pub fn wait_for(&self, end_offset: i64, timeout: Duration) -> Result<FlushOutcome> {
        let deadline = Instant::now() + timeout;
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.requested < end_offset {
            s.requested = end_offset;
            self.work.notify_one();
        }
        loop {
            if s.flushed >= end_offset {
                return Ok(FlushOutcome::Flushed);
            }
            if let Some((upto, err)) = &s.failed {
                if *upto >= end_offset {
                    return Err(StoreError::FlushFailed(err.clone()));
                }
            }
            if s.stopped {
                return Err(StoreError::ServiceNotAvailable(
                    "the store shut down before the message was flushed".into(),
                ));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(FlushOutcome::Timeout);
            }
            s = self
                .done
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The flushing thread's loop: sync whatever is requested, wake the waiters, repeat.
    pub fn run(&self, queue: &MappedFileQueue, checkpoint: &StoreCheckpoint) {
        loop {
            let target = {
                let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                while s.requested <= s.flushed && !s.stopped {
                    s = self
                        .work
                        .wait_timeout(s, Duration::from_millis(10))
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                if s.stopped && s.requested <= s.flushed {
                    return;
                }
                s.requested
            };
            // Everything readable now is covered, not just `target`: later appenders that
            // arrive during this sync find their bytes already durable.
            let res = queue.flush_to(queue.max_offset().max(target));
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            match res {
                Ok(_) => {
                    s.flushed = s.flushed.max(queue.flushed_where());
                    let ts = queue.store_timestamp();
                    if ts > 0 {
                        checkpoint.set_physic_msg_timestamp(ts);
                    }
                }
                Err(e) => s.failed = Some((target, e.to_string())),
            }
            self.done.notify_all();
            if s.stopped {
                return;
            }
        }
    }

    /// Stop the loop after a last sync; waiters not covered get an error.
    pub fn stop(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        s.stopped = true;
        self.work.notify_all();
        self.done.notify_all();
    }
}

/// A sleep that can be cut short by [`Waker::wake`] (RocketMQ's `waitForRunning`). Waking a
/// thread that is awake costs one atomic swap: only a sleeping thread is signalled, so the put
/// path can wake its helpers on every message without a system call each time.
#[derive(Default)]
pub struct Waker {
    notified: AtomicBool,
    sleeping: AtomicBool,
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
        let g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        self.sleeping.store(true, Ordering::SeqCst);
        if !self.notified.swap(false, Ordering::SeqCst) && !self.is_stopped() {
            let _g = self
                .cv
                .wait_timeout(g, d)
                .unwrap_or_else(PoisonError::into_inner);
        }
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
            Err(e) => eprintln!("rmq-store ERROR: {e}; will retry"),
        }
    }
    for _ in 0..10 {
        match queue.flush(0) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => eprintln!("rmq-store ERROR: final flush: {e}"),
        }
    }
    let ts = queue.store_timestamp();
    if ts > 0 {
        checkpoint.set_physic_msg_timestamp(ts);
    }
}

/// The transient-pool commit loop; wakes `flush_waker` whenever it moved data.
pub fn run_commit(
    queue: &MappedFileQueue,
    waker: &Waker,
    flush_waker: &Waker,
    interval_ms: u64,
    least_pages: usize,
    thorough_ms: u64,
) {
    let mut last = Instant::now();
    while !waker.is_stopped() {
        let mut least = least_pages;
        if last.elapsed() >= Duration::from_millis(thorough_ms) {
            least = 0;
        }
        if queue.commit(least) {
            last = Instant::now();
            flush_waker.wake();
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
