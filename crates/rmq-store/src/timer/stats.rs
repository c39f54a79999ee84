//! Where the timer thread stands, for the broker's runtime info under RocketMQ's key names
//! (`timerReadBehind`, `timerOffsetBehind`, `timerCongestNum`, `timerEnqueueTps`,
//! `timerDequeueTps`, as `rocketmq-dashboard` and `mqadmin brokerStatus` read them). Written
//! by the timer thread, read by anyone.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The timer thread's published figures.
#[derive(Debug, Default)]
pub(crate) struct TimerStats {
    /// Start (ms) of the next second to deliver; 0 before the wheel exists.
    read_ms: AtomicI64,
    /// Next `rmq_sys_wheel_timer` unit to link.
    queue_offset: AtomicI64,
    /// Timers in the wheel not delivered yet (counted at each sync).
    pending: AtomicI64,
    enqueued: AtomicU64,
    dequeued: AtomicU64,
    /// f64 bits.
    enqueue_tps: AtomicU64,
    dequeue_tps: AtomicU64,
}

impl TimerStats {
    pub(crate) fn set_position(&self, read_ms: i64, queue_offset: i64) {
        self.read_ms.store(read_ms, Ordering::Relaxed);
        self.queue_offset.store(queue_offset, Ordering::Relaxed);
    }

    pub(crate) fn add(&self, enqueued: u64, dequeued: u64) {
        self.enqueued.fetch_add(enqueued, Ordering::Relaxed);
        self.dequeued.fetch_add(dequeued, Ordering::Relaxed);
    }

    /// At each sync: the pending count, and the rates since the last sync (`secs` ago, when
    /// the totals were `last`). Returns the totals now.
    pub(crate) fn sample(&self, pending: i64, secs: f64, last: (u64, u64)) -> (u64, u64) {
        let now = (
            self.enqueued.load(Ordering::Relaxed),
            self.dequeued.load(Ordering::Relaxed),
        );
        self.pending.store(pending, Ordering::Relaxed);
        if secs > 0.0 {
            #[expect(clippy::cast_precision_loss, reason = "a rate per second, for display")]
            let rate = |a: u64, b: u64| (a.saturating_sub(b) as f64 / secs).to_bits();
            self.enqueue_tps
                .store(rate(now.0, last.0), Ordering::Relaxed);
            self.dequeue_tps
                .store(rate(now.1, last.1), Ordering::Relaxed);
        }
        now
    }

    /// Runtime-info pairs; `now_ms` and the timer topic's ConsumeQueue end give the lags.
    pub(crate) fn runtime_info(&self, now_ms: i64, queue_max: i64) -> [(&'static str, String); 5] {
        let read = self.read_ms.load(Ordering::Relaxed);
        let behind_s = if read > 0 {
            (now_ms - read).max(0) / 1000
        } else {
            0
        };
        let tps = |a: &AtomicU64| format!("{:.1}", f64::from_bits(a.load(Ordering::Relaxed)));
        [
            ("timerReadBehind", behind_s.to_string()),
            (
                "timerOffsetBehind",
                (queue_max - self.queue_offset.load(Ordering::Relaxed))
                    .max(0)
                    .to_string(),
            ),
            (
                "timerCongestNum",
                self.pending.load(Ordering::Relaxed).to_string(),
            ),
            ("timerEnqueueTps", tps(&self.enqueue_tps)),
            ("timerDequeueTps", tps(&self.dequeue_tps)),
        ]
    }
}
