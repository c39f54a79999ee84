//! The bridge from Rust's `log` facade into Python's `logging`: one setting for the process.
//!
//! The Rust crates log through the `log` macros (`log::warn!` and friends); this module
//! installs, when `rmq._rmq` is imported, a logger that hands every record to Python's
//! `logging` (through `pyo3-log`), so levels, format and destination are whatever Python's
//! logging is configured with (`python -m rmq.broker --log-level`, `logging.basicConfig`, an
//! embedding application's handlers).
//!
//! # Logger names
//! A record's target (its module path, `rmq_broker::processor::pull_message`) becomes the
//! Python logger `rmq.broker.processor.pull_message`: the crate prefix `rmq_<crate>` is read as
//! `rmq.<crate>`, so every Rust record sits under the `rmq` logger beside the Python control
//! plane's (`rmq.broker`, `rmq.namesrv`) and one `logging.getLogger("rmq").setLevel(..)`
//! governs both. Targets outside the rmq crates keep their own names.
//!
//! # Levels are cached
//! To keep the GIL out of disabled log calls, each Python logger's effective level is cached
//! the first time a Rust record of that logger is seen. A program that changes levels after
//! that calls `rmq._rmq.reset_logging_cache()` (the command line entry points configure
//! logging before the first record, so they need not). Records below DEBUG (Rust's `trace!`)
//! never reach Python.
//!
//! # Interpreter exit
//! Tokio workers may still log while the interpreter shuts down, when taking the GIL is no
//! longer possible. An `atexit` hook turns the bridge off first; from then on records go to
//! stderr as one line each (`<LEVEL> <logger>: <message>`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

use log::{LevelFilter, Log, Metadata, Record};
use pyo3::prelude::*;
use pyo3_log::{Caching, ResetHandle};

/// Set by the `atexit` hook: Python is going away, log to stderr instead.
static PYTHON_EXITING: AtomicBool = AtomicBool::new(false);

/// The installed bridge's cache handle (`None` when another logger was installed first).
static RESET: OnceLock<Option<ResetHandle>> = OnceLock::new();

/// The Python logger name of a Rust log target, in `::` form (pyo3-log turns `::` into `.`):
/// `rmq_broker::x` → `rmq::broker::x`.
fn python_target(target: &str) -> Option<String> {
    let rest = target.strip_prefix("rmq_")?;
    let (krate, path) = rest.split_once("::").unwrap_or((rest, ""));
    let mut out = String::with_capacity(target.len() + 2);
    out.push_str("rmq::");
    out.push_str(krate);
    if !path.is_empty() {
        out.push_str("::");
        out.push_str(path);
    }
    Some(out)
}

/// `pyo3-log`'s logger behind the target renaming and the exit switch.
struct Bridge(pyo3_log::Logger);

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        match python_target(metadata.target()) {
            Some(t) => self.0.enabled(
                &Metadata::builder()
                    .level(metadata.level())
                    .target(&t)
                    .build(),
            ),
            None => self.0.enabled(metadata),
        }
    }

    fn log(&self, record: &Record<'_>) {
        let renamed = python_target(record.target());
        let target = renamed.as_deref().unwrap_or(record.target());
        if PYTHON_EXITING.load(Ordering::Acquire) {
            eprintln!(
                "{} {}: {}",
                record.level(),
                target.replace("::", "."),
                record.args()
            );
            return;
        }
        match renamed {
            Some(t) => self.0.log(
                &Record::builder()
                    .args(*record.args())
                    .level(record.level())
                    .target(&t)
                    .module_path(record.module_path())
                    .file(record.file())
                    .line(record.line())
                    .build(),
            ),
            None => self.0.log(record),
        }
    }

    fn flush(&self) {}
}

/// Install the bridge (once per process; a logger installed before, by an embedding Rust
/// program, is left in place).
fn install(py: Python<'_>) -> PyResult<()> {
    let mut result = Ok(());
    RESET.get_or_init(|| {
        let logger = match pyo3_log::Logger::new(py, Caching::LoggersAndLevels) {
            Ok(l) => l.filter(LevelFilter::Debug),
            Err(e) => {
                result = Err(e);
                return None;
            }
        };
        let handle = logger.reset_handle();
        if log::set_boxed_logger(Box::new(Bridge(logger))).is_err() {
            return None;
        }
        log::set_max_level(LevelFilter::Debug);
        Some(handle)
    });
    result
}

/// Forget the Python logging levels cached so far; call after changing levels or handlers
/// once Rust code may have logged.
#[pyfunction]
fn reset_logging_cache() {
    if let Some(Some(handle)) = RESET.get() {
        handle.reset();
    }
}

/// The `atexit` hook: stop taking the GIL for log records.
#[pyfunction]
fn _logging_at_exit() {
    PYTHON_EXITING.store(true, Ordering::Release);
}

/// Install the bridge and add `reset_logging_cache` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    install(py)?;
    let at_exit = wrap_pyfunction!(_logging_at_exit, m)?;
    py.import("atexit")?.call_method1("register", (at_exit,))?;
    m.add_function(wrap_pyfunction!(reset_logging_cache, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::python_target;

    #[test]
    fn rmq_crates_map_under_the_rmq_logger() {
        assert_eq!(
            python_target("rmq_broker::processor::pull_message").as_deref(),
            Some("rmq::broker::processor::pull_message")
        );
        assert_eq!(
            python_target("rmq_remoting").as_deref(),
            Some("rmq::remoting")
        );
        assert_eq!(python_target("tokio::runtime"), None);
    }
}
