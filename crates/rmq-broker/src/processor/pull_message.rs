//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361, which 5.x `DefaultLitePullConsumer`s send
//! instead; RocketMQ serves both with one processor), as RocketMQ's `PullMessageProcessor`:
//! checks, the subscription (from the request or the heartbeat), `get_message` with the tag
//! filter, status → response code, the body as file regions (sent with `sendfile`), and long
//! polling through the [`PullRequestHoldService`](crate::long_polling::PullRequestHoldService).
//!
//! `suggestWhichBrokerId` tells the consumer where to pull next, as RocketMQ 4.9.7 does: with
//! `slaveReadEnable`, the group's `whichBrokerWhenConsumeSlowly` when the data read is cold
//! (beyond `accessMessageInMemoryMaxRatio` of RAM from the CommitLog tail), else the group's
//! `brokerId`; without it, the master. One deliberate difference: a slave without
//! `slaveReadEnable` serves the pull (RocketMQ answers PULL_RETRY_IMMEDIATELY with no
//! messages) while still suggesting the master. A consumer only comes to a slave that did not
//! suggest itself when its route has no master for the group, i.e. the master is down; serving
//! it then is what keeps consumption going through a master's outage, and as soon as the
//! master is back in the route the suggestion sends the consumer back to it. Like RocketMQ, a
//! slave keeps the consumer's offset where it is (never PULL_OFFSET_MOVED: its queues may lag
//! the master's) and does not store the offset a pull carries (consumers commit to a slave
//! with UPDATE_CONSUMER_OFFSET when the master is gone).

use std::sync::Arc;
use std::time::Duration;

