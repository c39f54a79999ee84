//! The one module of rmq that talks to the OS below `std`: file mappings, anonymous
//! `mlock`ed buffers for the transient store pool, `fallocate`, `lseek(SEEK_DATA)`,
//! and `statvfs`. Every `unsafe` block in the project is here, each with the invariant that
//! makes it sound.
//!
//! Files are created sparse (RocketMQ's `setLength`) unless asked to be allocated up front
//! ([`Prealloc`]). A store through a shared mapping into a hole of a full file system raises
//! SIGBUS and kills the process, and on tmpfs even a *load* from a hole does (the page is
//! allocated on the fault). So no byte is touched through a mapping unless its block is known
//! to be allocated: [`MmapFile`] reserves blocks ahead of its writer with `fallocate` (or
//! zeros written with `pwrite`), which fails cleanly with ENOSPC, and publishes, at open, only
//! up to the end of the file's data; [`OwnedMap`] keeps a bit per page, reserves a page (in
//! a forward run, the rest of its 256 KiB too) before its first store and reads a hole as
//! zeros without touching it.
//!
//! The central invariant, kept by the types here rather than by their callers: a byte range
//! of a shared mapping ([`MmapFile`], [`AnonBuffer`]) is written by one writer at a time
//! (a claim flag) and only at or above the published end, *before* that end moves past it
//! with a `Release` store; readers get only bytes below the end, loaded with `Acquire`. A
//! published byte is never written again, with two exceptions whose soundness rests on
//! their callers, each named for it: `MmapFile::rewind_for_recovery` (recovery cuts a torn
//! tail while the store is being opened, before any reader exists) and
//! `AnonBuffer::rewind_for_reuse` (the pool reuses a buffer its file has fully committed). Files rewritten in place (index files, the timer
//! wheel) are [`OwnedMap`]s instead, whose writes need `&mut self`. Files are never truncated
//! while mapped, and the store directory is held under an exclusive `lock` file so no other
//! broker changes them.
//!
//! The module is private to rmq-store: nothing outside the crate can reach a mapping.
#![allow(
    unsafe_code,
    reason = "the one module that maps files; every block says why it is sound"
)]

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use memmap2::{MmapMut, MmapOptions};

mod segment;
pub(crate) use segment::{SegmentOwner, ShmSegment};

/// Size of an OS page; flush and commit thresholds count these.
pub(crate) const OS_PAGE_SIZE: usize = 4096;

/// How the blocks of a new file are allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prealloc {
    /// Not at all: a sparse file of the full length, as RocketMQ's `setLength`. Blocks are
    /// reserved ahead of the writer as it goes.
    Sparse,
    /// All of them, as unwritten extents (`posix_fallocate`), for `warmMapedFileEnable`.
    Allocate,
    /// All of them, written with zeros and synced: `warmMapedFileEnable` under SYNC_FLUSH,
    /// whose every sync would otherwise also convert an unwritten extent.
    Zeros,
}

/// How blocks ahead of a writer are reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reserve {
    /// `posix_fallocate` (unwritten extents; a metadata change only).
    Allocate,
    /// Zeros written with `pwrite`: for files appended with `pwrite` and synced with
    /// `fdatasync` at every put, whose syncs then find written blocks and change no metadata,
    /// except the one sync per reserved chunk.
    Zeros,
}

/// Smallest and largest step a sequential writer's reservation advances by.
const MIN_RESERVE_CHUNK: usize = 16 << 10;
const MAX_RESERVE_CHUNK: usize = 4 << 20;

/// The reservation step for a file of `len` bytes: 1/256 of it, within
/// [`MIN_RESERVE_CHUNK`]..=[`MAX_RESERVE_CHUNK`] (4 MiB for a 1 GiB CommitLog file, 24 KiB for
/// a 6 MB ConsumeQueue file).
fn reserve_chunk(len: usize) -> usize {
    (len / 256)
        .clamp(MIN_RESERVE_CHUNK, MAX_RESERVE_CHUNK)
        .next_multiple_of(OS_PAGE_SIZE)
}

/// Open `path` for reading and writing, creating it if missing, with a length of `len` and
/// its blocks allocated as `prealloc` says. On any failure a file this call created is
/// removed again, so a full disk leaves no partial or empty file behind.
fn create_file(path: &Path, len: usize, prealloc: Prealloc) -> io::Result<File> {
    let (file, created) = match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
    {
        Ok(f) => (f, true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            (OpenOptions::new().read(true).write(true).open(path)?, false)
        }
        Err(e) => return Err(e),
    };
    let sized = size_file(&file, path, len, prealloc);
    if let Err(e) = sized {
        if created {
            let _ = std::fs::remove_file(path);
        }
        return Err(e);
    }
    Ok(file)
}

fn size_file(file: &File, path: &Path, len: usize, prealloc: Prealloc) -> io::Result<()> {
    let cur = file.metadata()?.len();
    if cur > len as u64 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{} is {cur} bytes, larger than the configured {len}",
                path.display()
            ),
        ));
    }
    if cur < len as u64 {
        file.set_len(len as u64)?;
    }
    match prealloc {
        Prealloc::Sparse => Ok(()),
        Prealloc::Allocate => allocate(file, 0, len, Reserve::Allocate),
        Prealloc::Zeros => {
            allocate(file, 0, len, Reserve::Zeros)?;
            file.sync_data()
        }
    }
}

