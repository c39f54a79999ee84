"""``df.write.format("rmq")`` and ``df.writeStream.format("rmq")``.

Both writers are Arrow writers: each executor task receives the DataFrame's rows as
``pyarrow.RecordBatch`` columns, turns a batch into messages without going through Spark
``Row`` objects, and hands them to the native producer ``batchSize`` rows at a time (one
SEND_BATCH_MESSAGE each, split further to fit ``maxMessageSize``), with up to
``maxInFlightBatches`` requests in flight per task (the producer releases the GIL while it
waits).

Columns: ``body`` (binary or string) is required; ``topic`` (string; null means the ``topic``
option), ``tags`` (string), ``keys`` (string; several space-separated) and ``properties``
(map<string,string>) are optional. Other columns are ignored, so a DataFrame read from rmq
can be written back as it is. With ``shardingKeyColumn`` each row goes to the queue its key
hashes to (RocketMQ's ``SelectMessageQueueByHash``), so rows with one key stay in order.

Every message gets a unique id (its ``UNIQ_KEY``, the ``msg_id`` a reader sees) derived from
the write, the Spark partition and the row's index in it: a task that Spark retries sends the
same ids again, so readers can drop the duplicates. Delivery is at least once.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    MapType,
    StringType,
    StructType,
)

from rmq._rmq import SendResult
from rmq.client.message_queue import MessageQueue
from rmq.client.producer import Producer, select_by_hash
from rmq.errors import ConfigError
from rmq.spark import _clients
from rmq.spark.options import WriteOptions

__all__ = ["RmqCommitMessage", "RmqStreamWriter", "RmqWriter", "check_write_schema"]

log = logging.getLogger("rmq.spark")

UNIQ_KEY = "UNIQ_KEY"
TAGS = "TAGS"
KEYS = "KEYS"
# Spark sets these local properties on the tasks of a streaming micro-batch.
_BATCH_ID_PROPERTY = "streaming.sql.batchId"
_QUERY_ID_PROPERTY = "sql.streaming.queryId"
# Bytes a batch entry takes besides its body and properties (sizes, flag, CRC), with room to
# spare: a request must stay under the producer's and broker's maxMessageSize.
_ENTRY_OVERHEAD_BYTES = 64
_MAX_REQUEST_BYTES = 4 * 1024 * 1024 - 64 * 1024

_OPTIONAL_COLUMNS: dict[str, tuple[type[DataType], ...]] = {
    "topic": (StringType,),
    "tags": (StringType,),
    "keys": (StringType,),
}


def check_write_schema(schema: StructType, opts: WriteOptions) -> None:
    """Raise :class:`ConfigError` when the DataFrame cannot be written: no ``body``, a column of
    the wrong type, neither a ``topic`` option nor a ``topic`` column."""
    fields = {f.name: f.dataType for f in schema.fields}
    body = fields.get("body")
    if body is None:
        raise ConfigError(
            "the DataFrame written to rmq needs a 'body' column (binary or string); "
            f"it has {', '.join(fields) or 'no columns'}"
        )
    if not isinstance(body, BinaryType | StringType):
        raise ConfigError(f"column 'body' must be binary or string, not {body.simpleString()}")
    for name, types in _OPTIONAL_COLUMNS.items():
        t = fields.get(name)
        if t is not None and not isinstance(t, types):
            raise ConfigError(f"column {name!r} must be string, not {t.simpleString()}")
    props = fields.get("properties")
    if props is not None and not (
        isinstance(props, MapType)
        and isinstance(props.keyType, StringType)
        and isinstance(props.valueType, StringType)
    ):
        raise ConfigError(
            f"column 'properties' must be map<string,string>, not {props.simpleString()}"
        )
    if opts.topic is None and "topic" not in fields:
        raise ConfigError(
            "writing to rmq needs option 'topic' or a 'topic' column (a row whose topic is "
            "null goes to the option's topic)"
        )
    if opts.sharding_key_column is not None and opts.sharding_key_column not in fields:
        raise ConfigError(
            f"option 'shardingKeyColumn' names column {opts.sharding_key_column!r}, which the "
            f"DataFrame does not have; its columns: {', '.join(fields)}"
        )


class _Msg:
    """What the native producer reads from a message: ``topic``, ``body``, ``flag`` and
    ``properties``. Lighter than ``rmq.Message``: one is made per row."""

    __slots__ = ("body", "flag", "properties", "topic")

    def __init__(self, topic: str, body: bytes, properties: dict[str, str]) -> None:
        self.topic = topic
        self.body = body
        self.flag = 0
        self.properties = properties


@dataclass(frozen=True, slots=True)
class RmqCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    rows: int
    requests: int
    partition: int


def _id_prefix(write_id: str) -> str:
    """16 hex digits naming one write (or one micro-batch of one query)."""
    return hashlib.blake2b(write_id.encode(), digest_size=8).hexdigest().upper()


class _TaskSender:
    """Sends one task's rows: buffers per (topic, queue), requests in flight, ids."""

    def __init__(self, opts: WriteOptions, id_prefix: str, partition: int) -> None:
        self.opts = opts
        self.producer: Producer = _clients.producer(
            opts.namesrv,
            opts.instance_name,
            opts.producer_group,
            opts.send_timeout_ms,
            opts.retry_times_when_send_failed,
        )
        # 16 hex (write) + 4 hex (partition) + 12 hex (row): a 32-digit id like RocketMQ's own.
        self.id_head = f"{id_prefix}{partition & 0xFFFF:04X}"
        self.rows = 0
        self.requests = 0
        self.pool = ThreadPoolExecutor(
            max_workers=opts.max_in_flight_batches, thread_name_prefix="rmq-spark-send"
        )
        self.in_flight: deque[Future[SendResult]] = deque()
        # Per queue, the request last sent there: ordered sends wait for it.
        self.last_to_queue: dict[MessageQueue, Future[SendResult]] = {}
        self.buffers: dict[tuple[str, MessageQueue | None], tuple[list[_Msg], list[int]]] = {}
        self.queues: dict[str, list[MessageQueue]] = {}

    def _queue_for(self, topic: str, key: Any) -> MessageQueue:
        queues = self.queues.get(topic)
        if queues is None:
            queues = self.queues[topic] = self.producer.fetch_publish_message_queues(topic)
        if not isinstance(key, str | int) or isinstance(key, bool):
            key = str(key)
        return select_by_hash(queues, None, key)  # type: ignore[arg-type]

    def add_batch(self, rb: Any) -> None:
        n = rb.num_rows
        if n == 0:
            return
        names = rb.schema.names
        body_col = rb.column(names.index("body"))
        if pa.types.is_string(body_col.type) or pa.types.is_large_string(body_col.type):
            body_col = body_col.cast(pa.binary())  # the UTF-8 bytes, without a copy
        bodies: list[bytes | None] = body_col.to_pylist()

        def column(name: str | None) -> list[Any] | None:
            return rb.column(names.index(name)).to_pylist() if name in names else None

        topics = column("topic")
        tags = column("tags")
        keys = column("keys")
        props = column("properties")
        shard = column(self.opts.sharding_key_column) if self.opts.sharding_key_column else None
        default_topic = self.opts.topic
        head = self.id_head
        row0 = self.rows
        for i in range(n):
            body = bodies[i]
            if body is None:
                raise ConfigError(f"row {row0 + i} of partition {head[16:]} has a null body")
            topic = (topics[i] if topics is not None else None) or default_topic
            if topic is None:
                raise ConfigError(
                    f"row {row0 + i} has a null topic and option 'topic' is not set; "
                    "set the option or fill the column"
                )
            p: dict[str, str] = {UNIQ_KEY: f"{head}{(row0 + i) & 0xFFFFFFFFFFFF:012X}"}
            if props is not None and props[i]:
                p.update(props[i])
            if tags is not None and tags[i] is not None:
                p[TAGS] = tags[i]
            if keys is not None and keys[i] is not None:
                p[KEYS] = keys[i]
            queue = None
            if shard is not None and shard[i] is not None:
                queue = self._queue_for(topic, shard[i])
            self._add(topic, queue, _Msg(topic, body, p))
        self.rows += n

    def _add(self, topic: str, queue: MessageQueue | None, msg: _Msg) -> None:
        size = _ENTRY_OVERHEAD_BYTES + len(msg.body)
        for k, v in msg.properties.items():
            size += len(k) + len(v) + 2
        buf = self.buffers.get((topic, queue))
        if buf is None:
            buf = self.buffers[(topic, queue)] = ([], [0])
        msgs, nbytes = buf
        if msgs and nbytes[0] + size > _MAX_REQUEST_BYTES:
            self._send(topic, queue)
            msgs, nbytes = self.buffers[(topic, queue)] = ([], [0])
        msgs.append(msg)
        nbytes[0] += size
        if len(msgs) >= self.opts.batch_size:
            self._send(topic, queue)

    def _send(self, topic: str, queue: MessageQueue | None) -> None:
        msgs, _ = self.buffers.pop((topic, queue), ([], [0]))
        if not msgs:
            return
        while len(self.in_flight) >= self.opts.max_in_flight_batches:
            self.in_flight.popleft().result()
        if queue is not None:
            # Rows of one key stay in order: one request per queue at a time.
            previous = self.last_to_queue.get(queue)
            if previous is not None:
                previous.result()
        native = self.producer.native
        future = self.pool.submit(native.send_batch, msgs, queue)
        self.in_flight.append(future)
        if queue is not None:
            self.last_to_queue[queue] = future
        self.requests += 1

    def finish(self) -> None:
        try:
            for topic, queue in list(self.buffers):
                self._send(topic, queue)
            while self.in_flight:
                self.in_flight.popleft().result()
        finally:
            self.pool.shutdown(wait=True, cancel_futures=True)


