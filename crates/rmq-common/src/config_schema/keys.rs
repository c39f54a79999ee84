//! The key tables: every `broker.conf` key rmq knows (store, broker, control plane and the
//! RocketMQ keys accepted without effect) and every `namesrv.conf` key. Defaults are
//! RocketMQ 4.9.7's.

use super::values::DEFAULT_DELAY_LEVELS;
use super::{ConfigKey as K, Owner, ValueKind};
use crate::topic::TRACE_TOPIC;

use Owner::{Broker, ControlPlane, Namesrv, Store, Unused};

const fn int(min: i64, max: i64) -> ValueKind {
    ValueKind::Int { min, max }
}
const BOOL: ValueKind = ValueKind::Bool;
const ANY_INT: ValueKind = ValueKind::Int {
    min: i64::MIN,
    max: i64::MAX,
};
const UNCHECKED: ValueKind = ValueKind::Text;
const GIB: i64 = 1 << 30;
const MIB: i64 = 1 << 20;
const MAX_HOURS: i64 = 24 * 365 * 100;
const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
const MS: &str = " (milliseconds)";
const TLS_MODE: ValueKind = ValueKind::OneOf(&["disabled", "permissive", "enforcing"]);
const TLS_CLIENT_AUTH: ValueKind = ValueKind::OneOf(&["none", "optional", "require"]);

