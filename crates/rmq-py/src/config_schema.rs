//! The config schema (`rmq_common::config_schema`) for Python: the key tables as `ConfigKey`
//! objects, one value's check and the `messageDelayLevel` and `deleteWhen` parsers. `rmq.config` and
//! `rmq.namesrv.config` read keys, types, defaults and bounds from here and keep only the
//! properties-file reading, the `file:line` prefix and the "did you mean".

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rmq_common::config_schema::{self as schema, ConfigKey, BROKER_KEYS, NAMESRV_KEYS};

/// One configuration key of the schema.
#[pyclass(module = "rmq._rmq", frozen, get_all, name = "ConfigKey")]
pub(crate) struct PyConfigKey {
    /// The key as a config file spells it.
    name: String,
    /// `int`, `bool`, `enum`, `text`, `name`, `path`, `ip`, `host-port-list`, `socket-addr`,
    /// `delete-when` or `delay-levels`.
    kind: String,
    /// The default as text, or None when it is worked out at start-up.
    default: Option<String>,
    /// Smallest and largest integer accepted (integer keys).
    minimum: Option<i64>,
    maximum: Option<i64>,
    /// The values an enumerated key takes.
    choices: Vec<String>,
    /// RocketMQ clamps a value outside this range into it.
    clamp: Option<(i64, i64)>,
    /// `store`, `broker`, `control-plane`, `namesrv` or `unused`.
    owner: String,
    /// UPDATE_BROKER_CONFIG (UPDATE_NAMESRV_CONFIG) may change it while running.
    runtime: bool,
    /// What is allowed, as error messages say it.
    allowed: String,
    /// What the key does.
    doc: String,
}

impl From<&ConfigKey> for PyConfigKey {
    fn from(k: &ConfigKey) -> Self {
        let range = k.int_range();
        Self {
            name: k.name.to_owned(),
            kind: k.kind.as_str().to_owned(),
            default: k.default.map(str::to_owned),
            minimum: range.map(|r| r.0),
            maximum: range.map(|r| r.1),
            choices: k.choices(),
            clamp: k.clamp,
            owner: k.owner.as_str().to_owned(),
            runtime: k.runtime,
            allowed: k.allowed_text(),
            doc: k.doc.to_owned(),
        }
    }
}

fn keys_of(name: &str) -> PyResult<&'static [ConfigKey]> {
    match name {
        "broker" => Ok(BROKER_KEYS),
        "namesrv" => Ok(NAMESRV_KEYS),
        _ => Err(PyValueError::new_err(format!(
            "unknown config table {name:?}; use \"broker\" or \"namesrv\""
        ))),
    }
}

/// Every key of a config file: `table` is `"broker"` (broker.conf) or `"namesrv"`.
#[pyfunction]
#[pyo3(signature = (table="broker"))]
fn config_schema(table: &str) -> PyResult<Vec<PyConfigKey>> {
    Ok(keys_of(table)?.iter().map(PyConfigKey::from).collect())
}

/// Check `value` for `key`: `(canonical text, note)`, the note saying how the value was
/// clamped (else None). Raises ValueError with the schema's message
/// (`key = 'value' is not allowed; use ...`) for a bad value or an unknown key.
#[pyfunction]
#[pyo3(signature = (key, value, table="broker"))]
fn check_config_value(key: &str, value: &str, table: &str) -> PyResult<(String, Option<String>)> {
    let spec = keys_of(table)?
        .iter()
        .find(|k| k.name == key)
        .ok_or_else(|| PyValueError::new_err(format!("{key} is not a {table} config key")))?;
    let checked = spec
        .check(value)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((checked.text, checked.note))
}

/// `messageDelayLevel` as milliseconds per level, level 1 first. Raises ValueError naming the
/// first bad level.
#[pyfunction]
fn parse_delay_levels(text: &str) -> PyResult<Vec<i64>> {
    schema::parse_delay_levels(text).map_err(PyValueError::new_err)
}

/// The hours of the day (0-23, ascending) a `deleteWhen` value names. Raises ValueError naming
/// the item that is not an hour.
#[pyfunction]
fn parse_delete_when(value: &str) -> PyResult<Vec<u8>> {
    schema::parse_delete_when(value).map_err(PyValueError::new_err)
}

/// Add the schema's class and functions to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyConfigKey>()?;
    m.add_function(wrap_pyfunction!(config_schema, m)?)?;
    m.add_function(wrap_pyfunction!(check_config_value, m)?)?;
    m.add_function(wrap_pyfunction!(parse_delay_levels, m)?)?;
    m.add_function(wrap_pyfunction!(parse_delete_when, m)?)?;
    Ok(())
}
