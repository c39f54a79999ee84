//! Shared-memory segments that stand in for ranges of a CommitLog mapping while they are
//! appended (the append window; its policy is `crate::append_window`).
//!
//! Why: a store into a page-cache page the kernel has just allocated costs it an allocation
//! and a zeroing, and on a VM that hands freed memory back to its host (free page reporting)
//! a fault on the host too: 3.2–3.7 µs of CPU per 4 KiB page on the `polyglot` VM, a third of
//! a batched send's broker CPU. A tmpfs segment the broker keeps is allocated once; its pages
//! are reused range after range, reach the file with `O_DIRECT` writes of whole pages (no
//! page-cache page is taken), and outlive a crash of the process, so an acknowledged
//! ASYNC_FLUSH append survives kill -9 as it does in the page cache (`append_window::replay`).
//!
//! Readers keep one address range throughout. A segment is mapped over a range of the file's
//! mapping that no one has written or read ([`MmapFile::attach`]); the appender stores into it
//! as into the file; published bytes are written to the file from it
//! ([`MmapFile::commit_segments`]); once every byte of its range is published and on the file,
//! the file is mapped back over the range and the segment comes back for reuse. A reader that
//! holds bytes of the range across that swap reads the same bytes from the file's pages: the
//! bytes under a published address never change, only what backs them. `sendfile` reads the
//! file, not the mapping, so it is allowed only below the lowest attached segment
//! ([`MmapFile::on_file`]); above it replies copy from the mapping.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::PoisonError;

use memmap2::{MmapMut, MmapOptions};

use super::{allocate, invalid, MmapFile, Reserve, WriteClaim, OS_PAGE_SIZE};

/// Bytes before a segment's data in its file: the header page.
const HEADER_BYTES: usize = OS_PAGE_SIZE;

/// First word of a header whose segment holds bytes of a CommitLog file.
const OWNED: u64 = u64::from_le_bytes(*b"rmqwin01");

/// Whose bytes a segment holds, as its header records them: the CommitLog file (device,
/// inode, creation time and first offset, so a replay never writes into another file of the
/// same name, even one that got the inode of a deleted one) and where in it the segment's
/// range starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SegmentOwner {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) born: u64,
    pub(crate) file_from_offset: i64,
    pub(crate) at: usize,
}

/// A tmpfs file of a header page and `len` data bytes, every block allocated.
pub(crate) struct ShmSegment {
    file: File,
    header: MmapMut,
    len: usize,
    /// The segment's own mapping of its data, populated once. Attaching moves its page-table
    /// entries to the CommitLog range (`mremap`), retiring moves them back: the pages stay
    /// mapped from one range to the next, instead of being faulted in for each range and
    /// unmapped after it, which cost 0.6 µs a page (benches/RESULTS.md). The address stays
    /// reserved meanwhile (`MREMAP_DONTUNMAP` leaves an empty mapping behind).
    home: *mut u8,
}

// SAFETY: `home` is a mapping owned by the segment (unmapped on drop) and only reached
// through `MmapFile`'s methods, under its segment lock.
unsafe impl Send for ShmSegment {}
// SAFETY: as above; `&ShmSegment` gives access to the header atomics only.
unsafe impl Sync for ShmSegment {}

impl Drop for ShmSegment {
    fn drop(&mut self) {
        // SAFETY: `home` was mapped with `len` bytes by `create` and is unmapped only here;
        // nothing reads through it.
        unsafe {
            libc::munmap(self.home.cast::<libc::c_void>(), self.len);
        }
    }
}