/// Give `[from, to)` of `file` real blocks, as `how` says.
///
/// # Errors
/// ENOSPC (or another OS error); blocks allocated before the failure may stay allocated.
fn allocate(file: &File, from: usize, to: usize, how: Reserve) -> io::Result<()> {
    if to <= from {
        return Ok(());
    }
    match how {
        Reserve::Allocate => {
            let off = libc::off_t::try_from(from)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
            let n = libc::off_t::try_from(to - from)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
            // SAFETY: plain FFI call on a valid, open descriptor; no memory is passed.
            let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), off, n) };
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::from_raw_os_error(rc))
            }
        }
        Reserve::Zeros => {
            static ZEROS: [u8; 64 << 10] = [0; 64 << 10];
            let mut pos = from;
            while pos < to {
                let n = ZEROS.len().min(to - pos);
                file.write_all_at(&ZEROS[..n], pos as u64)?;
                pos += n;
            }
            Ok(())
        }
    }
}

/// The ranges `[start, end)` of `file` at or above `from` and below `len` that hold data
/// (allocated blocks, or pages in the cache), by `lseek(SEEK_DATA / SEEK_HOLE)`. A file system
/// without those reports the whole range as data, as the kernel's generic code does.
fn data_ranges(file: &File, from: usize, len: usize) -> Vec<(usize, usize)> {
    let fd = file.as_raw_fd();
    let seek = |pos: usize, whence: libc::c_int| -> Option<usize> {
        let off = libc::off_t::try_from(pos).ok()?;
        // SAFETY: plain FFI call on a valid, open descriptor; no memory is passed. The file
        // position it moves is not used by anything here (all I/O is positional).
        let r = unsafe { libc::lseek(fd, off, whence) };
        usize::try_from(r).ok()
    };
    let mut out = Vec::new();
    let mut pos = from;
    while pos < len {
        let Some(start) = seek(pos, libc::SEEK_DATA) else {
            if out.is_empty() && pos == from {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ENXIO) {
                    out.push((from, len)); // no SEEK_DATA here: assume all data
                }
            }
            break;
        };
        if start >= len {
            break;
        }
        let end = seek(start, libc::SEEK_HOLE).unwrap_or(len).min(len);
        if end <= start {
            break;
        }
        out.push((start, end));
        pos = end;
    }
    out
}

/// A file mapped read-write in full, shared between one writer and many readers, that
/// keeps the publish protocol itself: bytes below the published end are read through
/// [`read`](Self::read) and never written again; bytes at or above it are written only
/// through [`write`](Self::write), by one writer at a time, and become readable when
/// [`publish`](Self::publish)ed.
pub(crate) struct MmapFile {
    file: File,
    map: MmapMut,
    ptr: *mut u8,
    len: usize,
    /// End of the published bytes (`Release` on publish, `Acquire` on read).
    published: CachePadded<AtomicUsize>,
    /// Held while the unpublished part is written or the published end moves.
    writing: CachePadded<AtomicBool>,
    /// Every block below this is allocated: [`write`](Self::write) stores only below it.
    /// Moved only forward, under `reserving`, by [`reserve`](Self::reserve).
    reserved: AtomicUsize,
    /// Held while blocks are being reserved. Not the write claim: a reservation ahead of the
    /// writer, made by another thread, may wait on the file system for a long time (behind
    /// writeback of the same file), and the writer must not spin on it meanwhile.
    reserving: std::sync::Mutex<()>,
    /// Step by which `reserved` advances.
    chunk: usize,
    /// End of the last byte [`write`](Self::write) has stored (published or not yet).
    written_end: AtomicUsize,
    /// Shared-memory segments mapped over ranges of the mapping (see `segment`), by start.
    segments: std::sync::Mutex<Vec<segment::Attached>>,
    /// Start of the lowest attached segment, `usize::MAX` when none is: below it the file
    /// holds every published byte.
    on_file_below: AtomicUsize,
}

/// An atomic on a cache line of its own. The dispatch thread reads `published` after every
/// append; were the writer's claim flag on the same line, each claim and release would take the
/// line away from the reader and back (without the padding: 1.20 µs per put against 0.91 µs
/// before the accessors, in the store bench's steady state; see benches/RESULTS.md).
#[repr(align(128))]
struct CachePadded<T>(T);

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// Holds [`MmapFile::writing`] and lets it go on drop (a panicking writer included).
struct WriteClaim<'a>(&'a AtomicBool);

impl<'a> WriteClaim<'a> {
    /// Claim `flag`; spins while another writer holds it (the owners of a file serialize
    /// their writes anyway, so this never waits in practice).
    fn take(flag: &'a AtomicBool) -> Self {
        while flag
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        Self(flag)
    }
}

impl Drop for WriteClaim<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

// SAFETY: the raw pointer targets the shared mapping owned by `map`, which lives as long as
// `self`; concurrent access follows the publish/acquire protocol described in the module docs.
unsafe impl Send for MmapFile {}
// SAFETY: as above; `&self` methods never hand out overlapping mutable access to published bytes.
unsafe impl Sync for MmapFile {}

impl MmapFile {
    /// Create (or reuse, if it is not larger) a file of `len` bytes, its blocks allocated as
    /// `prealloc` says, and map it. On failure a file this call created is removed.
    ///
    /// # Errors
    /// Any OS error, ENOSPC included.
    pub(crate) fn create(path: &Path, len: usize, prealloc: Prealloc) -> io::Result<Self> {
        let file = create_file(path, len, prealloc)?;
        let reserved = if prealloc == Prealloc::Sparse { 0 } else { len };
        Self::map(file, len, 0, reserved)
    }

