//! Held pulls (RocketMQ's `PullRequestHoldService`). A pull that finds nothing new and has
//! the suspend flag waits here, keyed by `topic@queueId`, until
//! * the store's message-arriving listener reports a matching message past its offset,
//! * the periodic check (every 5 s, or `shortPollingTimeMills` without long polling) sees
//!   the queue's max offset past it, or
//! * its suspend timeout passes (the waiting task's own tokio timer);
//!
//! and is then processed once more without suspending. Waking is a oneshot send: the
//! processor task that holds the pull awaits the receiver, so nothing here blocks.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{fence, AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmq_protocol::body::{SubscriptionData, EXPRESSION_TYPE_TAG, SUB_ALL};
use tokio::sync::oneshot;

/// A tag subscription as the ConsumeQueue can test it (`ExpressionMessageFilter` for TAG).
#[derive(Debug, Clone, Default)]
pub struct TagFilter {
    /// Everything matches (`*`, or a non-tag expression the broker does not evaluate).
    pub all: bool,
    /// `String.hashCode` of each subscribed tag.
    pub codes: HashSet<i32>,
}

impl TagFilter {
    /// Parse `"TagA || TagB"` (`FilterAPI.buildSubscriptionData`); empty or `*` is all.
    #[must_use]
    pub fn parse(sub_string: &str) -> Self {
        let s = sub_string.trim();
        if s.is_empty() || s == SUB_ALL {
            return Self {
                all: true,
                codes: HashSet::new(),
            };
        }
        let codes: HashSet<i32> = s
            .split("||")
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(rmq_common::java_string_hash)
            .collect();
        Self {
            all: codes.is_empty(),
            codes,
        }
    }

    /// From a heartbeat subscription (its `codeSet`, or the parsed `subString`).
    #[must_use]
    pub fn from_subscription(sub: &SubscriptionData) -> Self {
        if sub.expression_type != EXPRESSION_TYPE_TAG || sub.class_filter_mode {
            return Self {
                all: true,
                codes: HashSet::new(),
            };
        }
        if sub.sub_string.trim() == SUB_ALL || sub.sub_string.trim().is_empty() {
            return Self::parse(SUB_ALL);
        }
        if sub.code_set.is_empty() {
            return Self::parse(&sub.sub_string);
        }
        Self {
            all: false,
            codes: sub.code_set.iter().copied().collect(),
        }
    }

    /// Whether a ConsumeQueue tags code matches (`isMatchedByConsumeQueue`: the code is
    /// compared as Java's `intValue()`).
    #[must_use]
    #[expect(
        clippy::cast_possible_truncation,
        reason = "Java's intValue() keeps the low 32 bits"
    )]
    pub fn matches(&self, tags_code: i64) -> bool {
        self.all || self.codes.contains(&(tags_code as i32))
    }
}

struct Waiter {
    pull_from_offset: i64,
    filter: Arc<TagFilter>,
    tx: oneshot::Sender<()>,
}

/// The held pulls of one broker.
#[derive(Default)]
pub struct PullRequestHoldService {
    held: Mutex<HashMap<(String, i32), Vec<Waiter>>>,
    /// Whether `held` has entries (written under its lock): dispatch asks for every message,
    /// and a lock taken by every putting thread was 1.5 % of the broker's CPU under batches.
    any_held: AtomicBool,
}

impl PullRequestHoldService {
    /// Hold a pull of `(topic, queue_id)` at `offset`; the receiver fires when it should be
    /// processed again.
    pub fn hold(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        filter: Arc<TagFilter>,
    ) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        held.entry((topic.to_owned(), queue_id))
            .or_default()
            .push(Waiter {
                pull_from_offset: offset,
                filter,
                tx,
            });
        self.any_held.store(true, Ordering::SeqCst);
        drop(held);
        // Pairs with the fence in `notify_message_arriving`: either a message dispatched now
        // finds this pull held, or the caller's look at the queue's end after this sees it.
        fence(Ordering::SeqCst);
        rx
    }

    /// A message reached `(topic, queue_id)`; `max_offset` is the queue's next offset and
    /// `tags_code` the message's tags code (`None`: wake regardless of the filter).
    pub fn notify_message_arriving(
        &self,
        topic: &str,
        queue_id: i32,
        max_offset: i64,
        tags_code: Option<i64>,
    ) {
        // Called per dispatched message, after its unit is in the queue (see `hold`).
        fence(Ordering::SeqCst);
        if !self.any_held.load(Ordering::Relaxed) {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (topic.to_owned(), queue_id);
        let Some(list) = held.get_mut(&key) else {
            return;
        };
        let mut keep = Vec::with_capacity(list.len());
        for w in list.drain(..) {
            if w.tx.is_closed() {
                continue;
            }
            let wake = max_offset > w.pull_from_offset
                && tags_code.is_none_or(|code| w.filter.matches(code));
            if wake {
                let _ = w.tx.send(());
            } else {
                keep.push(w);
            }
        }
        if keep.is_empty() {
            held.remove(&key);
            if held.is_empty() {
                self.any_held.store(false, Ordering::SeqCst);
            }
        } else {
            *list = keep;
        }
    }

    /// The queues with held pulls.
    #[must_use]
    pub fn keys(&self) -> Vec<(String, i32)> {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// Number of held pulls.
    #[must_use]
    pub fn len(&self) -> usize {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .map(Vec::len)
            .sum()
    }

    /// Whether nothing is held.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The periodic check: wake what the queues' max offsets now satisfy.
    pub fn check_held(&self, max_offset: impl Fn(&str, i32) -> i64) {
        for (topic, qid) in self.keys() {
            let max = max_offset(&topic, qid);
            self.notify_message_arriving(&topic, qid, max, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_filters() {
        let f = TagFilter::parse("TagA || TagB");
        assert!(f.matches(i64::from(rmq_common::java_string_hash("TagA"))));
        assert!(!f.matches(i64::from(rmq_common::java_string_hash("TagC"))));
        assert!(TagFilter::parse("*").matches(5));
        assert!(TagFilter::parse("").matches(5));
    }

    #[test]
    fn wakes_only_past_offset_and_matching() {
        let s = PullRequestHoldService::default();
        let f = Arc::new(TagFilter::parse("A"));
        let mut rx = s.hold("t", 0, 5, f);
        s.notify_message_arriving("t", 0, 5, None);
        assert!(rx.try_recv().is_err());
        s.notify_message_arriving("t", 0, 6, Some(1));
        assert!(rx.try_recv().is_err());
        s.notify_message_arriving(
            "t",
            0,
            6,
            Some(i64::from(rmq_common::java_string_hash("A"))),
        );
        assert!(rx.try_recv().is_ok());
        assert!(s.is_empty());
        // Emptied, then held again: still woken.
        let mut rx = s.hold("t", 0, 6, Arc::new(TagFilter::parse("*")));
        s.notify_message_arriving("t", 0, 7, Some(1));
        assert!(rx.try_recv().is_ok(), "a pull held after the table emptied");
    }
}
