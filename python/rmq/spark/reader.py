"""``spark.read.format("rmq")`` and ``spark.readStream.format("rmq")``.

The driver plans: it fetches the topic's queues from the nameserver and each queue's min and
max offset from its broker (GET_MIN_OFFSET / GET_MAX_OFFSET), resolves ``startingOffsets`` /
``endingOffsets`` / ``startingTimestamp`` (SEARCH_OFFSET_BY_TIMESTAMP) and makes one Spark
partition per (broker, queue) with something to read, split further under ``minPartitions``.
An executor task pulls its range ``pullBatchSize`` messages at a time and yields
``pyarrow.RecordBatch`` es in the schema of SPEC §7; rows never pass through Python ``Row`` s.

Offsets are tracked by Spark (in the query's checkpoint), never by a consumer group on the
broker: ``consumerGroup`` only names the pulls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from rmq.errors import ClientError, ConfigError
from rmq.spark import _clients
from rmq.spark.offsets import (
    OffsetRange,
    Offsets,
    QueueKey,
    check_data_loss,
    fetch_queues,
    from_json,
    max_offsets,
    min_offsets,
    rate_limit,
    resolve,
    split_ranges,
    to_json,
)
from rmq.spark.options import ReadOptions

__all__ = ["SCHEMA", "RmqPartition", "RmqReader", "RmqStreamReader", "read_range"]

log = logging.getLogger("rmq.spark")

SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("broker", StringType()),
        StructField("queue_offset", LongType()),
        StructField("body", BinaryType()),
        StructField("tags", StringType()),
        StructField("keys", StringType()),
        StructField("properties", MapType(StringType(), StringType())),
        StructField("born_timestamp", TimestampType()),
        StructField("store_timestamp", TimestampType()),
        StructField("msg_id", StringType()),
    ]
)
"""The row schema on read (SPEC §7)."""

ROWS_PER_ARROW_BATCH = 8192
# Properties left out of the `properties` column: those with a column of their own (tags,
# keys, msg_id), and those the wire adds to every message (the producer's WAIT, the broker's
# CLUSTER, the MIN/MAX_OFFSET a pull adds), which say nothing about the message.
_SKIPPED_PROPERTIES = frozenset(
    {"TAGS", "KEYS", "UNIQ_KEY", "WAIT", "CLUSTER", "MIN_OFFSET", "MAX_OFFSET"}
)
# A pull that finds nothing where the planner saw messages (dispatch lag after a broker
# restart, a slave catching up) is retried this many times, 100 ms apart, before failing.
_EMPTY_PULL_RETRIES = 100


def check_read_schema(schema: StructType) -> None:
    if schema != SCHEMA:
        raise ConfigError(
            "the rmq source has a fixed schema; drop .schema(...) from the read "
            f"(it is {SCHEMA.simpleString()})"
        )


class RmqPartition(InputPartition):
    """One task's work: an offset range of one queue."""

    def __init__(self, rng: OffsetRange) -> None:
        super().__init__(rng)
        self.rng = rng


class _Columns:
    """Column lists of the rows read so far, turned into a RecordBatch by :meth:`flush`."""

    def __init__(self, queue: QueueKey, arrow_schema: Any) -> None:
        self.queue = queue
        self.schema = arrow_schema
        self.offsets: list[int] = []
        self.bodies: list[bytes] = []
        self.tags: list[str | None] = []
        self.keys: list[str | None] = []
        self.props: list[dict[str, str]] = []
        self.born: list[int] = []
        self.stored: list[int] = []
        self.ids: list[str] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, messages: list[Any], end: int) -> None:
        skip = _SKIPPED_PROPERTIES
        for m in messages:
            if m.queue_offset >= end:
                break
            props = m.properties
            self.offsets.append(m.queue_offset)
            self.bodies.append(m.body)
            self.tags.append(props.get("TAGS"))
            self.keys.append(props.get("KEYS"))
            self.props.append({k: v for k, v in props.items() if k not in skip})
            self.born.append(m.born_timestamp * 1000)
            self.stored.append(m.store_timestamp * 1000)
            self.ids.append(m.msg_id)

    def flush(self) -> Any:
        n = len(self.offsets)
        q = self.queue
        arrays = [
            pa.array([q.topic] * n, pa.string()),
            pa.array([q.queue_id] * n, pa.int32()),
            pa.array([q.broker] * n, pa.string()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.bodies, pa.binary()),
            pa.array(self.tags, pa.string()),
            pa.array(self.keys, pa.string()),
            pa.array(self.props, self.schema.field("properties").type),
            pa.array(self.born, self.schema.field("born_timestamp").type),
            pa.array(self.stored, self.schema.field("store_timestamp").type),
            pa.array(self.ids, pa.string()),
        ]
        self.__init__(self.queue, self.schema)  # type: ignore[misc]
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def read_range(opts: ReadOptions, rng: OffsetRange, where: str) -> Iterator[Any]:
    """Pull ``rng`` and yield it as RecordBatches of :data:`SCHEMA`."""
    client = _clients.client(opts.namesrv, opts.instance_name)
    arrow_schema = to_arrow_schema(SCHEMA, timezone="UTC")
    mq = rng.queue.mq
    cols = _Columns(rng.queue, arrow_schema)
    offset = rng.start
    empty_pulls = 0
    while offset < rng.end:
        r = client.pull(
            opts.consumer_group,
            mq,
            offset,
            min(opts.pull_batch_size, rng.end - offset),
            timeout_ms=opts.pull_timeout_ms,
        )
        if r.status == "FOUND" and r.messages:
            first = r.messages[0].queue_offset
            if first > offset:  # a gap: the messages in between are gone
                check_data_loss(rng.queue, offset, first, opts.fail_on_data_loss, where)
            cols.add(r.messages, rng.end)
            offset = max(r.next_begin_offset, r.messages[-1].queue_offset + 1)
            empty_pulls = 0
        elif r.status == "OFFSET_ILLEGAL" and offset < r.min_offset:
            offset = check_data_loss(rng.queue, offset, r.min_offset, opts.fail_on_data_loss, where)
        elif r.status == "OFFSET_ILLEGAL" or (r.max_offset <= offset and empty_pulls > 5):
            raise ClientError(
                f"rmq {where}: queue {rng.queue} ends at offset {r.max_offset} but the query "
                f"planned to read it up to {rng.end}: the queue was truncated or recreated"
            )
        else:
            empty_pulls += 1
            if empty_pulls > _EMPTY_PULL_RETRIES:
                raise ClientError(
                    f"rmq {where}: pulling {rng.queue} at offset {offset} found nothing "
                    f"({r.status}) {_EMPTY_PULL_RETRIES} times although the broker reported "
                    f"offsets up to {rng.end}"
                )
            time.sleep(0.1)
        if len(cols) >= ROWS_PER_ARROW_BATCH:
            yield cols.flush()
    if len(cols):
        yield cols.flush()


