//! IndexFile: a hash index from `topic#key` to CommitLog offsets, for query by key (KEYS and
//! UNIQ_KEY) within a time range. Layout as RocketMQ's `IndexFile`/`IndexHeader`:
//!
//! ```text
//! header 40 B: beginTimestamp i64 | endTimestamp i64 | beginPhyOffset i64 | endPhyOffset i64
//!              | hashSlotCount i32 | indexCount i32
//! slots:  hashSlotNum × 4 B  (number of the newest entry of the bucket, 0 = empty)
//! entries: indexNum × 20 B   keyHash i32 | phyOffset i64 | timeDiff(s) i32 | prevIndex i32
//! ```
//!
//! Entry 0 is never used, so a zero slot means "empty". Keys are not stored: a hit is a
//! candidate that the caller confirms against the message. Slots are overwritten in place,
//! so every access goes through one `RwLock` per file (the dispatch thread writes, queries
//! read). Files are sparse (420 MB with the default `maxHashSlotNum`/`maxIndexNum`, of which
//! a page gets a block when first written); a write that finds no space fails cleanly and
//! [`crate::index_suspend`] suspends indexing until space returns.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use rmq_common::{index_hash_of, java_string_hash, java_string_hash_after};

use crate::error::{IoContext, Result, StoreError};
use crate::mmap::OwnedMap;

/// Size of the header.
pub const INDEX_HEADER_SIZE: usize = 40;
const HASH_SLOT_SIZE: usize = 4;
const INDEX_SIZE: usize = 20;

/// The header (`index_count` read as at least 1: entry 0 is never used).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct IndexHeader {
    pub(crate) begin_timestamp: i64,
    pub(crate) end_timestamp: i64,
    pub(crate) begin_phy_offset: i64,
    pub(crate) end_phy_offset: i64,
    pub(crate) hash_slot_count: i32,
    pub(crate) index_count: i32,
}

/// One entry as stored: `(keyHash, phyOffset, timeDiff in s, prevIndex)`.
pub(crate) type IndexEntry = (i32, i64, i32, i32);

impl IndexHeader {
    fn encode(&self) -> [u8; INDEX_HEADER_SIZE] {
        let mut b = [0u8; INDEX_HEADER_SIZE];
        b[0..8].copy_from_slice(&self.begin_timestamp.to_be_bytes());
        b[8..16].copy_from_slice(&self.end_timestamp.to_be_bytes());
        b[16..24].copy_from_slice(&self.begin_phy_offset.to_be_bytes());
        b[24..32].copy_from_slice(&self.end_phy_offset.to_be_bytes());
        b[32..36].copy_from_slice(&self.hash_slot_count.to_be_bytes());
        b[36..40].copy_from_slice(&self.index_count.to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Self {
        let l = |p: usize| i64::from_be_bytes(b[p..p + 8].try_into().unwrap_or([0; 8]));
        let i = |p: usize| i32::from_be_bytes(b[p..p + 4].try_into().unwrap_or([0; 4]));
        Self {
            begin_timestamp: l(0),
            end_timestamp: l(8),
            begin_phy_offset: l(16),
            end_phy_offset: l(24),
            hash_slot_count: i(32),
            index_count: i(36).max(1),
        }
    }
}

/// One index file.
pub struct IndexFile {
    path: PathBuf,
    hash_slot_num: u32,
    index_num: u32,
    /// The header and the mapping under one lock: the writer (`put_key`) holds it for
    /// writing, so the mapping's in-place rewrites need its `&mut`.
    state: RwLock<IndexState>,
}

struct IndexState {
    header: IndexHeader,
    map: OwnedMap,
}

impl IndexState {
    fn write_header(&mut self) -> std::io::Result<()> {
        let encoded = self.header.encode();
        self.map.write(0, &encoded)
    }

    fn read_i32(&self, pos: usize) -> Option<i32> {
        let mut b = [0u8; 4];
        self.map.read(pos, &mut b).then(|| i32::from_be_bytes(b))
    }
}

/// A message's keys in the index are `topic#key` (RocketMQ's `buildKey`). This is the one
/// place that spelling lives: the hash of `topic#` is computed once per message, and each
/// key's hash goes on from it, without the strings being built.
#[derive(Clone, Copy)]
pub(crate) struct TopicKeys(i32);

impl TopicKeys {
    pub(crate) fn new(topic: &str) -> Self {
        Self(java_string_hash_after(java_string_hash(topic), "#"))
    }

    /// The [`rmq_common::index_key_hash`] of `topic#key`.
    pub(crate) fn hash(self, key: &str) -> i32 {
        index_hash_of(java_string_hash_after(self.0, key))
    }
}

/// The keys a message is indexed under: its UNIQ_KEY, then each of its space-separated KEYS.
pub(crate) fn message_keys<'a>(
    uniq_key: Option<&'a str>,
    keys: Option<&'a str>,
) -> impl Iterator<Item = &'a str> {
    uniq_key
        .into_iter()
        .chain(keys.into_iter().flat_map(|k| k.split(' ')))
        .filter(|k| !k.is_empty())
}