def _write_task(opts: WriteOptions, id_prefix: str, batches: Iterator[Any]) -> RmqCommitMessage:
    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    sender = _TaskSender(opts, id_prefix, partition)
    try:
        for rb in batches:
            sender.add_batch(rb)
    except BaseException:
        sender.pool.shutdown(wait=True, cancel_futures=True)
        raise
    sender.finish()
    return RmqCommitMessage(rows=sender.rows, requests=sender.requests, partition=partition)


def _total(messages: Sequence[WriterCommitMessage | None]) -> int:
    return sum(m.rows for m in messages if isinstance(m, RmqCommitMessage))


class RmqWriter(DataSourceArrowWriter):
    """The batch writer (``df.write``): at least once; a retried task resends its rows with
    the same ids."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        # Made on the driver, the same in every task and every retry of a task.
        self.id_prefix = _id_prefix(f"write-{uuid.uuid4()}")

    def write(self, iterator: Iterator[Any]) -> RmqCommitMessage:
        return _write_task(self.opts, self.id_prefix, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        log.info("rmq: wrote %d rows in %d tasks", _total(messages), len(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning(
            "rmq: the write failed; %d rows of the tasks that finished were sent and stay "
            "(rmq writes are at least once: their msg_id identifies them)",
            _total(messages),
        )


class RmqStreamWriter(DataSourceStreamArrowWriter):
    """The streaming writer (``df.writeStream``), at least once: a micro-batch Spark replays
    after a failure is sent again, with the same message ids (derived from the query id, the
    batch id, the partition and the row's index) when the query is deterministic."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[Any]) -> RmqCommitMessage:
        ctx = TaskContext.get()
        query = batch = None
        if ctx is not None:
            query = ctx.getLocalProperty(_QUERY_ID_PROPERTY)
            batch = ctx.getLocalProperty(_BATCH_ID_PROPERTY)
        if query is None or batch is None:  # not under a streaming query: unique anyway
            query, batch = str(uuid.uuid4()), "0"
        return _write_task(self.opts, _id_prefix(f"stream-{query}-{batch}"), iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.info("rmq: micro-batch %d: wrote %d rows", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning(
            "rmq: micro-batch %d failed; %d rows already sent stay (at least once: a replay "
            "sends them again with the same msg_id)",
            batchId,
            _total(messages),
        )
