//! An ordered directory of same-size [`MappedFile`]s addressed by a global offset: the
//! CommitLog is one, each ConsumeQueue is one. New CommitLog files are created by an
//! allocator thread one file ahead (sparse, or allocated and pre-faulted with
//! `warmMapedFileEnable`), so rolling over never waits for the disk on the put path. The
//! same thread reserves blocks ahead of the CommitLog's writer (in its file and in the head of
//! the next one), so an append seldom waits for `fallocate` either.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::{IoContext, Result, StoreError};
use crate::mapped_file::MappedFile;
use crate::transient_store_pool::TransientStorePool;

/// The regular files of `dir`, sorted by name (= by offset or time for store files).
///
/// # Errors
/// When the directory cannot be listed.
pub(crate) fn sorted_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .ctx(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    Ok(paths)
}

/// At most this many files are deleted by one expiry pass.
pub const DELETE_FILES_BATCH_MAX: usize = 10;

/// A file [`MappedFileQueue::delete_oldest_while`] deleted, and the offsets it covered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedFile {
    /// Its path.
    pub path: PathBuf,
    /// Offset of its first byte.
    pub from: i64,
    /// Offset one past its last byte (the next file's start).
    pub to: i64,
}

/// [`MappedFileQueue::drop_cached_below`] waits until this much more can go: each step costs
/// two system calls a file, and dropping a few pages at a time would gain nothing.
const DROP_STEP: i64 = 2 << 20;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Files and the global flush/commit positions.
pub struct MappedFileQueue {
    dir: PathBuf,
    file_size: usize,
    files: RwLock<Vec<Arc<MappedFile>>>,
    flushed_where: AtomicI64,
    committed_where: AtomicI64,
    /// Cached pages below this were given back to the kernel ([`Self::drop_cached_below`]).
    dropped_where: AtomicI64,
    store_timestamp: AtomicI64,
    pool: Option<Arc<TransientStorePool>>,
    window: Option<Arc<crate::append_window::AppendWindow>>,
    allocator: Option<Allocator>,
    for_sync_flush: bool,
    /// `load` extends a file shorter than `file_size` instead of refusing it.
    extend_short_files: bool,
}

