//! The store's timer thread (`rmq-timer`, RocketMQ's enqueue/dequeue services of
//! `TimerMessageStore` in one loop): it links new `rmq_sys_wheel_timer` units into the wheel,
//! and once a second is over re-puts that second's messages into their real queues, then
//! saves its progress. It wakes on each second boundary and every 100 ms to pick up new units.
//!
//! Delivery of a second is at-least-once across a `kill -9` (the second being delivered when
//! the process died is delivered again), exactly-once across a clean stop: the store stops
//! this thread first, which finishes the second in hand and syncs its files.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmq_common::time::now_millis;

use super::engine::{files, TimerEngine};
use super::log::DEFAULT_FILE_SIZE;
use super::{TimerSettings, TIMER_TOPIC};
use crate::config::{BrokerRole, StoreConfig};
use crate::error::{Result, StoreError};
use crate::flush::Waker;
use crate::store::MessageStore;

/// Units read from the timer topic per pass.
const ENQUEUE_BATCH: usize = 4096;
/// Longest sleep between two passes.
const POLL: Duration = Duration::from_millis(100);
/// Log, wheel and checkpoint are synced this often (and at stop). Between syncs a `kill -9`
/// loses nothing (the page cache keeps the mappings); a machine crash may lose the last
/// interval's timers, as an ASYNC_FLUSH CommitLog loses its unflushed tail.
const SYNC_INTERVAL: Duration = Duration::from_secs(10);
/// After a refused delivery (disk full, busy), try again this much later.
const RETRY: Duration = Duration::from_millis(100);
/// A repeated failure is logged at most this often.
const LOG_EVERY_MS: i64 = 10_000;

/// The timer service of the store at `root`; `None` when this store runs no timer thread
/// (`timerWheelEnable` false, or a slave: RocketMQ delivers timers on the master). The wheel
/// and log are opened (and recovered) here when they exist, else created when the first timer
/// message arrives, so a store that never sees one has no 16 MB wheel file.
///
/// # Errors
/// Damaged timer files, named with what to do.
pub(crate) fn open(root: &Path, config: &StoreConfig) -> Result<Option<TimerService>> {
    if !config.timer_wheel_enable || config.broker_role == BrokerRole::Slave {
        return Ok(None);
    }
    let settings = TimerSettings::from_config(config);
    let engine = if root.join(files::WHEEL).exists() || root.join(files::CHECKPOINT).exists() {
        Some(open_engine(root, &settings)?)
    } else {
        None
    };
    Ok(Some(TimerService {
        root: root.to_path_buf(),
        engine,
        settings,
        resume_at: 0,
        last_error_log: 0,
    }))
}

fn open_engine(root: &Path, settings: &TimerSettings) -> Result<TimerEngine> {
    let now_slot = now_millis().div_euclid(settings.precision_ms);
    let (engine, rec) =
        TimerEngine::open(root, settings.wheel_slots(), DEFAULT_FILE_SIZE, now_slot)?;
    if rec.relinked > 0 || rec.repaired > 0 {
        log::info!(
            "timer recovery: {} entries after the last checkpoint, {} linked \
             into the wheel again, {} slots cut back",
            rec.replayed,
            rec.relinked,
            rec.repaired
        );
    }
    Ok(engine)
}

/// The thread's state.
pub(crate) struct TimerService {
    root: PathBuf,
    /// `None` until the first timer message (see [`open`]).
    engine: Option<TimerEngine>,
    settings: TimerSettings,
    /// Entries of the current second already dealt with (a refused write stopped it there).
    resume_at: usize,
    last_error_log: i64,
}

