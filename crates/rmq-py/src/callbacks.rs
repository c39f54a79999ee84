//! The `rmq-callbacks` thread: async client completions and broker pushes are queued here
//! from the I/O runtime and run on one Python thread that takes the GIL, so the runtime's
//! workers never wait for Python and never attach to it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock, PoisonError};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

/// Work for the callback thread, run there with the GIL held.
pub(crate) type Callback = Box<dyn FnOnce(Python<'_>) + Send>;

/// Set at interpreter exit: from then on callbacks are dropped, never run.
static CALLBACKS_STOPPED: AtomicBool = AtomicBool::new(false);

/// `None` tells the callback thread to return.
type Queued = Option<Callback>;

struct CallbackQueue {
    tx: Mutex<mpsc::Sender<Queued>>,
    rx: Mutex<Option<mpsc::Receiver<Queued>>>,
    thread: PyOnceLock<Py<PyAny>>,
}

fn callback_queue() -> &'static CallbackQueue {
    static QUEUE: OnceLock<CallbackQueue> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        CallbackQueue {
            tx: Mutex::new(tx),
            rx: Mutex::new(Some(rx)),
            thread: PyOnceLock::new(),
        }
    })
}

/// Queue work for the callback thread.
pub(crate) fn dispatch(cb: Callback) {
    if CALLBACKS_STOPPED.load(Ordering::Acquire) {
        std::mem::forget(cb); // its Python references cannot be released without the GIL
        return;
    }
    let tx = callback_queue()
        .tx
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let _ = tx.send(Some(cb));
}

/// Run client callbacks until the interpreter exits: the body of the `rmq-callbacks` thread.
/// It is a Python thread (started by [`ensure_callback_thread`]), so callbacks keep one
/// thread state (`threading.local` works in them) and nothing attaches a foreign thread to
/// a finalizing interpreter.
#[pyfunction]
pub(crate) fn _run_callbacks(py: Python<'_>) {
    let rx = callback_queue()
        .rx
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let Some(mut rx) = rx else { return };
    loop {
        // The receiver moves into the GIL-free section and back (it is not `Sync`).
        let (back, next) = py.detach(move || {
            let next = rx.recv();
            (rx, next)
        });
        rx = back;
        let Ok(Some(cb)) = next else { return };
        if CALLBACKS_STOPPED.load(Ordering::Acquire) {
            std::mem::forget(cb);
        } else {
            cb(py);
        }
    }
}

/// Start the `rmq-callbacks` daemon thread once per process, and have it stopped at
/// interpreter exit (a daemon thread must not be inside Rust when the interpreter ends).
pub(crate) fn ensure_callback_thread(py: Python<'_>) -> PyResult<()> {
    let queue = callback_queue();
    queue.thread.get_or_try_init(py, || {
        let module = py.import("rmq._rmq")?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("target", module.getattr("_run_callbacks")?)?;
        kwargs.set_item("name", "rmq-callbacks")?;
        kwargs.set_item("daemon", true)?;
        let thread = py
            .import("threading")?
            .getattr("Thread")?
            .call((), Some(&kwargs))?;
        thread.call_method0("start")?;
        py.import("atexit")?
            .getattr("register")?
            .call1((module.getattr("_stop_callbacks")?,))?;
        Ok::<_, PyErr>(thread.unbind())
    })?;
    Ok(())
}

/// Stop running client callbacks and end the callback thread (registered with `atexit`).
#[pyfunction]
pub(crate) fn _stop_callbacks(py: Python<'_>) -> PyResult<()> {
    if CALLBACKS_STOPPED.swap(true, Ordering::AcqRel) {
        return Ok(());
    }
    let queue = callback_queue();
    let _ = queue
        .tx
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .send(None);
    if let Some(thread) = queue.thread.get(py) {
        thread.bind(py).call_method1("join", (5.0,))?;
    }
    Ok(())
}

/// Call a Python callback, reporting (not raising) what it raises, as threads do.
pub(crate) fn call_reporting<'py>(
    py: Python<'py>,
    f: &Py<PyAny>,
    args: impl pyo3::call::PyCallArgs<'py>,
) {
    if let Err(e) = f.call1(py, args) {
        e.write_unraisable(py, Some(f.bind(py)));
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_stop_callbacks, m)?)?;
    m.add_function(wrap_pyfunction!(_run_callbacks, m)?)?;
    Ok(())
}
