//! The names and codes Python shares with the Rust crates, exported from where they are
//! defined so the Python package never spells one itself:
//!
//! * system topic names and prefixes (`rmq_common::topic`) as `str` constants of the same
//!   name (`SCHEDULE_TOPIC`, `RETRY_GROUP_TOPIC_PREFIX`, ...);
//! * message property keys (`rmq_common::PropertyKey`) as `PROPERTY_<name>`;
//! * request and response codes (`rmq_protocol::code`) as the `IntEnum`s `RequestCode` and
//!   `ResponseCode`, built here from the Rust tables;
//! * the fastjson dialect reader (`rmq_protocol::json_compat`) and the transaction op record
//!   decoder (`rmq_common::trans_op`);
//! * the nameserver's route bodies ([`routes`]).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

use rmq_common::properties::PropertyKey;

mod routes;

/// Rewrite a body in fastjson's dialect (bare or object map keys, single quotes) as standard
/// JSON text for `json.loads`; `ValueError` says where and why it is neither.
#[pyfunction]
fn fastjson_to_json(text: &str) -> PyResult<String> {
    rmq_protocol::json_compat::to_standard_json(text)
        .map(std::borrow::Cow::into_owned)
        .map_err(PyValueError::new_err)
}

/// The half message queue offset a transaction op record names (a body that is not a number
/// reads as -1, as Java's does); `ValueError` when its tag is not the op record tag.
#[pyfunction]
#[pyo3(signature = (tags, body))]
fn decode_trans_op(tags: Option<&str>, body: &[u8]) -> PyResult<i64> {
    rmq_common::trans_op::decode(tags, body).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// An `enum.IntEnum` named `name` over a Rust code table.
fn int_enum<'py>(
    m: &Bound<'py, PyModule>,
    name: &str,
    members: impl ExactSizeIterator<Item = (&'static str, i32)>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = m.py();
    let members = PyList::new(py, members)?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("module", "rmq._rmq")?;
    py.import("enum")?
        .getattr("IntEnum")?
        .call((name, members), Some(&kwargs))
}

/// Add the names, codes and readers to `rmq._rmq`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for (name, value) in rmq_common::topic::ALL {
        m.add(*name, *value)?;
    }
    for (name, value) in PropertyKey::ALL {
        m.add(format!("PROPERTY_{name}"), *value)?;
    }
    m.add("TRANS_OP_REMOVE_TAG", rmq_common::trans_op::REMOVE_TAG)?;
    let requests = rmq_protocol::RequestCode::ALL
        .iter()
        .map(|(c, n, _)| (*n, c.0));
    m.add("RequestCode", int_enum(m, "RequestCode", requests)?)?;
    let responses = rmq_protocol::ResponseCode::ALL
        .iter()
        .map(|(c, n, _)| (*n, c.0));
    m.add("ResponseCode", int_enum(m, "ResponseCode", responses)?)?;
    m.add_function(wrap_pyfunction!(fastjson_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(decode_trans_op, m)?)?;
    routes::register(m)
}