impl MappedFileQueue {
    /// A queue over `dir` (created if missing); no files are loaded yet.
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>, file_size: usize) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        Ok(Self {
            dir,
            file_size,
            files: RwLock::new(Vec::new()),
            flushed_where: AtomicI64::new(0),
            committed_where: AtomicI64::new(0),
            dropped_where: AtomicI64::new(0),
            store_timestamp: AtomicI64::new(0),
            pool: None,
            window: None,
            allocator: None,
            for_sync_flush: false,
            extend_short_files: false,
        })
    }

    /// Route new files' writes through `pool` buffers.
    #[must_use]
    pub fn with_pool(mut self, pool: Arc<TransientStorePool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Append new files through `window` (see `append_window`), and the last one once
    /// recovery has found its end ([`attach_window_to_last`](Self::attach_window_to_last)).
    #[must_use]
    pub fn with_window(mut self, window: Arc<crate::append_window::AppendWindow>) -> Self {
        self.window = Some(window);
        self
    }

    /// Append the rest of the last file through the window (after recovery).
    pub fn attach_window_to_last(&self) {
        if let (Some(w), Some(last)) = (&self.window, self.last_mapped_file()) {
            if !last.is_full() {
                last.attach_window(Arc::clone(w));
            }
        }
    }

    /// Whether files are appended through an append window.
    #[must_use]
    pub fn has_window(&self) -> bool {
        self.window.is_some()
    }

    /// The window's step (see `MappedFile::commit_window`) for the last file and every
    /// file that still holds segments (files filled faster than the step runs).
    pub fn commit_window(&self) {
        if self.window.is_none() {
            return;
        }
        for f in self.windowed_files() {
            f.commit_window();
        }
    }

    /// The last file and every file holding segments of the window, oldest first.
    fn windowed_files(&self) -> Vec<Arc<MappedFile>> {
        let files = self.files.read().unwrap_or_else(PoisonError::into_inner);
        let last = files.len().saturating_sub(1);
        (files.iter().enumerate())
            .filter(|&(i, f)| i == last || f.holds_window_segments())
            .map(|(_, f)| Arc::clone(f))
            .collect()
    }

    /// Lay new files out for SYNC_FLUSH (see `MappedFile::create_with`); set before `load`.
    #[must_use]
    pub fn with_sync_flush_layout(mut self, for_sync_flush: bool) -> Self {
        self.for_sync_flush = for_sync_flush;
        self
    }

    /// Have `load` extend a file shorter than the configured size (with a warning) and serve
    /// what it holds. For the CommitLog, whose recovery finds where records end; a short
    /// ConsumeQueue or timer log file is still refused, as its recovery would cut the queue
    /// there and drop the files after it.
    #[must_use]
    pub fn with_short_files_extended(mut self) -> Self {
        self.extend_short_files = true;
        self
    }

    /// Create files one ahead on a background thread; allocated and pre-faulted when `warm`,
    /// sparse otherwise.
    #[must_use]
    pub fn with_allocator(mut self, warm: bool) -> Self {
        self.allocator = Some(Allocator::start(
            self.dir.clone(),
            self.file_size,
            warm,
            self.for_sync_flush,
        ));
        self
    }

    /// Directory of the files.
    #[must_use]
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Size of every file.
    #[must_use]
    pub fn file_size(&self) -> usize {
        self.file_size
    }

    /// Open every file in the directory, in offset order, all positions at their end.
    ///
    /// # Errors
    /// A file of the wrong size (a shorter one is extended when so configured, see
    /// `fit_size`) or with a bad name stops the load with a message naming it.
    pub fn load(&self) -> Result<()> {
        let paths = sorted_files(&self.dir)?;
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        for p in paths {
            let len = std::fs::metadata(&p)
                .ctx(|| format!("reading the size of {}", p.display()))?
                .len();
            if len == 0 {
                // Created but never allocated (a crash or a full disk at creation): no data.
                log::warn!("removing empty file {}", p.display());
                std::fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
                continue;
            }
            self.fit_size(&p, len)?;
            let f = MappedFile::open(&p, self.file_size)?;
            f.set_write_through_file(self.for_sync_flush);
            files.push(Arc::new(f));
        }
        Ok(())
    }

    /// With [`with_short_files_extended`](Self::with_short_files_extended), a file shorter
    /// than the configured size (copied without its zero tail, or cut by a crash or a tool)
    /// is extended with a hole to that size and served: recovery then finds where its records
    /// end. A longer one cannot be ours at this size: an error says what to do.
    fn fit_size(&self, p: &Path, len: u64) -> Result<()> {
        let want = self.file_size as u64;
        if len > want {
            return Err(StoreError::Corruption {
                file: p.to_owned(),
                offset: want,
                reason: format!(
                    "the file is {len} bytes, longer than the configured file size {want} \
                     (mappedFileSizeCommitLog / mappedFileSizeConsumeQueue): set the key back \
                     to the size the store was written with, or move the store away"
                ),
            });
        }
        if len < want && self.extend_short_files {
            log::warn!(
                "store file {} is {len} bytes, shorter than the configured {want}: extending \
                 it to {want} bytes (the added bytes read as zeroes) and serving the records \
                 it holds",
                p.display()
            );
            std::fs::OpenOptions::new()
                .write(true)
                .open(p)
                .and_then(|f| f.set_len(want))
                .ctx(|| format!("extending {} from {len} to {want} bytes", p.display()))?;
        }
        Ok(())
    }

    /// A snapshot of the files.
    #[must_use]
    pub fn files(&self) -> Vec<Arc<MappedFile>> {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The newest file.
    #[must_use]
    pub fn last_mapped_file(&self) -> Option<Arc<MappedFile>> {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned()
    }

    /// The oldest file.
    #[must_use]
    pub fn first_mapped_file(&self) -> Option<Arc<MappedFile>> {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .first()
            .cloned()
    }

    /// The file to append to: the last one if it has room, else a new one starting after it
    /// (or at the file holding `start_offset` when the queue is empty).
    ///
    /// # Errors
    /// [`StoreError::CreateMappedFileFailed`] when the file cannot be created (disk full).
    pub fn last_mapped_file_for_append(&self, start_offset: i64) -> Result<Arc<MappedFile>> {
        let last = self.last_mapped_file();
        let from = match &last {
            Some(f) if !f.is_full() => return Ok(Arc::clone(f)),
            Some(f) => f.file_from_offset() + self.size_i64(),
            None => start_offset - start_offset % self.size_i64(),
        };
        let file = match &self.allocator {
            Some(a) => a.take(from)?,
            None => Arc::new(
                MappedFile::create_with(
                    &self.dir,
                    from,
                    self.file_size,
                    self.for_sync_flush,
                    false,
                )
                .map_err(|source| StoreError::CreateMappedFileFailed {
                    path: self.dir.join(crate::format::file_name(from)),
                    source,
                })?,
            ),
        };
        if let Some(w) = &self.window {
            file.attach_window(Arc::clone(w));
            file.commit_window();
        }
        if let Some(pool) = &self.pool {
            match pool.borrow_buffer() {
                Some(buf) => file.attach_write_buffer(buf, Arc::clone(pool)),
                None => log::warn!(
                    "transient store pool exhausted; {} is written directly",
                    file.path().display()
                ),
            }
        }
        self.files
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Arc::clone(&file));
        Ok(file)
    }

    fn size_i64(&self) -> i64 {
        i64::try_from(self.file_size).unwrap_or(i64::MAX)
    }

    /// The file holding global `offset`; the first file when not found and `return_first`.
    #[must_use]
    pub fn find_mapped_file_by_offset(
        &self,
        offset: i64,
        return_first: bool,
    ) -> Option<Arc<MappedFile>> {
        let files = self.files.read().unwrap_or_else(PoisonError::into_inner);
        let first = files.first()?;
        let size = self.size_i64();
        let idx = offset / size - first.file_from_offset() / size;
        if let Ok(i) = usize::try_from(idx) {
            if let Some(f) = files.get(i) {
                if f.file_from_offset() <= offset && offset < f.file_from_offset() + size {
                    return Some(Arc::clone(f));
                }
            }
        }
        if let Some(f) = files
            .iter()
            .find(|f| f.file_from_offset() <= offset && offset < f.file_from_offset() + size)
        {
            return Some(Arc::clone(f));
        }
        return_first.then(|| Arc::clone(first))
    }

    /// Start offset of the oldest file (`-1` when there are none).
    #[must_use]
    pub fn min_offset(&self) -> i64 {
        self.first_mapped_file()
            .map_or(-1, |f| f.file_from_offset())
    }

    /// End of the readable data. A full file without a pool buffer ends at its size: one
    /// opened from disk is readable only up to the end of its data (the hole after a BLANK
    /// record is not published, see `MmapFile::open`), yet nothing follows in it.
    #[must_use]
    pub fn max_offset(&self) -> i64 {
        self.last_mapped_file().map_or(0, |f| {
            if f.is_full() && !f.has_write_buffer() {
                f.offset_of(f.file_size())
            } else {
                f.offset_of(f.read_position())
            }
        })
    }

    /// Global offset up to which data is durable.
    #[must_use]
    pub fn flushed_where(&self) -> i64 {
        self.flushed_where.load(Ordering::Acquire)
    }

    /// Global offset up to which data is readable.
    #[must_use]
    pub fn committed_where(&self) -> i64 {
        self.committed_where.load(Ordering::Acquire)
    }

    /// Store timestamp of the last message a full flush made durable.
    #[must_use]
    pub fn store_timestamp(&self) -> i64 {
        self.store_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn set_flushed_where(&self, v: i64) {
        self.flushed_where.store(v, Ordering::Release);
    }

    pub(crate) fn set_committed_where(&self, v: i64) {
        self.committed_where.store(v, Ordering::Release);
    }

    /// Flush the file at the flush position and, each time that completes a full file, the
    /// next one too. Returns true when the position moved.
    ///
    /// RocketMQ flushes one file per call; with small files and a busy producer its
    /// asynchronous flush then falls further behind every interval (`make chaos` lost 85 % of
    /// the acked messages to power losses with 1 MiB files). Going on past full files keeps
    /// what a power loss can take to about one flush interval, whatever the file size.
    ///
    /// # Errors
    /// When the sync fails.
    pub fn flush(&self, least_pages: usize) -> Result<bool> {
        let start = self.flushed_where();
        loop {
            let old = self.flushed_where();
            let Some(file) = self.find_mapped_file_by_offset(old, old == 0) else {
                break;
            };
            let ts = file.store_timestamp();
            let pos = file.flush(least_pages)?;
            let now = file.offset_of(pos);
            self.flushed_where.fetch_max(now, Ordering::AcqRel);
            if least_pages == 0 && ts > 0 {
                self.store_timestamp.fetch_max(ts, Ordering::AcqRel);
            }
            if now == old || pos < file.file_size() {
                break;
            }
        }
        Ok(self.flushed_where() != start)
    }

    /// Flush until everything readable up to `target` is durable (at most across one roll).
    ///
    /// # Errors
    /// When a sync fails.
    pub fn flush_to(&self, target: i64) -> Result<bool> {
        for _ in 0..3 {
            if self.flushed_where() >= target {
                return Ok(true);
            }
            self.flush(0)?;
        }
        Ok(self.flushed_where() >= target)
    }

    /// Give the cached pages of flushed bytes below global `offset` back to the kernel (see
    /// [`MappedFile::drop_cached_below`]), from the oldest file whose pages may still be cached.
    /// Returns the bytes newly dropped.
    ///
    /// # Errors
    /// The first OS error; the pages only stay cached then.
    pub fn drop_cached_below(&self, offset: i64) -> Result<usize> {
        let start = self.dropped_where.load(Ordering::Acquire);
        if offset < start + DROP_STEP {
            return Ok(0);
        }
        let files: Vec<Arc<MappedFile>> = {
            let files = self.files.read().unwrap_or_else(PoisonError::into_inner);
            let size = self.size_i64();
            files
                .iter()
                .filter(|f| f.file_from_offset() + size > start && f.file_from_offset() < offset)
                .cloned()
                .collect()
        };
        let mut dropped = 0;
        for f in files {
            let pos = usize::try_from(offset - f.file_from_offset()).unwrap_or(usize::MAX);
            dropped += f.drop_cached_below(pos.min(f.file_size()))?;
        }
        self.dropped_where
            .fetch_max(offset.min(self.flushed_where()), Ordering::AcqRel);
        Ok(dropped)
    }

    /// Commit pool-buffer bytes of the file at the commit position. True when it moved.
    pub fn commit(&self, least_pages: usize) -> bool {
        let old = self.committed_where();
        let Some(file) = self.find_mapped_file_by_offset(old, old == 0) else {
            return false;
        };
        let pos = file.commit(least_pages);
        let now = file.offset_of(pos);
        self.committed_where.fetch_max(now, Ordering::AcqRel);
        now != old
    }

    /// Start of the file after the one holding `offset`.
    #[must_use]
    pub fn roll_next_file(&self, offset: i64) -> i64 {
        offset + self.size_i64() - offset % self.size_i64()
    }

    /// Recovery: data ends at `offset`. The file holding it is cut there (tail zeroed);
    /// later files are deleted.
    ///
    /// # Errors
    /// When a file cannot be zeroed or deleted.
    pub fn truncate_dirty_files(&self, offset: i64) -> Result<()> {
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        let size = self.size_i64();
        let mut keep = Vec::with_capacity(files.len());
        for f in files.drain(..) {
            let from = f.file_from_offset();
            if from + size <= offset {
                keep.push(f);
            } else if let Ok(pos) = usize::try_from(offset - from) {
                // `offset` is inside this file (not below its start).
                f.set_positions(pos);
                f.zero_tail(pos)?;
                keep.push(f);
            } else {
                std::fs::remove_file(f.path())
                    .ctx(|| format!("removing {}", f.path().display()))?;
            }
        }
        *files = keep;
        Ok(())
    }

    /// Delete every file (ConsumeQueue reset).
    ///
    /// # Errors
    /// When a file cannot be removed.
    pub fn destroy(&self) -> Result<()> {
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        for f in files.drain(..) {
            std::fs::remove_file(f.path()).ctx(|| format!("removing {}", f.path().display()))?;
        }
        self.set_flushed_where(0);
        self.set_committed_where(0);
        Ok(())
    }

    /// Delete the oldest files, in order, while `may_delete` agrees, never the newest file,
    /// at most [`DELETE_FILES_BATCH_MAX`], pausing `interval_ms` between two. A file still
    /// held by a reader is kept until `forcibly_ms` after the first refusal, and the pass
    /// stops there so deletion stays a prefix. Returns the files deleted, oldest first.
    pub fn delete_oldest_while(
        &self,
        now_ms: i64,
        interval_ms: u64,
        forcibly_ms: i64,
        mut may_delete: impl FnMut(&MappedFile) -> bool,
    ) -> Vec<DeletedFile> {
        let snapshot = self.files();
        let mut deleted = Vec::new();
        for f in snapshot.iter().take(snapshot.len().saturating_sub(1)) {
            if !may_delete(f) || !self.try_delete(f, now_ms, forcibly_ms) {
                break;
            }
            deleted.push(DeletedFile {
                path: f.path().to_path_buf(),
                from: f.file_from_offset(),
                to: f.file_from_offset() + self.size_i64(),
            });
            if deleted.len() >= DELETE_FILES_BATCH_MAX {
                break;
            }
            if interval_ms > 0 {
                std::thread::sleep(Duration::from_millis(interval_ms));
            }
        }
        deleted
    }

    /// Delete the oldest files whose last unit (read by `last_key`) is below `min`. Used by
    /// ConsumeQueues after the CommitLog lost its head. Returns how many were deleted.
    pub fn delete_expired_by_offset(
        &self,
        unit_size: usize,
        min: i64,
        last_key: impl Fn(&[u8]) -> i64,
    ) -> usize {
        let snapshot = self.files();
        let mut deleted = 0;
        for f in snapshot.iter().take(snapshot.len().saturating_sub(1)) {
            let Some(unit) = f.read(self.file_size - unit_size, unit_size) else {
                break;
            };
            if last_key(unit) >= min || !self.try_delete(f, 0, 0) {
                break;
            }
            deleted += 1;
        }
        deleted
    }

    fn try_delete(&self, f: &Arc<MappedFile>, now_ms: i64, forcibly_ms: i64) -> bool {
        // The list and the caller's snapshot hold one reference each; more means a reader.
        if Arc::strong_count(f) > 2 {
            let first = f.mark_destroy_attempt(now_ms);
            if now_ms - first < forcibly_ms {
                return false;
            }
            // Readers keep their mapping (and open descriptor) even after the unlink.
        }
        if let Err(e) = std::fs::remove_file(f.path()) {
            log::warn!("could not delete {}: {e}", f.path().display());
            return false;
        }
        self.files
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|x| !Arc::ptr_eq(x, f));
        true
    }

    /// Ask the allocator to prepare the file the next append will need, so the first put
    /// after opening does not wait for it to be allocated.
    pub fn prepare_next_file(&self) {
        if let Some(a) = &self.allocator {
            let next = match self.last_mapped_file() {
                Some(f) if !f.is_full() => return,
                Some(f) => f.file_from_offset() + self.size_i64(),
                None => 0,
            };
            a.request(next);
        }
    }

    /// Have the allocator thread reserve `file`'s blocks ahead of a writer now at `end` (see
    /// [`MappedFile::needs_reserve_ahead`]), keeping `keep_free` bytes of the partition free.
    /// Nothing without an allocator thread: the writer reserves as it goes.
    pub fn reserve_ahead_of(&self, file: &Arc<MappedFile>, end: usize, keep_free: u64) {
        if let Some(a) = &self.allocator {
            if file.needs_reserve_ahead(end) {
                a.request_reserve(file, keep_free);
            }
        }
    }

    /// Stop the allocator thread and remove a pre-created file nobody used; write the append
    /// window out and close it.
    pub fn shutdown(&self) {
        if let Some(a) = &self.allocator {
            a.stop();
        }
        if let Some(w) = &self.window {
            let detached = self
                .windowed_files()
                .iter()
                .all(|f| match f.detach_window() {
                    Ok(()) => true,
                    Err(e) => {
                        log::error!("{e}; recovery replays the window at the next start");
                        false
                    }
                });
            if detached {
                w.close();
            }
        }
    }
}

