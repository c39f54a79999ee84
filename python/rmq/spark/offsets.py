"""Queues, offsets and offset ranges: what the driver plans reads with.

A Spark offset for this source is one JSON object, the format RocketMQ's Spark connector used
and ``startingOffsets`` takes: ``{"topic": {"broker": {"queueId": offset}}}``. Internally it is
a dict keyed by :class:`QueueKey`. An :class:`OffsetRange` is a half-open range ``[start, end)``
of one queue's ConsumeQueue offsets: one Spark partition (or a slice of one, under
``minPartitions``). Nothing here imports pyspark.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from rmq import _rmq
from rmq._rmq import ClientInstance
from rmq.client.message_queue import MessageQueue
from rmq.errors import ClientError, ConfigError, RmqError, TopicNotExistError
from rmq.spark.options import EARLIEST, LATEST, OffsetSpec, ReadOptions, TimestampSpec

T = TypeVar("T")

__all__ = [
    "NO_RETRY",
    "DataLossError",
    "OffsetRange",
    "Offsets",
    "QueueKey",
    "Retry",
    "behind_latest",
    "check_data_loss",
    "fetch_queues",
    "from_json",
    "max_offsets",
    "min_offsets",
    "rate_limit",
    "resolve",
    "split_ranges",
    "subscribed_queues",
    "to_json",
]


class DataLossError(ClientError):
    """Messages a query should read are gone: deleted by retention (``fileReservedTime``)
    before the query got to them. ``failOnDataLoss=false`` skips them instead."""


@dataclass(frozen=True, order=True, slots=True)
class QueueKey:
    """One queue: ``topic``'s queue ``queue_id`` on broker ``broker``."""

    topic: str
    broker: str
    queue_id: int

    @property
    def mq(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker, self.queue_id)

    def __str__(self) -> str:
        return f"{self.topic}/{self.broker}/{self.queue_id}"


Offsets = dict[QueueKey, int]


@dataclass(frozen=True, order=True, slots=True)
class OffsetRange:
    """ConsumeQueue offsets ``[start, end)`` of one queue."""

    queue: QueueKey
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def to_json(offsets: Mapping[QueueKey, int]) -> dict[str, dict[str, dict[str, int]]]:
    """``{"topic": {"broker": {"queueId": offset}}}``, sorted, as Spark checkpoints it."""
    doc: dict[str, dict[str, dict[str, int]]] = {}
    for q in sorted(offsets):
        doc.setdefault(q.topic, {}).setdefault(q.broker, {})[str(q.queue_id)] = offsets[q]
    return doc


def from_json(doc: Mapping[str, Any], what: str = "offset") -> Offsets:
    """Inverse of :func:`to_json` (the checkpointed offset Spark hands back)."""
    out: Offsets = {}
    try:
        for topic, brokers in doc.items():
            for broker, queues in brokers.items():
                for qid, offset in queues.items():
                    out[QueueKey(topic, broker, int(qid))] = int(offset)
    except (AttributeError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"the {what} {doc!r} is not an rmq offset {{topic: {{broker: {{queueId: offset}}}}}}"
        ) from exc
    return out


@dataclass(frozen=True, slots=True)
class Retry:
    """Options ``fetchOffset.numRetries`` and ``fetchOffset.retryIntervalMs``: a driver-side
    query (a route, an offset) that fails is tried again ``times`` more times, ``interval_ms``
    apart. A topic that does not exist and a bad option are not retried."""

    times: int = 0
    interval_ms: int = 0

    @classmethod
    def of(cls, opts: ReadOptions) -> Retry:
        return cls(opts.fetch_retries, opts.fetch_retry_interval_ms)

    def __call__(self, call: Callable[..., T], *args: Any) -> T:
        for attempt in range(self.times + 1):
            try:
                return call(*args)
            except (TopicNotExistError, ConfigError):
                raise
            except RmqError:
                if attempt == self.times:
                    raise
                time.sleep(self.interval_ms / 1000)
        raise AssertionError("unreachable")


NO_RETRY = Retry()


def fetch_queues(
    client: ClientInstance,
    topics: Iterable[str],
    namesrv: str,
    retry: Retry = NO_RETRY,
    *,
    missing_ok: bool = False,
) -> list[QueueKey]:
    """Every readable queue of ``topics``, sorted; a clear error when a topic has no route
    (unless ``missing_ok``: a topic a pattern matched may be deleted since)."""
    keys: list[QueueKey] = []
    for topic in topics:
        try:
            queues = retry(client.fetch_subscribe_queues, topic)
        except TopicNotExistError:
            queues = []
        except RmqError as exc:
            raise ClientError(
                f"rmq: cannot fetch the route of topic {topic!r} from nameserver {namesrv}: {exc}"
            ) from exc
        if not queues and not missing_ok:
            raise ClientError(
                f"rmq: topic {topic!r} does not exist (nameserver {namesrv} has no route for it); "
                "create it first (rmq updateTopic -c CLUSTER -t TOPIC)"
            )
        keys.extend(QueueKey(mq.topic, mq.broker_name, mq.queue_id) for mq in queues)
    return sorted(keys)