    /// Map an existing file whose size must be exactly `len`. It is published up to the end
    /// of its data (a sparse file's hole after it is never read through the mapping), and
    /// blocks below that end count as reserved.
    ///
    /// # Errors
    /// I/O errors, or a size mismatch (a truncated or foreign file).
    pub(crate) fn open(path: &Path, len: usize) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let cur = file.metadata()?.len();
        if cur != len as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} is {cur} bytes but the configured file size is {len}; check the store config \
                     (mappedFileSize*) or move the file away",
                    path.display()
                ),
            ));
        }
        let data_end = data_ranges(&file, 0, len).last().map_or(0, |&(_, e)| e);
        Self::map(file, len, data_end, data_end)
    }

    fn map(file: File, len: usize, published: usize, reserved: usize) -> io::Result<Self> {
        // SAFETY: the file is held open by `self` for the mapping's life and is never
        // truncated while mapped (the store directory is locked; see module docs).
        let mut map = unsafe { MmapOptions::new().len(len).map_mut(&file)? };
        let ptr = map.as_mut_ptr();
        Ok(Self {
            file,
            map,
            ptr,
            len,
            published: CachePadded(AtomicUsize::new(published.min(len))),
            writing: CachePadded(AtomicBool::new(false)),
            reserved: AtomicUsize::new(reserved.min(len)),
            reserving: std::sync::Mutex::new(()),
            chunk: reserve_chunk(len),
            written_end: AtomicUsize::new(published.min(len)),
            segments: std::sync::Mutex::new(Vec::new()),
            on_file_below: AtomicUsize::new(usize::MAX),
        })
    }

    /// The underlying file (for `sendfile` and `fdatasync`).
    #[must_use]
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// End of the published bytes. A created file starts with none, an opened one with all
    /// (recovery then moves the end back to where valid data ends).
    #[must_use]
    pub(crate) fn published(&self) -> usize {
        self.published.load(Ordering::Acquire)
    }

    /// Published bytes `[pos, pos + len)`; `None` unless all of them are published.
    #[must_use]
    pub(crate) fn read(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.published.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: in bounds (the published end never exceeds `len`); published bytes are
        // only written again after `rewind_for_recovery`, see there.
        Some(unsafe { self.raw(pos, len) })
    }

    /// Let `f` write the unpublished bytes `[pos, pos + len)`; `None` (and `f` not called)
    /// when the range is out of bounds or starts below the published end.
    ///
    /// # Errors
    /// `InvalidInput` for such a range; the reservation's error (ENOSPC) when the blocks
    /// under it cannot be allocated, and then `f` is not called either.
    pub(crate) fn write<R>(
        &self,
        pos: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> io::Result<R> {
        let end = pos
            .checked_add(len)
            .filter(|&end| end <= self.len)
            .ok_or_else(|| invalid(format!("{len} bytes at {pos} are outside the file")))?;
        let _claim = WriteClaim::take(&self.writing);
        if pos < self.published.load(Ordering::Acquire) {
            return Err(invalid(format!(
                "{pos} is below the published end of the file"
            )));
        }
        self.reserve_for_writer(end)?;
        self.written_end.fetch_max(end, Ordering::AcqRel);
        // SAFETY: in bounds; at or above the published end, which cannot move while the
        // claim is held, so no reader sees these bytes, and the claim makes this the only
        // writer; below the reserved end, so every block under them is allocated and the
        // store cannot fault (SIGBUS on a full disk). The slice does not outlive `f`.
        Ok(f(unsafe { self.raw_mut(pos, len) }))
    }

    /// Allocate the blocks below `end` that are not yet (see [`Reserve`]), in steps of 1/256
    /// of the file, or exactly up to `end` when a whole step does not fit. Any thread may
    /// reserve ahead of the writer: blocks are only ever added at or above `reserved`, where
    /// no byte has been written, and the writer stores only below it.
    ///
    /// # Errors
    /// ENOSPC or another OS error; nothing counts as reserved then.
    pub(crate) fn reserve(&self, end: usize, how: Reserve) -> io::Result<()> {
        if end <= self.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let _one = self
            .reserving
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let from = self.reserved.load(Ordering::Acquire);
        if end <= from {
            return Ok(());
        }
        if end > self.len {
            return Err(invalid(format!(
                "cannot reserve {end} bytes of a {}-byte file",
                self.len
            )));
        }
        let step = end.next_multiple_of(self.chunk).min(self.len);
        let exact = end.next_multiple_of(OS_PAGE_SIZE).min(self.len);
        let to = match allocate(&self.file, from, step, how) {
            Ok(()) => step,
            Err(_) if exact < step => {
                allocate(&self.file, from, exact, how)?;
                exact
            }
            Err(e) => return Err(e),
        };
        self.reserved.store(to, Ordering::Release);
        Ok(())
    }

    /// The writer's own reservation before it stores below `end` (within the file): as far
    /// again as is reserved already (up to [`MAX_RESERVE_CHUNK`] more), else just `end` when
    /// that does not fit. A busy small file (a 6 MB ConsumeQueue file fills in under a second
    /// under batched sends) then takes about ten `fallocate`s instead of 250, and an idle one
    /// keeps its first step only.
    fn reserve_for_writer(&self, end: usize) -> io::Result<()> {
        let reserved = self.reserved.load(Ordering::Acquire);
        if end <= reserved {
            return Ok(());
        }
        let grown = (reserved + reserved.min(MAX_RESERVE_CHUNK)).min(self.len);
        if grown <= end || self.reserve(grown, Reserve::Allocate).is_err() {
            self.reserve(end, Reserve::Allocate)?;
        }
        Ok(())
    }

    /// End of the blocks known to be allocated.
    #[must_use]
    pub(crate) fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Acquire)
    }

    /// The step [`reserve`](Self::reserve) advances by.
    #[must_use]
    pub(crate) fn reserve_step(&self) -> usize {
        self.chunk
    }

    /// Recovery: zero every non-zero byte at or above `from` and the published end, so a later scan
    /// cannot mistake stale bytes for records. Only ranges holding data are looked at (a
    /// hole reads as zeros and must not be touched through the mapping). Returns whether
    /// anything was zeroed (and then synced).
    ///
    /// # Errors
    /// When the sync of a zeroed range fails.
    pub(crate) fn zero_unpublished(&self, from: usize) -> io::Result<bool> {
        let _claim = WriteClaim::take(&self.writing);
        let from = from.max(self.published.load(Ordering::Acquire));
        let mut zeroed = false;
        for (start, end) in data_ranges(&self.file, from, self.len) {
            // SAFETY: in bounds (`data_ranges` clips to the length); at or above the published
            // end with the claim held, so no other access to these bytes exists; the range holds
            // data, so its blocks are allocated and the stores cannot fault.
            let bytes = unsafe { self.raw_mut(start, end - start) };
            if bytes.iter().any(|&b| b != 0) {
                bytes.fill(0);
                self.map.flush_range(start, end - start)?;
                zeroed = true;
            }
        }
        Ok(zeroed)
    }

    /// Make the bytes below `end` readable (the published end only grows here).
    pub(crate) fn publish(&self, end: usize) {
        let _claim = WriteClaim::take(&self.writing);
        self.published
            .fetch_max(end.min(self.len), Ordering::Release);
    }

    /// Recovery: move the published end back to `end`, so the bytes above it (a torn or
    /// invalid tail) can be zeroed and written again. The one operation whose soundness
    /// rests on its caller: it runs while the store is being opened, before any reader
    /// holds bytes of this file (the file is not shared yet).
    pub(crate) fn rewind_for_recovery(&self, end: usize) {
        let _claim = WriteClaim::take(&self.writing);
        self.published.store(end.min(self.len), Ordering::Release);
        self.written_end.store(end.min(self.len), Ordering::Release);
    }

    /// Bytes `[pos, pos + len)` without a check of the publish protocol.
    ///
    /// # Safety
    /// `pos + len <= self.len`, and no one writes these bytes while the slice lives.
    unsafe fn raw(&self, pos: usize, len: usize) -> &[u8] {
        // SAFETY: the caller keeps the range in bounds of the live mapping and free of writers.
        unsafe { std::slice::from_raw_parts(self.ptr.add(pos), len) }
    }

    /// Bytes `[pos, pos + len)` to write.
    ///
    /// # Safety
    /// `pos + len <= self.len`, and no other reference to these bytes exists while the slice
    /// lives.
    #[expect(
        clippy::mut_from_ref,
        reason = "callers keep ranges disjoint (see # Safety)"
    )]
    unsafe fn raw_mut(&self, pos: usize, len: usize) -> &mut [u8] {
        // SAFETY: the caller keeps the range in bounds and exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(pos), len) }
    }

    /// Make `[pos, pos + len)` durable (`msync(MS_SYNC)`, which on Linux is a data sync of
    /// that range of the file).
    ///
    /// # Errors
    /// The OS error; the caller must not report those bytes as durable.
    pub(crate) fn flush_range(&self, pos: usize, len: usize) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        self.map.flush_range(pos, len)
    }

    /// Read faults bring in only the page touched (`MADV_RANDOM`) while `on`, normal
    /// read-ahead otherwise: recovery's look-ahead reads scattered stretches and must not
    /// pull in the file's unwritten tail around them. Advice only; a refusal changes nothing.
    pub(crate) fn advise_random(&self, on: bool) {
        let advice = if on {
            memmap2::Advice::Random
        } else {
            memmap2::Advice::Normal
        };
        let _ = self.map.advise(advice);
    }

    /// Give the cached pages of the whole pages inside `[pos, pos + len)` back to the kernel:
    /// this mapping's page-table entries are dropped (`MADV_DONTNEED`), then the page-cache
    /// pages themselves where they are clean and mapped nowhere else
    /// (`POSIX_FADV_DONTNEED`). Contents do not change: the next access reads the same bytes
    /// from the file. Callers pass flushed bytes only, so nothing is written back here.
    ///
    /// # Errors
    /// The OS error of either call (the range's pages may then stay cached).
    pub(crate) fn drop_cached(&self, pos: usize, len: usize) -> io::Result<()> {
        let from = pos.next_multiple_of(OS_PAGE_SIZE);
        // Never into an attached segment: its pages are the append window's, not the cache's.
        let to = pos
            .saturating_add(len)
            .min(self.len)
            .min(self.on_file_below())
            / OS_PAGE_SIZE
            * OS_PAGE_SIZE;
        if from >= to {
            return Ok(());
        }
        // SAFETY: a shared file mapping of our own, range in bounds and page aligned. For a
        // shared mapping MADV_DONTNEED only unmaps: the page cache keeps the bytes (dirty ones
        // included), and a later access of any live borrow faults the same bytes back in, so
        // no reader or writer can observe a change.
        unsafe {
            self.map
                .unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, from, to - from)?;
        }
        let (off, n) = (
            libc::off_t::try_from(from),
            libc::off_t::try_from(to - from),
        );
        let (Ok(off), Ok(n)) = (off, n) else {
            return Err(invalid(format!("range {from}..{to} exceeds off_t")));
        };
        // SAFETY: plain FFI call on a valid, open descriptor; no memory is passed.
        let rc = unsafe {
            libc::posix_fadvise(self.file.as_raw_fd(), off, n, libc::POSIX_FADV_DONTNEED)
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::from_raw_os_error(rc))
        }
    }

    /// How many of the pages of `[pos, pos + len)` are in the page cache (`mincore`).
    #[cfg(test)]
    pub(crate) fn resident_pages(&self, pos: usize, len: usize) -> usize {
        let from = pos / OS_PAGE_SIZE * OS_PAGE_SIZE;
        let to = pos.saturating_add(len).min(self.len);
        let mut vec = vec![0u8; (to - from).div_ceil(OS_PAGE_SIZE)];
        // SAFETY: a query on our own live mapping, page-aligned start, in bounds; `vec` has one
        // byte per page of the range, as mincore writes.
        let rc = unsafe {
            libc::mincore(
                self.ptr.add(from).cast::<libc::c_void>(),
                to - from,
                vec.as_mut_ptr(),
            )
        };
        assert_eq!(rc, 0, "mincore: {}", io::Error::last_os_error());
        vec.iter().filter(|b| **b & 1 == 1).count()
    }

    /// Fault every page in for writing, so the appender never takes a page fault. Uses
    /// `MADV_POPULATE_WRITE` where the kernel has it (5.14+), else touches each page.
    /// Does nothing unless every block of the file is allocated (created with
    /// [`Prealloc::Allocate`] or [`Prealloc::Zeros`]): faulting a hole in could SIGBUS.
    pub(crate) fn prefault(&self) {
        if self.reserved.load(Ordering::Acquire) < self.len {
            return;
        }
        // SAFETY: advice on our own live mapping; it changes no memory contents.
        let rc = unsafe {
            libc::madvise(
                self.ptr.cast::<libc::c_void>(),
                self.len,
                libc::MADV_POPULATE_WRITE,
            )
        };
        if rc == 0 {
            return;
        }
        // Touch only unpublished pages, under the write claim: no reader or writer is there,
        // and every block is allocated (checked above).
        let _claim = WriteClaim::take(&self.writing);
        let mut pos = self
            .published
            .load(Ordering::Acquire)
            .next_multiple_of(OS_PAGE_SIZE);
        while pos < self.len {
            // SAFETY: in bounds; at or above the published end with the claim held, so no
            // other access to this byte exists; the value written is the value read.
            unsafe {
                let p = self.ptr.add(pos);
                std::ptr::write_volatile(p, std::ptr::read_volatile(p));
            }
            pos += OS_PAGE_SIZE;
        }
    }
}

