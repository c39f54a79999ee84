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

use rmq_common::properties::{edit_properties, find_property, PropertyKey};
use rmq_common::time::now_millis;

use super::engine::{files, TimerEngine};
use super::log::{TimerEntry, DEFAULT_FILE_SIZE};
use super::{TimerSettings, TIMER_TOPIC};
use crate::config::{BrokerRole, StoreConfig};
use crate::error::{Result, StoreError};
use crate::flush::Waker;
use crate::format::{scan_record, MessageToStore, Scan};
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

/// A message that cannot be delivered ever, and why.
fn skip(e: &TimerEntry, why: &str) {
    eprintln!(
        "rmq-store WARN: timer message at CommitLog offset {} (due second {}) skipped: {why}",
        e.offset_py, e.delayed
    );
}

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
        eprintln!(
            "rmq-store INFO: timer recovery: {} entries after the last checkpoint, {} linked \
             into the wheel again, {} slots cut back",
            rec.replayed, rec.relinked, rec.repaired
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
            if stopping || last_sync.elapsed() >= SYNC_INTERVAL {
                last_sync = Instant::now();
                if let Err(e) = engine.sync() {
                    self.log_error(&format!("syncing the timer wheel and log: {e}"));
                }
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
            eprintln!("rmq-store ERROR: {what}");
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
                eprintln!(
                    "rmq-store WARN: the timer wheel was at unit {from} of {TIMER_TOPIC}, which \
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
        for (i, u) in got.units.iter().enumerate() {
            let q = from + i64::try_from(i).unwrap_or(0);
            engine.enqueue(u.tags_code.div_euclid(p), u.offset, u.size, q)?;
        }
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
                    eprintln!(
                        "rmq-store ERROR: timer messages of second {} skipped: {e}",
                        engine.read_slot()
                    );
                    self.resume_at = 0;
                    engine.advance();
                    continue;
                }
                Err(e) => return Err(e),
            };
            let mut end = None;
            let mut delivered = 0usize;
            for e in entries.iter().skip(self.resume_at) {
                if e.delayed > engine.read_slot() {
                    engine.requeue(e)?;
                } else if let Some(at) = deliver_one(store, e)? {
                    end = Some(at);
                    delivered += 1;
                }
                self.resume_at += 1;
            }
            if let Some(end) = end {
                store.wait_durable(end)?;
            }
            self.resume_at = 0;
            engine.advance();
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

/// Re-put one timer message into its real queue; `Ok(Some(end offset))` when delivered,
/// `Ok(None)` when skipped for good.
fn deliver_one(store: &MessageStore, e: &TimerEntry) -> Result<Option<i64>> {
    let Some(sel) = store.look_message_by_offset(e.offset_py) else {
        skip(
            e,
            "no such message (deleted with its CommitLog file before it was due?)",
        );
        return Ok(None);
    };
    let Scan::Message(r) = scan_record(sel.bytes(), false) else {
        skip(e, "not a message record");
        return Ok(None);
    };
    if r.topic != TIMER_TOPIC || i32::try_from(r.total_size).ok() != Some(e.size_py) {
        skip(
            e,
            "the record there is not the timer message its entry points to",
        );
        return Ok(None);
    }
    let prop = |n| find_property(r.properties, n).and_then(|v| std::str::from_utf8(v).ok());
    let (Some(topic), Some(qid)) = (
        prop(PropertyKey::REAL_TOPIC),
        prop(PropertyKey::REAL_QUEUE_ID).and_then(|q| q.parse::<i32>().ok()),
    ) else {
        skip(e, "it has no REAL_TOPIC / REAL_QID property");
        return Ok(None);
    };
    let enqueue_ms = r.store_timestamp.to_string();
    let dequeue_ms = now_millis().to_string();
    let offset_id;
    let mut set = vec![
        (PropertyKey::TIMER_ENQUEUE_MS, enqueue_ms.as_str()),
        (PropertyKey::TIMER_DEQUEUE_MS, dequeue_ms.as_str()),
    ];
    if prop(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX).is_none() {
        // Consumers see the id the producer was given: the parked record's offset id.
        offset_id = rmq_common::create_offset_msg_id(r.store_host, r.physical_offset);
        set.push((
            PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            offset_id.as_str(),
        ));
    }
    let properties = edit_properties(
        r.properties,
        &[PropertyKey::REAL_TOPIC, PropertyKey::REAL_QUEUE_ID],
        &set,
    );
    let msg = MessageToStore {
        topic,
        queue_id: qid,
        flag: r.flag,
        body: r.body,
        properties: &properties,
        sys_flag: r.sys_flag,
        born_timestamp: r.born_timestamp,
        born_host: r.born_host,
        reconsume_times: r.reconsume_times,
        prepared_transaction_offset: 0,
    };
    match store.append_one(&msg) {
        Ok(a) => Ok(Some(a.end_offset())),
        Err(err @ (StoreError::MessageIllegal(_) | StoreError::PropertiesSizeExceeded(_))) => {
            skip(
                e,
                &format!("its real queue {topic}/{qid} refuses it: {err}"),
            );
            Ok(None)
        }
        Err(err) => Err(err),
    }
}