_SYSTEM_TOPICS = frozenset(
    getattr(_rmq, n)
    for n in dir(_rmq)
    if n.endswith("_TOPIC") or n.endswith("_TOPIC_V2") or n == "CID_SYS_RMQ_TRANS"
)
_SYSTEM_PREFIXES = (_rmq.RETRY_GROUP_TOPIC_PREFIX, _rmq.DLQ_GROUP_TOPIC_PREFIX, "rmq_sys_")


def pattern_topics(opts: ReadOptions, retry: Retry = NO_RETRY) -> list[str]:
    """The nameserver's topics whose whole name matches ``subscribePattern`` (system topics,
    retry and DLQ topics left out, as Kafka leaves out its internal topics)."""
    from rmq.admin.client import Admin

    assert opts.pattern is not None
    creds = opts.credentials
    admin = Admin(
        opts.namesrv,
        access_key=creds.access_key if creds else None,
        secret_key=creds.secret_key if creds else None,
        tls=opts.tls,
    )
    try:
        names = retry(admin.topic_list)
    finally:
        admin.close()
    regex = re.compile(opts.pattern)
    return [
        t
        for t in names
        if regex.fullmatch(t)
        and t not in _SYSTEM_TOPICS
        and not t.lower().startswith(tuple(p.lower() for p in _SYSTEM_PREFIXES))
    ]


def subscribed_queues(client: ClientInstance, opts: ReadOptions) -> list[QueueKey]:
    """The queues the query reads now: those of option ``topic``, of the topics
    ``subscribePattern`` matches, or those ``assign`` names (each checked to exist)."""
    retry = Retry.of(opts)
    if opts.pattern is not None:
        return fetch_queues(
            client, pattern_topics(opts, retry), opts.namesrv, retry, missing_ok=True
        )
    queues = fetch_queues(client, opts.topics, opts.namesrv, retry)
    if opts.assign is None:
        return queues
    chosen: list[QueueKey] = []
    for topic, wanted in opts.assign.items():
        have = [q for q in queues if q.topic == topic]
        if isinstance(wanted, dict):
            picks = [QueueKey(topic, b, i) for b, ids in wanted.items() for i in ids]
        else:
            picks = [q for q in have if q.queue_id in wanted]
            if missing := set(wanted) - {p.queue_id for p in picks}:
                raise ConfigError(
                    f"option 'assign' names queue id(s) {sorted(missing)} of topic {topic!r}, "
                    f"which no broker has; its queues: {', '.join(map(str, have))}"
                )
        for p in picks:
            if p not in have:
                raise ConfigError(
                    f"option 'assign' names queue {p}, which topic {topic!r} does not have; "
                    f"its queues: {', '.join(map(str, have))}"
                )
        chosen.extend(picks)
    return sorted(set(chosen))


def min_offsets(
    client: ClientInstance, queues: Iterable[QueueKey], retry: Retry = NO_RETRY
) -> Offsets:
    return {q: retry(client.min_offset, q.mq) for q in queues}


def max_offsets(
    client: ClientInstance, queues: Iterable[QueueKey], retry: Retry = NO_RETRY
) -> Offsets:
    return {q: retry(client.max_offset, q.mq) for q in queues}


def _named_queues(spec: Mapping[str, Mapping[str, Any]], queues: list[QueueKey]) -> None:
    known = set(queues)
    for topic, brokers in spec.items():
        for broker, ids in brokers.items():
            for qid in ids:
                if QueueKey(topic, broker, qid) not in known:
                    raise ConfigError(
                        f"offsets name queue {topic}/{broker}/{qid}, which the query does not "
                        f"read; its queues: {', '.join(map(str, queues))}"
                    )


def at_time(
    client: ClientInstance,
    q: QueueKey,
    timestamp_ms: int,
    high: int,
    strategy: str,
    retry: Retry = NO_RETRY,
) -> int:
    """The offset of ``q``'s first message stored at or after ``timestamp_ms``
    (SEARCH_OFFSET_BY_TIMESTAMP). With none, ``high`` under ``strategy`` ``latest``, or an
    error under ``error`` (Kafka's ``startingOffsetsByTimestampStrategy``)."""
    off = retry(client.search_offset, q.mq, timestamp_ms)
    if off < high:
        return off
    if strategy == "error":
        raise ConfigError(
            f"rmq: queue {q} has no message stored at or after timestamp {timestamp_ms}; set "
            "option startingOffsetsByTimestampStrategy=latest to start such queues at their "
            "latest offset"
        )
    return high


