//! The CommitLog walk of recovery (where valid records end, and which ranges in between are
//! damaged) and the look-ahead that dispatch shares with it. A record is valid when its
//! magic, TOTALSIZE and fields agree, its body CRC matches (with `checkCRCOnRecover`) and its
//! PHYSICALOFFSET field equals its position.
//!
//! At an invalid record the walk does not stop: it looks ahead, in the same file and in every
//! later one, for the next position where a record is valid (or where the BLANK filler runs
//! exactly to the end of its file). If there is one, the bytes in between are a damaged range
//! (logged with file, offset and length, and kept in [`crate::damaged`]) and the walk goes
//! on from there; only when nothing valid follows is the invalid spot a torn tail, and the
//! log ends there. Looking ahead tests each byte that could start a magic code, so a flipped
//! byte costs one record, not the rest of the log; a random match would need a valid magic,
//! a consistent layout and its own position in the 8-byte PHYSICALOFFSET field (and the
//! CRC), so the record after a candidate is not checked too.
//!
//! The look-ahead reads only the stretches of a file that hold data (`SEEK_DATA`), without
//! read-ahead: the unwritten tail of the newest file, where every clean start looks, stays
//! out of the page cache (about 1 ms per start instead of about 1 s per GiB of tail).

use std::sync::Arc;

use crate::damaged::DamagedRange;
use crate::format::{scan_record, Scan};
use crate::mapped_file::MappedFile;

/// First bytes of the V1/V2 message magic (`0xDAA320A7`/`0xDAA320AB`) and of the BLANK magic
/// (`0xCBD43194`): where a look-ahead candidate can start.
const MAGIC_FIRST_BYTES: (u8, u8) = (0xDA, 0xCB);

/// What the walk found.
pub(crate) struct ScanOutcome {
    /// Global offset where valid data ends.
    pub(crate) end: i64,
    /// Damaged ranges skipped on the way.
    pub(crate) damaged: Vec<DamagedRange>,
}

/// What starts at one position.
enum At {
    /// A valid record of this many bytes.
    Record(usize),
    /// The BLANK filler, or the end of the file: the next file follows.
    EndOfFile,
    /// Neither; why.
    Bad(String),
}

/// What starts at `raw[pos]`, `raw[0]` being at global offset `base`.
fn check_at(raw: &[u8], base: i64, pos: usize, check_crc: bool) -> At {
    if pos >= raw.len() {
        return At::EndOfFile;
    }
    match scan_record(&raw[pos..], check_crc) {
        Scan::Message(r) if Some(r.physical_offset) == offset(base, pos) => {
            At::Record(r.total_size)
        }
        Scan::Message(r) => At::Bad(format!(
            "PHYSICALOFFSET field {} does not match the position",
            r.physical_offset
        )),
        Scan::Blank => At::EndOfFile,
        Scan::Invalid(e) => At::Bad(e.to_string()),
    }
}

fn offset(base: i64, pos: usize) -> Option<i64> {
    base.checked_add(i64::try_from(pos).ok()?)
}

/// Whether the walk can resume at `pos`: a valid record, or a BLANK filler whose TOTALSIZE
/// reaches exactly the end of `raw` (the end of the file).
fn resumes_at(raw: &[u8], base: i64, pos: usize, check_crc: bool) -> bool {
    match check_at(raw, base, pos, check_crc) {
        At::Record(_) => true,
        At::EndOfFile => raw
            .get(pos..pos + 4)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .and_then(|b| usize::try_from(i32::from_be_bytes(b)).ok())
            .is_some_and(|size| size == raw.len() - pos),
        At::Bad(_) => false,
    }
}

/// The first position at or after `from` of `raw` (a whole file or its readable part from
/// global offset `base`) where a walk can resume, a valid record or the BLANK filler to the
/// end of the file, among those whose magic code starts before `until`: the search reads no
/// byte from `until` on, except to check a candidate.
pub(crate) fn next_valid_in(
    raw: &[u8],
    base: i64,
    from: usize,
    until: usize,
    check_crc: bool,
) -> Option<usize> {
    let until = until.min(raw.len());
    let mut p = from;
    while p + 8 <= raw.len() && p + 4 < until {
        let (a, b) = MAGIC_FIRST_BYTES;
        let cand = p + memchr::memchr2(a, b, &raw[p + 4..until])?;
        if cand + 8 <= raw.len() && resumes_at(raw, base, cand, check_crc) {
            return Some(cand);
        }
        p = cand + 1;
    }
    None
}