impl ShmSegment {
    /// Create (or take over) the segment file `path` with `len` data bytes.
    ///
    /// # Errors
    /// Any OS error; ENOSPC when the tmpfs has no room (a store into a tmpfs hole of a full
    /// file system would raise SIGBUS, so every block is allocated here).
    pub(crate) fn create(path: &Path, len: usize) -> io::Result<Self> {
        if len == 0 || !len.is_multiple_of(OS_PAGE_SIZE) {
            return Err(invalid(format!(
                "a segment of {len} bytes is not whole pages"
            )));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        allocate(&file, 0, HEADER_BYTES + len, Reserve::Allocate)?;
        // SAFETY: the file was created above in a directory of this store's own, is held open
        // by `self` for the mapping's life and never truncated while mapped.
        let header = unsafe { MmapOptions::new().len(HEADER_BYTES).map_mut(&file)? };
        let off = libc::off_t::try_from(HEADER_BYTES).unwrap_or(libc::off_t::MAX);
        // SAFETY: a new shared mapping of our own file's allocated data pages, at an address
        // the kernel chooses; nothing else refers to it.
        let home = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                file.as_raw_fd(),
                off,
            )
        };
        if home == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            file,
            header,
            len,
            home: home.cast::<u8>(),
        })
    }

    #[expect(
        clippy::cast_ptr_alignment,
        reason = "the header mapping is page aligned"
    )]
    fn words(&self) -> &[AtomicU64; 7] {
        // SAFETY: the header mapping is page aligned and a page long (more than 56 bytes),
        // lives as long as `self`, and is only ever accessed through these atomics.
        unsafe { &*self.header.as_ptr().cast::<[AtomicU64; 7]>() }
    }

    /// Record `owner` in the header (before the segment is attached).
    pub(crate) fn set_owner(&self, owner: SegmentOwner) {
        let w = self.words();
        w[0].store(0, Ordering::Release);
        w[1].store(owner.dev, Ordering::Relaxed);
        w[2].store(owner.ino, Ordering::Relaxed);
        w[3].store(owner.file_from_offset.cast_unsigned(), Ordering::Relaxed);
        w[4].store(owner.at as u64, Ordering::Relaxed);
        w[6].store(owner.born, Ordering::Relaxed);
        w[0].store(OWNED, Ordering::Release);
    }

    /// Mark the segment as holding nothing of any file (its range is on the file).
    pub(crate) fn clear_owner(&self) {
        self.words()[0].store(0, Ordering::Release);
    }

    /// Record `end` in the header's sixth word (the window's control page; see
    /// `append_window`).
    pub(crate) fn set_mark(&self, end: i64) {
        self.words()[5].store(end.cast_unsigned(), Ordering::Release);
    }

    /// The mark a control file's header records (replay).
    ///
    /// # Errors
    /// A read error.
    pub(crate) fn mark_in(file: &File) -> io::Result<i64> {
        let mut b = [0u8; 8];
        file.read_exact_at(&mut b, 40)?;
        Ok(u64::from_ne_bytes(b).cast_signed())
    }

    /// The owner a segment file's header records, read without mapping it (replay).
    ///
    /// # Errors
    /// A read error.
    pub(crate) fn owner_in(file: &File) -> io::Result<Option<SegmentOwner>> {
        let mut h = [0u8; 56];
        file.read_exact_at(&mut h, 0)?;
        let word = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(b)
        };
        if word(0) != OWNED {
            return Ok(None);
        }
        Ok(Some(SegmentOwner {
            dev: word(1),
            ino: word(2),
            file_from_offset: word(3).cast_signed(),
            at: usize::try_from(word(4)).unwrap_or(usize::MAX),
            born: word(6),
        }))
    }

    /// Read the data bytes `[pos, pos + buf.len())` of a segment file (replay).
    ///
    /// # Errors
    /// A read error.
    pub(crate) fn read_data(file: &File, pos: usize, buf: &mut [u8]) -> io::Result<()> {
        file.read_exact_at(buf, (HEADER_BYTES + pos) as u64)
    }
}

/// A segment mapped over `[at, at + seg.len)` of an [`MmapFile`]; `on_file` bytes from `at`
/// are written to the file.
pub(crate) struct Attached {
    at: usize,
    seg: ShmSegment,
    on_file: usize,
    /// Where the partial last page written out (padded) ended, relative to `at`: a window
    /// with nothing new writes nothing (an idle broker wrote that page 100 times a second).
    tail_out: usize,
}

impl MmapFile {
    /// Whether `[pos, pos + len)` can be read from the file itself (`sendfile`): it lies below
    /// every attached segment. Once true for a range it stays true.
    #[must_use]
    pub(crate) fn on_file(&self, pos: usize, len: usize) -> bool {
        pos.saturating_add(len) <= self.on_file_below.load(Ordering::Acquire)
    }

    /// Lowest start of an attached segment (`usize::MAX` when none is).
    #[must_use]
    pub(crate) fn on_file_below(&self) -> usize {
        self.on_file_below.load(Ordering::Acquire)
    }

