//! The producer's send path (`DefaultMQProducerImpl.sendDefaultImpl` and `sendKernelImpl`):
//! find the topic's queues (falling back to the auto-create template `TBW102`), pick a queue
//! round-robin while avoiding the broker that just failed (or, with latency fault avoidance,
//! brokers that were slow), send SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE, and retry on another
//! queue when the broker is unreachable or answers with a retriable code.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use rmq_common::{sys_flag, CompressionType, Properties, PropertyKey};
use rmq_protocol::body::MessageQueue;
use rmq_protocol::header::send::{SendMessageRequestHeaderV2, SendMessageResponseHeader};
use rmq_protocol::{message_decoder, CommandHeader, RemotingCommand, RequestCode, ResponseCode};

use crate::error::{ClientError, Result};
use crate::fault::{LatencyFaultTolerance, FAILED_SEND_LATENCY};
use crate::instance::{response_error, ClientInstance, TopicRoute, AUTO_CREATE_TOPIC_KEY};
use crate::message::{check_message, Message, SendResult, SendStatus};

/// Producer settings, RocketMQ's `DefaultMQProducer` defaults.
#[derive(Debug, Clone)]
pub struct ProducerConfig {
    /// Producer group.
    pub group: String,
    /// Deadline of one send, retries included (`sendMsgTimeout`, 3 s).
    pub send_timeout: Duration,
    /// Extra attempts of a failed sync send (`retryTimesWhenSendFailed`, 2).
    pub retry_times_when_send_failed: u32,
    /// Retry on another broker when the status is not SEND_OK (`retryAnotherBrokerWhenNotStoreOK`).
    pub retry_another_broker_when_not_store_ok: bool,
    /// Largest body, or batch (`maxMessageSize`, 4 MiB).
    pub max_message_size: usize,
    /// Bodies longer than this are compressed (`compressMsgBodyOverHowmuch`, 4096).
    pub compress_over: usize,
    /// How (`compressType`, ZLIB): LZ4 and ZSTD need RocketMQ 5 consumers (or rmq's).
    pub compress_type: CompressionType,
    /// zlib or zstd level (`rocketmq.message.compressLevel`, 5); LZ4 has none.
    pub compress_level: u32,
    /// Avoid slow brokers (`sendLatencyFaultEnable`).
    pub send_latency_fault_enable: bool,
    /// Queues of an auto-created topic (`defaultTopicQueueNums`, 4).
    pub default_topic_queue_nums: i32,
}

impl ProducerConfig {
    /// Defaults for `group`.
    #[must_use]
    pub fn new(group: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            send_timeout: Duration::from_secs(3),
            retry_times_when_send_failed: 2,
            retry_another_broker_when_not_store_ok: false,
            max_message_size: 4 * 1024 * 1024,
            compress_over: 4096,
            compress_type: CompressionType::Zlib,
            compress_level: 5,
            send_latency_fault_enable: false,
            default_topic_queue_nums: 4,
        }
    }
}

/// Response codes after which a send is retried on another queue (`retryResponseCodes`).
const RETRY_CODES: [ResponseCode; 6] = [
    ResponseCode::TOPIC_NOT_EXIST,
    ResponseCode::SERVICE_NOT_AVAILABLE,
    ResponseCode::SYSTEM_ERROR,
    ResponseCode::NO_PERMISSION,
    ResponseCode::NO_BUYER_ID,
    ResponseCode::NOT_IN_CURRENT_UNIT,
];

/// How a message goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommunicationMode {
    /// Wait for the broker's answer.
    Sync,
    /// Do not wait (no result, no retries).
    Oneway,
}

/// A producer over a shared [`ClientInstance`].
pub struct Producer {
    instance: ClientInstance,
    config: ProducerConfig,
    fault: LatencyFaultTolerance,
    next_queue: AtomicUsize,
}

/// A message encoded for the wire: header fields and body, ready to be sent to any queue.
/// Cloning shares the body.
#[derive(Clone)]
struct Prepared {
    topic: String,
    body: Bytes,
    properties: String,
    sys_flag: i32,
    flag: i32,
    batch: bool,
    msg_id: String,
    reconsume_times: Option<i32>,
    max_reconsume_times: Option<i32>,
}

