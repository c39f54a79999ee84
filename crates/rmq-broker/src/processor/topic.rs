//! UPDATE_AND_CREATE_TOPIC (17), GET_ALL_TOPIC_CONFIG (21), DELETE_TOPIC_IN_BROKER (215),
//! GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305), GET_TOPIC_CONFIG (351).

use rmq_protocol::body::{TopicConfig, TopicFilterType, TopicList, MAX_QUEUE_NUMS};
use rmq_protocol::header::{
    CreateTopicRequestHeader, DeleteTopicRequestHeader, GetTopicConfigRequestHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, ResponseCode};
use rmq_remoting::Reply;

use super::{answer, bad_header, json_response, reply};
use crate::state::BrokerState;
use crate::topic_config::{validate_topic, SYSTEM_TOPICS};

/// 17.
pub fn create(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = match CreateTopicRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    if let Err(reason) = validate_topic(&h.topic) {
        return answer(req, ResponseCode::SYSTEM_ERROR, reason);
    }
    if is_system_topic(&h.topic) {
        return refuse_system_topic(req, &h.topic);
    }
    if h.topic == b.config.broker_cluster_name {
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("The topic[{}] is conflict with the cluster name.", h.topic),
        );
    }
    for (key, n) in [
        ("readQueueNums", h.read_queue_nums),
        ("writeQueueNums", h.write_queue_nums),
    ] {
        if !(0..=MAX_QUEUE_NUMS).contains(&n) {
            return answer(
                req,
                ResponseCode::SYSTEM_ERROR,
                format!("{key} = {n} is out of range: a topic has 0 to {MAX_QUEUE_NUMS} queues per broker"),
            );
        }
    }
    let filter = if h.topic_filter_type == "MULTI_TAG" {
        TopicFilterType::MultiTag
    } else {
        TopicFilterType::SingleTag
    };
    b.topics.update(TopicConfig {
        read_queue_nums: h.read_queue_nums,
        write_queue_nums: h.write_queue_nums,
        perm: h.perm,
        topic_filter_type: filter,
        topic_sys_flag: h.topic_sys_flag.unwrap_or(0),
        order: h.order,
        ..TopicConfig::new(h.topic)
    });
    answer(req, ResponseCode::SUCCESS, "")
}

/// 21: the whole table with its data version.
pub fn all(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    reply(req, json_response(req, &b.topics.wrapper()))
}

/// 351: one topic's config. 5.x answers `TopicConfigAndQueueMapping`, which is the
/// `TopicConfig` plus a `mappingDetail` that only static topics have; rmq has none, and
/// fastjson leaves the null out, so the body is exactly the `TopicConfig` JSON.
/// TOPIC_NOT_EXIST (with RocketMQ's remark) when this broker has no such topic.
pub fn get(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetTopicConfigRequestHeader);
    match b.topics.select(&h.topic) {
        Some(config) => reply(req, json_response(req, &config)),
        None => answer(
            req,
            ResponseCode::TOPIC_NOT_EXIST,
            format!("No topic in this broker. topic: {}", h.topic),
        ),
    }
}

/// 215: forget the topic and its consumer offsets (its files stay until retention).
pub fn delete(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = match DeleteTopicRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    if is_system_topic(&h.topic) {
        return refuse_system_topic(req, &h.topic);
    }
    b.topics.delete(&h.topic);
    b.offsets.remove_topic(&h.topic);
    answer(req, ResponseCode::SUCCESS, "")
}

/// System topics cannot be created or deleted by clients (RocketMQ's `TopicValidator`).
fn is_system_topic(topic: &str) -> bool {
    SYSTEM_TOPICS.contains(&topic)
}

/// The answer to creating or deleting a system topic.
fn refuse_system_topic(req: &RemotingCommand, topic: &str) -> Option<Reply> {
    answer(
        req,
        ResponseCode::SYSTEM_ERROR,
        format!("The topic[{topic}] is conflict with system topic."),
    )
}

/// 305: the system topics (RocketMQ's `TopicValidator.getSystemTopicSet`), with this
/// broker's cluster-name and broker-name topics when `clusterTopicEnable` /
/// `brokerTopicEnable` create them (mqadmin `exportMetadata` leaves these out).
pub fn system_topics(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let mut body = TopicList::default();
    body.topic_list
        .extend(SYSTEM_TOPICS.iter().map(|t| (*t).to_owned()));
    if b.config.cluster_topic_enable {
        body.topic_list.insert(b.config.broker_cluster_name.clone());
    }
    if b.config.broker_topic_enable {
        body.topic_list.insert(b.config.broker_name.clone());
    }
    reply(req, json_response(req, &body))
}
