//! [`MessageStore`]: the storage engine as one object (RocketMQ's `DefaultMessageStore`).
//! This file owns its state, opening (lock, load, recover, start) and shutdown; each job has
//! a file of its own:
//!
//! | file | job |
//! |---|---|
//! | [`recovery`] | load-time recovery: the valid CommitLog end, cutting torn tails, re-dispatch |
//! | [`put`] | the put path: write checks, delay/timer parking, append, durability wait |
//! | [`read`] | the pull path: `get_message` and reading a record by CommitLog offset |
//! | [`query`] | offset and time lookups, ConsumeQueue unit reads, key queries |
//! | [`retention`] | deleting expired files, removing ConsumeQueues, the disk-full guard |
//! | [`floor`] | the retention floor: the oldest record a consumer, timer or delay level needs |
//! | [`page_cache`] | which flushed CommitLog pages go back to the kernel (`pageCacheTailCommitLog`) |
//! | [`services`] | the background threads and flushing ConsumeQueues, index and checkpoint |
//! | [`runtime_info`] | figures for `brokerStatus` |
//! | [`replica`] | replication: the role, the HA service's store calls, truncation |
//! | [`verify`], [`verify_index`] | the start-up check of ConsumeQueues and index files, rebuilding damage |
//!
//! Dispatch is [`crate::dispatch::ReputService`], the ConsumeQueue table
//! [`crate::consume_queue_table`]. Threads:
//!
//! | thread | does |
//! |---|---|
//! | `rmq-allocate-mapped-file` | creates and pre-faults the next CommitLog file |
//! | `rmq-group-commit` / `rmq-flush-commitlog` | SYNC_FLUSH group commit / ASYNC_FLUSH flush |
//! | `rmq-commit-commitlog` | moves transient-pool buffers into the file |
//! | `rmq-reput` | dispatches records to ConsumeQueue and IndexFile, wakes held pulls; polls every 1 ms while records arrive, sleeps until woken once idle |
//! | `rmq-flush-consumequeue` | flushes ConsumeQueues, index and the checkpoint |
//! | `rmq-clean` | the disk-full guard: refuse writes above `diskSpaceWarningLevelRatio` |
//! | `rmq-page-cache` | gives CommitLog pages no reader needs back to the kernel ([`page_cache`]) |
//! | `rmq-timer` | timer messages: the time wheel's enqueue and delivery ([`crate::timer`]) |

mod floor;
mod page_cache;
mod put;
mod query;
mod read;
mod recovery;
mod replica;
mod retention;
mod runtime_info;
mod services;
mod verify;
mod verify_index;

use std::fs::{File, OpenOptions};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

pub use crate::dispatch::MessageArrivingListener;
pub use floor::{ConsumeProgress, QueueHold, RetentionHold};
pub use put::{PutMessageResult, PutMessageStatus};
pub use query::ConsumeQueueUnits;
pub use read::{GetMessageResult, GetMessageStatus};
pub use replica::{HaRuntimeInfo, ReplicaWait};
pub use retention::{CleanReport, DeleteReason};
pub use runtime_info::human_readable_bytes;

use crate::append_window::AppendWindow;
use crate::checkpoint::StoreCheckpoint;
use crate::commit_log::CommitLog;
use crate::config::{FlushDiskType, StoreConfig};
use crate::consume_queue::ConsumeQueue;
use crate::consume_queue_table::{self, ConsumeQueueTable};
use crate::dispatch::{DispatchTargets, ReputService};
use crate::error::{IoContext, Result, StoreError};
use crate::flush::GroupCommit;
use crate::index_file::IndexService;
use crate::mapped_file_queue::MappedFileQueue;
use crate::transient_store_pool::TransientStorePool;
use services::Services;

/// The storage engine.
pub struct MessageStore {
    root: PathBuf,
    config: StoreConfig,
    store_host: SocketAddr,
    commit_log: CommitLog,
    consume_queues: ConsumeQueueTable,
    index: IndexService,
    checkpoint: StoreCheckpoint,
    pool: Option<Arc<TransientStorePool>>,
    group_commit: Option<Arc<GroupCommit>>,
    reput: ReputService,
    services: Services,
    disk_full: AtomicBool,
    shutdown: AtomicBool,
    last_exit_ok: bool,
    memory_bytes: u64,
    put_times: AtomicU64,
    put_bytes: AtomicU64,
    /// `fileReservedTime` (hours) as it is now: starts as the config's, and the broker may
    /// change it while running (UPDATE_BROKER_CONFIG), as RocketMQ reads it at every cleanup.
    file_reserved_hours: AtomicU32,
    lock_file: File,
    timer: crate::timer::TimerSettings,
    timer_stats: crate::timer::TimerStats,
    check_stats: verify::CheckStats,
    /// CommitLog offset from which every ConsumeQueue unit was made by this run's dispatch
    /// from a record it had just read whole (past the recovered CommitLog and every
    /// recovered unit; `i64::MAX`, none, after a truncation until the next start). The read
    /// path checks units below it against their records; those above it are as sound as the
    /// records they came from.
    units_dispatched_from: AtomicI64,
    /// Who still needs which CommitLog records ([`floor`]).
    holds: floor::Holds,
    /// Replication: the role now, the HA acceptor or client ([`crate::ha`]).
    ha: crate::ha::HaService,
}

