//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320): check the
//! message (`msgCheck`), find or auto-create the topic, append to the store, and under
//! SYNC_FLUSH wait (asynchronously, bounded by `syncFlushTimeout`) until it is durable.
//!
//! A single message sent to `%RETRY%<group>` that has been consumed `maxReconsumeTimes` times
//! already goes to `%DLQ%<group>` instead (RocketMQ's `handleRetryAndDLQ`): Java's orderly
//! consumers and its concurrent consumers' fallback hand messages back this way, not with
//! CONSUMER_SEND_MSG_BACK. Batches to a retry topic are refused, as in RocketMQ.

use std::borrow::Cow;
use std::time::Duration;

use rmq_common::properties::{copy_properties_except, edit_properties, find_property, PropertyKey};
use rmq_protocol::body::{TopicConfig, PERM_READ, PERM_WRITE};
use rmq_protocol::header::{SendMessageRequestHeader, SendMessageResponseHeader};
use rmq_protocol::message_decoder::decode_batch_entries;
use rmq_protocol::{RemotingCommand, RequestCode, ResponseCode};
use rmq_remoting::{Connection, Reply};
use rmq_store::{FlushDiskType, MessageToStore};

use super::send_msg_back::{dead_letter_topic, find_group, max_reconsume_times};
use super::{reply, response};
use crate::error::store_error_to_response;
use crate::state::BrokerState;
use crate::topic_config::{
    validate_topic, AUTO_CREATE_TOPIC_KEY_TOPIC, NOT_ALLOWED_SEND_TOPICS, RETRY_GROUP_TOPIC_PREFIX,
};

/// Serve a send.
pub async fn process(b: &BrokerState, conn: &Connection, req: &RemotingCommand) -> Option<Reply> {
    let cmd = match send(b, conn, req).await {
        Ok(c) | Err(c) => c,
    };
    reply(req, cmd)
}

/// `msgCheck`: the topic config to write to, or the error response.
fn msg_check(
    b: &BrokerState,
    req: &RemotingCommand,
    h: &SendMessageRequestHeader,
) -> Result<TopicConfig, RemotingCommand> {
    let fail = |code, remark: String| Err(response(req, code, remark));
    if b.broker_permission() & PERM_WRITE == 0 {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!(
                "the broker[{}] sending message is forbidden",
                b.config.broker_addr
            ),
        );
    }
    if let Err(reason) = validate_topic(&h.topic) {
        return fail(ResponseCode::SYSTEM_ERROR, reason);
    }
    // TopicConfigManager.isTopicCanSendMessage, then TopicValidator.isNotAllowedSendTopic.
    if h.topic == AUTO_CREATE_TOPIC_KEY_TOPIC {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "the topic[{}] is conflict with system reserved words.",
                h.topic
            ),
        );
    }
    if NOT_ALLOWED_SEND_TOPICS.contains(&h.topic.as_str()) {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("Sending message to topic[{}] is forbidden.", h.topic),
        );
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
        return fail(
            ResponseCode::TOPIC_NOT_EXIST,
            format!(
                "topic[{}] not exist, apply first please! (autoCreateTopicEnable={}, default \
                 topic {})",
                h.topic, b.config.auto_create_topic_enable, h.default_topic
            ),
        );
    };
    if h.queue_id >= config.write_queue_nums {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "request queueId[{}] is illegal, topic {} has {} write queues",
                h.queue_id, h.topic, config.write_queue_nums
            ),
        );
    }
    if config.perm & PERM_WRITE == 0 {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the topic[{}] sending message is forbidden", h.topic),
        );
    }
    Ok(config)
}