use rmq_protocol::body::{MessageModel, TopicConfig, MASTER_ID, PERM_READ};
use rmq_protocol::header::{pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::{FileRegion, Reply};
use rmq_store::{BrokerRole, GetMessageStatus as S};

use super::{bad_header, response, StoreRegion};
use crate::long_polling::TagFilter;
use crate::state::BrokerState;

enum Outcome {
    Reply(Reply),
    Hold { filter: Arc<TagFilter>, millis: u64 },
}

/// Serve a pull; a held pull's future waits here until it is answered.
pub async fn process(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = match PullMessageRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    let mut allow_suspend = true;
    loop {
        match pull_once(b, req, &h, allow_suspend) {
            Outcome::Reply(r) => return Some(r),
            Outcome::Hold { filter, millis } => {
                let rx = b.hold.hold(&h.topic, h.queue_id, h.queue_offset, filter);
                // A message may have been dispatched between the read and the hold.
                if b.store.get_max_offset_in_queue(&h.topic, h.queue_id) <= h.queue_offset {
                    let _ = tokio::time::timeout(Duration::from_millis(millis), rx).await;
                }
                allow_suspend = false;
            }
        }
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "PullMessageProcessor.processRequest's checks in Java's order, read top to bottom"
)]
fn pull_once(
    b: &BrokerState,
    req: &RemotingCommand,
    h: &PullMessageRequestHeader,
    allow_suspend: bool,
) -> Outcome {
    let fail = |code: ResponseCode, remark: String| {
        Outcome::Reply(Reply::Command(response(req, code, remark)))
    };
    if b.broker_permission() & PERM_READ == 0 {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!(
                "the broker[{}] pulling message is forbidden",
                b.config.broker_addr
            ),
        );
    }
    let Some(group) = b.groups.find_or_create(&h.consumer_group) else {
        return fail(
            ResponseCode::SUBSCRIPTION_GROUP_NOT_EXIST,
            format!("subscription group [{}] does not exist", h.consumer_group),
        );
    };
    if !group.consume_enable {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("subscription group no permission, {}", h.consumer_group),
        );
    }
    let has_suspend = h.sys_flag & pull_sys_flag::FLAG_SUSPEND != 0;
    let has_commit = h.sys_flag & pull_sys_flag::FLAG_COMMIT_OFFSET != 0;
    let has_sub = h.sys_flag & pull_sys_flag::FLAG_SUBSCRIPTION != 0;
    let Some(topic) = b
        .topics
        .select(&h.topic)
        .or_else(|| stored_topic_on_slave(b, &h.topic))
    else {
        return fail(
            ResponseCode::TOPIC_NOT_EXIST,
            format!("topic[{}] not exist, apply first please!", h.topic),
        );
    };
    if topic.perm & PERM_READ == 0 {
        return fail(
            ResponseCode::NO_PERMISSION,
            format!("the topic[{}] pulling message is forbidden", h.topic),
        );
    }
    if h.queue_id < 0 || h.queue_id >= topic.read_queue_nums {
        return fail(
            ResponseCode::SYSTEM_ERROR,
            format!(
                "queueId[{}] is illegal, topic:[{}] topicConfig.readQueueNums:[{}] consumer:[{}]",
                h.queue_id, h.topic, topic.read_queue_nums, h.consumer_group
            ),
        );
    }
    let filter = if has_sub {
        let expr_type = h.expression_type.as_deref().unwrap_or("TAG");
        if expr_type != "TAG" {
            return fail(
                ResponseCode::SYSTEM_ERROR,
                "The broker does not support consumer to filter message by SQL92".into(),
            );
        }
        TagFilter::parse(h.subscription.as_deref().unwrap_or("*"))
    } else {
        match b.clients.find_subscription(&h.consumer_group, &h.topic) {
            Err(false) => {
                return fail(
                    ResponseCode::SUBSCRIPTION_NOT_EXIST,
                    format!(
                        "the consumer's group info not exist, group {}",
                        h.consumer_group
                    ),
                )
            }
            Err(true) => {
                return fail(
                    ResponseCode::SUBSCRIPTION_NOT_EXIST,
                    format!("the consumer's subscription not exist, topic {}", h.topic),
                )
            }
            Ok((_, MessageModel::Broadcasting)) if !group.consume_broadcast_enable => {
                return fail(
                    ResponseCode::NO_PERMISSION,
                    format!(
                        "the consumer group[{}] can not consume by broadcast way",
                        h.consumer_group
                    ),
                )
            }
            Ok((sub, _)) if sub.sub_version < h.sub_version => {
                return fail(
                    ResponseCode::SUBSCRIPTION_NOT_LATEST,
                    "the consumer's subscription not latest".into(),
                )
            }
            Ok((sub, _)) => TagFilter::from_subscription(&sub),
        }
    };
    let max_nums = usize::try_from(h.max_msg_nums.max(1)).unwrap_or(1);
    let f = |code: i64| filter.matches(code);
    let started = std::time::Instant::now();
    let result = b.store.get_message(
        &h.topic,
        h.queue_id,
        h.queue_offset,
        max_nums,
        (!filter.all).then_some(&f as &dyn Fn(i64) -> bool),
    );
    b.stats
        .on_get(result.messages.len() as u64, started.elapsed());
    if !result.messages.is_empty() || result.status == S::Found {
        // `topic@group` built once for the statistic tables and the exporter's pull offsets.
        crate::stats_items::with_stats_key(&h.topic, &h.consumer_group, |key| {
            let (msgs, bytes) = (result.messages.len(), result.buffer_total_size);
            b.stats.items.on_get(key, msgs as u64, bytes as u64);
            if result.status == S::Found {
                b.metrics
                    .on_pulled(key, h.queue_id, result.next_begin_offset);
            }
        });
    }
    let slave = b.store.broker_role() == BrokerRole::Slave;
    let mut code = match result.status {
        S::Found => ResponseCode::SUCCESS,
        S::MessageWasRemoving | S::NoMatchedMessage => ResponseCode::PULL_RETRY_IMMEDIATELY,
        S::NoMatchedLogicQueue | S::NoMessageInQueue => {
            if h.queue_offset == 0 {
                ResponseCode::PULL_NOT_FOUND
            } else {
                ResponseCode::PULL_OFFSET_MOVED
            }
        }
        S::OffsetFoundNull | S::OffsetOverflowOne => ResponseCode::PULL_NOT_FOUND,
        S::OffsetOverflowBadly | S::OffsetTooSmall => ResponseCode::PULL_OFFSET_MOVED,
    };
    if code == ResponseCode::PULL_OFFSET_MOVED {
        // Debug, not warn: a consumer that keeps pulling a moved offset would log on every
        // pull (the hot path); its client logs the correction it makes.
        log::debug!(
            "PULL_OFFSET_MOVED: group {} topic {} queue {} requested {} \
             ({}), next {}, min {}, max {}",
            h.consumer_group,
            h.topic,
            h.queue_id,
            h.queue_offset,
            result.status.as_str(),
            result.next_begin_offset,
            result.min_offset,
            result.max_offset
        );
    }
    let mut suggest_which_broker_id = if !b.config.slave_read_enable {
        MASTER_ID
    } else if result.suggest_pulling_from_slave {
        group.which_broker_when_consume_slowly
    } else {
        group.broker_id
    };
    if slave && code == ResponseCode::PULL_OFFSET_MOVED {
        // A slave's queues may lag its master's: ask again rather than move the offset.
        code = ResponseCode::PULL_RETRY_IMMEDIATELY;
        suggest_which_broker_id = group.broker_id;
    }
    if allow_suspend && has_commit && !slave {
        b.offsets
            .commit(&h.consumer_group, &h.topic, h.queue_id, h.commit_offset);
    }
    if code == ResponseCode::PULL_NOT_FOUND && allow_suspend && has_suspend {
        let millis = if b.config.long_polling_enable {
            u64::try_from(h.suspend_timeout_millis).unwrap_or(0)
        } else {
            b.config.short_polling_time_mills
        };
        return Outcome::Hold {
            filter: Arc::new(filter),
            millis,
        };
    }
    let cmd = response(req, code, result.status.as_str()).with_header(&PullMessageResponseHeader {
        suggest_which_broker_id,
        next_begin_offset: result.next_begin_offset,
        min_offset: result.min_offset,
        max_offset: result.max_offset,
    });
    if code == ResponseCode::SUCCESS {
        let regions: Vec<Box<dyn FileRegion>> = result
            .into_runs()
            .into_iter()
            .map(|m| Box::new(StoreRegion(m)) as Box<dyn FileRegion>)
            .collect();
        return Outcome::Reply(Reply::WithFileRegions {
            command: cmd,
            regions,
        });
    }
    Outcome::Reply(Reply::Command(cmd))
}

/// A slave serves what its store holds even before its first copy of the master's topic
/// table (every 10 s): a master that died in its first seconds would otherwise leave the
/// messages its slave acked unreadable until it returned. A topic the slave's ConsumeQueues
/// know is read with as many queues as they have (RocketMQ answers TOPIC_NOT_EXIST here).
fn stored_topic_on_slave(b: &BrokerState, name: &str) -> Option<TopicConfig> {
    if b.store.broker_role() != BrokerRole::Slave {
        return None;
    }
    let (_, queues) = b
        .store
        .topic_queues()
        .into_iter()
        .find(|(t, _)| t == name)?;
    let n = queues.into_iter().max()? + 1;
    Some(TopicConfig {
        read_queue_nums: n,
        write_queue_nums: n,
        perm: PERM_READ,
        ..TopicConfig::new(name)
    })
}
