//! SYNC_MASTER's wait for the slaves (RocketMQ's `GroupTransferService`): a put registers the
//! CommitLog end offset it needs and waits until some slave has acknowledged an offset at or
//! past it (`push2SlaveMaxOffset`). Acks arrive on the master's per-slave reader threads; each
//! ack wakes, in one pass, every waiter it covers, so many sends share one round trip, as
//! group commit shares one flush ([`crate::flush::GroupCommit`]).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::flush::Waiter;

/// The replication waiters of a master.
#[derive(Default)]
pub struct GroupTransfer {
    /// The highest offset any slave acknowledged (`push2SlaveMaxOffset`).
    acked: AtomicI64,
    stopped: AtomicBool,
    waiters: Mutex<Vec<(i64, Waiter)>>,
}

impl GroupTransfer {
    /// The highest offset any slave has acknowledged.
    #[must_use]
    pub fn acked(&self) -> i64 {
        self.acked.load(Ordering::Acquire)
    }

    /// A slave acknowledged `offset`: wake every waiter it covers.
    pub(crate) fn notify(&self, offset: i64) {
        let prev = self.acked.fetch_max(offset, Ordering::AcqRel);
        if offset <= prev {
            return;
        }
        let wake: Vec<Waiter> = {
            let mut w = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
            if w.is_empty() {
                return;
            }
            let (done, rest): (Vec<_>, Vec<_>) = w.drain(..).partition(|(t, _)| *t <= offset);
            *w = rest;
            done.into_iter().map(|(_, w)| w).collect()
        };
        for w in wake {
            w.wake();
        }
    }

    /// Block until a slave acknowledged `end_offset` (true) or `timeout` passed (false).
    pub fn wait_for(&self, end_offset: i64, timeout: Duration) -> bool {
        if self.acked() >= end_offset {
            return true;
        }
        let deadline = Instant::now() + timeout;
        self.register(end_offset, Waiter::Thread(std::thread::current()));
        loop {
            if self.acked() >= end_offset {
                return true;
            }
            let now = Instant::now();
            if now >= deadline || self.stopped.load(Ordering::Acquire) {
                return false;
            }
            std::thread::park_timeout(deadline - now);
        }
    }

    fn register(&self, end_offset: i64, w: Waiter) {
        self.waiters
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((end_offset, w));
    }

    /// Shut down: wake everyone (they see a timeout).
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let all = std::mem::take(&mut *self.waiters.lock().unwrap_or_else(PoisonError::into_inner));
        for (_, w) in all {
            w.wake();
        }
    }
}

/// Resolves to true once a slave acknowledged the end offset, or to false when the store
/// shuts down; the caller applies `syncFlushTimeout` (FLUSH_SLAVE_TIMEOUT) with its own timer.
pub struct TransferFuture {
    transfer: Arc<GroupTransfer>,
    end_offset: i64,
}

impl TransferFuture {
    pub(crate) fn new(transfer: Arc<GroupTransfer>, end_offset: i64) -> Self {
        Self {
            transfer,
            end_offset,
        }
    }
}

impl std::future::Future for TransferFuture {
    type Output = bool;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<bool> {
        use std::task::Poll;
        let t = &self.transfer;
        if t.acked() >= self.end_offset {
            return Poll::Ready(true);
        }
        if t.stopped.load(Ordering::Acquire) {
            return Poll::Ready(false);
        }
        t.register(self.end_offset, Waiter::Task(cx.waker().clone()));
        // An ack may have landed between the check and the registration.
        if t.acked() >= self.end_offset {
            Poll::Ready(true)
        } else {
            Poll::Pending
        }
    }
}
