//! rmq's RocketMQ client core: the wire side of producers and consumers, in Rust so the
//! Python SDK (`rmq.Producer`, `rmq.PushConsumer`, …) never encodes a frame or holds the GIL
//! while a request is in flight.
//!
//! | module | holds |
//! |---|---|
//! | [`instance`] | [`ClientInstance`]: connections, routes, heartbeats, broker pushes |
//! | [`producer`] | [`Producer`]: queue selection, retries, SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE |
//! | [`transaction`] | END_TRANSACTION after a half message, and the answer to a broker check |
//! | [`fault`] | latency fault avoidance |
//! | [`consumer`] | pull, consumer and queue offsets, consumer ids, queue locks |
//! | [`message`] | outgoing [`Message`], [`SendResult`], unique ids, compression |
//! | [`error`] | [`ClientError`] |
//!
//! Decisions (rebalance, flow control, when to commit offsets) are made by the caller.

pub mod consumer;
pub mod error;
pub mod fault;
pub mod instance;
pub mod message;
pub mod producer;
pub mod transaction;

pub use consumer::{build_subscription, PullRequest, PullResult, PullStatus, RawPull, SendBack};
pub use error::{ClientError, Result};
pub use instance::{CallAnswer, ClientConfig, ClientInstance, ClientListener, TopicRoute};
pub use message::{decode_uniq_id, Message, SendResult, SendStatus, UniqIdParts};
pub use producer::{BatchEncoder, Producer, ProducerConfig};
pub use transaction::{HalfBatchSent, HalfMessageSent, LocalTransactionState};
