//! The CommitLog: every message of every topic, appended to one [`MappedFileQueue`] in
//! RocketMQ's record layout. The put lock covers only what must be serial (store timestamp,
//! queue offset, the copy into the mapped tail); validation and the body CRC happen before
//! it, flushing after it. Files are sparse; an append first reserves its blocks, and a
//! reservation that would leave less than [`CommitLog::keep_free`] bytes of the partition
//! free is refused (the put fails with "disk full"), so the ConsumeQueues and the index of
//! what was stored still find room.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmq_common::fx::FxHashMap;
use rmq_common::sys_flag::{self, TRANSACTION_PREPARED_TYPE, TRANSACTION_ROLLBACK_TYPE};

use crate::consume_queue::QueueId;
use crate::damaged::DamagedRanges;
use crate::error::{Result, StoreError};
use crate::format::{
    calc_msg_length, encode_record, encode_record_around_body, MessageToStore, StoreFields,
    END_FILE_MIN_BLANK_LENGTH, MAX_PROPERTIES_LEN,
};
use crate::mapped_file::{MappedFile, SelectMappedBufferResult};
use crate::mapped_file_queue::MappedFileQueue;

/// Where and how one message was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendResult {
    /// CommitLog offset of the record.
    pub wrote_offset: i64,
    /// Record length.
    pub wrote_bytes: usize,
    /// Logical offset in its ConsumeQueue.
    pub queue_offset: i64,
    /// Store time (ms).
    pub store_timestamp: i64,
}

impl AppendResult {
    /// RocketMQ's offset message id for this record.
    #[must_use]
    pub fn msg_id(&self, store_host: SocketAddr) -> String {
        rmq_common::create_offset_msg_id(store_host, self.wrote_offset)
    }

    /// End of the record (what a SYNC_FLUSH put waits for).
    #[must_use]
    pub fn end_offset(&self) -> i64 {
        self.wrote_offset
            .saturating_add(i64::try_from(self.wrote_bytes).unwrap_or(i64::MAX))
    }
}

struct PutState {
    /// Next queue offset per topic, indexed by queue id.
    topic_queue_table: FxHashMap<String, Vec<i64>>,
    current: Option<Arc<MappedFile>>,
    last_store_timestamp: i64,
    /// Reused record buffer for files written with `pwrite` (SYNC_FLUSH).
    scratch: Vec<u8>,
}

impl PutState {
    /// The next queue offset of `topic`'s queue `queue_id` (0 for a queue never written).
    fn next_queue_offset(&self, topic: &str, queue_id: usize) -> i64 {
        self.topic_queue_table
            .get(topic)
            .and_then(|v| v.get(queue_id))
            .copied()
            .unwrap_or(0)
    }

    fn set_next_queue_offset(&mut self, topic: &str, queue_id: usize, next: i64) {
        let set = |v: &mut Vec<i64>| {
            if v.len() <= queue_id {
                v.resize(queue_id + 1, 0);
            }
            v[queue_id] = next;
        };
        if let Some(v) = self.topic_queue_table.get_mut(topic) {
            set(v);
            return;
        }
        let mut v = Vec::new();
        set(&mut v);
        self.topic_queue_table.insert(topic.to_owned(), v);
    }
}

/// The CommitLog.
pub struct CommitLog {
    queue: MappedFileQueue,
    put: Mutex<PutState>,
    /// When the put lock was taken (0 while free): the OS_PAGECACHE_BUSY check.
    begin_lock_timestamp: AtomicI64,
    store_host: SocketAddr,
    max_message_size: usize,
    /// Ranges recovery found damaged and skipped.
    damaged: DamagedRanges,
    keep_free: u64,
}

/// Free space a CommitLog reservation leaves on the partition: 1/32 of it (8 MiB of a
/// 256 MiB volume), at least 64 KiB and at most 1 GiB.
fn keep_free_for(total: u64) -> u64 {
    (total / 32).clamp(64 << 10, 1 << 30)
}

impl CommitLog {
    /// A CommitLog over `queue`.
    #[must_use]
    pub fn new(queue: MappedFileQueue, store_host: SocketAddr, max_message_size: usize) -> Self {
        let keep_free =
            crate::mmap::disk_space(queue.dir()).map_or(8 << 20, |d| keep_free_for(d.total));
        Self {
            queue,
            put: Mutex::new(PutState {
                topic_queue_table: FxHashMap::default(),
                current: None,
                last_store_timestamp: 0,
                scratch: Vec::new(),
            }),
            begin_lock_timestamp: AtomicI64::new(0),
            store_host,
            max_message_size,
            damaged: DamagedRanges::default(),
            keep_free,
        }
    }

    /// Bytes of the partition a CommitLog append leaves free for the ConsumeQueues, the index
    /// and config files: 1/32 of the partition, at least 64 KiB, at most 1 GiB.
    #[must_use]
    pub fn keep_free(&self) -> u64 {
        self.keep_free
    }

