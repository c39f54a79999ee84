//! GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208), GET_BROKER_CONSUME_STATS (317) and
//! VIEW_BROKER_STATS_DATA (315, from [`crate::stats_history`]),
//! as RocketMQ's `AdminBrokerProcessor`: per-queue offsets of a topic, and consumer groups'
//! progress against them (what `mqadmin topicStatus`, `consumerProgress` and
//! `brokerConsumeStats` print).

use std::collections::BTreeSet;

use rmq_protocol::body::{
    BrokerStatsData, BrokerStatsItem, ConsumeStats, ConsumeStatsList, MessageQueue, OffsetWrapper,
    TopicOffset, TopicStatsTable,
};
use rmq_protocol::header::{
    GetConsumeStatsInBrokerHeader, GetConsumeStatsRequestHeader, GetTopicStatsInfoRequestHeader,
    ViewBrokerStatsDataRequestHeader,
};
use rmq_protocol::{RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, json_response, reply};
use crate::state::BrokerState;
use crate::stats_history::current;

/// 202: min and max offset of every queue of the topic, and the store time of its last
/// message (0 for an empty queue).
pub fn topic_stats(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetTopicStatsInfoRequestHeader);
    let Some(config) = b.topics.select(&h.topic) else {
        return answer(
            req,
            ResponseCode::TOPIC_NOT_EXIST,
            format!(
                "topic[{}] not exist on broker {}; create it first (UPDATE_AND_CREATE_TOPIC, \
                     mqadmin updateTopic), or send to it while autoCreateTopicEnable=true",
                h.topic, b.config.broker_name
            ),
        );
    };
    let mut table = TopicStatsTable::default();
    for queue_id in 0..config.write_queue_nums.max(config.read_queue_nums) {
        let min_offset = b.store.get_min_offset_in_queue(&h.topic, queue_id).max(0);
        let max_offset = b.store.get_max_offset_in_queue(&h.topic, queue_id).max(0);
        let last_update_timestamp = if max_offset > 0 {
            b.store
                .get_message_store_timestamp(&h.topic, queue_id, max_offset - 1)
                .unwrap_or(0)
        } else {
            0
        };
        table.offset_table.0.insert(
            MessageQueue::new(&h.topic, &b.config.broker_name, queue_id),
            TopicOffset {
                last_update_timestamp,
                max_offset,
                min_offset,
            },
        );
    }
    reply(req, json_response(req, &table))
}

/// The topics GET_CONSUME_STATS reports for `group` (RocketMQ's
/// `getTopicsForCollectingConsumeStats`): the one asked for, or else every topic the group has
/// committed offsets on (its retry topic included); while the group has live consumers, only
/// the topics they subscribe.
fn topics_for_consume_stats(b: &BrokerState, group: &str, topic: Option<&str>) -> BTreeSet<String> {
    let mut topics = match topic.filter(|t| !t.trim().is_empty()) {
        Some(t) => BTreeSet::from([t.to_owned()]),
        None => b.offsets.topics_of_group(group),
    };
    if b.clients.subscription_count(group) > 0 {
        topics.retain(|t| b.clients.find_subscription(group, t).is_ok());
    }
    topics
}

/// Each read queue of `topic` (when the broker has it) into `stats`: the queue's max offset,
/// `group`'s committed offset (0 when none) and the store time of the last message it
/// consumed. False when the topic does not exist here.
fn add_queue_offsets(b: &BrokerState, group: &str, topic: &str, stats: &mut ConsumeStats) -> bool {
    let Some(config) = b.topics.select(topic) else {
        return false;
    };
    for queue_id in 0..config.read_queue_nums {
        let broker_offset = b.store.get_max_offset_in_queue(topic, queue_id).max(0);
        let consumer_offset = b.offsets.query(group, topic, queue_id).max(0);
        let last_timestamp = if consumer_offset > 0 {
            b.store
                .get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
                .filter(|&ts| ts > 0)
                .unwrap_or(0)
        } else {
            0
        };
        stats.offset_table.0.insert(
            MessageQueue::new(topic, &b.config.broker_name, queue_id),
            OffsetWrapper {
                broker_offset,
                consumer_offset,
                last_timestamp,
            },
        );
    }
    true
}

