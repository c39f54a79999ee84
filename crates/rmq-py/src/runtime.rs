//! The process's tokio runtime, and the one rule for Rust threads that must run Python code.
//!
//! The runtime's workers outlive the interpreter (the runtime is a static, never shut down),
//! so a worker that attaches to Python after `Py_Finalize` panics ("The Python interpreter is
//! not initialized"), and one that attaches while the interpreter finalizes is ended by
//! CPython in the middle of Rust frames. Workers therefore hold only `Arc`'d Rust state and
//! `Py` references made before spawning, never attach to clone them, and run Python code
//! only through [`attach_if_alive`]: at interpreter exit (an `atexit` hook installed by
//! [`register`]) new attachments are refused and the ones in flight are waited for, so no
//! Rust thread is attached when finalization begins.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyCFunction;

/// The process's tokio runtime for transport work, with [`io_threads`] workers.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(io_threads())
            .thread_name("rmq-io")
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot start the I/O runtime: {e}"))
    })
}

/// The variable that sets the number of `rmq-io` workers.
const IO_THREADS_VAR: &str = "RMQ_IO_THREADS";

/// Most `rmq-io` workers [`IO_THREADS_VAR`] may ask for.
const MAX_IO_THREADS: usize = 256;

/// How many `rmq-io` workers the runtime gets: [`IO_THREADS_VAR`] when set, else half the
/// CPUs this process may use, at least one. A broker's store work runs on threads of its own
/// (dispatch, flush, group commit), so the workers get the other half. On 2 vCPUs one worker
/// cost the broker 4–34 % less CPU per message than two in the side-by-side bench's loads
/// (4 096-message batches alike), at equal or better throughput: a request then runs where
/// its connection was read, and no idle worker is woken to steal it (benches/RESULTS.md,
/// issue 18, twelfth round).
fn io_threads() -> usize {
    let cpus = std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get);
    let default = (cpus / 2).max(1);
    match std::env::var(IO_THREADS_VAR) {
        Err(std::env::VarError::NotPresent) => default,
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_IO_THREADS).contains(&n) => n,
            _ => {
                log::warn!(
                    "{IO_THREADS_VAR}={v:?} is not a number of threads from 1 to \
                     {MAX_IO_THREADS}; using {default} (half of this process's {cpus} CPUs)"
                );
                default
            }
        },
        Err(std::env::VarError::NotUnicode(_)) => {
            log::warn!("{IO_THREADS_VAR} is not valid UTF-8; using {default} I/O threads");
            default
        }
    }
}

/// Set by the `atexit` hook: from then on no Rust thread attaches to the interpreter.
static EXITING: AtomicBool = AtomicBool::new(false);

/// Rust threads inside (or about to enter) [`attach_if_alive`].
static ATTACHED: AtomicUsize = AtomicUsize::new(0);

/// How long interpreter exit waits for Python code running on Rust threads to return.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Run `f` attached to the interpreter, from a thread Rust started (a runtime worker or a
/// blocking-pool thread); `None`, without running `f`, once the interpreter is exiting or
/// gone.
pub(crate) fn attach_if_alive<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> Option<R> {
    // Counted before the flag is read: the exit hook sets the flag, then waits for the count
    // to drop to zero, so a thread that saw the flag clear is always waited for.
    ATTACHED.fetch_add(1, Ordering::SeqCst);
    let out = if EXITING.load(Ordering::SeqCst) {
        None
    } else {
        Python::try_attach(f)
    };
    ATTACHED.fetch_sub(1, Ordering::SeqCst);
    out
}

/// The `atexit` hook: refuse new attachments, then let the ones in flight finish (with the
/// GIL released, so they can take it), for at most [`EXIT_WAIT`].
fn on_interpreter_exit(py: Python<'_>) {
    EXITING.store(true, Ordering::SeqCst);
    py.detach(|| {
        let start = Instant::now();
        while ATTACHED.load(Ordering::SeqCst) > 0 && start.elapsed() < EXIT_WAIT {
            std::thread::sleep(Duration::from_millis(1));
        }
    });
}

/// Install the exit hook (nothing is added to the module).
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let hook = PyCFunction::new_closure(py, None, None, |args, _kwargs| {
        on_interpreter_exit(args.py());
    })?;
    py.import("atexit")?.getattr("register")?.call1((hook,))?;
    Ok(())
}
