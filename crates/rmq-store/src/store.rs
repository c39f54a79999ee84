//! [`MessageStore`]: the storage engine as one object (RocketMQ's `DefaultMessageStore`).
//! It owns the CommitLog, the ConsumeQueues, the IndexFile service and the checkpoint,
//! recovers them when opened, and runs the background services:
//!
//! | thread | does |
//! |---|---|
//! | `rmq-allocate-mapped-file` | creates and pre-faults the next CommitLog file |
//! | `rmq-group-commit` / `rmq-flush-commitlog` | SYNC_FLUSH group commit / ASYNC_FLUSH flush |
//! | `rmq-commit-commitlog` | moves transient-pool buffers into the file |
//! | `rmq-reput` | dispatches records to ConsumeQueue and IndexFile, wakes held pulls |
//! | `rmq-flush-consumequeue` | flushes ConsumeQueues, index and the checkpoint |
//! | `rmq-clean` | the disk-full guard: refuse writes above `diskSpaceWarningLevelRatio` |
//! | `rmq-timer` | timer messages: the time wheel's enqueue and delivery ([`crate::timer`]) |

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use rmq_common::time::now_millis;

use crate::checkpoint::StoreCheckpoint;
use crate::commit_log::{AppendResult, CommitLog};
use crate::config::{BrokerRole, FlushDiskType, StoreConfig};
use crate::consume_queue::ConsumeQueue;
use crate::dispatch::DispatchRequest;
use crate::error::{IoContext, Result, StoreError};
use crate::flush::{
    run_async_flush, run_commit, AsyncFlushConfig, FlushOutcome, GroupCommit, Waker,
};
use crate::format::{scan_record, CqUnit, DecodedRecord, MessageToStore, Scan, CQ_STORE_UNIT_SIZE};
use crate::index_file::{IndexRequest, IndexService};
use crate::mapped_file::{MappedFile, SelectMappedBufferResult};
use crate::mapped_file_queue::MappedFileQueue;
use crate::schedule;
use crate::transient_store_pool::TransientStorePool;

/// Status of a put that stored the message (RocketMQ's `PutMessageStatus`, stored cases).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutMessageStatus {
    /// Stored (and, under SYNC_FLUSH, durable).
    PutOk,
    /// Stored, but not durable within `syncFlushTimeout`.
    FlushDiskTimeout,
}

impl PutMessageStatus {
    /// RocketMQ's name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PutOk => "PUT_OK",
            Self::FlushDiskTimeout => "FLUSH_DISK_TIMEOUT",
        }
    }
}

/// A stored message's place and status.
#[derive(Debug, Clone, Copy)]
pub struct PutMessageResult {
    /// Status.
    pub status: PutMessageStatus,
    /// Where it was written.
    pub append: AppendResult,
}

/// RocketMQ's `GetMessageStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum GetMessageStatus {
    Found,
    NoMatchedMessage,
    MessageWasRemoving,
    OffsetFoundNull,
    OffsetOverflowBadly,
    OffsetOverflowOne,
    OffsetTooSmall,
    NoMatchedLogicQueue,
    NoMessageInQueue,
}

impl GetMessageStatus {
    /// RocketMQ's name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Found => "FOUND",
            Self::NoMatchedMessage => "NO_MATCHED_MESSAGE",
            Self::MessageWasRemoving => "MESSAGE_WAS_REMOVING",
            Self::OffsetFoundNull => "OFFSET_FOUND_NULL",
            Self::OffsetOverflowBadly => "OFFSET_OVERFLOW_BADLY",
            Self::OffsetOverflowOne => "OFFSET_OVERFLOW_ONE",
            Self::OffsetTooSmall => "OFFSET_TOO_SMALL",
            Self::NoMatchedLogicQueue => "NO_MATCHED_LOGIC_QUEUE",
            Self::NoMessageInQueue => "NO_MESSAGE_IN_QUEUE",
        }
    }
}

/// What a pull read: file ranges the server can `sendfile`, and where to go next.
#[derive(Debug, Clone)]
pub struct GetMessageResult {
    /// Status.
    pub status: GetMessageStatus,
    /// Queue offset the consumer should ask for next.
    pub next_begin_offset: i64,
    /// Smallest queue offset.
    pub min_offset: i64,
    /// Next queue offset to be written.
    pub max_offset: i64,
    /// One range per message.
    pub messages: Vec<SelectMappedBufferResult>,
    /// Sum of the ranges' lengths.
    pub buffer_total_size: usize,
    /// The data is cold (far behind the CommitLog tail); a slave could serve it.
    pub suggest_pulling_from_slave: bool,
}

impl GetMessageResult {
    fn empty(status: GetMessageStatus, next: i64, min: i64, max: i64) -> Self {
        Self {
            status,
            next_begin_offset: next,
            min_offset: min,
            max_offset: max,
            messages: Vec::new(),
            buffer_total_size: 0,
            suggest_pulling_from_slave: false,
        }
    }
}

/// ConsumeQueue units read by [`MessageStore::get_consume_queue_units`].
#[derive(Debug, Clone, Default)]
pub struct ConsumeQueueUnits {
    /// The queue's first valid offset (0 when the queue does not exist).
    pub min_offset: i64,
    /// The queue's next offset to be written (0 when the queue does not exist).
    pub max_offset: i64,
    /// The units read, from the requested offset on.
    pub units: Vec<CqUnit>,
}

/// Called after each dispatched message: `(topic, queue_id, next queue offset, tags code,
/// store timestamp)`. The broker wakes held pulls with it.
pub type MessageArrivingListener = dyn Fn(&str, i32, i64, i64, i64) + Send + Sync;

type CqTable = HashMap<String, HashMap<i32, Arc<ConsumeQueue>>>;

