//! What one peer can make this process hold, and when a connection has gone quiet.
//!
//! Every connection counts the requests it is handling, the reply bytes queued for the peer
//! and not yet written, and the bytes of this side's own requests queued the same way. A peer
//! that stops reading its socket makes the reply bytes grow; past
//! [`ConnectionLimits::max_queued_reply_bytes`] (or with
//! [`ConnectionLimits::max_in_flight_requests`] requests still being handled) the reader
//! stops reading that connection until the writer drains (backpressure through TCP, as the
//! peer's sends then block). This side's own requests are never a reason to stop reading (the
//! responses to them arrive on that same reader); past
//! [`ConnectionLimits::max_queued_request_bytes`] a new one is refused instead.
//!
//! The counters are touched once per request and once per write; the reader is woken only
//! while it is paused.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// Per-connection bounds (the same for every connection of a server or client).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Requests from the peer being handled at once (held pulls count until answered);
    /// at the limit the connection is not read until one finishes.
    pub max_in_flight_requests: usize,
    /// Reply bytes queued for the peer and not yet written; past it the connection is not
    /// read until the peer has taken some.
    pub max_queued_reply_bytes: usize,
    /// Bytes of this side's own requests queued and not yet written; past it a new request
    /// fails at once ([`crate::RemotingError::Backlog`]).
    pub max_queued_request_bytes: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            // Java clients keep one pull per queue in flight; 8192 queues of one client on
            // one broker is far past what RocketMQ deployments use.
            max_in_flight_requests: 8192,
            max_queued_reply_bytes: 16 << 20,
            max_queued_request_bytes: 64 << 20,
        }
    }
}

/// Which counter a queued item is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Charge {
    /// A reply to the peer's request.
    Reply,
    /// This side's own request or oneway.
    Request,
}

pub(crate) struct Budget {
    limits: ConnectionLimits,
    in_flight: AtomicUsize,
    reply_bytes: AtomicUsize,
    request_bytes: AtomicUsize,
    reader_paused: AtomicBool,
    freed: Notify,
    last_active_ms: AtomicU64,
}

impl Budget {
    pub(crate) fn new(limits: ConnectionLimits) -> Self {
        Self {
            limits,
            in_flight: AtomicUsize::new(0),
            reply_bytes: AtomicUsize::new(0),
            request_bytes: AtomicUsize::new(0),
            reader_paused: AtomicBool::new(false),
            freed: Notify::new(),
            last_active_ms: AtomicU64::new(now_ms()),
        }
    }

    fn counter(&self, charge: Charge) -> &AtomicUsize {
        match charge {
            Charge::Reply => &self.reply_bytes,
            Charge::Request => &self.request_bytes,
        }
    }

    /// Charge `bytes` of a queued item; a request over its limit is refused (returns the
    /// bytes already queued).
    pub(crate) fn charge(&self, charge: Charge, bytes: usize) -> Result<(), usize> {
        let counter = self.counter(charge);
        let before = counter.fetch_add(bytes, Ordering::SeqCst);
        if charge == Charge::Request
            && before > 0
            && before + bytes > self.limits.max_queued_request_bytes
        {
            counter.fetch_sub(bytes, Ordering::SeqCst);
            return Err(before);
        }
        Ok(())
    }

    /// The writer has written (or dropped) these bytes.
    pub(crate) fn release(&self, replies: usize, requests: usize) {
        if replies > 0 {
            self.reply_bytes.fetch_sub(replies, Ordering::SeqCst);
        }
        if requests > 0 {
            self.request_bytes.fetch_sub(requests, Ordering::SeqCst);
        }
        self.wake_reader();
    }

    /// A request from the peer starts being handled; it ends when the guard drops.
    pub(crate) fn start_request(self: &std::sync::Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(std::sync::Arc::clone(self))
    }

    fn wake_reader(&self) {
        // SeqCst pairs with the reader's store of `reader_paused` before its re-check, so
        // either the reader sees the freed room or this sees the flag.
        if self.reader_paused.load(Ordering::SeqCst) {
            self.freed.notify_one();
        }
    }

    /// Whether the reader must wait before reading more.
    pub(crate) fn must_wait(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) >= self.limits.max_in_flight_requests
            || self.reply_bytes.load(Ordering::SeqCst) >= self.limits.max_queued_reply_bytes
    }

    /// Wait until the peer may be read again (returns at once when it may).
    pub(crate) async fn room_to_read(&self) {
        while self.must_wait() {
            self.reader_paused.store(true, Ordering::SeqCst);
            if self.must_wait() {
                self.freed.notified().await;
            }
            self.reader_paused.store(false, Ordering::SeqCst);
        }
    }

    /// What the reader waits on, for its log line.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} requests in flight, {} reply bytes queued",
            self.in_flight.load(Ordering::Relaxed),
            self.reply_bytes.load(Ordering::Relaxed)
        )
    }

    /// Traffic in either direction just now.
    pub(crate) fn touch(&self) {
        self.last_active_ms.store(now_ms(), Ordering::Relaxed);
    }

    /// How long since the last traffic.
    pub(crate) fn idle_for(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.last_active_ms.load(Ordering::Relaxed)))
    }
}

/// A request being handled; dropping it (done, or the task gone) frees its slot.
pub(crate) struct InFlight(std::sync::Arc<Budget>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.0.wake_reader();
    }
}

/// Milliseconds on a monotonic clock (since the first call in this process).
fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    u64::try_from(START.get_or_init(Instant::now).elapsed().as_millis()).unwrap_or(u64::MAX)
}
