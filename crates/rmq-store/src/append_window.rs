//! The CommitLog's append window: a few tmpfs segments, in a directory of `/dev/shm` of this
//! store's own, that stand in for the ranges of the active CommitLog file being appended
//! (the mechanism, and why it saves a third of a batched send's CPU, is in
//! `mmap::segment`). This module owns the policy: how big a segment is, how many there are,
//! which range gets one ([`MappedFile`](crate::mapped_file::MappedFile) attaches the range
//! after its appender's, from the `rmq-append-window` thread every [`COMMIT_INTERVAL`]), and
//! what happens after a crash.
//!
//! Durability is that of the page cache: a put is acknowledged once its bytes are in a
//! segment, which outlives the process. Every append records the CommitLog's end in the
//! window's control page ([`AppendWindow::mark`]); at the next start after a crash
//! ([`replay`]) the bytes of every segment below that end are written into the CommitLog file
//! the segment's header names (device and inode checked), before recovery reads it. A crash
//! of the machine loses what was not flushed, as it would from the page cache; the flush
//! (`flushIntervalCommitLog`) writes the window out and syncs it.
//!
//! Segments are created as the window first needs them (at most [`SEGMENTS`]). Without room
//! in `/dev/shm` (a container's 64 MiB default holds the window of 1 GiB files only when
//! nothing else uses it) the store logs why and appends through the page cache, as without
//! the window. A window outlives a store killed and never started again; the next store to
//! start on the machine removes it once that store's directory is gone.

use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::error::{IoContext, Result};
use crate::mmap::{SegmentOwner, ShmSegment};

/// Where the windows live: tmpfs, whose pages outlive the process.
const SHM_ROOT: &str = "/dev/shm";

/// Segments of a window: the range being appended, up to [`AHEAD`] attached after it, and
/// the rest being written out and retired.
const SEGMENTS: usize = 4;

/// How many ranges past the appender's the window's thread keeps attached. An appender that
/// reaches the edge between two steps decides the next range for the page cache: with one
/// range ahead, 1 MiB sends at 1 GB/s did so for a range in seven.
pub(crate) const AHEAD: usize = 2;

/// Largest and smallest segment; a segment is 1/64 of a CommitLog file between these.
const SEGMENT_MAX: usize = 16 << 20;
const SEGMENT_MIN: usize = 16 << 10;

/// How often the window's thread attaches ahead and writes segments out.
pub(crate) const COMMIT_INTERVAL: Duration = Duration::from_millis(10);

/// A store's pool of segments.
pub struct AppendWindow {
    dir: PathBuf,
    segment_len: usize,
    /// Holds the CommitLog's end in its header ([`mark`](Self::mark)); no data.
    control: ShmSegment,
    /// Segments not attached to a file, and how many exist: they are created on first use,
    /// so a store that appends little keeps little tmpfs.
    free: Mutex<(Vec<ShmSegment>, usize)>,
}

/// The segment size for CommitLog files of `file_size` bytes, when they get a window.
fn segment_len(file_size: usize) -> Option<usize> {
    let len = (file_size / 64).clamp(SEGMENT_MIN, SEGMENT_MAX) / 4096 * 4096;
    (file_size.is_multiple_of(len) && file_size >= 2 * len).then_some(len)
}

/// The window directory of the store at `root` (a hash of its canonical path, so two stores
/// never share one).
fn dir_of(root: &Path) -> PathBuf {
    let canon = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    // FNV-1a: a stable hash of the path (std's hasher is not promised to be stable).
    let hash = canon
        .as_os_str()
        .as_encoded_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
    Path::new(SHM_ROOT).join(format!("rmq-window-{hash:016x}"))
}

