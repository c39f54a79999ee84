//! Making CommitLog writes durable.
//!
//! * [`GroupCommit`] (SYNC_FLUSH): appenders stage their records in memory, register the
//!   end offset they need and wait; one round writes everything staged with one `pwrite`,
//!   syncs once, and wakes every waiter it covered. Many appenders share one system call of
//!   each kind, which is what makes synchronous durability affordable. A failed write or
//!   sync wakes its waiters with the error: never with success. Rounds run on the flush
//!   thread, or on a server's I/O runtime once it attaches a runner
//!   ([`GroupCommit::attach_runner`]), while they stay fast. A waiter is a thread, a task
//!   ([`FlushFuture`]) or a callback ([`GroupCommit::on_flushed`]), whose deadline the flush
//!   thread keeps.
//! * The async flush loop (ASYNC_FLUSH) syncs every `flushIntervalCommitLog` ms once
//!   `flushCommitLogLeastPages` are dirty (stopping below the folio being filled), and
//!   everything every `flushCommitLogThoroughInterval` ms. Puts do not wake it.
//! * The commit loop (transient store pool) moves buffered bytes into the file every
//!   `commitIntervalCommitLog` ms, then wakes the flush loop.

use std::sync::atomic::{fence, AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
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

/// Told once how a SYNC_FLUSH wait ended: the callback form of the wait
/// ([`GroupCommit::on_flushed`]), called by the round that covered it, by the check that
/// found its deadline passed, or at shutdown.
pub type FlushCallback = Box<dyn FnOnce(Result<FlushOutcome>) + Send>;

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

/// Who waits in a group commit: a thread or a task to wake (it reads the outcome itself and
/// keeps its own deadline), or a callback to call with the outcome by its deadline.
enum FlushWaiter {
    Wake(Waiter),
    Call {
        deadline: Instant,
        done: FlushCallback,
    },
}

/// Group commit for SYNC_FLUSH.
///
/// Waiters publish the end offset they need and register: a thread parks, a task awaits, a
/// callback is kept with its deadline. Threads and tasks read the durable position from an
/// atomic, so a round that wakes many of them does not funnel them through one mutex. A round
/// syncs everything readable, then wakes or calls back exactly the waiters it covered.
pub struct GroupCommit {
    /// Everything below is durable.
    flushed: AtomicI64,
    /// Highest end offset anyone waits for.
    requested: AtomicI64,
    /// A failed sync covered waiters up to here (-1: none), with this error.
    failed_upto: AtomicI64,
    failure: Mutex<String>,
    stopped: AtomicBool,
    waiters: Mutex<Vec<(i64, FlushWaiter)>>,
    work: Waker,
    /// Wakes the runner a server attached ([`Self::attach_runner`]).
    runner: OnceLock<Box<dyn Fn() + Send + Sync>>,
    /// Rounds are the flush thread's: no runner is attached, it is gone, or its rounds took
    /// [`SLOW_RUNNER_ROUND`] on average.
    on_thread: AtomicBool,
    runner_gone: AtomicBool,
    /// The runner's rounds' moving average, in µs (each round weighs 1/8).
    runner_round_us: AtomicU64,
    /// A hand-over to the flush thread was logged (later ones are logged at debug level).
    told_slow: AtomicBool,
    /// Held for a round: the runner's and the flush thread's never overlap.
    round: Mutex<()>,
}

/// A runner whose rounds take this long on average (a slow disk) hands them to the flush
/// thread for [`THREAD_ROUNDS_FOR`]: the runner's I/O thread serves every connection, and
/// must not wait on the disk for long. An average, so that a lone slow round (one that
/// writes back a reservation's zeros) does not.
const SLOW_RUNNER_ROUND: Duration = Duration::from_millis(2);
const THREAD_ROUNDS_FOR: Duration = Duration::from_secs(1);
/// The runner's rounds' moving average after a round that `took` this long: each round
/// weighs 1/8.
fn next_round_average(avg_us: u64, took: Duration) -> u64 {
    let took_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
    avg_us - avg_us / 8 + took_us / 8
}

/// While a runner has the rounds, the flush thread makes one only for a request left
/// unflushed this long (a runtime that stalled or stopped).
const STAND_BY_INTERVAL: Duration = Duration::from_millis(10);

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
            runner: OnceLock::new(),
            on_thread: AtomicBool::new(true),
            runner_gone: AtomicBool::new(false),
            runner_round_us: AtomicU64::new(0),
            told_slow: AtomicBool::new(false),
            round: Mutex::new(()),
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
            .push((
                end_offset,
                FlushWaiter::Wake(Waiter::Thread(std::thread::current())),
            ));
        self.nudge();
        loop {
            if let Some(r) = self.decided(end_offset) {
                return r;
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
        self.nudge();
    }

    /// Call `done` once everything below `end_offset` is durable (at once when it is),
    /// with [`FlushOutcome::Timeout`] once `timeout` passes first, or with the error of the
    /// sync that covered it (or of the shutdown). The callback runs on whoever ends the
    /// wait: the round's thread, the flush thread's deadline check, or this caller.
    ///
    /// Why a callback besides [`FlushFuture`]: a server answering from the callback needs
    /// no task and no timer per waiting send (the flush thread keeps the deadlines); under
    /// SYNC_FLUSH those were a tenth of the broker's CPU per message (benches/RESULTS.md,
    /// issue 18, twenty-second round).
    pub fn on_flushed(&self, end_offset: i64, timeout: Duration, done: FlushCallback) {
        let now = Instant::now();
        let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        // Checked under the lock a round takes to collect its waiters after it moves the
        // durable position (and the shutdown before its last collection): either this sees
        // the position, or that round sees this waiter.
        if let Some(r) = self.decided(end_offset) {
            drop(waiters);
            done(r);
            return;
        }
        self.requested.fetch_max(end_offset, Ordering::AcqRel);
        waiters.push((
            end_offset,
            FlushWaiter::Call {
                deadline: now + timeout,
                done,
            },
        ));
        // The oldest waiters are first: while the flush thread is stuck in a round of its
        // own, the puts still coming in time out the waiters the disk holds up.
        let expired = take_expired(&mut waiters, now);
        drop(waiters);
        time_out(expired);
        self.nudge();
    }

    /// Call back, with [`FlushOutcome::Timeout`], every waiter whose deadline has passed.
    fn expire(&self, now: Instant) {
        let expired = take_expired(
            &mut self.waiters.lock().unwrap_or_else(PoisonError::into_inner),
            now,
        );
        time_out(expired);
    }

    /// Tell whoever makes the rounds that a round is due.
    fn nudge(&self) {
        match self.runner.get() {
            Some(wake) if !self.on_thread.load(Ordering::Acquire) => wake(),
            _ => self.work.wake(),
        }
    }

    /// Let a server's I/O runtime make the rounds: from now on a due round calls `wake`, and
    /// the runner it wakes calls [`run_round`](Self::run_round). False when one was attached
    /// before (a store has one runner in its life; once it is gone the thread keeps the
    /// rounds).
    ///
    /// Why: a round made on the thread that served its sends wakes their tasks there, with
    /// no thread woken on either side (the flush thread by the put, the I/O thread by the
    /// round). Under SYNC_FLUSH that was most of the broker's context switches
    /// (benches/RESULTS.md, issue 18, twenty-first round).
    pub fn attach_runner(&self, wake: Box<dyn Fn() + Send + Sync>) -> bool {
        if self.runner.set(wake).is_err() {
            return false;
        }
        self.on_thread.store(false, Ordering::Release);
        true
    }

    /// The runner is gone (its runtime stops): rounds are the flush thread's again.
    pub fn detach_runner(&self) {
        self.runner_gone.store(true, Ordering::Release);
        self.on_thread.store(true, Ordering::Release);
        self.work.wake();
    }

    /// The runner's round, unless the rounds are the flush thread's now. Rounds that take
    /// [`SLOW_RUNNER_ROUND`] on average hand them to the flush thread for
    /// [`THREAD_ROUNDS_FOR`].
    pub fn run_round(
        &self,
        queue: &MappedFileQueue,
        checkpoint: &StoreCheckpoint,
        after_round: impl Fn(),
    ) {
        if self.on_thread.load(Ordering::Acquire) || self.stopped.load(Ordering::Acquire) {
            return;
        }
        let started = Instant::now();
        if !self.round(queue, checkpoint, &after_round) {
            return;
        }
        let avg = next_round_average(
            self.runner_round_us.load(Ordering::Relaxed),
            started.elapsed(),
        );
        if Duration::from_micros(avg) < SLOW_RUNNER_ROUND {
            self.runner_round_us.store(avg, Ordering::Relaxed);
            return;
        }
        self.runner_round_us.store(0, Ordering::Relaxed);
        self.on_thread.store(true, Ordering::Release);
        self.work.wake();
        let level = if self.told_slow.swap(true, Ordering::Relaxed) {
            log::Level::Debug
        } else {
            log::Level::Info
        };
        log::log!(
            level,
            "SYNC_FLUSH rounds took {:.1} ms on average: the rmq-group-commit thread makes them \
             for the next {} s, so that a slow disk does not hold up an I/O thread",
            Duration::from_micros(avg).as_secs_f64() * 1000.0,
            THREAD_ROUNDS_FOR.as_secs()
        );
    }

    /// The flushing thread's loop: write what the appenders staged, sync whatever is
    /// requested, wake the waiters, call `after_round` (the round made the staged bytes
    /// readable: replication is woken and they are dispatched there), repeat. While a
    /// runner has the rounds it stands by, making one only for a request a runner left
    /// waiting [`STAND_BY_INTERVAL`]; after the stop it makes the last round.
    pub fn run(
        &self,
        queue: &MappedFileQueue,
        checkpoint: &StoreCheckpoint,
        after_round: impl Fn(),
    ) {
        let mut on_thread_since = None;
        let mut next_expiry = Instant::now();
        loop {
            if self.stopped.load(Ordering::Acquire) {
                self.round(queue, checkpoint, &after_round);
                self.release_all();
                return;
            }
            let now = Instant::now();
            if now >= next_expiry {
                self.expire(now);
                next_expiry = now + STAND_BY_INTERVAL;
            }
            if !self.on_thread.load(Ordering::Acquire) {
                on_thread_since = None;
                let seen = self.requested.load(Ordering::Acquire);
                self.work.wait(STAND_BY_INTERVAL);
                // Not behind a round the runner is making (maybe stuck in a sync): this
                // thread keeps checking deadlines meanwhile.
                if self.flushed.load(Ordering::Acquire) < seen {
                    if let Ok(one) = self.round.try_lock() {
                        self.round_locked(one, queue, checkpoint, &after_round);
                    }
                }
                continue;
            }
            if self.hand_back(&mut on_thread_since) {
                continue;
            }
            if self.requested.load(Ordering::Acquire) <= self.flushed.load(Ordering::Acquire) {
                self.work.wait(Duration::from_millis(10));
                continue;
            }
            // Let the appenders woken by the last round append before this sync starts, so
            // it covers them too (on few cores they would otherwise miss it by microseconds).
            std::thread::yield_now();
            self.round(queue, checkpoint, &after_round);
        }
    }

    /// Give the rounds back to the runner once they have been the flush thread's for
    /// [`THREAD_ROUNDS_FOR`] after a slow one (never to a runner that is gone).
    fn hand_back(&self, since: &mut Option<Instant>) -> bool {
        let Some(wake) = self.runner.get() else {
            return false;
        };
        if self.runner_gone.load(Ordering::Acquire)
            || since.get_or_insert_with(Instant::now).elapsed() < THREAD_ROUNDS_FOR
        {
            return false;
        }
        self.on_thread.store(false, Ordering::Release);
        wake();
        true
    }

    /// Write what is staged, sync everything appended, wake the waiters covered, then
    /// `after_round`; nothing (false) when no flush is requested beyond the durable position.
    fn round(
        &self,
        queue: &MappedFileQueue,
        checkpoint: &StoreCheckpoint,
        after_round: &impl Fn(),
    ) -> bool {
        let one = self.round.lock().unwrap_or_else(PoisonError::into_inner);
        self.round_locked(one, queue, checkpoint, after_round)
    }

    /// [`round`](Self::round), its lock taken.
    fn round_locked(
        &self,
        _one: MutexGuard<'_, ()>,
        queue: &MappedFileQueue,
        checkpoint: &StoreCheckpoint,
        after_round: &impl Fn(),
    ) -> bool {
        let target = self.requested.load(Ordering::Acquire);
        if target <= self.flushed.load(Ordering::Acquire) {
            return false;
        }
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
        let done: Vec<_> = {
            let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
            let (done, rest): (Vec<_>, Vec<_>) = w.drain(..).partition(|(t, _)| *t <= covered);
            *w = rest;
            done
        };
        for (end_offset, w) in done {
            self.finish(end_offset, w);
        }
        after_round();
        true
    }

    /// After the last round: wake everyone still waiting (they see `stopped`).
    fn release_all(&self) {
        let waiters =
            std::mem::take(&mut *self.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        for (end_offset, w) in waiters {
            self.finish(end_offset, w);
        }
    }

    /// End a wait the durable position, a failed sync or the shutdown has decided.
    fn finish(&self, end_offset: i64, w: FlushWaiter) {
        match w {
            FlushWaiter::Wake(w) => w.wake(),
            // Not decided after all: not durable.
            FlushWaiter::Call { done, .. } => done(
                self.decided(end_offset)
                    .unwrap_or(Ok(FlushOutcome::Timeout)),
            ),
        }
    }

    /// [`poll_flushed`](Self::poll_flushed) as a wait's outcome.
    fn decided(&self, end_offset: i64) -> Option<Result<FlushOutcome>> {
        self.poll_flushed(end_offset)
            .map(|r| r.map(|()| FlushOutcome::Flushed))
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

/// Take out the callbacks whose deadline is `now` or earlier. Waiters are kept in the order
/// they came, so the first callback's deadline is the earliest (one look per put while none
/// is due).
fn take_expired(waiters: &mut Vec<(i64, FlushWaiter)>, now: Instant) -> Vec<FlushCallback> {
    let earliest = waiters.iter().find_map(|(_, w)| match w {
        FlushWaiter::Call { deadline, .. } => Some(*deadline),
        FlushWaiter::Wake(_) => None,
    });
    if earliest.is_none_or(|d| d > now) {
        return Vec::new();
    }
    let due = |w: &FlushWaiter| matches!(w, FlushWaiter::Call { deadline, .. } if *deadline <= now);
    waiters
        .extract_if(.., |(_, w)| due(w))
        .filter_map(|(_, w)| match w {
            FlushWaiter::Call { done, .. } => Some(done),
            FlushWaiter::Wake(_) => None,
        })
        .collect()
}

/// Tell expired callbacks their bytes are stored but not (yet) durable.
fn time_out(expired: Vec<FlushCallback>) {
    for done in expired {
        done(Ok(FlushOutcome::Timeout));
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
            .push((
                self.end_offset,
                FlushWaiter::Wake(Waiter::Task(cx.waker().clone())),
            ));
        gc.nudge();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn average_after(rounds: &[u64]) -> Vec<Duration> {
        let mut avg = 0;
        rounds
            .iter()
            .map(|&us| {
                avg = next_round_average(avg, Duration::from_micros(us));
                Duration::from_micros(avg)
            })
            .collect()
    }

    #[test]
    fn a_lone_slow_round_keeps_the_runner_and_slow_rounds_do_not() {
        // Fast rounds with one that writes back 4 MiB of zeros among them.
        let mut fast = vec![300; 50];
        fast.insert(25, 6_000);
        assert!(average_after(&fast).iter().all(|&a| a < SLOW_RUNNER_ROUND));
        // A disk whose every sync takes 3 ms hands the rounds over within a few of them.
        let slow = average_after(&[3_000; 20]);
        let first = slow.iter().position(|&a| a >= SLOW_RUNNER_ROUND);
        assert!(matches!(first, Some(i) if i < 12), "{slow:?}");
        // One stall of a second hands them over at once.
        assert!(average_after(&[300, 300, 1_000_000])[2] >= SLOW_RUNNER_ROUND);
    }

    type Heard = (&'static str, std::result::Result<FlushOutcome, String>);

    #[test]
    fn flush_callbacks_hear_how_their_wait_ended_once() {
        let gc = GroupCommit::new(100);
        let (tx, rx) = std::sync::mpsc::channel::<Heard>();
        let callback = |tag: &'static str| -> FlushCallback {
            let tx = tx.clone();
            Box::new(move |r| tx.send((tag, r.map_err(|e| e.to_string()))).unwrap())
        };
        // Durable already: called at once, by the caller.
        gc.on_flushed(100, Duration::from_secs(5), callback("durable"));
        assert_eq!(rx.try_recv(), Ok(("durable", Ok(FlushOutcome::Flushed))));
        // Not durable: it waits, asks for a round, and the deadline check ends it with
        // Timeout only once its deadline has passed.
        gc.on_flushed(200, Duration::from_millis(50), callback("late"));
        assert_eq!(gc.requested.load(Ordering::Acquire), 200);
        gc.expire(Instant::now());
        assert!(rx.try_recv().is_err(), "ended before its deadline");
        gc.expire(Instant::now() + Duration::from_millis(60));
        assert_eq!(rx.try_recv(), Ok(("late", Ok(FlushOutcome::Timeout))));
        gc.expire(Instant::now() + Duration::from_secs(60));
        assert!(rx.try_recv().is_err(), "called twice");
        // A put whose deadline has passed times out the waiters before it (and itself)
        // when no one else checks: a flush thread stuck in a sync holds up none of them.
        gc.on_flushed(300, Duration::from_millis(1), callback("before"));
        std::thread::sleep(Duration::from_millis(5));
        gc.on_flushed(301, Duration::ZERO, callback("zero"));
        assert_eq!(rx.try_recv(), Ok(("before", Ok(FlushOutcome::Timeout))));
        assert_eq!(rx.try_recv(), Ok(("zero", Ok(FlushOutcome::Timeout))));
        gc.on_flushed(600, Duration::from_secs(5), callback("held"));
        // A failed sync that covered it: the error, never success.
        gc.failed_upto.store(400, Ordering::Release);
        *gc.failure.lock().unwrap() = "EIO".into();
        gc.on_flushed(350, Duration::from_secs(5), callback("failed"));
        assert_eq!(
            rx.try_recv(),
            Ok((
                "failed",
                Err(StoreError::FlushFailed("EIO".into()).to_string())
            ))
        );
        // The shutdown ends the waits left with its error; later ones hear it at once.
        gc.stop();
        gc.release_all();
        let (tag, r) = rx.try_recv().unwrap();
        assert_eq!(tag, "held");
        assert!(r.unwrap_err().contains("shut down"));
        gc.on_flushed(700, Duration::from_secs(5), callback("after"));
        assert!(rx.try_recv().unwrap().1.is_err());
        assert!(gc.waiters.lock().unwrap().is_empty());
    }
}