    /// Refuse an append that would need new blocks while the partition has less than
    /// [`keep_free`](Self::keep_free) plus one reservation step free; the append itself then
    /// reserves (and may still meet ENOSPC, refused the same way). First, have the allocator
    /// thread reserve ahead of the writer when it nears the reserved end, so the append path
    /// itself seldom calls `fallocate`.
    fn check_space(&self, file: &Arc<MappedFile>, end: usize) -> Result<()> {
        self.queue.reserve_ahead_of(file, end, self.keep_free);
        if file.is_reserved(end) {
            return Ok(());
        }
        let Ok(disk) = crate::mmap::disk_space(self.queue.dir()) else {
            return Ok(());
        };
        let need = file.reserve_step() as u64 + self.keep_free;
        if disk.available < need {
            return Err(StoreError::ServiceNotAvailable(format!(
                "disk full: {} MiB free on the partition of {}, and the CommitLog keeps {} MiB \
                 of it for the ConsumeQueues and the index; the message was not stored. Free \
                 space on that partition (delete other files, or let retention delete expired \
                 CommitLog files) and send again",
                disk.available >> 20,
                self.queue.dir().display(),
                self.keep_free >> 20
            )));
        }
        Ok(())
    }

    /// The files.
    #[must_use]
    pub fn queue(&self) -> &MappedFileQueue {
        &self.queue
    }

    /// The ranges recovery found damaged and skipped (see [`crate::damaged`]).
    #[must_use]
    pub fn damaged(&self) -> &DamagedRanges {
        &self.damaged
    }

    /// The broker address written into every record.
    #[must_use]
    pub fn store_host(&self) -> SocketAddr {
        self.store_host
    }

    /// Check a message before taking the lock; returns its record length.
    ///
    /// # Errors
    /// MessageIllegal / PropertiesSizeExceeded with the reason.
    pub fn validate(&self, msg: &MessageToStore<'_>) -> Result<usize> {
        if msg.topic.is_empty() {
            return Err(StoreError::MessageIllegal("the topic is empty".into()));
        }
        if msg.topic.len() > i16::MAX as usize {
            return Err(StoreError::MessageIllegal(format!(
                "topic is {} bytes, the limit is 32767",
                msg.topic.len()
            )));
        }
        if msg.properties.len() > MAX_PROPERTIES_LEN {
            return Err(StoreError::PropertiesSizeExceeded(msg.properties.len()));
        }
        // Readers decode PROPERTIES strictly (rmq_common::record): store only what they read.
        if let Err(e) = std::str::from_utf8(msg.properties) {
            return Err(StoreError::MessageIllegal(format!(
                "the properties are not UTF-8 (valid up to byte {}); encode them as UTF-8",
                e.valid_up_to()
            )));
        }
        if msg.queue_id < 0 || msg.queue_id > 65_535 {
            return Err(StoreError::MessageIllegal(format!(
                "queue id {} is outside 0..=65535",
                msg.queue_id
            )));
        }
        let len = calc_msg_length(
            msg.effective_sys_flag(&self.store_host),
            msg.body.len(),
            msg.topic.len(),
            msg.properties.len(),
        );
        if len > self.max_message_size {
            return Err(StoreError::MessageIllegal(format!(
                "message is {len} bytes stored (body {}), more than maxMessageSize {}",
                msg.body.len(),
                self.max_message_size
            )));
        }
        Ok(len)
    }

    /// How long the put lock has been held now (0 when free; the clock is read only when
    /// it is held, which a single writer never sees).
    #[must_use]
    pub fn lock_time_millis(&self) -> i64 {
        let begin = self.begin_lock_timestamp.load(Ordering::Relaxed);
        if begin > 0 {
            rmq_common::time::now_millis() - begin
        } else {
            0
        }
    }