impl Producer {
    /// A producer of `config.group`; announced to brokers in the instance's heartbeats.
    #[must_use]
    pub fn new(instance: ClientInstance, config: ProducerConfig) -> Arc<Self> {
        instance.register_producer(&config.group);
        Arc::new(Self {
            instance,
            config,
            fault: LatencyFaultTolerance::default(),
            next_queue: AtomicUsize::new(crate::message::random_u32() as usize),
        })
    }

    /// The settings.
    #[must_use]
    pub fn config(&self) -> &ProducerConfig {
        &self.config
    }

    /// The instance.
    #[must_use]
    pub fn instance(&self) -> &ClientInstance {
        &self.instance
    }

    /// The writable queues of `topic` (for selectors).
    ///
    /// # Errors
    /// No route for the topic or its template.
    pub async fn publish_queues(&self, topic: &str) -> Result<Vec<MessageQueue>> {
        Ok(self.publish_route(topic).await?.publish_queues.clone())
    }

    /// `tryToFindTopicPublishInfo`: the topic's route, or for a topic no nameserver knows
    /// yet, the auto-create template's queues renamed to the topic (the broker creates the
    /// topic on the first send if `autoCreateTopicEnable`).
    async fn publish_route(&self, topic: &str) -> Result<Arc<TopicRoute>> {
        // `tryToFindTopicPublishInfo`: a cached route without a publish queue (a master that
        // was down when it was fetched) is asked for again before giving up.
        let cached = self.instance.route(topic).await;
        let route = match cached {
            Ok(r) if r.publish_queues.is_empty() => self.instance.update_route(topic).await,
            other => other,
        };
        match route {
            Ok(r) if !r.publish_queues.is_empty() => Ok(r),
            Ok(r) => Err(no_publish_queue(topic, &r)),
            Err(ClientError::NoRoute { detail, .. }) => {
                let template = match self.instance.fetch_route(AUTO_CREATE_TOPIC_KEY).await {
                    Ok(t) => t,
                    Err(ClientError::NoRoute { .. }) => {
                        return Err(ClientError::NoRoute {
                            topic: topic.to_owned(),
                            detail: format!("{detail}, and no broker allows auto-creation"),
                        })
                    }
                    Err(e) => return Err(e),
                };
                let mut data = template;
                for q in &mut data.queue_datas {
                    q.read_queue_nums = q.read_queue_nums.min(self.config.default_topic_queue_nums);
                    q.write_queue_nums =
                        q.write_queue_nums.min(self.config.default_topic_queue_nums);
                }
                let route = Arc::new(TopicRoute::new(topic, data));
                if route.publish_queues.is_empty() {
                    return Err(ClientError::NoRoute {
                        topic: topic.to_owned(),
                        detail: format!("{detail}, and no broker allows auto-creation"),
                    });
                }
                self.instance.remember_route(topic, route.clone());
                Ok(route)
            }
            Err(e) => Err(e),
        }
    }

    fn prepare(&self, mut msg: Message) -> Result<Prepared> {
        check_message(&msg, self.config.max_message_size)?;
        let msg_id = msg.ensure_uniq_id();
        let mut sys = 0;
        if is_transactional(&msg) {
            sys |= sys_flag::TRANSACTION_PREPARED_TYPE;
        }
        let mut body = msg.body;
        if body.len() > self.config.compress_over {
            let kind = self.config.compress_type;
            // As Java, a body the encoder fails on (never seen) is sent as it is.
            if let Ok(z) = kind.compress(&body, self.config.compress_level) {
                body = Bytes::from(z);
                sys |= kind.sys_flag();
            }
        }
        let retry = msg
            .topic
            .starts_with(rmq_common::topic::RETRY_GROUP_TOPIC_PREFIX);
        let int_prop = |p: &Properties, k| p.get(k).and_then(|v: &str| v.parse().ok());
        Ok(Prepared {
            reconsume_times: retry
                .then(|| int_prop(&msg.properties, PropertyKey::RECONSUME_TIME))
                .flatten(),
            max_reconsume_times: retry
                .then(|| int_prop(&msg.properties, PropertyKey::MAX_RECONSUME_TIMES))
                .flatten(),
            properties: msg.properties.encode(),
            topic: msg.topic,
            body,
            sys_flag: sys,
            flag: msg.flag,
            batch: false,
            msg_id,
        })
    }