/// The storage engine.
pub struct MessageStore {
    root: PathBuf,
    config: StoreConfig,
    store_host: SocketAddr,
    commit_log: CommitLog,
    consume_queues: RwLock<CqTable>,
    index: IndexService,
    checkpoint: StoreCheckpoint,
    pool: Option<Arc<TransientStorePool>>,
    group_commit: Option<Arc<GroupCommit>>,
    flush_waker: Waker,
    commit_waker: Waker,
    reput_waker: Waker,
    cq_flush_waker: Waker,
    clean_waker: Waker,
    reput_from_offset: AtomicI64,
    /// ConsumeQueues by topic and queue id, as seen by the dispatch thread (no table lock or
    /// string hashing per message).
    dispatch_cache: Mutex<rmq_common::fx::FxHashMap<String, Vec<Option<Arc<ConsumeQueue>>>>>,
    disk_full: AtomicBool,
    shutdown: AtomicBool,
    last_exit_ok: bool,
    delay_levels_ms: Vec<i64>,
    memory_bytes: u64,
    listener: RwLock<Option<Arc<MessageArrivingListener>>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    put_times: AtomicU64,
    put_bytes: AtomicU64,
    last_dispatched_store_ts: AtomicI64,
    last_dispatch_error_log: AtomicI64,
    /// `fileReservedTime` (hours) as it is now: starts as the config's, and the broker may
    /// change it while running (UPDATE_BROKER_CONFIG), as RocketMQ reads it at every cleanup.
    file_reserved_hours: AtomicU32,
    lock_file: File,
    timer: crate::timer::TimerSettings,
    timer_waker: Waker,
    timer_thread: Mutex<Option<JoinHandle<()>>>,
    timer_stats: crate::timer::TimerStats,
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
                .with_sync_flush_layout(config.flush_disk_type == FlushDiskType::SyncFlush);
        if let Some(p) = &pool {
            cl_queue = cl_queue.with_pool(Arc::clone(p));
        }
        cl_queue.load()?;
        let cl_queue = cl_queue.with_allocator(config.warm_mapped_file_enable);
        let commit_log = CommitLog::new(cl_queue, store_host, config.max_message_size);
        let checkpoint = StoreCheckpoint::open(&root.join("checkpoint"))?;
        let index = IndexService::new(
            root.join("index"),
            config.max_hash_slot_num,
            config.max_index_num,
        )?;
        index.load(last_exit_ok, checkpoint.index_msg_timestamp())?;
        let store = Self {
            consume_queues: RwLock::new(Self::load_consume_queues(&root, &config)?),
            root,
            delay_levels_ms: config.delay_levels_ms(),
            store_host,
            commit_log,
            index,
            checkpoint,
            pool,
            group_commit: None,
            flush_waker: Waker::default(),
            commit_waker: Waker::default(),
            reput_waker: Waker::default(),
            cq_flush_waker: Waker::default(),
            clean_waker: Waker::default(),
            reput_from_offset: AtomicI64::new(0),
            dispatch_cache: Mutex::new(rmq_common::fx::FxHashMap::default()),
            disk_full: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            last_exit_ok,
            memory_bytes: total_memory_bytes(),
            listener: RwLock::new(None),
            threads: Mutex::new(Vec::new()),
            put_times: AtomicU64::new(0),
            put_bytes: AtomicU64::new(0),
            last_dispatched_store_ts: AtomicI64::new(0),
            last_dispatch_error_log: AtomicI64::new(0),
            file_reserved_hours: AtomicU32::new(config.file_reserved_time),
            lock_file,
            timer: crate::timer::TimerSettings::from_config(&config),
            timer_waker: Waker::default(),
            timer_thread: Mutex::new(None),
            timer_stats: crate::timer::TimerStats::default(),
            config,
        };
        store.recover()?;
        File::create(&abort).ctx(|| format!("creating {}", abort.display()))?;
        sync_dir(&store.root);
        let mut store = store;
        if store.config.flush_disk_type == FlushDiskType::SyncFlush {
            store.group_commit = Some(GroupCommit::new(store.commit_log.queue().flushed_where()));
        }
        store.commit_log.queue().prepare_next_file();
        let timer = crate::timer::service::open(&store.root, &store.config)?;
        let store = Arc::new(store);
        store.start_services()?;
        if let Some(t) = timer {
            let s = Arc::clone(&store);
            let handle = std::thread::Builder::new()
                .name("rmq-timer".into())
                .spawn(move || t.run(&s, &s.timer_waker))
                .ctx(|| "starting thread rmq-timer".to_string())?;
            *store
                .timer_thread
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = Some(handle);
        }
        Ok(store)
    }

    fn load_consume_queues(root: &Path, config: &StoreConfig) -> Result<CqTable> {
        let cq_root = root.join("consumequeue");
        std::fs::create_dir_all(&cq_root).ctx(|| format!("creating {}", cq_root.display()))?;
        let mut table = CqTable::new();
        for topic_dir in
            std::fs::read_dir(&cq_root).ctx(|| format!("listing {}", cq_root.display()))?
        {
            let topic_dir = topic_dir
                .ctx(|| format!("listing {}", cq_root.display()))?
                .path();
            let Some(topic) = topic_dir
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_owned)
            else {
                continue;
            };
            if !topic_dir.is_dir() {
                continue;
            }
            for q in
                std::fs::read_dir(&topic_dir).ctx(|| format!("listing {}", topic_dir.display()))?
            {
                let q = q.ctx(|| format!("listing {}", topic_dir.display()))?.path();
                let Some(qid) = q
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<i32>().ok())
                else {
                    continue; // not a queue id: RocketMQ skips it too
                };
                let cq = ConsumeQueue::new(
                    &cq_root,
                    &topic,
                    qid,
                    config.mapped_file_size_consume_queue,
                )?;
                cq.load()?;
                table
                    .entry(topic.clone())
                    .or_default()
                    .insert(qid, Arc::new(cq));
            }
        }
        Ok(table)
    }

    fn all_consume_queues(&self) -> Vec<Arc<ConsumeQueue>> {
        self.consume_queues
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .flat_map(|m| m.values().cloned())
            .collect()
    }

    /// Load-time recovery (RocketMQ's `recover`): find the valid end of the CommitLog, cut
    /// torn tails, cut ConsumeQueue units beyond it, re-dispatch what the ConsumeQueues and
    /// the index miss, and rebuild the queue-offset table.
    fn recover(&self) -> Result<()> {
        let mut max_phy_of_cq = -1;
        for cq in self.all_consume_queues() {
            max_phy_of_cq = max_phy_of_cq.max(cq.recover()?);
        }
        let queue = self.commit_log.queue();
        let files = queue.files();
        let process = if files.is_empty() {
            0
        } else if self.last_exit_ok {
            self.scan_valid_end(
                &files,
                files.len().saturating_sub(3),
                self.config.check_crc_on_recover,
            )
        } else {
            let start = self.abnormal_recovery_start(&files);
            self.scan_valid_end(&files, start, self.config.check_crc_on_recover)
        };
        if !files.is_empty() && !self.last_exit_ok {
            eprintln!(
                "rmq-store WARN: {} was not shut down cleanly; recovered the CommitLog up to offset {process}",
                self.root.display()
            );
        }
        queue.set_flushed_where(process);
        queue.set_committed_where(process);
        queue.truncate_dirty_files(process)?;
        if files.is_empty() {
            // No CommitLog: ConsumeQueues point at nothing.
            for cq in self.all_consume_queues() {
                cq.queue().destroy()?;
            }
            self.consume_queues
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            self.dispatch_cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        } else if max_phy_of_cq >= process {
            for cq in self.all_consume_queues() {
                cq.truncate_dirty_logic_files(process)?;
            }
        }
        // Re-dispatch from the smallest point that the ConsumeQueues or the index cover.
        let cl_min = self.commit_log.min_offset();
        let mut reput = self
            .all_consume_queues()
            .iter()
            .map(|cq| cq.max_physic_offset())
            .max()
            .unwrap_or(-1)
            .max(cl_min);
        if self.config.message_index_enable {
            reput = reput.min(self.index.end_phy_offset().max(cl_min));
        }
        self.reput_from_offset
            .store(reput.min(process), Ordering::Release);
        while self.do_reput() {}
        if self.dispatch_behind_bytes() > 0 {
            return Err(StoreError::ServiceNotAvailable(format!(
                "recovery could not rebuild the ConsumeQueues past CommitLog offset {} (see the \
                 error above, often a full disk); free space and start again",
                self.reput_from_offset.load(Ordering::Acquire)
            )));
        }
        let mut table: rmq_common::fx::FxHashMap<String, Vec<i64>> =
            rmq_common::fx::FxHashMap::default();
        for cq in self.all_consume_queues() {
            let v = table.entry(cq.topic().to_owned()).or_default();
            let qid = usize::try_from(cq.queue_id()).unwrap_or(0);
            if v.len() <= qid {
                v.resize(qid + 1, 0);
            }
            v[qid] = cq.max_offset_in_queue();
            cq.correct_min_offset(cl_min);
        }
        self.commit_log.set_topic_queue_table(table);
        Ok(())
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

    /// Global offset where valid records end, scanning from `files[start]`.
    fn scan_valid_end(&self, files: &[Arc<MappedFile>], start: usize, check_crc: bool) -> i64 {
        let mut idx = start;
        loop {
            let f = &files[idx];
            let raw = f.raw_from(0);
            let mut pos = 0usize;
            let end_of_file = loop {
                match scan_record(&raw[pos..], check_crc) {
                    Scan::Message(r) => {
                        if r.physical_offset
                            != f.file_from_offset() + i64::try_from(pos).unwrap_or(0)
                        {
                            self.report_cut(
                                f,
                                pos,
                                "physical offset field does not match the position",
                            );
                            break false;
                        }
                        pos += r.total_size;
                    }
                    Scan::Blank => break true,
                    Scan::Invalid(reason) => {
                        if raw[pos..].iter().take(64).any(|&b| b != 0) {
                            self.report_cut(f, pos, &reason.to_string());
                        }
                        break false;
                    }
                }
            };
            if end_of_file && idx + 1 < files.len() {
                idx += 1;
                continue;
            }
            let pos = if end_of_file { f.file_size() } else { pos };
            return f.file_from_offset() + i64::try_from(pos).unwrap_or(0);
        }
    }

    fn report_cut(&self, f: &MappedFile, pos: usize, reason: &str) {
        eprintln!(
            "rmq-store WARN: recovery stops at {} offset {pos}: {reason}; the bytes after it were \
             never acknowledged as durable (or are damaged) and are cut",
            f.path().display()
        );
    }

    fn start_services(self: &Arc<Self>) -> Result<()> {
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .ctx(|| format!("starting thread {name}"))
        };
        if let Some(gc) = &self.group_commit {
            let (s, gc) = (Arc::clone(self), Arc::clone(gc));
            threads.push(spawn(
                "rmq-group-commit",
                Box::new(move || gc.run(s.commit_log.queue(), &s.checkpoint)),
            )?);
        } else {
            let s = Arc::clone(self);
            let c = AsyncFlushConfig {
                interval_ms: u64::from(s.config.flush_interval_commit_log),
                least_pages: s.config.flush_commit_log_least_pages as usize,
                thorough_interval_ms: u64::from(s.config.flush_commit_log_thorough_interval),
                timed: s.config.flush_commit_log_timed,
            };
            threads.push(spawn(
                "rmq-flush-commitlog",
                Box::new(move || {
                    run_async_flush(s.commit_log.queue(), &s.checkpoint, &s.flush_waker, c)
                }),
            )?);
        }
        if self.pool.is_some() {
            let s = Arc::clone(self);
            threads.push(spawn(
                "rmq-commit-commitlog",
                Box::new(move || {
                    run_commit(
                        s.commit_log.queue(),
                        &s.commit_waker,
                        &s.flush_waker,
                        u64::from(s.config.commit_interval_commit_log),
                        s.config.commit_commit_log_least_pages as usize,
                        u64::from(s.config.commit_commit_log_thorough_interval),
                    );
                }),
            )?);
        }
        let s = Arc::clone(self);
        threads.push(spawn(
            "rmq-reput",
            Box::new(move || {
                // RocketMQ's ReputMessageService cadence: a pass, then 1 ms. Under load a pass
                // dispatches everything appended meanwhile in one go.
                while !s.reput_waker.is_stopped() {
                    if !s.do_reput() {
                        s.reput_waker.wait(Duration::from_millis(1));
                    }
                }
            }),
        )?);
        let s = Arc::clone(self);
        threads.push(spawn(
            "rmq-flush-consumequeue",
            Box::new(move || s.run_flush_consume_queue()),
        )?);
        let s = Arc::clone(self);
        threads.push(spawn(
            "rmq-clean",
            Box::new(move || {
                while !s.clean_waker.is_stopped() {
                    s.check_disk_space();
                    s.clean_waker.wait(Duration::from_millis(u64::from(
                        s.config.clean_resource_interval,
                    )));
                }
            }),
        )?);
        Ok(())
    }

    fn run_flush_consume_queue(&self) {
        let mut last_thorough = std::time::Instant::now();
        loop {
            let stopped = self.cq_flush_waker.is_stopped();
            let mut least = self.config.flush_consume_queue_least_pages as usize;
            if stopped
                || last_thorough.elapsed()
                    >= Duration::from_millis(u64::from(
                        self.config.flush_consume_queue_thorough_interval,
                    ))
            {
                last_thorough = std::time::Instant::now();
                least = 0;
            }
            if let Err(e) = self.flush_logics(least) {
                eprintln!("rmq-store ERROR: {e}; will retry");
            }
            if stopped {
                return;
            }
            self.cq_flush_waker.wait(Duration::from_millis(u64::from(
                self.config.flush_interval_consume_queue,
            )));
        }
    }

    /// Flush ConsumeQueues and the index, then record and persist the checkpoint.
    fn flush_logics(&self, least_pages: usize) -> Result<()> {
        // Dispatch time of what the ConsumeQueues hold now, read before flushing them.
        let logics_ts = self.dispatched_store_timestamp();
        for cq in self.all_consume_queues() {
            cq.flush(least_pages)?;
        }
        if least_pages == 0 && self.config.message_index_enable {
            let ts = self.index.flush()?;
            self.checkpoint.set_index_msg_timestamp(ts);
        }
        if logics_ts > 0 {
            self.checkpoint.set_logics_msg_timestamp(logics_ts);
        }
        self.checkpoint.flush()
    }

    /// Store time of the last record dispatched (0 when none).
    fn dispatched_store_timestamp(&self) -> i64 {
        self.last_dispatched_store_ts.load(Ordering::Acquire)
    }

    /// One dispatch pass over what the CommitLog holds past the dispatch position. Returns
    /// true when it made progress.
    fn do_reput(&self) -> bool {
        let mut reput = self.reput_from_offset.load(Ordering::Acquire);
        let min = self.commit_log.min_offset();
        if reput < min {
            reput = min;
        }
        let start = reput;
        let mut cache = self
            .dispatch_cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while reput < self.commit_log.max_offset() {
            let Some(data) = self.commit_log.get_data(reput) else {
                break;
            };
            let bytes = data.bytes();
            let mut pos = 0;
            let mut blocked = false;
            while pos < bytes.len() {
                match scan_record(&bytes[pos..], false) {
                    Scan::Message(r) => {
                        if let Err(e) = self.dispatch(&r, &mut cache) {
                            // Keep the record undispatched and retry later, so it is not
                            // skipped (e.g. a ConsumeQueue file could not be created).
                            self.report_dispatch_error(&e);
                            blocked = true;
                            break;
                        }
                        pos += r.total_size;
                        reput += i64::try_from(r.total_size).unwrap_or(0);
                    }
                    Scan::Blank => {
                        reput = self.commit_log.roll_next_file(reput);
                        break;
                    }
                    Scan::Invalid(reason) => {
                        // Published bytes are whole records; this is a bug or damage. Skip
                        // to the next file rather than spin.
                        eprintln!("rmq-store ERROR: dispatch found an invalid record at {reput}: {reason}");
                        reput = self.commit_log.roll_next_file(reput);
                        break;
                    }
                }
            }
            if blocked {
                self.reput_from_offset.store(reput, Ordering::Release);
                drop(cache);
                std::thread::sleep(Duration::from_millis(100));
                return reput != start;
            }
            self.reput_from_offset.store(reput, Ordering::Release);
        }
        self.reput_from_offset.store(reput, Ordering::Release);
        reput != start
    }

    fn cached_consume_queue(
        &self,
        cache: &mut rmq_common::fx::FxHashMap<String, Vec<Option<Arc<ConsumeQueue>>>>,
        topic: &str,
        queue_id: i32,
    ) -> Result<Arc<ConsumeQueue>> {
        let qid = usize::try_from(queue_id).unwrap_or(0);
        if let Some(Some(cq)) = cache.get(topic).and_then(|v| v.get(qid)) {
            return Ok(Arc::clone(cq));
        }
        let cq = self.find_consume_queue(topic, queue_id)?;
        let v = cache.entry(topic.to_owned()).or_default();
        if v.len() <= qid {
            v.resize(qid + 1, None);
        }
        v[qid] = Some(Arc::clone(&cq));
        Ok(cq)
    }

    fn report_dispatch_error(&self, e: &StoreError) {
        let now = now_millis();
        let last = self.last_dispatch_error_log.load(Ordering::Relaxed);
        if now - last >= 5_000 {
            self.last_dispatch_error_log.store(now, Ordering::Relaxed);
            eprintln!(
                "rmq-store ERROR: dispatch is blocked ({e}); stored messages past offset {} stay \
                 invisible to consumers until this is fixed (retrying)",
                self.reput_from_offset.load(Ordering::Relaxed)
            );
        }
    }

    fn dispatch(
        &self,
        r: &DecodedRecord<'_>,
        cache: &mut rmq_common::fx::FxHashMap<String, Vec<Option<Arc<ConsumeQueue>>>>,
    ) -> Result<()> {
        let req = DispatchRequest::from_record(r, &self.delay_levels_ms);
        self.last_dispatched_store_ts
            .fetch_max(req.store_timestamp, Ordering::AcqRel);
        if req.is_queued() {
            let cq = self.cached_consume_queue(cache, req.topic, req.queue_id);
            let unit = CqUnit {
                offset: req.commit_log_offset,
                size: req.msg_size,
                tags_code: req.tags_code,
            };
            cq?.put_message_position_info(unit, req.consume_queue_offset)?;
        }
        if self.config.message_index_enable && (req.keys.is_some() || req.uniq_key.is_some()) {
            let ireq = IndexRequest {
                topic: req.topic,
                keys: req.keys,
                uniq_key: req.uniq_key,
                commit_log_offset: req.commit_log_offset,
                store_timestamp: req.store_timestamp,
                sys_flag: req.sys_flag,
            };
            if let Err(e) = self.index.build_index(&ireq) {
                eprintln!("rmq-store ERROR: building index: {e}");
            }
        }
        if req.is_queued() {
            let listener = self
                .listener
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(l) = listener {
                l(
                    req.topic,
                    req.queue_id,
                    req.consume_queue_offset + 1,
                    req.tags_code,
                    req.store_timestamp,
                );
            }
        }
        Ok(())
    }

    fn find_consume_queue(&self, topic: &str, queue_id: i32) -> Result<Arc<ConsumeQueue>> {
        if let Some(cq) = self.get_consume_queue(topic, queue_id) {
            return Ok(cq);
        }
        let mut t = self
            .consume_queues
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(cq) = t.get(topic).and_then(|m| m.get(&queue_id)) {
            return Ok(Arc::clone(cq));
        }
        let cq = Arc::new(ConsumeQueue::new(
            &self.root.join("consumequeue"),
            topic,
            queue_id,
            self.config.mapped_file_size_consume_queue,
        )?);
        t.entry(topic.to_owned())
            .or_default()
            .insert(queue_id, Arc::clone(&cq));
        Ok(cq)
    }

    /// The ConsumeQueue of `(topic, queue_id)`, if it exists.
    #[must_use]
    pub fn get_consume_queue(&self, topic: &str, queue_id: i32) -> Option<Arc<ConsumeQueue>> {
        self.consume_queues
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(topic)
            .and_then(|m| m.get(&queue_id))
            .cloned()
    }

    /// Register the hook that wakes held pulls when messages are dispatched.
    pub fn set_message_arriving_listener(&self, l: Arc<MessageArrivingListener>) {
        *self
            .listener
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(l);
    }

    fn check_writable(&self) -> Result<()> {
        if self.shutdown.load(Ordering::Acquire) {
            return Err(StoreError::ServiceNotAvailable(
                "the message store is shut down".into(),
            ));
        }
        if self.config.broker_role == BrokerRole::Slave {
            return Err(StoreError::ServiceNotAvailable(
                "this broker is a slave (brokerRole=SLAVE); send to its master".into(),
            ));
        }
        if self.disk_full.load(Ordering::Acquire) {
            return Err(StoreError::ServiceNotAvailable(format!(
                "disk full: the partition of {} is over diskSpaceWarningLevelRatio ({} %); writes \
                 resume once space is freed (delete files or raise fileReservedTime pressure)",
                self.commit_log.queue().dir().display(),
                self.config.disk_space_warning_level_ratio
            )));
        }
        let held = self.commit_log.lock_time_millis();
        if held > i64::from(self.config.os_page_cache_busy_timeout_mills) && held < 10_000_000 {
            return Err(StoreError::OsPageCacheBusy(held));
        }
        if self.config.fast_fail_if_no_buffer_in_store_pool {
            if let Some(p) = &self.pool {
                if p.available_buffer_nums() == 0 {
                    return Err(StoreError::NoBufferInStorePool);
                }
            }
        }
        Ok(())
    }

    /// Store one message. Under SYNC_FLUSH it returns when the bytes are durable.
    ///
    /// Every put path parks a message whose `DELAY` property names a level (see
    /// [`schedule`](crate::schedule)): it is stored in `SCHEDULE_TOPIC_XXXX` and the result
    /// describes that record.
    ///
    /// # Errors
    /// Illegal messages, refused writes (disk full, shut down, slave), I/O failures, and a
    /// failed flush — never a success for bytes that are not stored as promised.
    pub fn put_message(&self, msg: &MessageToStore<'_>) -> Result<PutMessageResult> {
        let append = self.append_one(msg)?;
        let status = self.wait_durable(append.end_offset())?;
        Ok(PutMessageResult { status, append })
    }

    /// Append one message without waiting for durability (the single-message form of
    /// [`append`](Self::append), without its per-batch vectors).
    ///
    /// # Errors
    /// As [`append`](Self::append).
    pub fn append_one(&self, msg: &MessageToStore<'_>) -> Result<AppendResult> {
        self.check_writable()?;
        let parked = self.park(msg)?;
        let rerouted;
        let msg = match &parked {
            Some(p) => {
                rerouted = p.apply(msg);
                &rerouted
            }
            None => msg,
        };
        let len = self.commit_log.validate(msg)?;
        let crc = rmq_common::body_crc(msg.body);
        let append = self.commit_log.put_message(msg, len, crc, now_millis())?;
        self.after_append(1, len);
        Ok(append)
    }

    /// Store several messages under one hold of the put lock (a batch).
    ///
    /// # Errors
    /// As [`put_message`](Self::put_message).
    pub fn put_messages(&self, msgs: &[MessageToStore<'_>]) -> Result<Vec<PutMessageResult>> {
        let results = self.append(msgs)?;
        let status = self.wait_durable(results.last().map_or(0, AppendResult::end_offset))?;
        Ok(results
            .into_iter()
            .map(|append| PutMessageResult { status, append })
            .collect())
    }

    /// Append without waiting for durability: the first half of a put, for callers that
    /// wait elsewhere (see [`wait_durable`](Self::wait_durable)).
    ///
    /// # Errors
    /// As [`put_message`](Self::put_message), flush failures excepted.
    pub fn append(&self, msgs: &[MessageToStore<'_>]) -> Result<Vec<AppendResult>> {
        self.check_writable()?;
        let parked = msgs
            .iter()
            .map(|m| self.park(m))
            .collect::<Result<Vec<_>>>()?;
        let rerouted: Vec<MessageToStore<'_>>;
        let msgs = if parked.iter().any(Option::is_some) {
            rerouted = msgs
                .iter()
                .zip(&parked)
                .map(|(m, p)| p.as_ref().map_or_else(|| m.clone(), |p| p.apply(m)))
                .collect();
            &rerouted[..]
        } else {
            msgs
        };
        let mut lens = Vec::with_capacity(msgs.len());
        let mut crcs = Vec::with_capacity(msgs.len());
        for m in msgs {
            lens.push(self.commit_log.validate(m)?);
            crcs.push(rmq_common::body_crc(m.body));
        }
        let results = self
            .commit_log
            .put_messages(msgs, &lens, &crcs, now_millis())?;
        self.after_append(msgs.len(), lens.iter().sum());
        Ok(results)
    }

    /// Where a message waits before delivery, if it does: its delay level's queue, else the
    /// timer wheel's topic.
    fn park(&self, msg: &MessageToStore<'_>) -> Result<Option<schedule::Parked>> {
        match schedule::park(msg, &self.delay_levels_ms)? {
            Some(p) => Ok(Some(p)),
            None => crate::timer::park(msg, &self.timer, now_millis()),
        }
    }

    fn after_append(&self, count: usize, bytes: usize) {
        self.put_times.fetch_add(count as u64, Ordering::Relaxed);
        self.put_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        // No wake-up of the dispatch thread here: it polls (as RocketMQ's reput thread
        // does), so a busy put path never pays a system call per message for it.
    }

    /// The second half of a put: under SYNC_FLUSH wait until `end_offset` is durable; under
    /// ASYNC_FLUSH nudge the flush (or commit) thread.
    ///
    /// # Errors
    /// A failed flush, or a shutdown while waiting.
    pub fn wait_durable(&self, end_offset: i64) -> Result<PutMessageStatus> {
        match &self.group_commit {
            Some(gc) => {
                let timeout = Duration::from_millis(u64::from(self.config.sync_flush_timeout));
                Ok(match gc.wait_for(end_offset, timeout)? {
                    FlushOutcome::Flushed => PutMessageStatus::PutOk,
                    FlushOutcome::Timeout => PutMessageStatus::FlushDiskTimeout,
                })
            }
            None => {
                // The async flush runs on its interval (flushIntervalCommitLog, as SPEC §3
                // describes it) and is not woken by puts, which would turn it into many small
                // syncs just behind the appender. The pool's commit thread is woken once
                // `least` pages wait, so committed (readable) data follows appends closely.
                if self.pool.is_some() {
                    let q = self.commit_log.queue();
                    let least = i64::from(self.config.commit_commit_log_least_pages) * 4096;
                    if end_offset - q.committed_where() >= least {
                        self.commit_waker.wake();
                    }
                }
                Ok(PutMessageStatus::PutOk)
            }
        }
    }

    /// The async second half of a put: resolves once `end_offset` is durable (at once under
    /// ASYNC_FLUSH, after nudging the flush thread). Apply `syncFlushTimeout` around it.
    #[must_use]
    pub fn flush_future(&self, end_offset: i64) -> crate::flush::FlushFuture {
        if self.group_commit.is_none() {
            // Same nudge as the blocking path; it cannot fail under ASYNC_FLUSH.
            let _ = self.wait_durable(end_offset);
        }
        crate::flush::FlushFuture::new(self.group_commit.clone(), end_offset)
    }

    /// Read up to `max_msg_nums` messages of `(topic, queue_id)` from queue offset `offset`
    /// (RocketMQ's `getMessage`), keeping those whose tags code `filter` accepts.
    pub fn get_message(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_msg_nums: usize,
        filter: Option<&dyn Fn(i64) -> bool>,
    ) -> GetMessageResult {
        use GetMessageStatus as S;
        let Some(cq) = self.get_consume_queue(topic, queue_id) else {
            return GetMessageResult::empty(S::NoMatchedLogicQueue, 0, 0, 0);
        };
        let (min, max) = (cq.min_offset_in_queue(), cq.max_offset_in_queue());
        if max == 0 {
            return GetMessageResult::empty(S::NoMessageInQueue, 0, min, max);
        }
        if offset < min {
            return GetMessageResult::empty(S::OffsetTooSmall, min, min, max);
        }
        if offset == max {
            return GetMessageResult::empty(S::OffsetOverflowOne, offset, min, max);
        }
        if offset > max {
            let next = if min == 0 { min } else { max };
            return GetMessageResult::empty(S::OffsetOverflowBadly, next, min, max);
        }
        let Some((file, pos)) = cq.units_from(offset) else {
            let unit = i64::try_from(CQ_STORE_UNIT_SIZE).unwrap_or(20);
            let next = cq.queue().roll_next_file(offset * unit) / unit;
            return GetMessageResult::empty(S::OffsetFoundNull, next, min, max);
        };
        let units = file.read_from(pos).unwrap_or(&[]);
        let max_phy = self.commit_log.max_offset();
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let memory = (self.memory_bytes as f64
            * f64::from(self.config.access_message_in_memory_max_ratio)
            / 100.0) as i64;
        let max_filter_bytes = (max_msg_nums * CQ_STORE_UNIT_SIZE).max(16_000);
        let mut res = GetMessageResult::empty(S::NoMatchedMessage, offset, min, max);
        let mut next_phy_file_start = i64::MIN;
        let mut max_phy_pulling = 0;
        let mut i = 0;
        while i + CQ_STORE_UNIT_SIZE <= units.len() && i < max_filter_bytes {
            let Some(u) = CqUnit::decode(&units[i..]) else {
                break;
            };
            i += CQ_STORE_UNIT_SIZE;
            max_phy_pulling = u.offset;
            if next_phy_file_start != i64::MIN && u.offset < next_phy_file_start {
                continue;
            }
            let in_disk = max_phy - u.offset > memory;
            let size = usize::try_from(u.size).unwrap_or(0);
            if self.is_batch_full(
                size,
                max_msg_nums,
                res.buffer_total_size,
                res.messages.len(),
                in_disk,
            ) {
                i -= CQ_STORE_UNIT_SIZE;
                break;
            }
            if let Some(f) = filter {
                if !f(u.tags_code) {
                    continue;
                }
            }
            match self.commit_log.get_message(u.offset, size) {
                Some(sel) => {
                    res.buffer_total_size += sel.len();
                    res.messages.push(sel);
                    res.status = S::Found;
                    next_phy_file_start = i64::MIN;
                }
                None => {
                    if res.messages.is_empty() {
                        res.status = S::MessageWasRemoving;
                    }
                    next_phy_file_start = self.commit_log.roll_next_file(u.offset);
                }
            }
        }
        res.next_begin_offset = offset + i64::try_from(i / CQ_STORE_UNIT_SIZE).unwrap_or(0);
        res.suggest_pulling_from_slave = max_phy - max_phy_pulling > memory;
        res
    }

    fn is_batch_full(
        &self,
        size: usize,
        max_msg_nums: usize,
        total: usize,
        count: usize,
        in_disk: bool,
    ) -> bool {
        if total == 0 || count == 0 {
            return false;
        }
        if count >= max_msg_nums {
            return true;
        }
        let c = &self.config;
        if in_disk {
            total + size > c.max_transfer_bytes_on_message_in_disk
                || count >= c.max_transfer_count_on_message_in_disk
        } else {
            total + size > c.max_transfer_bytes_on_message_in_memory
                || count >= c.max_transfer_count_on_message_in_memory
        }
    }

    /// The record at CommitLog offset `phy_offset`.
    #[must_use]
    pub fn look_message_by_offset(&self, phy_offset: i64) -> Option<SelectMappedBufferResult> {
        let head = self.commit_log.get_message(phy_offset, 4)?;
        let size = usize::try_from(i32::from_be_bytes(head.bytes().try_into().ok()?)).ok()?;
        if size < 8 {
            return None;
        }
        let sel = self.commit_log.get_message(phy_offset, size)?;
        matches!(scan_record(sel.bytes(), false), Scan::Message(_)).then_some(sel)
    }

    /// Up to `max_count` ConsumeQueue units of `(topic, queue_id)` from queue offset `offset`
    /// on (fewer at the end of the queue; none when `offset` is outside
    /// `[min_offset, max_offset)`, which the result reports so the caller can correct it).
    #[must_use]
    pub fn get_consume_queue_units(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
        max_count: usize,
    ) -> ConsumeQueueUnits {
        let mut out = ConsumeQueueUnits::default();
        let Some(cq) = self.get_consume_queue(topic, queue_id) else {
            return out;
        };
        out.min_offset = cq.min_offset_in_queue();
        out.max_offset = cq.max_offset_in_queue();
        if offset < out.min_offset {
            return out;
        }
        let mut at = offset;
        while out.units.len() < max_count && at < out.max_offset {
            let Some((file, pos)) = cq.units_from(at) else {
                break;
            };
            let Some(bytes) = file.read_from(pos) else {
                break;
            };
            let before = out.units.len();
            for chunk in bytes.chunks_exact(CQ_STORE_UNIT_SIZE) {
                if out.units.len() >= max_count {
                    break;
                }
                match CqUnit::decode(chunk) {
                    Some(u) => out.units.push(u),
                    None => break,
                }
            }
            let read = out.units.len() - before;
            if read == 0 {
                break;
            }
            at += i64::try_from(read).unwrap_or(i64::MAX);
        }
        out
    }

    /// The delay level table in milliseconds (`messageDelayLevel`; level 1 is index 0), as
    /// dispatch uses it to compute delivery times.
    #[must_use]
    pub fn delay_levels_ms(&self) -> &[i64] {
        &self.delay_levels_ms
    }

    /// Messages of `topic` whose KEYS contain `key` (or whose UNIQ_KEY is `key`), stored within
    /// `[begin, end]`, newest first, at most `max_num`.
    #[must_use]
    pub fn query_message(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> Vec<SelectMappedBufferResult> {
        use rmq_common::properties::{find_property, PropertyKey};
        let mut out: Vec<SelectMappedBufferResult> = Vec::new();
        for off in self
            .index
            .query_offsets(topic, key, max_num.saturating_mul(2), begin, end)
        {
            if out.len() >= max_num || out.iter().any(|s| s.start_offset() == off) {
                continue;
            }
            let Some(sel) = self.look_message_by_offset(off) else {
                continue;
            };
            let Scan::Message(r) = scan_record(sel.bytes(), false) else {
                continue;
            };
            let prop = |n| find_property(r.properties, n).and_then(|v| std::str::from_utf8(v).ok());
            let matches = r.topic == topic
                && (prop(PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX) == Some(key)
                    || prop(PropertyKey::KEYS).is_some_and(|ks| ks.split(' ').any(|k| k == key)));
            if matches {
                out.push(sel);
            }
        }
        out
    }

    /// First queue offset whose message was stored at or after `timestamp` (the max offset
    /// when none was).
    #[must_use]
    pub fn get_offset_in_queue_by_time(&self, topic: &str, queue_id: i32, timestamp: i64) -> i64 {
        let Some(cq) = self.get_consume_queue(topic, queue_id) else {
            return 0;
        };
        let (mut lo, mut hi) = (cq.min_offset_in_queue(), cq.max_offset_in_queue());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.store_timestamp_in(&cq, mid) {
                Some(ts) if ts < timestamp => lo = mid + 1,
                Some(_) => hi = mid,
                None => lo = mid + 1, // expired under us: look later
            }
        }
        lo
    }

    /// Store time (ms) of the message at queue offset `offset` of `(topic, queue_id)`
    /// (RocketMQ's `getMessageStoreTimeStamp`); `None` when there is no such message (never
    /// written, or already deleted).
    #[must_use]
    pub fn get_message_store_timestamp(
        &self,
        topic: &str,
        queue_id: i32,
        offset: i64,
    ) -> Option<i64> {
        let cq = self.get_consume_queue(topic, queue_id)?;
        self.store_timestamp_in(&cq, offset)
    }

    fn store_timestamp_in(&self, cq: &ConsumeQueue, offset: i64) -> Option<i64> {
        if offset < 0 || offset >= cq.max_offset_in_queue() {
            return None;
        }
        let u = cq.get_unit(offset)?;
        let sel = self
            .commit_log
            .get_message(u.offset, usize::try_from(u.size).ok()?)?;
        match scan_record(sel.bytes(), false) {
            Scan::Message(r) => Some(r.store_timestamp),
            _ => None,
        }
    }

    /// Smallest queue offset of `(topic, queue_id)`.
    #[must_use]
    pub fn get_min_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.get_consume_queue(topic, queue_id)
            .map_or(0, |cq| cq.min_offset_in_queue())
    }

    /// Next queue offset to be written in `(topic, queue_id)`.
    #[must_use]
    pub fn get_max_offset_in_queue(&self, topic: &str, queue_id: i32) -> i64 {
        self.get_consume_queue(topic, queue_id)
            .map_or(0, |cq| cq.max_offset_in_queue())
    }

    /// Oldest CommitLog offset still stored.
    #[must_use]
    pub fn get_min_phy_offset(&self) -> i64 {
        self.commit_log.min_offset()
    }

    /// End of the readable CommitLog.
    #[must_use]
    pub fn get_max_phy_offset(&self) -> i64 {
        self.commit_log.max_offset()
    }

    /// CommitLog offset below which everything is durable.
    #[must_use]
    pub fn get_flushed_phy_offset(&self) -> i64 {
        self.commit_log.queue().flushed_where()
    }

    /// CommitLog bytes not yet dispatched.
    #[must_use]
    pub fn dispatch_behind_bytes(&self) -> i64 {
        (self.commit_log.max_offset() - self.reput_from_offset.load(Ordering::Acquire)).max(0)
    }

    /// Flush everything now; returns the durable CommitLog offset.
    ///
    /// # Errors
    /// When a sync fails.
    pub fn flush(&self) -> Result<i64> {
        let q = self.commit_log.queue();
        for _ in 0..10 {
            if !q.commit(0) {
                break;
            }
        }
        q.flush_to(q.max_offset())?;
        let ts = q.store_timestamp();
        if ts > 0 {
            self.checkpoint.set_physic_msg_timestamp(ts);
        }
        self.flush_logics(0)?;
        Ok(q.flushed_where())
    }

    /// Delete CommitLog files older than `fileReservedTime` (any but the newest when
    /// `force`), then the ConsumeQueue and index files below the new minimum. Files still
    /// being read are kept until `destroyMapedFileIntervalForcibly`. Returns files deleted.
    pub fn delete_expired_files(&self, force: bool) -> usize {
        let c = &self.config;
        let n = self.commit_log.queue().delete_expired_by_time(
            now_millis(),
            i64::from(self.file_reserved_time()) * 3_600_000,
            u64::from(c.delete_commit_log_files_interval),
            i64::from(c.destroy_mapped_file_interval_forcibly),
            force,
        );
        if n > 0 {
            self.clean_logics();
        }
        n
    }

    /// Hours a CommitLog file is kept (`fileReservedTime`), as in effect now.
    #[must_use]
    pub fn file_reserved_time(&self) -> u32 {
        self.file_reserved_hours.load(Ordering::Relaxed)
    }

    /// Change `fileReservedTime` (hours) while running; the next
    /// [`delete_expired_files`](Self::delete_expired_files) uses it. The caller checks the
    /// value (the config's range).
    pub fn set_file_reserved_time(&self, hours: u32) {
        self.file_reserved_hours.store(hours, Ordering::Relaxed);
    }

    /// Drop the ConsumeQueues whose every unit points below the CommitLog's minimum offset
    /// (RocketMQ's `cleanExpiredConsumerQueue`, mqadmin `cleanExpiredCQ`): queues of topics
    /// whose messages retention has deleted entirely. The delay topic's queues are kept, and
    /// so are queues that never held a unit. The queue's next offset is forgotten too, so a
    /// later message starts it again at 0. Returns the `(topic, queue id)` removed.
    ///
    /// # Errors
    /// As [`clean_unused_topics`](Self::clean_unused_topics).
    pub fn clean_expired_consume_queues(&self) -> Result<Vec<(String, i32)>> {
        self.remove_consume_queues(|_, cq, min| {
            let last = cq.max_physic_offset();
            last != -1 && last < min
        })
    }

    /// Drop every ConsumeQueue of the topics for which `in_use` is false (RocketMQ's
    /// `cleanUnusedTopic`, mqadmin `cleanUnusedTopic`: the broker passes its topic table, so
    /// the queues of deleted topics go). The delay topic's queues are kept. Returns the
    /// `(topic, queue id)` removed.
    ///
    /// Puts wait meanwhile, and the clean-up first lets dispatch catch up (up to 3 s), so no
    /// unit is in flight to a queue being removed.
    ///
    /// # Errors
    /// Dispatch did not catch up in time (nothing was removed: try again), or a ConsumeQueue
    /// file could not be deleted.
    pub fn clean_unused_topics(&self, in_use: &dyn Fn(&str) -> bool) -> Result<Vec<(String, i32)>> {
        self.remove_consume_queues(|topic, _, _| !in_use(topic))
    }

    /// Remove the ConsumeQueues `(topic, queue, CommitLog min offset)` selects (never the
    /// delay topic's), their files and their next queue offsets, with puts stopped.
    fn remove_consume_queues(
        &self,
        select: impl Fn(&str, &ConsumeQueue, i64) -> bool,
    ) -> Result<Vec<(String, i32)>> {
        self.commit_log.with_puts_stopped(|queue_offsets| {
            for _ in 0..3000 {
                if self.dispatch_behind_bytes() == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            let behind = self.dispatch_behind_bytes();
            if behind > 0 {
                return Err(StoreError::ServiceNotAvailable(format!(
                    "dispatch is {behind} bytes behind the CommitLog; nothing was cleaned, try \
                     again in a moment"
                )));
            }
            let min = self.commit_log.min_offset();
            let mut cache = self
                .dispatch_cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let mut table = self
                .consume_queues
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            let mut removed = Vec::new();
            for (topic, queues) in table.iter_mut() {
                if topic == schedule::SCHEDULE_TOPIC {
                    continue;
                }
                queues.retain(|&queue_id, cq| {
                    let selected = select(topic, cq, min);
                    if selected {
                        removed.push((topic.clone(), queue_id, Arc::clone(cq)));
                    }
                    !selected
                });
            }
            table.retain(|_, queues| !queues.is_empty());
            drop(table);
            let mut names = Vec::with_capacity(removed.len());
            for (topic, queue_id, cq) in removed {
                cache.remove(&topic);
                if let (Some(next), Ok(i)) =
                    (queue_offsets.get_mut(&topic), usize::try_from(queue_id))
                {
                    if let Some(slot) = next.get_mut(i) {
                        *slot = 0;
                    }
                }
                cq.queue().destroy()?;
                let _ = std::fs::remove_dir(cq.queue().dir());
                if let Some(topic_dir) = cq.queue().dir().parent() {
                    let _ = std::fs::remove_dir(topic_dir); // only once it is empty
                }
                names.push((topic, queue_id));
            }
            names.sort();
            Ok(names)
        })
    }

    /// Store time (ms) of the oldest message in the CommitLog (RocketMQ's
    /// `getEarliestMessageTime`), -1 when it holds none.
    #[must_use]
    pub fn earliest_message_time(&self) -> i64 {
        self.look_message_by_offset(self.get_min_phy_offset())
            .and_then(|sel| match scan_record(sel.bytes(), false) {
                Scan::Message(r) => Some(r.store_timestamp),
                _ => None,
            })
            .unwrap_or(-1)
    }

    fn clean_logics(&self) {
        let min = self.commit_log.min_offset();
        for cq in self.all_consume_queues() {
            cq.delete_expired_file(min);
        }
        self.index.delete_expired_file(min);
    }

    /// Used fraction of the CommitLog's partition.
    #[must_use]
    pub fn disk_used_ratio(&self) -> f64 {
        crate::mmap::disk_used_ratio(self.commit_log.queue().dir()).unwrap_or(1.0)
    }

    /// The disk-full guard (RocketMQ's disk-full running flag): above
    /// `diskSpaceWarningLevelRatio` writes are refused until usage drops again. The store runs
    /// this every `cleanResourceInterval` ms; deciding *what to delete* to get below it is the
    /// retention scheduler's job (Python), through [`delete_expired_files`](Self::delete_expired_files).
    pub fn check_disk_space(&self) {
        let ratio = self.disk_used_ratio() * 100.0;
        let limit = f64::from(self.config.disk_space_warning_level_ratio);
        if ratio > limit {
            if !self.disk_full.swap(true, Ordering::AcqRel) {
                eprintln!(
                    "rmq-store ERROR: disk is {ratio:.1} % full (> diskSpaceWarningLevelRatio {limit} %): \
                     refusing writes until space is freed"
                );
            }
        } else if self.disk_full.swap(false, Ordering::AcqRel) {
            eprintln!("rmq-store INFO: disk is {ratio:.1} % full again: accepting writes");
        }
    }

    /// Whether puts are accepted now.
    #[must_use]
    pub fn is_writeable(&self) -> bool {
        self.check_writable().is_ok()
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
        let t = self
            .consume_queues
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let mut v: Vec<(String, Vec<i32>)> = t
            .iter()
            .map(|(k, m)| {
                let mut q: Vec<i32> = m.keys().copied().collect();
                q.sort_unstable();
                (k.clone(), q)
            })
            .collect();
        v.sort();
        v
    }

    /// Figures for `brokerStatus`-style reporting.
    #[must_use]
    pub fn runtime_info(&self) -> Vec<(&'static str, String)> {
        let mut info = vec![
            (
                "putMessageTimesTotal",
                self.put_times.load(Ordering::Relaxed).to_string(),
            ),
            (
                "putMessageSizeTotal",
                self.put_bytes.load(Ordering::Relaxed).to_string(),
            ),
            ("commitLogMinOffset", self.get_min_phy_offset().to_string()),
            ("commitLogMaxOffset", self.get_max_phy_offset().to_string()),
            (
                "commitLogFlushedOffset",
                self.get_flushed_phy_offset().to_string(),
            ),
            (
                "dispatchBehindBytes",
                self.dispatch_behind_bytes().to_string(),
            ),
            (
                "commitLogDiskRatio",
                format!("{:.4}", self.disk_used_ratio()),
            ),
            (
                "diskFull",
                self.disk_full.load(Ordering::Relaxed).to_string(),
            ),
            ("transientStorePoolActive", self.pool.is_some().to_string()),
            (
                "remainTransientStoreBufferNumbs",
                self.pool
                    .as_ref()
                    .map_or(0, |p| p.available_buffer_nums())
                    .to_string(),
            ),
            (
                "transientStorePoolLocked",
                self.pool
                    .as_ref()
                    .is_some_and(|p| p.is_locked())
                    .to_string(),
            ),
            ("lastExitOk", self.last_exit_ok.to_string()),
            (
                "pageCacheLockTimeMills",
                self.commit_log.lock_time_millis().to_string(),
            ),
            (
                "earliestMessageTimeStamp",
                self.earliest_message_time().to_string(),
            ),
            (
                "consumeQueueDiskRatio",
                format!(
                    "{:.4}",
                    crate::mmap::disk_used_ratio(&self.root.join("consumequeue"))
                        .or_else(|_| crate::mmap::disk_used_ratio(&self.root))
                        .unwrap_or(1.0)
                ),
            ),
            (
                "remainHowManyDataToFlush",
                human_readable_bytes(
                    (self.get_max_phy_offset() - self.get_flushed_phy_offset()).max(0),
                ),
            ),
            ("commitLogDirCapacity", self.dir_capacity()),
        ];
        if self.config.timer_wheel_enable {
            let queue_max = self.get_max_offset_in_queue(crate::timer::TIMER_TOPIC, 0);
            info.extend(self.timer_stats.runtime_info(now_millis(), queue_max));
        }
        info
    }

    /// What the timer thread publishes about itself.
    pub(crate) fn timer_stats(&self) -> &crate::timer::TimerStats {
        &self.timer_stats
    }

    /// `Total : 1.8 TiB, Free : 1.2 TiB.` for the store root (as RocketMQ's runtime info).
    fn dir_capacity(&self) -> String {
        match crate::mmap::disk_space(&self.root) {
            Ok(d) => format!(
                "Total : {}, Free : {}.",
                human_readable_bytes(i64::try_from(d.total).unwrap_or(i64::MAX)),
                human_readable_bytes(i64::try_from(d.available).unwrap_or(i64::MAX))
            ),
            Err(e) => format!("unknown ({e})"),
        }
    }

    /// Stop services, flush everything, write the checkpoint and remove the abort file.
    /// Idempotent.
    ///
    /// # Errors
    /// When the final flush fails (the abort file is then kept so the next start recovers).
    pub fn shutdown(&self) -> Result<()> {
        // The timer thread first: it finishes the second it is delivering while puts are
        // still accepted, and syncs its files.
        self.timer_waker.stop();
        let timer = self
            .timer_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = timer {
            let _ = t.join();
        }
        if self.shutdown.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // Let dispatch catch up so the ConsumeQueues are complete.
        for _ in 0..5000 {
            if self.dispatch_behind_bytes() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        self.reput_waker.stop();
        self.clean_waker.stop();
        self.commit_waker.stop();
        if let Some(gc) = &self.group_commit {
            gc.stop();
        }
        self.flush_waker.stop();
        self.cq_flush_waker.stop();
        let threads: Vec<_> = self
            .threads
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for t in threads {
            let _ = t.join();
        }
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

/// Bytes in binary units as RocketMQ's `MixAll.humanReadableByteCount(bytes, false)` writes
/// them: `512 B`, `1.5 KiB`, `3.0 GiB`.
#[must_use]
pub fn human_readable_bytes(bytes: i64) -> String {
    const UNIT: f64 = 1024.0;
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)]
    let b = bytes as f64;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let exp = ((b.ln() / UNIT.ln()) as usize).clamp(1, 6);
    let prefix = &"KMGTPE"[exp - 1..exp];
    #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
    let scaled = b / UNIT.powi(exp as i32);
    format!("{scaled:.1} {prefix}iB")
}
