//! The one module of rmq that talks to the OS below `std`: file mappings, anonymous
//! `mlock`ed buffers for the transient store pool, `fallocate` and `statvfs`. Every `unsafe`
//! block in the project is here, each with the invariant that makes it sound.
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
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use memmap2::{MmapMut, MmapOptions};

/// Size of an OS page; flush and commit thresholds count these.
pub(crate) const OS_PAGE_SIZE: usize = 4096;

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
}

/// An atomic on a cache line of its own. The dispatch thread reads `published` after every
/// append; were the writer's claim flag on the same line, each claim and release would take the
/// line away from the reader and back (without the padding: 1.20 µs per put against 0.91 µs
/// before the accessors, in the store bench's steady state; see benches/RESULTS.md).
#[repr(align(128))]
struct CachePadded<T>(T);

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
    /// Create (or reuse, if it already has the right size) a file of `len` bytes with its
    /// blocks allocated up front, so that a full disk shows up here as an error instead of a
    /// SIGBUS on a later write through the mapping, and map it.
    ///
    /// # Errors
    /// Any OS error, ENOSPC included.
    pub(crate) fn create(path: &Path, len: usize) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
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
        let off_len = libc::off_t::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large"))?;
        // SAFETY: plain FFI call on a valid, open descriptor; no memory is passed.
        let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, off_len) };
        if rc != 0 {
            if cur == 0 {
                // Do not leave an empty file behind: the next start would trip over it.
                let _ = std::fs::remove_file(path);
            }
            return Err(io::Error::from_raw_os_error(rc));
        }
        Self::map(file, len, 0)
    }

    /// Like [`create`](Self::create), but writes real zeros into every block and syncs them,
    /// instead of reserving unwritten extents. Under SYNC_FLUSH every put syncs a few new
    /// pages; on an allocated-but-unwritten extent each such sync must also convert the
    /// extent (a metadata write), which halves the sync rate (see benches/RESULTS.md).
    ///
    /// # Errors
    /// Any OS error, ENOSPC included; a partial file is removed.
    pub(crate) fn create_zeroed(path: &Path, len: usize) -> io::Result<Self> {
        use std::os::unix::fs::FileExt;
        let existed = path.exists();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let zeros = vec![0u8; 1 << 20];
        let mut pos = 0usize;
        let filled = (|| {
            while pos < len {
                let n = zeros.len().min(len - pos);
                file.write_all_at(&zeros[..n], pos as u64)?;
                pos += n;
            }
            file.sync_data()
        })();
        if let Err(e) = filled {
            if !existed {
                let _ = std::fs::remove_file(path);
            }
            return Err(e);
        }
        Self::map(file, len, 0)
    }

    /// Map an existing file whose size must be exactly `len`.
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
        Self::map(file, len, len)
    }

    fn map(file: File, len: usize, published: usize) -> io::Result<Self> {
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
        })
    }

    /// Length of the mapping.
    #[must_use]
    pub(crate) fn len(&self) -> usize {
        self.len
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
        // SAFETY: in bounds; at or above the published end, which cannot move while the
        // claim is held, so no reader sees these bytes, and the claim makes this the only
        // writer. The slice does not outlive `f`.
        Some(f(unsafe { self.raw_mut(pos, len) }))
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

    /// Fault every page in for writing, so the appender never takes a page fault. Uses
    /// `MADV_POPULATE_WRITE` where the kernel has it (5.14+), else touches each page.
    pub(crate) fn prefault(&self) {
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
        // Touch only unpublished pages, under the write claim: no reader or writer is there.
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
/// timer wheel (owned by the timer thread) are these.
pub(crate) struct OwnedMap(MmapFile);

impl OwnedMap {
    /// See [`MmapFile::create`].
    ///
    /// # Errors
    /// Any OS error, ENOSPC included.
    pub(crate) fn create(path: &Path, len: usize) -> io::Result<Self> {
        MmapFile::create(path, len).map(Self)
    }

    /// See [`MmapFile::open`].
    ///
    /// # Errors
    /// I/O errors, or a size mismatch.
    pub(crate) fn open(path: &Path, len: usize) -> io::Result<Self> {
        MmapFile::open(path, len).map(Self)
    }

    /// Length of the mapping.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Bytes `[pos, pos + len)`; `None` when out of bounds.
    pub(crate) fn get(&self, pos: usize, len: usize) -> Option<&[u8]> {
        if pos.checked_add(len)? > self.0.len {
            return None;
        }
        // SAFETY: in bounds; writes need `&mut self`, so none happens while this borrow lives.
        Some(unsafe { self.0.raw(pos, len) })
    }

    /// Bytes `[pos, pos + len)` to write; `None` when out of bounds.
    pub(crate) fn get_mut(&mut self, pos: usize, len: usize) -> Option<&mut [u8]> {
        if pos.checked_add(len)? > self.0.len {
            return None;
        }
        // SAFETY: in bounds; `&mut self` excludes every other borrow of the mapping.
        Some(unsafe { self.0.raw_mut(pos, len) })
    }

    /// See [`MmapFile::flush_range`].
    ///
    /// # Errors
    /// The OS error.
    pub(crate) fn flush_range(&self, pos: usize, len: usize) -> io::Result<()> {
        self.0.flush_range(pos, len)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_write_read_flush() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let m = MmapFile::create(&p, 8192).unwrap();
        m.prefault();
        m.write(10, 3, |b| b.copy_from_slice(b"abc")).unwrap();
        assert!(m.read(10, 3).is_none(), "not published yet");
        m.publish(13);
        m.flush_range(0, 8192).unwrap();
        assert_eq!(m.read(10, 3).unwrap(), b"abc");
        assert!(m.read(8190, 3).is_none());
        assert!(m.write(usize::MAX, 2, |_| ()).is_none());
        assert!(m.write(12, 2, |_| ()).is_none(), "below the published end");
        m.rewind_for_recovery(10);
        assert_eq!(m.write(10, 3, |b| b.fill(0)), Some(()));
        drop(m);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8192);
        let m = MmapFile::open(&p, 8192).unwrap();
        assert_eq!(
            m.read(10, 3).unwrap(),
            [0; 3],
            "an opened file is published whole"
        );
        assert!(MmapFile::open(&p, 4096).is_err());
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
