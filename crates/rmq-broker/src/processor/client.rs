//! HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
//! GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204),
//! QUERY_TOPIC_CONSUME_BY_WHO (300), GET_ALL_PRODUCER_INFO (328) and
//! QUERY_TOPICS_BY_CONSUMER (343), as RocketMQ's `ClientManageProcessor`,
//! `ConsumerManageProcessor` and `AdminBrokerProcessor`.

use std::time::Instant;

use rmq_protocol::body::{
    GetConsumerListByGroupResponseBody, GroupList, HeartbeatData, ProducerConnection, ProducerInfo,
    ProducerTableInfo, TopicList, PERM_READ, PERM_WRITE,
};
use rmq_protocol::header::{
    GetConsumerConnectionListRequestHeader, GetConsumerListByGroupRequestHeader,
    GetProducerConnectionListRequestHeader, QueryTopicConsumeByWhoRequestHeader,
    QueryTopicsByConsumerRequestHeader, UnregisterClientRequestHeader,
};
use rmq_protocol::{CommandHeader, RemotingCommand, RemotingJson, ResponseCode};
use rmq_remoting::{Connection, Reply};

use super::{answer, bad_header, json_response, reply};
use crate::consumer_manager::{ClientChannel, ConsumerRegistration};
use crate::state::BrokerState;
use crate::topic_config::RETRY_GROUP_TOPIC_PREFIX;

/// 34: register producers and consumers; create each consumer group's retry topic.
pub fn heartbeat(b: &BrokerState, conn: &Connection, req: &RemotingCommand) -> Option<Reply> {
    let body = req.body.as_deref().unwrap_or(b"{}");
    let data = match HeartbeatData::from_json_bytes(body) {
        Ok(d) => d,
        Err(e) => {
            return answer(req, ResponseCode::SYSTEM_ERROR, e.to_string());
        }
    };
    let channel = ClientChannel {
        conn: conn.clone(),
        client_id: data.client_id.clone(),
        language: req.language,
        version: req.version,
        last_update: Instant::now(),
    };
    for c in data.consumer_data_set {
        let mut notify = true;
        if let Some(g) = b.groups.find_or_create(&c.group_name) {
            notify = g.notify_consumer_ids_changed_enable;
            let sys_flag = i32::from(c.unit_mode);
            b.topics.create_in_send_back(
                &format!("{RETRY_GROUP_TOPIC_PREFIX}{}", c.group_name),
                g.retry_queue_nums,
                PERM_READ | PERM_WRITE,
                sys_flag,
            );
        }
        b.clients.register_consumer(
            &c.group_name,
            channel.clone(),
            ConsumerRegistration {
                consume_type: c.consume_type,
                message_model: c.message_model,
                consume_from_where: c.consume_from_where,
                subscriptions: c.subscription_data_set,
            },
            notify,
        );
    }
    for p in data.producer_data_set {
        b.producers.register(&p.group_name, channel.clone());
    }
    answer(req, ResponseCode::SUCCESS, "")
}

/// 35.
pub fn unregister(b: &BrokerState, conn: &Connection, req: &RemotingCommand) -> Option<Reply> {
    let h = match UnregisterClientRequestHeader::from_ext_fields(&req.ext_fields) {
        Ok(h) => h,
        Err(e) => return bad_header(req, e),
    };
    if let Some(g) = &h.producer_group {
        b.producers.unregister(g, conn);
    }
    if let Some(g) = &h.consumer_group {
        let notify = b
            .groups
            .select(g)
            .is_none_or(|c| c.notify_consumer_ids_changed_enable);
        b.clients.unregister_consumer(g, conn, notify);
    }
    answer(req, ResponseCode::SUCCESS, "")
}

/// 38.
pub fn consumer_list(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetConsumerListByGroupRequestHeader);
    match b.clients.consumer_ids(&h.consumer_group) {
        Some(ids) if !ids.is_empty() => {
            let body = GetConsumerListByGroupResponseBody {
                consumer_id_list: ids,
            };
            reply(req, json_response(req, &body))
        }
        _ => answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!("no consumer for this group, {}", h.consumer_group),
        ),
    }
}

/// 203: the group's connections (client id, address, language, version), subscriptions and
/// consume settings; CONSUMER_NOT_ONLINE when no consumer of the group is connected.
pub fn consumer_connections(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetConsumerConnectionListRequestHeader);
    match b.clients.consumer_connection(&h.consumer_group) {
        Some(body) => reply(req, json_response(req, &body)),
        None => answer(
            req,
            ResponseCode::CONSUMER_NOT_ONLINE,
            format!(
                "the consumer group[{}] not online: no consumer of it sends heartbeats to \
                     this broker; check the group name, or start its consumers",
                h.consumer_group
            ),
        ),
    }
}

/// 204: the producer group's connections (client id, address, language, version);
/// SYSTEM_ERROR "the producer group[G] not exist" when no producer of it is connected, as
/// RocketMQ answers.
pub fn producer_connections(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, GetProducerConnectionListRequestHeader);
    let channels = b.producers.channels(&h.producer_group);
    if channels.is_empty() {
        return answer(
            req,
            ResponseCode::SYSTEM_ERROR,
            format!(
                "the producer group[{}] not exist: no producer of it sends heartbeats to \
                     this broker",
                h.producer_group
            ),
        );
    }
    let body = ProducerConnection {
        connection_set: channels
            .iter()
            .map(ClientChannel::to_connection_info)
            .collect(),
    };
    reply(req, json_response(req, &body))
}

/// 300: the groups that consume `topic` here: those whose live consumers subscribe it and
/// those with committed offsets on it.
pub fn topic_consumed_by(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, QueryTopicConsumeByWhoRequestHeader);
    let mut body = GroupList::default();
    body.group_list
        .extend(b.clients.groups_subscribing(&h.topic));
    body.group_list.extend(b.offsets.groups_of_topic(&h.topic));
    reply(req, json_response(req, &body))
}

/// 343: the topics `group` consumes here: those it has committed offsets on (RocketMQ's
/// `whichTopicByConsumer`, which includes its retry topic once used) and those its online
/// consumers subscribe to; `brokerAddr` names this broker.
pub fn topics_by_consumer(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let h = decode_header!(req, QueryTopicsByConsumerRequestHeader);
    let mut topics = b.offsets.topics_of_group(&h.group);
    if let Some(conn) = b.clients.consumer_connection(&h.group) {
        topics.extend(conn.subscription_table.into_keys());
    }
    let body = TopicList {
        broker_addr: Some(b.config.broker_addr.to_string()),
        topic_list: topics,
    };
    reply(req, json_response(req, &body))
}

/// 328: every producer group's connections, with each client's last heartbeat
/// (`mqadmin producer`).
pub fn all_producers(b: &BrokerState, req: &RemotingCommand) -> Option<Reply> {
    let now_ms = rmq_common::time::now_millis();
    let now = Instant::now();
    let mut body = ProducerTableInfo::default();
    for (group, channels) in b.producers.all() {
        let infos = channels
            .iter()
            .map(|c| ProducerInfo {
                client_id: c.client_id.clone(),
                remote_ip: c.conn.peer().to_string(),
                language: c.language,
                version: c.version,
                last_update_timestamp: now_ms
                    - i64::try_from(now.saturating_duration_since(c.last_update).as_millis())
                        .unwrap_or(0),
            })
            .collect();
        body.data.insert(group, infos);
    }
    reply(req, json_response(req, &body))
}