impl TimerService {
    /// The loop, until `waker` is stopped; then the second in hand is finished and the files
    /// are synced.
    pub(crate) fn run(mut self, store: &Arc<MessageStore>, waker: &Waker) {
        let mut last_sync = Instant::now();
        let mut totals = (0, 0);
        let mut published = false;
        loop {
            let stopping = waker.is_stopped();
            if self.engine.is_none() && store.get_max_offset_in_queue(TIMER_TOPIC, 0) > 0 {
                match open_engine(&self.root, &self.settings) {
                    Ok(e) => self.engine = Some(e),
                    Err(e) => self.log_error(&format!(
                        "creating the timer wheel: {e} (timer messages wait in {TIMER_TOPIC} \
                         until it can be created)"
                    )),
                }
            }
            let Some(mut engine) = self.engine.take() else {
                if stopping {
                    return;
                }
                waker.wait(POLL);
                continue;
            };
            let full = match self.enqueue(&mut engine, store) {
                Ok(full) => full,
                Err(e) => {
                    self.log_error(&format!("linking timer messages into the wheel: {e}"));
                    false
                }
            };
            let failed = match self.deliver_due(&mut engine, store) {
                Ok(()) => false,
                Err(e) => {
                    self.log_error(&format!(
                        "delivering timer messages of second {}: {e} (retrying; they stay in \
                         the wheel meanwhile)",
                        engine.read_slot()
                    ));
                    true
                }
            };
            let stats = store.timer_stats();
            stats.set_position(
                engine.read_slot() * self.settings.precision_ms,
                engine.queue_offset(),
            );
            if stopping || last_sync.elapsed() >= SYNC_INTERVAL {
                totals = stats.sample(engine.pending(), last_sync.elapsed().as_secs_f64(), totals);
                last_sync = Instant::now();
                if let Err(e) = engine.sync() {
                    self.log_error(&format!("syncing the timer wheel and log: {e}"));
                }
                published = false;
            }
            if !published {
                // What retention must keep: both values of this one moment (see
                // `MessageStore::publish_timer_hold`); stale later, which only keeps more.
                store.publish_timer_hold(engine.pending_floor(), engine.queue_offset());
                published = true;
            }
            self.engine = Some(engine);
            if stopping {
                return;
            }
            if full {
                continue;
            }
            let wait = if failed {
                RETRY
            } else {
                let p = self.settings.precision_ms;
                let to_boundary = p - now_millis().rem_euclid(p);
                POLL.min(Duration::from_millis(
                    u64::try_from(to_boundary).unwrap_or(0),
                ))
            };
            waker.wait(wait);
        }
    }

    fn log_error(&mut self, what: &str) {
        let now = now_millis();
        if now - self.last_error_log >= LOG_EVERY_MS {
            self.last_error_log = now;
            log::error!("{what}");
        }
    }

    /// Link the timer topic's new units; returns whether a whole batch was read (more wait).
    fn enqueue(&mut self, engine: &mut TimerEngine, store: &MessageStore) -> Result<bool> {
        let from = engine.queue_offset();
        let got = store.get_consume_queue_units(TIMER_TOPIC, 0, from, ENQUEUE_BATCH);
        if got.units.is_empty() {
            let fixed = if from < got.min_offset {
                Some(got.min_offset)
            } else if from > got.max_offset {
                Some(got.max_offset)
            } else {
                None
            };
            if let Some(to) = fixed {
                log::warn!(
                    "the timer wheel was at unit {from} of {TIMER_TOPIC}, which \
                     holds [{}, {}); continuing at {to}{}",
                    got.min_offset,
                    got.max_offset,
                    if to > from {
                        " (timer messages below it were deleted before they were due)"
                    } else {
                        ""
                    }
                );
                engine.set_queue_offset(to);
            }
            return Ok(false);
        }
        let p = self.settings.precision_ms;
        for (q, u) in (from..).zip(&got.units) {
            engine.enqueue(u.tags_code.div_euclid(p), u.offset, u.size, q)?;
        }
        store
            .timer_stats()
            .add(u64::try_from(got.units.len()).unwrap_or(u64::MAX), 0);
        Ok(got.units.len() == ENQUEUE_BATCH)
    }

    /// Deliver every second that is over.
    fn deliver_due(&mut self, engine: &mut TimerEngine, store: &MessageStore) -> Result<()> {
        let start = engine.read_slot();
        while engine.is_due(now_millis(), self.settings.precision_ms) {
            let entries = match engine.due_entries() {
                Ok(entries) => entries,
                Err(e @ StoreError::Corruption { .. }) => {
                    // Retrying cannot help, and would hold up every later second.
                    log::error!(
                        "timer messages of second {} skipped: {e}",
                        engine.read_slot()
                    );
                    self.resume_at = 0;
                    engine.advance();
                    continue;
                }
                Err(e) => return Err(e),
            };
            let (delivered, end) =
                super::deliver::second(store, engine, &entries, &mut self.resume_at)?;
            if let Some(end) = end {
                store.wait_durable(end)?;
            }
            self.resume_at = 0;
            engine.advance();
            store
                .timer_stats()
                .add(0, u64::try_from(delivered).unwrap_or(u64::MAX));
            if delivered > 0 {
                // Right after the re-put: a kill from here on does not repeat this second.
                engine.save_progress()?;
            }
        }
        if engine.read_slot() != start {
            engine.save_progress()?;
        }
        Ok(())
    }
}
