//! The calls consumers make (`MQClientAPIImpl`'s pull and offset side): PULL_MESSAGE with
//! long polling, consumer offsets, queue offsets, the group's consumer ids, queue locks.
//! What to pull, when and from which queue is decided above this (rebalance and flow
//! control live in Python); this module only moves the bytes and decodes them.

use std::collections::BTreeSet;
use std::time::Duration;

use bytes::Bytes;
use rmq_common::{decompress_body, sys_flag, PropertyKey};
use rmq_protocol::body::{
    GetConsumerListByGroupResponseBody, LockBatchRequestBody, LockBatchResponseBody, MessageQueue,
    SubscriptionData, UnlockBatchRequestBody, EXPRESSION_TYPE_TAG, MASTER_ID, SUB_ALL,
};
use rmq_protocol::header::client::GetConsumerListByGroupRequestHeader;
use rmq_protocol::header::offset::{
    GetMaxOffsetRequestHeader, GetMaxOffsetResponseHeader, GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader, QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader, SearchOffsetRequestHeader, SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
};
use rmq_protocol::header::pull::{
    pull_sys_flag, PullMessageRequestHeader, PullMessageResponseHeader,
};
use rmq_protocol::header::send::ConsumerSendMsgBackRequestHeader;
use rmq_protocol::message_decoder::{self, MessageExt};
use rmq_protocol::{
    CommandHeader, ExtFields, RemotingCommand, RemotingJson, RequestCode, ResponseCode,
};

use crate::error::{ClientError, Result};
use crate::instance::{expect_success, response_error, ClientInstance, FoundBroker};

/// `FilterAPI.buildSubscriptionData`: `"*"` (or empty) takes everything, otherwise
/// `"tagA || tagB"` lists the tags, hashed for the broker's ConsumeQueue filter.
#[must_use]
pub fn build_subscription(topic: &str, expression: &str) -> SubscriptionData {
    let expression = expression.trim();
    let mut data = SubscriptionData {
        topic: topic.to_owned(),
        sub_string: SUB_ALL.to_owned(),
        expression_type: EXPRESSION_TYPE_TAG.to_owned(),
        sub_version: rmq_common::time::now_millis(),
        ..SubscriptionData::default()
    };
    if expression.is_empty() || expression == SUB_ALL {
        return data;
    }
    expression.clone_into(&mut data.sub_string);
    for tag in expression
        .split("||")
        .map(str::trim)
        .filter(|t| !t.is_empty())
    {
        if !data.tags_set.iter().any(|t| t == tag) {
            data.tags_set.push(tag.to_owned());
            data.code_set.push(rmq_common::java_string_hash(tag));
        }
    }
    data
}

/// How old a route may be for a slave to stand in for its master: a consumer on a slave
/// because the route has no master asks the nameservers again after this long.
pub const MASTER_RECHECK: Duration = Duration::from_secs(5);

/// Prefix of a consumer group's retry topic (`MixAll.RETRY_GROUP_TOPIC_PREFIX`).
pub use rmq_common::topic::RETRY_GROUP_TOPIC_PREFIX;

/// A failed message to hand back to its broker.
#[derive(Debug, Clone)]
pub struct SendBack {
    /// Consumer group.
    pub group: String,
    /// Broker the message was pulled from.
    pub broker_name: String,
    /// Its store host (`ip:port`), used when the broker name has no known address.
    pub store_host: String,
    /// Its CommitLog offset.
    pub commit_log_offset: i64,
    /// The message's original id (`ORIGIN_MESSAGE_ID`, or its own id).
    pub origin_msg_id: String,
    /// The topic it was sent to.
    pub origin_topic: String,
    /// 0: let the broker choose; negative: to the DLQ now.
    pub delay_level: i32,
    /// Redeliveries before the DLQ.
    pub max_reconsume_times: i32,
}

/// Outcome of a pull (`PullStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullStatus {
    /// Messages came back.
    Found,
    /// Nothing new at this offset.
    NoNewMsg,
    /// Messages were there but none matched the subscription.
    NoMatchedMsg,
    /// The offset is outside the queue; restart from `next_begin_offset`.
    OffsetIllegal,
}

