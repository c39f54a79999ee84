"""``rmq.PushConsumer``: RocketMQ's ``DefaultMQPushConsumer`` in Python over the Rust core.

What runs where: pulls are asynchronous Rust requests (long polling, 15 s suspension) whose
results come back on the client's callback thread; a pull that found messages has the Rust
core send the queue's next pull at once (pipelined), so it travels while the listener runs.
This module decides everything else, as RocketMQ's Java client does:

* rebalance (every 20 s, and at once on NOTIFY_CONSUMER_IDS_CHANGED): each consumer of a
  clustering group fetches the group's consumer ids and the topic's queues and takes its share
  with an allocation strategy (``rmq.client.allocate``); broadcasting takes every queue;
* flow control: a queue is not pulled while it holds more than ``pull_threshold_for_queue``
  messages, ``pull_threshold_size_for_queue`` MiB, or (concurrently) a span over
  ``consume_concurrently_max_span`` offsets;
* consumption on a pool of threads (``_consume_pool``): batches of
  ``consume_message_batch_max_size`` messages (default 1, as RocketMQ's) go to
  the listener. While its calls average under 100 µs (until they average over 1 ms) a
  consume task carries up to 32 messages and wakes no second thread while one runs: under the
  GIL a fast listener only loses to more threads. A slow listener gets a task a batch, so up to
  ``consume_thread_max`` batches run at once. The committed offset is the lowest offset still
  in flight, so nothing is skipped when batches finish out of order. Orderly consumption holds
  the broker's lock of the queue (LOCK_BATCH_MQ, renewed every 20 s) and consumes one queue on
  one thread at a time;
* offsets persisted every 5 s and on shutdown (broker for clustering, a local file for
  broadcasting).

Delivery is at least once. A message whose listener fails (returns RECONSUME_LATER or raises)
is handed back to the broker (CONSUMER_SEND_MSG_BACK) and comes again through the group's
retry topic ``%RETRY%<group>``, which clustering consumers subscribe to automatically, with its
original topic restored; after ``max_reconsume_times`` the broker moves it to ``%DLQ%<group>``.
When the broker cannot take it back, it is retried here after ``reconsume_later_delay_ms``.

As in RocketMQ, a queue that moves to another consumer in a rebalance restarts from the
offset last committed to the broker, so up to one persist interval of messages may be
delivered again.
"""

from __future__ import annotations

import enum
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from rmq._rmq import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MAX_RECONSUME_TIMES,
    PROPERTY_ORIGIN_MESSAGE_ID,
    PROPERTY_RECONSUME_TIME,
    PROPERTY_RETRY_TOPIC,
    PROPERTY_TRANSACTION_PREPARED,
    RETRY_GROUP_TOPIC_PREFIX,
    BrokerCallReply,
    ClientInstance,
    NativeProducer,
    PullResult,
    StoredMessage,
)
from rmq.client import _instance, running_info
from rmq.client._consume_pool import ConsumePool
from rmq.client._process_queue import ProcessQueue
from rmq.client._scheduler import Scheduler
from rmq.client.allocate import AllocateMessageQueueAveragely, AllocateMessageQueueStrategy
from rmq.client.message import Message
from rmq.client.message_queue import MessageQueue
from rmq.client.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteBrokerOffsetStore,
    parse_offset_table,
)
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import RmqError
from rmq.tls import PLAIN, TlsOptions
from rmq.trace.dispatcher import AsyncTraceDispatcher
from rmq.trace.hooks import ConsumeTracer

__all__ = [
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "MessageModel",
    "PushConsumer",
]

log = logging.getLogger("rmq.client")

# A listener whose calls average under _FAST_LISTENER_S seconds (until they average over
# _SLOW_LISTENER_S) gets up to _FAST_TASK_MESSAGES messages a consume task, run on as few
# threads as keep up (see PushConsumer._submit).
_FAST_LISTENER_S = 100e-6
_SLOW_LISTENER_S = 1e-3
_FAST_TASK_MESSAGES = 32

PULL_TIME_DELAY_ON_EXCEPTION_S = 3.0
PULL_TIME_DELAY_ON_FLOW_CONTROL_S = 0.05
PULL_TIME_DELAY_ON_SUSPEND_S = 1.0
REBALANCE_LOCK_INTERVAL_S = 20.0
BROKER_SUSPEND_MAX_TIME_MS = 15000
CONSUMER_TIMEOUT_WHEN_SUSPEND_MS = 30000
# The group of the producer a consumer re-sends failed messages with (RocketMQ's
# ``MixAll.CLIENT_INNER_PRODUCER_GROUP``).
CLIENT_INNER_PRODUCER_GROUP = "CLIENT_INNER_PRODUCER"


class MessageModel(str, enum.Enum):
    """Clustering: the group shares the queues. Broadcasting: every consumer gets everything."""

    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(str, enum.Enum):
    """Where a group with no committed offset starts."""

    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