def _plan(
    opts: ReadOptions, starts: Offsets, ends: Offsets, lows: Offsets, where: str
) -> list[RmqPartition]:
    ranges = []
    for q, end in ends.items():
        start = check_data_loss(q, starts.get(q, lows[q]), lows[q], opts.fail_on_data_loss, where)
        if end < start:
            if where == "read":
                raise ConfigError(
                    f"endingOffsets {end} of queue {q} is before its starting offset {start}"
                )
            end = start
        ranges.append(OffsetRange(q, start, end))
    return [RmqPartition(r) for r in split_ranges(sorted(ranges), opts.min_partitions)]


class RmqReader(DataSourceReader):
    """The batch reader (``spark.read``)."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts

    def partitions(self) -> list[RmqPartition]:
        o = self.opts
        client = _clients.client(o.namesrv, o.instance_name)
        queues = fetch_queues(client, o.topics, o.namesrv)
        lows, highs = min_offsets(client, queues), max_offsets(client, queues)
        starts = resolve(
            client,
            queues,
            o.starting_offsets,
            timestamp_ms=o.starting_timestamp,
            default=-2,
            lows=lows,
            highs=highs,
        )
        ends = resolve(client, queues, o.ending_offsets, default=-1, lows=lows, highs=highs)
        for q, end in ends.items():
            if end > highs[q]:
                raise ConfigError(
                    f"endingOffsets {end} of queue {q} is past its max offset {highs[q]}"
                )
        return _plan(o, starts, ends, lows, "read")

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RmqPartition):  # Spark's stand-in when there are none
            return iter(())
        return read_range(self.opts, partition.rng, "read")


class RmqStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The streaming reader (``spark.readStream``): offsets per queue in the checkpoint,
    ``latestOffset`` from GET_MAX_OFFSET, ``maxOffsetsPerTrigger``, Trigger.AvailableNow."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._target: Offsets | None = None

    def _client_and_queues(self) -> tuple[Any, list[QueueKey]]:
        o = self.opts
        client = _clients.client(o.namesrv, o.instance_name)
        return client, fetch_queues(client, o.topics, o.namesrv)

    def initialOffset(self) -> dict[str, Any]:
        o = self.opts
        client, queues = self._client_and_queues()
        return to_json(
            resolve(client, queues, o.starting_offsets, timestamp_ms=o.starting_timestamp)
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        n = self.opts.max_offsets_per_trigger
        return ReadAllAvailable() if n is None else ReadMaxRows(n)

    def prepareForTriggerAvailableNow(self) -> None:
        client, queues = self._client_and_queues()
        self._target = max_offsets(client, queues)

    def _latest(self) -> Offsets:
        if self._target is not None:
            return dict(self._target)
        client, queues = self._client_and_queues()
        return max_offsets(client, queues)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start, "start offset")
        latest = self._latest()
        # A queue the topic gained since the query started is read from its min offset, as a
        # new Kafka partition is read from earliest.
        if new := [q for q in latest if q not in begin]:
            client = _clients.client(self.opts.namesrv, self.opts.instance_name)
            begin.update(min_offsets(client, new))
        # Never move back (a checkpoint past the broker's max offset: the queue was recreated).
        latest = {q: max(off, begin[q]) for q, off in latest.items()}
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        return to_json(latest)

    def reportLatestOffset(self) -> dict[str, Any] | None:
        client, queues = self._client_and_queues()
        return to_json(max_offsets(client, queues))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[RmqPartition]:
        starts, ends = from_json(start, "start offset"), from_json(end, "end offset")
        client = _clients.client(self.opts.namesrv, self.opts.instance_name)
        lows = min_offsets(client, ends)
        # New queues start at their min offset (as new Kafka partitions start at earliest).
        return _plan(self.opts, starts, ends, lows, "readStream")

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if not isinstance(partition, RmqPartition):  # Spark's stand-in when there are none
            return iter(())
        return read_range(self.opts, partition.rng, "readStream")

    def commit(self, end: dict[str, Any]) -> None:
        """Spark has processed everything before ``end``; offsets live in its checkpoint."""

    def stop(self) -> None:
        """Nothing to release: clients are per process and shut down when it exits."""