impl PullStatus {
    /// RocketMQ's name.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Found => "FOUND",
            Self::NoNewMsg => "NO_NEW_MSG",
            Self::NoMatchedMsg => "NO_MATCHED_MSG",
            Self::OffsetIllegal => "OFFSET_ILLEGAL",
        }
    }
}

/// One PULL_MESSAGE.
#[derive(Debug, Clone)]
pub struct PullRequest {
    /// Consumer group.
    pub group: String,
    /// The queue.
    pub queue: MessageQueue,
    /// First offset wanted.
    pub offset: i64,
    /// Most messages to return (`pullBatchSize`).
    pub max_nums: i32,
    /// The subscription (tags are hashed on the broker and checked exactly here).
    pub subscription: SubscriptionData,
    /// Commit this offset on the way (clustering push consumers), if any.
    pub commit_offset: Option<i64>,
    /// How long the broker may hold the request when nothing is there (0: answer at once).
    pub suspend: Duration,
    /// Deadline of the request (must exceed `suspend`).
    pub timeout: Duration,
    /// A fixed broker id to pull from (0 is the master); `None` follows the broker's last
    /// `suggestWhichBrokerId` for the group's queue, as RocketMQ's consumers do.
    pub broker_id: Option<i64>,
}

/// What a pull returns.
#[derive(Debug, Clone)]
pub struct PullResult {
    /// Outcome.
    pub status: PullStatus,
    /// Offset to pull from next.
    pub next_begin_offset: i64,
    /// The queue's min offset.
    pub min_offset: i64,
    /// The queue's max offset.
    pub max_offset: i64,
    /// Which broker id to pull from next.
    pub suggest_which_broker_id: i64,
    /// The messages that passed the exact tag check, bodies decompressed.
    pub messages: Vec<MessageExt>,
}

/// A pull's answer before its messages are decoded ([`ClientInstance::pull_raw`]), for a
/// reader that reads the records in place (the Spark reader's columns) rather than as one
/// [`MessageExt`] each; [`ClientInstance::process_pulled`] gives any of them the treatment
/// [`ClientInstance::pull`] gives all.
#[derive(Debug, Clone)]
pub struct RawPull {
    /// Status and offsets; `messages` is empty (the records are in `body`).
    pub result: PullResult,
    /// The records back to back, as the broker sent them (empty unless FOUND).
    pub body: Bytes,
    /// The broker pulled from (for error messages).
    pub addr: String,
}

impl ClientInstance {
    /// The address to pull `broker_name` from (`findBrokerAddressInSubscribe`), refreshing
    /// `topic`'s route if unknown. Standing in for a master missing from the route (down), a
    /// slave is picked only from a route at most [`MASTER_RECHECK`] old: consumers are back on
    /// the master within seconds of its return, not at the next `pollNameServerInterval`.
    async fn subscribe_addr(
        &self,
        topic: &str,
        broker_name: &str,
        broker_id: i64,
    ) -> Result<FoundBroker> {
        if let Ok(a) = self.find_broker_in_subscribe(broker_name, broker_id, false) {
            let stale = || {
                self.cached_route(topic)
                    .is_none_or(|r| r.fetched_at.elapsed() > MASTER_RECHECK)
            };
            if !(a.slave && broker_id == MASTER_ID && stale()) {
                return Ok(a);
            }
            if self.update_route(topic).await.is_err() {
                // Nameservers unreachable: the slave it is (the periodic refresh says why,
                // once per `pollNameServerInterval`, rather than every pull).
                return Ok(a);
            }
            return self.find_broker_in_subscribe(broker_name, broker_id, false);
        }
        self.update_route(topic).await?;
        self.find_broker_in_subscribe(broker_name, broker_id, false)
    }

    /// The address offsets of `broker_name` go to: its master, or a slave while the route has
    /// no master (`findBrokerAddressInAdmin`), refreshing `topic`'s route if unknown.
    async fn admin_addr(&self, topic: &str, broker_name: &str) -> Result<String> {
        Ok(self
            .subscribe_addr(topic, broker_name, MASTER_ID)
            .await?
            .addr)
    }

