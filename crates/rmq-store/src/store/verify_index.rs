//! The start-up check of the index files (called by [`verify`](super::verify)): each file's
//! header (entry count within `maxIndexNum`, slots used within bounds, CommitLog offsets in
//! order and inside the CommitLog, the first and last entries' store times equal to their
//! records') and a sample of its entries and slots (offsets within the header's range, chain
//! links backwards, the key hash one of the record's keys). The first damaged file and the
//! newer ones are deleted; the caller re-indexes from the end of the last good file.

use std::sync::atomic::Ordering;

use super::MessageStore;
use crate::dispatch::DispatchRequest;
use crate::error::Result;
use crate::format::DecodedRecord;
use crate::index_file::{message_keys, IndexFile, IndexHeader, TopicKeys};

/// Index entries (and slots) sampled per index file.
const INDEX_SAMPLES: u32 = 16;

impl MessageStore {
    /// Check the index files; on damage delete the first damaged one and the newer ones and
    /// return where re-indexing starts.
    pub(super) fn check_index(&self, cl_min: i64) -> Result<Option<i64>> {
        let files = self.index.files();
        let mut prev_end = -1;
        for (i, f) in files.iter().enumerate() {
            if let Err(why) = self.check_index_file(f, prev_end, cl_min) {
                log::warn!(
                    "index file {} is damaged ({why}); deleting it and the {} newer ones and \
                     rebuilding them from the CommitLog",
                    f.path().display(),
                    files.len() - i - 1
                );
                self.index.delete_from(i)?;
                self.check_stats
                    .rebuilt_index_files
                    .fetch_add((files.len() - i) as u64, Ordering::Relaxed);
                let good_end = i
                    .checked_sub(1)
                    .map_or(cl_min, |p| files[p].end_phy_offset());
                return Ok(Some(good_end.max(cl_min)));
            }
            prev_end = f.end_phy_offset().max(prev_end);
        }
        Ok(None)
    }

    fn check_index_file(
        &self,
        f: &IndexFile,
        prev_end: i64,
        cl_min: i64,
    ) -> std::result::Result<(), String> {
        let h = f.header();
        let (slots, num) = f.limits();
        let count = u32::try_from(h.index_count).map_err(|_| "negative count".to_owned())?;
        if count > num {
            return Err(format!("index count {count} above maxIndexNum {num}"));
        }
        if count <= 1 {
            return match f.entry(1) {
                Some((0, 0, _, _)) | None => Ok(()),
                Some(_) => Err("the header says empty but entries are stored".to_owned()),
            };
        }
        let cl_max = self.commit_log.max_offset();
        let slot_max = i64::from(slots).min(i64::from(count) - 1);
        if h.begin_phy_offset < prev_end.max(0)
            || h.begin_phy_offset > h.end_phy_offset
            || h.end_phy_offset >= cl_max
            || h.begin_timestamp <= 0
            || h.hash_slot_count < 1
            || i64::from(h.hash_slot_count) > slot_max
        {
            return Err(format!(
                "header out of range: phy offsets {}..{} (CommitLog ends at {cl_max}, previous \
                 file at {prev_end}), times {}..{}, {} slots used of {count} entries",
                h.begin_phy_offset,
                h.end_phy_offset,
                h.begin_timestamp,
                h.end_timestamp,
                h.hash_slot_count
            ));
        }
        for (phy, ts, what) in [
            (h.begin_phy_offset, h.begin_timestamp, "first"),
            (h.end_phy_offset, h.end_timestamp, "last"),
        ] {
            if phy >= cl_min {
                let r = self.record_at(phy)?;
                if r.1 != ts {
                    return Err(format!(
                        "the {what} entry's record at {phy} was stored at {}, the header says {ts}",
                        r.1
                    ));
                }
            }
        }
        let last = count - 1;
        let mut picks: Vec<u32> = (0..INDEX_SAMPLES)
            .map(|k| 1 + (last - 1) * k / INDEX_SAMPLES)
            .collect();
        picks.push(last);
        for n in picks {
            self.check_index_entry(f, n, &h, cl_min)?;
        }
        for k in 0..INDEX_SAMPLES.min(slots) {
            let s = u32::try_from(u64::from(slots) * u64::from(k) / u64::from(INDEX_SAMPLES))
                .unwrap_or(0);
            match f.slot(s) {
                Some(v) if v >= 0 && v < h.index_count => {}
                v => return Err(format!("slot {s} holds {v:?}, entries end at {last}")),
            }
        }
        Ok(())
    }

    fn check_index_entry(
        &self,
        f: &IndexFile,
        n: u32,
        h: &IndexHeader,
        cl_min: i64,
    ) -> std::result::Result<(), String> {
        let Some((hash, phy, diff, prev)) = f.entry(n) else {
            return Err(format!("entry {n} cannot be read"));
        };
        let bad = |what: &str| Err(format!("entry {n}: {what}"));
        if phy < h.begin_phy_offset || phy > h.end_phy_offset {
            return bad(&format!(
                "CommitLog offset {phy} outside the header's range"
            ));
        }
        if diff < 0 {
            return bad(&format!("time {diff} s after the first entry"));
        }
        if prev < 0 || i64::from(prev) >= i64::from(n) {
            return bad(&format!("previous entry {prev}"));
        }
        if phy < cl_min {
            return Ok(());
        }
        let sel = self
            .look_message_by_offset(phy)
            .ok_or_else(|| format!("entry {n}: no record at CommitLog offset {phy}"))?;
        let r = DecodedRecord::parse(sel.bytes()).map_err(|e| format!("entry {n}: {e}"))?;
        let req = DispatchRequest::from_record(&r, self.reput.delay_levels_ms())
            .ok_or("a record above 2 GiB")?;
        let topic_keys = TopicKeys::new(r.topic);
        let hit = message_keys(req.uniq_key, req.keys).any(|k| topic_keys.hash(k) == hash);
        if hit {
            Ok(())
        } else {
            bad(&format!("key hash {hash} is no key of the record at {phy}"))
        }
    }

    /// `(CommitLog offset, store time)` of the record at `phy`.
    fn record_at(&self, phy: i64) -> std::result::Result<(i64, i64), String> {
        let sel = self
            .look_message_by_offset(phy)
            .ok_or_else(|| format!("no record at CommitLog offset {phy}"))?;
        let r = DecodedRecord::parse(sel.bytes()).map_err(|e| e.to_string())?;
        Ok((r.physical_offset, r.store_timestamp))
    }
}