fn file_len(slots: u32, num: u32) -> usize {
    INDEX_HEADER_SIZE + slots as usize * HASH_SLOT_SIZE + num as usize * INDEX_SIZE
}

impl IndexFile {
    /// Create a new, empty index file (sparse: only its header gets a block now).
    ///
    /// # Errors
    /// When the file cannot be created or its header written (no file is left then).
    pub fn create(path: &Path, hash_slot_num: u32, index_num: u32) -> Result<Self> {
        let map = OwnedMap::create(path, file_len(hash_slot_num, index_num))
            .ctx(|| format!("creating index file {}", path.display()))?;
        let header = IndexHeader {
            index_count: 1,
            ..IndexHeader::default()
        };
        let mut state = IndexState { header, map };
        if let Err(e) = state.write_header() {
            drop(state);
            let _ = std::fs::remove_file(path);
            return Err(StoreError::io(
                format!("writing the header of index file {}", path.display()),
                e,
            ));
        }
        Ok(Self {
            path: path.to_owned(),
            hash_slot_num,
            index_num,
            state: RwLock::new(state),
        })
    }

    /// Open an existing index file and read its header.
    ///
    /// # Errors
    /// When it cannot be opened or has the wrong size.
    pub fn load(path: &Path, hash_slot_num: u32, index_num: u32) -> Result<Self> {
        let map = OwnedMap::open(path, file_len(hash_slot_num, index_num))
            .ctx(|| format!("opening index file {}", path.display()))?;
        let mut raw = [0u8; INDEX_HEADER_SIZE];
        let header = IndexHeader::decode(if map.read(0, &mut raw) {
            &raw
        } else {
            &[0; INDEX_HEADER_SIZE]
        });
        Ok(Self {
            path: path.to_owned(),
            hash_slot_num,
            index_num,
            state: RwLock::new(IndexState { header, map }),
        })
    }

