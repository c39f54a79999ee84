//! The consumer calls of `rmq._rmq.ClientInstance` (a second `#[pymethods]` block of the
//! class in `client.rs`): consumer registration, pulls (blocking, async, and into columns
//! through `columns.rs`), offsets, queue locks and CONSUMER_SEND_MSG_BACK, and the
//! `PullResult` they return.

use std::collections::BTreeSet;
use std::time::Duration;

use pyo3::prelude::*;
use rmq_client::consumer::PullRequest;
use rmq_client::{build_subscription, PullResult};
use rmq_protocol::body::{ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel};

use crate::callbacks::{call_reporting, dispatch};
use crate::client::{
    block_on, client_err, from_py_queue, parse_enum, to_py_queue, ClientInstancePy,
};
use crate::columns::{pull_columns, ColumnRange, PulledColumns};
use crate::runtime::runtime;
use crate::stored_message::StoredMessage;

/// What a pull returned.
#[pyclass(module = "rmq._rmq", frozen, get_all, name = "PullResult")]
pub(crate) struct PullResultPy {
    status: &'static str,
    next_begin_offset: i64,
    min_offset: i64,
    max_offset: i64,
    suggest_which_broker_id: i64,
    messages: Vec<Py<StoredMessage>>,
}

impl PullResultPy {
    fn new(py: Python<'_>, r: PullResult) -> PyResult<Self> {
        Ok(Self {
            status: r.status.name(),
            next_begin_offset: r.next_begin_offset,
            min_offset: r.min_offset,
            max_offset: r.max_offset,
            suggest_which_broker_id: r.suggest_which_broker_id,
            messages: r
                .messages
                .into_iter()
                .map(|m| StoredMessage::from_ext(py, m))
                .collect::<PyResult<_>>()?,
        })
    }
}

#[pymethods]
impl PullResultPy {
    fn __repr__(&self) -> String {
        format!(
            "PullResult(status={}, messages={}, next_begin_offset={}, min_offset={}, max_offset={})",
            self.status,
            self.messages.len(),
            self.next_begin_offset,
            self.min_offset,
            self.max_offset
        )
    }
}

