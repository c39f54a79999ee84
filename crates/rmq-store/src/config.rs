//! Store configuration under RocketMQ's `MessageStoreConfig` key names, so a `broker.conf`
//! written for RocketMQ configures this store unchanged. This file owns the typed fields; their
//! defaults, bounds and error messages are the config schema's (`rmq_common::config_schema`,
//! shared with the broker and the Python control plane): `Default` takes the schema's defaults
//! and [`StoreConfig::set`] checks every value through it.

use rmq_common::config_schema::{self as schema, ConfigValueError};

pub use rmq_common::config_schema::parse_delay_levels;

use crate::error::Result;

/// How CommitLog writes are made durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushDiskType {
    /// A background thread flushes on an interval; a put returns after the append to memory.
    AsyncFlush,
    /// A put returns only after its bytes are on disk (group commit).
    SyncFlush,
}

/// Role of the broker owning the store; a slave refuses puts from clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerRole {
    /// Master that replicates asynchronously.
    AsyncMaster,
    /// Master that acknowledges after the slave has the data.
    SyncMaster,
    /// Replica.
    Slave,
}

macro_rules! store_config {
    ($( $(#[$doc:meta])* $key:literal => $field:ident : $ty:ty; )*) => {
        /// Every store setting, named as in RocketMQ's `MessageStoreConfig`.
        #[derive(Debug, Clone)]
        pub struct StoreConfig {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl Default for StoreConfig {
            /// The schema's defaults (`rmq_common::config_schema`).
            fn default() -> Self {
                Self { $( $field: schema_default($key), )* }
            }
        }

        impl StoreConfig {
            /// The RocketMQ key names this store understands, in a stable order.
            pub const KEYS: &'static [&'static str] = &[$( $key, )*];

            /// Set one key from its string form, checked and bounded by the config schema
            /// (`rmq_common::config_schema`; clamped where RocketMQ clamps).
            ///
            /// # Errors
            /// [`StoreError::ConfigValue`] naming the key, the value and what is allowed, also
            /// for a key this store does not know.
            pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
                match key {
                    $( $key => {
                        let text = check(key, value)?;
                        self.$field = ConfigValue::parse(&text).ok_or_else(|| unknown(key))?;
                        Ok(())
                    } )*
                    _ => Err(unknown(key).into()),
                }
            }

            /// Every key with its current value as a string.
            #[must_use]
            pub fn to_pairs(&self) -> Vec<(&'static str, String)> {
                vec![$( ($key, ConfigValue::render(&self.$field)), )*]
            }
        }
    };
}

/// A store key's value checked by the schema, as canonical text (clamped where RocketMQ
/// clamps).
fn check(key: &str, value: &str) -> std::result::Result<String, ConfigValueError> {
    let spec = schema::broker_key(key).ok_or_else(|| unknown(key))?;
    Ok(spec.check(value)?.text)
}

fn unknown(key: &str) -> ConfigValueError {
    ConfigValueError::UnknownKey {
        key: key.to_owned(),
        table: "store",
    }
}

/// The schema's default of a store key. The schema's own tests check that every default
/// passes its check, and `defaults_match_rocketmq` below that every store key has one.
fn schema_default<T: ConfigValue>(key: &str) -> T {
    schema::broker_key(key)
        .and_then(|k| k.default)
        .and_then(T::parse)
        .unwrap_or_else(|| panic!("the config schema has no valid default for store key {key}"))
}

/// Parsing and rendering of one config value type.
pub trait ConfigValue: Sized {
    /// What a valid value looks like, for error messages.
    const EXPECTED: &'static str;
    /// Parse the string form.
    fn parse(s: &str) -> Option<Self>;
    /// Render as the string form.
    fn render(&self) -> String;
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl ConfigValue for $t {
            const EXPECTED: &'static str = "an integer";
            fn parse(s: &str) -> Option<Self> { s.parse().ok() }
            fn render(&self) -> String { self.to_string() }
        }
    )*};
}
int_value!(i64, u64, usize, u32);

impl ConfigValue for bool {
    const EXPECTED: &'static str = "true or false";
    fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }
    fn render(&self) -> String {
        self.to_string()
    }
}

impl ConfigValue for String {
    const EXPECTED: &'static str = "a string";
    fn parse(s: &str) -> Option<Self> {
        Some(s.to_owned())
    }
    fn render(&self) -> String {
        self.clone()
    }
}