fn total_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(8 << 30, |kb| kb * 1024)
}

fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

impl MessageStore {
    /// Open (creating if needed) the store under `root`, recover it, start its services.
    ///
    /// # Errors
    /// A locked directory, unreadable or mis-sized files, or I/O errors, each naming the
    /// file and what to do.
    pub fn open(
        root: impl AsRef<Path>,
        config: StoreConfig,
        store_host: SocketAddr,
    ) -> Result<Arc<Self>> {
        Self::open_with_ha_tls(root, config, store_host, crate::ha::HaTls::default())
    }

    /// [`open`](Self::open) with TLS on the HA port (the master's acceptor, the slave's
    /// connection to its master).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with_ha_tls(
        root: impl AsRef<Path>,
        config: StoreConfig,
        store_host: SocketAddr,
        ha_tls: crate::ha::HaTls,
    ) -> Result<Arc<Self>> {
        let root = root.as_ref().to_path_buf();
        std::fs::create_dir_all(&root)
            .ctx(|| format!("creating store directory {}", root.display()))?;
        let lock_file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(root.join("lock"))
            .ctx(|| format!("opening {}", root.join("lock").display()))?;
        if lock_file.try_lock().is_err() {
            return Err(StoreError::Locked(root));
        }
        let abort = root.join("abort");
        let last_exit_ok = !abort.exists();
        let pool = if config.is_transient_store_pool_enable() {
            Some(Arc::new(TransientStorePool::new(
                config.transient_store_pool_size,
                config.mapped_file_size_commit_log,
            )?))
        } else {
            None
        };
        let mut cl_queue =
            MappedFileQueue::new(root.join("commitlog"), config.mapped_file_size_commit_log)?
                .with_sync_flush_layout(config.flush_disk_type == FlushDiskType::SyncFlush)
                .with_short_files_extended();
        if let Some(p) = &pool {
            cl_queue = cl_queue.with_pool(Arc::clone(p));
        }
        if !last_exit_ok {
            crate::append_window::replay(&root, &root.join("commitlog"))?;
        }
        cl_queue.load()?;
        if pool.is_none() && config.flush_disk_type == FlushDiskType::AsyncFlush {
            if let Some(w) = AppendWindow::open(&root, config.mapped_file_size_commit_log) {
                cl_queue = cl_queue.with_window(Arc::new(w));
            }
        }
        let cl_queue = cl_queue.with_allocator(config.warm_mapped_file_enable);
        let commit_log = CommitLog::new(cl_queue, store_host, config.max_message_size);
        let checkpoint = StoreCheckpoint::open(&root.join("checkpoint"))?;
        let index = IndexService::new(
            root.join("index"),
            config.max_hash_slot_num,
            config.max_index_num,
        )?;
        index.load(last_exit_ok, checkpoint.index_msg_timestamp())?;
        let mut store = Self {
            consume_queues: ConsumeQueueTable::load(
                consume_queue_table::dir_of(&root),
                config.mapped_file_size_consume_queue,
            )?,
            root,
            reput: ReputService::new(config.delay_levels_ms()),
            store_host,
            commit_log,
            index,
            checkpoint,
            pool,
            group_commit: None,
            services: Services::default(),
            disk_full: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            last_exit_ok,
            memory_bytes: total_memory_bytes(),
            put_times: AtomicU64::new(0),
            put_bytes: AtomicU64::new(0),
            file_reserved_hours: AtomicU32::new(config.file_reserved_time),
            lock_file,
            timer: crate::timer::TimerSettings::from_config(&config),
            timer_stats: crate::timer::TimerStats::default(),
            check_stats: verify::CheckStats::default(),
            units_dispatched_from: AtomicI64::new(i64::MAX),
            holds: floor::Holds::new(
                config.timer_wheel_enable && config.broker_role != crate::config::BrokerRole::Slave,
            ),
            ha: crate::ha::HaService::new(&config, ha_tls),
            config,
        };
        store.recover()?;
        store.commit_log.queue().attach_window_to_last();
        // Past every record a recovered unit reaches, even one left pointing beyond the
        // recovered CommitLog (units of a queue are in CommitLog order: its last is its end).
        let recovered_end = (store.consume_queues.all().iter())
            .map(|cq| cq.max_physic_offset())
            .fold(store.commit_log.max_offset(), i64::max);
        store
            .units_dispatched_from
            .store(recovered_end, Ordering::Release);
        File::create(&abort).ctx(|| format!("creating {}", abort.display()))?;
        sync_dir(&store.root);
        if store.config.flush_disk_type == FlushDiskType::SyncFlush {
            store.group_commit = Some(GroupCommit::new(store.commit_log.queue().flushed_where()));
        }
        store.commit_log.queue().prepare_next_file();
        let timer = crate::timer::service::open(&store.root, &store.config)?;
        let store = Arc::new(store);
        store.start_services(timer)?;
        store.start_ha()?;
        Ok(store)
    }

    /// What a dispatch pass writes to.
    fn dispatch_targets(&self) -> DispatchTargets<'_> {
        DispatchTargets {
            commit_log: &self.commit_log,
            consume_queues: &self.consume_queues,
            index: self.config.message_index_enable.then_some(&self.index),
        }
    }

    /// Whether indexing is suspended because the index could not be written (a full disk;
    /// see `index_suspend`): messages are stored and consumed, queries by key miss those
    /// stored since, until it resumes and back-fills them.
    #[must_use]
    pub fn index_suspended(&self) -> bool {
        self.reput.index_suspended()
    }

    /// The ConsumeQueue of `(topic, queue_id)`, if it exists.
    #[must_use]
    pub fn get_consume_queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.consume_queues.get(topic, queue_id)
    }

    /// Register the hook that wakes held pulls when messages are dispatched.
    pub fn set_message_arriving_listener(&self, l: Arc<MessageArrivingListener>) {
        self.reput.set_listener(l);
    }

    /// The delay level table in milliseconds (`messageDelayLevel`; level 1 is index 0), as
    /// dispatch uses it to compute delivery times.
    #[must_use]
    pub fn delay_levels_ms(&self) -> &[i64] {
        self.reput.delay_levels_ms()
    }

    /// False when the previous run did not shut down cleanly.
    #[must_use]
    pub fn last_exit_ok(&self) -> bool {
        self.last_exit_ok
    }

    /// Whether the transient store pool is in use.
    #[must_use]
    pub fn transient_store_pool_active(&self) -> bool {
        self.pool.is_some()
    }

    /// Store root directory.
    #[must_use]
    pub fn root_dir(&self) -> &Path {
        &self.root
    }

    /// Store configuration.
    #[must_use]
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Broker address written into records.
    #[must_use]
    pub fn store_host(&self) -> SocketAddr {
        self.store_host
    }

    /// Every (topic, queue ids) with a ConsumeQueue.
    #[must_use]
    pub fn topic_queues(&self) -> Vec<(String, Vec<i32>)> {
        self.consume_queues.topic_queues()
    }

    /// Stop services, flush everything, write the checkpoint and remove the abort file.
    /// Idempotent.
    ///
    /// # Errors
    /// When the final flush fails (the abort file is then kept so the next start recovers).
    pub fn shutdown(&self) -> Result<()> {
        // The timer thread first: it finishes the second it is delivering while puts are
        // still accepted, and syncs its files.
        self.services.stop_timer();
        if self.shutdown.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.ha.shutdown();
        // SYNC_FLUSH: records staged for the group commit's next round become readable.
        if let Some(f) = self.commit_log.queue().last_mapped_file() {
            if let Err(e) = f.write_staged() {
                log::error!("{e}; the last flush tries again");
            }
        }
        // Let dispatch catch up so the ConsumeQueues are complete.
        for _ in 0..5000 {
            if self.dispatch_behind_bytes() == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.services.stop(self.group_commit.as_deref());
        self.commit_log.queue().shutdown();
        let flushed = self.flush();
        if flushed.is_ok() && self.dispatch_behind_bytes() == 0 {
            let abort = self.root.join("abort");
            std::fs::remove_file(&abort).ctx(|| format!("removing {}", abort.display()))?;
            sync_dir(&self.root);
        }
        // The directory is free for another store from here on.
        let _ = self.lock_file.unlock();
        flushed.map(|_| ())
    }
}

impl std::fmt::Debug for MessageStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageStore")
            .field("root", &self.root)
            .field("min_phy_offset", &self.get_min_phy_offset())
            .field("max_phy_offset", &self.get_max_phy_offset())
            .finish_non_exhaustive()
    }
}