/// `handleRetryAndDLQ` for a message sent to `%RETRY%<group>`: `Some(dlq topic)` when it has
/// been consumed `maxReconsumeTimes` times and belongs in the group's dead-letter topic.
fn dead_letter(
    b: &BrokerState,
    req: &RemotingCommand,
    h: &SendMessageRequestHeader,
) -> Result<Option<String>, RemotingCommand> {
    let Some(group_name) = h.topic.strip_prefix(RETRY_GROUP_TOPIC_PREFIX) else {
        return Ok(None);
    };
    let group = find_group(b, req, group_name)?;
    let max = max_reconsume_times(req, h.max_reconsume_times, &group);
    Ok((h.reconsume_times.unwrap_or(0) >= max).then(|| dead_letter_topic(b, group_name)))
}

async fn send(
    b: &BrokerState,
    conn: &Connection,
    req: &RemotingCommand,
) -> Result<RemotingCommand, RemotingCommand> {
    let h = SendMessageRequestHeader::from_request(req.code, &req.ext_fields)
        .map_err(|e| response(req, ResponseCode::SYSTEM_ERROR, e.to_string()))?;
    let batch = req.code == RequestCode::SEND_BATCH_MESSAGE.0;
    if batch && h.topic.starts_with(RETRY_GROUP_TOPIC_PREFIX) {
        return Err(response(
            req,
            ResponseCode::MESSAGE_ILLEGAL,
            format!(
                "batch request does not support retry group {} (send retries one at a time)",
                h.topic
            ),
        ));
    }
    let config = msg_check(b, req, &h)?;
    let dlq = dead_letter(b, req, &h)?;
    let queue_id = if dlq.is_some() {
        0 // the DLQ has one queue (DLQ_NUMS_PER_GROUP)
    } else if h.queue_id < 0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
        let r = (rmq_common::time::now_millis().unsigned_abs()
            % config.write_queue_nums.max(1).unsigned_abs() as u64) as i32;
        r
    } else {
        h.queue_id
    };
    let illegal = |remark: String| response(req, ResponseCode::MESSAGE_ILLEGAL, remark);
    let max_size = b.store.config().max_message_size;
    let body = req.body.clone().unwrap_or_default();
    let mut header_props = Cow::Borrowed(h.properties.as_deref().unwrap_or("").as_bytes());
    if dlq.is_some() {
        // Dead letters are stored as they are: no delay, whatever the message asked for.
        header_props = Cow::Owned(edit_properties(
            &header_props,
            &[PropertyKey::DELAY_TIME_LEVEL],
            &[],
        ));
    }
    let header_props = &*header_props;
    let cluster = format!("CLUSTER\u{1}{}\u{2}", b.config.broker_cluster_name);
    let common = MessageToStore {
        topic: dlq.as_deref().unwrap_or(&h.topic),
        queue_id,
        flag: h.flag,
        body: &[],
        properties: &[],
        sys_flag: h.sys_flag,
        born_timestamp: h.born_timestamp,
        born_host: conn.peer(),
        reconsume_times: h.reconsume_times.unwrap_or(0),
        prepared_transaction_offset: 0,
    };
    let cluster = cluster.as_bytes();
    // Each message's properties (its own, then the header's, then the cluster) are laid out
    // one after another in `props`: one buffer for a whole batch. `parts` holds (body,
    // range in `props`, flag) per message.
    let mut props = Vec::new();
    // Close the message whose properties start at `start` with `extra`, each after a separator.
    let finish = |props: &mut Vec<u8>, start: usize, extra: &[&[u8]]| {
        for e in extra.iter().filter(|e| !e.is_empty()) {
            if props.len() > start && !props.ends_with(&[2]) {
                props.push(2);
            }
            props.extend_from_slice(e);
        }
        start..props.len()
    };
    let parts: Vec<(bytes::Bytes, std::ops::Range<usize>, i32)> = if batch {
        let entries = decode_batch_entries(&body)
            .map_err(|e| illegal(format!("the batch body does not decode: {e}")))?;
        if entries.is_empty() {
            return Err(illegal("the batch is empty".into()));
        }
        entries
            .into_iter()
            .map(|m| {
                let start = props.len();
                props.extend_from_slice(&m.properties);
                let range = finish(&mut props, start, &[header_props, cluster]);
                (m.body, range, m.flag)
            })
            .collect()
    } else {
        // RocketMQ stores a single message without its WAIT property (read below; 9 bytes a
        // message); a batch keeps it, and so does a send-back (CONSUMER_SEND_MSG_BACK).
        if find_property(header_props, PropertyKey::WAIT_STORE_MSG_OK).is_some() {
            let wait = PropertyKey::WAIT_STORE_MSG_OK.as_bytes();
            copy_properties_except(header_props, |name| name == wait, &mut props);
        } else {
            props.extend_from_slice(header_props);
        }
        vec![(body, finish(&mut props, 0, &[cluster]), h.flag)]
    };
    for (body, _, _) in &parts {
        if body.len() > max_size {
            return Err(illegal(format!(
                "the message body size over max value, MAX: {max_size} (body is {} bytes)",
                body.len()
            )));
        }
    }
    // Transactions: a half message is parked in the half topic (crate::transaction); so is
    // every message of a batch flagged as a transaction (rmq's extension).
    let halves = if batch {
        let entry_props = parts.iter().map(|(_, p, _)| &props[p.clone()]);
        crate::transaction::halves_for_batch(b, req, &h, queue_id, entry_props)?
    } else {
        crate::transaction::half_for_send(b, req, &h, queue_id, &props[parts[0].1.clone()])?
            .into_iter()
            .collect()
    };
    let mut msgs: Vec<MessageToStore<'_>> = parts
        .iter()
        .map(|(body, p, flag)| MessageToStore {
            body,
            properties: &props[p.clone()],
            flag: *flag,
            ..common.clone()
        })
        .collect();
    for (msg, half) in msgs.iter_mut().zip(&halves) {
        half.apply(msg);
    }
    let started = std::time::Instant::now();
    let appended = if batch {
        b.store.append(&msgs)
    } else {
        b.store.append_one(&msgs[0]).map(|a| vec![a])
    };
    let results = appended.map_err(|e| {
        b.stats.on_put_failed();
        let (code, remark) = store_error_to_response(&e);
        response(req, code, remark)
    })?;
    b.stats.on_put(results.len() as u64, started.elapsed());
    let Some(last) = results.last() else {
        return Err(illegal("nothing to store".into()));
    };
    let wait = find_property(header_props, PropertyKey::WAIT_STORE_MSG_OK) != Some(b"false");
    let store_cfg = b.store.config();
    let mut code = ResponseCode::SUCCESS;
    let mut remark = String::new();
    if store_cfg.flush_disk_type == FlushDiskType::SyncFlush && wait {
        let timeout = Duration::from_millis(u64::from(store_cfg.sync_flush_timeout));
        match tokio::time::timeout(timeout, b.store.flush_future(last.end_offset())).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let (c, r) = store_error_to_response(&e);
                return Err(response(req, c, r));
            }
            Err(_) => {
                code = ResponseCode::FLUSH_DISK_TIMEOUT;
                remark = format!(
                    "the message is stored but not flushed to disk within syncFlushTimeout \
                     ({} ms)",
                    store_cfg.sync_flush_timeout
                );
            }
        }
    } else {
        let f = b.store.flush_future(last.end_offset());
        if store_cfg.flush_disk_type == FlushDiskType::SyncFlush {
            tokio::spawn(async move {
                let _ = f.await;
            });
        }
    }
    let host = b.config.broker_addr;
    let mut msg_id = String::with_capacity(33 * results.len());
    for r in &results {
        if !msg_id.is_empty() {
            msg_id.push(',');
        }
        rmq_common::push_offset_msg_id(&mut msg_id, host, r.wrote_offset);
    }
    let mut resp = response(req, code, remark).with_header(&SendMessageResponseHeader {
        msg_id,
        queue_id,
        queue_offset: results[0].queue_offset,
        transaction_id: None,
        batch_uniq_id: None,
    });
    resp.ext_fields
        .insert("MSG_REGION", b.config.region_id.clone());
    resp.ext_fields
        .insert("TRACE_ON", b.config.trace_on.to_string());
    Ok(resp)
}
