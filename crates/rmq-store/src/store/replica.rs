//! Replication calls of [`MessageStore`]: starting the HA service for its role, the role
//! switch, the slave's append of replicated bytes, the SYNC_MASTER wait for a slave, the
//! runtime figures, and truncating the CommitLog (an old master rejoining as a slave first
//! drops what it has beyond the new master). The protocol itself is [`crate::ha`].

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::MessageStore;
use crate::config::{BrokerRole, FlushDiskType};
use crate::error::{Result, StoreError};
use crate::format::{scan_record, Scan};
use crate::ha::client::{self, HaClientInfo};
use crate::ha::connection::HaConnectionInfo;
use crate::ha::{HaService, TransferFuture};
use crate::mapped_file::MappedFile;

/// What a SYNC_MASTER put must wait for after its append.
pub enum ReplicaWait {
    /// Nothing (not a SYNC_MASTER).
    NotNeeded,
    /// No slave is connected, or the best one lags `haMaxGapNotInSync` or more: answer
    /// SLAVE_NOT_AVAILABLE (the message is stored).
    SlaveNotAvailable,
    /// Resolves to true once a slave acknowledged the message; apply `syncFlushTimeout`
    /// (FLUSH_SLAVE_TIMEOUT) around it.
    Wait(TransferFuture),
}

/// The replication figures (Apache 5.x's `HARuntimeInfo`).
#[derive(Debug, Clone)]
pub struct HaRuntimeInfo {
    /// Whether this store is a master.
    pub master: bool,
    /// This CommitLog's max offset.
    pub master_commit_log_max_offset: i64,
    /// Slaves within `haMaxGapNotInSync`.
    pub in_sync_slave_nums: usize,
    /// One entry per connected slave (a master).
    pub ha_connection_info: Vec<HaConnectionInfo>,
    /// The client following the master (a slave that follows one).
    pub ha_client_runtime_info: Option<HaClientInfo>,
}

impl MessageStore {
    /// The replication service.
    #[must_use]
    pub fn ha(&self) -> &HaService {
        &self.ha
    }

    /// The role now (it can change at run time: [`set_broker_role`](Self::set_broker_role)).
    #[must_use]
    pub fn broker_role(&self) -> BrokerRole {
        self.ha.role()
    }

    pub(super) fn start_ha(self: &Arc<Self>) -> Result<()> {
        if self.ha.role() == BrokerRole::Slave {
            let addr = self.config.ha_master_address.trim().to_owned();
            if !addr.is_empty() {
                client::update_master_address(&self.ha, self, &addr)?;
            }
            return Ok(());
        }
        if let Err(e) = self.ha.start_acceptor(self) {
            // The store works without slaves; SYNC_MASTER sends then get SLAVE_NOT_AVAILABLE.
            log::error!("HA service not started, no slave can follow this master: {e}");
        }
        Ok(())
    }

    /// The bound HA port while this master accepts slaves (`None` on a slave).
    #[must_use]
    pub fn ha_listen_port(&self) -> Option<u16> {
        self.ha.listen_port()
    }

    /// A slave (re)points its HA client at `addr` (the master's host:port HA address); ""
    /// stops following. The same address again changes nothing.
    ///
    /// # Errors
    /// [`StoreError::IllegalState`] on a master, or when the client thread cannot start.
    pub fn ha_update_master_address(self: &Arc<Self>, addr: &str) -> Result<()> {
        let addr = addr.trim();
        if self.ha.role() != BrokerRole::Slave && !addr.is_empty() {
            return Err(StoreError::IllegalState(format!(
                "this store is a master ({:?}); only a slave follows a master at {addr} \
                 (set_broker_role('SLAVE') first)",
                self.ha.role()
            )));
        }
        client::update_master_address(&self.ha, self, addr)
    }

