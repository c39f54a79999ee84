//! One fixed-size file of a [`MappedFileQueue`](crate::mapped_file_queue::MappedFileQueue):
//! a mapping plus three positions, `wrote >= committed >= flushed`. Bytes below `committed`
//! are readable; bytes below `flushed` are durable. With the ASYNC_FLUSH layout and no
//! transient-pool buffer, `committed` follows `wrote` at once; with a pool buffer, the commit
//! thread moves it; with the SYNC_FLUSH layout, the group commit's round, which writes the
//! records staged since the last one with one `pwrite` before it syncs. `committed` is
//! the mapping's published end, kept by `mmap::MmapFile` (and `wrote`, with a pool, the
//! buffer's), which hands out only published bytes to readers and unpublished ones to the
//! writer. Files are sparse unless pre-allocated; every append first reserves the blocks it
//! will write ([`MappedFile::reserve`]), so a full disk refuses the append instead of
//! faulting.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::SystemTime;

use crate::append_window::{AppendWindow, AHEAD};
use crate::error::{IoContext, Result};
use crate::mmap::{AnonBuffer, MmapFile, Prealloc, Reserve, SegmentOwner, OS_PAGE_SIZE};
use crate::transient_store_pool::TransientStorePool;

/// A mapped file and its positions.
pub struct MappedFile {
    path: PathBuf,
    file_from_offset: i64,
    file_size: usize,
    mmap: MmapFile,
    /// Appends go through `pwrite` and flushes through `fdatasync` (SYNC_FLUSH layout), not
    /// through stores into the mapping and `msync`.
    write_through_file: AtomicBool,
    /// The SYNC_FLUSH layout's records appended since the last group-commit round, ending at
    /// `wrote` and not readable yet: written with one `pwrite` by that round
    /// ([`write_staged`](Self::write_staged)), not one each.
    staged: Mutex<Vec<u8>>,
    wrote: AtomicUsize,
    flushed: AtomicUsize,
    /// Cached pages below this were given back to the kernel ([`drop_cached_below`]).
    ///
    /// [`drop_cached_below`]: Self::drop_cached_below
    dropped: AtomicUsize,
    write_buffer: OnceLock<(Arc<AnonBuffer>, Arc<TransientStorePool>)>,
    buffer_returned: AtomicBool,
    store_timestamp: AtomicI64,
    /// When deletion was first refused because readers held the file (0 = never).
    first_destroy_attempt: AtomicI64,
    /// A reservation ahead of the writer has been asked for and not yet made.
    ahead_pending: AtomicBool,
    /// The writer, near the end, has asked for the head of the next file to be reserved.
    next_head_asked: AtomicBool,
    /// The CommitLog's append window, when this file is appended through it.
    window: OnceLock<Arc<AppendWindow>>,
    /// Every segment-sized range below this is decided: a segment of the window was mapped
    /// over it, or the appender reached it first and it is the file's. Moved under
    /// `window_decided`; read without it by the appender.
    window_edge: AtomicUsize,
    window_decided: Mutex<()>,
    /// A second descriptor of the file with `O_DIRECT`, for writing the window out (`None`
    /// where the file system refuses it: the window is written through the page cache).
    direct: OnceLock<Option<std::fs::File>>,
}

/// How far ahead of its writer another thread keeps a file's blocks reserved at most, in
/// reservation steps: 128 of 1/256 of the file, half of it (512 MiB of a 1 GiB CommitLog
/// file): room for the allocator thread, whose `fallocate`s may read block bitmaps behind
/// the flush's writeback for hundreds of milliseconds while 1 MiB sends append 350 MB/s.
const RESERVE_AHEAD_STEPS: usize = 128;

/// Largest record the SYNC_FLUSH layout stages (larger ones are written at once, with what is
/// staged, by one `pwritev`: staging copies the body once more, which costs a big body more
/// than the saved system call).
const STAGE_RECORD_MAX: usize = 16 << 10;

/// Most bytes staged before the appender writes them itself.
const STAGED_MAX: usize = 1 << 20;

/// Largest page-cache folio the kernel may use for a file mapping (a PMD, 2 MiB on x86-64).
pub(crate) const ACTIVE_FOLIO_BYTES: usize = 2 << 20;

fn pages(n: usize) -> usize {
    n / OS_PAGE_SIZE
}

impl MappedFile {
    /// Create a new, sparse file of `file_size` bytes starting at global offset `from`.
    ///
    /// # Errors
    /// When the file cannot be created or mapped; no file is left behind then.
    pub fn create(dir: &Path, from: i64, file_size: usize) -> std::io::Result<Self> {
        Self::create_with(dir, from, file_size, false, false)
    }

    /// [`create`](Self::create), laid out for SYNC_FLUSH when `for_sync_flush`: every put then
    /// syncs a few new records, so appends are staged in memory, written with one `pwrite` a
    /// group-commit round and made durable with `fdatasync`, and the blocks ahead of them are
    /// reserved by writing zeros (no unwritten extent to convert on each sync). Stores
    /// through the mapping would re-fault every page after each writeback and mark whole
    /// folios dirty; `msync` of such pages is several times slower than `fdatasync` of
    /// `pwrite`n blocks (see benches/RESULTS.md). Readers use the mapping either way: the page
    /// cache is one.
    ///
    /// With `preallocate` (`warmMapedFileEnable`) every block is allocated now (zero-filled
    /// and synced for SYNC_FLUSH), as before files were sparse; otherwise the file is sparse,
    /// as RocketMQ's `setLength` makes it.
    ///
    /// # Errors
    /// As [`create`](Self::create); ENOSPC when `preallocate` finds no room.
    pub fn create_with(
        dir: &Path,
        from: i64,
        file_size: usize,
        for_sync_flush: bool,
        preallocate: bool,
    ) -> std::io::Result<Self> {
        let path = dir.join(crate::format::file_name(from));
        let prealloc = match (preallocate, for_sync_flush) {
            (false, _) => Prealloc::Sparse,
            (true, false) => Prealloc::Allocate,
            (true, true) => Prealloc::Zeros,
        };
        let mmap = MmapFile::create(&path, file_size, prealloc)?;
        let f = Self::with(path, from, file_size, mmap, 0);
        f.set_write_through_file(for_sync_flush);
        Ok(f)
    }

