//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): check the
//! message (`msgCheck`), find or auto-create the topic, append to the store, and under
//! SYNC_FLUSH wait (asynchronously, bounded by `syncFlushTimeout`) until it is durable.
//!
//! A single message sent to `%RETRY%<group>` that has been consumed `maxReconsumeTimes` times
//! already goes to `%DLQ%<group>` instead (RocketMQ's `handleRetryAndDLQ`): Java's orderly
//! consumers and its concurrent consumers' fallback hand messages back this way, not with
//! CONSUMER_SEND_MSG_BACK. Batches to a retry topic are refused, as in RocketMQ.
//!
//! A send runs in steps, each a function below: [`parse_header`]; [`route`] (the
//! `msgCheck` refusals, reserved topics, auto-creation, the retry → DLQ decision, the queue);
//! [`Entries::parse`] and [`halves`] (the body or batch entries with their properties, and
//! the half messages a transaction stores instead); [`append`] (these four are [`store`]);
//! [`answer_when_flushed`] (the SYNC_FLUSH wait, answered from the group-commit round) or
//! [`flush`] (the SYNC_MASTER wait, and a SYNC_FLUSH send that waits for none); [`ack`]
//! (the response header). Each returns a typed error; [`process`] turns it into the
//! response (`crate::error`).

use std::borrow::Cow;
use std::ops::Range;
use std::time::Duration;

use rmq_common::properties::{copy_properties_except, edit_properties, find, PropertyKey};
use rmq_protocol::body::{TopicConfig, PERM_READ, PERM_WRITE};
use rmq_protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use rmq_protocol::message_decoder::decode_batch_entries;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{Connection, Reply};
use rmq_store::flush::FlushOutcome;
use rmq_store::{AppendResult, FlushDiskType, MessageToStore, ReplicaWait, StoreError};

use super::send_msg_back::{dead_letter_topic, find_group, max_reconsume_times};
use super::{error_response, reply, response};
use crate::error::{RequestError, SendError};
use crate::state::BrokerState;
use crate::topic_config::{
    validate_topic, AUTO_CREATE_TOPIC_KEY_TOPIC, NOT_ALLOWED_SEND_TOPICS, RETRY_GROUP_TOPIC_PREFIX,
};
use crate::transaction::HalfMessage;

/// Serve a send.
pub async fn process(b: &BrokerState, conn: &Connection, req: &RemotingCommand) -> Option<Reply> {
    match send(b, conn, req).await {
        Ok(Some(c)) => reply(req, c),
        Ok(None) => None, // answered when flushed
        Err(e) => reply(req, error_response(req, &e)),
    }
}

/// The response, or `None` when the round that makes the send durable answers it.
async fn send(
    b: &BrokerState,
    conn: &Connection,
    req: &RemotingCommand,
) -> Result<Option<RemotingCommand>, RequestError> {
    let stored = store(b, conn, req)?;
    let last = stored.results.last().ok_or(SendError::NothingStored)?;
    if !needs_wait(b) {
        return Ok(Some(ack(
            b,
            req,
            &stored,
            ResponseCode::SUCCESS,
            String::new(),
        )));
    }
    if stored.wait && b.store.broker_role() != rmq_store::BrokerRole::SyncMaster {
        answer_when_flushed(b, conn, req, &stored, last.end_offset());
        return Ok(None);
    }
    // Only what the response needs lives across the wait: this future is part of every
    // request's boxed state, and the wait itself (timers, the replica's future) is boxed
    // apart, for the sends that wait, so the box stays in the allocator's small-size cache.
    let (code, remark) = Box::pin(flush(b, stored.wait, last.end_offset())).await?;
    Ok(Some(ack(b, req, &stored, code, remark)))
}

/// What a send stored: its queue, the records, whether the client waits for durability.
struct Stored {
    queue_id: i32,
    results: Vec<AppendResult>,
    wait: bool,
}

/// Everything before the wait: header, route, entries, half messages, the append.
fn store(
    b: &BrokerState,
    conn: &Connection,
    req: &RemotingCommand,
) -> Result<Stored, RequestError> {
    let h = parse_header(req)?;
    let route = route(b, req, &h)?;
    let entries = Entries::parse(b, req, &h, &route)?;
    let halves = halves(b, &h, &route, &entries)?;
    let results = append(b, conn, &h, &route, &entries, &halves)?;
    let header_props = h.properties.as_deref().unwrap_or("").as_bytes();
    Ok(Stored {
        queue_id: route.queue_id,
        results,
        wait: find::WAIT_STORE_MSG_OK.find(header_props) != Some(b"false"),
    })
}