class ConsumeConcurrentlyStatus(str, enum.Enum):
    """What a concurrent listener returns (``None`` counts as success)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyStatus(str, enum.Enum):
    """What an orderly listener returns (``None`` counts as success)."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"


_CONCURRENT_OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
_ORDERLY_OK = ConsumeOrderlyStatus.SUCCESS

ConcurrentListener = Callable[[list[StoredMessage]], "ConsumeConcurrentlyStatus | None"]
OrderlyListener = Callable[[list[StoredMessage]], "ConsumeOrderlyStatus | None"]


def warn_body_errors(group: str, messages: Sequence[StoredMessage]) -> None:
    """Log each pulled message whose compressed body could not be decompressed: it is still
    handed on, as stored, with the reason in ``body_error``."""
    for m in messages:
        if m.body_error is not None:
            log.warning("%s: %s", group, m.body_error)


def compute_pull_from_where(
    instance: ClientInstance,
    store: OffsetStore,
    mq: MessageQueue,
    where: ConsumeFromWhere,
    consume_timestamp_ms: int,
) -> int:
    """RocketMQ's ``computePullFromWhere``: the committed offset when there is one, else the
    start ``where`` names (a retry topic starts at 0 / the end, as RocketMQ does)."""
    last = store.read_store(mq)
    if last >= 0:
        return last
    retry = mq.topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
    if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET or (
        retry and where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    ):
        return 0
    if where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET or retry:
        return instance.max_offset(mq)
    return instance.search_offset(mq, consume_timestamp_ms)


class Rebalancer:
    """Works out this consumer's queues of each subscribed topic (``RebalanceImpl``)."""

    def __init__(
        self,
        instance: ClientInstance,
        group: str,
        model: MessageModel,
        strategy: AllocateMessageQueueStrategy,
    ) -> None:
        self.instance = instance
        self.group = group
        self.model = model
        self.strategy = strategy

    def assigned(self, topic: str) -> list[MessageQueue] | None:
        """This consumer's share of ``topic``; None when it cannot be worked out now (no
        route, no consumer list), in which case the current assignment should stay."""
        try:
            mq_all = self.instance.fetch_subscribe_queues(topic)
        except Exception as exc:
            log.warning("rebalance of %s: no route for topic %s: %s", self.group, topic, exc)
            return None
        if self.model is MessageModel.BROADCASTING:
            return sorted(mq_all)
        try:
            cid_all = self.instance.consumer_id_list(topic, self.group)
            if self.instance.client_id not in cid_all:
                # The brokers of a topic first seen now have not heard this client yet.
                self.instance.send_heartbeat()
                cid_all = self.instance.consumer_id_list(topic, self.group)
        except Exception as exc:
            log.warning("rebalance of %s: consumer list of %s: %s", self.group, topic, exc)
            return None
        if not cid_all or not mq_all:
            return None
        return self.strategy.allocate(self.group, self.instance.client_id, mq_all, cid_all)


class _GroupMember:
    """What a push and a pull consumer share: the group, where it starts, how it rebalances, and
    where its offsets are kept."""

    def __init__(
        self,
        group: str,
        namesrv_addr: str | None,
        instance_name: str,
        message_model: MessageModel | str,
        consume_from_where: ConsumeFromWhere | str,
        consume_timestamp_ms: int | None,
        allocate_strategy: AllocateMessageQueueStrategy | None,
        offset_store_dir: str | Path | None,
        credentials: _instance.Credentials | None = None,
        tls: TlsOptions = PLAIN,
    ) -> None:
        self.group = group
        self._credentials = credentials
        self.tls = tls
        self.namesrv_addr = _instance.default_namesrv_addr(namesrv_addr)
        self.instance_name = instance_name
        self.message_model = MessageModel(message_model)
        self.consume_from_where = ConsumeFromWhere(consume_from_where)
        self.consume_timestamp_ms = (
            consume_timestamp_ms
            if consume_timestamp_ms is not None
            else int(time.time() * 1000) - 30 * 60 * 1000
        )
        self.allocate_strategy = allocate_strategy or AllocateMessageQueueAveragely()
        self.offset_store_dir = Path(offset_store_dir) if offset_store_dir else None

    def _open_offset_store(self, instance: ClientInstance) -> OffsetStore:
        """The broker keeps a clustering group's offsets; a broadcasting consumer keeps its own
        in a local file."""
        if self.message_model is MessageModel.CLUSTERING:
            return RemoteBrokerOffsetStore(instance, self.group)
        return LocalFileOffsetStore(instance.client_id, self.group, self.offset_store_dir)


