"""The options of the ``rmq`` data source, parsed and checked once, on the driver.

Spark hands a data source its options as a case-insensitive ``str -> str`` mapping. Everything
here turns that mapping into frozen dataclasses (picklable, so they travel to the executors with
the reader or writer) and raises :class:`rmq.errors.ConfigError` naming the option and what it
accepts. Nothing here imports pyspark.

Option names and meanings follow Spark's Kafka connector where one exists (``startingOffsets``,
``endingOffsets``, ``startingTimestamp``, ``minPartitions``, ``maxOffsetsPerTrigger``,
``failOnDataLoss``), and RocketMQ's client where it does not (``producerGroup``,
``sendTimeoutMs``, ``pullBatchSize``, ``accessKey``/``secretKey`` for brokers with ACL on).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from rmq.client._instance import Credentials, credentials
from rmq.errors import ConfigError
from rmq.tls import PLAIN, TlsOptions

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetSpec",
    "ReadOptions",
    "WriteOptions",
    "parse_offset_spec",
    "parse_read_options",
    "parse_write_options",
]

log = logging.getLogger("rmq.spark")

EARLIEST = -2
"""An offset in ``startingOffsets``/``endingOffsets`` JSON meaning "the queue's min offset"."""
LATEST = -1
"""An offset meaning "the queue's max offset" (where the next message will go)."""

DEFAULT_READ_GROUP = "spark-rmq-reader"
DEFAULT_WRITE_GROUP = "spark-rmq-writer"

OffsetSpec = Literal["earliest", "latest"] | dict[str, dict[str, dict[int, int]]]
"""``"earliest"``, ``"latest"``, or per topic, broker and queue id an offset (-2, -1 or >= 0)."""
TimestampSpec = dict[str, dict[str, dict[int, int]]]
"""Per topic, broker and queue id a timestamp (ms since the epoch)."""
Assignment = dict[str, dict[str, tuple[int, ...]] | tuple[int, ...]]
"""Per topic, queue ids per broker, or queue ids on every broker of the topic."""

COMMON_OPTIONS = (
    "namesrv",
    "topic",
    "instanceName",
    "accessKey",
    "secretKey",
    "tls",
    "tlsCa",
    "tlsCert",
    "tlsKey",
    "tlsVerify",
)
READ_OPTIONS = frozenset(
    (
        *COMMON_OPTIONS,
        "subscribePattern",
        "assign",
        "subExpression",
        "startingOffsets",
        "endingOffsets",
        "startingTimestamp",
        "endingTimestamp",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "startingOffsetsByTimestampStrategy",
        "minPartitions",
        "maxOffsetsPerTrigger",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "failOnDataLoss",
        "consumerGroup",
        "pullBatchSize",
        "pullTimeoutMs",
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
    )
)
"""Every option ``spark.read``/``spark.readStream`` accept, as the README's table spells them."""
WRITE_OPTIONS = frozenset(
    (
        *COMMON_OPTIONS,
        "batchSize",
        "sendTimeoutMs",
        "producerGroup",
        "shardingKeyColumn",
        "maxInFlightBatches",
        "retryTimesWhenSendFailed",
        "deliveryGuarantee",
    )
)
"""Every option ``df.write``/``df.writeStream`` accept."""
_READ = {o.lower() for o in READ_OPTIONS}
_WRITE = {o.lower() for o in WRITE_OPTIONS}
# Options Spark itself (or a DataFrameWriter habit) passes along; never worth a warning.
_SPARK_OWN = {"path", "checkpointlocation", "queryname"}


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """What ``spark.read`` / ``spark.readStream`` were told."""

    namesrv: str
    topics: tuple[str, ...]
    """Option ``topic`` (or the topics of ``assign``); empty under ``subscribePattern``."""
    starting_offsets: OffsetSpec
    ending_offsets: OffsetSpec
    starting_timestamp: int | None
    min_partitions: int | None
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    consumer_group: str
    pull_batch_size: int
    pull_timeout_ms: int
    instance_name: str
    credentials: Credentials | None = None
    """ACL account (options ``accessKey``/``secretKey``) every executor's client signs with."""
    tls: TlsOptions = PLAIN
    pattern: str | None = None
    """Option ``subscribePattern``: topics whose whole name matches, re-listed every trigger."""
    assign: Assignment | None = None
    """Option ``assign``: only these queues."""
    starting_by_timestamp: TimestampSpec | None = None
    ending_by_timestamp: TimestampSpec | None = None
    ending_timestamp: int | None = None
    timestamp_strategy: Literal["error", "latest"] = "error"
    """``startingOffsetsByTimestampStrategy``: when no message is stored at or after a
    starting timestamp, fail (``error``) or start at the queue's max offset (``latest``)."""
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    fetch_retries: int = 3
    """``fetchOffset.numRetries``: retries of a failed offset or route query on the driver."""
    fetch_retry_interval_ms: int = 10
    sub_expression: str = "*"
    """Option ``subExpression``: RocketMQ's tag filter (``a || b``), evaluated on the broker."""


