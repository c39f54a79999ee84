//! The answers of a Python push consumer to the admin calls a broker relays: the reply slot
//! Python answers through (`BrokerCallReply`, callable once from any thread, so that a
//! listener run for CONSUME_MESSAGE_DIRECTLY need not hold the callback thread), and the
//! bodies:
//! `ClientInstance.consumer_running_info` (GET_CONSUMER_RUNNING_INFO: the group's
//! subscriptions as this client registered them, the queues it holds, its settings) and
//! `consume_message_directly_result` (CONSUME_MESSAGE_DIRECTLY), both written by the types
//! of `rmq_protocol::body::running_info`, the one place their JSON is spelled.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rmq_client::CallAnswer;
use rmq_protocol::body::{
    CmResult, ConsumeMessageDirectlyResult, ConsumeStatus, ConsumeType, ConsumerRunningInfo,
    ProcessQueueInfo, PROP_CLIENT_VERSION, PROP_CONSUMER_START_TIMESTAMP, PROP_CONSUME_ORDERLY,
    PROP_CONSUME_TYPE, PROP_NAMESERVER_ADDR, PROP_THREADPOOL_CORE_SIZE,
};
use rmq_protocol::{RemotingJson, ResponseCode};
use tokio::sync::oneshot;

use crate::client::{from_py_queue, ClientInstancePy};

/// One held queue, as `PushConsumer.process_queue_states` gives it: the queue, the offset
/// to commit, the lowest and highest cached offset, the cached count and bytes, the lock
/// state and time (ms), dropped, last pull and last consume (ms).
type QueueState<'py> = (
    Bound<'py, PyAny>,
    i64,
    i64,
    i64,
    i32,
    i64,
    bool,
    i64,
    bool,
    i64,
    i64,
);

/// Where the answer to one broker-relayed call goes: `reply(code, remark=None, body=None)`
/// answers it (True), a later call does nothing (False). Dropped unanswered, the broker is
/// told the client ended without an answer.
#[pyclass(module = "rmq._rmq", frozen, name = "BrokerCallReply")]
pub(crate) struct BrokerCallReply {
    tx: Mutex<Option<oneshot::Sender<CallAnswer>>>,
}

impl BrokerCallReply {
    pub(crate) fn new(tx: oneshot::Sender<CallAnswer>) -> Self {
        Self {
            tx: Mutex::new(Some(tx)),
        }
    }

    fn answer(&self, answer: CallAnswer) -> bool {
        let tx = self
            .tx
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        tx.is_some_and(|tx| tx.send(answer).is_ok())
    }

    /// Answer SYSTEM_ERROR with `remark`, unless already answered.
    pub(crate) fn answer_error(&self, remark: String) -> bool {
        self.answer(CallAnswer {
            code: ResponseCode::SYSTEM_ERROR.0,
            remark: Some(remark),
            body: None,
        })
    }
}

#[pymethods]
impl BrokerCallReply {
    #[pyo3(signature = (code, remark=None, body=None))]
    fn __call__(&self, code: i32, remark: Option<String>, body: Option<Vec<u8>>) -> bool {
        self.answer(CallAnswer {
            code,
            remark,
            body: body.map(bytes::Bytes::from),
        })
    }
}

