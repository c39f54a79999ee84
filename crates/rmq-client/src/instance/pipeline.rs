//! Pipelined pulls: when a pull of a queue finds messages, the next pull of that queue (from
//! the offset the broker says comes next) is sent at once, before the caller has even seen
//! the result, and waits here for the caller's next pull of the queue. The caller's listener
//! runs while the next batch travels, so a consumer whose callbacks take the GIL still keeps
//! every queue's pull in flight (RocketMQ's Java consumer gets the same overlap from
//! `PullMessageService` running apart from the consume threads).
//!
//! One pull at most waits per group and queue; a pull for another offset (after a seek, a
//! reset, a rebalance that handed the queue back at a committed offset) or with another
//! subscription or batch size discards it and goes to the broker as before. The caller's
//! decisions (flow control, when to commit) are unchanged: it still asks for every pull.
//!
//! A pull sent ahead carries no commit offset: it may leave long after the caller's request
//! it follows (that one may wait out a 15 s long poll), and an offset read back then could
//! undo a later commit (a shutdown's, a rebalance's). Offsets reach the broker through the
//! caller's own pulls and its periodic UPDATE_CONSUMER_OFFSET, as RocketMQ's persist does.
//! [`ClientInstance::forget_pipelined`] also stops a pull still waiting for its answer from
//! sending another one ahead.

use std::collections::HashMap;
use std::sync::PoisonError;

use rmq_protocol::body::MessageQueue;
use tokio::sync::oneshot;

use super::ClientInstance;
use crate::consumer::{PullRequest, PullResult, PullStatus};
use crate::error::{ClientError, Result};

/// The next pull of one queue, sent ahead.
pub(super) struct Prefetched {
    /// What it asked for; the caller's next request must match it to take the answer.
    offset: i64,
    max_nums: i32,
    sub_string: String,
    answer: oneshot::Receiver<Result<PullResult>>,
}

/// A queue's pipeline: the pull sent ahead, if any, and how often the queue was forgotten
/// (a pull that began before the last forget sends nothing ahead).
#[derive(Default)]
pub(super) struct Slot {
    epoch: u64,
    ahead: Option<Prefetched>,
}

/// Pipelines by (group, queue).
pub(super) type PrefetchSlots = std::sync::Mutex<HashMap<(String, MessageQueue), Slot>>;

impl ClientInstance {
    /// [`ClientInstance::pull`], answered by the pull sent ahead for this queue when it asked
    /// the same; a FOUND answer sends the next pull ahead (from `next_begin_offset`, with the
    /// same subscription, batch size and suspension, and no commit offset).
    ///
    /// # Errors
    /// As [`ClientInstance::pull`].
    pub async fn pull_pipelined(&self, req: &PullRequest) -> Result<PullResult> {
        let key = (req.group.clone(), req.queue.clone());
        let (epoch, ahead) = {
            let mut slots = self.slots();
            let slot = slots.entry(key.clone()).or_default();
            (slot.epoch, slot.ahead.take())
        };
        let ahead = ahead.filter(|p| {
            p.offset == req.offset
                && p.max_nums == req.max_nums
                && p.sub_string == req.subscription.sub_string
        });
        let result = match ahead {
            Some(p) => match p.answer.await {
                Ok(r) => r,
                // The task sending it ahead ended without an answer (runtime shutting down).
                Err(_) => Err(ClientError::Shutdown),
            },
            None => self.pull(req).await,
        };
        if let Ok(found) = &result {
            if found.status == PullStatus::Found {
                self.send_ahead(key, epoch, req, found.next_begin_offset);
            }
        }
        result
    }

    /// Drop the pull sent ahead for `group`'s `queue`, if any (the queue is no longer
    /// consumed here).
    pub fn forget_pipelined(&self, group: &str, queue: &MessageQueue) {
        let mut slots = self.slots();
        if let Some(slot) = slots.get_mut(&(group.to_owned(), queue.clone())) {
            slot.epoch += 1;
            slot.ahead = None;
        }
    }

    fn send_ahead(&self, key: (String, MessageQueue), epoch: u64, req: &PullRequest, offset: i64) {
        let mut next = req.clone();
        next.offset = offset;
        next.commit_offset = None;
        let (tx, answer) = oneshot::channel();
        {
            let mut slots = self.slots();
            let slot = slots.entry(key).or_default();
            if slot.epoch != epoch {
                return; // forgotten while this pull waited
            }
            slot.ahead = Some(Prefetched {
                offset,
                max_nums: req.max_nums,
                sub_string: req.subscription.sub_string.clone(),
                answer,
            });
        }
        let inst = self.clone();
        self.runtime().spawn(async move {
            // Nobody may be waiting any more (the slot was discarded): the answer is dropped.
            let _ = tx.send(inst.pull(&next).await);
        });
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<(String, MessageQueue), Slot>> {
        self.inner
            .prefetched
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