    /// After a transport failure (`e`): refresh `topic`'s route at once rather than at
    /// the next `pollNameServerInterval`, so a dead master the nameserver already dropped is
    /// left for its slave by the next attempt, not up to 30 s later.
    async fn refresh_after_failure(&self, topic: &str, e: &ClientError) {
        if matches!(e, ClientError::Connect { .. } | ClientError::Timeout { .. }) {
            match self.update_route(topic).await {
                // A pull cut short by shutdown(): nothing to refresh, nothing to report.
                Ok(_) | Err(ClientError::Shutdown) => {}
                Err(e) => self.warn(format!("refreshing the route of topic {topic}: {e}")),
            }
        }
    }

    /// Pull messages (`pullKernelImpl` + `processPullResult`).
    ///
    /// # Errors
    /// Transport failures; broker error codes (e.g. SUBSCRIPTION_NOT_EXIST) as
    /// [`ClientError::Response`].
    pub async fn pull(&self, req: &PullRequest) -> Result<PullResult> {
        let RawPull {
            mut result,
            body,
            addr,
        } = self.pull_raw(req).await?;
        if result.status == PullStatus::Found {
            let messages =
                message_decoder::decode_messages(&body).map_err(|e| ClientError::BadResponse {
                    addr: addr.clone(),
                    detail: format!("pulled messages do not decode: {e}"),
                })?;
            result.messages = self.process_pulled(&addr, req, messages, &result);
            // Everything filtered out by the exact tag check still advances the offset.
            if result.messages.is_empty() {
                result.status = PullStatus::NoMatchedMsg;
            }
        }
        Ok(result)
    }