/// 208: for each queue of each reported topic (see [`topics_for_consume_stats`]): the queue's
/// max offset, the group's committed offset (0 when none) and the store time of the last
/// message it consumed.
///
/// An unknown group or topic is not an error, as in RocketMQ: the answer is SUCCESS with an
/// empty table (admin tools merge the tables of every broker of a cluster, and a broker that
/// does not know the topic must not fail the whole query). The remark then says why it is empty.
pub fn consume_stats(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetConsumeStatsRequestHeader);
    let group = h.consumer_group.as_str();
    let mut stats = ConsumeStats::default();
    for topic in topics_for_consume_stats(b, group, h.topic.as_deref()) {
        if add_queue_offsets(b, group, &topic, &mut stats) {
            stats.consume_tps += group_get_tps(b, group, &topic);
        }
    }
    let mut resp = json_response(req, &stats);
    if resp.code == ResponseCode::SUCCESS.0 && stats.offset_table.0.is_empty() {
        resp.remark = Some(match &h.topic {
            Some(t) if b.topics.select(t).is_none() => format!(
                "topic[{t}] not exist on broker {}; check the topic name",
                b.config.broker_name
            ),
            Some(t) => format!(
                "consumer group [{group}] does not subscribe topic[{t}]; ask for one of the \
                 topics it subscribes, or for all of them (no topic)"
            ),
            None => format!(
                "consumer group [{group}] has no consumer offsets on broker {}; it has not \
                 consumed here yet (start its consumers, then ask again)",
                b.config.broker_name
            ),
        });
    }
    reply(req, resp)
}

/// 317: the consume progress of every subscription group on every topic it has offsets on
/// (RocketMQ's `fetchAllConsumeStatsInBroker`, `mqadmin brokerConsumeStats`); with `isOrder`
/// only ordered topics. Topics the group's live consumers no longer subscribe are left out,
/// as in 208.
pub fn broker_consume_stats(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetConsumeStatsInBrokerHeader);
    let mut body = ConsumeStatsList {
        broker_addr: b.config.broker_addr.to_string(),
        ..ConsumeStatsList::default()
    };
    for group in b.groups.wrapper().subscription_group_table.into_keys() {
        let mut per_topic = Vec::new();
        for topic in topics_for_consume_stats(b, &group, None) {
            if h.is_order && !b.topics.select(&topic).is_some_and(|c| c.order) {
                continue;
            }
            let mut stats = ConsumeStats::default();
            if add_queue_offsets(b, &group, &topic, &mut stats) {
                stats.consume_tps = group_get_tps(b, &group, &topic);
                body.total_diff += stats.total_diff();
                per_topic.push(stats);
            }
        }
        body.consume_stats_list
            .push(std::collections::BTreeMap::from([(group, per_topic)]));
    }
    reply(req, json_response(req, &body))
}

/// 315: one statistic of [`crate::stats_items`] (`TOPIC_PUT_NUMS`, key: topic;
/// `GROUP_GET_NUMS`, key: `topic@group`; ...) over the last minute, hour and day. SYSTEM_ERROR
/// "The stats <name> <key> not exist" for an item nothing was counted under, as RocketMQ
/// answers (`mqadmin statsAll` prints 0 for it).
pub fn view_stats(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    use crate::stats_items::STATS_NAMES;
    let h = decode_header!(req, ViewBrokerStatsDataRequestHeader);
    let Some(now_value) = current(b, &h.stats_name, &h.stats_key) else {
        let why = if STATS_NAMES.contains(&h.stats_name.as_str()) {
            "nothing was counted under it since the broker started (no send to the topic, or \
             no pull by the group from it)"
                .to_owned()
        } else {
            format!("rmq keeps {}", STATS_NAMES.join(", "))
        };
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!(
                "The stats <{}> <{}> not exist: {why}",
                h.stats_name, h.stats_key
            ),
        );
    };
    let now = rmq_common::time::now_millis();
    let item = |window_ms: i64| {
        let w = b
            .history
            .window(&h.stats_name, &h.stats_key, now_value, now, window_ms);
        BrokerStatsItem {
            sum: i64::try_from(w.sum).unwrap_or(i64::MAX),
            tps: w.tps,
            avgpt: w.avgpt,
        }
    };
    let body = BrokerStatsData {
        stats_minute: item(60_000),
        stats_hour: item(3_600_000),
        stats_day: item(86_400_000),
    };
    reply(req, json_response(req, &body))
}

/// `GROUP_GET_NUMS` of `topic@group` per second over the last minute (RocketMQ's
/// `tpsGroupGetNums`), 0 when the group pulled nothing from the topic.
fn group_get_tps(b: &BrokerState, group: &str, topic: &str) -> f64 {
    use crate::stats_items::{stats_key, GROUP_GET_NUMS};
    let key = stats_key(topic, group);
    current(b, GROUP_GET_NUMS, &key).map_or(0.0, |now_value| {
        let now = rmq_common::time::now_millis();
        b.history
            .window(GROUP_GET_NUMS, &key, now_value, now, 60_000)
            .tps
    })
}