fn unencodable(e: &rmq_protocol::ProtocolError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

#[pymethods]
impl ClientInstancePy {
    /// The `ConsumerRunningInfo` body of consumer group `group` of this client: `properties`
    /// (its settings) plus RocketMQ's `PROP_*` keys from the other arguments, the
    /// subscriptions it registered, `queues` (see `QueueState`), and per subscribed topic the
    /// messages the listener failed (`failed`). `ValueError` when the group is not registered.
    #[pyo3(signature = (group, properties, queues, failed, *, namesrv_addr, orderly,
        thread_pool_core_size, start_timestamp_ms, client_version, jstack=None))]
    #[expect(clippy::too_many_arguments, reason = "keyword arguments from Python")]
    fn consumer_running_info<'py>(
        &self,
        py: Python<'py>,
        group: &str,
        properties: BTreeMap<String, String>,
        queues: Vec<QueueState<'py>>,
        mut failed: BTreeMap<String, i64>,
        namesrv_addr: String,
        orderly: bool,
        thread_pool_core_size: i64,
        start_timestamp_ms: i64,
        client_version: String,
        jstack: Option<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.inner.consumer_data(group).ok_or_else(|| {
            PyValueError::new_err(format!("consumer group {group} is not registered here"))
        })?;
        let consume_type = match data.consume_type {
            ConsumeType::ConsumeActively => "CONSUME_ACTIVELY",
            ConsumeType::ConsumePassively => "CONSUME_PASSIVELY",
        };
        let mut info = ConsumerRunningInfo {
            jstack,
            properties,
            ..ConsumerRunningInfo::default()
        };
        for (k, v) in [
            (PROP_NAMESERVER_ADDR, namesrv_addr),
            (PROP_CONSUME_TYPE, consume_type.to_owned()),
            (PROP_CONSUME_ORDERLY, orderly.to_string()),
            (PROP_THREADPOOL_CORE_SIZE, thread_pool_core_size.to_string()),
            (PROP_CLIENT_VERSION, client_version),
            (
                PROP_CONSUMER_START_TIMESTAMP,
                start_timestamp_ms.to_string(),
            ),
        ] {
            info.properties.insert(k.to_owned(), v);
        }
        let mut subs = data.subscription_data_set;
        subs.sort_by(|a, b| (&a.topic, &a.sub_string).cmp(&(&b.topic, &b.sub_string)));
        for s in &subs {
            let status = ConsumeStatus {
                consume_failed_msgs: failed.remove(&s.topic).unwrap_or(0),
                ..ConsumeStatus::default()
            };
            info.status_table.insert(s.topic.clone(), status);
        }
        info.subscription_set = subs;
        for q in queues {
            let (mq, commit, min, max, count, bytes, locked, lock_ms, dropped, pull, consume) = q;
            let pq = ProcessQueueInfo {
                cached_msg_count: count,
                cached_msg_max_offset: max,
                cached_msg_min_offset: min,
                cached_msg_size_in_mib: i32::try_from(bytes / (1024 * 1024)).unwrap_or(i32::MAX),
                commit_offset: commit,
                droped: dropped,
                last_consume_timestamp: consume,
                last_lock_timestamp: lock_ms,
                last_pull_timestamp: pull,
                locked,
                ..ProcessQueueInfo::default()
            };
            info.mq_table.0.insert(from_py_queue(&mq)?, pq);
        }
        let body = info.to_json_bytes().map_err(|e| unencodable(&e))?;
        Ok(PyBytes::new(py, &body))
    }
}

/// The `ConsumeMessageDirectlyResult` body: `result` is a `CMResult` name (`CR_SUCCESS`,
/// `CR_LATER`, `CR_THROW_EXCEPTION`, ...); `ValueError` for another name.
#[pyfunction]
#[pyo3(signature = (order, result, spent_time_ms, remark=None))]
fn consume_message_directly_result<'py>(
    py: Python<'py>,
    order: bool,
    result: &str,
    spent_time_ms: i64,
    remark: Option<String>,
) -> PyResult<Bound<'py, PyBytes>> {
    let consume_result = CmResult::from_name(result)
        .ok_or_else(|| PyValueError::new_err(format!("{result:?} is not a CMResult name")))?;
    let body = ConsumeMessageDirectlyResult {
        auto_commit: true,
        consume_result,
        order,
        remark,
        spent_time_mills: spent_time_ms,
    }
    .to_json_bytes()
    .map_err(|e| unencodable(&e))?;
    Ok(PyBytes::new(py, &body))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BrokerCallReply>()?;
    m.add_function(wrap_pyfunction!(consume_message_directly_result, m)?)?;
    Ok(())
}
