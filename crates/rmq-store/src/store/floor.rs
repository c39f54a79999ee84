//! The retention floor of [`MessageStore`]: the lowest CommitLog offset that something still
//! has to read, so that deleting CommitLog files never loses an acked message that is waiting
//! for its reader. [`retention`](super::retention) deletes only files that end at or below it.
//!
//! | holder | what it still needs | where its progress comes from | holds back |
//! |---|---|---|---|
//! | dispatch | records not yet in a ConsumeQueue | the reput offset | every deletion |
//! | pending timers | the parked record of every timer not delivered yet | the timer thread ([`MessageStore::publish_timer_hold`]) | expiry and forced deletion |
//! | delay levels | `SCHEDULE_TOPIC_XXXX` units from each level's offset on | the delay scheduler ([`MessageStore::set_delay_offsets`]) | expiry and forced deletion |
//! | subscription groups | each queue from the group's committed offset on | the broker ([`MessageStore::set_consume_progress`]) | forced deletion |
//!
//! Why timers and delay-level messages are kept past `fileReservedTime`: they are acked
//! messages that have not reached their topic yet. Expiry is RocketMQ's promise of how long a
//! consumer may lag behind a *delivered* message; a parked message deleted before it is due
//! would be lost without any consumer ever having had the chance to read it (RocketMQ loses it:
//! the scheduler finds the unit pointing at a deleted file and skips it).
//!
//! Subscription groups are not protected from expiry (that is `fileReservedTime`'s contract),
//! only from *forced* deletion, RocketMQ's clean-up of unexpired files when the disk is above
//! `diskSpaceCleanForciblyRatio`: deleting unconsumed messages there trades acked data for
//! space, so instead the store refuses writes at `diskSpaceWarningLevelRatio` until space is
//! freed or consumers catch up. `cleanUnconsumedFileForciblyEnable` restores RocketMQ's
//! behaviour: forced deletion then ignores every holder but dispatch.
//!
//! Every source may be stale, never ahead: progress only moves forward, and the unit a queue
//! offset points to is looked up when the floor is computed, so a stale offset only keeps more.

use std::collections::hash_map::{Entry, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use super::MessageStore;
use crate::schedule::{level_to_queue_id, SCHEDULE_TOPIC};
use crate::timer::TIMER_TOPIC;

/// A reader of one queue that has not read all of it: from queue offset `offset` on, its units'
/// CommitLog records must stay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueHold {
    /// Who reads, for the log (`subscription group G`).
    pub holder: String,
    /// The queue's topic.
    pub topic: String,
    /// The queue.
    pub queue_id: i32,
    /// The next queue offset it will read (a committed consumer offset).
    pub offset: i64,
}

/// The live progress of the subscription groups: every `(group, topic, queue)` committed
/// offset. The broker registers one with [`MessageStore::set_consume_progress`]; forced
/// deletion calls it once per pass.
pub type ConsumeProgress = dyn Fn() -> Vec<QueueHold> + Send + Sync;

/// The lowest CommitLog offset one holder still needs, and who that is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetentionHold {
    /// CommitLog offset of the oldest record still needed.
    pub offset: i64,
    /// Who needs it, for the log and the producers' remark (`subscription group G on T/3`).
    pub holder: String,
    /// Where that holder stands (`at queue offset 17 of 40`), empty when there is nothing to
    /// add.
    pub detail: String,
}

impl RetentionHold {
    /// The lower of two holds (`None`: no hold).
    pub(crate) fn lower(a: Option<Self>, b: Option<Self>) -> Option<Self> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b.offset < a.offset { b } else { a }),
            (a, b) => a.or(b),
        }
    }
}

/// What the timer thread last published (see [`MessageStore::publish_timer_hold`]).
#[derive(Debug, Clone, Copy)]
struct TimerHold {
    /// Lowest CommitLog offset of a timer linked into the wheel and not delivered yet.
    linked: Option<i64>,
    /// First `rmq_sys_wheel_timer` unit not linked into the wheel then.
    enqueue_offset: i64,
}

/// The holders' progress as the store was told it.
pub(super) struct Holds {
    consume_progress: RwLock<Option<Arc<ConsumeProgress>>>,
    /// Queue id of each delay level → next offset to deliver; `None` until the scheduler
    /// says (everything parked is held meanwhile).
    delay_offsets: Mutex<Option<Vec<(i32, i64)>>>,
    /// `None`: this store runs no timer thread (timers off, or a slave).
    timer: Mutex<Option<TimerHold>>,
    /// What held back the last deletion pass, for the producers' remark while writes are
    /// refused.
    pub(super) last_held: Mutex<Option<RetentionHold>>,
}