/// Reserve `file`'s blocks ahead of its writer, and the head of `next` (the file created to
/// follow it) where that reaches past its end, unless that would leave the partition of `dir`
/// with less than `keep_free` bytes; a failure is left for the writer to meet (it reserves,
/// and refuses the put, on its own).
fn reserve_ahead(file: &MappedFile, next: Option<&MappedFile>, dir: &Path, keep_free: u64) {
    let ahead = file.reserve_ahead_bytes(file.wrote_position()) as u64;
    let room = crate::mmap::disk_space(dir)
        .map_or(true, |d| d.available >= keep_free.saturating_add(ahead));
    if !room {
        file.cancel_reserve_ahead();
        return;
    }
    let done = file.reserve_ahead().and_then(|head| match next {
        Some(next) if head > 0 => next.reserve_in_steps(head.min(next.file_size())),
        _ => Ok(()),
    });
    if let Err(e) = done {
        log::debug!(
            "could not reserve blocks ahead of the writer in {}: {e} (the writer reserves its \
             own)",
            dir.display()
        );
    }
}

/// Creates the next file ahead of need, and reserves the current file's blocks ahead of its
/// writer.
struct Allocator {
    dir: PathBuf,
    size: usize,
    for_sync_flush: bool,
    warm: bool,
    state: Arc<(Mutex<AllocState>, Condvar)>,
    handle: Mutex<Option<JoinHandle<()>>>,
}

