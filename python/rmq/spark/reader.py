"""``spark.read.format("rmq")`` and ``spark.readStream.format("rmq")``.

The driver plans: it fetches the topic's queues from the nameserver and each queue's min and
max offset from its broker (GET_MIN_OFFSET / GET_MAX_OFFSET), resolves ``startingOffsets`` /
``endingOffsets`` / ``startingTimestamp`` (SEARCH_OFFSET_BY_TIMESTAMP) and makes one Spark
partition per (broker, queue) with something to read, split further under ``minPartitions``.
An executor task pulls its range asking ``pullBatchSize`` messages a pull (the broker grants at
most its ``maxTransferCountOnMessageInMemory`` and byte cap; the first pull's answer sets the
stride of the windows sent after it), several pulls in flight, into Arrow buffers on the Rust
side, and yields ``pyarrow.RecordBatch`` es in the schema of SPEC §7; rows never become Python
objects.

Offsets are tracked by Spark (in the query's checkpoint), never by a consumer group on the
broker: ``consumerGroup`` only names the pulls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
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

from rmq import _rmq
from rmq._rmq import PulledColumns
from rmq.errors import ClientError, ConfigError
from rmq.spark import _clients
from rmq.spark.offsets import (
    OffsetRange,
    Offsets,
    QueueKey,
    Retry,
    check_data_loss,
    from_json,
    max_offsets,
    min_offsets,
    rate_limit,
    resolve,
    split_ranges,
    subscribed_queues,
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
PULLS_IN_FLIGHT = 16
"""Pull requests a task keeps in flight for its queue (consecutive offset windows)."""
# Properties left out of the `properties` column: those with a column of their own (tags,
# keys, msg_id), those the wire adds to every message (the producer's WAIT, the broker's
# CLUSTER, the MIN/MAX_OFFSET a pull adds), and a transaction's bookkeeping (an exactly-once
# Spark sink's included), which say nothing about the message.
_SKIPPED_PROPERTIES = frozenset(
    {
        _rmq.PROPERTY_TAGS,
        _rmq.PROPERTY_KEYS,
        _rmq.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        _rmq.PROPERTY_WAIT_STORE_MSG_OK,
        _rmq.PROPERTY_CLUSTER,
        _rmq.PROPERTY_MIN_OFFSET,
        _rmq.PROPERTY_MAX_OFFSET,
        _rmq.PROPERTY_TRANSACTION_PREPARED,
        _rmq.PROPERTY_PRODUCER_GROUP,
        _rmq.PROPERTY_REAL_TOPIC,
        _rmq.PROPERTY_REAL_QUEUE_ID,
        _rmq.PROPERTY_TRANSACTION_CHECK_TIMES,
        _rmq.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
        "RMQ_SPARK_BATCH",
        "RMQ_SPARK_TASK",
    }
)
_SKIPPED_PROPERTIES_LIST = sorted(_SKIPPED_PROPERTIES)
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


def _buf(data: bytes) -> Any:
    return pa.py_buffer(data)


def _strings(n: int, validity: bytes | None, offsets: bytes, data: bytes, kind: Any) -> Any:
    """An Arrow string or binary array over the buffers the native pull filled."""
    valid = _buf(validity) if validity is not None else None
    return pa.Array.from_buffers(kind, n, [valid, _buf(offsets), _buf(data)])


def _int64s(n: int, data: bytes) -> Any:
    return pa.Array.from_buffers(pa.int64(), n, [None, _buf(data)])


def _record_batch(c: PulledColumns, queue: QueueKey, schema: Any) -> Any:
    """The rows of ``c`` as a RecordBatch of :data:`SCHEMA`, built on the native buffers."""
    n = c.num_rows
    entries = len(c.property_key_offsets) // 4 - 1
    props = pa.MapArray.from_arrays(
        pa.Array.from_buffers(pa.int32(), n + 1, [None, _buf(c.property_offsets)]),
        _strings(entries, None, c.property_key_offsets, c.property_key_data, pa.string()),
        _strings(entries, None, c.property_value_offsets, c.property_value_data, pa.string()),
    )
    ts_type = schema.field("born_timestamp").type
    arrays = [
        pa.array([queue.topic] * n, pa.string()),
        pa.array([queue.queue_id] * n, pa.int32()),
        pa.array([queue.broker] * n, pa.string()),
        _int64s(n, c.queue_offsets),
        _strings(n, None, c.body_offsets, c.body_data, pa.binary()),
        _strings(n, c.tags_validity, c.tags_offsets, c.tags_data, pa.string()),
        _strings(n, c.keys_validity, c.keys_offsets, c.keys_data, pa.string()),
        props.cast(schema.field("properties").type),
        pc.multiply(_int64s(n, c.born_timestamps), 1000).cast(ts_type),
        pc.multiply(_int64s(n, c.store_timestamps), 1000).cast(ts_type),
        _strings(n, None, c.msg_id_offsets, c.msg_id_data, pa.string()),
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_range(opts: ReadOptions, rng: OffsetRange, where: str) -> Iterator[Any]:
    """Pull ``rng`` and yield it as RecordBatches of :data:`SCHEMA`: the native client pulls
    up to :data:`ROWS_PER_ARROW_BATCH` rows per call, :data:`PULLS_IN_FLIGHT` pulls at a time,
    into Arrow buffers (no Python object per message)."""
    arrow_schema = to_arrow_schema(SCHEMA, timezone="UTC")
    client = _clients.client(opts.namesrv, opts.instance_name, opts.credentials, opts.tls)
    mq = rng.queue.mq
    offset = rng.start
    empty_pulls = 0
    while offset < rng.end:
        c = client.pull_columns(
            opts.consumer_group,
            mq,
            offset,
            rng.end,
            ROWS_PER_ARROW_BATCH,
            batch=opts.pull_batch_size,
            depth=PULLS_IN_FLIGHT,
            timeout_ms=opts.pull_timeout_ms,
            skip_properties=_SKIPPED_PROPERTIES_LIST,
            expression=opts.sub_expression,
        )
        if c.num_rows:
            yield _record_batch(c, rng.queue, arrow_schema)
        if c.num_rows or c.next_offset > offset:  # a tag filter may skip without rows
            offset = c.next_offset
            empty_pulls = 0
        if c.status == "FOUND":
            continue
        if c.status == "GAP":  # the messages in between are gone
            offset = check_data_loss(rng.queue, offset, c.gap_to, opts.fail_on_data_loss, where)
        elif c.status == "OFFSET_ILLEGAL" and offset < c.min_offset:
            offset = check_data_loss(rng.queue, offset, c.min_offset, opts.fail_on_data_loss, where)
        elif c.status == "OFFSET_ILLEGAL" or (c.max_offset <= offset and empty_pulls > 5):
            raise ClientError(
                f"rmq {where}: queue {rng.queue} ends at offset {c.max_offset} but the "
                f"query planned to read it up to {rng.end}: the queue was truncated or "
                "recreated"
            )
        elif not c.num_rows:
            # A pull that finds nothing where the planner saw messages: dispatch lag after a
            # broker restart, a slave catching up.
            empty_pulls += 1
            if empty_pulls > _EMPTY_PULL_RETRIES:
                raise ClientError(
                    f"rmq {where}: pulling {rng.queue} at offset {offset} found nothing "
                    f"({c.status}) {_EMPTY_PULL_RETRIES} times although the broker "
                    f"reported offsets up to {rng.end}"
                )
            time.sleep(0.1)


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
        retry = Retry.of(o)
        client = _clients.client(o.namesrv, o.instance_name, o.credentials, o.tls)
        queues = subscribed_queues(client, o)
        lows, highs = min_offsets(client, queues, retry), max_offsets(client, queues, retry)
        starts = resolve(
            client,
            queues,
            o.starting_offsets,
            timestamp_ms=o.starting_timestamp,
            by_timestamp=o.starting_by_timestamp,
            strategy=o.timestamp_strategy,
            default=-2,
            lows=lows,
            highs=highs,
            retry=retry,
        )
        ends = resolve(
            client,
            queues,
            o.ending_offsets,
            timestamp_ms=o.ending_timestamp,
            by_timestamp=o.ending_by_timestamp,
            default=-1,
            lows=lows,
            highs=highs,
            retry=retry,
        )
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
        self.retry = Retry.of(opts)
        self._target: Offsets | None = None
        # When the last micro-batch was planned (minOffsetsPerTrigger / maxTriggerDelay).
        self._last_trigger = time.monotonic()

    def _client_and_queues(self) -> tuple[Any, list[QueueKey]]:
        o = self.opts
        client = _clients.client(o.namesrv, o.instance_name, o.credentials, o.tls)
        return client, subscribed_queues(client, o)

    def initialOffset(self) -> dict[str, Any]:
        o = self.opts
        client, queues = self._client_and_queues()
        return to_json(
            resolve(
                client,
                queues,
                o.starting_offsets,
                timestamp_ms=o.starting_timestamp,
                by_timestamp=o.starting_by_timestamp,
                strategy=o.timestamp_strategy,
                retry=self.retry,
            )
        )

    def getDefaultReadLimit(self) -> ReadLimit:
        n, least = self.opts.max_offsets_per_trigger, self.opts.min_offsets_per_trigger
        if n is not None:
            return ReadMaxRows(n)
        return ReadAllAvailable() if least is None else ReadMinRows(least)

    def prepareForTriggerAvailableNow(self) -> None:
        client, queues = self._client_and_queues()
        self._target = max_offsets(client, queues, self.retry)

    def _latest(self) -> Offsets:
        if self._target is not None:
            return dict(self._target)
        client, queues = self._client_and_queues()
        return max_offsets(client, queues, self.retry)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        begin = from_json(start, "start offset")
        latest = self._latest()
        # A queue the topic gained since the query started is read from its min offset, as a
        # new Kafka partition is read from earliest.
        if new := [q for q in latest if q not in begin]:
            client = _clients.client(
                self.opts.namesrv, self.opts.instance_name, self.opts.credentials, self.opts.tls
            )
            begin.update(min_offsets(client, new, self.retry))
        # Never move back (a checkpoint past the broker's max offset: the queue was recreated).
        latest = {q: max(off, begin[q]) for q, off in latest.items()}
        if self._wait_for_more(begin, latest):
            return start
        if isinstance(limit, ReadMaxRows):
            latest = rate_limit(begin, latest, limit.max_rows)
        self._last_trigger = time.monotonic()
        return to_json(latest)

    def _wait_for_more(self, begin: Offsets, latest: Offsets) -> bool:
        """``minOffsetsPerTrigger``: skip this trigger while fewer messages than that are new,
        unless ``maxTriggerDelay`` has passed since the last micro-batch (as Kafka's source;
        Trigger.AvailableNow reads everything regardless)."""
        n = self.opts.min_offsets_per_trigger
        if n is None or self._target is not None:
            return False
        new = sum(max(0, off - begin.get(q, off)) for q, off in latest.items())
        waited_ms = (time.monotonic() - self._last_trigger) * 1000
        return new < n and waited_ms < self.opts.max_trigger_delay_ms

    def reportLatestOffset(self) -> dict[str, Any] | None:
        client, queues = self._client_and_queues()
        return to_json(max_offsets(client, queues, self.retry))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> list[RmqPartition]:
        starts, ends = from_json(start, "start offset"), from_json(end, "end offset")
        client = _clients.client(
            self.opts.namesrv, self.opts.instance_name, self.opts.credentials, self.opts.tls
        )
        lows = min_offsets(client, ends, self.retry)
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