    /// Open an existing file; every position starts at the end (recovery corrects them).
    ///
    /// # Errors
    /// When the file cannot be opened, has the wrong size or its name is not an offset.
    pub fn open(path: &Path, file_size: usize) -> Result<Self> {
        let from = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<i64>().ok())
            .ok_or_else(|| crate::error::StoreError::Corruption {
                file: path.to_owned(),
                offset: 0,
                reason: "file name is not a 20-digit offset".into(),
            })?;
        let mmap = MmapFile::open(path, file_size).ctx(|| format!("opening {}", path.display()))?;
        Ok(Self::with(
            path.to_owned(),
            from,
            file_size,
            mmap,
            file_size,
        ))
    }

    fn with(path: PathBuf, from: i64, file_size: usize, mmap: MmapFile, pos: usize) -> Self {
        Self {
            path,
            file_from_offset: from,
            file_size,
            mmap,
            write_through_file: AtomicBool::new(false),
            staged: Mutex::new(Vec::new()),
            wrote: AtomicUsize::new(pos),
            flushed: AtomicUsize::new(pos),
            dropped: AtomicUsize::new(0),
            write_buffer: OnceLock::new(),
            buffer_returned: AtomicBool::new(false),
            store_timestamp: AtomicI64::new(0),
            first_destroy_attempt: AtomicI64::new(0),
            ahead_pending: AtomicBool::new(false),
            next_head_asked: AtomicBool::new(false),
            window: OnceLock::new(),
            window_edge: AtomicUsize::new(0),
            window_decided: Mutex::new(()),
            direct: OnceLock::new(),
        }
    }

    /// Append with `pwrite` and flush with `fdatasync`; see [`create_with`](Self::create_with).
    pub(crate) fn set_write_through_file(&self, on: bool) {
        self.write_through_file.store(on, Ordering::Release);
    }

    /// Route writes through a transient-pool buffer (set once, before the first append).
    pub(crate) fn attach_write_buffer(&self, buf: Arc<AnonBuffer>, pool: Arc<TransientStorePool>) {
        let _ = self.write_buffer.set((buf, pool));
    }

    /// Whether writes go through a pool buffer.
    #[must_use]
    pub fn has_write_buffer(&self) -> bool {
        self.write_buffer.get().is_some()
    }

    /// Path of the file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Global offset of the first byte.
    #[must_use]
    pub fn file_from_offset(&self) -> i64 {
        self.file_from_offset
    }

    /// Global offset of byte `pos` of this file. Every position inside a mapping converts
    /// exactly (a mapping, like any Rust allocation, is at most `isize::MAX` bytes); a `pos`
    /// beyond that would saturate, never alias offset 0.
    #[must_use]
    pub fn offset_of(&self, pos: usize) -> i64 {
        self.file_from_offset
            .saturating_add(i64::try_from(pos).unwrap_or(i64::MAX))
    }

    /// File size.
    #[must_use]
    pub fn file_size(&self) -> usize {
        self.file_size
    }

    /// The underlying file, for `sendfile`.
    #[must_use]
    pub fn file(&self) -> &std::fs::File {
        self.mmap.file()
    }

    /// Bytes appended (published to the committer).
    #[must_use]
    pub fn wrote_position(&self) -> usize {
        self.wrote.load(Ordering::Acquire)
    }

    /// Bytes readable (in the file's page cache).
    #[must_use]
    pub fn read_position(&self) -> usize {
        self.mmap.published()
    }

    /// Bytes durable on disk.
    #[must_use]
    pub fn flushed_position(&self) -> usize {
        self.flushed.load(Ordering::Acquire)
    }

    /// Give the cached pages of the flushed bytes below `pos` back to the kernel (see
    /// `MmapFile::drop_cached`); bytes not yet flushed stay. Returns the bytes newly dropped.
    ///
    /// # Errors
    /// The OS error; nothing is lost then, the pages only stay cached.
    pub fn drop_cached_below(&self, pos: usize) -> Result<usize> {
        let to = pos.min(self.flushed_position());
        let to = if to == self.file_size {
            to
        } else {
            to - to % OS_PAGE_SIZE
        };
        let from = self.dropped.load(Ordering::Acquire);
        if to <= from {
            return Ok(0);
        }
        self.mmap
            .drop_cached(from, to - from)
            .ctx(|| format!("dropping cached pages of {}", self.path.display()))?;
        self.dropped.fetch_max(to, Ordering::AcqRel);
        Ok(to - from)
    }

    /// Pages of the file in the page cache.
    #[cfg(test)]
    pub(crate) fn resident_pages(&self) -> usize {
        self.mmap.resident_pages(0, self.file_size)
    }

    /// Whether nothing more fits.
    #[must_use]
    pub fn is_full(&self) -> bool {
        self.wrote_position() == self.file_size
    }

    /// Store timestamp of the last message appended.
    #[must_use]
    pub fn store_timestamp(&self) -> i64 {
        self.store_timestamp.load(Ordering::Acquire)
    }

    pub(crate) fn set_store_timestamp(&self, ts: i64) {
        self.store_timestamp.store(ts, Ordering::Release);
    }

    /// Append a record of exactly `len` bytes (which must fit) encoded by `encode`. Only one
    /// appender may call this at a time (the CommitLog put lock). `scratch` is reused for the
    /// `pwrite` layout.
    ///
    /// # Errors
    /// When the record does not fit or the `pwrite` fails; nothing is published then.
    pub(crate) fn append_record(
        &self,
        len: usize,
        scratch: &mut Vec<u8>,
        encode: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        let wrote = self.room_for(len, || format!("a {len}-byte record does"))?;
        if let Some((buf, _)) = self.write_buffer.get() {
            if buf.write(wrote, len, encode).is_none() {
                return Err(crate::error::StoreError::MessageIllegal(format!(
                    "a {len}-byte record cannot be written at {wrote} of the pool buffer of {}",
                    self.path.display()
                )));
            }
        } else if self.write_through_file.load(Ordering::Relaxed) {
            scratch.clear();
            scratch.resize(len, 0);
            encode(scratch);
            let mut staged = self.staged();
            let parts = [std::io::IoSlice::new(scratch)];
            self.write_with_staged(&mut staged, &parts, wrote)?;
        } else {
            self.decide_window(wrote + len);
            self.mmap
                .write(wrote, len, encode)
                .map_err(|e| self.disk_full(len, &e))?;
        }
        self.publish(wrote + len);
        Ok(())
    }

    /// A slave's append of replicated bytes (which must fit), by `pwrite` rather than through
    /// the mapping: a store into a fresh page of the mapping makes the kernel zero it first,
    /// which costs as much as the copy; `pwrite` fills the page cache directly. Like
    /// [`append_record`](Self::append_record), one appender at a time (the put lock).
    ///
    /// # Errors
    /// ENOSPC or another I/O error; nothing is published then.
    pub(crate) fn append_copy(&self, data: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        if self.write_buffer.get().is_some() || self.window.get().is_some() {
            return self.append_record(data.len(), &mut Vec::new(), |dst| {
                dst.copy_from_slice(data);
            });
        }
        let len = data.len();
        let wrote = self.room_for(len, || format!("{len} replicated bytes do"))?;
        if self.write_through_file.load(Ordering::Relaxed) {
            let parts = [std::io::IoSlice::new(data)];
            return self.write_with_staged(&mut self.staged(), &parts, wrote);
        }
        self.mmap
            .file()
            .write_all_at(data, wrote as u64)
            .ctx(|| format!("writing {}", self.path.display()))?;
        self.publish(wrote + len);
        Ok(())
    }

    /// Allocate the blocks below `end` (a step ahead, see `MmapFile::reserve`): zeros for a
    /// file appended with `pwrite`, `fallocate` otherwise.
    ///
    /// # Errors
    /// ENOSPC or another OS error.
    pub(crate) fn reserve(&self, end: usize) -> std::io::Result<()> {
        let how = if self.write_through_file.load(Ordering::Relaxed) {
            Reserve::Zeros
        } else {
            Reserve::Allocate
        };
        self.mmap.reserve(end, how)
    }

    /// Whether the blocks below `end` are allocated already.
    #[must_use]
    pub(crate) fn is_reserved(&self, end: usize) -> bool {
        end <= self.mmap.reserved()
    }

    /// How far one reservation reaches past the bytes it is made for.
    #[must_use]
    pub(crate) fn reserve_step(&self) -> usize {
        self.mmap.reserve_step()
    }

    /// How far ahead of a writer at `end` [`reserve_ahead`](Self::reserve_ahead) reserves:
    /// as many bytes as the queue holds up to there (its global offset), at most
    /// [`RESERVE_AHEAD_STEPS`]; nothing before the queue holds one reservation step. So a
    /// store that has taken little data keeps little disk (a fresh one stays sparse: its
    /// writer's own first step is all it has), and a busy one keeps half a file ready, from
    /// the first byte of each new file on.
    #[must_use]
    pub(crate) fn reserve_ahead_bytes(&self, end: usize) -> usize {
        let step = self.reserve_step();
        let taken = usize::try_from(self.file_from_offset)
            .unwrap_or(0)
            .saturating_add(end);
        if taken < step {
            0
        } else {
            taken.min(step * RESERVE_AHEAD_STEPS)
        }
    }

    /// Whether a writer now at `end` should have blocks reserved ahead of it by another
    /// thread: less than half of [`reserve_ahead_bytes`](Self::reserve_ahead_bytes) is left,
    /// and no such reservation is pending (true once; the reservation clears it). Once this
    /// file is reserved to its end, true once more when that half reaches past it: the head
    /// of the next file is then due. Never for files appended with `pwrite`, whose
    /// reservations write zeros (I/O, not a metadata change, and SYNC_FLUSH syncs compete
    /// with it).
    ///
    /// Why: `fallocate` waits behind writeback of the same file, and on a busy disk behind
    /// reads of the file system's block bitmaps. Traced on the broker under 1 MiB sends, the
    /// append path's own 4 MiB reservations took up to 256 ms while the flush thread's `msync`
    /// ran, stalling every request of that I/O thread (benches/RESULTS.md, issue 18, seventh
    /// round).
    #[must_use]
    pub(crate) fn needs_reserve_ahead(&self, end: usize) -> bool {
        if self.write_through_file.load(Ordering::Relaxed) {
            return false;
        }
        let ahead = self.reserve_ahead_bytes(end);
        let target = end.saturating_add(ahead / 2);
        let asked = if ahead == 0 || self.is_reserved(target) {
            return false;
        } else if self.is_reserved(self.file_size) {
            &self.next_head_asked
        } else {
            &self.ahead_pending
        };
        !asked.load(Ordering::Relaxed) && !asked.swap(true, Ordering::AcqRel)
    }

    /// Reserve the blocks up to [`reserve_ahead_bytes`](Self::reserve_ahead_bytes) past the
    /// writer (off the append path; see [`needs_reserve_ahead`](Self::needs_reserve_ahead)).
    /// Returns how far that reaches past the end of this file: the head of the next file the
    /// caller should reserve too.
    ///
    /// # Errors
    /// ENOSPC or another OS error; the writer then reserves (and refuses) on its own.
    pub(crate) fn reserve_ahead(&self) -> std::io::Result<usize> {
        let at = self.wrote_position();
        let want = at.saturating_add(self.reserve_ahead_bytes(at));
        let done = self.reserve_in_steps(want.min(self.file_size));
        self.ahead_pending.store(false, Ordering::Release);
        done.map(|()| want.saturating_sub(self.file_size))
    }

    /// [`reserve`](Self::reserve) up to `end` one step at a time, so a writer that catches up
    /// waits for one step's `fallocate`, not for all of them.
    ///
    /// # Errors
    /// ENOSPC or another OS error.
    pub(crate) fn reserve_in_steps(&self, end: usize) -> std::io::Result<()> {
        let step = self.reserve_step();
        while !self.is_reserved(end) {
            self.reserve(self.mmap.reserved().saturating_add(step).min(end))?;
        }
        Ok(())
    }

    /// Forget a pending reservation ahead that will not be made.
    pub(crate) fn cancel_reserve_ahead(&self) {
        self.ahead_pending.store(false, Ordering::Release);
    }

    /// The put refused because `e` (ENOSPC) kept a `len`-byte record from being written.
    fn disk_full(&self, len: usize, e: &std::io::Error) -> crate::error::StoreError {
        crate::error::StoreError::ServiceNotAvailable(format!(
            "disk full: no space for a {len}-byte record in {} ({e}); the message was not \
             stored. Free space on that partition (delete other files, or let retention delete \
             expired CommitLog files) and send again",
            self.path.display()
        ))
    }

    /// Fill the rest of the file with a BLANK record (its 8-byte header; the rest is padding)
    /// and mark the file full.
    ///
    /// # Errors
    /// When the `pwrite` fails.
    pub(crate) fn append_blank(&self) -> Result<()> {
        let left = self.file_size - self.wrote.load(Ordering::Relaxed);
        let mut header = [0u8; crate::format::END_FILE_MIN_BLANK_LENGTH];
        crate::format::encode_blank(&mut header, left);
        // In the append window the padding over segments is written too (up to the decided
        // edge, which closes: no range past it gets one now): a segment's pages hold a range
        // appended before, and the file must read as zeros past the header, as without it.
        let wrote = self.wrote.load(Ordering::Relaxed);
        let n = match self.window.get() {
            Some(_) => {
                let _d = self.window_decided();
                let edge = self.window_edge.swap(self.file_size, Ordering::AcqRel);
                edge.max(wrote + header.len())
            }
            None => wrote + header.len(),
        }
        .min(self.file_size)
            - wrote;
        self.append_record(n, &mut Vec::new(), |dst| {
            let h = header.len().min(dst.len());
            dst[..h].copy_from_slice(&header[..h]);
            dst[h..].fill(0);
        })?;
        self.publish(self.file_size);
        Ok(())
    }

    fn publish(&self, end: usize) {
        self.wrote.store(end, Ordering::Release);
        match self.write_buffer.get() {
            Some((buf, _)) => buf.publish(end),
            None => self.mmap.publish(end),
        }
        if let Some(w) = self.window.get() {
            w.mark(self.offset_of(end));
        }
    }

    /// Append through `window` from here on: the CommitLog's files in the ASYNC_FLUSH layout
    /// without a pool buffer, whose size is a whole number of its segments. (Under
    /// SYNC_FLUSH, where every round writes the partial last page out, the window's
    /// `O_DIRECT` writes cost more than the staged `pwrite`: benches/RESULTS.md.)
    pub(crate) fn attach_window(&self, window: Arc<AppendWindow>) {
        let seg = window.segment_len();
        if !self.file_size.is_multiple_of(seg)
            || self.has_write_buffer()
            || self.write_through_file.load(Ordering::Relaxed)
        {
            return;
        }
        let _d = self.window_decided();
        let edge = self.wrote_position().next_multiple_of(seg);
        self.window_edge
            .store(edge.min(self.file_size), Ordering::Release);
        let _ = self.window.set(window);
    }

    fn window_decided(&self) -> MutexGuard<'_, ()> {
        self.window_decided
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Before the appender writes below `end`: every range there is decided (see
    /// `window_edge`), so the window's thread never maps a segment under a write.
    fn decide_window(&self, end: usize) {
        if end <= self.window_edge.load(Ordering::Acquire) {
            return;
        }
        let Some(w) = self.window.get() else { return };
        let _d = self.window_decided();
        if end > self.window_edge.load(Ordering::Acquire) {
            let edge = end.next_multiple_of(w.segment_len()).min(self.file_size);
            self.window_edge.store(edge, Ordering::Release);
        }
    }

    /// The window thread's step (every `append_window::COMMIT_INTERVAL`): map segments over
    /// the [`AHEAD`] ranges after the appender's, where not decided yet, then write out what is
    /// published of the attached segments and give back those whose range is on the file
    /// whole.
    pub(crate) fn commit_window(&self) {
        let Some(w) = self.window.get() else { return };
        let seg = w.segment_len();
        {
            let _d = self.window_decided();
            let wrote = self.wrote_position();
            loop {
                let edge = self.window_edge.load(Ordering::Acquire);
                if edge >= self.file_size || edge >= wrote + AHEAD * seg || self.is_full() {
                    break;
                }
                let Some(s) = w.take() else { break };
                if let Err(e) = self.attach_segment(s, edge, w) {
                    log::warn!(
                        "no append window for {} at {edge}: {e}; appended through the page cache",
                        self.path.display()
                    );
                    break;
                }
            }
        }
        if let Err(e) = self.write_window_out(w) {
            log::error!("{e}; will retry");
        }
    }

    /// Write what is published of the attached segments to the file and give back those
    /// whose range is on the file whole.
    fn write_window_out(&self, w: &AppendWindow) -> Result<()> {
        let done = self
            .mmap
            .commit_segments(self.direct_file(), true)
            .ctx(|| format!("writing the append window of {} out", self.path.display()))?;
        w.give_all(done);
        Ok(())
    }

    /// Map `s` over the range at `edge` and move the edge past it (under `window_decided`).
    fn attach_segment(
        &self,
        s: crate::mmap::ShmSegment,
        edge: usize,
        w: &AppendWindow,
    ) -> std::io::Result<()> {
        let (dev, ino, born) = match crate::append_window::file_identity(self.file()) {
            Ok(id) => id,
            Err(e) => {
                w.give(s);
                return Err(e);
            }
        };
        s.set_owner(SegmentOwner {
            dev,
            ino,
            born,
            file_from_offset: self.file_from_offset,
            at: edge,
        });
        match self.mmap.attach(edge, s) {
            Ok(()) => {
                self.window_edge
                    .store(edge + w.segment_len(), Ordering::Release);
                Ok(())
            }
            Err((s, e)) => {
                w.give(s);
                Err(e)
            }
        }
    }

    /// Write every attached segment out (published or only written bytes) and map the file
    /// back over them: before a truncation moves positions back, and at shutdown.
    ///
    /// # Errors
    /// A write error; the segments stay attached then.
    pub(crate) fn detach_window(&self) -> Result<()> {
        let Some(w) = self.window.get() else {
            return Ok(());
        };
        let _d = self.window_decided();
        let done = self
            .mmap
            .detach_all(self.direct_file())
            .ctx(|| format!("writing the append window of {} out", self.path.display()))?;
        w.give_all(done);
        Ok(())
    }

    /// The `O_DIRECT` descriptor for writing the window out, opened on first use.
    fn direct_file(&self) -> Option<&std::fs::File> {
        self.direct
            .get_or_init(|| {
                use std::os::unix::fs::OpenOptionsExt;
                std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_DIRECT)
                    .open(&self.path)
                    .map_err(|e| {
                        log::warn!(
                            "{} cannot be opened with O_DIRECT ({e}); its append window is \
                             written through the page cache",
                            self.path.display()
                        );
                    })
                    .ok()
            })
            .as_ref()
    }

    /// Whether segments of the append window are mapped over ranges of this file.
    #[must_use]
    pub(crate) fn holds_window_segments(&self) -> bool {
        self.mmap.on_file_below() != usize::MAX
    }

    /// Whether `[pos, pos + len)` can be sent from the file (`sendfile`): it is not in the
    /// append window (see `mmap::segment`).
    #[must_use]
    pub fn on_file(&self, pos: usize, len: usize) -> bool {
        self.mmap.on_file(pos, len)
    }

    /// Append `data` whole into the mapping; `Ok(false)`, and nothing written, if it does not
    /// fit (ConsumeQueue units and timer-log entries, written by one thread each).
    ///
    /// # Errors
    /// When the blocks under it cannot be allocated (ENOSPC); nothing is written then.
    pub(crate) fn append_bytes(&self, data: &[u8]) -> Result<bool> {
        let wrote = self.wrote.load(Ordering::Relaxed);
        if self.file_size - wrote < data.len() {
            return Ok(false);
        }
        self.mmap
            .write(wrote, data.len(), |dst| dst.copy_from_slice(data))
            .ctx(|| format!("writing {} at {wrote}", self.path.display()))?;
        self.publish(wrote + data.len());
        Ok(true)
    }

    /// [`append_record`](Self::append_record) of a message record whose `body` the caller
    /// holds. A file appended with `pwrite` gets it in one `pwritev` of the fields `around`
    /// encodes into `scratch` (the record less its body; it returns where the body goes) and
    /// the body where it lies: the body is copied once, by the kernel into the page cache,
    /// instead of into `scratch` first. Other layouts encode the `whole` record in place.
    ///
    /// # Errors
    /// As [`append_record`](Self::append_record).
    pub(crate) fn append_record_around_body(
        &self,
        len: usize,
        scratch: &mut Vec<u8>,
        body: &[u8],
        around: impl FnOnce(&mut [u8]) -> usize,
        whole: impl FnOnce(&mut [u8]),
    ) -> Result<()> {
        if self.write_buffer.get().is_some() || !self.write_through_file.load(Ordering::Relaxed) {
            return self.append_record(len, scratch, whole);
        }
        let wrote = self.room_for(len, || format!("a {len}-byte record does"))?;
        let mut staged = self.staged();
        if len <= STAGE_RECORD_MAX && staged.len() + len <= STAGED_MAX {
            let at = staged.len();
            staged.resize(at + len, 0);
            whole(&mut staged[at..]);
            self.wrote.store(wrote + len, Ordering::Release);
            return Ok(());
        }
        scratch.clear();
        scratch.resize(len - body.len(), 0);
        let body_at = around(scratch);
        let (head, tail) = scratch.split_at(body_at);
        let parts = [
            std::io::IoSlice::new(head),
            std::io::IoSlice::new(body),
            std::io::IoSlice::new(tail),
        ];
        self.write_with_staged(&mut staged, &parts, wrote)
    }

    fn staged(&self) -> MutexGuard<'_, Vec<u8>> {
        self.staged.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Write what is staged and then `parts` (which belong at `wrote`) with one `pwritev`,
    /// and publish both.
    fn write_with_staged(
        &self,
        staged: &mut Vec<u8>,
        parts: &[std::io::IoSlice<'_>],
        wrote: usize,
    ) -> Result<()> {
        use std::io::IoSlice;
        let len: usize = parts.iter().map(|p| p.len()).sum();
        // At most three parts (head, body, tail) follow what is staged.
        let mut all = [IoSlice::new(&[]); 4];
        all[0] = IoSlice::new(staged);
        all[1..=parts.len()].copy_from_slice(parts);
        let from = (wrote - staged.len()) as u64;
        write_all_at_vectored(self.mmap.file(), &mut all[..=parts.len()], from)
            .ctx(|| format!("writing {}", self.path.display()))?;
        staged.clear();
        self.publish(wrote + len);
        Ok(())
    }

    /// Write the staged records (the SYNC_FLUSH layout's group-commit round, before its
    /// `fdatasync`) and make them readable. A file that is full gives its staging memory
    /// back.
    ///
    /// # Errors
    /// When the `pwrite` fails; the records stay staged (unreadable, not durable) and the
    /// next round writes them again.
    pub(crate) fn write_staged(&self) -> Result<()> {
        let mut staged = self.staged();
        if !staged.is_empty() {
            self.write_with_staged(&mut staged, &[], self.wrote_position())?;
        }
        if self.is_full() && staged.capacity() > 0 {
            *staged = Vec::new();
        }
        Ok(())
    }

    /// Where `len` bytes go, once they are known to fit and their blocks are allocated;
    /// `what` names them in the error when they do not fit.
    fn room_for(&self, len: usize, what: impl FnOnce() -> String) -> Result<usize> {
        let wrote = self.wrote.load(Ordering::Relaxed);
        if self.file_size - wrote < len {
            return Err(crate::error::StoreError::MessageIllegal(format!(
                "{} not fit the {} bytes left in {}",
                what(),
                self.file_size - wrote,
                self.path.display()
            )));
        }
        // Also for the pool buffer and `pwrite`: their bytes reach the file later or now,
        // and a failure there would be after the put was acknowledged, or a torn record.
        self.reserve(wrote + len)
            .map_err(|e| self.disk_full(len, &e))?;
        Ok(wrote)
    }

    /// Move pool-buffer bytes into the file when at least `least_pages` dirty pages (or any,
    /// with 0) are waiting; gives the buffer back once the file is full and committed.
    /// Returns the committed position. Only the commit thread calls this.
    pub fn commit(&self, least_pages: usize) -> usize {
        let Some((buf, pool)) = self.write_buffer.get() else {
            return self.read_position();
        };
        let wrote = self.wrote.load(Ordering::Acquire);
        let committed = self.mmap.published();
        let able = if wrote == self.file_size {
            wrote > committed
        } else if least_pages > 0 {
            pages(wrote) - pages(committed) >= least_pages
        } else {
            wrote > committed
        };
        if able {
            if let Some(src) = buf.read(committed, wrote - committed) {
                // `pwrite`, as RocketMQ's `FileChannel.write`: the kernel fills page-cache pages
                // straight from the buffer, instead of each page of the mapping faulting in
                // (zeroed first, then marked writable) under a store.
                use std::os::unix::fs::FileExt;
                match self.mmap.file().write_all_at(src, committed as u64) {
                    Ok(()) => self.mmap.publish(wrote),
                    Err(e) => log::error!(
                        "committing {} at {committed}: {e}; will retry",
                        self.path.display()
                    ),
                }
            }
        }
        if self.mmap.published() == self.file_size
            && !self.buffer_returned.swap(true, Ordering::AcqRel)
        {
            pool.return_buffer(Arc::clone(buf));
        }
        self.read_position()
    }

    /// Sync readable bytes to disk when at least `least_pages` dirty pages (or any, with 0)
    /// are waiting. Returns the flushed position.
    ///
    /// # Errors
    /// When the sync fails; the flushed position is then not moved.
    pub fn flush(&self, least_pages: usize) -> Result<usize> {
        let write_through = self.write_through_file.load(Ordering::Relaxed);
        if write_through {
            self.write_staged()?;
        }
        // The window's pages are not the file's: they are written out, then `fdatasync`.
        let window = self.window.get();
        let mut read = self.read_position();
        if least_pages > 0 && !write_through && window.is_none() && read < self.file_size {
            // A threshold flush of a mapped file stops below the folio the appender is
            // filling: syncing it would write-protect it and fault the next append. The
            // thorough flush (least_pages = 0) covers the tail.
            read -= read % ACTIVE_FOLIO_BYTES;
        }
        let flushed = self.flushed.load(Ordering::Acquire);
        let able = if read <= flushed {
            false
        } else if read == self.file_size || least_pages == 0 {
            true
        } else {
            pages(read) - pages(flushed) >= least_pages
        };
        if able {
            if let Some(w) = window {
                let _d = self.window_decided();
                self.write_window_out(w)?;
            }
            if write_through || window.is_some() {
                self.mmap.file().sync_data()
            } else {
                self.mmap.flush_range(flushed, read - flushed)
            }
            .ctx(|| format!("flushing {}", self.path.display()))?;
            self.flushed.fetch_max(read, Ordering::AcqRel);
        }
        Ok(self.flushed_position())
    }

    /// Readable bytes `[pos, pos + len)`.
    #[must_use]
    pub fn read(&self, pos: usize, len: usize) -> Option<&[u8]> {
        if pos.checked_add(len)? > self.read_position() {
            return None;
        }
        self.mmap.read(pos, len)
    }

    /// All readable bytes from `pos`.
    #[must_use]
    pub fn read_from(&self, pos: usize) -> Option<&[u8]> {
        let read = self.read_position();
        if pos >= read {
            return None;
        }
        self.mmap.read(pos, read - pos)
    }

    /// The mapping from `pos` to the published end, for recovery scans: a file opened from
    /// disk is published whole until recovery finds where its valid data ends.
    pub(crate) fn raw_from(&self, pos: usize) -> &[u8] {
        self.mmap
            .read(pos, self.mmap.published().saturating_sub(pos))
            .unwrap_or(&[])
    }

    /// Recovery: everything below `pos` is valid, nothing above is.
    pub(crate) fn set_positions(&self, pos: usize) {
        if let Err(e) = self.write_staged() {
            log::error!("{e}; the records staged in {} are cut", self.path.display());
            self.staged().clear();
        }
        if let Err(e) = self.detach_window() {
            log::error!("{e}; the window's bytes above {pos} are cut");
        }
        let pos = pos.min(self.file_size);
        self.mmap.rewind_for_recovery(pos);
        self.wrote.store(pos, Ordering::Release);
        self.flushed.store(pos, Ordering::Release);
        if let Some(w) = self.window.get() {
            let _d = self.window_decided();
            let edge = pos.next_multiple_of(w.segment_len()).min(self.file_size);
            self.window_edge.store(edge, Ordering::Release);
        }
    }

    /// Zero `[pos, file_size)` so a later scan cannot mistake stale bytes for records (only
    /// where the file holds data: holes read as zeros). Recovery only (before the store is
    /// shared), after [`set_positions`](Self::set_positions)`(pos)`.
    pub(crate) fn zero_tail(&self, pos: usize) -> Result<()> {
        self.mmap
            .zero_unpublished(pos)
            .ctx(|| format!("zeroing the tail of {}", self.path.display()))?;
        Ok(())
    }

    /// Pre-fault the mapping for writing (a file created with `preallocate` only: the pages
    /// of a sparse file are not faulted in, see `MmapFile::prefault`).
    pub fn warm(&self) {
        self.mmap.prefault();
    }

    /// Recovery's look-ahead: read faults without read-ahead while `on` (see `mmap`).
    pub(crate) fn advise_random(&self, on: bool) {
        self.mmap.advise_random(on);
    }

    /// Last modification time of the file on disk.
    #[must_use]
    pub fn last_modified(&self) -> SystemTime {
        self.mmap
            .file()
            .metadata()
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH)
    }

    /// First time a deletion was refused because readers held the file (0 = never), set on
    /// the first call.
    pub(crate) fn mark_destroy_attempt(&self, now: i64) -> i64 {
        match self.first_destroy_attempt.compare_exchange(
            0,
            now,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => now,
            Err(prev) => prev,
        }
    }
}