/// The request header (V1 or V2) and the one refusal that needs nothing else.
fn parse_header(req: &RemotingCommand) -> Result<SendMessageRequestHeader, RequestError> {
    let h = SendMessageRequestHeader::from_request(req.code, &req.ext_fields)?;
    if is_batch(req) && h.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return Err(SendError::BatchToRetryTopic(h.topic).into());
    }
    Ok(h)
}

fn is_batch(req: &RemotingCommand) -> bool {
    req.code == RequestCode::SEND_BATCH_MESSAGE.0
}

/// Where a send is stored.
struct Route {
    /// `%DLQ%<group>` when a retry has been consumed `maxReconsumeTimes` times.
    dlq: Option<String>,
    /// The queue: the header's, a random one for a negative id, 0 in the DLQ.
    queue_id: i32,
}

/// `msgCheck`, then `handleRetryAndDLQ`, then the queue.
fn route(
    b: &BrokerState,
    req: &RemotingCommand,
    h: &SendMessageRequestHeader,
) -> Result<Route, SendError> {
    let config = msg_check(b, h)?;
    let dlq = dead_letter(b, req, h)?;
    let queue_id = if dlq.is_some() {
        0 // the DLQ has one queue (DLQ_NUMS_PER_GROUP)
    } else if h.queue_id < 0 {
        #[expect(
            clippy::cast_possible_truncation,
            reason = "the remainder is below write_queue_nums, an i32"
        )]
        let r = (rmq_common::time::now_millis().unsigned_abs()
            % u64::from(config.write_queue_nums.max(1).unsigned_abs())) as i32;
        r
    } else {
        h.queue_id
    };
    Ok(Route { dlq, queue_id })
}

/// `msgCheck`: the topic config to write to.
fn msg_check(b: &BrokerState, h: &SendMessageRequestHeader) -> Result<TopicConfig, SendError> {
    if b.broker_permission() & PERM_WRITE == 0 {
        return Err(SendError::BrokerNotWritable(b.config.broker_addr));
    }
    validate_topic(&h.topic).map_err(SendError::IllegalTopic)?;
    // TopicConfigManager.isTopicCanSendMessage, then TopicValidator.isNotAllowedSendTopic.
    if h.topic == AUTO_CREATE_TOPIC_KEY_TOPIC {
        return Err(SendError::ReservedTopic(h.topic.clone()));
    }
    if NOT_ALLOWED_SEND_TOPICS.contains(&h.topic.as_str()) {
        return Err(SendError::TopicNotAllowed(h.topic.clone()));
    }
    let sys_flag = i32::from(h.unit_mode); // TopicSysFlag.buildSysFlag(unit, false)
    let config = b
        .topics
        .create_in_send(
            &h.topic,
            &h.default_topic,
            h.default_topic_queue_nums,
            sys_flag,
        )
        .or_else(|| {
            h.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX).then(|| {
                b.topics
                    .create_in_send_back(&h.topic, 1, PERM_READ | PERM_WRITE, sys_flag)
            })
        });
    let Some(config) = config else {
        return Err(SendError::TopicNotExist {
            topic: h.topic.clone(),
            auto_create: b.config.auto_create_topic_enable,
            default_topic: h.default_topic.clone(),
        });
    };
    if h.queue_id >= config.write_queue_nums {
        return Err(SendError::IllegalQueueId {
            queue_id: h.queue_id,
            topic: h.topic.clone(),
            write_queue_nums: config.write_queue_nums,
        });
    }
    if config.perm & PERM_WRITE == 0 {
        return Err(SendError::TopicNotWritable(h.topic.clone()));
    }
    Ok(config)
}

/// `handleRetryAndDLQ` for a message sent to `%RETRY%<group>`: `Some(dlq topic)` when it has
/// been consumed `maxReconsumeTimes` times and belongs in the group's dead-letter topic.
fn dead_letter(
    b: &BrokerState,
    req: &RemotingCommand,
    h: &SendMessageRequestHeader,
) -> Result<Option<String>, SendError> {
    let Some(group_name) = h.topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok(None);
    };
    let group = find_group(b, group_name)?;
    let max = max_reconsume_times(req, h.max_reconsume_times, &group);
    Ok((h.reconsume_times.unwrap_or(0) >= max).then(|| dead_letter_topic(b, group_name)))
}