/// A mapped file with one owner: reads through `&self`, writes only through `&mut self`, so
/// the borrow checker (or the lock the owner keeps it under) rules out a write racing a read,
/// and bytes may be rewritten in place. The index files (under their header lock) and the
/// timer wheel (owned by the timer thread) are these. They are written at scattered places
/// (hash slots), so instead of a reserved end the map keeps one bit per page: set once the
/// page's block is allocated. A page is allocated before its first store; a read of a page
/// without a block returns zeros without touching the mapping.
pub(crate) struct OwnedMap {
    map: MmapFile,
    /// Bit `p` set: page `p` has a block.
    allocated: Vec<u64>,
}

impl OwnedMap {
    /// Create a sparse file of `len` bytes (or reuse one that is not larger) and map it.
    ///
    /// # Errors
    /// Any OS error; a file this call created is removed then.
    pub(crate) fn create(path: &Path, len: usize) -> io::Result<Self> {
        let map = MmapFile::create(path, len, Prealloc::Sparse)?;
        let mut m = Self::with_pages(map);
        m.mark_data_pages();
        Ok(m)
    }

    /// Map an existing file whose size must be exactly `len`.
    ///
    /// # Errors
    /// I/O errors, or a size mismatch.
    pub(crate) fn open(path: &Path, len: usize) -> io::Result<Self> {
        let mut m = Self::with_pages(MmapFile::open(path, len)?);
        m.mark_data_pages();
        Ok(m)
    }