    fn prepare_batch(&self, msgs: Vec<Message>) -> Result<Prepared> {
        let Some(first) = msgs.first() else {
            return Err(ClientError::IllegalMessage("the batch is empty".to_owned()));
        };
        let topic = first.topic.clone();
        // A batch of transactional messages is parked as half messages, one per entry (rmq's
        // brokers accept it; RocketMQ's refuse it, rather than deliver the halves at once).
        let transactional = is_transactional(first);
        let mut body = BytesMut::new();
        let mut ids = String::new();
        for mut m in msgs {
            if is_transactional(&m) != transactional {
                return Err(ClientError::IllegalMessage(
                    "a batch is all transactional messages (TRAN_MSG=true) or none".to_owned(),
                ));
            }
            if m.topic != topic {
                return Err(ClientError::IllegalMessage(format!(
                    "a batch goes to one topic; it mixes {topic:?} and {:?}",
                    m.topic
                )));
            }
            if m.properties.get(PropertyKey::DELAY_TIME_LEVEL).is_some() {
                return Err(ClientError::IllegalMessage(
                    "delayed messages cannot be sent in a batch".to_owned(),
                ));
            }
            check_message(&m, self.config.max_message_size)?;
            if !ids.is_empty() {
                ids.push(',');
            }
            ids.push_str(&m.ensure_uniq_id());
            message_decoder::encode_batch_entry(
                &mut body,
                m.flag,
                &m.body,
                m.properties.encode().as_bytes(),
            )
            .map_err(|e| ClientError::IllegalMessage(e.to_string()))?;
        }
        if body.len() > self.config.max_message_size {
            return Err(ClientError::IllegalMessage(format!(
                "the batch is {} bytes; the most is {} (maxMessageSize): split it",
                body.len(),
                self.config.max_message_size
            )));
        }
        Ok(Prepared {
            topic,
            body: body.freeze(),
            properties: String::new(),
            sys_flag: if transactional {
                sys_flag::TRANSACTION_PREPARED_TYPE
            } else {
                0
            },
            flag: 0,
            batch: true,
            msg_id: ids,
            reconsume_times: None,
            max_reconsume_times: None,
        })
    }

    /// Send one message to a queue the producer picks, retrying on failure.
    ///
    /// # Errors
    /// Illegal messages at once; otherwise the last attempt's error.
    pub async fn send(&self, msg: Message) -> Result<SendResult> {
        let p = self.prepare(msg)?;
        self.send_default(p, CommunicationMode::Sync).await
    }

    /// Send messages of one topic as one SEND_BATCH_MESSAGE.
    ///
    /// # Errors
    /// As [`send`](Self::send); a batch over `max_message_size` is illegal.
    pub async fn send_batch(
        &self,
        msgs: Vec<Message>,
        queue: Option<MessageQueue>,
    ) -> Result<SendResult> {
        let p = self.prepare_batch(msgs)?;
        match queue {
            Some(mq) => {
                self.send_to(p, &mq, CommunicationMode::Sync, self.config.send_timeout)
                    .await
            }
            None => self.send_default(p, CommunicationMode::Sync).await,
        }
    }