    /// Path of the file.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn header(&self) -> IndexHeader {
        self.state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .header
    }

    /// `(maxHashSlotNum, maxIndexNum)` the file was opened with.
    pub(crate) fn limits(&self) -> (u32, u32) {
        (self.hash_slot_num, self.index_num)
    }

    /// Slot `n` (the newest entry of its bucket), for the start-up check.
    pub(crate) fn slot(&self, n: u32) -> Option<i32> {
        let st = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let mut b = [0u8; HASH_SLOT_SIZE];
        st.map
            .read(INDEX_HEADER_SIZE + n as usize * HASH_SLOT_SIZE, &mut b)
            .then(|| i32::from_be_bytes(b))
    }

    /// Entry `n`, for the start-up check.
    pub(crate) fn entry(&self, n: u32) -> Option<IndexEntry> {
        let st = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let abs = INDEX_HEADER_SIZE
            + self.hash_slot_num as usize * HASH_SLOT_SIZE
            + n as usize * INDEX_SIZE;
        let mut e = [0u8; INDEX_SIZE];
        if !st.map.read(abs, &mut e) {
            return None;
        }
        Some((
            i32::from_be_bytes(e[0..4].try_into().ok()?),
            i64::from_be_bytes(e[4..12].try_into().ok()?),
            i32::from_be_bytes(e[12..16].try_into().ok()?),
            i32::from_be_bytes(e[16..20].try_into().ok()?),
        ))
    }

    /// CommitLog offset of the newest entry.
    #[must_use]
    pub fn end_phy_offset(&self) -> i64 {
        self.header().end_phy_offset
    }

    /// Store time of the newest entry.
    #[must_use]
    pub fn end_timestamp(&self) -> i64 {
        self.header().end_timestamp
    }

    /// Store time of the oldest entry.
    #[must_use]
    pub fn begin_timestamp(&self) -> i64 {
        self.header().begin_timestamp
    }

    /// Entries used (entry 0 included).
    #[must_use]
    pub fn index_count(&self) -> i32 {
        self.header().index_count
    }

    /// Whether no entry fits any more.
    #[must_use]
    pub fn is_write_full(&self) -> bool {
        u32::try_from(self.header().index_count).unwrap_or(u32::MAX) >= self.index_num
    }

    /// Index a key whose [`rmq_common::index_key_hash`] is `key_hash` → `phy_offset`. `Ok(false)` when
    /// the file is full; `Ok(true)` without writing for a message before the last one indexed
    /// here (a re-dispatch after recovery: it is indexed already).
    ///
    /// # Errors
    /// When a block under the entry or its slot cannot be allocated (a full disk); the file
    /// is unchanged then (an entry written without its slot and count is never read).
    pub fn put_key(&self, key_hash: i32, phy_offset: i64, store_timestamp: i64) -> Result<bool> {
        let mut st = self.state.write().unwrap_or_else(PoisonError::into_inner);
        let mut h = st.header;
        if phy_offset < h.end_phy_offset {
            return Ok(true);
        }
        let count = u32::try_from(h.index_count).unwrap_or(u32::MAX);
        if count >= self.index_num {
            return Ok(false);
        }
        let slot_pos = key_hash.unsigned_abs() % self.hash_slot_num;
        let abs_slot = INDEX_HEADER_SIZE + slot_pos as usize * HASH_SLOT_SIZE;
        let Some(mut slot_value) = st.read_i32(abs_slot) else {
            return Ok(false);
        };
        if slot_value <= 0 || slot_value > h.index_count {
            slot_value = 0;
        }
        let time_diff = if h.begin_timestamp <= 0 || h.index_count <= 1 {
            0
        } else {
            i32::try_from(((store_timestamp - h.begin_timestamp) / 1000).max(0)).unwrap_or(i32::MAX)
        };
        let abs_index = INDEX_HEADER_SIZE
            + self.hash_slot_num as usize * HASH_SLOT_SIZE
            + count as usize * INDEX_SIZE;
        let mut entry = [0u8; INDEX_SIZE];
        entry[0..4].copy_from_slice(&key_hash.to_be_bytes());
        entry[4..12].copy_from_slice(&phy_offset.to_be_bytes());
        entry[12..16].copy_from_slice(&time_diff.to_be_bytes());
        entry[16..20].copy_from_slice(&slot_value.to_be_bytes());
        let path = &self.path;
        let failed = |e| StoreError::io(format!("writing index file {}", path.display()), e);
        st.map.write(abs_index, &entry).map_err(failed)?;
        st.map
            .write(abs_slot, &h.index_count.to_be_bytes())
            .map_err(failed)?;
        if h.index_count <= 1 {
            h.begin_phy_offset = phy_offset;
            h.begin_timestamp = store_timestamp;
        }
        if slot_value == 0 {
            h.hash_slot_count += 1;
        }
        h.index_count += 1;
        h.end_phy_offset = phy_offset;
        h.end_timestamp = store_timestamp;
        st.header = h;
        // The header's page has had its block since the file was created.
        st.write_header().map_err(failed)?;
        Ok(true)
    }

    /// Whether entries of this file can fall in `[begin, end]`.
    #[must_use]
    pub fn is_time_matched(&self, begin: i64, end: i64) -> bool {
        let h = self.header();
        (begin < h.begin_timestamp && end > h.end_timestamp)
            || (begin >= h.begin_timestamp && begin <= h.end_timestamp)
            || (end >= h.begin_timestamp && end <= h.end_timestamp)
    }

    /// Candidate offsets for the key whose [`rmq_common::index_key_hash`] is `key_hash`,
    /// stored within `[begin, end]`, newest first, appended to `out` until it holds `max_num`.
    pub fn select_phy_offsets(
        &self,
        out: &mut Vec<i64>,
        key_hash: i32,
        max_num: usize,
        begin: i64,
        end: i64,
    ) {
        let st = self.state.read().unwrap_or_else(PoisonError::into_inner);
        let h = st.header;
        let slot_pos = key_hash.unsigned_abs() % self.hash_slot_num;
        let abs_slot = INDEX_HEADER_SIZE + slot_pos as usize * HASH_SLOT_SIZE;
        let Some(mut next) = st.read_i32(abs_slot) else {
            return;
        };
        let mut steps = 0;
        while next > 0 && next < h.index_count && out.len() < max_num && steps < h.index_count {
            steps += 1;
            let Ok(entry) = usize::try_from(next) else {
                break; // the loop condition keeps `next` positive
            };
            let abs = INDEX_HEADER_SIZE
                + self.hash_slot_num as usize * HASH_SLOT_SIZE
                + entry * INDEX_SIZE;
            let mut e = [0u8; INDEX_SIZE];
            if !st.map.read(abs, &mut e) {
                break;
            }
            let hash = i32::from_be_bytes(e[0..4].try_into().unwrap_or([0; 4]));
            let phy = i64::from_be_bytes(e[4..12].try_into().unwrap_or([0; 8]));
            let diff = i32::from_be_bytes(e[12..16].try_into().unwrap_or([0; 4]));
            let prev = i32::from_be_bytes(e[16..20].try_into().unwrap_or([0; 4]));
            let ts = h.begin_timestamp + i64::from(diff) * 1000;
            if hash == key_hash && ts >= begin && ts <= end {
                out.push(phy);
            }
            if prev <= 0 || prev >= next {
                break;
            }
            next = prev;
        }
    }

    /// Make the file durable.
    ///
    /// # Errors
    /// When the sync fails.
    pub fn flush(&self) -> Result<()> {
        let st = self.state.read().unwrap_or_else(PoisonError::into_inner);
        st.map
            .flush_range(0, st.map.len())
            .ctx(|| format!("flushing index file {}", self.path.display()))
    }
}

