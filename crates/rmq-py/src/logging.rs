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
//! # Delivery
//! A record that passes the cached level is formatted where it is logged and queued; one
//! thread (`rmq-log`) takes the GIL and hands the queue to Python in order. So no tokio worker
//! ever waits for the GIL to log: a worker that logs while holding a lock cannot deadlock
//! with a Python thread that holds the GIL and wants that lock. The queue holds
//! [`QUEUE_CAPACITY`] records; past that, records are dropped (and counted, in the next
//! record delivered) rather than stalling the logging thread.
//!
//! # Interpreter exit
//! Records may still be logged while the interpreter shuts down, when taking the GIL is no
//! longer possible. An `atexit` hook turns delivery to Python off first; from then on records
//! go to stderr as one line each (`<LEVEL> <logger>: <message>`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::OnceLock;

use log::{Level, LevelFilter, Log, Metadata, Record};
use pyo3::prelude::*;
use pyo3_log::{Caching, ResetHandle};

/// Records waiting for the delivery thread, at most.
const QUEUE_CAPACITY: usize = 4096;

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

/// A record on its way to Python: everything owned.
struct Queued {
    level: Level,
    /// The Python logger name, in `::` form.
    target: String,
    message: String,
    module_path: Option<String>,
    file: Option<String>,
    line: Option<u32>,
}

impl Queued {
    fn write_to_stderr(&self) {
        eprintln!(
            "{} {}: {}",
            self.level,
            self.target.replace("::", "."),
            self.message
        );
    }
}

/// The `log` side: checks the cached level and queues.
struct Bridge {
    /// pyo3-log's logger, for its level cache (`enabled` never takes the GIL).
    levels: std::sync::Arc<pyo3_log::Logger>,
    queue: SyncSender<Queued>,
    dropped: AtomicU64,
}

impl Log for Bridge {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        match python_target(metadata.target()) {
            Some(t) => self.levels.enabled(
                &Metadata::builder()
                    .level(metadata.level())
                    .target(&t)
                    .build(),
            ),
            None => self.levels.enabled(metadata),
        }
    }

    fn log(&self, record: &Record<'_>) {
        let target = python_target(record.target()).unwrap_or_else(|| record.target().to_owned());
        let probe = Metadata::builder()
            .level(record.level())
            .target(&target)
            .build();
        if !self.levels.enabled(&probe) {
            return;
        }
        let mut message = record.args().to_string();
        let dropped = self.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let _ = write!(
                message,
                " ({dropped} earlier records were dropped: the log queue was full)"
            );
        }
        let queued = Queued {
            level: record.level(),
            target,
            message,
            module_path: record.module_path().map(str::to_owned),
            file: record.file().map(str::to_owned),
            line: record.line(),
        };
        if PYTHON_EXITING.load(Ordering::Acquire) {
            queued.write_to_stderr();
            return;
        }
        match self.queue.try_send(queued) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.dropped.fetch_add(dropped + 1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(q)) => q.write_to_stderr(),
        }
    }

    fn flush(&self) {}
}

/// The `rmq-log` thread: hand queued records to Python's logging, in order.
fn deliver(levels: &pyo3_log::Logger, queue: &Receiver<Queued>) {
    while let Ok(q) = queue.recv() {
        if PYTHON_EXITING.load(Ordering::Acquire) {
            q.write_to_stderr();
            continue;
        }
        levels.log(
            &Record::builder()
                .args(format_args!("{}", q.message))
                .level(q.level)
                .target(&q.target)
                .module_path(q.module_path.as_deref())
                .file(q.file.as_deref())
                .line(q.line)
                .build(),
        );
    }
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
        let levels = std::sync::Arc::new(logger);
        let (queue, receiver) = sync_channel(QUEUE_CAPACITY);
        let bridge = Bridge {
            levels: std::sync::Arc::clone(&levels),
            queue,
            dropped: AtomicU64::new(0),
        };
        if log::set_boxed_logger(Box::new(bridge)).is_err() {
            return None;
        }
        let spawned = std::thread::Builder::new()
            .name("rmq-log".into())
            .spawn(move || deliver(&levels, &receiver));
        if let Err(e) = spawned {
            // Without the thread, records go to stderr (the queue reports disconnected).
            eprintln!("rmq: cannot start the log delivery thread ({e}); logging to stderr");
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