@dataclass(frozen=True, slots=True)
class WriteOptions:
    """What ``df.write`` / ``df.writeStream`` were told."""

    namesrv: str
    topic: str | None
    batch_size: int
    send_timeout_ms: int
    producer_group: str
    sharding_key_column: str | None
    max_in_flight_batches: int
    retry_times_when_send_failed: int
    delivery_guarantee: Literal["at-least-once", "exactly-once"]
    instance_name: str
    checkpoint_location: str | None = None
    credentials: Credentials | None = None
    """ACL account (options ``accessKey``/``secretKey``) every executor's client signs with."""
    tls: TlsOptions = PLAIN


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in options.items()}


def _warn_unknown(opts: Mapping[str, str], known: set[str], what: str) -> None:
    for key in sorted(set(opts) - known - _SPARK_OWN):
        log.warning("rmq %s: unknown option %r is ignored (known: %s)", what, key, sorted(known))


def _required(opts: Mapping[str, str], key: str, name: str, hint: str) -> str:
    value = opts.get(key, "").strip()
    if not value:
        raise ConfigError(f"the rmq data source needs option {name!r} ({hint})")
    return value


def _int(
    opts: Mapping[str, str], key: str, name: str, default: int | None, minimum: int
) -> int | None:
    raw = opts.get(key)
    if raw is None:
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ConfigError(f"option {name!r} must be an integer >= {minimum}, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"option {name!r} must be an integer >= {minimum}, not {value}")
    return value


def _int_default(opts: Mapping[str, str], key: str, name: str, default: int, minimum: int) -> int:
    value = _int(opts, key, name, default, minimum)
    assert value is not None
    return value


def _tls(opts: Mapping[str, str]) -> TlsOptions:
    """Options ``tls``, ``tlsCa``, ``tlsCert``, ``tlsKey``, ``tlsVerify`` (the SDK's ``tls``,
    ``tls_ca``, ...; a CA, cert or key implies ``tls``)."""
    ca, cert, key = (opts.get(k, "").strip() or None for k in ("tlsca", "tlscert", "tlskey"))
    enabled = _bool(opts, "tls", "tls", False) or any((ca, cert, key))
    verify = _bool(opts, "tlsverify", "tlsVerify", True)
    return TlsOptions.of(enabled, ca, cert, key, tls_verify=verify)


def _bool(opts: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    v = raw.strip().lower()
    if v not in ("true", "false"):
        raise ConfigError(f"option {name!r} must be 'true' or 'false', not {raw!r}")
    return v == "true"


def _credentials(opts: Mapping[str, str]) -> Credentials | None:
    """Options ``accessKey`` and ``secretKey``: both or neither."""
    try:
        return credentials(opts.get("accesskey", "").strip(), opts.get("secretkey", "").strip())
    except ValueError:
        given, missing = (
            ("accessKey", "secretKey") if opts.get("accesskey") else ("secretKey", "accessKey")
        )
        raise ConfigError(
            f"option {given!r} is set but {missing!r} is not: ACL signatures need both "
            "(an account of the brokers' plain_acl.yml)"
        ) from None


def parse_offset_spec(raw: str, name: str, *, allow_earliest: bool = True) -> OffsetSpec:
    """``earliest``, ``latest`` or ``{"topic":{"broker":{"queueId":offset}}}`` (-2 earliest,
    -1 latest), as ``startingOffsets`` and ``endingOffsets`` take it."""
    v = raw.strip()
    allowed = "'earliest', 'latest'" if allow_earliest else "'latest'"
    example = '{"topic":{"broker-a":{"0":42,"1":-1}}}'
    if v.lower() == "latest":
        return "latest"
    if v.lower() == "earliest":
        if not allow_earliest:
            raise ConfigError(f"option {name!r} cannot be 'earliest'; use {allowed} or JSON")
        return "earliest"
    try:
        doc = json.loads(v)
    except ValueError:
        raise ConfigError(
            f"option {name!r} must be {allowed} or JSON like {example} "
            f"(-2 = earliest, -1 = latest), not {raw!r}"
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(f"option {name!r}: JSON must be an object like {example}, not {raw!r}")
    spec: dict[str, dict[str, dict[int, int]]] = {}
    for topic, brokers in doc.items():
        if not isinstance(brokers, dict):
            raise ConfigError(
                f"option {name!r}: topic {topic!r} must map broker names to "
                f"{{queueId: offset}} objects, as in {example}"
            )
        spec[topic] = {}
        for broker, queues in brokers.items():
            if not isinstance(queues, dict):
                raise ConfigError(
                    f"option {name!r}: {topic!r}/{broker!r} must map queue ids to offsets, "
                    f"as in {example}"
                )
            spec[topic][broker] = {}
            for qid, offset in queues.items():
                try:
                    queue_id = int(qid)
                except ValueError:
                    raise ConfigError(
                        f"option {name!r}: queue id {qid!r} of {topic}/{broker} is not an integer"
                    ) from None
                if not isinstance(offset, int) or isinstance(offset, bool) or offset < -2:
                    raise ConfigError(
                        f"option {name!r}: offset {offset!r} of {topic}/{broker}/{qid} must be "
                        "an integer >= 0, or -2 (earliest) or -1 (latest)"
                    )
                if offset == EARLIEST and not allow_earliest:
                    raise ConfigError(
                        f"option {name!r}: -2 (earliest) is not allowed, "
                        f"as for {topic}/{broker}/{qid}; use -1 (latest) or an offset"
                    )
                spec[topic][broker][queue_id] = offset
    return spec


def parse_timestamp_spec(raw: str, name: str) -> TimestampSpec:
    """``{"topic":{"broker":{"queueId":timestampMs}}}``, as ``startingOffsetsByTimestamp``
    and ``endingOffsetsByTimestamp`` take it."""
    if raw.strip().lower() in ("earliest", "latest"):
        raise ConfigError(
            f'option {name!r} must be JSON like {{"topic":{{"broker-a":{{"0":1700000000000}}}}}} '
            f"(ms since the epoch per queue), not {raw!r}"
        )
    spec = parse_offset_spec(raw, name)
    assert isinstance(spec, dict)
    for topic, brokers in spec.items():
        for broker, queues in brokers.items():
            for qid, ts in queues.items():
                if ts < 0:
                    raise ConfigError(
                        f"option {name!r}: timestamp {ts} of {topic}/{broker}/{qid} must be "
                        "ms since the epoch (>= 0)"
                    )
    return spec


def parse_assign(raw: str) -> Assignment:
    """Option ``assign``: ``{"topic":{"broker-a":[0,1]}}``, or ``{"topic":[0,1]}`` for those
    queue ids on every broker of the topic (Kafka's ``{"topic":[0,1]}``)."""
    example = '{"topicA":{"broker-a":[0,1]},"topicB":[0]}'
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or not doc:
        raise ConfigError(f"option 'assign' must be JSON like {example}, not {raw!r}")

    def ids(value: object, where: str) -> tuple[int, ...]:
        if not isinstance(value, list) or not value:
            raise ConfigError(f"option 'assign': {where} must be a non-empty list of queue ids")
        if not all(isinstance(q, int) and not isinstance(q, bool) and q >= 0 for q in value):
            raise ConfigError(
                f"option 'assign': {where} has a queue id that is not an integer >= 0"
            )
        return tuple(sorted(set(value)))

    out: Assignment = {}
    for topic, queues in doc.items():
        if isinstance(queues, dict):
            out[topic] = {b: ids(q, f"{topic}/{b}") for b, q in queues.items()}
        else:
            out[topic] = ids(queues, topic)
    return out


_DURATION_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_duration_ms(raw: str, name: str) -> int:
    """``100ms``, ``5s``, ``15m``, ``1h``, ``1d``, or a number of ms (Spark's time strings)."""
    m = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", raw.lower())
    if m is None or m.group(2) not in ("", *_DURATION_UNITS):
        raise ConfigError(
            f"option {name!r} must be a duration like '15m', '30s' or '500ms', not {raw!r}"
        )
    return int(m.group(1)) * _DURATION_UNITS.get(m.group(2), 1)


def _subscription(
    opts: Mapping[str, str],
) -> tuple[tuple[str, ...], str | None, Assignment | None]:
    """Exactly one of ``topic``, ``subscribePattern``, ``assign`` (Kafka's ``subscribe``,
    ``subscribePattern``, ``assign``)."""
    given = [n for n in ("topic", "subscribePattern", "assign") if opts.get(n.lower(), "").strip()]
    if len(given) != 1:
        raise ConfigError(
            "the rmq source needs option 'topic' (topics, several separated by ','), or "
            "'subscribePattern' (a regex over the nameserver's topics), or 'assign' (JSON of "
            f"queues): exactly one of them; given: {', '.join(given) or 'none'}"
        )
    if given[0] == "subscribePattern":
        pattern = opts["subscribepattern"].strip()
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(
                f"option 'subscribePattern' is not a regex ({exc}): {pattern!r}"
            ) from None
        return (), pattern, None
    if given[0] == "assign":
        assign = parse_assign(opts["assign"])
        return tuple(assign), None, assign
    topic = opts["topic"]
    topics = tuple(t.strip() for t in topic.split(",") if t.strip())
    if len(set(topics)) != len(topics):
        raise ConfigError(f"option 'topic' names a topic twice: {topic!r}")
    return topics, None, None


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Check the options of ``spark.read`` (``streaming=False``) or ``spark.readStream``."""
    opts = _lower(options)
    what = "readStream" if streaming else "read"
    _warn_unknown(opts, _READ, what)
    namesrv = _required(opts, "namesrv", "namesrv", "nameserver address, 'host:port[;host:port]'")
    topics, pattern, assign = _subscription(opts)

    starting: OffsetSpec = "latest" if streaming else "earliest"
    if "startingoffsets" in opts:
        starting = parse_offset_spec(opts["startingoffsets"], "startingOffsets")
    ending: OffsetSpec = "latest"
    for batch_only in ("endingOffsets", "endingOffsetsByTimestamp", "endingTimestamp"):
        if streaming and batch_only.lower() in opts:
            raise ConfigError(
                f"option {batch_only!r} is for batch reads (spark.read); a stream has no end"
            )
    if "endingoffsets" in opts:
        ending = parse_offset_spec(opts["endingoffsets"], "endingOffsets", allow_earliest=False)
    starting_ts = ending_ts = None
    if "startingoffsetsbytimestamp" in opts:
        starting_ts = parse_timestamp_spec(
            opts["startingoffsetsbytimestamp"], "startingOffsetsByTimestamp"
        )
    if "endingoffsetsbytimestamp" in opts:
        ending_ts = parse_timestamp_spec(
            opts["endingoffsetsbytimestamp"], "endingOffsetsByTimestamp"
        )
    for spec, name in (
        (starting, "startingOffsets"),
        (ending, "endingOffsets"),
        (starting_ts, "startingOffsetsByTimestamp"),
        (ending_ts, "endingOffsetsByTimestamp"),
    ):
        if isinstance(spec, dict) and pattern is None and (unknown := set(spec) - set(topics)):
            source = "assign" if assign is not None else "topic"
            raise ConfigError(
                f"option {name!r} names topic(s) {sorted(unknown)} not in option {source!r} "
                f"({', '.join(topics)})"
            )
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise ConfigError(
            "option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"not {opts['startingoffsetsbytimestampstrategy']!r}"
        )
    max_per_trigger = _int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger", None, 1)
    min_per_trigger = _int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger", None, 1)
    for value, name in (
        (max_per_trigger, "maxOffsetsPerTrigger"),
        (min_per_trigger, "minOffsetsPerTrigger"),
        (opts.get("maxtriggerdelay"), "maxTriggerDelay"),
    ):
        if value is not None and not streaming:
            raise ConfigError(f"option {name!r} is for streaming reads (readStream)")
    if (
        max_per_trigger is not None
        and min_per_trigger is not None
        and (min_per_trigger > max_per_trigger)
    ):
        raise ConfigError(
            f"option 'minOffsetsPerTrigger' ({min_per_trigger}) is larger than "
            f"'maxOffsetsPerTrigger' ({max_per_trigger})"
        )
    delay = 15 * 60 * 1000
    if "maxtriggerdelay" in opts:
        delay = parse_duration_ms(opts["maxtriggerdelay"], "maxTriggerDelay")
    return ReadOptions(
        namesrv=namesrv,
        topics=topics,
        starting_offsets=starting,
        ending_offsets=ending,
        starting_timestamp=_int(opts, "startingtimestamp", "startingTimestamp", None, 0),
        min_partitions=_int(opts, "minpartitions", "minPartitions", None, 1),
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
        consumer_group=opts.get("consumergroup", DEFAULT_READ_GROUP).strip() or DEFAULT_READ_GROUP,
        pull_batch_size=_int_default(opts, "pullbatchsize", "pullBatchSize", 1024, 1),
        pull_timeout_ms=_int_default(opts, "pulltimeoutms", "pullTimeoutMs", 10000, 1),
        instance_name=opts.get("instancename", "spark").strip() or "spark",
        credentials=_credentials(opts),
        tls=_tls(opts),
        pattern=pattern,
        assign=assign,
        starting_by_timestamp=starting_ts,
        ending_by_timestamp=ending_ts,
        ending_timestamp=_int(opts, "endingtimestamp", "endingTimestamp", None, 0),
        timestamp_strategy="latest" if strategy == "latest" else "error",
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=delay,
        sub_expression=opts.get("subexpression", "*").strip() or "*",
        fetch_retries=_int_default(opts, "fetchoffset.numretries", "fetchOffset.numRetries", 3, 0),
        fetch_retry_interval_ms=_int_default(
            opts, "fetchoffset.retryintervalms", "fetchOffset.retryIntervalMs", 10, 0
        ),
    )


def parse_write_options(options: Mapping[str, str], *, streaming: bool) -> WriteOptions:
    """Check the options of ``df.write`` (``streaming=False``) or ``df.writeStream``."""
    opts = _lower(options)
    _warn_unknown(opts, _WRITE, "writeStream" if streaming else "write")
    namesrv = _required(opts, "namesrv", "namesrv", "nameserver address, 'host:port[;host:port]'")
    guarantee = opts.get("deliveryguarantee", "at-least-once").strip().lower()
    if guarantee not in ("at-least-once", "exactly-once"):
        raise ConfigError(
            "option 'deliveryGuarantee' must be 'at-least-once' or 'exactly-once', "
            f"not {opts['deliveryguarantee']!r}"
        )
    if guarantee == "exactly-once" and not streaming:
        raise ConfigError(
            "option 'deliveryGuarantee' = 'exactly-once' is for df.writeStream; a batch write "
            "(df.write) is at-least-once: Spark retries failed tasks"
        )
    checkpoint = opts.get("checkpointlocation", "").strip() or None
    if guarantee == "exactly-once" and checkpoint is None:
        raise ConfigError(
            "option 'deliveryGuarantee' = 'exactly-once' keeps the sink's commit records in "
            "the query's checkpoint: set option 'checkpointLocation' on writeStream"
        )
    return WriteOptions(
        namesrv=namesrv,
        topic=opts.get("topic", "").strip() or None,
        batch_size=_int_default(opts, "batchsize", "batchSize", 4096, 1),
        send_timeout_ms=_int_default(opts, "sendtimeoutms", "sendTimeoutMs", 10000, 1),
        producer_group=(
            opts.get("producergroup", DEFAULT_WRITE_GROUP).strip() or DEFAULT_WRITE_GROUP
        ),
        sharding_key_column=opts.get("shardingkeycolumn", "").strip() or None,
        max_in_flight_batches=_int_default(opts, "maxinflightbatches", "maxInFlightBatches", 4, 1),
        retry_times_when_send_failed=_int_default(
            opts, "retrytimeswhensendfailed", "retryTimesWhenSendFailed", 2, 0
        ),
        delivery_guarantee="exactly-once" if guarantee == "exactly-once" else "at-least-once",
        instance_name=opts.get("instancename", "spark").strip() or "spark",
        checkpoint_location=checkpoint,
        credentials=_credentials(opts),
        tls=_tls(opts),
    )
