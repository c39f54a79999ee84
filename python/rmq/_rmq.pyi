"""Type stubs for the native module ``rmq._rmq`` (built from crates/rmq-py).

The native module owns bytes and files; everything here releases the GIL while it does I/O.
Errors are raised as classes of :mod:`rmq.errors` (the one exception tree).
"""

import os
from collections.abc import Callable, Mapping, Sequence
from enum import IntEnum
from typing import Final, final

from rmq.client.message_queue import MessageQueue

__version__: str
MAX_QUEUE_NUMS: int
"""Most read or write queues of one topic on one broker (``rmq_protocol::body``)."""
__all__ = [
    "AUTO_CREATE_TOPIC_KEY_TOPIC",
    "BENCHMARK_TOPIC",
    "CID_SYS_RMQ_TRANS",
    "DLQ_GROUP_TOPIC_PREFIX",
    "MAX_QUEUE_NUMS",
    "OFFSET_MOVED_EVENT",
    "PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS",
    "PROPERTY_CLUSTER",
    "PROPERTY_CONSUME_START_TIMESTAMP",
    "PROPERTY_DELAY_TIME_LEVEL",
    "PROPERTY_KEYS",
    "PROPERTY_MAX_OFFSET",
    "PROPERTY_MAX_RECONSUME_TIMES",
    "PROPERTY_MIN_OFFSET",
    "PROPERTY_MSG_REGION",
    "PROPERTY_ORIGIN_MESSAGE_ID",
    "PROPERTY_PRODUCER_GROUP",
    "PROPERTY_REAL_QUEUE_ID",
    "PROPERTY_REAL_TOPIC",
    "PROPERTY_RECONSUME_TIME",
    "PROPERTY_RETRY_TOPIC",
    "PROPERTY_SHARDING_KEY",
    "PROPERTY_TAGS",
    "PROPERTY_TIMER_DELAY_MS",
    "PROPERTY_TIMER_DELAY_SEC",
    "PROPERTY_TIMER_DELIVER_MS",
    "PROPERTY_TIMER_DEQUEUE_MS",
    "PROPERTY_TIMER_ENQUEUE_MS",
    "PROPERTY_TIMER_OUT_MS",
    "PROPERTY_TRACE_SWITCH",
    "PROPERTY_TRANSACTION_CHECK_TIMES",
    "PROPERTY_TRANSACTION_PREPARED",
    "PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET",
    "PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX",
    "PROPERTY_WAIT_STORE_MSG_OK",
    "RETRY_GROUP_TOPIC_PREFIX",
    "SCHEDULE_TOPIC",
    "SCHEDULE_TOPIC_V2",
    "SELF_TEST_TOPIC",
    "TIMER_TOPIC",
    "TRACE_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "TRANS_HALF_TOPIC",
    "TRANS_OP_HALF_TOPIC",
    "TRANS_OP_REMOVE_TAG",
    "BrokerCallReply",
    "BrokerServer",
    "ClientInstance",
    "CommitLogCleanReport",
    "ConfigKey",
    "ConsumeQueueUnits",
    "DeliverResult",
    "GetMessageResult",
    "MessageStore",
    "NativeProducer",
    "PullResult",
    "PulledColumns",
    "PutMessageResult",
    "RemotingClient",
    "RemotingRequest",
    "RemotingResponse",
    "RemotingServer",
    "RequestCode",
    "ResponseCode",
    "SendResult",
    "StoredMessage",
    "__version__",
    "_run_callbacks",
    "_stop_callbacks",
    "broker_metrics_text",
    "check_config_value",
    "cluster_info_json",
    "config_schema",
    "consume_message_directly_result",
    "create_offset_msg_id",
    "decode_messages",
    "decode_offset_msg_id",
    "decode_trans_op",
    "decode_uniq_id",
    "decompress_body",
    "fastjson_to_json",
    "java_string_hash",
    "namesrv_metrics_text",
    "parse_delay_levels",
    "parse_delete_when",
    "reset_logging_cache",
    "set_log_level",
    "store_config_defaults",
    "topic_list_json",
    "topic_route_data_json",
    "validate_topic_name",
    "write_file_atomic",
]

# Names owned by the Rust crates (crates/rmq-py/src/names.rs): system topics and prefixes
# (rmq_common::topic), message property keys (rmq_common::PropertyKey, as PROPERTY_<name>).
AUTO_CREATE_TOPIC_KEY_TOPIC: Final[str]
SELF_TEST_TOPIC: Final[str]
BENCHMARK_TOPIC: Final[str]
OFFSET_MOVED_EVENT: Final[str]
SCHEDULE_TOPIC: Final[str]
SCHEDULE_TOPIC_V2: Final[str]
TRANS_HALF_TOPIC: Final[str]
TRANS_OP_HALF_TOPIC: Final[str]
TRANS_CHECK_MAX_TIME_TOPIC: Final[str]
TRACE_TOPIC: Final[str]
TIMER_TOPIC: Final[str]
RETRY_GROUP_TOPIC_PREFIX: Final[str]
DLQ_GROUP_TOPIC_PREFIX: Final[str]
CID_SYS_RMQ_TRANS: Final[str]
PROPERTY_KEYS: Final[str]
PROPERTY_TAGS: Final[str]
PROPERTY_WAIT_STORE_MSG_OK: Final[str]
PROPERTY_DELAY_TIME_LEVEL: Final[str]
PROPERTY_RETRY_TOPIC: Final[str]
PROPERTY_REAL_TOPIC: Final[str]
PROPERTY_REAL_QUEUE_ID: Final[str]
PROPERTY_TRANSACTION_PREPARED: Final[str]
PROPERTY_PRODUCER_GROUP: Final[str]
PROPERTY_MIN_OFFSET: Final[str]
PROPERTY_MAX_OFFSET: Final[str]
PROPERTY_ORIGIN_MESSAGE_ID: Final[str]
PROPERTY_RECONSUME_TIME: Final[str]
PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final[str]
PROPERTY_MAX_RECONSUME_TIMES: Final[str]
PROPERTY_CONSUME_START_TIMESTAMP: Final[str]
PROPERTY_SHARDING_KEY: Final[str]
PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final[str]
PROPERTY_TRANSACTION_CHECK_TIMES: Final[str]
PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final[str]
PROPERTY_TIMER_DELIVER_MS: Final[str]
PROPERTY_TIMER_DELAY_SEC: Final[str]
PROPERTY_TIMER_DELAY_MS: Final[str]
PROPERTY_TIMER_OUT_MS: Final[str]
PROPERTY_TIMER_ENQUEUE_MS: Final[str]
PROPERTY_TIMER_DEQUEUE_MS: Final[str]
PROPERTY_CLUSTER: Final[str]
PROPERTY_MSG_REGION: Final[str]
PROPERTY_TRACE_SWITCH: Final[str]
TRANS_OP_REMOVE_TAG: Final[str]

