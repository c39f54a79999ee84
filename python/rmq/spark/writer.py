"""``df.write.format("rmq")`` and ``df.writeStream.format("rmq")``.

Both writers are Arrow writers: each executor task receives the DataFrame's rows as
``pyarrow.RecordBatch`` columns, turns a batch into messages without going through Spark
``Row`` objects, and hands them to the native producer ``batchSize`` rows at a time (one
SEND_BATCH_MESSAGE each, split further to fit ``maxMessageSize``), with up to
``maxInFlightBatches`` requests in flight per task (the producer releases the GIL while it
waits).

Columns: ``body`` (binary or string) is required; ``topic`` (string: used only when the
``topic`` option is not set, as Spark's Kafka sink), ``queue_id`` (integer: that queue of the
topic, on the row's ``broker`` when that column is there and not null, else on the first
broker with that queue id), ``tags`` (string), ``keys`` (string; several space-separated) and
``properties`` (map<string,string>) are optional. Other columns are ignored, so a DataFrame
read from rmq can be written back as it is. With ``shardingKeyColumn`` each row without a
``queue_id`` goes to the queue its key hashes to (RocketMQ's ``SelectMessageQueueByHash``), so
rows with one key stay in order.

Every message gets a unique id (its ``UNIQ_KEY``, the ``msg_id`` a reader sees) derived from
the write, the Spark partition and the row's index in it: a task that Spark retries sends the
same ids again, so readers can drop the duplicates. Delivery is at least once, unless a
stream is written with ``deliveryGuarantee=exactly-once`` (:mod:`rmq.spark.transactions`):
then the tasks park their rows as half messages that the driver commits per micro-batch.
"""

from __future__ import annotations

import gc
import hashlib
import logging
import uuid
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import itemgetter
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructType,
)

from rmq._rmq import (
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_KEYS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TAGS,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    SendResult,
)
from rmq.client.message_queue import MessageQueue
from rmq.client.producer import Producer, select_by_hash
from rmq.errors import ConfigError
from rmq.spark import _clients, transactions
from rmq.spark.options import WriteOptions

__all__ = ["RmqCommitMessage", "RmqStreamWriter", "RmqWriter", "check_write_schema"]

log = logging.getLogger("rmq.spark")

UNIQ_KEY = PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
TAGS = PROPERTY_TAGS
KEYS = PROPERTY_KEYS
# Half messages (exactly-once): RocketMQ's property names.
_TRAN_MSG = PROPERTY_TRANSACTION_PREPARED
_PGROUP = PROPERTY_PRODUCER_GROUP
_CHECK_IMMUNITY = PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS
_CHECK_IMMUNITY_S = 60
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
    "broker": (StringType,),
    "queue_id": (IntegerType, LongType, ShortType),
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
        # Columns the write ignores: `topic` under the topic option, `broker` without queue_id.
        if (name == "topic" and opts.topic is not None) or (
            name == "broker" and "queue_id" not in fields
        ):
            continue
        if t is not None and not isinstance(t, types):
            kind = "an integer" if name == "queue_id" else "string"
            raise ConfigError(f"column {name!r} must be {kind}, not {t.simpleString()}")
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
            "writing to rmq needs option 'topic' or a 'topic' column (the option, when set, "
            "wins over the column, as in Spark's Kafka sink)"
        )
    if opts.sharding_key_column is not None and opts.sharding_key_column not in fields:
        raise ConfigError(
            f"option 'shardingKeyColumn' names column {opts.sharding_key_column!r}, which the "
            f"DataFrame does not have; its columns: {', '.join(fields)}"
        )


def _message_class(topic: str) -> type[Any]:
    """A class for ``topic``'s messages as the native producer reads them (``topic``, ``body``,
    ``flag``, ``properties``): a ``(body, properties)`` tuple whose topic and flag live on the
    class, so making one per row is a single C call (``map(cls, zip(bodies, props))``)."""
    return type(
        "_Msg",
        (tuple,),
        {
            "__slots__": (),
            "topic": topic,
            "flag": 0,
            "body": property(itemgetter(0)),
            "properties": property(itemgetter(1)),
        },
    )


