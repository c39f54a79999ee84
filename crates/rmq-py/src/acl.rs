//! The nameserver's side of security for Python: the ACL check `RemotingServer(acl_enable=True)`
//! puts in front of the Python handler (`rmq_acl`, nameserver rules), and
//! `validate_topic_name`, the broker's topic validator (RocketMQ's `TopicValidator`), which the
//! nameserver applies to every REGISTER_BROKER's topics whatever the ACL setting.

use std::path::Path;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rmq_remoting::RequestHandler;

use crate::errors::raise;

/// `inner` behind the ACL check of the nameserver's rules, with the file `explicit` or
/// `$ROCKETMQ_HOME/conf/plain_acl.yml`; a missing or bad file raises `rmq.errors.ConfigError`.
pub(crate) fn namesrv_acl(
    py: Python<'_>,
    inner: Arc<dyn RequestHandler>,
    explicit: Option<&Path>,
) -> PyResult<Arc<dyn RequestHandler>> {
    let file = rmq_acl::handler::open_enabled(explicit, "namesrv.conf")
        .map_err(|e| raise(py, "ConfigError", e))?;
    Ok(Arc::new(rmq_acl::AclHandler::new(
        inner,
        file,
        rmq_acl::Policy::Namesrv,
    )))
}

/// Raise `ValueError` with RocketMQ's reason when `topic` is not a legal topic name.
#[pyfunction]
fn validate_topic_name(topic: &str) -> PyResult<()> {
    rmq_broker::topic_config::validate_topic(topic).map_err(PyValueError::new_err)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(validate_topic_name, m)?)
}