    fn with_pages(map: MmapFile) -> Self {
        // Faults read the page touched and no more. With read-around, the first store into
        // a fresh stretch of an index file made the kernel read (zero) a 2 MiB folio, taken
        // from the free blocks the hypervisor had been given back and faults in again: 5.8 %
        // of the broker's CPU under batches of 4 096 x 256 B. Single pages come from the
        // allocator's warm per-CPU lists; the stores are scattered (slots) or sparse
        // (an entry every 20 bytes) anyway.
        map.advise_random(true);
        let pages = map.len.div_ceil(OS_PAGE_SIZE);
        Self {
            map,
            allocated: vec![0; pages.div_ceil(64)],
        }
    }

    fn mark_data_pages(&mut self) {
        for (start, end) in data_ranges(&self.map.file, 0, self.map.len) {
            for p in start / OS_PAGE_SIZE..end.div_ceil(OS_PAGE_SIZE) {
                self.allocated[p / 64] |= 1 << (p % 64);
            }
        }
    }

    fn has_block(&self, page: usize) -> bool {
        self.allocated[page / 64] & (1 << (page % 64)) != 0
    }

    /// Length of the mapping.
    pub(crate) fn len(&self) -> usize {
        self.map.len
    }

    /// Copy bytes `[pos, pos + out.len())` into `out` (zeros where the file has a hole);
    /// false, and `out` untouched, when out of bounds.
    pub(crate) fn read(&self, pos: usize, out: &mut [u8]) -> bool {
        if pos
            .checked_add(out.len())
            .is_none_or(|end| end > self.map.len)
        {
            return false;
        }
        let mut done = 0;
        while done < out.len() {
            let at = pos + done;
            let n = (OS_PAGE_SIZE - at % OS_PAGE_SIZE).min(out.len() - done);
            let dst = &mut out[done..done + n];
            if self.has_block(at / OS_PAGE_SIZE) {
                // SAFETY: in bounds (checked above); writes need `&mut self`, so none happens
                // while this borrow lives; the page has a block, so the load cannot fault.
                dst.copy_from_slice(unsafe { self.map.raw(at, n) });
            } else {
                dst.fill(0);
            }
            done += n;
        }
        true
    }

    /// Store `data` at `pos`, allocating the blocks of its pages first.
    ///
    /// # Errors
    /// `InvalidInput` when out of bounds; ENOSPC (or another OS error) when a block cannot
    /// be allocated, and then nothing is stored.
    pub(crate) fn write(&mut self, pos: usize, data: &[u8]) -> io::Result<()> {
        self.reserve(pos, data.len())?;
        // SAFETY: in bounds (`reserve` checked it); `&mut self` excludes every other borrow
        // of the mapping; every page of the range has a block (reserved above), so the stores
        // cannot fault.
        unsafe { self.map.raw_mut(pos, data.len()) }.copy_from_slice(data);
        Ok(())
    }