impl ConfigValue for FlushDiskType {
    const EXPECTED: &'static str = "ASYNC_FLUSH or SYNC_FLUSH";
    fn parse(s: &str) -> Option<Self> {
        match s {
            "ASYNC_FLUSH" => Some(Self::AsyncFlush),
            "SYNC_FLUSH" => Some(Self::SyncFlush),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::AsyncFlush => "ASYNC_FLUSH",
            Self::SyncFlush => "SYNC_FLUSH",
        }
        .into()
    }
}

impl ConfigValue for BrokerRole {
    const EXPECTED: &'static str = "ASYNC_MASTER, SYNC_MASTER or SLAVE";
    fn parse(s: &str) -> Option<Self> {
        match s {
            "ASYNC_MASTER" => Some(Self::AsyncMaster),
            "SYNC_MASTER" => Some(Self::SyncMaster),
            "SLAVE" => Some(Self::Slave),
            _ => None,
        }
    }
    fn render(&self) -> String {
        match self {
            Self::AsyncMaster => "ASYNC_MASTER",
            Self::SyncMaster => "SYNC_MASTER",
            Self::Slave => "SLAVE",
        }
        .into()
    }
}

store_config! {
    /// Size of one CommitLog file (1 GiB); a record never spans two files.
    "mappedFileSizeCommitLog" => mapped_file_size_commit_log: usize;
    /// Size of one ConsumeQueue file: 300 000 units of 20 bytes; must be a multiple of 20.
    "mappedFileSizeConsumeQueue" => mapped_file_size_consume_queue: usize;
    /// ASYNC_FLUSH or SYNC_FLUSH (group commit).
    "flushDiskType" => flush_disk_type: FlushDiskType;
    /// Role; a SLAVE refuses client puts.
    "brokerRole" => broker_role: BrokerRole;
    /// Async flush period (ms).
    "flushIntervalCommitLog" => flush_interval_commit_log: u32;
    /// Dirty 4 KiB pages needed before an async flush.
    "flushCommitLogLeastPages" => flush_commit_log_least_pages: u32;
    /// Longest gap between two real async flushes (ms).
    "flushCommitLogThoroughInterval" => flush_commit_log_thorough_interval: u32;
    /// Async flush thread sleeps a fixed interval (true) or can be woken by puts (false).
    "flushCommitLogTimed" => flush_commit_log_timed: bool;
    /// Transient-pool commit period (ms).
    "commitIntervalCommitLog" => commit_interval_commit_log: u32;
    /// Dirty pages needed before a pool commit.
    "commitCommitLogLeastPages" => commit_commit_log_least_pages: u32;
    /// Longest gap between two pool commits (ms).
    "commitCommitLogThoroughInterval" => commit_commit_log_thorough_interval: u32;
    /// How long a SYNC_FLUSH put waits for the disk before FLUSH_DISK_TIMEOUT (ms).
    "syncFlushTimeout" => sync_flush_timeout: u32;
    /// ConsumeQueue and checkpoint flush period (ms).
    "flushIntervalConsumeQueue" => flush_interval_consume_queue: u32;
    /// Dirty pages needed before a ConsumeQueue flush.
    "flushConsumeQueueLeastPages" => flush_consume_queue_least_pages: u32;
    /// Longest gap between two real ConsumeQueue flushes (ms).
    "flushConsumeQueueThoroughInterval" => flush_consume_queue_thorough_interval: u32;
    /// Write through mlock'ed off-heap buffers and a commit thread (ASYNC_FLUSH masters only).
    "transientStorePoolEnable" => transient_store_pool_enable: bool;
    /// Number of pool buffers, each one CommitLog file in size.
    "transientStorePoolSize" => transient_store_pool_size: usize;
    /// Refuse a put at once when the pool has no free buffer (instead of waiting).
    "fastFailIfNoBufferInStorePool" => fast_fail_if_no_buffer_in_store_pool: bool;
    /// Pre-fault each new CommitLog file on the allocator thread before it is written. Off by
    /// default, as in RocketMQ: on ext4 with large folios (Linux 6.16+) the appender's own
    /// faults are cheaper than pre-faulting (see benches/RESULTS.md).
    "warmMapedFileEnable" => warm_mapped_file_enable: bool;
    /// Flushed CommitLog bytes always kept in the page cache behind the flush position; older
    /// pages no reader needs go back to the kernel (`store::page_cache`). 0: no trimming.
    "pageCacheTailCommitLog" => page_cache_tail_commit_log: u64;
    /// Largest record accepted (bytes, whole record).
    "maxMessageSize" => max_message_size: usize;
    /// Hours a CommitLog file is kept after its last write.
    "fileReservedTime" => file_reserved_time: u32;
    /// Hours of the day (`04`, `04;16`) at which expired files are deleted (used by the scheduler).
    "deleteWhen" => delete_when: String;
    /// Disk usage (%) above which expired files are deleted at once.
    "diskMaxUsedSpaceRatio" => disk_max_used_space_ratio: u32;
    /// Disk usage (%) above which even unexpired files are deleted, oldest first.
    "diskSpaceCleanForciblyRatio" => disk_space_clean_forcibly_ratio: u32;
    /// Disk usage (%) above which writes are refused.
    "diskSpaceWarningLevelRatio" => disk_space_warning_level_ratio: u32;
    /// Period of the disk check and space-driven cleanup (ms).
    "cleanResourceInterval" => clean_resource_interval: u32;
    /// Pause between two CommitLog file deletions (ms).
    "deleteCommitLogFilesInterval" => delete_commit_log_files_interval: u32;
    /// How long a file still being read may delay its deletion (ms).
    "destroyMapedFileIntervalForcibly" => destroy_mapped_file_interval_forcibly: u32;
    /// Delete even unexpired files when the disk is over diskSpaceCleanForciblyRatio.
    "cleanFileForciblyEnable" => clean_file_forcibly_enable: bool;
    /// Let forced deletion delete unconsumed messages, pending timers and undelivered
    /// delay-level messages, as RocketMQ does (off: the retention floor keeps them).
    "cleanUnconsumedFileForciblyEnable" => clean_unconsumed_file_forcibly_enable: bool;
    /// Verify body CRCs during recovery.
    "checkCRCOnRecover" => check_crc_on_recover: bool;
    /// Build the IndexFile (query by key).
    "messageIndexEnable" => message_index_enable: bool;
    /// Hash slots per IndexFile.
    "maxHashSlotNum" => max_hash_slot_num: u32;
    /// Index entries per IndexFile.
    "maxIndexNum" => max_index_num: u32;
    /// Most messages returned by one key query.
    "defaultQueryMaxNum" => default_query_max_num: u32;
    /// Pull batch byte cap while the data is in memory.
    "maxTransferBytesOnMessageInMemory" => max_transfer_bytes_on_message_in_memory: usize;
    /// Pull batch count cap while the data is in memory.
    "maxTransferCountOnMessageInMemory" => max_transfer_count_on_message_in_memory: usize;
    /// Pull batch byte cap when the data is cold (on disk).
    "maxTransferBytesOnMessageInDisk" => max_transfer_bytes_on_message_in_disk: usize;
    /// Pull batch count cap when the data is cold.
    "maxTransferCountOnMessageInDisk" => max_transfer_count_on_message_in_disk: usize;
    /// Percent of RAM, counted back from the CommitLog tail, that counts as "in memory".
    "accessMessageInMemoryMaxRatio" => access_message_in_memory_max_ratio: u32;
    /// Delay levels for SCHEDULE_TOPIC_XXXX (delivery time is stored as the tags code).
    "messageDelayLevel" => message_delay_level: String;
    /// A put lock held longer than this (ms) makes puts fail with OS_PAGECACHE_BUSY.
    "osPageCacheBusyTimeOutMills" => os_page_cache_busy_timeout_mills: u32;
    /// Timer messages (TIMER_DELIVER_MS / TIMER_DELAY_SEC / TIMER_DELAY_MS) are accepted and
    /// delivered on time; when false they are refused (WHEEL_TIMER_NOT_ENABLE).
    "timerWheelEnable" => timer_wheel_enable: bool;
    /// Longest delay a timer message may ask for (s); the time wheel has twice as many slots.
    "timerMaxDelaySec" => timer_max_delay_sec: i64;
    /// Granularity of timer messages (ms). Only 1000 (RocketMQ's default) is supported.
    "timerPrecisionMs" => timer_precision_ms: u32;
    /// A master's HA port (0: any free port).
    "haListenPort" => ha_listen_port: u32;
    /// A slave's master HA address, host:port (empty: none yet).
    "haMasterAddress" => ha_master_address: String;
    /// Idle interval before a heartbeat on the HA channel (ms).
    "haSendHeartbeatInterval" => ha_send_heartbeat_interval: u32;
    /// Silence after which an HA connection is dropped (ms).
    "haHousekeepingInterval" => ha_housekeeping_interval: u32;
    /// Largest replication frame body (bytes).
    "haTransferBatchSize" => ha_transfer_batch_size: usize;
    /// Lag (bytes) beyond which a slave does not count for SYNC_MASTER.
    "haMaxGapNotInSync" => ha_max_gap_not_in_sync: i64;
}