class RequestCode(IntEnum):
    """RocketMQ's request codes (``RequestCode.java``), built from ``rmq_protocol::RequestCode``."""

    SEND_MESSAGE = 10
    SEND_MESSAGE_V2 = 310
    SEND_BATCH_MESSAGE = 320
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    CONSUMER_SEND_MSG_BACK = 36
    GET_CONSUMER_LIST_BY_GROUP = 38
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    LITE_PULL_MESSAGE = 361
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    CHECK_CLIENT_CONFIG = 46
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    GET_CONSUMER_RUNNING_INFO = 307
    CONSUME_MESSAGE_DIRECTLY = 309
    END_TRANSACTION = 37
    RESUME_CHECK_HALF_MESSAGE = 323
    UPDATE_AND_CREATE_TOPIC = 17
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    QUERY_CORRECTION_OFFSET = 308
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    QUERY_CONSUME_QUEUE = 321
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329
    QUERY_TOPICS_BY_CONSUMER = 343
    GET_TOPIC_CONFIG = 351
    GET_SUBSCRIPTIONGROUP_CONFIG = 352
    GET_BROKER_HA_STATUS = 907
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_TOPIC_IN_NAMESRV = 216
    GET_KVLIST_BY_NAMESPACE = 219
    GET_TOPICS_BY_CLUSTER = 224
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    QUERY_DATA_VERSION = 322
    ADD_WRITE_PERM_OF_BROKER = 327

class ResponseCode(IntEnum):
    """RocketMQ's response codes (``ResponseCode.java``), from ``rmq_protocol::ResponseCode``."""

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    FLOW_CONTROL = 215

def fastjson_to_json(text: str) -> str:
    """Rewrite a body in fastjson's dialect (bare or object map keys, single quotes) as
    standard JSON text; ``ValueError`` says where and why it is neither."""

def decode_trans_op(tags: str | None, body: bytes) -> int:
    """The half message queue offset a transaction op record names (-1 for a body that is not
    a number, as Java reads it); ``ValueError`` when its tag is not the op record tag."""

def topic_route_data_json(
    broker_datas: Sequence[tuple[str, str, Mapping[int, str]]],
    queue_datas: Sequence[tuple[str, int, int, int, int]],
    order_topic_conf: str | None = None,
) -> str:
    """``TopicRouteData`` JSON: brokers as (cluster, broker name, address by id), queues as
    (broker name, perm, read queues, write queues, topic sys flag)."""

def cluster_info_json(
    brokers: Sequence[tuple[str, str, Mapping[int, str]]],
    clusters: Mapping[str, set[str]],
) -> str:
    """``ClusterInfo`` JSON: brokers as (cluster, broker name, address by id), broker names by
    cluster."""

def topic_list_json(topics: set[str], broker_addr: str | None = None) -> str:
    """``TopicList`` JSON (topics sorted)."""

def store_config_defaults() -> dict[str, str]:
    """Every store key the native engine understands (RocketMQ spelling), with its default."""

def broker_metrics_text(server: BrokerServer, cpu_seconds: float, resident_bytes: int) -> str:
    """One Prometheus scrape of ``server`` (OpenMetrics text; ``rmq_broker::metrics``)."""

def namesrv_metrics_text(
    server: RemotingServer,
    *,
    brokers: int,
    topics: int,
    clusters: int,
    cpu_seconds: float,
    resident_bytes: int,
) -> str:
    """One Prometheus scrape of a nameserver ``server`` started with ``metrics=True``: its RPC
    latencies, the route table's sizes given here and the process figures; ``ValueError``
    when the server times nothing."""

def reset_logging_cache() -> None:
    """Forget the Python logging levels the Rust side has cached. Rust records (loggers
    ``rmq.<crate>.<module>``, e.g. ``rmq.broker.processor.pull_message``) go to Python's
    :mod:`logging`; each logger's level is read once, at its first record, so call this
    after changing levels or handlers once the native code may have logged."""

def set_log_level(levelno: int) -> None:
    """Set the most verbose level the Rust side makes records at (a :mod:`logging` level
    number; above ERROR: none), so disabled levels cost nothing, and forget the cached
    levels (as :func:`reset_logging_cache`)."""