@dataclass(frozen=True, slots=True)
class RmqCommitMessage(WriterCommitMessage):
    """What one task wrote; under exactly-once also the token of the task attempt and the
    half messages it parked, in the order it sent them."""

    rows: int
    requests: int
    partition: int
    token: str = ""
    halves: tuple[transactions.Half, ...] = ()


def _id_prefix(write_id: str) -> str:
    """16 hex digits naming one write (or one micro-batch of one query)."""
    return hashlib.blake2b(write_id.encode(), digest_size=8).hexdigest().upper()


class _Buffer:
    """Messages for one (topic, queue) not sent yet, and their estimated encoded size."""

    __slots__ = ("msgs", "nbytes")

    def __init__(self) -> None:
        self.msgs: list[Any] = []
        self.nbytes = 0


class _TaskSender:
    """Sends one task's rows: buffers per (topic, queue), requests in flight, ids."""

    def __init__(
        self,
        opts: WriteOptions,
        id_prefix: str,
        partition: int,
        half_properties: dict[str, str] | None = None,
    ) -> None:
        self.opts = opts
        # Properties every message gets; with them, the messages are halves whose sends are
        # kept (and not retried: a half sent twice could be committed twice).
        self.half_properties = half_properties
        self.producer: Producer = _clients.producer(
            opts.namesrv,
            opts.instance_name,
            opts.producer_group,
            opts.send_timeout_ms,
            0 if half_properties else opts.retry_times_when_send_failed,
            opts.credentials,
            opts.tls,
        )
        self.sent: list[Future[SendResult]] = []
        self.partition = partition
        # 16 hex digits (the write) + 4 (the partition) + 12 decimal digits (the row's index):
        # 32 hex digits, like RocketMQ's own ids.
        self.id_head = pa.scalar(f"{id_prefix}{partition & 0xFFFF:04X}")
        self.rows = 0
        self.requests = 0
        self.pool = ThreadPoolExecutor(
            max_workers=opts.max_in_flight_batches, thread_name_prefix="rmq-spark-send"
        )
        self.in_flight: deque[Future[SendResult]] = deque()
        # Per queue, the request last sent there: ordered sends wait for it.
        self.last_to_queue: dict[MessageQueue, Future[SendResult]] = {}
        self.buffers: dict[tuple[str, MessageQueue | None], _Buffer] = {}
        self.queues: dict[str, list[MessageQueue]] = {}
        self.classes: dict[str, type[Any]] = {}

    def _class(self, topic: str) -> type[Any]:
        cls = self.classes.get(topic)
        if cls is None:
            cls = self.classes[topic] = _message_class(topic)
        return cls

    def _queue_for(self, topic: str, key: Any) -> MessageQueue:
        queues = self.queues.get(topic)
        if queues is None:
            queues = self.queues[topic] = self.producer.fetch_publish_message_queues(topic)
        if not isinstance(key, str | int) or isinstance(key, bool):
            key = str(key)
        return select_by_hash(queues, None, key)  # type: ignore[arg-type]

    def _queue_by_id(self, topic: str, broker: str | None, queue_id: int) -> MessageQueue:
        """The row's ``queue_id`` (on its ``broker`` when given) among ``topic``'s queues."""
        queues = self.queues.get(topic)
        if queues is None:
            queues = self.queues[topic] = self.producer.fetch_publish_message_queues(topic)
        for q in sorted(queues, key=lambda q: (q.broker_name, q.queue_id)):
            if q.queue_id == queue_id and (broker is None or q.broker_name == broker):
                return q
        where = f"broker {broker!r}" if broker is not None else "any broker"
        raise ConfigError(
            f"a row's queue_id {queue_id} is not a writable queue of topic {topic!r} on {where}; "
            f"its queues: {', '.join(f'{q.broker_name}/{q.queue_id}' for q in queues)} "
            "(drop the queue_id column to let the producer choose)"
        )

    def _ids(self, n: int) -> list[str]:
        index = pa.array(range(self.rows, self.rows + n), pa.int64())
        digits = pc.utf8_lpad(pc.cast(index, pa.string()), 12, "0")
        ids: list[str] = pc.binary_join_element_wise(self.id_head, digits, "").to_pylist()
        return ids

    def add_batch(self, rb: Any) -> None:
        n = rb.num_rows
        if n == 0:
            return
        names = rb.schema.names
        body_col = rb.column(names.index("body"))
        if pa.types.is_string(body_col.type) or pa.types.is_large_string(body_col.type):
            body_col = body_col.cast(pa.binary())  # the UTF-8 bytes, without a copy
        if body_col.null_count:
            first_null = pc.index(pc.is_null(body_col), True).as_py()
            raise ConfigError(
                f"row {self.rows + first_null} of partition {self.partition} has a null body"
            )
        # The topic option wins over a topic column (as in Spark's Kafka sink).
        by_column = self.opts.topic is None and "topic" in names
        if (
            not by_column
            and "properties" not in names
            and "queue_id" not in names
            and not self.opts.sharding_key_column
        ):
            self._add_columns(rb, body_col)
            self.rows += n
            return
        bodies: list[bytes] = body_col.to_pylist()

        def column(name: str | None) -> list[Any] | None:
            return rb.column(names.index(name)).to_pylist() if name in names else None

        ids = self._ids(n)
        tags, keys, props = column("tags"), column("keys"), column("properties")
        plist: list[dict[str, str]]
        extra = self.half_properties
        if tags is None and keys is None and props is None and not extra:
            plist = [{UNIQ_KEY: u} for u in ids]
        else:
            plist = [
                _properties(u, t, k, p)
                for u, t, k, p in zip(
                    ids,
                    tags or repeat(None),
                    keys or repeat(None),
                    props or repeat(None),
                    strict=False,
                )
            ]
            if extra:
                for p in plist:
                    p.update(extra)
        topics = column("topic") if by_column else None
        shard = column(self.opts.sharding_key_column) if self.opts.sharding_key_column else None
        qids = column("queue_id")
        brokers = column("broker") if qids is not None else None
        if qids is not None and all(q is None for q in qids):
            qids = brokers = None
        default_topic = self.opts.topic
        if topics is not None and None in topics:
            raise ConfigError(
                f"row {self.rows + topics.index(None)} has a null topic and option 'topic' is "
                "not set; set the option or fill the column"
            )
        varied = bool(extra) or tags is not None or keys is not None or props is not None
        sizes = _sizes(body_col, plist, varied)
        if topics is None and shard is None and qids is None:
            assert default_topic is not None
            msgs = list(map(self._class(default_topic), zip(bodies, plist, strict=True)))
            self._add_many(default_topic, msgs, sizes)
        else:
            for i in range(n):
                topic = topics[i] if topics is not None else default_topic
                assert topic is not None
                key = shard[i] if shard is not None else None
                qid = qids[i] if qids is not None else None
                if qid is not None:
                    broker = brokers[i] if brokers is not None else None
                    queue: MessageQueue | None = self._queue_by_id(topic, broker, qid)
                else:
                    queue = self._queue_for(topic, key) if key is not None else None
                self._add(topic, queue, self._class(topic)((bodies[i], plist[i])), sizes[i])
        self.rows += n

    def _buffer(self, topic: str, queue: MessageQueue | None) -> _Buffer:
        buf = self.buffers.get((topic, queue))
        if buf is None:
            buf = self.buffers[(topic, queue)] = _Buffer()
        return buf

    def _add(self, topic: str, queue: MessageQueue | None, msg: Any, size: int) -> None:
        buf = self._buffer(topic, queue)
        if buf.msgs and buf.nbytes + size > _MAX_REQUEST_BYTES:
            self._send(topic, queue)
            buf = self._buffer(topic, queue)
        buf.msgs.append(msg)
        buf.nbytes += size
        if len(buf.msgs) >= self.opts.batch_size:
            self._send(topic, queue)

    def _add_many(self, topic: str, msgs: list[Any], sizes: list[int]) -> None:
        """Add ``msgs`` (of one topic, any queue) a slice at a time: each slice fills the
        buffer to ``batchSize`` rows or the request size limit."""
        cum = list(accumulate(sizes))
        n, start = len(msgs), 0
        while start < n:
            buf = self._buffer(topic, None)
            base = cum[start - 1] if start else 0
            limit = min(n, start + self.opts.batch_size - len(buf.msgs))
            end = bisect_right(cum, base + _MAX_REQUEST_BYTES - buf.nbytes, start, limit)
            if end == start:
                if buf.msgs:  # the next row does not fit: send what is there first
                    self._send(topic, None)
                    continue
                end = start + 1  # one message over the limit: the producer will say so
            buf.msgs.extend(msgs[start:end])
            buf.nbytes += cum[end - 1] - base
            if end < n or len(buf.msgs) >= self.opts.batch_size:
                self._send(topic, None)
            start = end

    def _add_columns(self, rb: Any, body_col: Any) -> None:
        """Rows of the ``topic`` option without per-row properties: requests of up to
        ``batchSize`` rows and the request size limit go to the native producer as column
        buffers, with no Python object per row."""
        topic = self.opts.topic
        assert topic is not None
        names = rb.schema.names
        n = rb.num_rows
        sizes = pc.add(pc.binary_length(body_col), _ENTRY_OVERHEAD_BYTES + len(UNIQ_KEY) + 34)
        columns: dict[str, tuple[bytes | None, bytes, bytes] | None] = {}
        for name in ("tags", "keys"):
            col = rb.column(names.index(name)) if name in names else None
            if col is not None:
                lengths = pc.fill_null(pc.binary_length(col), 0)
                sizes = pc.add(sizes, pc.add(lengths, len(name) + 2))
            columns[name] = _string_buffers(col) if col is not None else None
        if self.half_properties:
            sizes = pc.add(sizes, sum(len(k) + len(v) + 2 for k, v in self.half_properties.items()))
        cum: list[int] = pc.cumulative_sum(sizes).to_pylist()
        _, offsets, data = _string_buffers(body_col)
        native = self.producer.native
        id_head = self.id_head.as_py()
        start = 0
        while start < n:
            base = cum[start - 1] if start else 0
            limit = min(n, start + self.opts.batch_size)
            end = max(start + 1, bisect_right(cum, base + _MAX_REQUEST_BYTES, start, limit))
            self._submit(
                None,
                native.send_batch_columns,
                topic,
                None,
                start,
                end,
                offsets,
                data,
                id_head,
                self.rows + start,
                columns["tags"],
                columns["keys"],
                self.half_properties,
            )
            start = end

    def _send(self, topic: str, queue: MessageQueue | None) -> None:
        buf = self.buffers.pop((topic, queue), None)
        if buf is None or not buf.msgs:
            return
        self._submit(queue, self.producer.native.send_batch, buf.msgs, queue)

    def _submit(self, queue: MessageQueue | None, send: Any, *args: Any) -> None:
        """Run ``send(*args)`` (one request) on the pool, at most ``maxInFlightBatches`` at a
        time, one at a time per ``queue`` when given."""
        while len(self.in_flight) >= self.opts.max_in_flight_batches:
            self.in_flight.popleft().result()
        if queue is not None:
            # Rows of one key stay in order: one request per queue at a time.
            previous = self.last_to_queue.get(queue)
            if previous is not None:
                previous.result()
        future = self.pool.submit(send, *args)
        self.in_flight.append(future)
        if self.half_properties:
            self.sent.append(future)
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