    /// Send entries already encoded as a SEND_BATCH_MESSAGE body (see [`BatchEncoder`]): the
    /// columnar writers' path, with no [`Message`] per row.
    ///
    /// # Errors
    /// As [`send_batch`](Self::send_batch).
    pub async fn send_encoded_batch(
        &self,
        batch: BatchEncoder,
        queue: Option<MessageQueue>,
    ) -> Result<SendResult> {
        crate::message::check_topic(&batch.topic)?;
        if batch.ids.is_empty() {
            return Err(ClientError::IllegalMessage("the batch is empty".to_owned()));
        }
        if batch.body.len() > self.config.max_message_size {
            return Err(ClientError::IllegalMessage(format!(
                "the batch is {} bytes; the most is {} (maxMessageSize): split it",
                batch.body.len(),
                self.config.max_message_size
            )));
        }
        let p = Prepared {
            topic: batch.topic,
            body: batch.body.freeze(),
            properties: String::new(),
            sys_flag: if batch.transactional {
                sys_flag::TRANSACTION_PREPARED_TYPE
            } else {
                0
            },
            flag: 0,
            batch: true,
            msg_id: batch.ids,
            reconsume_times: None,
            max_reconsume_times: None,
        };
        match queue {
            Some(mq) => {
                self.send_to(p, &mq, CommunicationMode::Sync, self.config.send_timeout)
                    .await
            }
            None => self.send_default(p, CommunicationMode::Sync).await,
        }
    }

    /// Send to `queue` (chosen by a selector): one attempt, no other queue.
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub async fn send_to_queue(&self, msg: Message, queue: &MessageQueue) -> Result<SendResult> {
        let p = self.prepare(msg)?;
        self.send_to(p, queue, CommunicationMode::Sync, self.config.send_timeout)
            .await
    }

    /// Send without waiting for the broker (`sendOneway`): one attempt.
    ///
    /// # Errors
    /// Illegal messages, no route, an unreachable broker.
    pub async fn send_oneway(&self, msg: Message, queue: Option<MessageQueue>) -> Result<()> {
        let p = self.prepare(msg)?;
        let mq = if let Some(q) = queue {
            q
        } else {
            let route = self.publish_route(&p.topic).await?;
            self.select_queue(&route, None)
        };
        self.send_to(p, &mq, CommunicationMode::Oneway, self.config.send_timeout)
            .await
            .map(|_| ())
    }