    /// Allocate the blocks of the pages under `[pos, pos + len)` that have none.
    ///
    /// Inlined, so the common case (one page, allocated) costs its bit test only.
    ///
    /// # Errors
    /// `InvalidInput` when out of bounds; ENOSPC (or another OS error).
    #[inline]
    pub(crate) fn reserve(&mut self, pos: usize, len: usize) -> io::Result<()> {
        let end = pos
            .checked_add(len)
            .filter(|&end| end <= self.map.len)
            .ok_or_else(|| invalid(format!("{len} bytes at {pos} are outside the file")))?;
        if len == 0 {
            return Ok(());
        }
        let (first, last) = (pos / OS_PAGE_SIZE, (end - 1) / OS_PAGE_SIZE);
        if first == last && self.has_block(first) {
            return Ok(()); // an index entry, slot or header: nearly every write
        }
        self.reserve_pages(first, last)
    }

    #[cold]
    fn reserve_pages(&mut self, first: usize, last: usize) -> io::Result<()> {
        for p in first..=last {
            if !self.has_block(p) {
                self.allocate_around(p)?;
            }
        }
        Ok(())
    }

    /// Allocate the block of page `p`, and when the page before it has one (a run of stores
    /// moving forward, as an index file's entries are) the rest of the 64 pages (256 KiB)
    /// whose bits share a word with `p` as well, unless that fails (a nearly full disk).
    /// Index entries take a new page every 200 messages: a `fallocate` per page cost about
    /// 3 % of the broker's CPU under batched sends (benches/RESULTS.md, issue 18, tenth
    /// round). Scattered stores (hash slots) still take a page each, so a fresh index file
    /// stays sparse.
    fn allocate_around(&mut self, p: usize) -> io::Result<()> {
        let word = p / 64;
        let from = p * OS_PAGE_SIZE;
        if p > 0 && self.has_block(p - 1) {
            let to = ((word + 1) * 64 * OS_PAGE_SIZE).min(self.map.len);
            if allocate(&self.map.file, from, to, Reserve::Allocate).is_ok() {
                let pages = (to - from).div_ceil(OS_PAGE_SIZE);
                self.allocated[word] |= (u64::MAX >> (64 - pages)) << (p % 64);
                return Ok(());
            }
        }
        let to = (from + OS_PAGE_SIZE).min(self.map.len);
        allocate(&self.map.file, from, to, Reserve::Allocate)?;
        self.allocated[word] |= 1 << (p % 64);
        Ok(())
    }

    /// Bytes of the file with a block, by this map's count.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.allocated
            .iter()
            .map(|w| w.count_ones() as usize)
            .sum::<usize>()
            * OS_PAGE_SIZE
    }

    /// See [`MmapFile::flush_range`].
    ///
    /// # Errors
    /// The OS error.
    pub(crate) fn flush_range(&self, pos: usize, len: usize) -> io::Result<()> {
        self.map.flush_range(pos, len)
    }
}

/// A page-aligned anonymous buffer, `mlock`ed when the OS allows: one transient-store-pool
/// buffer. The appender writes into it, the commit thread copies it into the file.
pub(crate) struct AnonBuffer {
    _map: MmapMut,
    ptr: *mut u8,
    len: usize,
    locked: bool,
    /// End of the bytes the appender has published to the commit thread.
    published: CachePadded<AtomicUsize>,
    /// Held while the unpublished part is written or the published end moves.
    writing: CachePadded<AtomicBool>,
}

// SAFETY: same publish/acquire protocol as `MmapFile`, kept by the same methods: the appender
// writes above the published end, the commit thread reads below it.
unsafe impl Send for AnonBuffer {}
// SAFETY: as above.
unsafe impl Sync for AnonBuffer {}

impl AnonBuffer {
    /// Allocate `len` bytes and try to `mlock` them. A refused lock (RLIMIT_MEMLOCK) is
    /// returned as the second value so the caller can warn; the buffer still works.
    ///
    /// # Errors
    /// When the memory cannot be mapped at all.
    pub(crate) fn new(len: usize) -> io::Result<(Self, Option<io::Error>)> {
        let mut map = MmapOptions::new().len(len).map_anon()?;
        let ptr = map.as_mut_ptr();
        // SAFETY: locks our own live anonymous mapping; no memory contents change.
        let rc = unsafe { libc::mlock(ptr.cast::<libc::c_void>(), len) };
        let err = (rc != 0).then(io::Error::last_os_error);
        Ok((
            Self {
                _map: map,
                ptr,
                len,
                locked: rc == 0,
                published: CachePadded(AtomicUsize::new(0)),
                writing: CachePadded(AtomicBool::new(false)),
            },
            err,
        ))
    }

    /// Published bytes `[pos, pos + len)`; `None` unless all of them are published.
    #[must_use]
    pub(crate) fn read(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.published.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: in bounds (the published end never exceeds `len`); published bytes are only
        // written again after `rewind_for_reuse`, see there.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(pos), len) })
    }

    /// Let `f` write the unpublished bytes `[pos, pos + len)`; `None` (and `f` not called)
    /// when out of bounds or below the published end.
    pub(crate) fn write<R>(
        &self,
        pos: usize,
        len: usize,
        f: impl FnOnce(&mut [u8]) -> R,
    ) -> Option<R> {
        let end = pos.checked_add(len)?;
        if end > self.len {
            return None;
        }
        let _claim = WriteClaim::take(&self.writing);
        if pos < self.published.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: in bounds; at or above the published end, which cannot move while the claim
        // is held, so no reader sees these bytes and this is the only writer. The slice does
        // not outlive `f`.
        Some(f(unsafe {
            std::slice::from_raw_parts_mut(self.ptr.add(pos), len)
        }))
    }

    /// Make the bytes below `end` readable.
    pub(crate) fn publish(&self, end: usize) {
        let _claim = WriteClaim::take(&self.writing);
        self.published
            .fetch_max(end.min(self.len), Ordering::Release);
    }