@final
class BrokerCallReply:
    """Where the answer to one broker-relayed call goes (``ClientInstance.set_listener``'s
    ``on_broker_call``): call it once, from any thread; later calls return False."""

    def __call__(self, code: int, remark: str | None = None, body: bytes | None = None) -> bool: ...

def consume_message_directly_result(
    order: bool, result: str, spent_time_ms: int, remark: str | None = None
) -> bytes:
    """The ``ConsumeMessageDirectlyResult`` body (``result``: a CMResult name such as
    ``CR_SUCCESS``; ``ValueError`` for another)."""

def decode_messages(body: bytes) -> list[StoredMessage]:
    """Decode concatenated CommitLog records (a pull, query or view response body)."""

def decompress_body(sys_flag: int, body: bytes, max_size: int = 4194304) -> bytes:
    """The body as the producer sent it: decompressed when ``sys_flag`` marks it compressed
    (ZLIB, LZ4 or ZSTD, RocketMQ's sysFlag bits 0 and 8..10), else ``body`` itself. Raises
    ``rmq.errors.ClientError`` for an unknown compression type, corrupt data, or more than
    ``max_size`` decompressed bytes."""

def write_file_atomic(
    path: str | os.PathLike[str], data: bytes, *, backup: bool = False, sync: bool = True
) -> None:
    """Replace ``path`` with ``data`` (temp file, rename; ``.bak`` kept with ``backup``);
    ``OSError`` naming the file on failure, the old file left as it was."""

def validate_topic_name(topic: str) -> None:
    """Raise ``ValueError`` with RocketMQ's reason (``TopicValidator``) when ``topic`` is not a
    legal topic name (blank, a character outside ``[%|a-zA-Z0-9_-]``, or over 127 chars)."""