    /// Map `seg` over `[at, at + seg.len())`, which must be page aligned, inside the file and
    /// above every byte ever written or published. The segment comes back with the error when
    /// it cannot be attached.
    ///
    /// # Errors
    /// `InvalidInput` for such a range; an OS error of the mapping (the range is then mapped
    /// to the file again).
    pub(crate) fn attach(&self, at: usize, seg: ShmSegment) -> Result<(), (ShmSegment, io::Error)> {
        let len = seg.len;
        if !at.is_multiple_of(OS_PAGE_SIZE) || at.checked_add(len).is_none_or(|e| e > self.len) {
            return Err((seg, invalid(format!("cannot attach {len} bytes at {at}"))));
        }
        let mut segs = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
        let moved = {
            let _claim = WriteClaim::take(&self.writing);
            if at < self.published() || at < self.written_end.load(Ordering::Acquire) {
                return Err((seg, invalid(format!("{at} has been written already"))));
            }
            // No byte of the range was ever written or published (checked under the claim,
            // which keeps the writer out until it is mapped), so no reference into it exists;
            // the segment's pages are allocated in its tmpfs file.
            let moved = self.move_pages(seg.home, at, len, true).is_ok();
            if !moved {
                // A kernel without `MREMAP_DONTUNMAP` for shared mappings (before 5.13): map
                // the segment there (its pages are faulted in below, outside the claim).
                if let Err(e) = self.map_over(at, len, &seg.file, HEADER_BYTES) {
                    self.map_file_over(at, len);
                    return Err((seg, e));
                }
            }
            moved
        };
        if !moved {
            // SAFETY: advice on a range of our own live mapping; it changes no byte.
            unsafe {
                libc::madvise(
                    self.ptr.add(at).cast::<libc::c_void>(),
                    len,
                    libc::MADV_POPULATE_READ,
                );
            }
        }
        segs.push(Attached {
            at,
            seg,
            on_file: 0,
            tail_out: 0,
        });
        segs.sort_by_key(|a| a.at);
        self.on_file_below.store(segs[0].at, Ordering::Release);
        Ok(())
    }