/// Every `broker.conf` key.
#[rustfmt::skip]
pub static BROKER_KEYS: &[K] = &[
    // ---- identity and addresses (control plane) -----------------------------------------
    K::new("brokerClusterName", ValueKind::Name, Some("DefaultCluster"), ControlPlane,
        "The cluster this broker registers under."),
    K::new("brokerName", ValueKind::Name, None, ControlPlane,
        "Shared by a master and its slaves (default: the host name)."),
    K::new("brokerId", int(0, i64::MAX), Some("0"), ControlPlane,
        "0 for a master, >= 1 for a slave.").hint(" (0 is the master)").runtime(),
    K::new("brokerIP1", ValueKind::Ip, None, ControlPlane,
        "The address clients and message ids use (default: the first non-loopback IPv4 \
         address)."),
    K::new("listenPort", int(1, 65_535), Some("10911"), ControlPlane,
        "The remoting port; the HA port is listenPort + 1."),
    K::new("namesrvAddr", ValueKind::HostPortList, Some(""), ControlPlane,
        "host:port;host:port of the nameservers; empty runs an embedded nameserver."),
    K::new("storePathRootDir", ValueKind::Path, Some("~/store"), ControlPlane,
        "The store root (~ expanded, made absolute)."),
    K::new("innerAccessKey", UNCHECKED, Some(""), ControlPlane,
        "ACL account the broker signs its own requests with (nameserver registration, a \
         slave's copy from its master); empty: unsigned. RocketMQ 5's name."),
    K::new("innerSecretKey", UNCHECKED, Some(""), ControlPlane,
        "The secret key of innerAccessKey; shown as ****** by GET_BROKER_CONFIG, \
         --print-config and logs."),
    K::new("brokerAddr", ValueKind::SocketAddr, None, Broker,
        "brokerIP1:listenPort as the Rust server is told it (not a RocketMQ key: the control \
         plane sets it)."),
    // ---- control plane schedules ---------------------------------------------------------
    K::new("deleteWhen", ValueKind::DeleteWhen, Some("04"), ControlPlane,
        "Hours of day (;-separated, local time) to delete expired files.").runtime(),
    K::new("registerNameServerPeriod", int(0, i64::MAX), Some("30000"), ControlPlane,
        "ms between registrations (clamped to 10 000-60 000, as RocketMQ does).")
        .clamp(10_000, 60_000).hint(MS).runtime(),
    K::new("flushDelayOffsetInterval", int(100, HOUR_MS), Some("10000"), ControlPlane,
        "ms between fsynced writes of config/delayOffset.json.").hint(MS),
    K::new("transactionTimeOut", int(0, DAY_MS), Some("6000"), ControlPlane,
        "ms a half message waits for END_TRANSACTION before the broker asks.").hint(MS),
    K::new("transactionCheckMax", int(1, 1_000_000), Some("15"), ControlPlane,
        "Checks of one half message before it is discarded."),
    K::new("transactionCheckInterval", int(100, DAY_MS), Some("60000"), ControlPlane,
        "ms between two rounds of transaction checks.").hint(MS),
    // ---- the Rust broker server ------------------------------------------------------------
    K::new("autoCreateTopicEnable", BOOL, Some("true"), Broker,
        "Create unknown topics on first send (TBW102 carries the inherit bit)."),
    K::new("autoCreateSubscriptionGroup", BOOL, Some("true"), Broker,
        "Create unknown subscription groups on first use."),
    K::new("defaultTopicQueueNums", int(1, 1024), Some("8"), Broker,
        "Queues of an auto-created topic."),
    K::new("brokerPermission", ValueKind::IntOneOf(&[6, 4, 2]), Some("6"), Broker,
        "6 read+write, 4 read only, 2 write only.")
        .allowed("use 6 (read and write), 4 (read only) or 2 (write only)").runtime(),
    K::new("longPollingEnable", BOOL, Some("true"), Broker,
        "Hold pulls up to the client's suspend timeout."),
    K::new("shortPollingTimeMills", int(0, HOUR_MS), Some("1000"), Broker,
        "Hold time of a pull when long polling is off.").hint(MS),
    K::new("transferMsgByHeap", BOOL, Some("false"), Broker,
        "Copy pull bodies instead of sending them from the mapped file."),
    K::new("slaveReadEnable", BOOL, Some("false"), Broker,
        "Consumers may read from a slave: a pull whose data is cold on the master (beyond \
         accessMessageInMemoryMaxRatio) suggests the group's whichBrokerWhenConsumeSlowly."),
    K::new("regionId", UNCHECKED, Some("DefaultRegion"), Broker,
        "Returned in send responses (MSG_REGION)."),
    K::new("traceOn", BOOL, Some("true"), Broker, "Returned in send responses (TRACE_ON)."),
    K::new("traceTopicEnable", BOOL, Some("false"), Broker,
        "Create the message trace topic (msgTraceTopicName, 1 queue) at start."),
    K::new("msgTraceTopicName", ValueKind::Name, Some(TRACE_TOPIC), Broker,
        "The message trace topic created with traceTopicEnable."),
    K::new("clusterTopicEnable", BOOL, Some("true"), Broker,
        "The cluster-name topic is readable and writable."),
    K::new("brokerTopicEnable", BOOL, Some("true"), Broker,
        "The broker-name topic is readable and writable."),
    K::new("channelExpiredTimeout", int(0, i64::MAX), Some("120000"), Broker,
        "Clients silent this long (ms) are dropped.").hint(MS),
    K::new("rejectTransactionMessage", BOOL, Some("false"), Broker,
        "Refuse half messages (NO_PERMISSION)."),
    K::new("rocketmq.broker.rebalance.lockMaxLiveTime", int(1000, DAY_MS), Some("60000"), Broker,
        "ms a queue lock of an orderly consumer lasts without renewal (a JVM system property \
         in RocketMQ).").hint(MS),
    K::new("serverChannelMaxIdleTimeSeconds", int(0, 86_400), Some("120"), Broker,
        "Seconds without traffic after which a connection is closed (0: never).")
        .hint(" (seconds; 0 keeps idle connections open)"),
    K::new("aclEnable", BOOL, Some("false"), Broker,
        "Check every request against plain_acl.yml (RocketMQ ACL 1.0: AccessKey, Signature, \
         white addresses, topic/group permissions, admin codes)."),
    K::new("aclFilePath", ValueKind::Path, None, Broker,
        "The ACL file (default $ROCKETMQ_HOME/conf/plain_acl.yml); re-read when it changes."),
    // ---- the store ---------------------------------------------------------------------------
    K::new("brokerRole", ValueKind::OneOf(&["ASYNC_MASTER", "SYNC_MASTER", "SLAVE"]),
        Some("ASYNC_MASTER"), Store,
        "How the broker replicates; a SLAVE refuses client puts.").runtime(),
    K::new("flushDiskType", ValueKind::OneOf(&["ASYNC_FLUSH", "SYNC_FLUSH"]),
        Some("ASYNC_FLUSH"), Store, "When a put is acknowledged relative to the disk flush."),
    K::new("haListenPort", int(0, 65_535), Some("10912"), Store,
        "The master's HA port that slaves replicate from (the broker sets listenPort + 1 \
         when broker.conf does not; 0 picks a free port)."),
    K::new("haMasterAddress", UNCHECKED, Some(""), Store,
        "host:port of the master's HA port for a SLAVE (empty: learnt from registration)."),
    K::new("haSendHeartbeatInterval", int(100, HOUR_MS), Some("5000"), Store,
        "ms between a slave's offset reports / a master's empty frames when idle.").hint(MS),
    K::new("haHousekeepingInterval", int(100, HOUR_MS), Some("20000"), Store,
        "ms of silence after which an HA connection is dropped.").hint(MS),
    K::new("haTransferBatchSize", int(1024, 64 * MIB), Some("32768"), Store,
        "Largest replication frame body (bytes)."),
    K::new("haMaxGapNotInSync", ANY_INT, Some("268435456"), Store,
        "Bytes a slave may lag before SYNC_MASTER sends get SLAVE_NOT_AVAILABLE."),
    K::new("fileReservedTime", int(0, MAX_HOURS), Some("72"), Store,
        "Hours a CommitLog file is kept after its last write.")
        .hint(" (hours to keep a file)").runtime(),
    K::new("maxMessageSize", int(1024, 128 * MIB), Some("4194304"), Store,
        "Largest message accepted (bytes, the whole stored record).")
        .hint(" (bytes; a request frame is at most 16 MiB)"),
    K::new("cleanResourceInterval", int(10, HOUR_MS), Some("10000"), Store,
        "ms between expired-file and disk checks.").hint(MS),
    K::new("diskMaxUsedSpaceRatio", int(0, 100), Some("75"), Store,
        "Disk usage (%) above which expired files are deleted at once (clamped to 10-95, as \
         RocketMQ does).").clamp(10, 95).hint(" (percent)").runtime(),
    K::new("messageDelayLevel", ValueKind::DelayLevels, Some(DEFAULT_DELAY_LEVELS), Store,
        "The delay of each level (1 first), blank-separated."),
    K::new("mappedFileSizeCommitLog", int(64 * 1024, 2 * GIB), Some("1073741824"), Store,
        "Size of one CommitLog file; a record never spans two files."),
    K::new("mappedFileSizeConsumeQueue",
        ValueKind::IntMultipleOf { min: 20 * 16, max: GIB, of: 20 }, Some("6000000"), Store,
        "Size of one ConsumeQueue file (300 000 units of 20 bytes)."),
    K::new("flushIntervalCommitLog", int(1, 60_000), Some("500"), Store,
        "Async flush period.").hint(MS),
    K::new("flushCommitLogLeastPages", int(0, 1 << 20), Some("4"), Store,
        "Dirty 4 KiB pages needed before an async flush."),
    K::new("flushCommitLogThoroughInterval", int(0, HOUR_MS), Some("10000"), Store,
        "Longest gap between two real async flushes.").hint(MS),
    K::new("flushCommitLogTimed", BOOL, Some("false"), Store,
        "The async flush thread sleeps a fixed interval (true) or can be woken by puts."),
    K::new("commitIntervalCommitLog", int(1, 60_000), Some("200"), Store,
        "Transient-pool commit period.").hint(MS),
    K::new("commitCommitLogLeastPages", int(0, 1 << 20), Some("4"), Store,
        "Dirty pages needed before a pool commit."),
    K::new("commitCommitLogThoroughInterval", int(0, HOUR_MS), Some("200"), Store,
        "Longest gap between two pool commits.").hint(MS),
    K::new("syncFlushTimeout", int(1, 600_000), Some("5000"), Store,
        "How long a SYNC_FLUSH put waits for the disk before FLUSH_DISK_TIMEOUT.").hint(MS),
    K::new("flushIntervalConsumeQueue", int(1, 60_000), Some("1000"), Store,
        "ConsumeQueue and checkpoint flush period.").hint(MS),
    K::new("flushConsumeQueueLeastPages", int(0, 1 << 20), Some("2"), Store,
        "Dirty pages needed before a ConsumeQueue flush."),
    K::new("flushConsumeQueueThoroughInterval", int(0, HOUR_MS), Some("60000"), Store,
        "Longest gap between two real ConsumeQueue flushes.").hint(MS),
    K::new("transientStorePoolEnable", BOOL, Some("false"), Store,
        "Write through mlock'ed off-heap buffers and a commit thread (ASYNC_FLUSH masters)."),
    K::new("transientStorePoolSize", int(1, 64), Some("5"), Store,
        "Number of pool buffers, each one CommitLog file in size."),
    K::new("fastFailIfNoBufferInStorePool", BOOL, Some("false"), Store,
        "Refuse a put at once when the pool has no free buffer."),
    K::new("warmMapedFileEnable", BOOL, Some("false"), Store,
        "Allocate every block of each new CommitLog file (zero-filled under SYNC_FLUSH) and \
         pre-fault it; otherwise files are sparse, blocks reserved as they are written."),
    K::new("pageCacheTailCommitLog", int(0, i64::MAX), Some("8388608"), Store,
        "Flushed CommitLog bytes always kept in the page cache behind the flush position (not \
         a RocketMQ key). Older pages that neither dispatch nor any subscription group still \
         has to read go back to the kernel, at most accessMessageInMemoryMaxRatio of RAM \
         behind the end is kept, and appends reuse the pages given back instead of fresh \
         memory. 0 leaves the page cache to the kernel, as RocketMQ does.")
        .hint(" (bytes; 0 = no trimming)"),
    K::new("diskSpaceCleanForciblyRatio", int(10, 99), Some("85"), Store,
        "Disk usage (%) above which even unexpired files are deleted, oldest first.")
        .hint(" (percent)"),
    K::new("diskSpaceWarningLevelRatio", int(10, 99), Some("90"), Store,
        "Disk usage (%) above which writes are refused.").hint(" (percent)"),
    K::new("deleteCommitLogFilesInterval", int(0, 60_000), Some("100"), Store,
        "Pause between two CommitLog file deletions.").hint(MS),
    K::new("destroyMapedFileIntervalForcibly", int(0, HOUR_MS), Some("120000"), Store,
        "How long a file still being read may delay its deletion.").hint(MS),
    K::new("cleanFileForciblyEnable", BOOL, Some("true"), Store,
        "Delete even unexpired files when the disk is over diskSpaceCleanForciblyRatio."),
    K::new("cleanUnconsumedFileForciblyEnable", BOOL, Some("false"), Store,
        "Let forced deletion (disk over diskSpaceCleanForciblyRatio) delete messages that a \
         subscription group has not consumed, or that are still waiting as timer or delay-level \
         messages, as RocketMQ does. Off: they are kept, and writes are refused at \
         diskSpaceWarningLevelRatio until space is freed."),
    K::new("checkCRCOnRecover", BOOL, Some("true"), Store, "Verify body CRCs during recovery."),
    K::new("messageIndexEnable", BOOL, Some("true"), Store, "Build the IndexFile (query by key)."),
    K::new("maxHashSlotNum", int(16, 50_000_000), Some("5000000"), Store,
        "Hash slots per IndexFile."),
    K::new("maxIndexNum", int(16, 100_000_000), Some("20000000"), Store,
        "Index entries per IndexFile."),
    K::new("defaultQueryMaxNum", int(1, 65_536), Some("32"), Store,
        "Most messages returned by one key query."),
    K::new("maxTransferBytesOnMessageInMemory", int(1, GIB), Some("262144"), Store,
        "Pull batch byte cap while the data is in memory."),
    K::new("maxTransferCountOnMessageInMemory", int(1, 1 << 20), Some("32"), Store,
        "Pull batch count cap while the data is in memory."),
    K::new("maxTransferBytesOnMessageInDisk", int(1, GIB), Some("65536"), Store,
        "Pull batch byte cap when the data is cold."),
    K::new("maxTransferCountOnMessageInDisk", int(1, 1 << 20), Some("8"), Store,
        "Pull batch count cap when the data is cold."),
    K::new("accessMessageInMemoryMaxRatio", int(0, 100), Some("40"), Store,
        "Percent of RAM, counted back from the CommitLog tail, that counts as in memory.")
        .hint(" (percent)"),
    K::new("osPageCacheBusyTimeOutMills", int(100, 100_000), Some("1000"), Store,
        "A put lock held longer than this makes puts fail with OS_PAGECACHE_BUSY.").hint(MS),
    K::new("timerWheelEnable", BOOL, Some("true"), Store,
        "Timer messages are accepted and delivered on time; when false they are refused."),
    K::new("timerMaxDelaySec", int(1, 30 * 86_400), Some("259200"), Store,
        "Longest delay a timer message may ask for (s)."),
    K::new("timerPrecisionMs", ValueKind::IntOneOf(&[1000]), Some("1000"), Store,
        "Granularity of timer messages (ms); only RocketMQ's default is supported.")
        .allowed("only 1000 (one-second slots, RocketMQ's default) is supported; remove the key \
                  or set it to 1000"),
    // ---- metrics (RocketMQ 5's names; rmq_broker::metrics, rmq.metrics_http) --------------
    K::new("metricsExporterType", ValueKind::OneOf(&["NONE", "DISABLE", "PROM"]), Some("NONE"),
        Broker,
        "PROM serves Prometheus metrics on metricsPromExporterHost:metricsPromExporterPort \
         (GET /metrics); NONE or DISABLE (RocketMQ 5's name) serves none and counts nothing."),
    K::new("metricsPromExporterHost", ValueKind::Ip, Some("0.0.0.0"), ControlPlane,
        "The address the Prometheus exporter listens on."),
    K::new("metricsPromExporterPort", int(0, 65_535), Some("5557"), ControlPlane,
        "The Prometheus exporter's port (0: any free port, logged at start)."),
    // ---- TLS (rmq_remoting::tls; RocketMQ's TlsSystemConfig names) -------------------------
    K::new("tls.server.mode", TLS_MODE, Some("disabled"), Broker,
        "TLS on the remoting port, its VIP port (listenPort - 2) and the HA port: disabled, \
         permissive (TLS and plain on one port) or enforcing (TLS only)."),
    K::new("tls.server.certPath", UNCHECKED, Some(""), Broker,
        "PEM certificate chain of the server (needed unless tls.server.mode = disabled)."),
    K::new("tls.server.keyPath", UNCHECKED, Some(""), Broker,
        "PEM private key of tls.server.certPath (PKCS#8, PKCS#1 or SEC1)."),
    K::new("tls.server.keyPassword", UNCHECKED, Some(""), Broker,
        "Password of tls.server.keyPath when it is an encrypted PKCS#8 key."),
    K::new("tls.server.need.client.auth", TLS_CLIENT_AUTH, Some("none"), Broker,
        "Mutual TLS: none, optional or require a client certificate signed by \
         tls.server.trustCertPath."),
    K::new("tls.server.authClient", BOOL, Some("false"), Broker,
        "true = tls.server.need.client.auth require."),
    K::new("tls.server.trustCertPath", UNCHECKED, Some(""), Broker,
        "PEM file of the CAs that sign client certificates (mutual TLS)."),
    K::new("tls.enable", BOOL, Some("false"), ControlPlane,
        "The broker's own connections (nameserver registration, slave sync, HA) use TLS."),
    K::new("tls.client.trustCertPath", UNCHECKED, Some(""), ControlPlane,
        "PEM file of the CAs that sign the servers' certificates (set: servers are verified)."),
    K::new("tls.client.certPath", UNCHECKED, Some(""), ControlPlane,
        "PEM certificate the broker presents to servers that require one (mutual TLS)."),
    K::new("tls.client.keyPath", UNCHECKED, Some(""), ControlPlane,
        "PEM private key of tls.client.certPath."),
    K::new("tls.client.keyPassword", UNCHECKED, Some(""), ControlPlane,
        "Password of tls.client.keyPath when it is an encrypted PKCS#8 key."),
    K::new("tls.client.authServer", BOOL, Some("false"), ControlPlane,
        "Verify the servers' certificates (needs tls.client.trustCertPath)."),
    K::new("tls.test.mode.enable", BOOL, Some("false"), ControlPlane,
        "Trust any server certificate (RocketMQ's test mode; its default there is true)."),
    // ---- RocketMQ keys accepted without effect ---------------------------------------------
    K::new("brokerIP2", UNCHECKED, None, Unused, "HA address: read once replication lands."),
    K::new("sendMessageThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("pullMessageThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("queryMessageThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("adminBrokerThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("clientManageThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("consumerManageThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("heartbeatThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("endTransactionThreadPoolNums", UNCHECKED, None, Unused, "A Java thread pool."),
    K::new("sendThreadPoolQueueCapacity", UNCHECKED, None, Unused, "A Java queue."),
    K::new("pullThreadPoolQueueCapacity", UNCHECKED, None, Unused, "A Java queue."),
    K::new("queryThreadPoolQueueCapacity", UNCHECKED, None, Unused, "A Java queue."),
    K::new("serverWorkerThreads", UNCHECKED, None, Unused, "A Netty thread count."),
    K::new("serverSelectorThreads", UNCHECKED, None, Unused, "A Netty thread count."),
    K::new("serverCallbackExecutorThreads", UNCHECKED, None, Unused, "A Netty thread count."),
    K::new("useEpollNativeSelector", UNCHECKED, None, Unused, "A Netty option."),
    K::new("rocketmqHome", UNCHECKED, None, Unused, "Where the Java broker finds its files."),
];

/// Every `namesrv.conf` key (RocketMQ's `NamesrvConfig` and `NettyServerConfig`). rmq's
/// nameserver acts on `listenPort`, `tls.server.*`, `aclEnable`, `aclFilePath` and the
/// `metrics*` keys; the others are kept and reported back.
#[rustfmt::skip]
pub static NAMESRV_KEYS: &[K] = &[
    K::new("listenPort", int(0, 65_535), Some("9876"), Namesrv,
        "The port the nameserver listens on (0: any free port)."),
    K::new("kvConfigPath", ValueKind::Path, None, Namesrv, "RocketMQ's KV config file."),
    K::new("configStorePath", ValueKind::Path, None, Namesrv, "RocketMQ's config file."),
    K::new("orderMessageEnable", BOOL, Some("false"), Namesrv, "Kept and reported.").runtime(),
    K::new("clusterTest", BOOL, Some("false"), Namesrv, "Kept and reported.").runtime(),
    K::new("serverPooledByteBufAllocatorEnable", BOOL, Some("true"), Namesrv,
        "Kept and reported.").runtime(),
    K::new("useEpollNativeSelector", BOOL, Some("false"), Namesrv, "Kept and reported.")
        .runtime(),
    K::new("serverWorkerThreads", ANY_INT, Some("8"), Namesrv, "Kept and reported.").runtime(),
    K::new("serverCallbackExecutorThreads", ANY_INT, Some("0"), Namesrv, "Kept and reported.")
        .runtime(),
    K::new("serverSelectorThreads", ANY_INT, Some("3"), Namesrv, "Kept and reported.").runtime(),
    K::new("serverOnewaySemaphoreValue", ANY_INT, Some("256"), Namesrv, "Kept and reported.")
        .runtime(),
    K::new("serverAsyncSemaphoreValue", ANY_INT, Some("64"), Namesrv, "Kept and reported.")
        .runtime(),
    K::new("serverChannelMaxIdleTimeSeconds", ANY_INT, Some("120"), Namesrv,
        "Kept and reported.").runtime(),
    K::new("serverSocketSndBufSize", ANY_INT, Some("65535"), Namesrv, "Kept and reported.")
        .runtime(),
    K::new("serverSocketRcvBufSize", ANY_INT, Some("65535"), Namesrv, "Kept and reported.")
        .runtime(),
    K::new("rocketmqHome", UNCHECKED, None, Namesrv, "Kept and reported.").runtime(),
    K::new("productEnvName", UNCHECKED, Some("center"), Namesrv, "Kept and reported.").runtime(),
    K::new("tls.server.mode", TLS_MODE, Some("disabled"), Namesrv,
        "TLS on the nameserver port: disabled, permissive (TLS and plain) or enforcing."),
    K::new("tls.server.certPath", UNCHECKED, Some(""), Namesrv, "PEM certificate chain."),
    K::new("tls.server.keyPath", UNCHECKED, Some(""), Namesrv, "PEM private key."),
    K::new("tls.server.keyPassword", UNCHECKED, Some(""), Namesrv,
        "Password of tls.server.keyPath when it is an encrypted PKCS#8 key."),
    K::new("tls.server.need.client.auth", TLS_CLIENT_AUTH, Some("none"), Namesrv,
        "Mutual TLS: none, optional or require a client certificate."),
    K::new("tls.server.authClient", BOOL, Some("false"), Namesrv,
        "true = tls.server.need.client.auth require."),
    K::new("tls.server.trustCertPath", UNCHECKED, Some(""), Namesrv,
        "PEM file of the CAs that sign client certificates (mutual TLS)."),
    K::new("metricsExporterType", ValueKind::OneOf(&["NONE", "DISABLE", "PROM"]), Some("NONE"),
        Namesrv, "PROM serves Prometheus metrics (RPC latencies, route table sizes, process \
         figures) on metricsPromExporterHost:metricsPromExporterPort (GET /metrics)."),
    K::new("metricsPromExporterHost", ValueKind::Ip, Some("0.0.0.0"), Namesrv,
        "The address the nameserver's Prometheus exporter listens on."),
    K::new("metricsPromExporterPort", int(0, 65_535), Some("5557"), Namesrv,
        "The nameserver's Prometheus exporter port (0: any free port, logged at start; a \
         broker on the same machine needs another)."),
    K::new("aclEnable", BOOL, Some("false"), Namesrv,
        "Check every request against plain_acl.yml: registrations, permission changes and KV \
         writes need an admin account, other requests a known one."),
    K::new("aclFilePath", ValueKind::Path, None, Namesrv,
        "The ACL file (default $ROCKETMQ_HOME/conf/plain_acl.yml); re-read when it changes."),
];