impl Holds {
    /// Before the timer thread publishes, every unit of the timer topic is held.
    pub(super) fn new(timer_thread: bool) -> Self {
        Self {
            consume_progress: RwLock::new(None),
            delay_offsets: Mutex::new(None),
            timer: Mutex::new(timer_thread.then_some(TimerHold {
                linked: None,
                enqueue_offset: 0,
            })),
            last_held: Mutex::new(None),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MessageStore {
    /// Register the subscription groups' committed offsets (the broker does, once): forced
    /// deletion keeps every CommitLog record a group has not consumed.
    pub fn set_consume_progress(&self, progress: Arc<ConsumeProgress>) {
        *self
            .holds
            .consume_progress
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(progress);
    }

    /// The delay scheduler's progress: `(level, next offset to deliver)` of each delay level
    /// (`delayOffset.json`'s table). Parked messages from there on are kept; until the first
    /// call every parked message is.
    pub fn set_delay_offsets(&self, offsets: &[(i32, i64)]) {
        let table = offsets
            .iter()
            .map(|&(level, offset)| (level_to_queue_id(level), offset))
            .collect();
        *lock(&self.holds.delay_offsets) = Some(table);
    }

    /// The timer thread's progress: the lowest CommitLog offset of a timer in the wheel
    /// (`None`: none pending) and the first timer-topic unit not linked into the wheel, both
    /// as of one moment. Units linked later come from `enqueue_offset` on, which stays held
    /// until the next call.
    pub(crate) fn publish_timer_hold(&self, linked: Option<i64>, enqueue_offset: i64) {
        *lock(&self.holds.timer) = Some(TimerHold {
            linked,
            enqueue_offset,
        });
    }

    /// CommitLog offset of the unit at queue offset `offset` of `(topic, queue_id)` (or of its
    /// first unit, when `offset` is below it); `None` when `offset` is at or past the end.
    fn unread_from(&self, topic: &str, queue_id: i32, offset: i64) -> Option<i64> {
        let cq = self.get_consume_queue(topic, queue_id)?;
        let at = offset.max(cq.min_offset_in_queue());
        if at >= cq.max_offset_in_queue() {
            return None;
        }
        cq.get_unit(at).map(|u| u.offset)
    }

    fn queue_hold(&self, h: &QueueHold) -> Option<RetentionHold> {
        let offset = self.unread_from(&h.topic, h.queue_id, h.offset)?;
        Some(RetentionHold {
            offset,
            holder: format!("{} on {}/{}", h.holder, h.topic, h.queue_id),
            detail: format!(
                "at queue offset {} of {}",
                h.offset
                    .max(self.get_min_offset_in_queue(&h.topic, h.queue_id)),
                self.get_max_offset_in_queue(&h.topic, h.queue_id)
            ),
        })
    }

    /// Records not dispatched into their ConsumeQueue yet.
    pub(super) fn dispatch_hold(&self) -> Option<RetentionHold> {
        let at = self.reput.reput_from_offset();
        (at < self.commit_log.max_offset()).then(|| RetentionHold {
            offset: at,
            holder: "dispatch (records not in a ConsumeQueue yet)".into(),
            detail: format!("at CommitLog offset {at}"),
        })
    }

    fn delay_hold(&self) -> Option<RetentionHold> {
        let known = lock(&self.holds.delay_offsets).clone();
        if known.is_none() && self.broker_role() == crate::config::BrokerRole::Slave {
            return None; // a slave delivers nothing: its master's scheduler decides
        }
        let levels = i32::try_from(self.delay_levels_ms().len()).unwrap_or(i32::MAX);
        let table = known.unwrap_or_else(|| (0..levels).map(|q| (q, 0)).collect());
        table
            .iter()
            .filter_map(|&(queue_id, offset)| {
                self.queue_hold(&QueueHold {
                    holder: format!("delay level {}", queue_id + 1),
                    topic: SCHEDULE_TOPIC.into(),
                    queue_id,
                    offset,
                })
            })
            .min_by_key(|h| h.offset)
    }

    fn timer_hold(&self) -> Option<RetentionHold> {
        let t = (*lock(&self.holds.timer))?;
        let linked = t.linked.map(|offset| RetentionHold {
            offset,
            holder: "a timer message in the time wheel, not delivered yet".into(),
            detail: String::new(),
        });
        let waiting = self.queue_hold(&QueueHold {
            holder: "timer messages not linked into the time wheel yet".into(),
            topic: TIMER_TOPIC.into(),
            queue_id: 0,
            offset: t.enqueue_offset,
        });
        RetentionHold::lower(linked, waiting)
    }

    /// The lowest offset held by dispatch, pending timers and delay-level messages: what no
    /// deletion, expiry included, may go past (see the module docs).
    #[must_use]
    pub fn undelivered_floor(&self) -> Option<RetentionHold> {
        let f = RetentionHold::lower(self.dispatch_hold(), self.timer_hold());
        RetentionHold::lower(f, self.delay_hold())
    }

    /// The lowest offset a subscription group has not consumed, over every queue it has a
    /// committed offset for.
    #[must_use]
    pub fn unconsumed_floor(&self) -> Option<RetentionHold> {
        let progress = self
            .holds
            .consume_progress
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        // The slowest group of each queue decides; one unit lookup per queue.
        let mut slowest: HashMap<(String, i32), QueueHold> = HashMap::new();
        for h in progress() {
            match slowest.entry((h.topic.clone(), h.queue_id)) {
                Entry::Occupied(mut e) => {
                    if h.offset < e.get().offset {
                        e.insert(h);
                    }
                }
                Entry::Vacant(e) => {
                    e.insert(h);
                }
            }
        }
        slowest
            .values()
            .filter_map(|h| self.queue_hold(h))
            .min_by_key(|h| h.offset)
    }

    /// The retention floor: the lowest CommitLog offset anything still needs (dispatch,
    /// pending timers, delay levels, subscription groups), `None` when nothing holds any.
    #[must_use]
    pub fn retention_floor(&self) -> Option<RetentionHold> {
        RetentionHold::lower(self.undelivered_floor(), self.unconsumed_floor())
    }
}