impl AppendWindow {
    /// The window for the store at `root` with CommitLog files of `file_size` bytes; `None`
    /// (logged) when the files are too small to split or `/dev/shm` has no room. Whatever an
    /// earlier run left there is replaced: [`replay`] runs first.
    #[must_use]
    pub fn open(root: &Path, file_size: usize) -> Option<Self> {
        let segment_len = segment_len(file_size)?;
        let dir = dir_of(root);
        remove_orphans();
        let made = (|| -> std::io::Result<Self> {
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir)?;
            std::fs::write(dir.join(ROOT_FILE), root.as_os_str().as_encoded_bytes())?;
            let control = ShmSegment::create(&dir.join("control"), 4096)?;
            Ok(Self {
                dir: dir.clone(),
                segment_len,
                control,
                free: Mutex::new((Vec::new(), 0)),
            })
        })();
        match made {
            Ok(w) => Some(w),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                log::warn!(
                    "no append window in {} ({e}; it needs {} MiB of tmpfs): the CommitLog is \
                     appended through the page cache, which costs more CPU per message. Give \
                     /dev/shm more room (docker: --shm-size) to get it back",
                    dir.display(),
                    (SEGMENTS * segment_len) >> 20
                );
                None
            }
        }
    }

    /// Bytes of a segment (a CommitLog file is a whole number of them).
    #[must_use]
    pub fn segment_len(&self) -> usize {
        self.segment_len
    }

    /// A free segment, created if fewer than [`SEGMENTS`] exist; `None` when all are
    /// attached, or (logged) when tmpfs has no room for another.
    pub(crate) fn take(&self) -> Option<ShmSegment> {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(seg) = free.0.pop() {
            return Some(seg);
        }
        if free.1 == SEGMENTS {
            return None;
        }
        let path = self.dir.join(format!("segment-{}", free.1));
        match ShmSegment::create(&path, self.segment_len) {
            Ok(seg) => {
                free.1 += 1;
                Some(seg)
            }
            Err(e) => {
                log::warn!(
                    "cannot create {} ({e}); the CommitLog is appended through the page cache \
                     where the window has no segment. Give /dev/shm more room (docker: \
                     --shm-size)",
                    path.display()
                );
                None
            }
        }
    }

    /// A segment back from a file, its range on the file.
    pub(crate) fn give(&self, seg: ShmSegment) {
        self.give_all([seg]);
    }

    /// Segments back from a file, their ranges on the file.
    pub(crate) fn give_all(&self, segs: impl IntoIterator<Item = ShmSegment>) {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        for seg in segs {
            seg.clear_owner();
            free.0.push(seg);
        }
    }

    /// Record that the CommitLog holds every byte below global offset `end` (after each
    /// append, before it is acknowledged).
    pub(crate) fn mark(&self, end: i64) {
        self.control.set_mark(end);
    }

    /// Remove the window's files (a clean shutdown, every segment written out).
    pub fn close(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The file in a window directory naming its store's directory.
const ROOT_FILE: &str = "store";

/// Remove the windows of stores whose directory is gone (a store killed and then deleted,
/// as tests do): nothing can replay them. A store that still exists replays and replaces
/// its own window at its next start.
fn remove_orphans() {
    let Ok(entries) = std::fs::read_dir(SHM_ROOT) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with("rmq-window-") {
            continue;
        }
        let Ok(root) = std::fs::read(e.path().join(ROOT_FILE)) else {
            continue;
        };
        let root = PathBuf::from(std::ffi::OsString::from_vec(root));
        if !root.join("commitlog").exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The device, inode and creation time (ns, 0 where the file system keeps none) of `file`,
/// which a segment's header records of its CommitLog file.
pub(crate) fn file_identity(file: &File) -> std::io::Result<(u64, u64, u64)> {
    let m = file.metadata()?;
    let born = m
        .created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    Ok((m.dev(), m.ino(), born))
}

/// After a crash: write into the CommitLog under `commit_log_dir` the bytes of the segments
/// the store at `root` left in `/dev/shm`, up to the end its control page recorded. Returns
/// the bytes written. Runs before the CommitLog is loaded.
///
/// # Errors
/// A segment or CommitLog file that cannot be read or written; the store does not open then
/// (the bytes stay in `/dev/shm` for the next attempt).
pub fn replay(root: &Path, commit_log_dir: &Path) -> Result<usize> {
    let dir = dir_of(root);
    let Ok(control) = File::open(dir.join("control")) else {
        return Ok(0);
    };
    let end = ShmSegment::mark_in(&control).ctx(|| format!("reading {}", dir.display()))?;
    let mut written = 0;
    for i in 0..SEGMENTS {
        let path = dir.join(format!("segment-{i}"));
        let Ok(seg) = File::open(&path) else { break };
        let owner = ShmSegment::owner_in(&seg).ctx(|| format!("reading {}", path.display()))?;
        let Some(owner) = owner else { continue };
        written += replay_segment(&seg, owner, end, commit_log_dir).ctx(|| {
            format!(
                "replaying {} into {}",
                path.display(),
                commit_log_dir.display()
            )
        })?;
    }
    if written > 0 {
        log::info!(
            "replayed {written} bytes the last run had appended but not yet written to the \
             CommitLog (from {})",
            dir.display()
        );
    }
    Ok(written)
}

fn replay_segment(
    seg: &File,
    owner: SegmentOwner,
    end: i64,
    commit_log_dir: &Path,
) -> std::io::Result<usize> {
    let path = commit_log_dir.join(crate::format::file_name(owner.file_from_offset));
    let Ok(file) = OpenOptions::new().write(true).open(&path) else {
        return Ok(0);
    };
    if file_identity(&file)? != (owner.dev, owner.ino, owner.born) {
        return Ok(0);
    }
    let len = usize::try_from(seg.metadata()?.len())
        .unwrap_or(0)
        .saturating_sub(4096)
        .min(SEGMENT_MAX);
    let room = usize::try_from(file.metadata()?.len()).unwrap_or(0);
    let start = owner
        .file_from_offset
        .saturating_add(i64::try_from(owner.at).unwrap_or(i64::MAX));
    let n = usize::try_from(end.saturating_sub(start))
        .unwrap_or(0)
        .min(len)
        .min(room.saturating_sub(owner.at));
    if n == 0 {
        return Ok(0);
    }
    let mut buf = vec![0u8; n];
    ShmSegment::read_data(seg, 0, &mut buf)?;
    file.write_all_at(&buf, owner.at as u64)?;
    file.sync_data()?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mapped_file::MappedFile;
    use std::sync::Arc;

    const FILE: usize = 1 << 20;
    const FROM: i64 = 1 << 20;

    /// A 1 MiB CommitLog file under `root/commitlog` appended through a fresh window.
    fn windowed(root: &Path) -> (Arc<AppendWindow>, MappedFile) {
        let dir = root.join("commitlog");
        std::fs::create_dir_all(&dir).unwrap();
        let w = Arc::new(AppendWindow::open(root, FILE).expect("/dev/shm has room"));
        assert_eq!(w.segment_len(), 16 << 10);
        let f = MappedFile::create(&dir, FROM, FILE).unwrap();
        f.attach_window(Arc::clone(&w));
        (w, f)
    }

    fn record(i: usize) -> Vec<u8> {
        (0..1000)
            .map(|k| u8::try_from((i * 7 + k) % 251).unwrap())
            .collect()
    }

    fn append(f: &MappedFile, i: usize) {
        let r = record(i);
        f.append_record(r.len(), &mut Vec::new(), |dst| dst.copy_from_slice(&r))
            .unwrap();
    }

    fn on_disk(f: &MappedFile, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        f.file().read_exact_at(&mut buf, 0).unwrap();
        buf
    }

    #[test]
    fn appends_go_through_segments_and_reach_the_file_whole() {
        let root = tempfile::tempdir().unwrap();
        let (w, f) = windowed(root.path());
        let expected: Vec<u8> = (0..100).flat_map(record).collect();
        for i in 0..100 {
            if i % 10 == 0 {
                f.commit_window();
            }
            append(&f, i);
        }
        // Readers see every byte through the mapping at once.
        assert_eq!(f.read(0, expected.len()).unwrap(), &expected[..]);
        // The newest bytes are in a segment, not on the file: no sendfile of them.
        assert!(!f.on_file(expected.len() - 1000, 1000));
        assert!(
            f.on_file(0, 16 << 10),
            "the first ranges were written out and retired"
        );
        // A flush writes the rest out (the partial last page padded with zeros) and syncs.
        assert_eq!(f.flush(0).unwrap(), expected.len());
        assert_eq!(on_disk(&f, expected.len()), expected);
        let mut tail = vec![1u8; 4096];
        f.file()
            .read_exact_at(&mut tail, expected.len() as u64)
            .unwrap();
        assert!(tail.iter().all(|&b| b == 0), "no stale bytes past the end");
        // Detached, the mapping reads the file; the bytes are unchanged.
        f.detach_window().unwrap();
        assert!(f.on_file(0, expected.len()));
        assert_eq!(f.read(0, expected.len()).unwrap(), &expected[..]);
        w.close();
        assert!(!dir_of(root.path()).exists());
    }

    #[test]
    fn a_window_with_nothing_new_writes_nothing() {
        use std::os::unix::fs::FileExt;
        let root = tempfile::tempdir().unwrap();
        let (w, f) = windowed(root.path());
        f.commit_window();
        append(&f, 0);
        f.commit_window();
        assert!(!f.on_file(0, 1000), "appended through a segment");
        assert_eq!(on_disk(&f, 1000), record(0), "the partial page went out");
        // Bytes changed on the file behind the window's back show whether it writes again.
        let other = std::fs::OpenOptions::new()
            .write(true)
            .open(f.path())
            .unwrap();
        other.write_all_at(&[7u8; 1000], 0).unwrap();
        f.commit_window();
        assert_eq!(
            on_disk(&f, 1000),
            [7u8; 1000],
            "nothing was appended, yet the window wrote its partial page again"
        );
        append(&f, 1);
        f.commit_window();
        let expected: Vec<u8> = (0..2).flat_map(record).collect();
        assert_eq!(on_disk(&f, 2000), expected, "a longer tail goes out whole");
        f.detach_window().unwrap();
        w.close();
    }

    #[test]
    fn a_segment_is_reused_for_later_ranges_without_their_old_bytes_showing() {
        let root = tempfile::tempdir().unwrap();
        let (w, f) = windowed(root.path());
        // 1 MiB of 1000-byte records passes through 64 ranges with 4 segments.
        let n = FILE / 1000 - 1;
        for i in 0..n {
            if i % 4 == 0 {
                f.commit_window();
            }
            append(&f, i);
        }
        f.append_blank().unwrap();
        for _ in 0..3 {
            f.commit_window();
        }
        assert!(f.on_file(0, FILE), "a full file's segments all come back");
        let expected: Vec<u8> = (0..n).flat_map(record).collect();
        let all = on_disk(&f, FILE);
        assert_eq!(&all[..expected.len()], &expected[..]);
        // The BLANK filler's header, then zeros: no bytes of an earlier range of a segment.
        assert!(all[expected.len() + 8..].iter().all(|&b| b == 0));
        assert_eq!(f.read(0, expected.len()).unwrap(), &expected[..]);
        w.close();
    }

    #[test]
    fn replay_writes_what_a_killed_store_left_in_its_window_up_to_the_mark() {
        let root = tempfile::tempdir().unwrap();
        let expected: Vec<u8> = (0..40).flat_map(record).collect();
        {
            let (_w, f) = windowed(root.path());
            for i in 0..40 {
                if i % 4 == 0 {
                    f.commit_window();
                }
                append(&f, i);
            }
            assert!(!f.on_file(expected.len() - 1000, 1000));
            // The process dies here: nothing is flushed, detached or closed (a dropped file
            // would write its segments out).
            std::mem::forget(f);
        }
        let dir = root.path().join("commitlog");
        let path = dir.join(crate::format::file_name(FROM));
        let before = std::fs::read(&path).unwrap();
        assert_ne!(
            &before[..expected.len()],
            &expected[..],
            "not on the file yet"
        );
        let replayed = replay(root.path(), &dir).unwrap();
        assert!(replayed > 0 && replayed <= 16 << 10, "{replayed}");
        let after = std::fs::read(&path).unwrap();
        assert_eq!(&after[..expected.len()], &expected[..]);
        // Nothing past the mark: the segment attached ahead of the appender held no record.
        assert!(after[expected.len()..].iter().all(|&b| b == 0));
        // Another file of the same name (a store deleted and made again) is left alone.
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, vec![0u8; FILE]).unwrap();
        assert_eq!(replay(root.path(), &dir).unwrap(), 0);
        let _ = std::fs::remove_dir_all(dir_of(root.path()));
    }

    #[test]
    fn a_file_dropped_while_it_holds_segments_writes_them_out_and_gives_them_back() {
        let root = tempfile::tempdir().unwrap();
        let (w, f) = windowed(root.path());
        for i in 0..20 {
            if i % 4 == 0 {
                f.commit_window();
            }
            append(&f, i);
        }
        assert!(f.holds_window_segments());
        let file = f.file().try_clone().unwrap();
        drop(f);
        let expected: Vec<u8> = (0..20).flat_map(record).collect();
        let mut got = vec![0u8; expected.len()];
        file.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got, expected);
        let free = w.free.lock().unwrap();
        assert_eq!(free.0.len(), free.1, "every segment created is free again");
        drop(free);
        w.close();
    }

    #[test]
    fn files_that_do_not_split_into_segments_get_no_window() {
        assert_eq!(segment_len(1 << 30), Some(16 << 20));
        assert_eq!(segment_len(64 << 10), Some(16 << 10));
        assert_eq!(segment_len(16 << 10), None);
        assert_eq!(segment_len(1_000_000), None);
    }
}