def _string_buffers(col: Any) -> tuple[bytes | None, bytes, bytes]:
    """(validity bitmap or None, int32 offsets, data) of a string or binary array."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if col.offset:
        col = pa.concat_arrays([col])  # rebased: the buffers start at row 0
    validity, offsets, data = col.buffers()
    return (
        validity.to_pybytes() if validity is not None and col.null_count else None,
        offsets.to_pybytes(),
        data.to_pybytes() if data is not None else b"",
    )


def _properties(
    uniq: str, tags: str | None, keys: str | None, props: list[tuple[str, str]] | None
) -> dict[str, str]:
    p = dict(props) if props else {}
    p[UNIQ_KEY] = uniq
    if tags is not None:
        p[TAGS] = tags
    if keys is not None:
        p[KEYS] = keys
    return p


def _sizes(body_col: Any, plist: list[dict[str, str]], varied: bool) -> list[int]:
    """Each row's estimated encoded size: body, properties (``k\x01v\x02``), overhead."""
    lengths: list[int] = pc.binary_length(body_col).to_pylist()
    if not varied:
        extra = _ENTRY_OVERHEAD_BYTES + len(UNIQ_KEY) + 32 + 2
        return [n + extra for n in lengths]
    return [
        n + _ENTRY_OVERHEAD_BYTES + sum(len(k) + len(v) + 2 for k, v in p.items())
        for n, p in zip(lengths, plist, strict=True)
    ]