/// What the index needs to know of a dispatched message.
#[derive(Debug, Clone, Copy)]
pub struct IndexRequest<'a> {
    /// Topic.
    pub topic: &'a str,
    /// KEYS property (space separated), if any.
    pub keys: Option<&'a str>,
    /// UNIQ_KEY property, if any.
    pub uniq_key: Option<&'a str>,
    /// CommitLog offset.
    pub commit_log_offset: i64,
    /// Store time.
    pub store_timestamp: i64,
    /// Sys flag (rollback records are not indexed).
    pub sys_flag: i32,
}

/// The index files and the rules for building and querying them.
pub struct IndexService {
    dir: PathBuf,
    hash_slot_num: u32,
    index_num: u32,
    files: RwLock<Vec<Arc<IndexFile>>>,
    /// Files that filled up since the last [`flush`](Self::flush), which syncs them before
    /// the newest. Not synced when they fill: that is on the dispatch path (a batch's put
    /// thread), and a full file's sync, hundreds of MB, stalled sends for seconds.
    full_unsynced: Mutex<Vec<Arc<IndexFile>>>,
}

/// `yyyyMMddHHmmssSSS` (UTC) for an epoch-milliseconds time: an IndexFile name.
#[must_use]
pub fn index_file_name(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Civil-from-days (proleptic Gregorian), Howard Hinnant's algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}{:02}{:02}{:02}{milli:03}",
        sod / 3600,
        sod / 60 % 60,
        sod % 60
    )
}