def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` of ``s`` (the ConsumeQueue tags code of a tag)."""

def create_offset_msg_id(store_host: str, commit_log_offset: int) -> str:
    """RocketMQ's offset message id (32 hex digits for IPv4) for a store host and offset."""

def decode_offset_msg_id(msg_id: str) -> tuple[str, int]:
    """Inverse of :func:`create_offset_msg_id`: ``("ip:port", commit_log_offset)``."""

def decode_uniq_id(msg_id: str) -> tuple[str, int, int]:
    """A unique message id (``UNIQ_KEY``) read back: ``(producer ip, pid (low 16 bits), unix
    ms it was made at)``; ``ValueError`` when it is not 32 or 56 hex digits."""

@final
class PutMessageResult:
    """What a put did. Raised instead when the message was not stored."""

    status: str
    """``PUT_OK``, or ``FLUSH_DISK_TIMEOUT`` (stored, not yet durable within syncFlushTimeout)."""
    msg_id: str
    """Offset message id (store host + commit log offset)."""
    wrote_offset: int
    wrote_bytes: int
    queue_offset: int
    store_timestamp: int
    @property
    def ok(self) -> bool: ...

@final
class StoredMessage:
    """A message as the CommitLog holds it, decoded (in Rust, off the GIL). Each attribute
    becomes a Python value when read: ``body`` is copied once and kept, ``properties`` is a
    new dict on each read."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    store_size: int
    body: bytes
    body_size: int
    """``len(body)``, without making the bytes."""
    body_crc: int
    flag: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    properties: dict[str, str]
    msg_id: str
    """The client's unique id (``UNIQ_KEY``), or the offset id when the producer set none."""
    offset_msg_id: str
    """Store host + CommitLog offset, as VIEW_MESSAGE_BY_ID takes it."""
    body_error: str | None
    """Set on a pulled message whose body is marked compressed but could not be
    decompressed (unknown compression type in ``sys_flag``, corrupt data, or more than 4 MiB):
    ``body`` is then the stored bytes and ``sys_flag`` keeps the compressed bit."""
    @property
    def tags(self) -> str | None: ...
    @property
    def keys(self) -> str | None: ...

@final
class GetMessageResult:
    status: str
    """``FOUND``, ``NO_MATCHED_MESSAGE``, ``MESSAGE_WAS_REMOVING``, ``OFFSET_FOUND_NULL``,
    ``OFFSET_OVERFLOW_BADLY``, ``OFFSET_OVERFLOW_ONE``, ``OFFSET_TOO_SMALL``,
    ``NO_MATCHED_LOGIC_QUEUE`` or ``NO_MESSAGE_IN_QUEUE`` (RocketMQ's GetMessageStatus)."""
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[StoredMessage]

@final
class ConsumeQueueUnits:
    """ConsumeQueue units of one queue, as :meth:`MessageStore.get_consume_queue_units` read
    them."""

    min_offset: int
    """The queue's first valid offset (0 when the queue does not exist)."""
    max_offset: int
    """The queue's next offset to be written (0 when the queue does not exist)."""
    units: list[tuple[int, int, int]]
    """``(commit_log_offset, size, tags_code)`` per unit from the offset asked for; in
    ``SCHEDULE_TOPIC_XXXX`` the tags code is the delivery time in ms."""

@final
class DeliverResult:
    """What :meth:`MessageStore.deliver_scheduled` did."""

    processed: int
    """Units dealt with, from the first (delivered or skipped for good): the level's offset
    moves on by this much."""
    delivered: int
    """Messages re-put into their real topic and queue."""
    skipped: int
    """Units that can never be delivered (message gone, not a parked message, refused by its
    real queue); each is reported on stderr."""
    error: str | None
    """Why the call stopped early (the store refused a write: disk full, busy, shut down), or
    None. The units from ``processed`` on are to be tried again later."""

@final
class CommitLogCleanReport:
    """What one CommitLog deletion pass did."""

    @property
    def deleted(self) -> list[tuple[str, int, int, str]]:
        """Files deleted, oldest first: ``(file name, from offset, to offset, reason)``, reason
        ``"expired"`` or ``"forced"``."""
    @property
    def held(self) -> tuple[int, str, str] | None:
        """``(CommitLog offset, holder, detail)`` that kept the next file the pass would have
        deleted, e.g. ``(1048576, "subscription group G on T/3", "at queue offset 17 of 40")``."""

@final
class MessageStore:
    """One broker's storage engine over a store root directory.

    Opening loads and recovers the files (normal recovery after a clean shutdown, abnormal
    recovery with CRC checks and tail truncation when the ``abort`` file is present) and
    starts the flush, commit, dispatch and allocation services. ``config`` takes RocketMQ's
    store keys (``mappedFileSizeCommitLog``, ``flushDiskType``, ``transientStorePoolEnable``,
    ``fileReservedTime``, ...) as strings; a bad key or value raises ``rmq.errors.ConfigError``
    naming the key and the allowed values.
    """

    def __new__(
        cls,
        store_path_root_dir: str,
        config: Mapping[str, str] | None = None,
        store_host: str = "127.0.0.1:10911",
        ha_tls: Mapping[str, str] | None = None,
    ) -> MessageStore: ...
    @property
    def root_dir(self) -> str: ...
    @property
    def last_exit_ok(self) -> bool:
        """False when the previous run did not shut down cleanly (abnormal recovery ran)."""
    @property
    def transient_store_pool_active(self) -> bool:
        """True when writes go through the mlock'ed transient store pool."""
    def put_message(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: Mapping[str, str] | None = None,
        *,
        flag: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: str = "127.0.0.1:0",
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
    ) -> PutMessageResult:
        """Append one message. Under SYNC_FLUSH it returns once the bytes are durable (or
        with status FLUSH_DISK_TIMEOUT). Raises ``MessageIllegalError`` (bad topic, too large,
        properties too long), ``ServiceNotAvailableError`` (disk full, store shut down, slave)
        or ``StoreError`` (an I/O failure such as a file that could not be created)."""
    def put_messages(
        self,
        topic: str,
        queue_id: int,
        bodies: Sequence[bytes],
        properties: Sequence[Mapping[str, str] | None] | None = None,
    ) -> list[PutMessageResult]:
        """Append several messages to one queue under one lock hold (a batch send)."""
    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        tags: Sequence[str] | None = None,
    ) -> GetMessageResult:
        """Read from a ConsumeQueue; ``tags`` filters by tag hash (None means ``*``)."""
    def look_message_by_offset(self, commit_log_offset: int) -> StoredMessage | None: ...
    def get_consume_queue_units(
        self, topic: str, queue_id: int, offset: int, max_count: int = 1024
    ) -> ConsumeQueueUnits:
        """Up to ``max_count`` ConsumeQueue units of ``(topic, queue_id)`` from ``offset`` on;
        none when ``offset`` is outside ``[min_offset, max_offset)``."""
    def deliver_scheduled(self, units: Sequence[tuple[int, int, int]]) -> DeliverResult:
        """Deliver delayed messages parked in ``SCHEDULE_TOPIC_XXXX``: each unit (as
        :meth:`get_consume_queue_units` returns them), in order, is re-put into the topic and
        queue its ``REAL_TOPIC`` / ``REAL_QID`` name with ``DELAY`` removed and everything else
        kept (``UNIQ_KEY`` set to the parked record's offset id when it had none). Stops at the
        first write the store refuses; under SYNC_FLUSH returns once the last one is durable."""
    @property
    def delay_levels_ms(self) -> list[int]:
        """``messageDelayLevel`` in milliseconds, level 1 first (what delivery times use)."""
    def query_message(
        self,
        topic: str,
        key: str,
        max_num: int = 32,
        begin_timestamp: int = 0,
        end_timestamp: int = 9223372036854775807,
    ) -> list[StoredMessage]:
        """Messages whose KEYS (or UNIQ_KEY) contain ``key``, via the IndexFile."""
    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int: ...
    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...
    def get_min_phy_offset(self) -> int: ...
    def get_max_phy_offset(self) -> int: ...
    def dispatch_behind_bytes(self) -> int:
        """CommitLog bytes not yet dispatched to ConsumeQueue/IndexFile."""
    def flush(self) -> int:
        """Flush everything now; returns the flushed CommitLog offset."""
    def delete_expired_files(self, force: bool = False) -> int:
        """Delete CommitLog files older than fileReservedTime (unexpired ones too when
        ``force``), never past the retention floor (see :meth:`clean_commit_log`), then
        ConsumeQueue and index entries below the new min offset; files still being read are
        kept until destroyMapedFileIntervalForcibly. Returns files deleted."""
    def clean_commit_log(self, force: bool = False) -> CommitLogCleanReport:
        """One deletion pass, as :meth:`delete_expired_files`, reported file by file. Never
        past the retention floor: expiry keeps pending timers and undelivered delay-level
        messages; forced deletion also keeps what a subscription group has not consumed
        (unless ``cleanUnconsumedFileForciblyEnable``)."""
    def retention_floor(self) -> tuple[int, str, str] | None:
        """The lowest CommitLog offset still needed (by a subscription group, a timer, a
        delay level or dispatch), by whom and where it stands; ``None`` when nothing holds
        any."""
    def set_delay_offsets(self, offsets: dict[int, int]) -> None:
        """The delay scheduler's progress (level -> next offset to deliver): parked messages
        from there on are kept by retention. Until the first call every parked one is."""
    @property
    def ha_listen_port(self) -> int | None:
        """The bound HA port while this store is a master accepting slaves (``haListenPort``;
        0 there picks a free port); ``None`` on a slave or when the port could not be bound
        (logged)."""
    @property
    def max_phy_offset(self) -> int:
        """The CommitLog max offset."""
    def ha_update_master_address(self, addr: str) -> None:
        """A SLAVE (re)points its HA client at the master's HA address ``host:port``; ``""``
        stops following. The same address again changes nothing. Raises ``StoreError`` on a
        master."""
    def ha_runtime_info(self) -> str:
        """Replication figures as JSON in RocketMQ 5.x's ``HARuntimeInfo`` shape
        (``master``, ``masterCommitLogMaxOffset``, ``inSyncSlaveNums``, ``haConnectionInfo``
        [{``addr``, ``slaveAckOffset``, ``diff``, ``inSync``, ``transferredByteInSecond``,
        ``transferFromWhere``}], ``haClientRuntimeInfo`` {``masterAddr``,
        ``transferredByteInSecond``, ``maxOffset``, ``lastReadTimestamp``,
        ``lastWriteTimestamp``, ``masterFlushOffset``, ``isActivated``} on a slave that
        follows a master); GET_BROKER_HA_STATUS (907) answers the same body."""
    def truncate_commit_log(self, offset: int) -> int:
        """Drop every CommitLog byte at or after ``offset`` (a record's start or the current
        max; ``StoreError`` otherwise, or while following a master) and the ConsumeQueue
        units pointing there; returns the new max offset."""
    def set_broker_role(self, role: str) -> None:
        """Switch to ``"ASYNC_MASTER"``, ``"SYNC_MASTER"`` or ``"SLAVE"`` at run time. To a
        master: stop following, accept slaves, accept writes (queue offsets continue from
        the ConsumeQueues). To SLAVE: stop accepting slaves, refuse writes (then
        :meth:`ha_update_master_address`)."""
    @property
    def file_reserved_time(self) -> int:
        """Hours a CommitLog file is kept (``fileReservedTime``), as in effect now."""
    def set_file_reserved_time(self, hours: int) -> None:
        """Change ``fileReservedTime`` while running (the next expired-file pass uses it);
        raises ``ConfigError`` outside 0 to 876000 hours."""
    def disk_used_ratio(self) -> float:
        """Used fraction (0..1) of the partition holding the CommitLog."""
    def check_disk_space(self) -> None:
        """Apply the disk watermarks now (the store also does this every
        cleanResourceInterval ms): refuse writes above diskSpaceWarningLevelRatio, delete
        files above diskMaxUsedSpaceRatio / diskSpaceCleanForciblyRatio."""
    def is_writeable(self) -> bool: ...
    def runtime_info(self) -> dict[str, str]: ...
    def topic_queues(self) -> dict[str, list[int]]:
        """Every (topic, queue) that has a ConsumeQueue."""
    def shutdown(self) -> None:
        """Stop services, flush, write the checkpoint and remove the abort file."""
    def __enter__(self) -> MessageStore: ...
    def __exit__(self, *exc: object) -> None: ...

def _run_callbacks() -> None:
    """The body of the ``rmq-callbacks`` thread (started by ``ClientInstance``)."""

def _stop_callbacks() -> None:
    """Stop running client callbacks (rmq calls it at interpreter exit)."""

@final
class RemotingRequest:
    """A request received by a :class:`RemotingServer` handler."""

    code: int
    language: str
    version: int
    flag: int
    remark: str | None
    ext_fields: dict[str, str]
    body: bytes | None
    connection_id: int
    """Identifies the connection (the same in ``on_close``)."""
    peer: str
    @property
    def oneway(self) -> bool: ...

@final
class RemotingResponse:
    """A response: returned by a handler, or by :meth:`RemotingClient.invoke`."""

    code: int
    remark: str | None
    ext_fields: dict[str, str]
    body: bytes | None
    def __new__(
        cls,
        code: int,
        remark: str | None = None,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = None,
    ) -> RemotingResponse: ...

@final
class RemotingServer:
    """A RocketMQ remoting server whose requests ``handler.handle(request)`` answers (with a
    RemotingResponse, or None for no reply); ``handler.on_close(connection_id)`` is called
    when a connection closes, if defined. The handler runs on a worker thread. ``tls``: the
    ``tls.server.*`` settings (``tls.server.mode`` disabled | permissive | enforcing, ...);
    a bad one raises ``rmq.errors.ConfigError`` naming the key and file."""

    def __new__(
        cls,
        host: str,
        port: int,
        handler: object,
        *,
        acl_enable: bool = False,
        acl_file: str | os.PathLike[str] | None = None,
        tls: dict[str, str] | None = None,
        metrics: bool = False,
    ) -> RemotingServer:
        """``acl_enable``: every request is checked in Rust, before ``handler`` sees it,
        against the ACL file ``acl_file`` (default ``$ROCKETMQ_HOME/conf/plain_acl.yml``)
        with the nameserver's rules; refusals are answered NO_PERMISSION (16). A missing or
        bad file raises ``rmq.errors.ConfigError`` naming the file, line and key. ``tls``:
        the ``tls.server.*`` settings (see the class doc). ``metrics``: every answer is timed
        for :func:`namesrv_metrics_text`."""
    @property
    def local_addr(self) -> str: ...
    def shutdown(self) -> None: ...

@final
class RemotingClient:
    """A RocketMQ remoting client keeping one connection per address. Raises
    ``rmq.errors.RemotingConnectError`` / ``RemotingTimeoutError``. With ``access_key`` and
    ``secret_key`` every request is signed (ACL 1.0, ``AclClientRPCHook``). The ``tls*``
    keywords are the SDK's (:class:`rmq.tls.TlsOptions`)."""

    def __new__(
        cls,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        *,
        tls: bool = False,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        tls_verify: bool = True,
    ) -> RemotingClient: ...
    def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout_ms: int = 3000,
    ) -> RemotingResponse: ...
    def invoke_oneway(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout_ms: int = 3000,
    ) -> None: ...
    def close(self) -> None: ...

@final
class BrokerServer:
    """The broker's network server over a store: Rust processors for send, pull, offsets,
    topics and heartbeats; codes it does not serve go to ``handler`` (like RemotingServer's),
    or get REQUEST_CODE_NOT_SUPPORTED. ``config`` takes RocketMQ broker keys (brokerName,
    brokerClusterName, brokerId, brokerAddr, autoCreateTopicEnable, defaultTopicQueueNums,
    brokerPermission, ...). Topics, offsets and groups live under ``<store root>/config``."""

    def __new__(
        cls,
        store: MessageStore,
        config: Mapping[str, str],
        host: str,
        port: int,
        handler: object | None = None,
    ) -> BrokerServer: ...
    @property
    def local_addr(self) -> str: ...
    def register_body(self) -> bytes:
        """The REGISTER_BROKER body (RegisterBrokerBody JSON) for the nameservers."""
    def persist(self) -> None:
        """Write consumer offsets, subscription groups and topics."""
    def set_broker_permission(self, perm: int) -> None:
        """Change ``brokerPermission`` (6, 4 or 2) while serving: sends and pulls see it at
        once, and the topic data version moves on so the next registration carries it (the
        topic change listener fires). Raises ``ConfigError`` for other values."""
    def set_topic_change_listener(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` after every topic-table change."""
    def producer_connections(self, group: str) -> list[tuple[int, str, str]]:
        """The open connections of producer group ``group`` as ``(connection_id, client_id,
        client_addr)``, oldest first (registered by heartbeats; gone on close, unregister or
        expiry)."""
    def check_transaction_state(self, connection_id: int, commit_log_offset: int) -> bool:
        """Send CHECK_TRANSACTION_STATE (oneway) about the half message stored at
        ``commit_log_offset`` to producer connection ``connection_id``. False when that
        connection is no longer an open producer connection; raises ``StoreError`` when no half
        message is stored there."""
    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset of ``group`` in a queue; -1 when none."""
    def commit_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Commit an offset of ``group`` (written to consumerOffset.json by :meth:`persist`)."""
    def create_topic_if_absent(self, topic: str, queue_nums: int = 1, perm: int = 6) -> None:
        """Create ``topic`` with ``queue_nums`` read and write queues unless it exists."""
    def set_slave_of(self, master: str | None) -> None:
        """``master``: this broker is a slave of that address ("" while unknown) and refuses
        sends, batches and send-backs with SERVICE_NOT_AVAILABLE naming it; None: a master."""
    @property
    def slave_of(self) -> str | None:
        """The master this broker follows while it is a slave."""
    def consumer_offsets_json(self) -> bytes:
        """Every committed offset as GET_ALL_CONSUMER_OFFSET (43) serves it."""
    def put_all_consumer_offsets(self, body: bytes) -> None:
        """Take every offset of a ConsumerOffsetSerializeWrapper body (others are kept);
        ``ValueError`` for a bad body."""
    def replace_topic_configs(self, body: bytes) -> bool:
        """Take the master's GET_ALL_TOPIC_CONFIG body whole when its data version differs
        from ours; whether it did. ``ValueError`` for a bad body, ``StoreError`` when
        topics.json cannot be written."""
    def replace_subscription_groups(self, body: bytes) -> bool:
        """The same for GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""
    def set_runtime_info(self, key: str, value: str | None) -> None:
        """Add ``key`` = ``value`` to GET_BROKER_RUNTIME_INFO's table (None removes it)."""
    def shutdown(self) -> None:
        """Stop serving, close connections, persist. Idempotent."""