    async fn send_default(&self, p: Prepared, mode: CommunicationMode) -> Result<SendResult> {
        let started = Instant::now();
        let timeout = self.config.send_timeout;
        let mut route = self.publish_route(&p.topic).await?;
        let attempts = 1 + self.config.retry_times_when_send_failed;
        let mut last_broker: Option<String> = None;
        let mut brokers_sent = Vec::new();
        let mut last_err: Option<ClientError> = None;
        let mut last_result: Option<SendResult> = None;
        for _ in 0..attempts {
            let Some(remaining) = timeout.checked_sub(started.elapsed()) else {
                break;
            };
            let mq = self.select_queue(&route, last_broker.as_deref());
            brokers_sent.push(mq.broker_name.clone());
            last_broker = Some(mq.broker_name.clone());
            let t0 = Instant::now();
            match self.send_to(p.clone(), &mq, mode, remaining).await {
                Ok(r) => {
                    let ms = u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX);
                    self.record_latency(&mq.broker_name, ms);
                    if r.status != SendStatus::SendOk
                        && self.config.retry_another_broker_when_not_store_ok
                    {
                        last_result = Some(r);
                        continue;
                    }
                    return Ok(r);
                }
                Err(e) => {
                    self.record_latency(&mq.broker_name, FAILED_SEND_LATENCY);
                    let retriable = e.is_transport()
                        || e.response_code()
                            .is_some_and(|c| RETRY_CODES.contains(&ResponseCode(c)))
                        || matches!(e, ClientError::BrokerNotFound { .. });
                    if !retriable {
                        return Err(e);
                    }
                    if matches!(e, ClientError::BrokerNotFound { .. }) || e.is_transport() {
                        // The route may be stale (a broker gone, or a master down: its group
                        // then has no publish queue); refresh for the next try.
                        if self.instance.update_route(&p.topic).await.is_ok() {
                            if let Ok(r) = self.publish_route(&p.topic).await {
                                route = r;
                            }
                        }
                    }
                    last_err = Some(e);
                }
            }
        }
        if let Some(r) = last_result {
            return Ok(r);
        }
        let last = last_err.unwrap_or(ClientError::Timeout {
            addr: brokers_sent.last().cloned().unwrap_or_default(),
            code: RequestCode::SEND_MESSAGE_V2.0,
            timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        });
        Err(ClientError::SendFailed {
            topic: p.topic,
            attempts: brokers_sent.len(),
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            brokers: brokers_sent,
            last: Box::new(last),
        })
    }

    fn record_latency(&self, broker: &str, latency_ms: u64) {
        if self.config.send_latency_fault_enable {
            self.fault.update(broker, latency_ms);
        }
    }

    /// `selectOneMessageQueue`: round-robin, skipping the broker that just failed, and with
    /// fault avoidance on, brokers in isolation.
    fn select_queue(&self, route: &TopicRoute, last_broker: Option<&str>) -> MessageQueue {
        let queues = &route.publish_queues;
        let n = queues.len();
        let next = || self.next_queue.fetch_add(1, Ordering::Relaxed) % n;
        if self.config.send_latency_fault_enable {
            for _ in 0..n {
                let q = &queues[next()];
                if self.fault.is_available(&q.broker_name) {
                    return q.clone();
                }
            }
            if let Some(broker) = self.fault.pick_one_at_least() {
                let on_broker: Vec<&MessageQueue> =
                    queues.iter().filter(|q| q.broker_name == broker).collect();
                if on_broker.is_empty() {
                    self.fault.remove(&broker);
                } else {
                    return on_broker[next() % on_broker.len()].clone();
                }
            }
            return queues[next()].clone();
        }
        if let Some(last) = last_broker {
            for _ in 0..n {
                let q = &queues[next()];
                if q.broker_name != last {
                    return q.clone();
                }
            }
        }
        queues[next()].clone()
    }

    /// `sendKernelImpl`: one request to the queue's master.
    async fn send_to(
        &self,
        p: Prepared,
        mq: &MessageQueue,
        mode: CommunicationMode,
        timeout: Duration,
    ) -> Result<SendResult> {
        let addr = if let Ok(a) = self.instance.master_addr(&mq.broker_name) {
            a
        } else {
            self.instance.update_route(&mq.topic).await?;
            self.instance.master_addr(&mq.broker_name)?
        };
        let header = SendMessageRequestHeaderV2 {
            a: self.config.group.clone(),
            b: p.topic.clone(),
            c: AUTO_CREATE_TOPIC_KEY.to_owned(),
            d: self.config.default_topic_queue_nums,
            e: mq.queue_id,
            f: p.sys_flag,
            g: rmq_common::time::now_millis(),
            h: p.flag,
            i: (!p.properties.is_empty()).then(|| p.properties.clone()),
            j: p.reconsume_times.or(Some(0)),
            k: false,
            l: p.max_reconsume_times,
            m: p.batch,
            n: Some(mq.broker_name.clone()),
        };
        let code = if p.batch {
            RequestCode::SEND_BATCH_MESSAGE
        } else {
            RequestCode::SEND_MESSAGE_V2
        };
        let cmd = RemotingCommand::new_request(code.0, header.to_ext_fields()).with_body(p.body);
        if mode == CommunicationMode::Oneway {
            self.instance.invoke_oneway(&addr, cmd).await?;
            return Ok(SendResult {
                status: SendStatus::SendOk,
                msg_id: p.msg_id,
                offset_msg_id: String::new(),
                queue: mq.clone(),
                queue_offset: -1,
                transaction_id: None,
                region_id: String::new(),
                trace_on: false,
            });
        }
        let resp = self.instance.invoke(&addr, cmd, timeout).await?;
        let status = match ResponseCode(resp.code) {
            ResponseCode::SUCCESS => SendStatus::SendOk,
            ResponseCode::FLUSH_DISK_TIMEOUT => SendStatus::FlushDiskTimeout,
            ResponseCode::FLUSH_SLAVE_TIMEOUT => SendStatus::FlushSlaveTimeout,
            ResponseCode::SLAVE_NOT_AVAILABLE => SendStatus::SlaveNotAvailable,
            _ => return Err(response_error(&addr, &resp)),
        };
        let h = SendMessageResponseHeader::from_ext_fields(&resp.ext_fields).map_err(|e| {
            ClientError::BadResponse {
                addr: addr.clone(),
                detail: e.to_string(),
            }
        })?;
        Ok(SendResult {
            status,
            msg_id: p.msg_id,
            offset_msg_id: h.msg_id,
            queue: MessageQueue::new(&mq.topic, &mq.broker_name, h.queue_id),
            queue_offset: h.queue_offset,
            transaction_id: h.transaction_id,
            region_id: resp
                .ext_fields
                .get(PropertyKey::MSG_REGION)
                .unwrap_or("DefaultRegion")
                .to_owned(),
            trace_on: resp.ext_fields.get(PropertyKey::TRACE_SWITCH) != Some("false"),
        })
    }
}