def resolve(
    client: ClientInstance,
    queues: list[QueueKey],
    spec: OffsetSpec,
    *,
    timestamp_ms: int | None = None,
    by_timestamp: TimestampSpec | None = None,
    strategy: str = "latest",
    default: int = EARLIEST,
    lows: Offsets | None = None,
    highs: Offsets | None = None,
    retry: Retry = NO_RETRY,
) -> Offsets:
    """Concrete offsets of ``queues`` for a ``startingOffsets``/``endingOffsets`` value: ``-2``
    and ``earliest`` are the min offset, ``-1`` and ``latest`` the max offset; a timestamp wins
    over ``by_timestamp`` (per queue), which wins over ``spec``: each queue from its first
    message stored at or after it, or as ``strategy`` says when there is none; queues a JSON
    spec does not name take ``default``. JSON naming a queue the query does not read is an
    error."""
    lows = lows if lows is not None else min_offsets(client, queues, retry)
    highs = highs if highs is not None else max_offsets(client, queues, retry)
    if timestamp_ms is not None:
        return {q: at_time(client, q, timestamp_ms, highs[q], strategy, retry) for q in queues}
    out: Offsets = {}
    if spec == "earliest":
        out = dict(lows)
    elif spec == "latest":
        out = dict(highs)
    else:
        assert isinstance(spec, dict)
        _named_queues(spec, queues)
        for q in queues:
            off = spec.get(q.topic, {}).get(q.broker, {}).get(q.queue_id, default)
            out[q] = lows[q] if off == EARLIEST else highs[q] if off == LATEST else off
    if by_timestamp is not None:
        _named_queues(by_timestamp, queues)
        for q in queues:
            ts = by_timestamp.get(q.topic, {}).get(q.broker, {}).get(q.queue_id)
            if ts is not None:
                out[q] = at_time(client, q, ts, highs[q], strategy, retry)
    return out


def check_data_loss(
    queue: QueueKey, start: int, min_offset: int, fail_on_data_loss: bool, where: str
) -> int:
    """The offset to read ``queue`` from when the query wants ``start`` and the broker keeps
    offsets from ``min_offset``: ``start``, or ``min_offset`` (``failOnDataLoss=false``), or a
    :class:`DataLossError` naming what is gone."""
    if start >= min_offset:
        return start
    if fail_on_data_loss:
        raise DataLossError(
            f"rmq {where}: offsets [{start}, {min_offset}) of queue {queue} were deleted by the "
            f"broker's retention (fileReservedTime) before they were read: "
            f"{min_offset - start} message(s) lost. Set option failOnDataLoss=false to skip to "
            f"offset {min_offset} instead of failing."
        )
    return min_offset


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """Non-empty ``ranges``, the largest split further so there are about ``min_partitions``
    (Kafka's ``minPartitions``: a hint, sizes proportional to each queue's share)."""
    ranges = [r for r in ranges if r.size > 0]
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    if total == 0:
        return ranges
    target = max(1, math.ceil(total / min_partitions))
    out: list[OffsetRange] = []
    for r in ranges:
        parts = max(1, math.ceil(r.size / target))
        step = math.ceil(r.size / parts)
        out.extend(
            OffsetRange(r.queue, s, min(s + step, r.end)) for s in range(r.start, r.end, step)
        )
    return out


def rate_limit(start: Offsets, latest: Offsets, limit: int) -> Offsets:
    """End offsets reading at most ``limit`` messages past ``start``, shared among the queues
    in proportion to their backlog (as the Kafka source's ``maxOffsetsPerTrigger``)."""
    backlog = {q: max(0, latest[q] - start.get(q, latest[q])) for q in latest}
    total = sum(backlog.values())
    if total <= limit:
        return dict(latest)
    end: Offsets = {}
    given = 0
    for q in sorted(latest):
        share = backlog[q] * limit // total
        end[q] = start.get(q, latest[q]) + share
        given += share
    # Hand what rounding left over to the queues with the most left, so a trigger always moves.
    for q in sorted(latest, key=lambda k: latest[k] - end[k], reverse=True):
        if given >= limit:
            break
        if end[q] < latest[q]:
            end[q] += 1
            given += 1
    return end


def behind_latest(end: Mapping[str, Any], latest: Mapping[str, Any]) -> dict[str, str]:
    """Kafka's source ``metrics()`` for one micro-batch: how many messages each queue's end
    offset is behind its latest offset (``min``/``avg``/``maxOffsetsBehindLatest``, strings as
    Spark reports metrics); empty when no queue is known."""
    ends, latests = from_json(end, "end offset"), from_json(latest, "latest offset")
    behind = [max(0, latests[q] - off) for q, off in ends.items() if q in latests]
    if not behind:
        return {}
    return {
        "minOffsetsBehindLatest": str(min(behind)),
        "avgOffsetsBehindLatest": str(sum(behind) / len(behind)),
        "maxOffsetsBehindLatest": str(max(behind)),
    }
