//! The retention calls of `rmq._rmq.MessageStore` (`rmq.scheduling.retention` decides when to
//! make them): one deletion pass reported file by file (`CommitLogCleanReport`), the retention
//! floor, and the delay scheduler's progress, which the floor keeps parked messages by.

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::prelude::*;

use rmq_store::{CleanReport, DeleteReason, RetentionHold};

use crate::store::PyMessageStore;

/// What one CommitLog deletion pass did.
#[pyclass(module = "rmq._rmq", frozen, get_all)]
struct CommitLogCleanReport {
    /// The files deleted, oldest first: `(file name, from offset, to offset, reason)` with
    /// reason `"expired"` (older than `fileReservedTime`) or `"forced"` (unexpired, the disk
    /// over `diskSpaceCleanForciblyRatio`).
    deleted: Vec<(String, i64, i64, &'static str)>,
    /// Who kept the next file the pass would have deleted, `(CommitLog offset, holder,
    /// detail)`: a subscription group's unconsumed messages (`subscription group G on T/3`,
    /// `at queue offset 17 of 40`), pending timers, delay-level messages, or undispatched
    /// records. `None` when nothing held the pass back.
    held: Option<(i64, String, String)>,
}

#[pymethods]
impl CommitLogCleanReport {
    fn __repr__(&self) -> String {
        format!(
            "CommitLogCleanReport(deleted={}, held={:?})",
            self.deleted.len(),
            self.held
        )
    }
}

fn hold(h: RetentionHold) -> (i64, String, String) {
    (h.offset, h.holder, h.detail)
}

impl From<CleanReport> for CommitLogCleanReport {
    fn from(r: CleanReport) -> Self {
        Self {
            deleted: r
                .deleted
                .into_iter()
                .map(|(f, why)| {
                    let name = f
                        .path
                        .file_name()
                        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                    let reason = match why {
                        DeleteReason::Expired => "expired",
                        DeleteReason::Forced => "forced",
                    };
                    (name, f.from, f.to, reason)
                })
                .collect(),
            held: r.held.map(hold),
        }
    }
}

#[pymethods]
impl PyMessageStore {
    /// One deletion pass: expired CommitLog files, unexpired ones too when `force`, never past
    /// the retention floor (what groups, timers and delay levels still need; with
    /// `cleanUnconsumedFileForciblyEnable` forced deletion ignores it, as RocketMQ).
    #[pyo3(signature = (force=false))]
    fn clean_commit_log(&self, py: Python<'_>, force: bool) -> CommitLogCleanReport {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.clean_commit_log(force)).into()
    }

    /// The lowest CommitLog offset still needed, by whom and where it stands; `None` when
    /// nothing holds any.
    fn retention_floor(&self, py: Python<'_>) -> Option<(i64, String, String)> {
        let store = Arc::clone(&self.inner);
        py.detach(|| store.retention_floor()).map(hold)
    }

    /// The delay scheduler's progress (level → next offset to deliver, `delayOffset.json`'s
    /// table): parked messages from there on are kept by retention.
    fn set_delay_offsets(&self, offsets: HashMap<i32, i64>) {
        let table: Vec<(i32, i64)> = offsets.into_iter().collect();
        self.inner.set_delay_offsets(&table);
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CommitLogCleanReport>()?;
    Ok(())
}