#[pymethods]
impl ClientInstancePy {
    /// Announce consumer group `group` in heartbeats, with its subscriptions
    /// `[(topic, expression), ...]`.
    #[pyo3(signature = (group, subscriptions, message_model="CLUSTERING",
        consume_type="CONSUME_PASSIVELY", consume_from_where="CONSUME_FROM_LAST_OFFSET"))]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn register_consumer(
        &self,
        group: &str,
        subscriptions: Vec<(String, String)>,
        message_model: &str,
        consume_type: &str,
        consume_from_where: &str,
    ) -> PyResult<()> {
        let message_model = parse_enum(
            "message_model",
            message_model,
            &[
                ("CLUSTERING", MessageModel::Clustering),
                ("BROADCASTING", MessageModel::Broadcasting),
            ],
        )?;
        let consume_type = parse_enum(
            "consume_type",
            consume_type,
            &[
                ("CONSUME_PASSIVELY", ConsumeType::ConsumePassively),
                ("CONSUME_ACTIVELY", ConsumeType::ConsumeActively),
            ],
        )?;
        let consume_from_where = parse_enum(
            "consume_from_where",
            consume_from_where,
            &[
                (
                    "CONSUME_FROM_LAST_OFFSET",
                    ConsumeFromWhere::ConsumeFromLastOffset,
                ),
                (
                    "CONSUME_FROM_FIRST_OFFSET",
                    ConsumeFromWhere::ConsumeFromFirstOffset,
                ),
                (
                    "CONSUME_FROM_TIMESTAMP",
                    ConsumeFromWhere::ConsumeFromTimestamp,
                ),
            ],
        )?;
        self.inner.register_consumer(ConsumerData {
            group_name: group.to_owned(),
            consume_type,
            message_model,
            consume_from_where,
            subscription_data_set: subscriptions
                .iter()
                .map(|(t, e)| build_subscription(t, e))
                .collect(),
            unit_mode: false,
        });
        Ok(())
    }

    /// Stop announcing `group` and tell the brokers (UNREGISTER_CLIENT).
    fn unregister_consumer(&self, py: Python<'_>, group: &str) {
        let inst = self.inner.clone();
        let g = group.to_owned();
        py.detach(|| runtime().block_on(async move { inst.unregister_consumer(&g).await }));
    }

    /// Heartbeat every broker now; returns how many answered.
    fn send_heartbeat(&self, py: Python<'_>) -> usize {
        let inst = self.inner.clone();
        py.detach(|| runtime().block_on(async move { inst.send_heartbeat().await }))
    }

    /// Pull from `queue` (waits; the GIL is released). `pipelined`: take the answer of the
    /// pull sent ahead for this queue when it asked the same, and send the next one ahead
    /// when this one finds messages (`forget_pipelined` drops it).
    // The keywords are the Python signature; the Rust side takes them as one PullArgs.
    #[pyo3(signature = (group, queue, offset, max_nums, expression="*", sub_version=0,
        commit_offset=None, suspend_ms=0, timeout_ms=3000, broker_id=None, pipelined=false))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of the Python signature"
    )]
    fn pull(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        offset: i64,
        max_nums: i32,
        expression: &str,
        sub_version: i64,
        commit_offset: Option<i64>,
        suspend_ms: u64,
        timeout_ms: u64,
        broker_id: Option<i64>,
        pipelined: bool,
    ) -> PyResult<PullResultPy> {
        let req = PullArgs {
            group,
            offset,
            max_nums,
            expression,
            sub_version,
            commit_offset,
            suspend_ms,
            timeout_ms,
            broker_id,
        }
        .request(queue)?;
        let inst = self.inner.clone();
        let r = block_on(py, async move {
            if pipelined {
                inst.pull_pipelined(&req).await
            } else {
                inst.pull(&req).await
            }
        })?;
        PullResultPy::new(py, r)
    }

    /// Pull `queue` from `start` towards `end` into columns (`PulledColumns`): at most
    /// `max_rows` rows, the GIL released; the first pull asks `batch` messages and the
    /// offsets it covered (what the broker granted) set the windows of the `depth` pulls kept
    /// in flight after it.
    /// Properties named in `skip_properties` are left out of the properties column; only
    /// messages matching the tag `expression` are pulled (filtered on the broker).
    #[pyo3(signature = (group, queue, start, end, max_rows, batch=32, depth=4,
        timeout_ms=10000, skip_properties=Vec::new(), expression="*"))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of the Python signature"
    )]
    fn pull_columns(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        start: i64,
        end: i64,
        max_rows: usize,
        batch: i64,
        depth: usize,
        timeout_ms: u64,
        skip_properties: Vec<String>,
        expression: &str,
    ) -> PyResult<PulledColumns> {
        let req = PullArgs::range(group, start, timeout_ms, expression).request(queue)?;
        let range = ColumnRange {
            end,
            max_rows,
            batch,
            depth,
            skip_properties,
        };
        pull_columns(self.inner.clone(), py, req, range)
    }

    /// Pull without waiting: `callback(result, error)` runs on the callback thread.
    /// `pipelined` as for `pull`.
    #[pyo3(signature = (callback, group, queue, offset, max_nums, expression="*",
        sub_version=0, commit_offset=None, suspend_ms=15000, timeout_ms=30000, broker_id=None,
        pipelined=false))]
    #[expect(
        clippy::too_many_arguments,
        reason = "the keyword arguments of the Python signature"
    )]
    fn pull_async(
        &self,
        callback: Py<PyAny>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        offset: i64,
        max_nums: i32,
        expression: &str,
        sub_version: i64,
        commit_offset: Option<i64>,
        suspend_ms: u64,
        timeout_ms: u64,
        broker_id: Option<i64>,
        pipelined: bool,
    ) -> PyResult<()> {
        let req = PullArgs {
            group,
            offset,
            max_nums,
            expression,
            sub_version,
            commit_offset,
            suspend_ms,
            timeout_ms,
            broker_id,
        }
        .request(queue)?;
        let inst = self.inner.clone();
        runtime().spawn(async move {
            let r = if pipelined {
                inst.pull_pipelined(&req).await
            } else {
                inst.pull(&req).await
            };
            dispatch(Box::new(move |py| {
                let args = match r {
                    Ok(r) => match PullResultPy::new(py, r).and_then(|r| Py::new(py, r)) {
                        Ok(r) => (Some(r.into_any()), None),
                        Err(e) => (None, Some(e.into_value(py).into_any())),
                    },
                    Err(e) => (None, Some(client_err(py, &e).into_value(py).into_any())),
                };
                call_reporting(py, &callback, args);
            }));
        });
        Ok(())
    }

    /// Drop the pull sent ahead for `group`'s `queue` (it is no longer consumed here).
    fn forget_pipelined(&self, group: &str, queue: &Bound<'_, PyAny>) -> PyResult<()> {
        self.inner.forget_pipelined(group, &from_py_queue(queue)?);
        Ok(())
    }

    /// The group's committed offset of `queue` on the broker, or None.
    fn query_consumer_offset(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
    ) -> PyResult<Option<i64>> {
        let (inst, g, q) = (self.inner.clone(), group.to_owned(), from_py_queue(queue)?);
        block_on(py, async move { inst.query_consumer_offset(&g, &q).await })
    }

    /// Commit the group's offset of `queue` on the broker.
    #[pyo3(signature = (group, queue, offset, oneway=true))]
    fn update_consumer_offset(
        &self,
        py: Python<'_>,
        group: &str,
        queue: &Bound<'_, PyAny>,
        offset: i64,
        oneway: bool,
    ) -> PyResult<()> {
        let (inst, g, q) = (self.inner.clone(), group.to_owned(), from_py_queue(queue)?);
        block_on(py, async move {
            inst.update_consumer_offset(&g, &q, offset, oneway).await
        })
    }

    /// One past the queue's last offset.
    fn max_offset(&self, py: Python<'_>, queue: &Bound<'_, PyAny>) -> PyResult<i64> {
        let (inst, q) = (self.inner.clone(), from_py_queue(queue)?);
        block_on(py, async move { inst.max_offset(&q).await })
    }

    /// The queue's first stored offset.
    fn min_offset(&self, py: Python<'_>, queue: &Bound<'_, PyAny>) -> PyResult<i64> {
        let (inst, q) = (self.inner.clone(), from_py_queue(queue)?);
        block_on(py, async move { inst.min_offset(&q).await })
    }

    /// The offset of the first message stored at or after `timestamp_ms`.
    fn search_offset(
        &self,
        py: Python<'_>,
        queue: &Bound<'_, PyAny>,
        timestamp_ms: i64,
    ) -> PyResult<i64> {
        let (inst, q) = (self.inner.clone(), from_py_queue(queue)?);
        block_on(
            py,
            async move { inst.search_offset(&q, timestamp_ms).await },
        )
    }

    /// Client ids of the group's live consumers (from a broker of `topic`).
    fn consumer_id_list(&self, py: Python<'_>, topic: &str, group: &str) -> PyResult<Vec<String>> {
        let (inst, t, g) = (self.inner.clone(), topic.to_owned(), group.to_owned());
        block_on(py, async move { inst.consumer_id_list(&t, &g).await })
    }

    /// Lock `queues` (all on `broker_name`) for this client; returns those now held.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn lock_batch(
        &self,
        py: Python<'_>,
        group: &str,
        broker_name: &str,
        queues: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let mqs = queues
            .iter()
            .map(from_py_queue)
            .collect::<PyResult<BTreeSet<_>>>()?;
        let (inst, g, b) = (self.inner.clone(), group.to_owned(), broker_name.to_owned());
        let locked = block_on(py, async move { inst.lock_batch(&g, &b, mqs).await })?;
        locked.iter().map(|q| to_py_queue(py, q)).collect()
    }

    /// Release this client's locks of `queues` on `broker_name`.
    #[pyo3(signature = (group, broker_name, queues, oneway=false))]
    #[expect(
        clippy::needless_pass_by_value,
        reason = "pyo3 extracts Python arguments as owned values"
    )]
    fn unlock_batch(
        &self,
        py: Python<'_>,
        group: &str,
        broker_name: &str,
        queues: Vec<Bound<'_, PyAny>>,
        oneway: bool,
    ) -> PyResult<()> {
        let mqs = queues
            .iter()
            .map(from_py_queue)
            .collect::<PyResult<BTreeSet<_>>>()?;
        let (inst, g, b) = (self.inner.clone(), group.to_owned(), broker_name.to_owned());
        block_on(
            py,
            async move { inst.unlock_batch(&g, &b, mqs, oneway).await },
        )
    }

    /// Hand `message` (pulled from `broker_name`) back for redelivery through the group's
    /// retry topic (CONSUMER_SEND_MSG_BACK).
    #[pyo3(signature = (group, message, broker_name, delay_level=0, max_reconsume_times=16))]
    fn send_msg_back(
        &self,
        py: Python<'_>,
        group: &str,
        message: &StoredMessage,
        broker_name: &str,
        delay_level: i32,
        max_reconsume_times: i32,
    ) -> PyResult<()> {
        let back = message.send_back(group, broker_name, delay_level, max_reconsume_times);
        let inst = self.inner.clone();
        block_on(py, async move { inst.send_msg_back(&back).await })
    }
}