/// Builds a SEND_BATCH_MESSAGE body entry by entry, each with its unique id and properties
/// written straight into the wire encoding (for [`Producer::send_encoded_batch`]).
pub struct BatchEncoder {
    topic: String,
    body: BytesMut,
    ids: String,
    props: Vec<u8>,
    common: Vec<u8>,
    transactional: bool,
}

impl BatchEncoder {
    /// An empty batch to `topic` whose every entry gets the properties `common`; with
    /// `TRAN_MSG=true` among them it is a transactional batch.
    #[must_use]
    pub fn new(topic: String, common: &[(String, String)], capacity: usize) -> Self {
        let transactional = common
            .iter()
            .any(|(k, v)| k == PropertyKey::TRANSACTION_PREPARED && v == "true");
        let encoded = common
            .iter()
            .cloned()
            .collect::<Properties>()
            .encode()
            .into_bytes();
        Self {
            topic,
            body: BytesMut::with_capacity(capacity),
            ids: String::new(),
            props: Vec::with_capacity(128),
            common: encoded,
            transactional,
        }
    }

    /// Append an entry: `body`, unique id `id`, `TAGS` / `KEYS` when given.
    ///
    /// # Errors
    /// An empty body, or properties over the entry format's 32767 bytes.
    pub fn push(
        &mut self,
        body: &[u8],
        id: &str,
        tags: Option<&str>,
        keys: Option<&str>,
    ) -> Result<()> {
        if body.is_empty() {
            return Err(ClientError::IllegalMessage(
                "the message body is empty".to_owned(),
            ));
        }
        self.props.clear();
        for (name, value) in [
            (PropertyKey::UNIQ_CLIENT_MESSAGE_ID_KEYIDX, Some(id)),
            (PropertyKey::TAGS, tags),
            (PropertyKey::KEYS, keys),
        ] {
            if let Some(v) = value {
                self.props.extend_from_slice(name.as_bytes());
                self.props.push(1);
                self.props.extend_from_slice(v.as_bytes());
                self.props.push(2);
            }
        }
        self.props.extend_from_slice(&self.common);
        message_decoder::encode_batch_entry(&mut self.body, 0, body, &self.props)
            .map_err(|e| ClientError::IllegalMessage(e.to_string()))?;
        if !self.ids.is_empty() {
            self.ids.push(',');
        }
        self.ids.push_str(id);
        Ok(())
    }
}

/// Whether `msg` is a half message to be (`TRAN_MSG=true`).
fn is_transactional(msg: &Message) -> bool {
    msg.properties
        .get(PropertyKey::TRANSACTION_PREPARED)
        .is_some_and(|v| v == "true")
}

/// Why a route has no queue to send to: its broker groups have no master now (the usual
/// reason: a master is down), or its queues forbid writes.
fn no_publish_queue(topic: &str, route: &TopicRoute) -> ClientError {
    let masterless: Vec<&str> = route
        .data
        .broker_datas
        .iter()
        .filter(|b| b.master_addr().is_none())
        .map(|b| b.broker_name.as_str())
        .collect();
    if masterless.is_empty() {
        ClientError::NoRoute {
            topic: topic.to_owned(),
            detail: "no queue of it allows writes".to_owned(),
        }
    } else {
        ClientError::NoMaster {
            topic: topic.to_owned(),
            brokers: masterless.join(", "),
        }
    }
}