/// The messages of a send: each one's body, flag and properties (its own, then the
/// header's, then the cluster), the properties laid out one after another in one buffer.
struct Entries<'r> {
    /// SEND_BATCH_MESSAGE: stored in one append, transactional only as a whole.
    batch: bool,
    /// Every message's properties.
    props: Vec<u8>,
    /// Per message: body (borrowed from the request), its properties' range in `props`, flag.
    parts: Vec<(&'r [u8], Range<usize>, i32)>,
}

impl<'r> Entries<'r> {
    /// The body (or the batch's entries) of `req`, checked against `maxMessageSize`.
    fn parse(
        b: &BrokerState,
        req: &'r RemotingCommand,
        h: &SendMessageRequestHeader,
        route: &Route,
    ) -> Result<Self, SendError> {
        let body: &'r [u8] = req.body.as_deref().unwrap_or_default();
        let mut header_props = Cow::Borrowed(h.properties.as_deref().unwrap_or("").as_bytes());
        if route.dlq.is_some() {
            // Dead letters are stored as they are: no delay, whatever the message asked for.
            header_props = Cow::Owned(edit_properties(
                &header_props,
                &[PropertyKey::DELAY_TIME_LEVEL],
                &[],
            ));
        }
        let cluster = format!("CLUSTER\u{1}{}\u{2}", b.config.broker_cluster_name);
        let cluster = cluster.as_bytes();
        let mut props = Vec::new();
        let parts = if is_batch(req) {
            let entries = decode_batch_entries(body).map_err(SendError::BadBatch)?;
            if entries.is_empty() {
                return Err(SendError::EmptyBatch);
            }
            // Each entry's properties, a separator and the extras: sized once, not grown by
            // doubling through a batch of thousands.
            let extra = header_props.len() + cluster.len() + 2;
            props.reserve(entries.iter().map(|e| e.properties.len() + extra).sum());
            entries
                .into_iter()
                .map(|m| {
                    let start = props.len();
                    props.extend_from_slice(m.properties);
                    let range = close_properties(&mut props, start, &[&header_props, cluster]);
                    (m.body, range, m.flag)
                })
                .collect()
        } else {
            // RocketMQ stores a single message without its WAIT property (read in `ack`; 9
            // bytes a message); a batch keeps it, and so does a send-back.
            if find::WAIT_STORE_MSG_OK.find(&header_props).is_some() {
                let wait = PropertyKey::WAIT_STORE_MSG_OK.as_bytes();
                copy_properties_except(&header_props, |name| name == wait, &mut props);
            } else {
                props.extend_from_slice(&header_props);
            }
            vec![(body, close_properties(&mut props, 0, &[cluster]), h.flag)]
        };
        let max = b.store.config().max_message_size;
        if let Some((body, _, _)) = parts.iter().find(|(body, _, _)| body.len() > max) {
            return Err(SendError::BodyTooLarge {
                max,
                len: body.len(),
            });
        }
        Ok(Self {
            batch: is_batch(req),
            props,
            parts,
        })
    }

    /// The properties of every message, in order.
    fn properties(&self) -> impl Iterator<Item = &[u8]> + Clone {
        self.parts.iter().map(|(_, p, _)| &self.props[p.clone()])
    }
}

/// Close the message whose properties start at `start` in `props` with `extra`, each after a
/// separator; its range.
fn close_properties(props: &mut Vec<u8>, start: usize, extra: &[&[u8]]) -> Range<usize> {
    for e in extra.iter().filter(|e| !e.is_empty()) {
        if props.len() > start && !props.ends_with(&[2]) {
            props.push(2);
        }
        props.extend_from_slice(e);
    }
    start..props.len()
}

/// Transactions: a half message is parked in the half topic (`crate::transaction`); so is
/// every message of a batch flagged as a transaction (rmq's extension).
fn halves(
    b: &BrokerState,
    h: &SendMessageRequestHeader,
    route: &Route,
    entries: &Entries<'_>,
) -> Result<Vec<HalfMessage>, RequestError> {
    let mut props = entries.properties();
    if entries.batch {
        return Ok(crate::transaction::halves_for_batch(
            b,
            h,
            route.queue_id,
            props,
        )?);
    }
    let single = props.next().unwrap_or_default();
    Ok(
        crate::transaction::half_for_send(b, h, route.queue_id, single)?
            .into_iter()
            .collect(),
    )
}