def _write_task(
    opts: WriteOptions,
    id_prefix: str,
    batches: Iterator[Any],
    half_properties: dict[str, str] | None = None,
) -> RmqCommitMessage:
    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    sender = _TaskSender(opts, id_prefix, partition, half_properties)
    # Rows become millions of small acyclic objects: the cyclic GC would only rescan them.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for rb in batches:
            sender.add_batch(rb)
        sender.finish()
    except BaseException:
        sender.pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        if gc_was_enabled:
            gc.enable()
    halves = tuple(
        (r.queue, r.offset_msg_id, r.msg_id, r.queue_offset)
        for r in (f.result() for f in sender.sent)
    )
    return RmqCommitMessage(
        rows=sender.rows,
        requests=sender.requests,
        partition=sender.partition,
        token=(half_properties or {}).get(transactions.TASK_PROPERTY, ""),
        halves=halves,
    )


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
    """The streaming writer (``df.writeStream``).

    At least once (the default): a micro-batch Spark replays after a failure is sent again,
    with the same message ids (derived from the query id, the batch id, the partition and the
    row's index) when the query is deterministic.

    Exactly once (``deliveryGuarantee=exactly-once``): the tasks park their rows as half
    messages and the driver commits each micro-batch once (:mod:`rmq.spark.transactions`).
    """

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.tx_group: str | None = None
        if opts.delivery_guarantee == "exactly-once":
            assert opts.checkpoint_location is not None  # checked with the options
            checkpoint = transactions.local_checkpoint_dir(opts.checkpoint_location)
            self.tx_group = transactions.transaction_group(opts.producer_group, checkpoint)
            # Made on the driver (not pickled with the writer): answers the brokers' checks.
            transactions.coordinator(
                opts.namesrv, self.tx_group, checkpoint, opts.topic, opts.credentials, opts.tls
            )
            self.checkpoint = checkpoint

    def _coordinator(self) -> transactions.TransactionCoordinator:
        assert self.tx_group is not None
        return transactions.coordinator(
            self.opts.namesrv,
            self.tx_group,
            self.checkpoint,
            self.opts.topic,
            self.opts.credentials,
            self.opts.tls,
        )

    def write(self, iterator: Iterator[Any]) -> RmqCommitMessage:
        ctx = TaskContext.get()
        query = batch = None
        if ctx is not None:
            query = ctx.getLocalProperty(_QUERY_ID_PROPERTY)
            batch = ctx.getLocalProperty(_BATCH_ID_PROPERTY)
        if query is None or batch is None:  # not under a streaming query: unique anyway
            query, batch = str(uuid.uuid4()), "0"
        half_properties = None
        if self.tx_group is not None:
            half_properties = {
                _TRAN_MSG: "true",
                _PGROUP: self.tx_group,
                # Checks of a batch still being written would only be answered UNKNOW.
                _CHECK_IMMUNITY: str(_CHECK_IMMUNITY_S),
                transactions.BATCH_PROPERTY: batch,
                transactions.TASK_PROPERTY: uuid.uuid4().hex,
            }
        prefix = _id_prefix(f"stream-{query}-{batch}")
        return _write_task(self.opts, prefix, iterator, half_properties)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        done = [m for m in messages if isinstance(m, RmqCommitMessage)]
        if self.tx_group is None:
            log.info("rmq: micro-batch %d: wrote %d rows", batchId, _total(messages))
            return
        self._coordinator().commit(
            batchId,
            [m.token for m in done],
            [h for m in done for h in m.halves],
            _total(messages),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.tx_group is not None:
            done = [m for m in messages if isinstance(m, RmqCommitMessage)]
            self._coordinator().abort(batchId, [h for m in done for h in m.halves])
            log.warning(
                "rmq: micro-batch %d failed; the %d rows its finished tasks parked are rolled "
                "back (exactly once: none is delivered)",
                batchId,
                _total(messages),
            )
            return
        log.warning(
            "rmq: micro-batch %d failed; %d rows already sent stay (at least once: a replay "
            "sends them again with the same msg_id)",
            batchId,
            _total(messages),
        )
