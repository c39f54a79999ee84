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

import gc
import logging
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
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
PULLS_IN_FLIGHT = 4
"""Pull requests a task keeps in flight for its queue (consecutive offset windows)."""
# Properties left out of the `properties` column: those with a column of their own (tags,
# keys, msg_id), those the wire adds to every message (the producer's WAIT, the broker's
# CLUSTER, the MIN/MAX_OFFSET a pull adds), and a transaction's bookkeeping (an exactly-once
# Spark sink's included), which say nothing about the message.
_SKIPPED_PROPERTIES = frozenset(
    {
        "TAGS",
        "KEYS",
        "UNIQ_KEY",
        "WAIT",
        "CLUSTER",
        "MIN_OFFSET",
        "MAX_OFFSET",
        "TRAN_MSG",
        "PGROUP",
        "REAL_TOPIC",
        "REAL_QID",
        "TRANSACTION_CHECK_TIMES",
        "CHECK_IMMUNITY_TIME_IN_SECONDS",
        "RMQ_SPARK_BATCH",
        "RMQ_SPARK_TASK",
    }
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
        self._reset()

    def _reset(self) -> None:
        self.offsets: list[int] = []
        self.bodies: list[bytes] = []
        self.props: list[dict[str, str]] = []
        self.born: list[int] = []
        self.stored: list[int] = []
        self.ids: list[str] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, messages: list[Any]) -> None:
        self.offsets += [m.queue_offset for m in messages]
        self.bodies += [m.body for m in messages]
        self.props += [m.properties for m in messages]
        self.born += [m.born_timestamp for m in messages]
        self.stored += [m.store_timestamp for m in messages]
        self.ids += [m.msg_id for m in messages]

    def flush(self) -> Any:
        n = len(self.offsets)
        q = self.queue
        skip = _SKIPPED_PROPERTIES
        props = self.props
        ms = pa.array(self.born, pa.int64())
        stored = pa.array(self.stored, pa.int64())
        ts_type = self.schema.field("born_timestamp").type
        arrays = [
            pa.array([q.topic] * n, pa.string()),
            pa.array([q.queue_id] * n, pa.int32()),
            pa.array([q.broker] * n, pa.string()),
            pa.array(self.offsets, pa.int64()),
            pa.array(self.bodies, pa.binary()),
            pa.array([p.get("TAGS") for p in props], pa.string()),
            pa.array([p.get("KEYS") for p in props], pa.string()),
            pa.array(
                [{k: v for k, v in p.items() if k not in skip} for p in props],
                self.schema.field("properties").type,
            ),
            pc.multiply(ms, 1000).cast(ts_type),
            pc.multiply(stored, 1000).cast(ts_type),
            pa.array(self.ids, pa.string()),
        ]
        self._reset()
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


class _Puller:
    """Pulls one range with up to ``depth`` requests in flight, each for the next
    ``pullBatchSize`` offsets, handing back the results in offset order (the broker answers a
    pull with at most 32 messages by default, so a range is many round trips)."""

    def __init__(self, opts: ReadOptions, rng: OffsetRange, pool: ThreadPoolExecutor) -> None:
        self.opts = opts
        self.rng = rng
        self.pool = pool
        self.client = _clients.client(opts.namesrv, opts.instance_name)
        self.mq = rng.queue.mq
        self.ahead: deque[tuple[int, Future[Any]]] = deque()
        self.next_window = rng.start

    def _pull(self, offset: int, upto: int) -> Future[Any]:
        return self.pool.submit(
            self.client.pull,
            self.opts.consumer_group,
            self.mq,
            offset,
            min(self.opts.pull_batch_size, upto - offset),
            timeout_ms=self.opts.pull_timeout_ms,
        )

    def result_at(self, offset: int, depth: int) -> Any:
        """The pull result for ``offset``, reusing a pull already in flight for it."""
        while self.ahead and self.ahead[0][0] < offset:
            self.ahead.popleft()[1].cancel()  # a window the reader skipped past
        if self.ahead and self.ahead[0][0] > offset:
            # The last pull came back short (the broker caps pulls by count and bytes, fewer
            # for messages no longer in memory): fill the gap before the next window.
            self.ahead.appendleft((offset, self._pull(offset, self.ahead[0][0])))
        if not self.ahead:
            self.next_window = offset
        while len(self.ahead) < depth and self.next_window < self.rng.end:
            self.ahead.append((self.next_window, self._pull(self.next_window, self.rng.end)))
            self.next_window += self.opts.pull_batch_size
        return self.ahead.popleft()[1].result()

    def close(self) -> None:
        for _, f in self.ahead:
            f.cancel()


def read_range(opts: ReadOptions, rng: OffsetRange, where: str) -> Iterator[Any]:
    """Pull ``rng`` and yield it as RecordBatches of :data:`SCHEMA`."""
    arrow_schema = to_arrow_schema(SCHEMA, timezone="UTC")
    cols = _Columns(rng.queue, arrow_schema)
    offset = rng.start
    empty_pulls = 0
    gc_was_enabled = gc.isenabled()
    gc.disable()  # the rows are many small acyclic objects
    pool = ThreadPoolExecutor(max_workers=PULLS_IN_FLIGHT, thread_name_prefix="rmq-spark-pull")
    puller = _Puller(opts, rng, pool)
    try:
        while offset < rng.end:
            r = puller.result_at(offset, PULLS_IN_FLIGHT)
            if r.status == "FOUND" and r.messages:
                msgs = r.messages
                first = msgs[0].queue_offset
                if first > offset:  # a gap: the messages in between are gone
                    check_data_loss(rng.queue, offset, first, opts.fail_on_data_loss, where)
                if msgs[-1].queue_offset >= rng.end:
                    msgs = [m for m in msgs if m.queue_offset < rng.end]
                cols.add(msgs)
                offset = max(r.next_begin_offset, r.messages[-1].queue_offset + 1)
                empty_pulls = 0
            elif r.status == "OFFSET_ILLEGAL" and offset < r.min_offset:
                offset = check_data_loss(
                    rng.queue, offset, r.min_offset, opts.fail_on_data_loss, where
                )
            elif r.status == "OFFSET_ILLEGAL" or (r.max_offset <= offset and empty_pulls > 5):
                raise ClientError(
                    f"rmq {where}: queue {rng.queue} ends at offset {r.max_offset} but the "
                    f"query planned to read it up to {rng.end}: the queue was truncated or "
                    "recreated"
                )
            else:
                empty_pulls += 1
                if empty_pulls > _EMPTY_PULL_RETRIES:
                    raise ClientError(
                        f"rmq {where}: pulling {rng.queue} at offset {offset} found nothing "
                        f"({r.status}) {_EMPTY_PULL_RETRIES} times although the broker "
                        f"reported offsets up to {rng.end}"
                    )
                time.sleep(0.1)
            if len(cols) >= ROWS_PER_ARROW_BATCH:
                yield cols.flush()
        if len(cols):
            yield cols.flush()
    finally:
        puller.close()
        pool.shutdown(wait=True, cancel_futures=True)
        if gc_was_enabled:
            gc.enable()


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
