//! The bridge from Rust's `log` facade into Python's `logging`: one setting for the process.
//!
//! The Rust crates log through the `log` macros (`log::warn!` and friends); this module
//! installs, when `rmq._rmq` is imported, a logger that hands every record to Python's
//! `logging` (with `pyo3-log`'s cache of Python's levels), so levels, format and destination
//! are whatever Python's logging is configured with (`python -m rmq.broker --log-level
//! --log-format --log-dir`, set up by `rmq.logsetup`; `logging.basicConfig`; an embedding
//! application's handlers).
//!
//! # Logger names
//! A record's target (its module path, `rmq_broker::processor::pull_message`) becomes the
//! Python logger `rmq.broker.processor.pull_message`: the crate prefix `rmq_<crate>` is read as
//! `rmq.<crate>`, so every Rust record sits under the `rmq` logger beside the Python control
//! plane's (`rmq.broker`, `rmq.namesrv`) and one `logging.getLogger("rmq").setLevel(..)`
//! governs both. Targets outside the rmq crates keep their own names.
//!
//! # Levels
//! `set_log_level(levelno)` (called by `rmq.logsetup` when the process configures logging)
//! sets the `log` crate's global maximum level, so a disabled level costs one integer
//! comparison in the Rust macro and nothing else.
//!
//! # Levels are cached
//! To keep the GIL out of disabled log calls, each Python logger's effective level is cached
//! the first time a Rust record of that logger is seen. A program that changes levels after
//! that calls `rmq._rmq.reset_logging_cache()` (the command line entry points configure
//! logging before the first record, so they need not). Records below DEBUG (Rust's `trace!`)
//! never reach Python.
//!
//! # Delivery
//! A record that passes the cached level is formatted where it is logged and queued, with the
//! time and the name of the thread that logged it (`rmq-io`, `rmq-ha-client`, ...); one
//! thread (`rmq-log`) takes the GIL and hands the queue to Python in order, as
//! `logging.LogRecord`s whose `created`, `msecs` and `threadName` are the Rust side's, so a
//! log file shows when and where a Rust line was logged, not when it was delivered. So no tokio worker
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
use pyo3::types::{PyDict, PyTuple};
use pyo3_log::{Caching, ResetHandle};
use rmq_common::logger_name::python_logger_name as python_target;
use std::time::{SystemTime, UNIX_EPOCH};

/// Records waiting for the delivery thread, at most.
const QUEUE_CAPACITY: usize = 4096;

/// Set by the `atexit` hook: Python is going away, log to stderr instead.
static PYTHON_EXITING: AtomicBool = AtomicBool::new(false);

/// The installed bridge's cache handle (`None` when another logger was installed first).
static RESET: OnceLock<Option<ResetHandle>> = OnceLock::new();

