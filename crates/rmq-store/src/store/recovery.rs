//! Load-time recovery (RocketMQ's `recover`), run by [`MessageStore::open`] before the store
//! is shared: find where valid CommitLog records end (from the last three files after a
//! clean shutdown, from the checkpoint's file after a crash), skipping damaged ranges that
//! valid records follow ([`crate::commit_log_scan`]), cut the torn tail there (later files
//! hold nothing valid by then), cut ConsumeQueue units beyond it, re-dispatch what the
//! ConsumeQueues and the index miss (dispatch jumps over the damaged ranges), and rebuild
//! the table of next queue offsets.

use std::sync::Arc;

use rmq_common::fx::FxHashMap;

use super::MessageStore;
use crate::commit_log_scan::scan_commit_log;
use crate::error::{Result, StoreError};
use crate::format::{scan_record, Scan};
use crate::mapped_file::MappedFile;

impl MessageStore {
    /// Recover the CommitLog, ConsumeQueues and index; see the module doc.
    pub(super) fn recover(&self) -> Result<()> {
        let mut max_phy_of_cq = -1;
        for cq in self.consume_queues.all() {
            max_phy_of_cq = max_phy_of_cq.max(cq.recover()?);
        }
        let queue = self.commit_log.queue();
        let files = queue.files();
        let process = if files.is_empty() {
            0
        } else {
            let start = if self.last_exit_ok {
                files.len().saturating_sub(3)
            } else {
                self.abnormal_recovery_start(&files)
            };
            let scan = scan_commit_log(&files, start, self.config.check_crc_on_recover);
            self.commit_log.damaged().set(scan.damaged);
            scan.end
        };
        if !files.is_empty() && !self.last_exit_ok {
            log::warn!(
                "{} was not shut down cleanly; recovered the CommitLog up to offset {process}",
                self.root.display()
            );
        }
        queue.set_flushed_where(process);
        queue.set_committed_where(process);
        queue.truncate_dirty_files(process)?;
        if files.is_empty() {
            // No CommitLog: ConsumeQueues point at nothing.
            self.consume_queues.destroy_all()?;
        } else if max_phy_of_cq >= process {
            for cq in self.consume_queues.all() {
                cq.truncate_dirty_logic_files(process)?;
            }
        }
        // Re-dispatch from the smallest point that the ConsumeQueues or the index cover.
        let cl_min = self.commit_log.min_offset();
        let mut reput = self
            .consume_queues
            .all()
            .iter()
            .map(|cq| cq.max_physic_offset())
            .max()
            .unwrap_or(-1)
            .max(cl_min);
        if self.config.message_index_enable {
            reput = reput.min(self.index.end_phy_offset().max(cl_min));
        }
        self.reput.set_reput_from_offset(reput.min(process));
        let targets = self.dispatch_targets();
        while self.reput.do_reput(&targets) {}
        if self.dispatch_behind_bytes() > 0 {
            return Err(StoreError::ServiceNotAvailable(format!(
                "recovery could not rebuild the ConsumeQueues past CommitLog offset {} (see the \
                 error above, often a full disk); free space and start again",
                self.reput.reput_from_offset()
            )));
        }
        self.verify_consume_queues_and_index()?;
        for cq in self.consume_queues.all() {
            cq.correct_min_offset(cl_min);
        }
        self.rebuild_queue_offset_table();
        Ok(())
    }

    /// The CommitLog's next queue offset per topic and queue, from the ConsumeQueues (after
    /// recovery, and after a truncation cut units off their ends).
    pub(super) fn rebuild_queue_offset_table(&self) {
        let mut table: FxHashMap<String, Vec<i64>> = FxHashMap::default();
        for cq in self.consume_queues.all() {
            let v = table.entry(cq.topic().to_owned()).or_default();
            let qid = cq.queue_id().index();
            if v.len() <= qid {
                v.resize(qid + 1, 0);
            }
            v[qid] = cq.max_offset_in_queue();
        }
        self.commit_log.set_topic_queue_table(table);
    }

    /// Newest file whose first message is older than the checkpoint says was dispatched and
    /// flushed; scanning starts there.
    fn abnormal_recovery_start(&self, files: &[Arc<MappedFile>]) -> usize {
        let limit = if self.config.message_index_enable {
            self.checkpoint.min_timestamp_index()
        } else {
            self.checkpoint.min_timestamp()
        };
        for (i, f) in files.iter().enumerate().rev() {
            if let Scan::Message(r) = scan_record(f.raw_from(0), false) {
                if r.store_timestamp > 0 && r.store_timestamp <= limit {
                    return i;
                }
            }
        }
        0
    }
}