#[derive(Default)]
struct AllocState {
    requested: Option<i64>,
    /// A file whose blocks are to be reserved ahead of its writer, and the bytes of the
    /// partition that must stay free (`CommitLog::keep_free`).
    reserve: Option<(Arc<MappedFile>, u64)>,
    ready: Option<(i64, std::io::Result<Arc<MappedFile>>)>,
    busy: bool,
    stop: bool,
}

impl Allocator {
    fn start(dir: PathBuf, size: usize, warm: bool, for_sync_flush: bool) -> Self {
        let state = Arc::new((Mutex::new(AllocState::default()), Condvar::new()));
        let st = Arc::clone(&state);
        let thread_dir = dir.clone();
        let handle = std::thread::Builder::new()
            .name("rmq-allocate-mapped-file".into())
            .spawn(move || loop {
                let from = {
                    let mut s = lock(&st.0);
                    loop {
                        if s.stop {
                            return;
                        }
                        if let Some((file, keep_free)) = s.reserve.take() {
                            let next = s.ready.as_ref().and_then(|(from, made)| {
                                let follows = *from == file.offset_of(file.file_size());
                                made.as_ref().ok().filter(|_| follows).cloned()
                            });
                            drop(s);
                            reserve_ahead(&file, next.as_deref(), &thread_dir, keep_free);
                            s = lock(&st.0);
                            continue;
                        }
                        if let Some(r) = s.requested.take() {
                            s.busy = true;
                            break r;
                        }
                        s = st.1.wait(s).unwrap_or_else(PoisonError::into_inner);
                    }
                };
                let made = MappedFile::create_with(&thread_dir, from, size, for_sync_flush, warm)
                    .inspect(|f| {
                        if warm {
                            f.warm();
                        }
                    })
                    .map(Arc::new);
                let mut s = lock(&st.0);
                s.busy = false;
                if s.stop {
                    if let Ok(f) = made {
                        let _ = std::fs::remove_file(f.path());
                    }
                    st.1.notify_all();
                    return;
                }
                s.ready = Some((from, made));
                st.1.notify_all();
            })
            .ok();
        Self {
            dir,
            size,
            for_sync_flush,
            warm,
            state,
            handle: Mutex::new(handle),
        }
    }