class PushConsumer(_GroupMember):
    """Consumes the topics it subscribes to, calling a listener for each batch.

    >>> consumer = PushConsumer("my-group", "127.0.0.1:9876")           # doctest: +SKIP
    >>> consumer.subscribe("TopicTest", "TagA || TagB")                  # doctest: +SKIP
    >>> consumer.register_message_listener_concurrently(lambda msgs: None)  # doctest: +SKIP
    >>> consumer.start()                                                 # doctest: +SKIP
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str | None = None,
        *,
        instance_name: str = "DEFAULT",
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        consume_from_where: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp_ms: int | None = None,
        allocate_strategy: AllocateMessageQueueStrategy | None = None,
        consume_thread_max: int = 20,
        consume_message_batch_max_size: int = 1,
        pull_batch_size: int = 32,
        pull_interval_ms: int = 0,
        pull_threshold_for_queue: int = 1000,
        pull_threshold_size_for_queue: int = 100,
        consume_concurrently_max_span: int = 2000,
        suspend_current_queue_time_millis: int = 1000,
        reconsume_later_delay_ms: int = 5000,
        max_reconsume_times: int | None = None,
        persist_consumer_offset_interval: int = 5000,
        rebalance_interval_ms: int = 20000,
        heartbeat_broker_interval: int = 30000,
        poll_name_server_interval: int = 30000,
        offset_store_dir: str | Path | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool = False,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        tls_verify: bool = True,
        enable_msg_trace: bool = False,
        custom_trace_topic: str | None = None,
    ) -> None:
        super().__init__(
            group,
            namesrv_addr,
            instance_name,
            message_model,
            consume_from_where,
            consume_timestamp_ms,
            allocate_strategy,
            offset_store_dir,
            _instance.credentials(access_key, secret_key, security_token),
            TlsOptions.of(tls, tls_ca, tls_cert, tls_key, tls_verify),
        )
        self.consume_thread_max = consume_thread_max
        self.consume_message_batch_max_size = consume_message_batch_max_size
        self._listener_s = 0.0  # a listener call's average (seconds)
        self._listener_slow = False
        self.pull_batch_size = pull_batch_size
        self.pull_interval_s = pull_interval_ms / 1000
        self.pull_threshold_for_queue = pull_threshold_for_queue
        self.pull_threshold_size_for_queue = pull_threshold_size_for_queue
        self.consume_concurrently_max_span = consume_concurrently_max_span
        self.suspend_s = suspend_current_queue_time_millis / 1000
        self.reconsume_later_delay_s = reconsume_later_delay_ms / 1000
        # RocketMQ: 16 for concurrent consumers, unlimited for orderly ones unless set.
        self.max_reconsume_times = 16 if max_reconsume_times is None else max_reconsume_times
        self.max_reconsume_times_orderly = max_reconsume_times
        self.persist_interval_s = persist_consumer_offset_interval / 1000
        self.rebalance_interval_s = rebalance_interval_ms / 1000
        self.heartbeat_broker_interval = heartbeat_broker_interval
        self.poll_name_server_interval = poll_name_server_interval
        self._subscriptions: dict[str, str] = {}
        self._listener: ConcurrentListener | None = None
        self._orderly_listener: OrderlyListener | None = None
        self._queues: dict[MessageQueue, ProcessQueue] = {}
        self._queues_lock = threading.RLock()
        self._rebalance_lock = threading.Lock()
        self._running = False
        self._inner_producer: NativeProducer | None = None
        # Message trace (rmq.trace): SubBefore/SubAfter around each listener call.
        self.enable_msg_trace = enable_msg_trace
        self.custom_trace_topic = custom_trace_topic
        self._tracer: ConsumeTracer | None = None
        self.start_timestamp_ms = 0
        self._consume_failed: dict[str, int] = {}

    # ---- configuration ------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume ``topic``'s messages whose tag matches ``expression`` (``"*"`` for all,
        or ``"tagA || tagB"``). May be called again to change the expression."""
        self._subscriptions[topic] = expression or "*"
        if self._running:
            self._register()
            self._instance.send_heartbeat()

    def unsubscribe(self, topic: str) -> None:
        """Stop consuming ``topic``."""
        self._subscriptions.pop(topic, None)
        if self._running:
            self._register()
            self.rebalance()

    def register_message_listener_concurrently(self, listener: ConcurrentListener) -> None:
        """Messages go to ``listener(msgs)`` on a pool of ``consume_thread_max`` threads."""
        self._listener, self._orderly_listener = listener, None

    def register_message_listener_orderly(self, listener: OrderlyListener) -> None:
        """Each queue's messages go to ``listener(msgs)`` in queue order, one batch at a time;
        in clustering mode the broker's queue lock makes this hold across the group."""
        self._orderly_listener, self._listener = listener, None

    @property
    def orderly(self) -> bool:
        return self._orderly_listener is not None

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> PushConsumer:
        """Start pulling and consuming. Returns self."""
        if self._running:
            return self
        if self._listener is None and self._orderly_listener is None:
            raise RuntimeError(
                "no listener: call register_message_listener_concurrently() or "
                "register_message_listener_orderly() before start()"
            )
        if not self._subscriptions:
            raise RuntimeError("no subscription: call subscribe(topic, expression) first")
        self._instance = _instance.acquire(
            self.namesrv_addr,
            self.instance_name,
            self.group,
            self,
            heartbeat_broker_interval_ms=self.heartbeat_broker_interval,
            poll_name_server_interval_ms=self.poll_name_server_interval,
            creds=self._credentials,
            tls=self.tls,
        )
        self._store = self._open_offset_store(self._instance)
        self._rebalancer = Rebalancer(
            self._instance, self.group, self.message_model, self.allocate_strategy
        )
        self._executor = ConsumePool(self.consume_thread_max, f"rmq-consume-{self.group}")
        self._scheduler = Scheduler(f"rmq-consumer-{self.group}")
        if self.enable_msg_trace and self._tracer is None:
            dispatcher = AsyncTraceDispatcher(self.group, "CONSUMER", self.custom_trace_topic, self)
            self._tracer = ConsumeTracer(self.group, dispatcher.start())
        self.start_timestamp_ms = int(time.time() * 1000)
        self._running = True
        self._register()
        for topic in self._subscriptions:
            try:
                self._instance.fetch_subscribe_queues(topic)
            except RmqError as exc:  # as RocketMQ: warn and keep going; rebalance retries
                log.warning("%s: subscribed topic %s has no route yet: %s", self.group, topic, exc)
        self._instance.send_heartbeat()
        self._scheduler.call_later(0, self.rebalance)
        self._scheduler.call_every(self.rebalance_interval_s, self.rebalance)
        self._scheduler.call_every(self.persist_interval_s, self.persist_offsets)
        if self.orderly and self.message_model is MessageModel.CLUSTERING:
            self._scheduler.call_every(REBALANCE_LOCK_INTERVAL_S, self._lock_all, 1.0)
        return self

    @property
    def retry_topic(self) -> str:
        """Where the group's failed messages come back (``%RETRY%<group>``)."""
        return RETRY_GROUP_TOPIC_PREFIX + self.group

    def _topics(self) -> dict[str, str]:
        """Subscriptions, plus the retry topic in clustering mode (as RocketMQ's
        ``copySubscription``)."""
        topics = dict(self._subscriptions)
        if self.message_model is MessageModel.CLUSTERING:
            topics[self.retry_topic] = "*"
        return topics

    def _register(self) -> None:
        self._instance.register_consumer(
            self.group,
            list(self._topics().items()),
            message_model=self.message_model.value,
            consume_type="CONSUME_PASSIVELY",
            consume_from_where=self.consume_from_where.value,
        )

    def shutdown(self) -> None:
        """Stop pulling, finish the batches being consumed, persist offsets, release queue
        locks and unregister from the brokers. Idempotent."""
        if not self._running:
            return
        self._running = False
        self._scheduler.shutdown()
        # As RocketMQ: let the batches handed out finish (and move the offsets) first.
        self._executor.shutdown(wait=True)
        tracer, self._tracer = self._tracer, None
        if tracer is not None:
            tracer.dispatcher.shutdown()
        with self._queues_lock:
            for mq, pq in self._queues.items():
                pq.dropped = True
                # A pull sent ahead is this consumer's: another consumer of the group on the
                # same instance must not take its answer (or wait out its long poll).
                self._instance.forget_pipelined(self.group, mq)
        self.persist_offsets(wait=True)
        if self.orderly and self.message_model is MessageModel.CLUSTERING:
            self._unlock(list(self._queues), oneway=False)
        # The inner producer's group stays announced with the instance, as RocketMQ's
        # (other consumers of the instance may use it): no shutdown here.
        self._inner_producer = None
        self._instance.unregister_consumer(self.group)
        _instance.release(self._instance, self.group)

    def __enter__(self) -> PushConsumer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    def assignment(self) -> list[MessageQueue]:
        """The queues of the subscribed topics this consumer pulls now (its share of the
        retry topic is not listed)."""
        with self._queues_lock:
            return sorted(
                mq
                for mq, pq in self._queues.items()
                if not pq.dropped and mq.topic in self._subscriptions
            )

    # ---- rebalance ----------------------------------------------------------------------

    def rebalance(self) -> None:
        """Recompute this consumer's queues now (also runs every 20 s)."""
        if not self._running:
            return
        topics = self._topics()
        with self._rebalance_lock:
            for topic in topics:
                mine = self._rebalancer.assigned(topic)
                if mine is not None:
                    self._update_queues(topic, set(mine))
            with self._queues_lock:
                unsubscribed = [mq for mq in self._queues if mq.topic not in topics]
            for mq in unsubscribed:
                self._drop(mq)

    def _update_queues(self, topic: str, mine: set[MessageQueue]) -> None:
        with self._queues_lock:
            current = {mq for mq in self._queues if mq.topic == topic}
        for mq in current - mine:
            self._drop(mq)
        new = sorted(mine - current)
        if new and self.orderly and self.message_model is MessageModel.CLUSTERING:
            new = self._lock(new)
        for mq in new:
            try:
                offset = compute_pull_from_where(
                    self._instance,
                    self._store,
                    mq,
                    self.consume_from_where,
                    self.consume_timestamp_ms,
                )
            except Exception as exc:
                log.warning("%s: cannot find where to start %s, retrying: %s", self.group, mq, exc)
                continue
            pq = ProcessQueue()
            if self.orderly and self.message_model is MessageModel.CLUSTERING:
                pq.locked, pq.last_lock_timestamp = True, time.monotonic()
            self._store.update(mq, offset)
            with self._queues_lock:
                self._queues[mq] = pq
            log.info("%s: now consuming %s from offset %d", self.group, mq, offset)
            self._pull(mq, pq, offset)

    def _drop(self, mq: MessageQueue) -> None:
        with self._queues_lock:
            pq = self._queues.pop(mq, None)
        if pq is None:
            return
        pq.dropped = True
        self._instance.forget_pipelined(self.group, mq)
        if self.orderly and self.message_model is MessageModel.CLUSTERING:
            # Hand the queue over exactly: the batch in flight finishes and commits, its
            # offset reaches the broker, and only then is the lock released for the next owner.
            with pq.consume_lock:
                self._store.persist_all([mq], wait=True)
                self._store.remove(mq)
                self._unlock([mq], oneway=True)
        else:
            self._store.persist_all([mq])
            self._store.remove(mq)
        log.info("%s: no longer consuming %s", self.group, mq)

    def _by_broker(self, mqs: Sequence[MessageQueue]) -> dict[str, list[MessageQueue]]:
        out: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            out.setdefault(mq.broker_name, []).append(mq)
        return out

    def _lock(self, mqs: Sequence[MessageQueue]) -> list[MessageQueue]:
        locked: list[MessageQueue] = []
        for broker, qs in self._by_broker(mqs).items():
            try:
                locked.extend(self._instance.lock_batch(self.group, broker, qs))
            except Exception as exc:
                log.warning("%s: locking queues on %s: %s", self.group, broker, exc)
        return locked

    def _unlock(self, mqs: Sequence[MessageQueue], oneway: bool) -> None:
        for broker, qs in self._by_broker(mqs).items():
            try:
                self._instance.unlock_batch(self.group, broker, qs, oneway)
            except Exception as exc:
                log.warning("%s: unlocking queues on %s: %s", self.group, broker, exc)

    def _lock_all(self) -> None:
        with self._queues_lock:
            held = dict(self._queues)
        locked = set(self._lock(list(held)))
        now = time.monotonic()
        for mq, pq in held.items():
            if mq in locked:
                pq.locked, pq.last_lock_timestamp = True, now
            else:
                pq.locked = False

    # ---- pulling ------------------------------------------------------------------------

    def _pull(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        if pq.dropped or not self._running:
            return
        if pq.count > self.pull_threshold_for_queue or (
            pq.size_bytes > self.pull_threshold_size_for_queue * 1024 * 1024
        ):
            self._pull_later(mq, pq, offset, PULL_TIME_DELAY_ON_FLOW_CONTROL_S)
            return
        if not self.orderly and pq.max_span > self.consume_concurrently_max_span:
            self._pull_later(mq, pq, offset, PULL_TIME_DELAY_ON_FLOW_CONTROL_S)
            return
        if self.orderly and self.message_model is MessageModel.CLUSTERING and not pq.locked:
            self._pull_later(mq, pq, offset, PULL_TIME_DELAY_ON_EXCEPTION_S)
            return
        commit = None
        if self.message_model is MessageModel.CLUSTERING:
            committed = self._store.read_memory(mq)
            commit = committed if committed > 0 else None

        def done(result: PullResult | None, error: BaseException | None) -> None:
            self._on_pulled(mq, pq, offset, result, error)

        try:
            self._instance.pull_async(
                done,
                self.group,
                mq,
                offset,
                self.pull_batch_size,
                expression=self._topics().get(mq.topic, "*"),
                commit_offset=commit,
                suspend_ms=BROKER_SUSPEND_MAX_TIME_MS,
                timeout_ms=CONSUMER_TIMEOUT_WHEN_SUSPEND_MS,
                pipelined=True,
            )
        except Exception as exc:
            log.warning("%s: pulling %s: %s", self.group, mq, exc)
            self._pull_later(mq, pq, offset, PULL_TIME_DELAY_ON_EXCEPTION_S)

    def _pull_later(self, mq: MessageQueue, pq: ProcessQueue, offset: int, delay: float) -> None:
        if self._running and not pq.dropped:
            self._scheduler.call_later(delay, lambda: self._pull(mq, pq, offset))

    def _on_pulled(
        self,
        mq: MessageQueue,
        pq: ProcessQueue,
        offset: int,
        result: PullResult | None,
        error: BaseException | None,
    ) -> None:
        if pq.dropped or not self._running:
            return
        pq.last_pull_timestamp = time.time()
        if result is None:
            log.warning("%s: pull of %s at %d failed: %s", self.group, mq, offset, error)
            self._pull_later(mq, pq, offset, PULL_TIME_DELAY_ON_EXCEPTION_S)
            return
        next_offset = result.next_begin_offset
        if result.status == "FOUND":
            warn_body_errors(self.group, result.messages)
            pq.put(result.messages)
            self._submit(mq, pq, result.messages)
        elif result.status == "OFFSET_ILLEGAL":
            log.warning(
                "%s: offset %d of %s is out of range; continuing from %d",
                self.group,
                offset,
                mq,
                next_offset,
            )
            self._store.update(mq, next_offset)
        elif pq.count == 0:
            # Nothing new (or nothing matched): the committed offset may move up to here.
            self._store.update(mq, next_offset, increase_only=True)
        if self.pull_interval_s > 0:
            self._pull_later(mq, pq, next_offset, self.pull_interval_s)
        else:
            self._pull(mq, pq, next_offset)

    # ---- consuming ----------------------------------------------------------------------

    def _submit(self, mq: MessageQueue, pq: ProcessQueue, msgs: list[StoredMessage]) -> None:
        if self.orderly:
            self._schedule_orderly(mq, pq, 0)
            return
        n = self.consume_message_batch_max_size
        batches = [msgs[i : i + n] for i in range(0, len(msgs), n)]
        # A fast listener gets several batches a task, and a task wakes no second thread while
        # one runs (see _consume_pool): under the GIL more threads only cost hand-offs. A slow
        # one gets a task a batch, so up to consume_thread_max batches run at once, as in
        # RocketMQ.
        slow = self._listener_slow
        per_task = 1 if slow else -(-_FAST_TASK_MESSAGES // n)
        for i in range(0, len(batches), per_task):
            self._executor.submit(
                self._consume_batches, mq, pq, batches[i : i + per_task], spread=slow
            )

    def _consume_batches(
        self, mq: MessageQueue, pq: ProcessQueue, batches: list[list[StoredMessage]]
    ) -> None:
        for i, msgs in enumerate(batches):
            if self._listener_slow and i > 0:
                # The listener turned slow: the rest run side by side, a task a batch.
                for rest in batches[i:]:
                    self._executor.submit(self._consume_batches, mq, pq, [rest])
                return
            self._consume_concurrently(mq, pq, msgs)

    def _consume_concurrently(
        self, mq: MessageQueue, pq: ProcessQueue, msgs: list[StoredMessage]
    ) -> None:
        if pq.dropped:
            return
        listener = self._listener
        assert listener is not None
        tracer = self._tracer
        started = time.perf_counter()
        try:
            if tracer is None:
                status = listener(msgs)
            else:
                status = tracer.call(listener, msgs, lambda s: s == _CONCURRENT_OK)
        except Exception:
            log.exception(
                "%s: the listener raised on %d message(s) of %s", self.group, len(msgs), mq
            )
            status = ConsumeConcurrentlyStatus.RECONSUME_LATER
        # A moving average of a listener call (threads race on it; any recent value will do),
        # with hysteresis: waits for the GIL among many threads inflate a fast call's time.
        avg = self._listener_s = (
            self._listener_s + (time.perf_counter() - started - self._listener_s) / 16
        )
        if avg > _SLOW_LISTENER_S:
            self._listener_slow = True
        elif avg < _FAST_LISTENER_S:
            self._listener_slow = False
        if status == ConsumeConcurrentlyStatus.RECONSUME_LATER:
            self._consume_failed[mq.topic] = self._consume_failed.get(mq.topic, 0) + len(msgs)
            if self.message_model is MessageModel.BROADCASTING:
                # RocketMQ drops failed broadcast messages: there is no group to retry for.
                log.warning(
                    "%s: broadcasting, dropping %d failed message(s)", self.group, len(msgs)
                )
            else:
                failed = self._send_back(mq, msgs)
                if failed and not pq.dropped and self._running:
                    # The broker could not take them back: retry here, after a while.
                    self._scheduler.call_later(
                        self.reconsume_later_delay_s,
                        lambda: self._executor.submit(self._consume_concurrently, mq, pq, failed),
                    )
                msgs = [m for m in msgs if m not in failed]
        offset = pq.remove(msgs)
        if offset >= 0 and not pq.dropped:
            self._store.update(mq, offset, increase_only=True)

    def _send_back(self, mq: MessageQueue, msgs: list[StoredMessage]) -> list[StoredMessage]:
        """CONSUMER_SEND_MSG_BACK each message, or when its broker cannot take it (its master
        is down) a copy to the retry topic; returns those neither way took."""
        failed = []
        for m in msgs:
            try:
                self._instance.send_msg_back(
                    self.group, m, mq.broker_name, 0, self.max_reconsume_times
                )
            except RmqError as exc:
                if not self._resend_for_retry(m, exc):
                    failed.append(m)
        return failed

    def _resend_for_retry(self, m: StoredMessage, cause: RmqError) -> bool:
        """RocketMQ's fallback for a failed send-back: a copy of ``m`` sent to
        ``%RETRY%<group>`` by the client's inner producer (so a broker group with a live master
        stores it), one reconsume time more, delay level 3 + reconsume times. Whether it was
        taken."""
        props = dict(m.properties)
        props.setdefault(PROPERTY_ORIGIN_MESSAGE_ID, m.msg_id)
        props[PROPERTY_RETRY_TOPIC] = m.topic
        props[PROPERTY_RECONSUME_TIME] = str(m.reconsume_times + 1)
        props[PROPERTY_MAX_RECONSUME_TIMES] = str(self.max_reconsume_times)
        props[PROPERTY_DELAY_TIME_LEVEL] = str(3 + m.reconsume_times)
        props.pop(PROPERTY_TRANSACTION_PREPARED, None)
        copy = Message(self.retry_topic, m.body, properties=props, flag=m.flag)
        try:
            with self._queues_lock:
                if self._inner_producer is None:
                    self._inner_producer = NativeProducer(
                        self._instance, CLIENT_INNER_PRODUCER_GROUP
                    )
                producer = self._inner_producer
            producer.send(copy)
        except RmqError as exc:
            log.warning(
                "%s: sending %s back for retry failed (%s), and so did re-sending it to %s "
                "(%s); it is retried here",
                self.group,
                m.msg_id,
                cause,
                self.retry_topic,
                exc,
            )
            return False
        log.info(
            "%s: %s could not go back to its broker (%s); re-sent to %s",
            self.group,
            m.msg_id,
            cause,
            self.retry_topic,
        )
        return True

    def _schedule_orderly(self, mq: MessageQueue, pq: ProcessQueue, delay: float) -> None:
        with pq.lock:
            if pq.consuming_scheduled:
                return
            pq.consuming_scheduled = True

        def run() -> None:
            self._executor.submit(self._consume_orderly, mq, pq)

        if delay:
            self._scheduler.call_later(delay, run)
        else:
            run()

    def _consume_orderly(self, mq: MessageQueue, pq: ProcessQueue) -> None:
        listener = self._orderly_listener
        assert listener is not None
        clustering = self.message_model is MessageModel.CLUSTERING
        with pq.consume_lock:
            with pq.lock:
                pq.consuming_scheduled = False
            while not pq.dropped and self._running:
                if clustering and (not pq.locked or pq.lock_expired()):
                    self._schedule_orderly(mq, pq, PULL_TIME_DELAY_ON_SUSPEND_S)
                    return
                msgs = pq.take(self.consume_message_batch_max_size)
                if not msgs:
                    return
                tracer = self._tracer
                try:
                    if tracer is None:
                        status = listener(msgs)
                    else:
                        status = tracer.call(listener, msgs, lambda s: s == _ORDERLY_OK)
                except Exception:
                    log.exception("%s: the orderly listener raised on %s", self.group, mq)
                    status = ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
                if status == ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT and (
                    self._keep_suspending(mq, pq, msgs)
                ):
                    pq.rollback()
                    self._schedule_orderly(mq, pq, self.suspend_s)
                    return
                offset = pq.commit()
                if offset >= 0:  # even when dropped meanwhile: _drop persists it next
                    self._store.update(mq, offset, increase_only=True)

    def _keep_suspending(
        self, mq: MessageQueue, pq: ProcessQueue, msgs: list[StoredMessage]
    ) -> bool:
        """RocketMQ's ``checkReconsumeTimes``: count a failed attempt of each message; one
        that reached the orderly limit goes to ``%DLQ%<group>`` (CONSUMER_SEND_MSG_BACK with a
        negative delay level). Returns whether the batch must be tried again."""
        limit = self.max_reconsume_times_orderly
        suspend = False
        for m in msgs:
            attempts = pq.failed_attempt(m.queue_offset)
            if limit is None or attempts <= limit:
                suspend = True
                continue
            try:
                self._instance.send_msg_back(self.group, m, mq.broker_name, -1, limit)
                log.warning(
                    "%s: %s failed %d times in order; moved to %%DLQ%%%s",
                    self.group,
                    m.msg_id,
                    attempts,
                    self.group,
                )
            except RmqError as exc:
                log.warning("%s: moving %s to the DLQ failed: %s", self.group, m.msg_id, exc)
                suspend = True
        return suspend

    # ---- offsets and broker pushes ------------------------------------------------------

    def persist_offsets(self, wait: bool = False) -> None:
        """Persist the offsets of the queues held now (also runs every 5 s)."""
        with self._queues_lock:
            mqs = list(self._queues)
        self._store.persist_all(mqs, wait)

    def on_broker_request(self, code: int, ext_fields: dict[str, str], body: bytes | None) -> None:
        """Broker pushes: consumer ids changed → rebalance now; reset offsets → restart the
        topic's queues from the broker's offsets."""
        if not self._running:
            return
        if code == _instance.NOTIFY_CONSUMER_IDS_CHANGED:
            self._scheduler.call_later(0, self.rebalance)
        elif code == _instance.RESET_CONSUMER_CLIENT_OFFSET and body:
            table = parse_offset_table(body.decode("utf-8", "replace"))
            self._scheduler.call_later(0, lambda: self._reset_offsets(table))

    # ---- calls an admin makes through the broker ----------------------------------------

    def on_broker_call(
        self, code: int, ext_fields: dict[str, str], body: bytes | None, reply: BrokerCallReply
    ) -> None:
        """GET_CONSUMER_RUNNING_INFO (answered at once) and CONSUME_MESSAGE_DIRECTLY (the
        listener runs on the consume pool, as any batch does, and answers from there)."""
        if code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            jstack = ext_fields.get("jstackEnable", "false").lower() == "true"
            reply(ResponseCode.SUCCESS, None, running_info.running_info_body(self, jstack))
        elif code == RequestCode.CONSUME_MESSAGE_DIRECTLY and self._running:
            self._executor.submit(self._consume_directly_answer, body, reply)
        elif code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            reply(ResponseCode.SYSTEM_ERROR, f"consumer of group {self.group} is shut down")
        else:
            reply(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f"request code {code}")

    def _consume_directly_answer(self, body: bytes | None, reply: BrokerCallReply) -> None:
        try:
            reply(ResponseCode.SUCCESS, None, running_info.consume_message_directly(self, body))
        except (ValueError, RmqError) as exc:
            reply(ResponseCode.SYSTEM_ERROR, str(exc))

    @property
    def client_instance(self) -> ClientInstance:
        """The native client instance the consumer runs on (started consumers only)."""
        return self._instance

    def process_queue_states(
        self,
    ) -> list[tuple[MessageQueue, int, int, int, int, int, bool, int, bool, int, int]]:
        """Every queue held now, as ``ClientInstance.consumer_running_info`` takes it: the
        queue, the offset to commit, lowest and highest cached offset, cached count and
        bytes, locked, last lock, dropped, last pull, last consume (times in ms)."""
        with self._queues_lock:
            held = list(self._queues.items())
        states = []
        wall_minus_mono = time.time() - time.monotonic()  # lock times are monotonic
        for mq, pq in held:
            offsets = pq.cached_offsets()
            locked_at = pq.last_lock_timestamp
            last_lock_ms = int((locked_at + wall_minus_mono) * 1000) if locked_at else 0
            states.append(
                (
                    mq,
                    self._store.read_memory(mq),
                    offsets[0] if offsets else 0,
                    offsets[-1] if offsets else 0,
                    len(offsets),
                    pq.size_bytes,
                    pq.locked,
                    last_lock_ms,
                    pq.dropped,
                    int(pq.last_pull_timestamp * 1000),
                    int(pq.last_consume_timestamp * 1000),
                )
            )
        return states

    def consume_failed_counts(self) -> dict[str, int]:
        """Messages the listener failed (RECONSUME_LATER or raised), per topic."""
        return dict(self._consume_failed)

    def consume_directly(self, msgs: list[StoredMessage]) -> bool:
        """Hand ``msgs`` to the listener outside the queues (CONSUME_MESSAGE_DIRECTLY);
        True when it consumed them. Its exceptions propagate; offsets are not touched."""
        if self._orderly_listener is not None:
            orderly = self._orderly_listener(msgs)
            return orderly != ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        assert self._listener is not None
        return self._listener(msgs) != ConsumeConcurrentlyStatus.RECONSUME_LATER

    def _reset_offsets(self, table: dict[MessageQueue, int]) -> None:
        with self._rebalance_lock:
            for mq, offset in table.items():
                with self._queues_lock:
                    held = mq in self._queues
                if held:
                    self._drop(mq)
                self._store.update(mq, offset)
                self._store.persist_all([mq], wait=True)
                self._store.remove(mq)
            log.info("%s: offsets reset by the broker for %d queue(s)", self.group, len(table))
        self.rebalance()
