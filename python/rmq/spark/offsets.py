"""Queues, offsets and offset ranges: what the driver plans reads with.

A Spark offset for this source is one JSON object, the format RocketMQ's Spark connector used
and ``startingOffsets`` takes: ``{"topic": {"broker": {"queueId": offset}}}``. Internally it is
a dict keyed by :class:`QueueKey`. An :class:`OffsetRange` is a half-open range ``[start, end)``
of one queue's ConsumeQueue offsets: one Spark partition (or a slice of one, under
``minPartitions``). Nothing here imports pyspark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rmq._rmq import ClientInstance
from rmq.client.message_queue import MessageQueue
from rmq.errors import ClientError, ConfigError, RmqError, TopicNotExistError
from rmq.spark.options import EARLIEST, LATEST, OffsetSpec

__all__ = [
    "DataLossError",
    "OffsetRange",
    "Offsets",
    "QueueKey",
    "check_data_loss",
    "fetch_queues",
    "from_json",
    "max_offsets",
    "min_offsets",
    "rate_limit",
    "resolve",
    "split_ranges",
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


def fetch_queues(client: ClientInstance, topics: Iterable[str], namesrv: str) -> list[QueueKey]:
    """Every readable queue of ``topics``, sorted; a clear error when a topic has no route."""
    keys: list[QueueKey] = []
    for topic in topics:
        try:
            queues = client.fetch_subscribe_queues(topic)
        except TopicNotExistError:
            queues = []
        except RmqError as exc:
            raise ClientError(
                f"rmq: cannot fetch the route of topic {topic!r} from nameserver {namesrv}: {exc}"
            ) from exc
        if not queues:
            raise ClientError(
                f"rmq: topic {topic!r} does not exist (nameserver {namesrv} has no route for it); "
                "create it first (rmq updateTopic -c CLUSTER -t TOPIC)"
            )
        keys.extend(QueueKey(mq.topic, mq.broker_name, mq.queue_id) for mq in queues)
    return sorted(keys)


def min_offsets(client: ClientInstance, queues: Iterable[QueueKey]) -> Offsets:
    return {q: client.min_offset(q.mq) for q in queues}


def max_offsets(client: ClientInstance, queues: Iterable[QueueKey]) -> Offsets:
    return {q: client.max_offset(q.mq) for q in queues}


def resolve(
    client: ClientInstance,
    queues: list[QueueKey],
    spec: OffsetSpec,
    *,
    timestamp_ms: int | None = None,
    default: int = EARLIEST,
    lows: Offsets | None = None,
    highs: Offsets | None = None,
) -> Offsets:
    """Concrete offsets of ``queues`` for a ``startingOffsets``/``endingOffsets`` value: ``-2``
    and ``earliest`` are the min offset, ``-1`` and ``latest`` the max offset; a timestamp wins
    over ``spec`` (the first message stored at or after it); queues a JSON spec does not name
    take ``default``. JSON naming a queue the topic does not have is an error."""
    lows = lows if lows is not None else min_offsets(client, queues)
    highs = highs if highs is not None else max_offsets(client, queues)
    if timestamp_ms is not None:
        return {q: client.search_offset(q.mq, timestamp_ms) for q in queues}
    if spec == "earliest":
        return dict(lows)
    if spec == "latest":
        return dict(highs)
    assert isinstance(spec, dict)
    known = set(queues)
    for topic, brokers in spec.items():
        for broker, ids in brokers.items():
            for qid in ids:
                if QueueKey(topic, broker, qid) not in known:
                    raise ConfigError(
                        f"offsets name queue {topic}/{broker}/{qid}, which the topic does not "
                        f"have; its queues: {', '.join(map(str, queues))}"
                    )
    out: Offsets = {}
    for q in queues:
        off = spec.get(q.topic, {}).get(q.broker, {}).get(q.queue_id, default)
        out[q] = lows[q] if off == EARLIEST else highs[q] if off == LATEST else off
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
