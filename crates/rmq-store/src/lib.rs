//! The rmq storage engine, in the design and the on-disk formats of Apache RocketMQ 4.x.
//!
//! All topics share one append-only CommitLog; each (topic, queue) gets a small
//! ConsumeQueue of 20-byte units pointing into it; an IndexFile maps message keys to
//! CommitLog offsets. A dispatch thread builds the last two from the first, so a put touches
//! only the CommitLog, and a crash loses at most what recovery can rebuild from it.
//!
//! # Layout
//!
//! ```text
//! <storePathRootDir>/
//!   commitlog/00000000000000000000      mapped files named by start offset
//!   consumequeue/<topic>/<queueId>/…    20-byte units, 300 000 per file
//!   index/<yyyyMMddHHmmssSSS>           hash index by key
//!   checkpoint                          flush timestamps
//!   abort                               present while running: its presence at start = crash
//!   lock                                held while a process uses the directory
//! ```
//!
//! # Modules
//! [`format`] (bytes on disk) → `mmap` (crate-private, the only `unsafe`) → [`mapped_file`] →
//! [`mapped_file_queue`] → [`commit_log`] (and its [`damaged`] ranges), [`consume_queue`] (and their table),
//! [`index_file`] (suspended while it cannot be written: `index_suspend`) → [`dispatch`] (the reput service) → [`store`] (the facade: recovery, put,
//! read, queries, retention, background services, one file each); [`schedule`] parks delayed messages in
//! `SCHEDULE_TOPIC_XXXX` on put and re-puts them when the broker's scheduler says they are due;
//! [`timer`] does the same for RocketMQ 5 timer messages in a time wheel of its own.
//! [`ha`] replicates the CommitLog from a master to its slaves (RocketMQ's HA protocol).
//! [`atomic_file`] replaces the small files rmq persists (config JSON, checkpoints) safely.

pub mod append_window;
pub mod atomic_file;
pub mod checkpoint;
pub mod commit_log;
mod commit_log_scan;
pub mod config;
pub mod consume_queue;
mod consume_queue_table;
pub mod damaged;
pub mod dispatch;
pub mod error;
pub mod flush;
pub mod format;
pub mod ha;
pub mod index_file;
mod index_suspend;
pub mod mapped_file;
pub mod mapped_file_queue;
pub(crate) mod mmap;
pub mod schedule;
pub mod store;
pub mod timer;
pub mod transient_store_pool;

pub use commit_log::AppendResult;
pub use config::{BrokerRole, FlushDiskType, StoreConfig};
pub use consume_queue::QueueId;
pub use error::{Result, StoreError};
pub use format::{CqUnit, DecodedRecord, MessageToStore};
pub use mapped_file::SelectMappedBufferResult;
pub use mapped_file_queue::DeletedFile;
pub use schedule::{DeliverOutcome, SCHEDULE_TOPIC};
pub use store::{
    CleanReport, ConsumeProgress, ConsumeQueueUnits, DeleteReason, GetMessageResult,
    GetMessageStatus, HaRuntimeInfo, MessageStore, PutMessageResult, PutMessageStatus, QueueHold,
    ReplicaWait, RetentionHold,
};
pub use timer::TIMER_TOPIC;