    /// Start over for the next file: nothing published. Its soundness rests on the pool: a
    /// buffer comes back only once its file has committed all of it, after which that file
    /// never reads it again.
    pub(crate) fn rewind_for_reuse(&self) {
        let _claim = WriteClaim::take(&self.writing);
        self.published.store(0, Ordering::Release);
    }
}

impl Drop for AnonBuffer {
    fn drop(&mut self) {
        if self.locked {
            // SAFETY: unlocks the range we locked; the mapping is still alive here.
            unsafe {
                libc::munlock(self.ptr.cast::<libc::c_void>(), self.len);
            }
        }
    }
}

/// Space of the file system holding `path`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DiskSpace {
    /// Its size.
    pub(crate) total: u64,
    /// Bytes in use (size less the free blocks, root's reserve counted as free).
    pub(crate) used: u64,
    /// What an unprivileged writer can still use.
    pub(crate) available: u64,
}

impl DiskSpace {
    /// Used fraction (0.0..=1.0) as df's Use%: used / (used + available). The blocks reserved
    /// for root are in neither, so a disk df shows at 48 % is not reported at 81 %.
    #[must_use]
    pub(crate) fn used_ratio(&self) -> f64 {
        let usable = self.used.saturating_add(self.available);
        if usable == 0 {
            return 0.0;
        }
        #[expect(clippy::cast_precision_loss, reason = "a ratio, for the disk guard")]
        let ratio = self.used as f64 / usable as f64;
        ratio.clamp(0.0, 1.0)
    }
}

/// Size, use and space left of the file system holding `path`.
///
/// # Errors
/// When `statvfs` fails (the path does not exist, ...).
#[allow(
    clippy::useless_conversion,
    reason = "the statvfs field types differ between targets"
)]
pub(crate) fn disk_space(path: &Path) -> io::Result<DiskSpace> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: statvfs is plain old data; all-zero is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated string and `st` a valid out-pointer.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &raw mut st) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let frsize = u64::from(st.f_frsize);
    let blocks = |n| u64::from(n).saturating_mul(frsize);
    Ok(DiskSpace {
        total: blocks(st.f_blocks),
        used: blocks(st.f_blocks).saturating_sub(blocks(st.f_bfree)),
        available: blocks(st.f_bavail),
    })
}

/// Used fraction (0.0..=1.0) of the file system holding `path`, as `df` counts it.
///
/// # Errors
/// When `statvfs` fails (the path does not exist, ...).
pub(crate) fn disk_used_ratio(path: &Path) -> io::Result<f64> {
    disk_space(path).map(|d| d.used_ratio())
}

/// The next stretch of `file` at or after `from` that holds data, as `(start, end)` (Linux
/// `SEEK_DATA`/`SEEK_HOLE`): recovery's look-ahead skips holes instead of faulting in pages
/// that only read as zeroes. `None` when only a hole follows; where the file system cannot
/// tell, everything from `from` to `len` counts as data.
pub(crate) fn next_data(file: &File, from: u64, len: u64) -> Option<(u64, u64)> {
    if from >= len {
        return None;
    }
    let fd = file.as_raw_fd();
    let off = libc::off_t::try_from(from).ok()?;
    // SAFETY: lseek on a descriptor `file` owns; it moves only the descriptor's offset, which
    // nothing in the store uses (writes use pwrite, sendfile an explicit offset).
    let start = unsafe { libc::lseek(fd, off, libc::SEEK_DATA) };
    if start < 0 {
        return match io::Error::last_os_error().raw_os_error() {
            Some(libc::ENXIO) => None,
            _ => Some((from, len)),
        };
    }
    // SAFETY: as above.
    let end = unsafe { libc::lseek(fd, start, libc::SEEK_HOLE) };
    let start = u64::try_from(start).ok()?;
    let end = u64::try_from(end).map_or(len, |e| e.min(len));
    (start < len).then_some((start, end))
}