impl StoreConfig {
    /// Build from `(key, value)` pairs over the defaults.
    ///
    /// # Errors
    /// The first key whose value is refused.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        let mut c = Self::default();
        for (k, v) in pairs {
            c.set(k, v)?;
        }
        Ok(c)
    }

    /// Whether the transient store pool is in effect: enabled, ASYNC_FLUSH, not a slave.
    #[must_use]
    pub fn is_transient_store_pool_enable(&self) -> bool {
        self.transient_store_pool_enable
            && self.flush_disk_type == FlushDiskType::AsyncFlush
            && self.broker_role != BrokerRole::Slave
    }

    /// Delay level table in milliseconds (level 1 is index 0).
    #[must_use]
    pub fn delay_levels_ms(&self) -> Vec<i64> {
        parse_delay_levels(&self.message_delay_level).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_rocketmq() {
        let c = StoreConfig::default();
        assert_eq!(c.mapped_file_size_commit_log, 1_073_741_824);
        assert_eq!(c.mapped_file_size_consume_queue, 6_000_000);
        assert_eq!(c.flush_disk_type, FlushDiskType::AsyncFlush);
        assert_eq!(c.sync_flush_timeout, 5000);
        assert_eq!(c.max_message_size, 4_194_304);
        assert_eq!(c.delay_levels_ms().len(), 18);
        assert_eq!(c.delay_levels_ms()[17], 7_200_000);
    }

    #[test]
    fn set_validates_and_names_the_key() {
        let mut c = StoreConfig::default();
        c.set("flushDiskType", "SYNC_FLUSH").unwrap();
        assert_eq!(c.flush_disk_type, FlushDiskType::SyncFlush);
        let e = c.set("flushDiskType", "FAST").unwrap_err().to_string();
        assert!(
            e.contains("flushDiskType") && e.contains("ASYNC_FLUSH or SYNC_FLUSH"),
            "{e}"
        );
        let e = c
            .set("mappedFileSizeConsumeQueue", "1001")
            .unwrap_err()
            .to_string();
        assert!(e.contains("multiple of 20"), "{e}");
        // RocketMQ clamps diskMaxUsedSpaceRatio into 10..=95; 0..=100 is accepted.
        c.set("diskMaxUsedSpaceRatio", "99").unwrap();
        assert_eq!(c.disk_max_used_space_ratio, 95);
        let e = c
            .set("diskMaxUsedSpaceRatio", "101")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "store config: diskMaxUsedSpaceRatio = '101' is not allowed; use an integer from 0 \
             to 100 (percent)"
        );
        c.set("fileReservedTime", "0").unwrap();
        let e = c.set("nope", "1").unwrap_err().to_string();
        assert!(e.contains("not a store key"), "{e}");
        let e = c.set("messageDelayLevel", "1s 5x").unwrap_err().to_string();
        assert!(
            e.contains("messageDelayLevel") && e.contains("level 2 ('5x')"),
            "{e}"
        );
        for bad in [
            "",
            "  ",
            "0s",
            "-1s",
            "1.5s",
            "s",
            "1S",
            "1s,2s",
            "99999999999999999d",
        ] {
            assert!(c.set("messageDelayLevel", bad).is_err(), "{bad:?} accepted");
        }
        c.set("messageDelayLevel", " 1s  2m 3h 1d ").unwrap();
        assert_eq!(
            c.delay_levels_ms(),
            [1_000, 120_000, 10_800_000, 86_400_000]
        );
        assert!(c.set("deleteWhen", "04;25").is_err());
        let e = c.set("brokerClusterName", "x").unwrap_err().to_string();
        assert!(e.contains("not a store key"), "{e}");
        c.set("deleteWhen", "04;16").unwrap();
    }

    #[test]
    fn every_store_key_is_in_the_schema_with_a_default() {
        for key in StoreConfig::KEYS {
            let spec = schema::broker_key(key).unwrap_or_else(|| panic!("{key} not in schema"));
            assert!(spec.default.is_some(), "{key}");
        }
    }

    #[test]
    fn pairs_round_trip() {
        let c = StoreConfig::default();
        let pairs = c.to_pairs();
        assert_eq!(pairs.len(), StoreConfig::KEYS.len());
        let again = StoreConfig::from_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str()))).unwrap();
        assert_eq!(again.to_pairs(), pairs);
    }
}