@final
class SendResult:
    """What a send returned (``SendResult``)."""

    status: str
    """``SEND_OK``, ``FLUSH_DISK_TIMEOUT``, ``FLUSH_SLAVE_TIMEOUT`` or ``SLAVE_NOT_AVAILABLE``."""
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    transaction_id: str | None
    region_id: str
    trace_on: bool
    """The broker's ``traceOn`` (false: a tracing producer does not trace this send)."""

@final
class PullResult:
    """What a pull returned (``PullResult``)."""

    status: str
    """``FOUND``, ``NO_NEW_MSG``, ``NO_MATCHED_MSG`` or ``OFFSET_ILLEGAL``."""
    next_begin_offset: int
    min_offset: int
    max_offset: int
    suggest_which_broker_id: int
    messages: list[StoredMessage]

@final
class PulledColumns:
    """A range of one queue pulled into Arrow-ready buffers (``ClientInstance.pull_columns``):
    int64 little-endian ``queue_offsets`` and timestamps (ms); for string and binary columns
    int32 offsets and data (tags and keys with a validity bitmap); the properties as a map:
    per row an offset into the entries, then the entries' keys and values."""

    status: str
    """Why the call stopped: ``FOUND`` (the end, ``max_rows`` or the byte limit), ``GAP`` (the
    next message is at ``gap_to``: those before it are gone), or the status of the pull that
    found nothing (``NO_NEW_MSG``, ``NO_MATCHED_MSG``, ``OFFSET_ILLEGAL``)."""
    next_offset: int
    gap_to: int
    min_offset: int
    max_offset: int
    num_rows: int
    queue_offsets: bytes
    born_timestamps: bytes
    store_timestamps: bytes
    body_offsets: bytes
    body_data: bytes
    tags_validity: bytes
    tags_offsets: bytes
    tags_data: bytes
    keys_validity: bytes
    keys_offsets: bytes
    keys_data: bytes
    msg_id_offsets: bytes
    msg_id_data: bytes
    property_offsets: bytes
    property_key_offsets: bytes
    property_key_data: bytes
    property_value_offsets: bytes
    property_value_data: bytes