    /// Move the page-table entries of the `len` bytes at `home` to `[at, at + len)` of this
    /// mapping (`to_range`), or back; the source keeps an empty mapping of the same pages, so
    /// a reader there faults the same bytes in. The caller answers for what the destination
    /// held (see `attach` and `retire`).
    fn move_pages(&self, home: *mut u8, at: usize, len: usize, to_range: bool) -> io::Result<()> {
        if !at.is_multiple_of(OS_PAGE_SIZE) || at.checked_add(len).is_none_or(|e| e > self.len) {
            return Err(invalid(format!("cannot move {len} bytes to {at}")));
        }
        // SAFETY: in bounds of our live mapping (checked above).
        let range = unsafe { self.ptr.add(at) }.cast::<libc::c_void>();
        let home = home.cast::<libc::c_void>();
        let (from, to) = if to_range {
            (home, range)
        } else {
            (range, home)
        };
        let flags = libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED | libc::MREMAP_DONTUNMAP;
        // SAFETY: both ranges are `len` bytes of mappings this process owns (the segment's
        // home and a page-aligned range of ours); MREMAP_FIXED replaces only the destination
        // range, and DONTUNMAP leaves the source mapped (empty), so no address of either
        // becomes unmapped under a reader.
        let p = unsafe { libc::mremap(from, len, len, flags, to) };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Map the file back over `[at, at + len)`. A failure would leave a hole in the mapping
    /// that any reader faults on, so it aborts the process (it needs memory the kernel does
    /// not have for page tables; recovery then finds the bytes in the segment or the file).
    fn map_file_over(&self, at: usize, len: usize) {
        // The file holds, for every byte a reader may hold in the range, the same value as
        // the pages replaced (see the callers), so no reader sees a change.
        if let Err(e) = self.map_over(at, len, &self.file, at) {
            log::error!(
                "cannot map the CommitLog file back over {len} bytes at {at}: {e}; stopping \
                 (the bytes are in the append window or the file; recovery replays them)"
            );
            std::process::abort();
        }
    }

    /// Replace the pages of `[at, at + len)` of the mapping with those of `file` from `off`.
    /// The caller answers for what readers and the writer see there (see `attach` and
    /// `map_file_over`).
    fn map_over(&self, at: usize, len: usize, file: &File, off: usize) -> io::Result<()> {
        let off = libc::off_t::try_from(off).map_err(|_| invalid(format!("offset {off}")))?;
        if !at.is_multiple_of(OS_PAGE_SIZE) || at.checked_add(len).is_none_or(|e| e > self.len) {
            return Err(invalid(format!("cannot map {len} bytes at {at}")));
        }
        // SAFETY: `[at, at + len)` is page aligned and inside our live mapping (checked
        // above), so MAP_FIXED replaces exactly those pages of it and nothing else of the
        // address space; what the bytes read as is the callers' to answer for (above).
        let p = unsafe {
            libc::mmap(
                self.ptr.add(at).cast::<libc::c_void>(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                file.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Write the published bytes of the attached segments to the file: whole pages through
    /// `direct` (an `O_DIRECT` descriptor of the file; the file itself when `None` or when it
    /// refuses), and with `tail` the last partial page too, through a zero-padded copy. Every
    /// segment whose range is then published and on the file whole is mapped back to the
    /// file and returned.
    ///
    /// # Errors
    /// The first write error; what was written before it counts, nothing after.
    pub(crate) fn commit_segments(
        &self,
        direct: Option<&File>,
        tail: bool,
    ) -> io::Result<Vec<ShmSegment>> {
        let mut segs = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
        let published = self.published();
        for a in segs.iter_mut() {
            let end = published.min(a.at + a.seg.len);
            if end > a.at + a.on_file.max(a.tail_out) {
                // SAFETY: below the published end: never written again (module docs).
                self.write_out(a, end, tail, direct, |pos, len| unsafe {
                    self.raw(pos, len)
                })?;
            }
        }
        Ok(self.retire(&mut segs, |a| a.on_file == a.seg.len))
    }

    /// Write every attached segment to the file up to the last byte written (published or
    /// not: a truncation or a shutdown may follow an append whose publish has not), and map
    /// the file back over all of them. Returns the segments.
    ///
    /// # Errors
    /// The first write error; every segment stays attached then.
    pub(crate) fn detach_all(&self, direct: Option<&File>) -> io::Result<Vec<ShmSegment>> {
        let mut segs = self.segments.lock().unwrap_or_else(PoisonError::into_inner);
        let _claim = WriteClaim::take(&self.writing);
        let written = self
            .written_end
            .load(Ordering::Acquire)
            .max(self.published());
        for a in segs.iter_mut() {
            let end = written.min(a.at + a.seg.len);
            if end > a.at + a.on_file {
                // SAFETY: below the last byte written, with the claim held: no writer is here,
                // and published bytes are never written again.
                self.write_out(a, end, true, direct, |pos, len| unsafe {
                    self.raw(pos, len)
                })?;
            }
        }
        Ok(self.retire(&mut segs, |_| true))
    }

    /// Write `[a.at + a.on_file, end)` of `a` (read through `bytes`) to the file.
    fn write_out<'a>(
        &'a self,
        a: &mut Attached,
        end: usize,
        tail: bool,
        direct: Option<&File>,
        bytes: impl Fn(usize, usize) -> &'a [u8],
    ) -> io::Result<()> {
        let from = a.at + a.on_file;
        let whole = a.at + (end - a.at) / OS_PAGE_SIZE * OS_PAGE_SIZE;
        if whole > from {
            write_at(&self.file, direct, bytes(from, whole - from), from)?;
            a.on_file = whole - a.at;
        }
        if tail && end > whole {
            // The partial page goes out padded with zeros (never the segment's stale bytes
            // past `end`), from an aligned copy as `O_DIRECT` needs; `on_file` stays below it,
            // so the next write covers the page again, whole.
            let mut buf = vec![0u8; 2 * OS_PAGE_SIZE];
            let at = buf.as_ptr().align_offset(OS_PAGE_SIZE);
            let page = &mut buf[at..at + OS_PAGE_SIZE];
            page[..end - whole].copy_from_slice(bytes(whole, end - whole));
            write_at(&self.file, direct, page, whole)?;
            a.tail_out = end - a.at;
        }
        Ok(())
    }

    /// Map the file back over the segments that `done` says are written whole, and hand
    /// them back; the lowest attached start follows.
    fn retire(
        &self,
        segs: &mut Vec<Attached>,
        done: impl Fn(&Attached) -> bool,
    ) -> Vec<ShmSegment> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < segs.len() {
            if done(&segs[i]) {
                let a = segs.remove(i);
                // The segment's pages go home (a reader of the range in between faults the
                // same pages in); then the file, which holds every byte a reader may hold
                // there (written above), is mapped over the range.
                let _ = self.move_pages(a.seg.home, a.at, a.seg.len, false);
                self.map_file_over(a.at, a.seg.len);
                out.push(a.seg);
            } else {
                i += 1;
            }
        }
        let lowest = segs.first().map_or(usize::MAX, |a| a.at);
        self.on_file_below.store(lowest, Ordering::Release);
        out
    }
}

/// `pwrite` all of `data` at `pos`: through `direct` when given, falling back to `file` when
/// it refuses the alignment (`EINVAL`: a file system with larger blocks, or none for
/// `O_DIRECT`).
fn write_at(file: &File, direct: Option<&File>, data: &[u8], pos: usize) -> io::Result<()> {
    if let Some(d) = direct {
        match d.write_all_at(data, pos as u64) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            r => return r,
        }
    }
    file.write_all_at(data, pos as u64)
}