impl IndexService {
    /// The service over `dir` (created if missing).
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>, hash_slot_num: u32, index_num: u32) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).ctx(|| format!("creating {}", dir.display()))?;
        Ok(Self {
            dir,
            hash_slot_num,
            index_num,
            files: RwLock::new(Vec::new()),
            full_unsynced: Mutex::new(Vec::new()),
        })
    }

    /// Open the files. After a crash, files holding entries newer than the checkpoint's
    /// index time are deleted: dispatch rebuilds them from the CommitLog. So is a file of the
    /// wrong size (cut short by a crash or power loss while it was being made), with every
    /// newer one: the index is derived data, and its entries must stay in CommitLog order.
    ///
    /// # Errors
    /// When a file cannot be opened or removed.
    pub fn load(&self, last_exit_ok: bool, checkpoint_index_ts: i64) -> Result<()> {
        let paths = crate::mapped_file_queue::sorted_files(&self.dir)?;
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        let want = file_len(self.hash_slot_num, self.index_num) as u64;
        let bad = paths
            .iter()
            .position(|p| std::fs::metadata(p).is_ok_and(|m| m.len() != want));
        let mut paths = paths;
        if let Some(i) = bad {
            for p in paths.split_off(i) {
                log::warn!(
                    "index file {} is not {want} bytes (maxHashSlotNum/maxIndexNum, or cut \
                     short by a crash): it and any newer index file are deleted and rebuilt \
                     from the CommitLog",
                    p.display()
                );
                std::fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
            }
        }
        for p in paths {
            let f = IndexFile::load(&p, self.hash_slot_num, self.index_num)?;
            if !last_exit_ok && f.end_timestamp() > checkpoint_index_ts {
                drop(f);
                std::fs::remove_file(&p).ctx(|| format!("removing {}", p.display()))?;
                continue;
            }
            files.push(Arc::new(f));
        }
        Ok(())
    }

    /// The files, oldest first (the start-up check reads them).
    pub(crate) fn files(&self) -> Vec<Arc<IndexFile>> {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Delete file `i` and every newer one (the start-up check found file `i` damaged;
    /// dispatch rebuilds from the end of file `i - 1`).
    ///
    /// # Errors
    /// When a file cannot be removed.
    pub(crate) fn delete_from(&self, i: usize) -> Result<()> {
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        let at = i.min(files.len());
        for f in files.split_off(at) {
            std::fs::remove_file(f.path()).ctx(|| format!("removing {}", f.path().display()))?;
        }
        Ok(())
    }

    /// End offset of what the index covers (0 when empty): re-dispatch from here is enough.
    #[must_use]
    pub fn end_phy_offset(&self) -> i64 {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .map_or(0, |f| f.end_phy_offset())
    }

    fn lock_full_unsynced(&self) -> std::sync::MutexGuard<'_, Vec<Arc<IndexFile>>> {
        self.full_unsynced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The newest file, full or not (`put_key` says when it is): one lock less a message
    /// than [`writable_file`](Self::writable_file).
    fn last_file(&self) -> Option<Arc<IndexFile>> {
        self.files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned()
    }

    fn writable_file(&self) -> Result<Arc<IndexFile>> {
        if let Some(f) = self
            .files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
        {
            if !f.is_write_full() {
                return Ok(Arc::clone(f));
            }
        }
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(prev) = files.last() {
            self.lock_full_unsynced().push(Arc::clone(prev));
        }
        let mut now = rmq_common::time::now_millis();
        let mut path = self.dir.join(index_file_name(now));
        while path.exists() {
            now += 1;
            path = self.dir.join(index_file_name(now));
        }
        let f = Arc::new(IndexFile::create(
            &path,
            self.hash_slot_num,
            self.index_num,
        )?);
        files.push(Arc::clone(&f));
        Ok(f)
    }

    /// Index one message under `topic#uniqKey` and `topic#key` for each key.
    ///
    /// # Errors
    /// When a new index file cannot be created (the message stays stored, unindexed).
    pub fn build_index(&self, req: &IndexRequest<'_>) -> Result<()> {
        self.build_index_in(req, &mut None)
    }

    /// [`build_index`](Self::build_index), given the file the caller's last keys went into
    /// (kept there for the next call; only the newest file takes keys, and a file stops
    /// being the newest once full, which `put_key` says): the keys of a dispatch pass's
    /// messages skip the look-up of the newest file, a lock and a reference count each.
    pub(crate) fn build_index_in(
        &self,
        req: &IndexRequest<'_>,
        last_file: &mut Option<Arc<IndexFile>>,
    ) -> Result<()> {
        use rmq_common::sys_flag::{transaction_value, TRANSACTION_ROLLBACK_TYPE};
        if transaction_value(req.sys_flag) == TRANSACTION_ROLLBACK_TYPE {
            return Ok(());
        }
        let mut file = match last_file.take().or_else(|| self.last_file()) {
            Some(f) => f,
            None => self.writable_file()?,
        };
        let topic_keys = TopicKeys::new(req.topic);
        for k in message_keys(req.uniq_key, req.keys) {
            let hash = topic_keys.hash(k);
            while !file.put_key(hash, req.commit_log_offset, req.store_timestamp)? {
                file = self.writable_file()?;
            }
        }
        *last_file = Some(file);
        Ok(())
    }

    /// Candidate CommitLog offsets for `topic#key` within `[begin, end]`, newest first.
    #[must_use]
    pub fn query_offsets(
        &self,
        topic: &str,
        key: &str,
        max_num: usize,
        begin: i64,
        end: i64,
    ) -> Vec<i64> {
        let hash = TopicKeys::new(topic).hash(key);
        let files = self
            .files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut out = Vec::new();
        for f in files.iter().rev() {
            if out.len() >= max_num {
                break;
            }
            if f.is_time_matched(begin, end) {
                f.select_phy_offsets(&mut out, hash, max_num, begin, end);
            }
        }
        out
    }

    /// Delete index files wholly below CommitLog offset `phy_min` (never the newest).
    pub fn delete_expired_file(&self, phy_min: i64) -> usize {
        let mut files = self.files.write().unwrap_or_else(PoisonError::into_inner);
        let mut n = 0;
        while files.len() > 1 && files[0].end_phy_offset() < phy_min {
            let f = files.remove(0);
            if let Err(e) = std::fs::remove_file(f.path()) {
                log::warn!("could not delete {}: {e}", f.path().display());
            }
            n += 1;
        }
        n
    }

    /// Flush the files that filled up since the last call, then the newest; returns the
    /// newest's end timestamp (the checkpoint's index time).
    ///
    /// # Errors
    /// When a sync fails (the files not synced are synced by the next call).
    pub fn flush(&self) -> Result<i64> {
        let full = std::mem::take(&mut *self.lock_full_unsynced());
        for (i, f) in full.iter().enumerate() {
            if let Err(e) = f.flush() {
                // This file and those after it stay first in line for the next flush.
                self.lock_full_unsynced()
                    .splice(0..0, full[i..].iter().cloned());
                return Err(e);
            }
        }
        let last = self
            .files
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .last()
            .cloned();
        match last {
            Some(f) => {
                let ts = f.end_timestamp();
                f.flush()?;
                Ok(ts)
            }
            None => Ok(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_common::index_key_hash;

    #[test]
    fn file_names_are_utc_timestamps() {
        assert_eq!(index_file_name(0), "19700101000000000");
        assert_eq!(index_file_name(1_700_000_000_123), "20231114221320123");
        assert_eq!(index_file_name(951_782_400_000), "20000229000000000");
    }

    #[test]
    fn put_and_query_with_chains_and_layout() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("idx");
        let f = IndexFile::create(&p, 4, 16).unwrap();
        // 4 slots force collisions into chains.
        for i in 0..10 {
            assert!(f
                .put_key(
                    index_key_hash(&format!("T#k{}", i % 3)),
                    100 + i,
                    1_000_000 + i * 1000,
                )
                .unwrap());
        }
        let mut out = Vec::new();
        f.select_phy_offsets(&mut out, index_key_hash("T#k1"), 32, 0, i64::MAX);
        assert_eq!(out, vec![107, 104, 101], "newest first, only k1");
        out.clear();
        f.select_phy_offsets(&mut out, index_key_hash("T#k1"), 32, 1_004_000, 1_006_000);
        assert_eq!(out, vec![104]);
        assert_eq!(f.index_count(), 11);
        // Header on disk, field by field.
        drop(f);
        let raw = std::fs::read(&p).unwrap();
        assert_eq!(raw.len(), 40 + 4 * 4 + 16 * 20);
        assert_eq!(i64::from_be_bytes(raw[0..8].try_into().unwrap()), 1_000_000);
        assert_eq!(
            i64::from_be_bytes(raw[8..16].try_into().unwrap()),
            1_009_000
        );
        assert_eq!(i64::from_be_bytes(raw[16..24].try_into().unwrap()), 100);
        assert_eq!(i64::from_be_bytes(raw[24..32].try_into().unwrap()), 109);
        assert_eq!(i32::from_be_bytes(raw[36..40].try_into().unwrap()), 11);
        // Entry 1 is the first put: hash of "T#k0", offset 100, diff 0, prev 0.
        let e1 = 40 + 16 + 20;
        assert_eq!(
            i32::from_be_bytes(raw[e1..e1 + 4].try_into().unwrap()),
            index_key_hash("T#k0")
        );
        assert_eq!(
            i64::from_be_bytes(raw[e1 + 4..e1 + 12].try_into().unwrap()),
            100
        );
        let f = IndexFile::load(&p, 4, 16).unwrap();
        let mut out = Vec::new();
        f.select_phy_offsets(&mut out, index_key_hash("T#k2"), 32, 0, i64::MAX);
        assert_eq!(out, vec![108, 105, 102]);
    }

    /// A service of 5-entry files.
    fn small_service(dir: &Path) -> IndexService {
        IndexService::new(dir, 8, 5).unwrap()
    }

    /// Index message `i`: keys `a` and `b`, at offset `10·i`, stored at `1000 + i`.
    fn put_ab(svc: &IndexService, i: i64) {
        svc.build_index(&IndexRequest {
            topic: "T",
            keys: Some("a b"),
            uniq_key: None,
            commit_log_offset: i * 10,
            store_timestamp: 1_000 + i,
            sys_flag: 0,
        })
        .unwrap();
    }

    #[test]
    fn full_file_rolls_in_service() {
        let dir = tempfile::tempdir().unwrap();
        let svc = small_service(dir.path());
        (0..10).for_each(|i| put_ab(&svc, i));
        let hits = svc.query_offsets("T", "a", 100, 0, i64::MAX);
        assert_eq!(hits.len(), 10, "{hits:?}");
        assert!(svc.files.read().unwrap().len() >= 4);
        assert_eq!(svc.delete_expired_file(35), 2);
        assert!(svc.query_offsets("T", "a", 100, 0, i64::MAX).len() < 10);
    }

    #[test]
    fn files_that_fill_are_synced_by_the_next_flush_not_by_the_put_that_filled_them() {
        let dir = tempfile::tempdir().unwrap();
        let svc = small_service(dir.path());
        (0..10).for_each(|i| put_ab(&svc, i));
        let files = svc.files();
        assert!(files.len() >= 4);
        // Every file but the newest is full, and left to the flush.
        assert_eq!(svc.lock_full_unsynced().len(), files.len() - 1);
        assert_eq!(svc.flush().unwrap(), 1_009, "the newest file's end time");
        assert!(svc.lock_full_unsynced().is_empty());
        put_ab(&svc, 10);
        assert!(svc.lock_full_unsynced().len() <= 1);
    }
}