impl Drop for MappedFile {
    /// A file dropped while it holds segments of the append window (a store dropped without
    /// a shutdown, a slave's truncation deleting files) writes them out and gives them back,
    /// so the bytes reach the file and the window keeps its segments.
    fn drop(&mut self) {
        if self.holds_window_segments() {
            if let Err(e) = self.detach_window() {
                log::error!("{e}");
            }
        }
    }
}

impl std::fmt::Debug for MappedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedFile")
            .field("path", &self.path)
            .field("wrote", &self.wrote_position())
            .field("committed", &self.read_position())
            .field("flushed", &self.flushed_position())
            .finish_non_exhaustive()
    }
}

/// `pwritev` all of `parts` at `offset`, retrying short writes and interrupts.
fn write_all_at_vectored(
    file: &std::fs::File,
    mut parts: &mut [std::io::IoSlice<'_>],
    mut offset: u64,
) -> std::io::Result<()> {
    while !parts.is_empty() {
        match rustix::io::pwritev(file, parts, offset) {
            Ok(0) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::WriteZero,
                    "pwritev wrote nothing",
                ))
            }
            Ok(n) => {
                offset += n as u64;
                std::io::IoSlice::advance_slices(&mut parts, n);
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_move_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let f = MappedFile::create(dir.path(), 8192, 8192).unwrap();
        assert_eq!(f.path().file_name().unwrap(), "00000000000000008192");
        assert!(f.append_bytes(b"hello").unwrap());
        assert_eq!(f.wrote_position(), 5);
        assert_eq!(f.read_position(), 5);
        assert_eq!(f.flushed_position(), 0);
        assert_eq!(f.read(0, 5).unwrap(), b"hello");
        assert!(f.read(0, 6).is_none());
        assert_eq!(f.flush(1).unwrap(), 0, "one page not yet dirty enough");
        assert_eq!(f.flush(0).unwrap(), 5);
        assert!(!f.append_bytes(&[0u8; 8192]).unwrap());
    }

    #[test]
    fn sync_flush_layout_writes_through_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = MappedFile::create_with(dir.path(), 0, 8192, true, false).unwrap();
        let mut scratch = Vec::new();
        f.append_record(5, &mut scratch, |d| d.copy_from_slice(b"hello"))
            .unwrap();
        assert_eq!(
            f.read(0, 5).unwrap(),
            b"hello",
            "pwrite is visible through the mapping"
        );
        assert_eq!(f.flush(0).unwrap(), 5);
        assert!(
            f.append_record(8188, &mut scratch, |_| {}).is_err(),
            "does not fit"
        );
        f.append_blank().unwrap();
        assert!(f.is_full());
        assert_eq!(std::fs::read(f.path()).unwrap()[..5], *b"hello");
    }

    #[test]
    fn sync_flush_layout_stages_small_records_until_the_round_writes_them() {
        let dir = tempfile::tempdir().unwrap();
        let f = MappedFile::create_with(dir.path(), 0, 1 << 20, true, false).unwrap();
        let mut scratch = Vec::new();
        let small = |f: &MappedFile, scratch: &mut Vec<u8>, text: &[u8]| {
            f.append_record_around_body(
                text.len(),
                scratch,
                b"",
                |d| {
                    d.copy_from_slice(text);
                    d.len()
                },
                |d| d.copy_from_slice(text),
            )
            .unwrap();
        };
        small(&f, &mut scratch, b"hello");
        small(&f, &mut scratch, b"world");
        assert_eq!(f.wrote_position(), 10);
        assert_eq!(f.read_position(), 0, "staged, not readable");
        assert!(f.read(0, 5).is_none());
        f.write_staged().unwrap();
        assert_eq!(f.read(0, 10).unwrap(), b"helloworld");
        // A record too big to stage goes out at once, after what is staged, in order.
        small(&f, &mut scratch, b"ab");
        let body = vec![7u8; STAGE_RECORD_MAX];
        f.append_record_around_body(
            body.len() + 2,
            &mut scratch,
            &body,
            |d| {
                d.copy_from_slice(b"<>");
                1
            },
            |_| unreachable!("a big record is written around its body"),
        )
        .unwrap();
        let end = 12 + body.len() + 2;
        assert_eq!(f.read_position(), end);
        let got = f.read(10, end - 10).unwrap();
        assert_eq!(&got[..3], b"ab<");
        assert!(got[3..3 + body.len()].iter().all(|b| *b == 7));
        assert_eq!(got[end - 11], b'>');
        // The round's flush writes what is staged before it syncs.
        small(&f, &mut scratch, b"tail");
        assert_eq!(f.flush(0).unwrap(), end + 4);
        assert_eq!(&std::fs::read(f.path()).unwrap()[end..end + 4], b"tail");
    }

    #[test]
    fn a_record_written_around_its_body_is_the_encoded_record_in_every_layout() {
        use crate::format::{
            calc_msg_length, encode_record, encode_record_around_body, MessageToStore, StoreFields,
        };
        let body: Vec<u8> = (0..70_000u32)
            .map(|i| u8::try_from(i % 251).unwrap())
            .collect();
        let host = "127.0.0.1:10911".parse().unwrap();
        let msg = MessageToStore {
            topic: "BigBodies",
            queue_id: 3,
            flag: 1,
            body: &body,
            properties: "KEYS\u{1}k\u{2}".as_bytes(),
            sys_flag: 0,
            born_timestamp: 1,
            born_host: host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
        };
        let fields = StoreFields {
            queue_offset: 9,
            physical_offset: 16,
            store_timestamp: 2,
            store_host: host,
            body_crc: 7,
            sys_flag: 0,
        };
        let len = calc_msg_length(0, body.len(), msg.topic.len(), msg.properties.len());
        let mut want = vec![0u8; len];
        encode_record(&mut want, &msg, &fields);
        // SYNC_FLUSH (`pwritev` of the fields around the body) and ASYNC_FLUSH (in place).
        for write_through in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let f = MappedFile::create_with(dir.path(), 0, 1 << 20, write_through, false).unwrap();
            let mut scratch = Vec::new();
            f.append_record(16, &mut scratch, |d| d.fill(9)).unwrap();
            f.append_record_around_body(
                len,
                &mut scratch,
                msg.body,
                |d| encode_record_around_body(d, &msg, &fields),
                |d| {
                    encode_record(d, &msg, &fields);
                },
            )
            .unwrap();
            assert_eq!(f.wrote_position(), 16 + len);
            assert!(
                f.read(16, len).unwrap() == want,
                "write_through={write_through}"
            );
            assert!(
                scratch.len() < 1024,
                "the body was not copied into scratch ({} bytes)",
                scratch.len()
            );
        }
    }

    #[test]
    fn pool_buffer_hides_uncommitted_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let pool = Arc::new(TransientStorePool::new(1, 8192).unwrap());
        let f = MappedFile::create(dir.path(), 0, 8192).unwrap();
        f.attach_write_buffer(pool.borrow_buffer().unwrap(), Arc::clone(&pool));
        assert_eq!(pool.available_buffer_nums(), 0);
        let mut scratch = Vec::new();
        f.append_record(3, &mut scratch, |d| d.copy_from_slice(b"abc"))
            .unwrap();
        assert_eq!(f.read_position(), 0, "not committed yet");
        assert!(f.read(0, 3).is_none());
        assert_eq!(f.commit(1), 0, "below the page threshold");
        assert_eq!(f.commit(0), 3);
        assert_eq!(f.read(0, 3).unwrap(), b"abc");
        assert_eq!(
            &std::fs::read(f.path()).unwrap()[..3],
            b"abc",
            "in the file too"
        );
        f.append_record(8189, &mut scratch, |d| d.fill(7)).unwrap();
        assert_eq!(f.commit(4), 8192, "a full file commits regardless of pages");
        assert_eq!(pool.available_buffer_nums(), 1, "buffer returned once full");
        assert_eq!(f.read(8191, 1).unwrap(), [7]);
    }
}