    /// Append messages under one hold of the put lock. `lens` and `crcs` come from
    /// [`validate`](Self::validate) and [`rmq_common::body_crc`], computed outside the lock.
    ///
    /// # Errors
    /// When a new file cannot be created; messages appended before that stay stored and
    /// are returned by nobody, exactly like RocketMQ (the caller reports the failure).
    pub fn put_messages(
        &self,
        msgs: &[MessageToStore<'_>],
        lens: &[usize],
        crcs: &[i32],
        now: i64,
    ) -> Result<Vec<AppendResult>> {
        let mut st = self.put.lock().unwrap_or_else(PoisonError::into_inner);
        self.begin_lock_timestamp
            .store(now.max(1), Ordering::Relaxed);
        let res = self.put_locked(&mut st, msgs, lens, crcs, now);
        self.begin_lock_timestamp.store(0, Ordering::Relaxed);
        res
    }

    fn put_locked(
        &self,
        st: &mut PutState,
        msgs: &[MessageToStore<'_>],
        lens: &[usize],
        crcs: &[i32],
        now: i64,
    ) -> Result<Vec<AppendResult>> {
        let store_ts = now.max(st.last_store_timestamp);
        st.last_store_timestamp = store_ts;
        let mut out = Vec::with_capacity(msgs.len());
        // A batch is one topic and queue: its next queue offset is looked up once and
        // written back once (also when an append fails half way), not per message.
        let mut run: Option<(&str, usize, i64)> = None;
        let mut failed = None;
        for ((msg, &len), &crc) in msgs.iter().zip(lens).zip(crcs) {
            // `validate` refused ids outside 0..=65535; a caller that skipped it gets the
            // error here instead of writing into another queue's offsets.
            let queue = match QueueId::new(msg.queue_id) {
                Ok(q) => q.index(),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            let next = match &mut run {
                Some((topic, q, next)) if *topic == msg.topic && *q == queue => next,
                _ => {
                    if let Some((topic, q, next)) = run.take() {
                        st.set_next_queue_offset(topic, q, next);
                    }
                    let next = st.next_queue_offset(msg.topic, queue);
                    &mut run.insert((msg.topic, queue, next)).2
                }
            };
            match self.append_locked(st, msg, len, crc, store_ts, next) {
                Ok(r) => out.push(r),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some((topic, q, next)) = run {
            st.set_next_queue_offset(topic, q, next);
        }
        failed.map_or(Ok(out), Err)
    }

    /// Append one message (the common case, without the batch's vectors).
    ///
    /// # Errors
    /// As [`put_messages`](Self::put_messages).
    pub fn put_message(
        &self,
        msg: &MessageToStore<'_>,
        len: usize,
        crc: i32,
        now: i64,
    ) -> Result<AppendResult> {
        let mut st = self.put.lock().unwrap_or_else(PoisonError::into_inner);
        self.begin_lock_timestamp
            .store(now.max(1), Ordering::Relaxed);
        let store_ts = now.max(st.last_store_timestamp);
        st.last_store_timestamp = store_ts;
        let res = QueueId::new(msg.queue_id).and_then(|q| {
            let mut next = st.next_queue_offset(msg.topic, q.index());
            let res = self.append_locked(&mut st, msg, len, crc, store_ts, &mut next);
            if res.is_ok() {
                st.set_next_queue_offset(msg.topic, q.index(), next);
            }
            res
        });
        self.begin_lock_timestamp.store(0, Ordering::Relaxed);
        res
    }

    /// Append `msg` as the next record; `next_queue_offset` is its queue's next offset
    /// (the caller looks it up, validated, and stores it back), counted up when it is queued.
    fn append_locked(
        &self,
        st: &mut PutState,
        msg: &MessageToStore<'_>,
        len: usize,
        crc: i32,
        store_ts: i64,
        next_queue_offset: &mut i64,
    ) -> Result<AppendResult> {
        let mut file = match &st.current {
            Some(f) if !f.is_full() => Arc::clone(f),
            _ => self.roll(st)?,
        };
        if file.file_size() - file.wrote_position() < len + END_FILE_MIN_BLANK_LENGTH {
            // Pad the rest of the file with a BLANK record and go on in a new one.
            file.append_blank()?;
            file = self.roll(st)?;
            if file.file_size() < len + END_FILE_MIN_BLANK_LENGTH {
                return Err(StoreError::MessageIllegal(format!(
                    "message of {len} bytes does not fit a CommitLog file of {} bytes",
                    file.file_size()
                )));
            }
        }
        self.check_space(&file, file.wrote_position() + len)?;
        let mut scratch = std::mem::take(&mut st.scratch);
        let tx = sys_flag::transaction_value(msg.sys_flag);
        let queued = tx != TRANSACTION_PREPARED_TYPE && tx != TRANSACTION_ROLLBACK_TYPE;
        let queue_offset = if queued { *next_queue_offset } else { 0 };
        let wrote_offset = file.offset_of(file.wrote_position());
        let fields = StoreFields {
            queue_offset,
            physical_offset: wrote_offset,
            store_timestamp: store_ts,
            store_host: self.store_host,
            body_crc: crc,
            sys_flag: msg.effective_sys_flag(&self.store_host),
        };
        let written = file.append_record_around_body(
            len,
            &mut scratch,
            msg.body,
            |dst| encode_record_around_body(dst, msg, &fields),
            |dst| {
                encode_record(dst, msg, &fields);
            },
        );
        if written.is_ok() && queued {
            *next_queue_offset += 1;
        }
        st.scratch = scratch;
        written?;
        file.set_store_timestamp(store_ts);
        Ok(AppendResult {
            wrote_offset,
            wrote_bytes: len,
            queue_offset,
            store_timestamp: store_ts,
        })
    }

    fn roll(&self, st: &mut PutState) -> Result<Arc<MappedFile>> {
        let f = self.queue.last_mapped_file_for_append(0)?;
        st.current = Some(Arc::clone(&f));
        Ok(f)
    }

    /// A slave's append of replicated bytes (RocketMQ's `appendData`): `data` lands at
    /// `offset`, which must be where this CommitLog ends (or, when it has no file yet, a file
    /// boundary: the first file is created there). The master cuts its frames at file ends,
    /// so `data` never spans two files.
    ///
    /// # Errors
    /// [`StoreError::HaOffsetMismatch`] for an offset elsewhere or data crossing a file end
    /// (nothing is written), I/O errors otherwise.
    pub fn append_data(&self, offset: i64, data: &[u8]) -> Result<()> {
        let mut st = self.put.lock().unwrap_or_else(PoisonError::into_inner);
        let size = i64::try_from(self.queue.file_size()).unwrap_or(i64::MAX);
        let empty = self.queue.last_mapped_file().is_none();
        let max = self.queue.max_offset();
        let mismatch = |why: &str| StoreError::HaOffsetMismatch {
            offset,
            max,
            why: why.to_owned(),
        };
        if empty && offset % size != 0 {
            return Err(mismatch("an empty CommitLog starts at a file boundary"));
        }
        if !empty && offset != max {
            return Err(mismatch("data must continue where the CommitLog ends"));
        }
        let file = self.queue.last_mapped_file_for_append(offset)?;
        let pos = file.wrote_position();
        if file.offset_of(pos) != offset {
            return Err(mismatch("the file to append to ends elsewhere"));
        }
        if file.file_size() - pos < data.len() {
            return Err(mismatch("the data runs past the end of its CommitLog file"));
        }
        file.append_copy(data)?;
        st.current = Some(file);
        Ok(())
    }

    /// Readable bytes from `offset` to the end of its file's readable data.
    #[must_use]
    pub fn get_data(&self, offset: i64) -> Option<SelectMappedBufferResult> {
        let file = self.queue.find_mapped_file_by_offset(offset, offset == 0)?;
        let pos = usize::try_from(offset - file.file_from_offset()).ok()?;
        let read = file.read_position();
        if pos >= read {
            return None;
        }
        SelectMappedBufferResult::new(file, pos, read - pos)
    }

    /// The `size` bytes of one record at `offset`.
    #[must_use]
    pub fn get_message(&self, offset: i64, size: usize) -> Option<SelectMappedBufferResult> {
        self.get_message_in(offset, size, &mut None)
    }

    /// [`Self::get_message`] for a run of reads (a pull's records): `held` is the file the
    /// last read found, used again while it holds `offset` (a lookup takes the file list's
    /// lock and a count on the file), and replaced by the file a lookup finds otherwise.
    pub(crate) fn get_message_in(
        &self,
        offset: i64,
        size: usize,
        held: &mut Option<Arc<MappedFile>>,
    ) -> Option<SelectMappedBufferResult> {
        let covers = |f: &Arc<MappedFile>| {
            (f.file_from_offset()..f.offset_of(f.file_size())).contains(&offset)
        };
        let file = if let Some(f) = held.as_ref().filter(|f| covers(f)) {
            Arc::clone(f)
        } else {
            let f = self.queue.find_mapped_file_by_offset(offset, false)?;
            *held = Some(Arc::clone(&f));
            f
        };
        let pos = usize::try_from(offset - file.file_from_offset()).ok()?;
        SelectMappedBufferResult::new(file, pos, size)
    }

    /// Offset of the oldest byte still stored.
    #[must_use]
    pub fn min_offset(&self) -> i64 {
        self.queue.min_offset().max(0)
    }

    /// End of the readable data.
    #[must_use]
    pub fn max_offset(&self) -> i64 {
        self.queue.max_offset()
    }

    /// Start of the file after the one holding `offset`.
    #[must_use]
    pub fn roll_next_file(&self, offset: i64) -> i64 {
        self.queue.roll_next_file(offset)
    }

    /// Run `f` with the put lock held and the queue-offset table in hand: no message is
    /// appended meanwhile (the ConsumeQueue clean-up removes queues under it).
    pub fn with_puts_stopped<R>(&self, f: impl FnOnce(&mut FxHashMap<String, Vec<i64>>) -> R) -> R {
        let mut st = self.put.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut st.topic_queue_table)
    }

    /// Recovery: the next queue offset of each (topic, queue).
    pub fn set_topic_queue_table(&self, table: FxHashMap<String, Vec<i64>>) {
        let mut st = self.put.lock().unwrap_or_else(PoisonError::into_inner);
        st.topic_queue_table = table;
        st.current = self.queue.last_mapped_file();
    }
}