/// A record on its way to Python: everything owned.
struct Queued {
    level: Level,
    /// The Python logger name, in `::` form.
    target: String,
    message: String,
    module_path: Option<String>,
    file: Option<String>,
    line: Option<u32>,
    /// The logging thread's Rust name; None for a thread Rust did not name (a Python thread
    /// calling in), whose Python name is looked up by `native_id` at delivery.
    thread: Option<String>,
    /// The OS thread id (Linux: from `/proc/thread-self`), for unnamed threads.
    native_id: Option<u64>,
    /// When it was logged, in seconds since the Unix epoch.
    created: f64,
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
    levels: pyo3_log::Logger,
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
            thread: std::thread::current().name().map(str::to_owned),
            native_id: NATIVE_ID.with(|id| *id),
            created: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
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

thread_local! {
    /// This thread's OS id (what Python's `threading.get_native_id()` returns), read once per
    /// thread and only for threads Rust did not name.
    static NATIVE_ID: Option<u64> = match std::thread::current().name() {
        Some(_) => None,
        None => std::fs::read_link("/proc/thread-self")
            .ok()
            .and_then(|p| p.file_name()?.to_str()?.parse().ok()),
    };
}

/// The name of the Python thread whose OS id is `native_id`.
fn python_thread_name(py: Python<'_>, native_id: u64) -> PyResult<Option<String>> {
    for thread in py
        .import("threading")?
        .call_method0("enumerate")?
        .try_iter()?
    {
        let thread = thread?;
        if thread.getattr("native_id")?.extract::<Option<u64>>()? == Some(native_id) {
            return Ok(Some(thread.getattr("name")?.extract()?));
        }
    }
    Ok(None)
}

/// Python's level number of a `log` level.
fn python_level(level: Level) -> u8 {
    match level {
        Level::Error => 40,
        Level::Warn => 30,
        Level::Info => 20,
        Level::Debug => 10,
        Level::Trace => 5,
    }
}

/// Hand one record to its Python logger, with the Rust side's time and thread name.
fn handle(py: Python<'_>, logging: &Bound<'_, PyModule>, q: &Queued) -> PyResult<()> {
    let name = q.target.replace("::", ".");
    let logger = logging.call_method1("getLogger", (name.as_str(),))?;
    let level = python_level(q.level);
    if !logger.call_method1("isEnabledFor", (level,))?.is_truthy()? {
        return Ok(());
    }
    let kwargs = PyDict::new(py);
    kwargs.set_item("func", q.module_path.as_deref())?;
    let file = q.file.as_deref().unwrap_or("<rust>");
    let args = PyTuple::empty(py);
    let none = py.None();
    let record = logger.call_method(
        "makeRecord",
        (
            name.as_str(),
            level,
            file,
            q.line.unwrap_or(0),
            q.message.as_str(),
            args,
            none,
        ),
        Some(&kwargs),
    )?;
    let thread = match (&q.thread, q.native_id) {
        (Some(name), _) => Some(name.clone()),
        (None, Some(id)) => python_thread_name(py, id)?.or_else(|| Some(format!("thread-{id}"))),
        (None, None) => None,
    };
    record.setattr("threadName", thread.as_deref().unwrap_or("unnamed"))?;
    record.setattr("created", q.created)?;
    record.setattr("msecs", (q.created.fract() * 1000.0).floor())?;
    logger.call_method1("handle", (record,))?;
    Ok(())
}

/// The `rmq-log` thread: hand queued records to Python's logging, in order.
fn deliver(queue: &Receiver<Queued>) {
    while let Ok(first) = queue.recv() {
        if PYTHON_EXITING.load(Ordering::Acquire) {
            first.write_to_stderr();
            continue;
        }
        Python::attach(|py| {
            let Ok(logging) = py.import("logging") else {
                return first.write_to_stderr();
            };
            // Deliver what has queued meanwhile under the same GIL hold.
            for q in std::iter::once(first).chain(queue.try_iter()) {
                if PYTHON_EXITING.load(Ordering::Acquire) || handle(py, &logging, &q).is_err() {
                    q.write_to_stderr();
                }
            }
        });
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
        let (queue, receiver) = sync_channel(QUEUE_CAPACITY);
        let bridge = Bridge {
            levels: logger,
            queue,
            dropped: AtomicU64::new(0),
        };
        if log::set_boxed_logger(Box::new(bridge)).is_err() {
            return None;
        }
        let spawned = std::thread::Builder::new()
            .name("rmq-log".into())
            .spawn(move || deliver(&receiver));
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

/// Set the most verbose level Rust records are made at (a Python level number: 10 DEBUG,
/// 20 INFO, 30 WARNING, 40 ERROR, above that none), and forget the cached Python levels.
#[pyfunction]
fn set_log_level(levelno: i64) {
    let filter = match levelno {
        i64::MIN..=10 => LevelFilter::Debug,
        11..=20 => LevelFilter::Info,
        21..=30 => LevelFilter::Warn,
        31..=40 => LevelFilter::Error,
        _ => LevelFilter::Off,
    };
    log::set_max_level(filter);
    reset_logging_cache();
}

/// The `atexit` hook: stop taking the GIL for log records.
#[pyfunction]
fn _logging_at_exit() {
    PYTHON_EXITING.store(true, Ordering::Release);
}

/// Install the bridge and add `reset_logging_cache` and `set_log_level` to the module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    install(py)?;
    let at_exit = wrap_pyfunction!(_logging_at_exit, m)?;
    py.import("atexit")?.call_method1("register", (at_exit,))?;
    m.add_function(wrap_pyfunction!(reset_logging_cache, m)?)?;
    m.add_function(wrap_pyfunction!(set_log_level, m)?)?;
    Ok(())
}