/// Store the messages (as their halves, for a transaction) in one append.
fn append(
    b: &BrokerState,
    conn: &Connection,
    h: &SendMessageRequestHeader,
    route: &Route,
    entries: &Entries<'_>,
    halves: &[HalfMessage],
) -> Result<Vec<AppendResult>, RequestError> {
    let common = MessageToStore {
        topic: route.dlq.as_deref().unwrap_or(&h.topic),
        queue_id: route.queue_id,
        flag: h.flag,
        body: &[],
        properties: &[],
        sys_flag: h.sys_flag,
        born_timestamp: h.born_timestamp,
        born_host: conn.peer(),
        reconsume_times: h.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    };
    let mut msgs: Vec<MessageToStore<'_>> = entries
        .parts
        .iter()
        .map(|(body, p, flag)| MessageToStore {
            body,
            properties: &entries.props[p.clone()],
            flag: *flag,
            ..common.clone()
        })
        .collect();
    for (msg, half) in msgs.iter_mut().zip(halves) {
        half.apply(msg);
    }
    let started = std::time::Instant::now();
    let appended = if entries.batch {
        b.store.append(&msgs)
    } else {
        b.store.append_one(&msgs[0]).map(|a| vec![a])
    };
    let results = appended.inspect_err(|_| b.stats.on_put_failed())?;
    b.stats.on_put(results.len() as u64, started.elapsed());
    let bytes = results.iter().map(|r| r.wrote_bytes as u64).sum();
    b.stats
        .items
        .on_put(msgs[0].topic, results.len() as u64, bytes);
    if b.metrics.enabled() {
        let kind = crate::metrics::message_type(h.sys_flag, msgs[0].properties);
        let sizes = msgs
            .iter()
            .map(|m| (m.body.len() + m.properties.len()) as u64);
        b.metrics.on_stored(msgs[0].topic, kind, sizes);
    }
    if results.is_empty() {
        return Err(SendError::NothingStored.into());
    }
    Ok(results)
}

/// The response to a stored send, with the code and remark its wait ([`flush`]) ended with.
fn ack(
    b: &BrokerState,
    req: &RemotingCommand,
    stored: &Stored,
    code: ResponseCode,
    remark: String,
) -> RemotingCommand {
    let host = b.config.broker_addr;
    let results = &stored.results;
    let msg_id = rmq_common::join_offset_msg_ids(host, results.iter().map(|r| r.wrote_offset));
    let mut resp = response(req, code, remark).with_header(&SendMessageResponseHeader {
        msg_id,
        queue_id: stored.queue_id,
        queue_offset: results.first().map_or(0, |r| r.queue_offset),
        transaction_id: None,
        batch_uniq_id: None,
    });
    resp.ext_fields
        .insert(PropertyKey::MSG_REGION, b.config.region_id.clone());
    resp.ext_fields
        .insert(PropertyKey::TRACE_SWITCH, b.config.trace_on.to_string());
    resp
}

/// SYNC_FLUSH on a master that waits for no slave: the ack is made now and sent by whoever
/// ends the wait (the group-commit round, the deadline check, the shutdown), with its code
/// changed when the outcome is not SUCCESS. No task and no timer per send: under SYNC_FLUSH
/// they were a tenth of the broker's CPU per message (benches/RESULTS.md, issue 18,
/// twenty-second round).
fn answer_when_flushed(
    b: &BrokerState,
    conn: &Connection,
    req: &RemotingCommand,
    stored: &Stored,
    end_offset: i64,
) {
    let ack = ack(b, req, stored, ResponseCode::SUCCESS, String::new());
    let later = conn.reply_later(req);
    let timeout_ms = b.store.config().sync_flush_timeout;
    b.store.on_flushed(
        end_offset,
        Box::new(move |outcome| {
            later.send(Reply::Command(flushed_ack(ack, outcome, timeout_ms)));
        }),
    );
}

/// The ack made before the wait, as the wait's `outcome` leaves it: unchanged once the bytes
/// are durable; FLUSH_DISK_TIMEOUT with the header kept after `syncFlushTimeout` (the message
/// is stored, as in RocketMQ's `handlePutMessageResult`); the error's response when the sync
/// failed or the store shut down.
fn flushed_ack(
    mut ack: RemotingCommand,
    outcome: Result<FlushOutcome, StoreError>,
    timeout_ms: u32,
) -> RemotingCommand {
    match outcome {
        Ok(FlushOutcome::Flushed) => ack,
        Ok(FlushOutcome::Timeout) => {
            ack.code = ResponseCode::FLUSH_DISK_TIMEOUT.0;
            ack.remark = Some(flush_timeout_remark(timeout_ms));
            ack
        }
        // The ack answers the request (its opaque and serialize type): an answer to the ack
        // is one to the request.
        Err(e) => error_response(&ack, &e.into()),
    }
}

/// FLUSH_DISK_TIMEOUT's remark.
fn flush_timeout_remark(timeout_ms: u32) -> String {
    format!(
        "the message is stored but not flushed to disk within syncFlushTimeout ({timeout_ms} ms)"
    )
}

