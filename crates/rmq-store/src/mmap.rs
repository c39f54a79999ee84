//! The one module of rmq that talks to the OS below `std`: file mappings, anonymous
//! `mlock`ed buffers for the transient store pool, `fallocate` and `statvfs`. Every `unsafe`
//! block in the project is here, each with the invariant that makes it sound.
//!
//! The central invariant (upheld by `mapped_file`): a byte range is written by one writer
//! (the appender under the CommitLog put lock, the commit thread, or the single dispatch
//! thread for ConsumeQueue/IndexFile files) *before* its end is published with a `Release`
//! store, and readers only look at ranges below a position they loaded with `Acquire`. A
//! published byte is never written again while the mapping is shared, except by recovery,
//! which runs before the store is shared. Files rewritten in place (index files, the timer
//! wheel) are [`OwnedMap`]s instead, whose writes need `&mut self`. Files are never truncated
//! while mapped, and the store directory is held under an exclusive `lock` file so no other
//! broker changes them.
//!
//! The module is private to rmq-store: nothing outside the crate can reach a mapping.
#![allow(unsafe_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

use memmap2::{MmapMut, MmapOptions};

/// Size of an OS page; flush and commit thresholds count these.
pub(crate) const OS_PAGE_SIZE: usize = 4096;

/// A file mapped read-write in full, shared between one writer and many readers.
pub(crate) struct MmapFile {
    file: File,
    map: MmapMut,
    ptr: *mut u8,
    len: usize,
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
        Self::map(file, len)
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
        Self::map(file, len)
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
        Self::map(file, len)
    }

    fn map(file: File, len: usize) -> io::Result<Self> {
        // SAFETY: the file is held open by `self` for the mapping's life and is never
        // truncated while mapped (the store directory is locked; see module docs).
        let mut map = unsafe { MmapOptions::new().len(len).map_mut(&file)? };
        let ptr = map.as_mut_ptr();
        Ok(Self {
            file,
            map,
            ptr,
            len,
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

    /// Published bytes `[pos, pos + len)`; `None` when out of bounds. Callers only ask for
    /// ranges below a position they loaded with `Acquire`.
    #[must_use]
    pub(crate) fn bytes(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: in bounds of the live mapping; the range is published and no longer written
        // (module invariant), so shared access is race-free.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(pos), len) })
    }

    /// Unpublished bytes `[pos, pos + len)` for the single writer of this range.
    ///
    /// Returns `None` when out of bounds. Callers (the appender under the put lock, the
    /// commit thread, the dispatch thread) write only above the published position.
    #[allow(clippy::mut_from_ref)]
    #[must_use]
    pub(crate) fn bytes_mut(&self, pos: usize, len: usize) -> Option<&mut [u8]> {
        let end = pos.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: in bounds of the live mapping; the range is above every published position
        // and has exactly one writer at a time (module invariant), so no other reference
        // to these bytes exists while this one lives.
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(pos), len) })
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
        let mut pos = 0;
        while pos < self.len {
            // SAFETY: in bounds; a volatile read-then-write of the same value leaves the
            // contents unchanged. Prefault runs before the file is handed to a writer.
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
        // Sound: writes need `&mut self`, so none happens while this borrow lives.
        self.0.bytes(pos, len)
    }

    /// Bytes `[pos, pos + len)` to write; `None` when out of bounds.
    pub(crate) fn get_mut(&mut self, pos: usize, len: usize) -> Option<&mut [u8]> {
        // Sound: `&mut self` excludes every other borrow of the mapping.
        self.0.bytes_mut(pos, len)
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
}

// SAFETY: same publish/acquire protocol as `MmapFile`: the appender writes above the wrote
// position, the commit thread reads below it.
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
            },
            err,
        ))
    }

    /// Bytes `[pos, pos + len)` that the caller has published (see `MmapFile::bytes`).
    #[must_use]
    pub(crate) fn bytes(&self, pos: usize, len: usize) -> Option<&[u8]> {
        let end = pos.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: in bounds; published range (module invariant).
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(pos), len) })
    }

    /// Unpublished bytes for the single writer (see `MmapFile::bytes_mut`).
    #[allow(clippy::mut_from_ref)]
    #[must_use]
    pub(crate) fn bytes_mut(&self, pos: usize, len: usize) -> Option<&mut [u8]> {
        let end = pos.checked_add(len)?;
        if end > self.len {
            return None;
        }
        // SAFETY: in bounds; unpublished range with one writer (module invariant).
        Some(unsafe { std::slice::from_raw_parts_mut(self.ptr.add(pos), len) })
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
        #[allow(clippy::cast_precision_loss)]
        let ratio = self.used as f64 / usable as f64;
        ratio.clamp(0.0, 1.0)
    }
}

/// Size, use and space left of the file system holding `path`.
///
/// # Errors
/// When `statvfs` fails (the path does not exist, ...).
#[allow(clippy::useless_conversion)] // the statvfs field types differ between targets
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_write_read_flush() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let m = MmapFile::create(&p, 8192).unwrap();
        m.prefault();
        m.bytes_mut(10, 3).unwrap().copy_from_slice(b"abc");
        m.flush_range(0, 8192).unwrap();
        assert_eq!(m.bytes(10, 3).unwrap(), b"abc");
        assert!(m.bytes(8190, 3).is_none());
        assert!(m.bytes_mut(usize::MAX, 2).is_none());
        drop(m);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 8192);
        let m = MmapFile::open(&p, 8192).unwrap();
        assert_eq!(m.bytes(10, 3).unwrap(), b"abc");
        assert!(MmapFile::open(&p, 4096).is_err());
    }

    #[test]
    fn anon_buffer_works_locked_or_not() {
        let (b, _err) = AnonBuffer::new(4096 * 4).unwrap();
        b.bytes_mut(0, 2).unwrap().copy_from_slice(b"hi");
        assert_eq!(b.bytes(0, 2).unwrap(), b"hi");
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