/// The next position at or after `(idx, from)` where the walk can resume. Only the parts of
/// each file that hold data are searched: a hole (a sparse file's unwritten tail) holds no
/// record, and reading it would only fault in pages of zeroes.
fn find_resume(
    files: &[Arc<MappedFile>],
    idx: usize,
    from: usize,
    check_crc: bool,
) -> Option<(usize, usize)> {
    files.iter().enumerate().skip(idx).find_map(|(j, f)| {
        // Without read-ahead, reading a stretch does not turn the unwritten extents after it
        // into cached pages that the next SEEK_DATA would report as data.
        f.advise_random(true);
        let found = resume_in_file(f, if j == idx { from } else { 0 }, check_crc);
        f.advise_random(false);
        found.map(|p| (j, p))
    })
}

/// [`next_valid_in`] over the stretches of `f` from `from` that hold data. A whole record is
/// written data: it never spans a hole.
fn resume_in_file(f: &MappedFile, from: usize, check_crc: bool) -> Option<usize> {
    let raw = f.raw_from(0);
    let len = raw.len() as u64;
    let mut at = from as u64;
    while let Some((start, end)) = crate::mmap::next_data(f.file(), at, len) {
        let from = usize::try_from(start.max(at)).ok()?;
        let until = usize::try_from(end).ok()?;
        if let Some(p) = next_valid_in(raw, f.file_from_offset(), from, until, check_crc) {
            return Some(p);
        }
        at = end.max(start + 1);
    }
    None
}

/// Walk the CommitLog from the start of `files[start]`; see the module doc.
pub(crate) fn scan_commit_log(
    files: &[Arc<MappedFile>],
    start: usize,
    check_crc: bool,
) -> ScanOutcome {
    let mut damaged = Vec::new();
    let (mut idx, mut pos) = (start, 0usize);
    loop {
        let f = &files[idx];
        let raw = f.raw_from(0);
        // A file is readable only up to where its data ends (a sparse file's unwritten tail
        // is not mapped for reading): past that is no record, not the end of the file.
        let at = if pos >= raw.len() && raw.len() < f.file_size() {
            At::Bad("the file holds no data past here".to_owned())
        } else {
            check_at(raw, f.file_from_offset(), pos, check_crc)
        };
        match at {
            At::Record(n) => pos += n,
            At::EndOfFile if idx + 1 < files.len() => (idx, pos) = (idx + 1, 0),
            At::EndOfFile => {
                return ScanOutcome {
                    end: f.offset_of(f.file_size()),
                    damaged,
                }
            }
            At::Bad(reason) => {
                if let Some((j, p)) = find_resume(files, idx, pos + 1, check_crc) {
                    record_damage(&files[idx..=j], pos, p, &reason, &mut damaged);
                    (idx, pos) = (j, p);
                    continue;
                }
                if raw[pos..].iter().take(64).any(|&b| b != 0) {
                    log::warn!(
                        "CommitLog {} offset {pos}: {reason}; no valid record follows it in \
                         this file or a later one, so this is the torn tail of the last write \
                         and the CommitLog ends here (the bytes after it are cut)",
                        f.path().display()
                    );
                }
                return ScanOutcome {
                    end: f.offset_of(pos),
                    damaged,
                };
            }
        }
    }
}

/// The range from `pos` in the first of `files` to `resume` in the last, one entry per file.
fn record_damage(
    files: &[Arc<MappedFile>],
    pos: usize,
    resume: usize,
    reason: &str,
    out: &mut Vec<DamagedRange>,
) {
    let mut from = pos;
    for (k, g) in files.iter().enumerate() {
        let until = if k + 1 == files.len() {
            resume
        } else {
            g.file_size()
        };
        if until > from {
            out.push(report_damage(g, from, until - from, reason));
        }
        from = 0;
    }
}

fn report_damage(f: &MappedFile, pos: usize, len: usize, reason: &str) -> DamagedRange {
    log::error!(
        "CommitLog {} offset {pos}: {len} bytes are damaged and unreadable ({reason}); valid \
         records follow, so recovery skips this range (at CommitLog offset {}) and keeps \
         everything after it; a message stored there is lost",
        f.path().display(),
        f.offset_of(pos)
    );
    DamagedRange {
        file: f.path().to_owned(),
        offset: f.offset_of(pos),
        len: i64::try_from(len).unwrap_or(i64::MAX),
    }
}
