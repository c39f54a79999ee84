//! Errors of the storage engine. Wire response codes are not discriminants here: the broker
//! maps a `StoreError` to a response code in one function, and the Python binding maps it to
//! one class of `rmq.errors`.

use std::io;
use std::path::PathBuf;

/// Result alias of this crate.
pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Everything that can go wrong in the store.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        /// What the store was doing.
        context: String,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A file does not hold what the format says it must.
    #[error("corrupt store file {file}: {reason} (at offset {offset})")]
    Corruption {
        /// The file.
        file: PathBuf,
        /// Byte offset within the file.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// A configuration key has a value outside its allowed set.
    #[error("store config: {key} = {value:?} is not allowed; {allowed}")]
    Config {
        /// RocketMQ key name.
        key: String,
        /// The rejected value.
        value: String,
        /// What is allowed.
        allowed: String,
    },
    /// A config value the config schema refuses (`rmq_common::config_schema`).
    #[error("store config: {0}")]
    ConfigValue(#[from] rmq_common::config_schema::ConfigValueError),
    /// The message cannot be stored as it is (RocketMQ MESSAGE_ILLEGAL).
    #[error("message illegal: {0}")]
    MessageIllegal(String),
    /// The properties string is longer than 32767 bytes (PROPERTIES_SIZE_EXCEEDED).
    #[error("message illegal: properties are {0} bytes encoded, the limit is 32767")]
    PropertiesSizeExceeded(usize),
    /// A timer message asks for a delivery time too far away, or its timer property is not a
    /// number (RocketMQ's WHEEL_TIMER_MSG_ILLEGAL; the text is RocketMQ's remark).
    #[error(
        "timer message illegal, the delay time should not be bigger than the max delay {max_delay_ms}ms; \
         or if set del msg, the delay time should be bigger than the current time"
    )]
    WheelTimerMsgIllegal {
        /// `timerMaxDelaySec` in milliseconds.
        max_delay_ms: i64,
    },
    /// A timer message arrived while `timerWheelEnable` is false (WHEEL_TIMER_NOT_ENABLE).
    #[error("accurate timer message is not enabled, timerWheelEnable is false")]
    WheelTimerNotEnable,
    /// The store refuses writes now: disk full, shut down, or a slave (SERVICE_NOT_AVAILABLE).
    #[error("service not available: {0}")]
    ServiceNotAvailable(String),
    /// A new CommitLog file could not be created (CREATE_MAPPED_FILE_FAILED).
    #[error("could not create mapped file {path}: {source}")]
    CreateMappedFileFailed {
        /// The file that was being created.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// The put lock has been held too long (OS_PAGECACHE_BUSY).
    #[error("os page cache busy: the commit log lock has been held for {0} ms")]
    OsPageCacheBusy(i64),
    /// The transient store pool has no free buffer and fastFailIfNoBufferInStorePool is set.
    #[error("transient store pool has no free buffer; the commit thread is behind")]
    NoBufferInStorePool,
    /// A flush to disk failed; the affected messages were not acknowledged.
    #[error("flush to disk failed: {0}")]
    FlushFailed(String),
    /// Another process holds the store directory.
    #[error(
        "store directory {0} is locked by another process; stop it or use another storePathRootDir"
    )]
    Locked(PathBuf),
    /// Replicated bytes that do not continue this CommitLog (a slave's append).
    #[error(
        "replicated data at CommitLog offset {offset} does not fit this store, whose CommitLog \
         ends at {max}: {why}"
    )]
    HaOffsetMismatch {
        /// Where the data was to go.
        offset: i64,
        /// Where this CommitLog ends.
        max: i64,
        /// What is wrong.
        why: String,
    },
    /// A request the store's role or state does not allow (HA and truncation calls).
    #[error("{0}")]
    IllegalState(String),
}

impl StoreError {
    /// Wrap an I/O error with what the store was doing.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            source,
        }
    }
}

/// Attach context to `io::Result`s.
pub(crate) trait IoContext<T> {
    /// Map the error to [`StoreError::Io`] with a context computed lazily.
    fn ctx<F: FnOnce() -> String>(self, f: F) -> Result<T>;
}

impl<T> IoContext<T> for io::Result<T> {
    fn ctx<F: FnOnce() -> String>(self, f: F) -> Result<T> {
        self.map_err(|e| StoreError::io(f(), e))
    }
}