    /// [`pull`](Self::pull) without decoding the messages: the records stay in the body
    /// (see [`RawPull`]); no exact tag check, decompression or retry-topic restore yet.
    ///
    /// # Errors
    /// As [`pull`](Self::pull).
    pub async fn pull_raw(&self, req: &PullRequest) -> Result<RawPull> {
        let mq = &req.queue;
        let broker_id = req
            .broker_id
            .unwrap_or_else(|| self.pull_from_which_node(&req.group, mq));
        let found = self
            .subscribe_addr(&mq.topic, &mq.broker_name, broker_id)
            .await?;
        let addr = found.addr;
        // A slave does not store the offset a pull carries (`clearCommitOffsetFlag`); the
        // consumer's offset store commits it with UPDATE_CONSUMER_OFFSET.
        let commit_offset = req.commit_offset.filter(|_| !found.slave);
        let header = PullMessageRequestHeader {
            consumer_group: req.group.clone(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            queue_offset: req.offset,
            max_msg_nums: req.max_nums,
            sys_flag: pull_sys_flag::build(
                commit_offset.is_some(),
                !req.suspend.is_zero(),
                true,
                false,
            ),
            commit_offset: commit_offset.unwrap_or(0),
            // A timeout past i64::MAX ms (292 million years) waits forever either way.
            suspend_timeout_millis: i64::try_from(req.suspend.as_millis()).unwrap_or(i64::MAX),
            subscription: Some(req.subscription.sub_string.clone()),
            sub_version: req.subscription.sub_version,
            expression_type: Some(req.subscription.expression_type.clone()),
            broker_name: Some(mq.broker_name.clone()),
        };
        let cmd = RemotingCommand::request_with_header(RequestCode::PULL_MESSAGE.0, &header);
        let resp = match self.invoke(&addr, cmd, req.timeout).await {
            Ok(r) => r,
            Err(e) => {
                self.refresh_after_failure(&mq.topic, &e).await;
                return Err(e);
            }
        };
        let status = match ResponseCode(resp.code) {
            ResponseCode::SUCCESS => PullStatus::Found,
            ResponseCode::PULL_NOT_FOUND => PullStatus::NoNewMsg,
            ResponseCode::PULL_RETRY_IMMEDIATELY => PullStatus::NoMatchedMsg,
            ResponseCode::PULL_OFFSET_MOVED => PullStatus::OffsetIllegal,
            _ => return Err(response_error(&addr, &resp)),
        };
        let h = PullMessageResponseHeader::from_ext_fields(&resp.ext_fields).map_err(|e| {
            ClientError::BadResponse {
                addr: addr.clone(),
                detail: e.to_string(),
            }
        })?;
        if req.broker_id.is_none() {
            self.update_pull_from_which_node(&req.group, mq, h.suggest_which_broker_id);
        }
        let result = PullResult {
            status,
            next_begin_offset: h.next_begin_offset,
            min_offset: h.min_offset,
            max_offset: h.max_offset,
            suggest_which_broker_id: h.suggest_which_broker_id,
            messages: Vec::new(),
        };
        let body = if status == PullStatus::Found {
            resp.body.unwrap_or_default()
        } else {
            Bytes::new()
        };
        Ok(RawPull { result, body, addr })
    }

    /// `processPullResult`: exact tag check, decompression, queue bounds as properties, and
    /// for redeliveries from `%RETRY%<group>` the original topic back (`resetRetryAndNamespace`),
    /// of messages `req` pulled from `addr` with answer `h` (its min and max offsets).
    #[must_use]
    pub fn process_pulled(
        &self,
        addr: &str,
        req: &PullRequest,
        messages: Vec<MessageExt>,
        h: &PullResult,
    ) -> Vec<MessageExt> {
        let sub = &req.subscription;
        let limit = self.config().max_decompressed_body_size;
        let retry_topic = format!("{RETRY_GROUP_TOPIC_PREFIX}{}", req.group);
        let mut out = Vec::with_capacity(messages.len());
        for mut m in messages {
            if m.topic == retry_topic {
                if let Some(origin) = m.properties.get(PropertyKey::RETRY_TOPIC) {
                    origin.clone_into(&mut m.topic);
                }
            }
            if !sub.tags_set.is_empty()
                && !m
                    .tags()
                    .is_some_and(|t| sub.tags_set.iter().any(|s| s == t))
            {
                continue;
            }
            // A body that does not decompress stays as stored, compressed flag set, with
            // the reason in `body_error`: one bad message never loses the others.
            match decompress_body(m.sys_flag, &m.body, limit) {
                Ok(None) => {}
                Ok(Some(body)) => {
                    m.body = Bytes::from(body);
                    m.sys_flag &= !sys_flag::COMPRESSED_FLAG;
                }
                Err(e) => {
                    m.body_error = Some(format!(
                        "message at {}:{} queue offset {} from {addr}: {e}",
                        m.topic, m.queue_id, m.queue_offset
                    ));
                }
            }
            m.properties
                .put(PropertyKey::MIN_OFFSET, h.min_offset.to_string());
            m.properties
                .put(PropertyKey::MAX_OFFSET, h.max_offset.to_string());
            out.push(m);
        }
        out
    }

    /// Hand a message the group failed to consume back to its broker
    /// (CONSUMER_SEND_MSG_BACK): it comes again through `%RETRY%<group>` after a delay
    /// (`delay_level` 0 lets the broker pick 3 + reconsume times), or goes to `%DLQ%<group>`
    /// after `max_reconsume_times`.
    ///
    /// # Errors
    /// Transport and broker errors (the caller then retries locally).
    pub async fn send_msg_back(&self, back: &SendBack) -> Result<()> {
        let addr = self.master_addr(&back.broker_name).or_else(|_| {
            // The store host is the broker the message came from.
            Ok::<_, ClientError>(back.store_host.clone())
        })?;
        let header = ConsumerSendMsgBackRequestHeader {
            offset: back.commit_log_offset,
            group: back.group.clone(),
            delay_level: back.delay_level,
            origin_msg_id: Some(back.origin_msg_id.clone()),
            origin_topic: Some(back.origin_topic.clone()),
            unit_mode: false,
            max_reconsume_times: Some(back.max_reconsume_times),
            broker_name: Some(back.broker_name.clone()),
        };
        let cmd =
            RemotingCommand::request_with_header(RequestCode::CONSUMER_SEND_MSG_BACK.0, &header);
        self.invoke_ok(&addr, cmd, self.config().api_timeout)
            .await
            .map(|_| ())
    }

    /// The group's committed offset of `mq` on its broker; `None` when there is none.
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn query_consumer_offset(
        &self,
        group: &str,
        mq: &MessageQueue,
    ) -> Result<Option<i64>> {
        let addr = self.admin_addr(&mq.topic, &mq.broker_name).await?;
        let header = QueryConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            broker_name: Some(mq.broker_name.clone()),
        };
        let cmd =
            RemotingCommand::request_with_header(RequestCode::QUERY_CONSUMER_OFFSET.0, &header);
        let resp = self.invoke(&addr, cmd, self.config().api_timeout).await?;
        if resp.code == ResponseCode::QUERY_NOT_FOUND.0 {
            return Ok(None);
        }
        let resp = expect_success(&addr, resp)?;
        let h: QueryConsumerOffsetResponseHeader = decode_header(&addr, &resp)?;
        Ok(Some(h.offset))
    }