/// A readable range of one mapped file (RocketMQ's `SelectMappedBufferResult`). It holds the
/// file, so the mapping stays valid (and deletion waits) while the range is in use; the
/// broker can `sendfile` it from [`file`](Self::file) at [`file_pos`](Self::file_pos).
#[derive(Clone)]
pub struct SelectMappedBufferResult {
    start_offset: i64,
    file: Arc<MappedFile>,
    pos: usize,
    len: usize,
}

impl SelectMappedBufferResult {
    /// `len` readable bytes of `file` at `pos`, or `None` if they are not readable.
    #[must_use]
    pub fn new(file: Arc<MappedFile>, pos: usize, len: usize) -> Option<Self> {
        file.read(pos, len)?;
        Some(Self {
            start_offset: file.file_from_offset() + i64::try_from(pos).ok()?,
            file,
            pos,
            len,
        })
    }

    /// Global offset of the first byte.
    #[must_use]
    pub fn start_offset(&self) -> i64 {
        self.start_offset
    }

    /// The bytes.
    #[must_use]
    pub fn bytes(&self) -> &[u8] {
        self.file.read(self.pos, self.len).unwrap_or(&[])
    }

    /// Length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the range is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Extend this range by `next` when `next` starts, in the same file, where this one
    /// ends; `false`, and nothing changed, otherwise.
    pub(crate) fn join(&mut self, next: &Self) -> bool {
        let adjacent = Arc::ptr_eq(&self.file, &next.file) && self.pos + self.len == next.pos;
        if adjacent {
            self.len += next.len;
        }
        adjacent
    }

    /// The mapped file holding the range.
    #[must_use]
    pub fn mapped_file(&self) -> &Arc<MappedFile> {
        &self.file
    }

    /// Position of the range in its file (for `sendfile`).
    #[must_use]
    pub fn file_pos(&self) -> usize {
        self.pos
    }

    /// Whether the file itself holds the bytes (`sendfile` may read them); false while they
    /// are in the append window, whose pages only the mapping reads.
    #[must_use]
    pub fn on_file(&self) -> bool {
        self.file.on_file(self.pos, self.len)
    }
}

impl std::fmt::Debug for SelectMappedBufferResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelectMappedBufferResult")
            .field("start_offset", &self.start_offset)
            .field("pos", &self.pos)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}