/// A pull as the Python keywords describe it (`pull`, `pull_async`, `pull_columns`).
struct PullArgs<'a> {
    group: &'a str,
    offset: i64,
    max_nums: i32,
    expression: &'a str,
    sub_version: i64,
    commit_offset: Option<i64>,
    suspend_ms: u64,
    timeout_ms: u64,
    broker_id: Option<i64>,
}

impl<'a> PullArgs<'a> {
    /// The pulls of a column range: the tags of `expression`, no commit, no suspension, from
    /// the broker the last pull of the queue suggested (the master first).
    fn range(group: &'a str, start: i64, timeout_ms: u64, expression: &'a str) -> Self {
        Self {
            group,
            offset: start,
            max_nums: 0,
            expression,
            sub_version: 0,
            commit_offset: None,
            suspend_ms: 0,
            timeout_ms,
            broker_id: None,
        }
    }

    /// The request for `queue` (an `rmq.MessageQueue`).
    fn request(&self, queue: &Bound<'_, PyAny>) -> PyResult<PullRequest> {
        let queue = from_py_queue(queue)?;
        let mut subscription = build_subscription(&queue.topic, self.expression);
        if self.sub_version != 0 {
            subscription.sub_version = self.sub_version;
        }
        Ok(PullRequest {
            group: self.group.to_owned(),
            queue,
            offset: self.offset,
            max_nums: self.max_nums,
            subscription,
            commit_offset: self.commit_offset,
            suspend: Duration::from_millis(self.suspend_ms),
            timeout: Duration::from_millis(self.timeout_ms),
            broker_id: self.broker_id,
        })
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PullResultPy>()?;
    Ok(())
}