    /// Commit the group's offset of `mq` on its broker (oneway when `oneway`).
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn update_consumer_offset(
        &self,
        group: &str,
        mq: &MessageQueue,
        offset: i64,
        oneway: bool,
    ) -> Result<()> {
        let addr = self.admin_addr(&mq.topic, &mq.broker_name).await?;
        let header = UpdateConsumerOffsetRequestHeader {
            consumer_group: group.to_owned(),
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            commit_offset: offset,
            broker_name: Some(mq.broker_name.clone()),
        };
        let cmd =
            RemotingCommand::request_with_header(RequestCode::UPDATE_CONSUMER_OFFSET.0, &header);
        if oneway {
            self.invoke_oneway(&addr, cmd).await
        } else {
            self.invoke_ok(&addr, cmd, self.config().api_timeout)
                .await
                .map(|_| ())
        }
    }

    /// The queue's max offset (one past the last message).
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn max_offset(&self, mq: &MessageQueue) -> Result<i64> {
        let header = GetMaxOffsetRequestHeader {
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            broker_name: Some(mq.broker_name.clone()),
        };
        let h: GetMaxOffsetResponseHeader = self
            .queue_call(mq, RequestCode::GET_MAX_OFFSET, &header)
            .await?;
        Ok(h.offset)
    }

    /// The queue's min offset (the first message still stored).
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn min_offset(&self, mq: &MessageQueue) -> Result<i64> {
        let header = GetMinOffsetRequestHeader {
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            broker_name: Some(mq.broker_name.clone()),
        };
        let h: GetMinOffsetResponseHeader = self
            .queue_call(mq, RequestCode::GET_MIN_OFFSET, &header)
            .await?;
        Ok(h.offset)
    }

    /// The offset of the first message stored at or after `timestamp` (ms).
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn search_offset(&self, mq: &MessageQueue, timestamp: i64) -> Result<i64> {
        let header = SearchOffsetRequestHeader {
            topic: mq.topic.clone(),
            queue_id: mq.queue_id,
            timestamp,
            broker_name: Some(mq.broker_name.clone()),
        };
        let h: SearchOffsetResponseHeader = self
            .queue_call(mq, RequestCode::SEARCH_OFFSET_BY_TIMESTAMP, &header)
            .await?;
        Ok(h.offset)
    }

    async fn queue_call<H: CommandHeader, R: CommandHeader>(
        &self,
        mq: &MessageQueue,
        code: RequestCode,
        header: &H,
    ) -> Result<R> {
        let addr = self.admin_addr(&mq.topic, &mq.broker_name).await?;
        let cmd = RemotingCommand::request_with_header(code.0, header);
        let resp = self
            .invoke_ok(&addr, cmd, self.config().api_timeout)
            .await?;
        decode_header(&addr, &resp)
    }