/// Bytes of disk `p` has blocks for (`st_blocks`), for tests of what is reserved.
#[cfg(test)]
pub(crate) fn disk_bytes(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).unwrap().blocks() * 512
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_cached_gives_pages_back_and_keeps_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let m = MmapFile::create(&dir.path().join("f"), 64 * 1024, Prealloc::Allocate).unwrap();
        let data: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
        m.write(0, data.len(), |b| b.copy_from_slice(&data))
            .unwrap();
        m.publish(data.len());
        let before = m.read(0, data.len()).unwrap();
        m.flush_range(0, data.len()).unwrap();
        assert_eq!(m.resident_pages(0, data.len()), 10);
        // 100..40_000 holds the whole pages 1..=8: page 0 and the partial page 9 stay.
        m.drop_cached(100, data.len() - 100).unwrap();
        assert_eq!(m.resident_pages(0, data.len()), 2);
        assert_eq!(m.resident_pages(0, OS_PAGE_SIZE), 1);
        assert_eq!(m.resident_pages(9 * OS_PAGE_SIZE, 1), 1);
        // A borrow taken before the drop reads the same bytes (faulted back from the file).
        assert_eq!(before, &data[..]);
        assert_eq!(m.read(0, data.len()).unwrap(), &data[..]);
        m.drop_cached(5, 1).unwrap(); // no whole page inside: nothing to do
        m.drop_cached(60 * 1024, usize::MAX / 2).unwrap(); // clipped to the mapping
    }

    #[test]
    fn create_write_read_flush() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let m = MmapFile::create(&p, 8192, Prealloc::Allocate).unwrap();
        m.prefault();
        m.write(10, 3, |b| b.copy_from_slice(b"abc")).unwrap();
        assert!(m.read(10, 3).is_none(), "not published yet");
        m.publish(13);
        m.flush_range(0, 8192).unwrap();
        assert_eq!(m.read(10, 3).unwrap(), b"abc");
        assert!(m.read(8190, 3).is_none());
        assert!(m.write(usize::MAX, 2, |_| ()).is_err());
        assert!(m.write(12, 2, |_| ()).is_err(), "below the published end");
        m.rewind_for_recovery(10);
        assert!(m.zero_unpublished(0).unwrap());
        assert!(!m.zero_unpublished(0).unwrap(), "nothing left to zero");
        drop(m);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8192);
        let m = MmapFile::open(&p, 8192).unwrap();
        assert_eq!(
            m.read(10, 3).unwrap(),
            [0; 3],
            "an opened file is published up to the end of its data"
        );
        assert!(MmapFile::open(&p, 4096).is_err());
    }

    #[test]
    fn a_small_files_reservation_steps_grow_with_what_it_holds() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let len = 6_000_000; // a ConsumeQueue file: 24 KiB steps
        let m = MmapFile::create(&p, len, Prealloc::Sparse).unwrap();
        assert_eq!(m.reserve_step(), 24 << 10);
        let mut reserved = vec![];
        let mut at = 0;
        while at < len {
            let n = 20.min(len - at);
            m.write(at, n, |b| b.fill(1)).unwrap();
            m.publish(at + n);
            at += n;
            if reserved.last() != Some(&m.reserved()) {
                reserved.push(m.reserved());
            }
        }
        assert_eq!(&reserved[..4], [24 << 10, 48 << 10, 96 << 10, 192 << 10]);
        assert!(
            reserved.len() <= 12,
            "{} reservations: {reserved:?}",
            reserved.len()
        );
        assert_eq!(*reserved.last().unwrap(), len);
    }

    #[test]
    fn sparse_files_reserve_ahead_of_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let len = 64 << 20;
        let m = MmapFile::create(&p, len, Prealloc::Sparse).unwrap();
        assert_eq!(std::fs::metadata(&p).unwrap().len(), len as u64);
        assert_eq!(disk_bytes(&p), 0, "created sparse");
        assert_eq!(m.reserve_step(), 256 << 10);
        m.write(0, 100, |b| b.fill(7)).unwrap();
        assert_eq!(m.reserved(), 256 << 10, "one step ahead");
        m.publish(100);
        m.reserve(300 << 10, Reserve::Zeros).unwrap();
        assert_eq!(m.reserved(), 512 << 10);
        m.prefault(); // a sparse file is not faulted in
        drop(m);
        assert!(
            disk_bytes(&p) <= 1 << 20,
            "{} bytes allocated",
            disk_bytes(&p)
        );
        let m = MmapFile::open(&p, len).unwrap();
        assert!(
            m.published() >= 100 && m.published() <= 1 << 20,
            "{}",
            m.published()
        );
        assert_eq!(m.read(0, 100).unwrap(), [7; 100]);
        assert!(m.read(len - 10, 10).is_none(), "the hole is not published");
        assert!(
            MmapFile::create(&p, 4096, Prealloc::Sparse).is_err(),
            "larger file kept"
        );
        assert!(p.exists());
    }

    #[test]
    fn owned_map_reads_holes_as_zeros_and_allocates_on_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let len = 16 << 20;
        let mut m = OwnedMap::create(&p, len).unwrap();
        let mut b = [1u8; 8];
        assert!(m.read(len - 8, &mut b));
        assert_eq!(b, [0; 8]);
        assert!(!m.read(len - 4, &mut b), "out of bounds");
        assert_eq!(m.allocated_bytes(), 0);
        m.write(OS_PAGE_SIZE - 2, b"abcd").unwrap();
        assert_eq!(
            m.allocated_bytes(),
            64 * OS_PAGE_SIZE,
            "its first page, and the rest of the 256 KiB from the second on"
        );
        m.write(64 * OS_PAGE_SIZE - 2, b"abcd").unwrap();
        assert_eq!(
            m.allocated_bytes(),
            128 * OS_PAGE_SIZE,
            "and the next 256 KiB"
        );
        m.write(1000 * OS_PAGE_SIZE, b"abcd").unwrap();
        assert_eq!(
            m.allocated_bytes(),
            129 * OS_PAGE_SIZE,
            "a store away from the others takes its page alone"
        );
        assert!(m.write(len - 1, b"ab").is_err());
        drop(m);
        assert!(
            disk_bytes(&p) <= (129 * OS_PAGE_SIZE) as u64,
            "{}",
            disk_bytes(&p)
        );
        let m = OwnedMap::open(&p, len).unwrap();
        let mut b = [0u8; 4];
        assert!(m.read(OS_PAGE_SIZE - 2, &mut b));
        assert_eq!(&b, b"abcd");
    }

    #[test]
    fn anon_buffer_works_locked_or_not() {
        let (b, _err) = AnonBuffer::new(4096 * 4).unwrap();
        b.write(0, 2, |d| d.copy_from_slice(b"hi")).unwrap();
        assert!(b.read(0, 2).is_none());
        b.publish(2);
        assert_eq!(b.read(0, 2).unwrap(), b"hi");
        b.rewind_for_reuse();
        assert!(b.read(0, 2).is_none());
    }

    #[test]
    fn disk_ratio_is_dfs_use_percent() {
        let dir = tempfile::tempdir().unwrap();
        let r = disk_used_ratio(dir.path()).unwrap();
        assert!((0.0..=1.0).contains(&r));
        assert!(disk_used_ratio(Path::new("/no/such/dir")).is_err());
        // df rounds Use% up to a whole percent; other writers may move it a little meanwhile.
        let out = std::process::Command::new("df")
            .args(["--output=pcent"])
            .arg(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let pcent: f64 = text
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .trim_end_matches('%')
            .parse()
            .unwrap();
        assert!((r * 100.0 - pcent).abs() <= 2.0, "ratio {r}, df {pcent} %");
    }
}