    /// The file starting at `from`: the pre-created one, or made now. Asks for the next.
    fn take(&self, from: i64) -> Result<Arc<MappedFile>> {
        let (m, cv) = &*self.state;
        let mut s = lock(m);
        // Wait for an allocation of this very file that is under way.
        while s.busy || s.requested == Some(from) {
            s = cv.wait(s).unwrap_or_else(PoisonError::into_inner);
        }
        let failed = |source| StoreError::CreateMappedFileFailed {
            path: self.dir.join(crate::format::file_name(from)),
            source,
        };
        let file = match s.ready.take() {
            Some((off, made)) if off == from => made.map_err(failed)?,
            other => {
                if let Some((_, Ok(stale))) = other {
                    let _ = std::fs::remove_file(stale.path());
                }
                drop(s);
                let f = MappedFile::create_with(
                    &self.dir,
                    from,
                    self.size,
                    self.for_sync_flush,
                    self.warm,
                )
                .map_err(failed)?;
                s = lock(m);
                Arc::new(f)
            }
        };
        s.requested = Some(from + i64::try_from(file.file_size()).unwrap_or(i64::MAX));
        cv.notify_all();
        Ok(file)
    }

    /// Have the thread reserve `file`'s blocks ahead of its writer.
    fn request_reserve(&self, file: &Arc<MappedFile>, keep_free: u64) {
        let mut s = lock(&self.state.0);
        if s.stop {
            file.cancel_reserve_ahead();
            return;
        }
        if let Some((older, _)) = s.reserve.replace((Arc::clone(file), keep_free)) {
            older.cancel_reserve_ahead();
        }
        self.state.1.notify_all();
    }