    /// Client ids of the group's live consumers, asked of a broker of `topic`.
    ///
    /// # Errors
    /// Transport and broker errors; no route for the topic.
    pub async fn consumer_id_list(&self, topic: &str, group: &str) -> Result<Vec<String>> {
        let route = self.route(topic).await?;
        let addr = route
            .data
            .broker_datas
            .iter()
            .find_map(|b| b.select_broker_addr().map(str::to_owned))
            .ok_or_else(|| ClientError::NoRoute {
                topic: topic.to_owned(),
                detail: "the route lists no broker".to_owned(),
            })?;
        let header = GetConsumerListByGroupRequestHeader {
            consumer_group: group.to_owned(),
        };
        let cmd = RemotingCommand::request_with_header(
            RequestCode::GET_CONSUMER_LIST_BY_GROUP.0,
            &header,
        );
        let resp = self.invoke(&addr, cmd, self.config().api_timeout).await?;
        // A group with no live consumer on that broker yet answers SYSTEM_ERROR "no consumer".
        if resp.code != ResponseCode::SUCCESS.0 {
            return Ok(Vec::new());
        }
        let body = resp.body.unwrap_or_default();
        GetConsumerListByGroupResponseBody::from_json_bytes(&body)
            .map(|b| b.consumer_id_list)
            .map_err(|e| ClientError::BadResponse {
                addr,
                detail: e.to_string(),
            })
    }

    /// Lock `mqs` (all on `broker_name`) for this client in `group` (LOCK_BATCH_MQ); returns
    /// the queues now locked by this client.
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn lock_batch(
        &self,
        group: &str,
        broker_name: &str,
        mqs: BTreeSet<MessageQueue>,
    ) -> Result<BTreeSet<MessageQueue>> {
        let addr = self.master_addr(broker_name)?;
        let body = LockBatchRequestBody {
            client_id: self.client_id().to_owned(),
            consumer_group: group.to_owned(),
            mq_set: mqs,
        };
        let cmd = RemotingCommand::new_request(RequestCode::LOCK_BATCH_MQ.0, ExtFields::new())
            .with_body(encode_body(&body)?);
        let resp = self
            .invoke_ok(&addr, cmd, self.config().api_timeout)
            .await?;
        LockBatchResponseBody::from_json_bytes(&resp.body.unwrap_or_default())
            .map(|b| b.lock_ok_mq_set)
            .map_err(|e| ClientError::BadResponse {
                addr,
                detail: e.to_string(),
            })
    }

    /// Release this client's locks of `mqs` on `broker_name` (UNLOCK_BATCH_MQ).
    ///
    /// # Errors
    /// Transport and broker errors.
    pub async fn unlock_batch(
        &self,
        group: &str,
        broker_name: &str,
        mqs: BTreeSet<MessageQueue>,
        oneway: bool,
    ) -> Result<()> {
        let addr = self.master_addr(broker_name)?;
        let body = UnlockBatchRequestBody {
            client_id: self.client_id().to_owned(),
            consumer_group: group.to_owned(),
            mq_set: mqs,
        };
        let cmd = RemotingCommand::new_request(RequestCode::UNLOCK_BATCH_MQ.0, ExtFields::new())
            .with_body(encode_body(&body)?);
        if oneway {
            self.invoke_oneway(&addr, cmd).await
        } else {
            self.invoke_ok(&addr, cmd, self.config().api_timeout)
                .await
                .map(|_| ())
        }
    }
}

fn decode_header<H: CommandHeader>(addr: &str, resp: &RemotingCommand) -> Result<H> {
    H::from_ext_fields(&resp.ext_fields).map_err(|e| ClientError::BadResponse {
        addr: addr.to_owned(),
        detail: e.to_string(),
    })
}

fn encode_body<B: RemotingJson>(body: &B) -> Result<Bytes> {
    body.to_json_bytes()
        .map_err(|e| ClientError::IllegalMessage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_as_filter_api_builds_them() {
        let all = build_subscription("T", " * ");
        assert_eq!(all.sub_string, "*");
        assert!(all.tags_set.is_empty() && all.code_set.is_empty());
        let some = build_subscription("T", "TagA || TagB||TagA");
        assert_eq!(some.sub_string, "TagA || TagB||TagA");
        assert_eq!(some.tags_set, ["TagA", "TagB"]);
        assert_eq!(some.code_set, [2_598_919, 2_598_920]);
        assert_eq!(some.expression_type, "TAG");
        assert!(some.sub_version > 0);
    }
}