    /// Switch the role at run time. To a master: stop following, start accepting slaves,
    /// accept writes (queue offsets continue from the ConsumeQueues). To SLAVE: stop
    /// accepting, refuse writes; then [`ha_update_master_address`](Self::ha_update_master_address).
    ///
    /// # Errors
    /// When the HA port cannot be bound.
    pub fn set_broker_role(self: &Arc<Self>, role: BrokerRole) -> Result<()> {
        let was = self.ha.role();
        if role == BrokerRole::Slave {
            self.ha.set_role(role);
            self.ha.stop_acceptor();
            return Ok(());
        }
        client::stop(&self.ha);
        if was == BrokerRole::Slave {
            // Let dispatch finish what replication brought, then take queue offsets from it.
            for _ in 0..5000 {
                if self.dispatch_behind_bytes() == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            self.rebuild_queue_offset_table();
        }
        self.ha.start_acceptor(self)?;
        self.ha.set_role(role);
        Ok(())
    }

    /// A slave's append of a replication frame at `offset`; under SYNC_FLUSH the flush is
    /// requested (not waited for).
    ///
    /// # Errors
    /// As [`crate::commit_log::CommitLog::append_data`].
    pub fn append_replicated(&self, offset: i64, data: &[u8]) -> Result<()> {
        self.commit_log.append_data(offset, data)?;
        self.data_published();
        if self.config.flush_disk_type == FlushDiskType::SyncFlush {
            if let Some(gc) = &self.group_commit {
                gc.request(offset + i64::try_from(data.len()).unwrap_or(i64::MAX));
            }
        }
        Ok(())
    }

    /// The file bytes a master sends next from `offset`: `(file, position, length)`, at most
    /// `batch` bytes and never past the end of the file's data. A full file is sent whole
    /// (its BLANK record's padding included), so the slave's file is a byte copy.
    pub(crate) fn commit_log_region(
        &self,
        offset: i64,
        batch: usize,
    ) -> Option<(Arc<MappedFile>, usize, usize)> {
        let file = self
            .commit_log
            .queue()
            .find_mapped_file_by_offset(offset, false)?;
        let pos = usize::try_from(offset - file.file_from_offset()).ok()?;
        let end = if file.is_full() && !file.has_write_buffer() {
            file.file_size()
        } else {
            file.read_position()
        };
        (pos < end).then(|| (file, pos, (end - pos).min(batch)))
    }

    /// What a SYNC_MASTER put ending at `end_offset` waits for (RocketMQ's `handleHA`).
    #[must_use]
    pub fn replica_future(&self, end_offset: i64) -> ReplicaWait {
        if self.ha.role() != BrokerRole::SyncMaster {
            return ReplicaWait::NotNeeded;
        }
        if !self.ha.is_slave_ok(end_offset) {
            return ReplicaWait::SlaveNotAvailable;
        }
        self.wake_ha_writers();
        ReplicaWait::Wait(TransferFuture::new(
            Arc::clone(&self.ha.transfer),
            end_offset,
        ))
    }

    /// Wake the HA writer of every slave: there is new data to send.
    pub(super) fn wake_ha_writers(&self) {
        for c in self
            .ha
            .connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
        {
            c.wake();
        }
    }

    /// The blocking form of [`replica_future`](Self::replica_future) within
    /// `syncFlushTimeout`: `None` when no wait applies, else whether a slave acknowledged.
    pub(super) fn wait_replicated(&self, end_offset: i64) -> Option<super::PutMessageStatus> {
        use super::PutMessageStatus as S;
        match self.replica_future(end_offset) {
            ReplicaWait::NotNeeded => None,
            ReplicaWait::SlaveNotAvailable => Some(S::SlaveNotAvailable),
            ReplicaWait::Wait(_) => Some(
                if self
                    .ha
                    .transfer
                    .wait_for(end_offset, self.sync_flush_timeout())
                {
                    S::PutOk
                } else {
                    S::FlushSlaveTimeout
                },
            ),
        }
    }

    /// The replication figures.
    #[must_use]
    pub fn ha_runtime_info(&self) -> HaRuntimeInfo {
        let max = self.get_max_phy_offset();
        let gap = self.ha.settings.max_gap;
        let conns: Vec<HaConnectionInfo> = self
            .ha
            .connections
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|c| c.info(max, gap))
            .collect();
        HaRuntimeInfo {
            master: self.ha.role() != BrokerRole::Slave,
            master_commit_log_max_offset: max,
            in_sync_slave_nums: conns.iter().filter(|c| c.in_sync).count(),
            ha_connection_info: conns,
            ha_client_runtime_info: self
                .ha
                .client
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .as_ref()
                .map(|c| c.info(max)),
        }
    }

    /// Drop every CommitLog byte at or after `offset`, and the ConsumeQueue units pointing
    /// there; returns the new max offset. `offset` must be the current max or the start of a
    /// record. Index entries past it stay in their files but point at nothing (key queries
    /// check each record they read), until new records overwrite those offsets; queries may
    /// then return a newer record for an old key, which its key check filters. Call it
    /// while the store does not follow a master and serves no writes (a rejoining slave).
    ///
    /// # Errors
    /// [`StoreError::IllegalState`] for an offset that is no record boundary, or while the
    /// HA client follows a master; I/O errors.
    pub fn truncate_commit_log(&self, offset: i64) -> Result<i64> {
        let max = self.get_max_phy_offset();
        if offset == max {
            return Ok(max);
        }
        if self
            .ha
            .client
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some()
        {
            return Err(StoreError::IllegalState(
                "the store follows a master: stop following (ha_update_master_address('')) \
                 before truncating its CommitLog"
                    .into(),
            ));
        }
        let min = self.get_min_phy_offset();
        if offset > max || offset < min {
            return Err(StoreError::IllegalState(format!(
                "cannot truncate the CommitLog at {offset}: it holds offsets {min} to {max}"
            )));
        }
        let at_record = self.commit_log.get_data(offset).is_some_and(|d| {
            matches!(scan_record(d.bytes(), false), Scan::Message(r) if r.physical_offset == offset)
        });
        if !at_record {
            return Err(StoreError::IllegalState(format!(
                "cannot truncate the CommitLog at {offset}: no record starts there (use a \
                 record's offset, e.g. a message's commitLogOffset, or the max {max})"
            )));
        }
        self.commit_log.with_puts_stopped(|_| -> Result<()> {
            let _dispatch = self.consume_queues.lock_dispatch_cache();
            let q = self.commit_log.queue();
            q.truncate_dirty_files(offset)?;
            q.set_flushed_where(q.flushed_where().min(offset));
            q.set_committed_where(q.committed_where().min(offset));
            for cq in self.consume_queues.all() {
                cq.truncate_dirty_logic_files(offset)?;
            }
            if self.reput.reput_from_offset() > offset {
                self.reput.set_reput_from_offset(offset);
            }
            // Units that outlived the cut would point at the records written after it: the
            // read path checks every unit again until the next start.
            self.units_dispatched_from
                .store(i64::MAX, Ordering::Release);
            Ok(())
        })?;
        self.rebuild_queue_offset_table();
        log::warn!("CommitLog truncated at {offset} (it ended at {max})");
        Ok(self.get_max_phy_offset())
    }
}