/// Whether a send may have to wait: under SYNC_FLUSH, or on a SYNC_MASTER.
fn needs_wait(b: &BrokerState) -> bool {
    b.store.config().flush_disk_type == FlushDiskType::SyncFlush
        || b.store.broker_role() == rmq_store::BrokerRole::SyncMaster
}

/// Wait for (SYNC_FLUSH, waiting send) or request (SYNC_FLUSH, `WAIT=false`) the flush of
/// everything up to `last`, and on a SYNC_MASTER (waiting send) for a slave to acknowledge it:
/// the response code and remark. As in RocketMQ's `handlePutMessageResult`, the message is
/// stored whatever the outcome: FLUSH_DISK_TIMEOUT (10), SLAVE_NOT_AVAILABLE (11) and
/// FLUSH_SLAVE_TIMEOUT (12) come with the response header filled, the replica's status
/// winning over the disk's.
async fn flush(
    b: &BrokerState,
    wait: bool,
    end_offset: i64,
) -> Result<(ResponseCode, String), StoreError> {
    let store_cfg = b.store.config();
    let timeout = Duration::from_millis(u64::from(store_cfg.sync_flush_timeout));
    let flush = b.store.flush_future(end_offset);
    let replica = if wait {
        b.store.replica_future(end_offset)
    } else {
        ReplicaWait::NotNeeded
    };
    let disk = async {
        if store_cfg.flush_disk_type != FlushDiskType::SyncFlush {
            return Ok((ResponseCode::SUCCESS, String::new()));
        }
        if !wait {
            tokio::spawn(async move {
                let _ = flush.await;
            });
            return Ok((ResponseCode::SUCCESS, String::new()));
        }
        match tokio::time::timeout(timeout, flush).await {
            Ok(flushed) => flushed.map(|()| (ResponseCode::SUCCESS, String::new())),
            Err(_) => Ok((
                ResponseCode::FLUSH_DISK_TIMEOUT,
                flush_timeout_remark(store_cfg.sync_flush_timeout),
            )),
        }
    };
    let slave = async {
        match replica {
            ReplicaWait::NotNeeded => None,
            ReplicaWait::SlaveNotAvailable => Some((
                ResponseCode::SLAVE_NOT_AVAILABLE,
                "the message is stored on the master, but no slave is connected or in sync \
                 (SYNC_MASTER)"
                    .to_owned(),
            )),
            ReplicaWait::Wait(f) => match tokio::time::timeout(timeout, f).await {
                Ok(true) => None,
                _ => Some((
                    ResponseCode::FLUSH_SLAVE_TIMEOUT,
                    format!(
                        "the message is stored on the master, but no slave acknowledged it \
                         within syncFlushTimeout ({} ms)",
                        store_cfg.sync_flush_timeout
                    ),
                )),
            },
        }
    };
    let (disk, slave) = tokio::join!(disk, slave);
    let disk = disk?;
    Ok(slave.unwrap_or(disk))
}

#[cfg(test)]
mod tests {
    use rmq_protocol::ExtFields;

    use super::*;

    #[test]
    fn the_ack_says_how_the_flush_wait_ended() {
        let mut req =
            RemotingCommand::new_request(RequestCode::SEND_MESSAGE_V2.0, ExtFields::new());
        req.opaque = 77;
        let mut ack = response(&req, ResponseCode::SUCCESS, "");
        ack.ext_fields
            .insert("msgId", "7F00000100002A9F0000000000000000");
        let durable = flushed_ack(ack.clone(), Ok(FlushOutcome::Flushed), 5000);
        assert_eq!(durable, ack);
        let late = flushed_ack(ack.clone(), Ok(FlushOutcome::Timeout), 5000);
        assert_eq!(
            (late.code, late.opaque),
            (ResponseCode::FLUSH_DISK_TIMEOUT.0, 77)
        );
        assert_eq!(
            late.ext_fields, ack.ext_fields,
            "the header stays: it is stored"
        );
        assert!(late.remark.unwrap().contains("syncFlushTimeout (5000 ms)"));
        let failed = flushed_ack(ack, Err(StoreError::FlushFailed("EIO".into())), 5000);
        assert_eq!(
            (failed.code, failed.opaque),
            (ResponseCode::SYSTEM_ERROR.0, 77)
        );
        assert!(
            failed.ext_fields.get("msgId").is_none(),
            "never a message id"
        );
        assert!(failed.remark.unwrap().contains("EIO"));
    }
}
