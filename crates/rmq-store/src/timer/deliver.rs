//! Delivery of one due second of timer messages: each message is read back from the CommitLog,
//! its properties rewritten as RocketMQ's `TimerMessageStore.convert` does (`TIMER_ENQUEUE_MS`
//! and `TIMER_DEQUEUE_MS` added, `REAL_TOPIC` / `REAL_QID` removed, the parked record's id as
//! `UNIQ_KEY` when it has none) and appended to its real queue, up to [`BATCH`] at a time under
//! one hold of the put lock. Timers that only wait for the wheel to come round are linked again.

use rmq_common::properties::{edit_properties, find_property, PropertyKey};
use rmq_common::time::now_millis;

use super::engine::TimerEngine;
use super::log::TimerEntry;
use super::TIMER_TOPIC;
use crate::error::{Result, StoreError};
use crate::format::{scan_record, DecodedRecord, MessageToStore, Scan};
use crate::mapped_file::SelectMappedBufferResult;
use crate::store::MessageStore;

/// Messages appended per hold of the put lock.
const BATCH: usize = 256;

/// A message that can never be delivered, and why.
fn skip(e: &TimerEntry, why: &str) {
    log::warn!(
        "timer message at CommitLog offset {} (due second {}) skipped: {why}",
        e.offset_py,
        e.delayed
    );
}

/// A parked record read back, with the properties its delivered copy gets.
struct Prepared {
    sel: SelectMappedBufferResult,
    properties: Vec<u8>,
}

fn prop<'a>(r: &DecodedRecord<'a>, name: &str) -> Option<&'a str> {
    find_property(r.properties, name).and_then(|v| std::str::from_utf8(v).ok())
}

/// Real topic and queue of a parked record.
fn real_queue<'a>(r: &DecodedRecord<'a>) -> Option<(&'a str, i32)> {
    Some((
        prop(r, PropertyKey::REAL_TOPIC)?,
        prop(r, PropertyKey::REAL_QUEUE_ID)?.parse().ok()?,
    ))
}

/// Read `e`'s record and compute its delivered properties; `None` (logged) when it can never
/// be delivered.
fn prepare(store: &MessageStore, e: &TimerEntry) -> Option<Prepared> {
    let Some(sel) = store.look_message_by_offset(e.offset_py) else {
        skip(
            e,
            "no such message (deleted with its CommitLog file before it was due?)",
        );
        return None;
    };
    let Scan::Message(r) = scan_record(sel.bytes(), false) else {
        skip(e, "not a message record");
        return None;
    };
    if r.topic != TIMER_TOPIC || i32::try_from(r.total_size).ok() != Some(e.size_py) {
        skip(
            e,
            "the record there is not the timer message its entry points to",
        );
        return None;
    }
    if real_queue(&r).is_none() {
        skip(e, "it has no REAL_TOPIC / REAL_QID property");
        return None;
    }
    let enqueue_ms = r.store_timestamp.to_string();
    let dequeue_ms = now_millis().to_string();
    let offset_id;
    let mut set = vec![
        (PropertyKey::TIMER_ENQUEUE_MS, enqueue_ms.as_str()),
        (PropertyKey::TIMER_DEQUEUE_MS, dequeue_ms.as_str()),
    ];
    if prop(&r, PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX).is_none() {
        // Consumers see the id the producer was given: the parked record's offset id.
        offset_id = rmq_common::create_offset_msg_id(r.store_host, r.physical_offset);
        set.push((
            PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            offset_id.as_str(),
        ));
    }
    let properties = edit_properties(
        r.properties,
        &[PropertyKey::REAL_TOPIC, PropertyKey::REAL_QUEUE_ID],
        &set,
    );
    Some(Prepared { sel, properties })
}

/// The message to append for a prepared record.
fn to_store(p: &Prepared) -> Option<MessageToStore<'_>> {
    let Scan::Message(r) = scan_record(p.sel.bytes(), false) else {
        return None;
    };
    let (topic, queue_id) = real_queue(&r)?;
    Some(MessageToStore {
        topic,
        queue_id,
        flag: r.flag,
        body: r.body,
        properties: &p.properties,
        sys_flag: r.sys_flag,
        born_timestamp: r.born_timestamp,
        born_host: r.born_host,
        reconsume_times: r.reconsume_times,
        prepared_transaction_offset: 0,
    })
}

/// Append a batch; a message its real queue refuses (illegal, too large) is skipped, the
/// others still go. Returns the end offset of the last appended, if any.
fn put(store: &MessageStore, batch: &[(TimerEntry, Prepared)]) -> Result<Option<i64>> {
    let msgs: Vec<MessageToStore<'_>> = batch.iter().filter_map(|(_, p)| to_store(p)).collect();
    match store.append(&msgs) {
        Ok(results) => Ok(results.last().map(crate::AppendResult::end_offset)),
        Err(StoreError::MessageIllegal(_) | StoreError::PropertiesSizeExceeded(_)) => {
            let mut end = None;
            for (e, p) in batch {
                let Some(m) = to_store(p) else { continue };
                match store.append_one(&m) {
                    Ok(a) => end = Some(a.end_offset()),
                    Err(
                        err @ (StoreError::MessageIllegal(_)
                        | StoreError::PropertiesSizeExceeded(_)),
                    ) => skip(
                        e,
                        &format!(
                            "its real queue {}/{} refuses it: {err}",
                            m.topic, m.queue_id
                        ),
                    ),
                    Err(err) => return Err(err),
                }
            }
            Ok(end)
        }
        Err(err) => Err(err),
    }
}

/// Deliver the chain `entries` of the engine's read second from `*resume_at` on, moving
/// `*resume_at` past what is done (so a refused write resumes there, not from the start).
/// Returns how many were delivered and the end offset of the last.
pub(super) fn second(
    store: &MessageStore,
    engine: &mut TimerEngine,
    entries: &[TimerEntry],
    resume_at: &mut usize,
) -> Result<(usize, Option<i64>)> {
    let mut delivered = 0;
    let mut end = None;
    while *resume_at < entries.len() {
        let mut batch = Vec::new();
        let mut next = *resume_at;
        while let Some(e) = entries.get(next) {
            if batch.len() == BATCH {
                break;
            }
            if e.delayed > engine.read_slot() {
                if !batch.is_empty() {
                    break; // append what is prepared first: resume_at stays exact
                }
                engine.requeue(e)?;
            } else if let Some(p) = prepare(store, e) {
                batch.push((*e, p));
            }
            next += 1;
        }
        if !batch.is_empty() {
            if let Some(at) = put(store, &batch)? {
                end = Some(at);
            }
            delivered += batch.len();
        }
        *resume_at = next;
    }
    Ok((delivered, end))
}