    fn request(&self, from: i64) {
        let mut s = lock(&self.state.0);
        if s.ready.is_none() && !s.busy {
            s.requested = Some(from);
            self.state.1.notify_all();
        }
    }

    fn stop(&self) {
        {
            let mut s = lock(&self.state.0);
            s.stop = true;
            if let Some((_, Ok(f))) = s.ready.take() {
                let _ = std::fs::remove_file(f.path());
            }
            self.state.1.notify_all();
        }
        if let Some(h) = lock(&self.handle).take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_cached_below_gives_back_flushed_pages_only() {
        const MIB: usize = 1 << 20;
        const MIB_I: i64 = 1 << 20;
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), MIB).unwrap();
        fill(&q, 3);
        let f = q.last_mapped_file_for_append(0).unwrap();
        assert!(f.append_bytes(&vec![2u8; MIB / 2]).unwrap());
        let files: Vec<_> = (0..4)
            .map(|i| q.find_mapped_file_by_offset(i * MIB_I, false).unwrap())
            .collect();
        let pages = MIB / crate::mmap::OS_PAGE_SIZE;
        assert!(files[..3].iter().all(|f| f.resident_pages() == pages));
        // Nothing is dropped above the flush position.
        assert_eq!(q.drop_cached_below(3 * MIB_I).unwrap(), 0);
        assert!(files[..3].iter().all(|f| f.resident_pages() == pages));
        // Flushed to 3.5 MiB: below 2.5 MiB go files 0 and 1 and half of 2.
        assert!(q.flush(0).unwrap());
        assert_eq!(q.drop_cached_below(5 * MIB_I / 2).unwrap(), 5 * MIB / 2);
        let resident: Vec<_> = files.iter().map(|f| f.resident_pages()).collect();
        assert_eq!(resident[..3], [0, 0, pages / 2]);
        assert!(
            resident[3] >= pages / 2,
            "the window's pages stay: {resident:?}"
        );
        // The bytes are all still there, read back from the file.
        assert_eq!(files[0].read(0, 4).unwrap(), [1; 4]);
        // Less than a step more: nothing more is dropped (two system calls a file per step).
        assert_eq!(q.drop_cached_below(3 * MIB_I).unwrap(), 0);
        assert_eq!(files[2].resident_pages(), pages / 2);
    }

    fn fill(q: &MappedFileQueue, files: usize) {
        for _ in 0..files {
            let f = q.last_mapped_file_for_append(0).unwrap();
            let n = f.file_size() - f.wrote_position();
            assert!(f.append_bytes(&vec![1u8; n]).unwrap());
        }
    }

    #[test]
    fn roll_find_and_offsets() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096).unwrap();
        assert_eq!(q.min_offset(), -1);
        assert_eq!(q.max_offset(), 0);
        fill(&q, 3);
        let names: Vec<_> = q.files().iter().map(|f| f.file_from_offset()).collect();
        assert_eq!(names, vec![0, 4096, 8192]);
        assert_eq!(q.max_offset(), 3 * 4096);
        let f = q.find_mapped_file_by_offset(5000, false).unwrap();
        assert_eq!(f.file_from_offset(), 4096);
        assert!(q.find_mapped_file_by_offset(99_999, false).is_none());
        assert_eq!(
            q.find_mapped_file_by_offset(99_999, true)
                .unwrap()
                .file_from_offset(),
            0
        );
        assert_eq!(q.roll_next_file(5000), 8192);
        assert!(dir.path().join("00000000000000004096").exists());
    }

    #[test]
    fn flush_moves_the_durable_position_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096).unwrap();
        fill(&q, 2);
        assert!(q.flush_to(8192).unwrap());
        assert_eq!(q.flushed_where(), 8192);
        assert!(!q.flush(0).unwrap(), "nothing left to flush");
    }

    #[test]
    fn one_flush_catches_up_across_full_files() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096).unwrap();
        fill(&q, 3);
        assert!(q.flush(0).unwrap());
        assert_eq!(q.flushed_where(), 3 * 4096);
    }

    #[test]
    fn truncate_cuts_the_holding_file_and_drops_later_ones() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096).unwrap();
        fill(&q, 3);
        q.truncate_dirty_files(4096 + 100).unwrap();
        assert_eq!(q.files().len(), 2);
        assert_eq!(q.max_offset(), 4196);
        assert!(!dir.path().join("00000000000000008192").exists());
        let f = q.last_mapped_file().unwrap();
        assert_eq!(f.read(99, 1).unwrap(), [1]);
        assert!(f.raw_from(100).iter().all(|&b| b == 0), "tail zeroed");
    }

    #[test]
    fn load_extends_short_files_when_asked_refuses_long_ones_drops_empty_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("00000000000000000000"), vec![0u8; 4096]).unwrap();
        std::fs::write(dir.path().join("00000000000000004096"), b"").unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096).unwrap();
        q.load().unwrap();
        assert_eq!(q.files().len(), 1);
        assert!(!dir.path().join("00000000000000004096").exists());
        // A short file is refused, or (CommitLog) keeps its bytes and is extended with zeroes
        // to the configured size.
        let short = dir.path().join("00000000000000004096");
        std::fs::write(&short, vec![7u8; 100]).unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096).unwrap();
        let e = q.load().unwrap_err().to_string();
        assert!(
            e.contains("00000000000000004096") && e.contains("is 100 bytes"),
            "{e}"
        );
        let q = MappedFileQueue::new(dir.path(), 4096)
            .unwrap()
            .with_short_files_extended();
        q.load().unwrap();
        assert_eq!(q.files().len(), 2);
        assert_eq!(std::fs::metadata(&short).unwrap().len(), 4096);
        let f = q.last_mapped_file().unwrap();
        assert_eq!(f.read(0, 100).unwrap(), [7u8; 100]);
        assert!(f.raw_from(100).iter().all(|&b| b == 0));
        drop((f, q));
        // A longer one cannot be of this size: the error names it and says what to do.
        std::fs::write(&short, vec![0u8; 5000]).unwrap();
        let q = MappedFileQueue::new(dir.path(), 4096)
            .unwrap()
            .with_short_files_extended();
        let e = q.load().unwrap_err().to_string();
        assert!(
            e.contains("00000000000000004096")
                && e.contains("longer than the configured file size 4096")
                && e.contains("set the key back"),
            "{e}"
        );
    }

    #[test]
    fn a_full_sparse_file_reopened_ends_at_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 1 << 20).unwrap();
        let f = q.last_mapped_file_for_append(0).unwrap();
        f.append_record(100, &mut Vec::new(), |b| b.fill(1))
            .unwrap();
        f.append_blank().unwrap();
        assert_eq!(q.max_offset(), 1 << 20);
        drop((f, q));
        let q = MappedFileQueue::new(dir.path(), 1 << 20).unwrap();
        q.load().unwrap();
        let f = q.last_mapped_file().unwrap();
        assert!(f.read_position() < 1 << 20, "only its data is published");
        assert_eq!(q.max_offset(), 1 << 20);
    }

    #[test]
    fn the_allocator_thread_reserves_blocks_ahead_of_the_writer() {
        const SIZE: usize = 4 << 20; // steps of 16 KiB, at most 2 MiB ahead
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), SIZE)
            .unwrap()
            .with_allocator(false);
        let f = q.last_mapped_file_for_append(0).unwrap();
        assert_eq!(
            f.reserve_ahead_bytes(0),
            0,
            "nothing ahead of an empty queue"
        );
        assert_eq!(
            f.reserve_ahead_bytes((16 << 10) - 1),
            0,
            "nor under one step"
        );
        assert_eq!(
            f.reserve_ahead_bytes(16 << 10),
            16 << 10,
            "then what it holds"
        );
        // A fresh store's first puts leave the rest to the writer's own first step, whenever
        // the allocator thread would have run (a 100-message store took 8 MiB of disk when
        // it ran after a few puts).
        assert!(!f.needs_reserve_ahead(1_000));
        assert_eq!(
            f.reserve_ahead_bytes(SIZE),
            2 << 20,
            "half of the file at most"
        );
        assert!(f.append_bytes(&vec![1u8; 100_000]).unwrap());
        let end = f.wrote_position();
        let ahead = f.reserve_ahead_bytes(end);
        assert_eq!(ahead, end, "as much as the file holds");
        assert!(
            !f.is_reserved(end + ahead),
            "only the writer's own step so far"
        );
        q.reserve_ahead_of(&f, end, 0);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !f.is_reserved(end + ahead) {
            assert!(std::time::Instant::now() < deadline, "no reservation ahead");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(crate::mmap::disk_bytes(f.path()) >= (end + ahead) as u64);
        assert!(
            crate::mmap::disk_bytes(f.path()) < SIZE as u64 / 4,
            "the file stays sparse past it"
        );
        // A writer further on asks again; one still well inside the reserved bytes does not.
        assert!(!f.needs_reserve_ahead(end));
        assert!(f.needs_reserve_ahead(3 * end));
        f.cancel_reserve_ahead();
        q.shutdown();
    }

    #[test]
    fn near_its_end_the_writer_has_the_head_of_the_next_file_reserved() {
        const SIZE: usize = 4 << 20; // steps of 16 KiB, at most 2 MiB ahead
        const NEXT: i64 = 4 << 20;
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), SIZE)
            .unwrap()
            .with_allocator(false);
        let f = q.last_mapped_file_for_append(0).unwrap();
        // The allocator creates the file after it when this one is taken.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !matches!(&lock(&q.allocator.as_ref().unwrap().state.0).ready, Some((from, _)) if *from == NEXT)
        {
            assert!(std::time::Instant::now() < deadline, "no next file");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(f.append_bytes(&vec![1u8; SIZE - (256 << 10)]).unwrap());
        let end = f.wrote_position();
        // The first request reserves this file to its end and the head of the next one.
        let head = end + f.reserve_ahead_bytes(end) - SIZE;
        assert_eq!(head, (2 << 20) - (256 << 10));
        q.reserve_ahead_of(&f, end, 0);
        while !f.is_reserved(SIZE) {
            assert!(std::time::Instant::now() < deadline, "no reservation ahead");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Once this file is reserved to its end, a writer a little further asks once more.
        assert!(f.needs_reserve_ahead(end + 1));
        assert!(!f.needs_reserve_ahead(end + 2), "asked once");
        assert!(f.append_bytes(&vec![1u8; 256 << 10]).unwrap());
        let next = q.last_mapped_file_for_append(0).unwrap();
        assert_eq!(next.file_from_offset(), NEXT);
        while !next.is_reserved(head) {
            assert!(std::time::Instant::now() < deadline, "no head reserved");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(crate::mmap::disk_bytes(next.path()) >= head as u64);
        assert!(
            crate::mmap::disk_bytes(next.path()) < 2 << 20,
            "and no more"
        );
        assert_eq!(
            next.reserve_ahead_bytes(0),
            2 << 20,
            "a later file has the whole ahead from its first byte"
        );
        q.shutdown();
    }

    #[test]
    fn no_reservation_ahead_eats_the_space_kept_free() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 4 << 20)
            .unwrap()
            .with_allocator(false);
        let f = q.last_mapped_file_for_append(0).unwrap();
        assert!(f.append_bytes(&vec![1u8; 100_000]).unwrap());
        let end = f.wrote_position();
        assert!(
            !f.is_reserved(end + f.reserve_ahead_bytes(end) / 2),
            "a writer here asks"
        );
        q.reserve_ahead_of(&f, end, u64::MAX / 2);
        // The request is dropped (and its pending mark cleared) without reserving.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !f.needs_reserve_ahead(end) {
            assert!(
                std::time::Instant::now() < deadline,
                "the request never ended"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!f.is_reserved(end + f.reserve_ahead_bytes(end)));
        f.cancel_reserve_ahead();
        q.shutdown();
    }

    #[test]
    fn files_appended_with_pwrite_are_not_reserved_ahead() {
        let dir = tempfile::tempdir().unwrap();
        let f = MappedFile::create_with(dir.path(), 0, 4 << 20, true, false).unwrap();
        assert!(!f.needs_reserve_ahead(0));
    }

    #[test]
    fn expiry_by_offset_keeps_a_contiguous_tail() {
        let dir = tempfile::tempdir().unwrap();
        let q = MappedFileQueue::new(dir.path(), 40).unwrap();
        for unit in 0..6i64 {
            let f = q.last_mapped_file_for_append(0).unwrap();
            let mut b = [0u8; 20];
            b[..8].copy_from_slice(&(unit * 100).to_be_bytes());
            assert!(f.append_bytes(&b).unwrap());
        }
        // Files hold units (0,100), (200,300), (400,500); delete those whose last unit < 250.
        let n =
            q.delete_expired_by_offset(20, 250, |b| i64::from_be_bytes(b[..8].try_into().unwrap()));
        assert_eq!(n, 1);
        assert_eq!(q.min_offset(), 40);
    }
}
