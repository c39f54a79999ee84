//! The nameserver's route bodies, built from `rmq_protocol::body::route`'s types: the Python
//! nameserver keeps its tables and passes plain values here, so the field names, their order
//! and the JSON form of GET_ROUTEINFO_BY_TOPIC, GET_BROKER_CLUSTER_INFO and the topic lists
//! are those of the Rust types (which the Rust client parses too), not a second copy.

use std::collections::{BTreeMap, BTreeSet};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use rmq_protocol::body::{BrokerData, ClusterInfo, QueueData, TopicList, TopicRouteData};
use rmq_protocol::RemotingJson;

/// A broker name's entry as the nameserver keeps it: (cluster, broker name, address by id).
type BrokerEntry = (String, String, BTreeMap<i64, String>);
/// A topic's queues on one broker: (broker name, perm, read, write, topic sys flag).
type QueueEntry = (String, i32, i32, i32, i32);

fn broker_data((cluster, broker_name, broker_addrs): BrokerEntry) -> BrokerData {
    BrokerData {
        broker_addrs,
        broker_name,
        cluster,
    }
}

fn json_text(body: &impl RemotingJson) -> PyResult<String> {
    let bytes = body
        .to_json_bytes()
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    String::from_utf8(bytes.to_vec()).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// `TopicRouteData` JSON of a topic's brokers and queues (GET_ROUTEINFO_BY_TOPIC).
#[pyfunction]
#[pyo3(signature = (broker_datas, queue_datas, order_topic_conf=None))]
fn topic_route_data_json(
    broker_datas: Vec<BrokerEntry>,
    queue_datas: Vec<QueueEntry>,
    order_topic_conf: Option<String>,
) -> PyResult<String> {
    let queue_datas = queue_datas
        .into_iter()
        .map(|(broker_name, perm, read, write, sys_flag)| QueueData {
            broker_name,
            perm,
            read_queue_nums: read,
            topic_sys_flag: sys_flag,
            write_queue_nums: write,
        })
        .collect();
    json_text(&TopicRouteData {
        broker_datas: broker_datas.into_iter().map(broker_data).collect(),
        filter_server_table: BTreeMap::new(),
        order_topic_conf,
        queue_datas,
    })
}

/// `ClusterInfo` JSON (GET_BROKER_CLUSTER_INFO): every broker name, broker names by cluster.
#[pyfunction]
fn cluster_info_json(
    brokers: Vec<BrokerEntry>,
    clusters: BTreeMap<String, BTreeSet<String>>,
) -> PyResult<String> {
    let broker_addr_table = brokers
        .into_iter()
        .map(|b| (b.1.clone(), broker_data(b)))
        .collect();
    json_text(&ClusterInfo {
        broker_addr_table,
        cluster_addr_table: clusters,
    })
}

/// `TopicList` JSON, with the address of the broker it names when there is one.
#[pyfunction]
#[pyo3(signature = (topics, broker_addr=None))]
fn topic_list_json(topics: BTreeSet<String>, broker_addr: Option<String>) -> PyResult<String> {
    json_text(&TopicList {
        broker_addr,
        topic_list: topics,
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(topic_route_data_json, m)?)?;
    m.add_function(wrap_pyfunction!(cluster_info_json, m)?)?;
    m.add_function(wrap_pyfunction!(topic_list_json, m)?)?;
    Ok(())
}