@final
class ClientInstance:
    """One client instance (RocketMQ's ``MQClientInstance``): connections, routes refreshed
    every ``poll_name_server_interval_ms``, heartbeats every ``heartbeat_broker_interval_ms``.
    ``namesrv_addr`` may list several nameservers separated by ``;``. With ``access_key`` and
    ``secret_key`` every request is signed (ACL 1.0, ``AclClientRPCHook``)."""

    def __new__(
        cls,
        namesrv_addr: str,
        instance_name: str | None = None,
        client_ip: str | None = None,
        poll_name_server_interval_ms: int = 30000,
        heartbeat_broker_interval_ms: int = 30000,
        api_timeout_ms: int = 3000,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool = False,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        tls_verify: bool = True,
    ) -> ClientInstance: ...
    @property
    def client_id(self) -> str: ...
    def consumer_running_info(
        self,
        group: str,
        properties: dict[str, str],
        queues: list[tuple[MessageQueue, int, int, int, int, int, bool, int, bool, int, int]],
        failed: dict[str, int],
        *,
        namesrv_addr: str,
        orderly: bool,
        thread_pool_core_size: int,
        start_timestamp_ms: int,
        client_version: str,
        jstack: str | None = None,
    ) -> bytes:
        """The ``ConsumerRunningInfo`` body of consumer group ``group`` of this client (its
        registered subscriptions, ``queues`` held, ``properties`` plus RocketMQ's ``PROP_*``
        keys); ``ValueError`` when the group is not registered."""
    def set_listener(
        self,
        on_broker_request: Callable[[int, dict[str, str], bytes | None], object],
        on_warning: Callable[[str], object],
        on_broker_call: Callable[[int, dict[str, str], bytes | None, BrokerCallReply], object]
        | None = None,
    ) -> None: ...
    def fetch_subscribe_queues(self, topic: str) -> list[MessageQueue]: ...
    def cached_subscribe_queues(self, topic: str) -> list[MessageQueue] | None: ...
    def register_consumer(
        self,
        group: str,
        subscriptions: Sequence[tuple[str, str]],
        message_model: str = "CLUSTERING",
        consume_type: str = "CONSUME_PASSIVELY",
        consume_from_where: str = "CONSUME_FROM_LAST_OFFSET",
    ) -> None: ...
    def unregister_consumer(self, group: str) -> None: ...
    def send_heartbeat(self) -> int: ...
    def pull(
        self,
        group: str,
        queue: MessageQueue,
        offset: int,
        max_nums: int,
        expression: str = "*",
        sub_version: int = 0,
        commit_offset: int | None = None,
        suspend_ms: int = 0,
        timeout_ms: int = 3000,
        broker_id: int | None = None,
        pipelined: bool = False,
    ) -> PullResult:
        """Pull ``queue`` from ``offset``. ``broker_id`` pins the broker of the group (0 the
        master); ``None`` follows the broker's last ``suggest_which_broker_id`` for the
        group's queue, or any broker of the group when that one is not in the route.
        ``pipelined``: answered by the pull sent ahead for this group and queue when it asked
        the same offset, batch size and subscription; an answer with messages sends the next
        pull ahead at once (see :meth:`forget_pipelined`)."""
    def pull_columns(
        self,
        group: str,
        queue: MessageQueue,
        start: int,
        end: int,
        max_rows: int,
        batch: int = 32,
        depth: int = 4,
        timeout_ms: int = 10000,
        skip_properties: list[str] = ...,
        expression: str = "*",
    ) -> PulledColumns:
        """Pull ``queue`` from ``start`` towards ``end`` into columns: at most ``max_rows``
        rows (under a tag filter the last pull may pass it), the GIL released; the first pull
        asks ``batch`` messages and what the broker granted sets the windows of the ``depth``
        pulls kept in flight after it; only the messages whose tag matches ``expression``
        (filtered on the broker)."""
    def pull_async(
        self,
        callback: Callable[[PullResult | None, BaseException | None], object],
        group: str,
        queue: MessageQueue,
        offset: int,
        max_nums: int,
        expression: str = "*",
        sub_version: int = 0,
        commit_offset: int | None = None,
        suspend_ms: int = 15000,
        timeout_ms: int = 30000,
        broker_id: int | None = None,
        pipelined: bool = False,
    ) -> None:
        """:meth:`pull` without waiting: ``callback(result, error)`` runs on the callback
        thread."""
    def forget_pipelined(self, group: str, queue: MessageQueue) -> None:
        """Drop the pull sent ahead for ``group``'s ``queue`` (no longer consumed here)."""
    def query_consumer_offset(self, group: str, queue: MessageQueue) -> int | None: ...
    def update_consumer_offset(
        self, group: str, queue: MessageQueue, offset: int, oneway: bool = True
    ) -> None: ...
    def max_offset(self, queue: MessageQueue) -> int: ...
    def min_offset(self, queue: MessageQueue) -> int: ...
    def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int: ...
    def consumer_id_list(self, topic: str, group: str) -> list[str]: ...
    def lock_batch(
        self, group: str, broker_name: str, queues: Sequence[MessageQueue]
    ) -> list[MessageQueue]: ...
    def unlock_batch(
        self, group: str, broker_name: str, queues: Sequence[MessageQueue], oneway: bool = False
    ) -> None: ...
    def send_msg_back(
        self,
        group: str,
        message: StoredMessage,
        broker_name: str,
        delay_level: int = 0,
        max_reconsume_times: int = 16,
    ) -> None: ...
    def shutdown(self) -> None: ...

