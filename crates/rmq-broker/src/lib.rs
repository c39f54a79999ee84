//! The broker: RocketMQ 4.x request processing over `rmq-store` and `rmq-remoting`.
//!
//! # Request lifecycle
//!
//! ```text
//! TCP ─ rmq-remoting Connection ─ RemotingCommand
//!   └─ controller::Dispatcher::handle ─ processor::dispatch (one `match` on the code)
//!        ├─ send_message  (10/310/320) → TopicConfigManager (auto-create) → MessageStore::append
//!        │                               → flush_future (SYNC_FLUSH) → SendMessageResponseHeader
//!        │                               (TRAN_MSG=true: stored as a half message instead)
//!        ├─ send_msg_back (36) → %RETRY%<group> with a delay level (the store parks it in
//!        │                       SCHEDULE_TOPIC_XXXX), or %DLQ%<group> after maxReconsumeTimes
//!        ├─ pull_message  (11)  → SubscriptionGroupManager / ConsumerManager (subscription)
//!        │                       → MessageStore::get_message → file regions (sendfile)
//!        │                       └─ nothing new + suspend flag → PullRequestHoldService, woken
//!        │                          by the store's arriving listener, a periodic check, or the
//!        │                          suspend timeout, then answered once more without suspending
//!        ├─ end_transaction (37) → the half message (CommitLog offset) → commit: re-put to
//!        │  its real topic; commit or rollback: op record (see [`transaction`])
//!        ├─ offset (14/15), admin (29-32), query_message (12/33), client (34/35/38/203),
//!        │  topic (17/21/215), runtime_info (28), subscription_group (200/201)
//!        ├─ stats (202/208), lock (41/42) → RebalanceLockManager
//!        ├─ reset_offset (222) → commit offsets, RESET_CONSUMER_CLIENT_OFFSET (220) to
//!        │  the group's consumers
//!        └─ anything else → the fallback handler (Python control plane) or code 3
//! ```
//!
//! State that outlives a request is kept by the managers, each persisted under
//! `<config dir>/` with RocketMQ's file names and JSON shapes (`topics.json`,
//! `consumerOffset.json`, `subscriptionGroup.json`), written via temp file + fsync + rename
//! with a `.bak` of the previous version.
//!
//! # Layout
//! * [`config`]: the settings ([`BrokerConfig`]).
//! * [`state`]: what every processor works on ([`state::BrokerState`]).
//! * [`controller`]: builds the state, runs the server and the periodic services
//!   ([`BrokerController`]).
//! * [`topic_config`], [`consumer_offset`], [`subscription_group`], [`consumer_manager`],
//!   [`producer_manager`]: the managers.
//! * [`long_polling`]: held pulls.
//! * [`metrics`]: the Prometheus counters and scrape (`metricsExporterType = PROM`).
//! * [`rebalance_lock`]: queue locks of orderly consumers.
//! * [`transaction`]: half messages, op records, transaction checks.
//! * [`processor`]: one file per request family.
//! * [`error`]: errors ([`BrokerError`], the typed errors of sends, send-backs and
//!   transactions) and the one error → response code and remark mapping
//!   ([`error::RequestError::to_response`]).
#![forbid(unsafe_code)]

pub mod broker_stats;
pub mod config;
pub mod consumer_manager;
pub mod consumer_offset;
pub mod controller;
pub mod error;
mod fsutil;
pub mod long_polling;
pub mod metrics;
pub mod processor;
pub mod producer_manager;
mod rcu_map;
pub mod rebalance_lock;
pub mod state;
pub mod stats_history;
pub mod stats_items;
pub mod subscription_group;
pub mod topic_config;
pub mod transaction;

pub use config::BrokerConfig;
pub use controller::BrokerController;
pub use error::{BrokerError, RequestError};