@final
class NativeProducer:
    """The Rust producer under ``rmq.Producer``. Messages are any objects with ``topic``,
    ``body``, ``flag`` and ``properties`` (``rmq.Message``)."""

    def __new__(
        cls,
        instance: ClientInstance,
        group: str,
        send_timeout_ms: int = 3000,
        retry_times_when_send_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        max_message_size: int = 4194304,
        compress_msg_body_over_howmuch: int = 4096,
        compress_level: int = 5,
        send_latency_fault_enable: bool = False,
        default_topic_queue_nums: int = 4,
        compress_type: str = "ZLIB",
    ) -> NativeProducer: ...
    def send(self, message: object, queue: MessageQueue | None = None) -> SendResult: ...
    def send_async(
        self,
        message: object,
        callback: Callable[[SendResult | None, BaseException | None], object],
        queue: MessageQueue | None = None,
    ) -> None: ...
    def send_oneway(self, message: object, queue: MessageQueue | None = None) -> None: ...
    def send_batch(
        self, messages: Sequence[object], queue: MessageQueue | None = None
    ) -> SendResult: ...
    def send_batch_columns(
        self,
        topic: str,
        queue: MessageQueue | None,
        start: int,
        end: int,
        body_offsets: bytes,
        body_data: bytes,
        id_head: str,
        first_id: int,
        tags: tuple[bytes | None, bytes, bytes] | None = None,
        keys: tuple[bytes | None, bytes, bytes] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> SendResult:
        """Send rows ``start..end`` of Arrow-style column buffers as one SEND_BATCH_MESSAGE to
        ``topic``: bodies are int32 little-endian ``body_offsets`` into ``body_data``; ``tags``
        and ``keys`` are ``(validity, offsets, data)`` of string columns. Row ``i`` gets the
        ``UNIQ_KEY`` ``id_head`` + ``first_id + i - start`` in 12 digits, every row the
        ``properties`` given."""
    def end_transaction(self, result: SendResult, state: str, remark: str | None = None) -> None:
        """END_TRANSACTION (oneway) for the half message ``result`` was sent as; ``state`` is
        ``COMMIT_MESSAGE``, ``ROLLBACK_MESSAGE`` or ``UNKNOW``."""
    def end_transactions(
        self, halves: Sequence[tuple[MessageQueue, str, str, int]], state: str
    ) -> int:
        """End the halves of transactional batch sends, each ``(queue, offset_msg_id, msg_id,
        queue_offset)`` as the batch's SendResult has them, one END_TRANSACTION request per
        half: a queue's halves in order, the queues in parallel. Returns how many were ended;
        raises the first failure after trying all."""
    def end_transaction_from_check(
        self,
        broker_addr: str,
        check_fields: Mapping[str, str],
        msg_id: str,
        state: str,
        remark: str | None = None,
    ) -> None:
        """Answer a CHECK_TRANSACTION_STATE from ``broker_addr`` (header fields
        ``check_fields``) about the message with unique id ``msg_id``: END_TRANSACTION, oneway,
        fromTransactionCheck."""
    def publish_queues(self, topic: str) -> list[MessageQueue]: ...
    def shutdown(self) -> None: ...

# ---- config schema (crates/rmq-py/src/config_schema.rs) ---------------------------------------

@final
class ConfigKey:
    """One key of the config schema (``rmq_common::config_schema``)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str:
        """``int``, ``bool``, ``enum``, ``text``, ``name``, ``path``, ``ip``,
        ``host-port-list``, ``socket-addr``, ``delete-when`` or ``delay-levels``."""
    @property
    def default(self) -> str | None:
        """The default as text; None when it is worked out at start-up."""
    @property
    def minimum(self) -> int | None: ...
    @property
    def maximum(self) -> int | None: ...
    @property
    def choices(self) -> list[str]: ...
    @property
    def clamp(self) -> tuple[int, int] | None:
        """RocketMQ clamps a value outside this range into it instead of refusing it."""
    @property
    def owner(self) -> str:
        """``store``, ``broker``, ``control-plane``, ``namesrv`` or ``unused``."""
    @property
    def runtime(self) -> bool:
        """UPDATE_BROKER_CONFIG (UPDATE_NAMESRV_CONFIG) may change it while running."""
    @property
    def allowed(self) -> str:
        """What is allowed, as error messages say it."""
    @property
    def doc(self) -> str: ...

def config_schema(table: str = "broker") -> list[ConfigKey]:
    """Every key of ``broker.conf`` (``table="broker"``) or ``namesrv.conf`` (``"namesrv"``)."""

def check_config_value(key: str, value: str, table: str = "broker") -> tuple[str, str | None]:
    """``(canonical text, clamp note or None)``; raises ValueError with the schema's message
    (``key = 'value' is not allowed; use ...``) for a bad value or an unknown key."""

def parse_delay_levels(text: str) -> list[int]:
    """``messageDelayLevel`` as milliseconds per level; raises ValueError naming the bad level."""

def parse_delete_when(value: str) -> list[int]:
    """The hours of day (0-23, ascending) a ``deleteWhen`` value names; raises ValueError."""
