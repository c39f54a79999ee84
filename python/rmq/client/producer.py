"""``rmq.Producer``: RocketMQ's ``DefaultMQProducer`` over the Rust client core.

Queue selection, retries, latency fault avoidance, compression and the wire are Rust
(``rmq._rmq.NativeProducer``); this class adds what is Python's to decide: selectors for
ordered sends, splitting of oversized batches, futures for async sends.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from collections.abc import Callable, Generator, Iterable, Sequence
from types import TracebackType
from typing import Any, TypeVar

from rmq._rmq import NativeProducer, SendResult, java_string_hash
from rmq.client import _instance
from rmq.client.message import Message
from rmq.client.message_queue import MessageQueue
from rmq.tls import TlsOptions
from rmq.trace.data import now_ms
from rmq.trace.dispatcher import AsyncTraceDispatcher
from rmq.trace.hooks import SendTracer

__all__ = [
    "MessageQueueSelector",
    "Producer",
    "SendFuture",
    "select_by_hash",
    "select_by_sharding_key",
]

_P = TypeVar("_P", bound="Producer")

MessageQueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]
"""``selector(queues, message, arg) -> queue``, as Java's ``MessageQueueSelector.select``."""


def _java_hash(arg: object) -> int:
    if isinstance(arg, str):
        return java_string_hash(arg)
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        if -(2**31) <= arg < 2**31:
            return arg  # Integer.hashCode
        v = arg & 0xFFFFFFFFFFFFFFFF
        h = (v ^ (v >> 32)) & 0xFFFFFFFF  # Long.hashCode
        return h - 2**32 if h >= 2**31 else h
    raise TypeError(f"select_by_hash needs a str or int arg (hashed as Java does), not {arg!r}")


def select_by_hash(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    """RocketMQ's ``SelectMessageQueueByHash``: the same ``arg`` always picks the same queue,
    and a Java producer with the same arg picks the same one too."""
    del message
    # Java: abs(hashCode % n); its remainder has the dividend's sign, so this is |h| mod n.
    return queues[abs(_java_hash(arg)) % len(queues)]


def select_by_sharding_key(
    queues: Sequence[MessageQueue], message: Message, arg: Any
) -> MessageQueue:
    """Pick the queue by ``message.sharding_key`` (falling back to ``arg``): messages with one
    key stay in order."""
    key = message.sharding_key if message.sharding_key is not None else arg
    return select_by_hash(queues, message, key)


class SendFuture(concurrent.futures.Future[SendResult]):
    """The result of :meth:`Producer.send_async`: a ``concurrent.futures.Future`` that can also
    be awaited in asyncio code."""

    def __await__(self) -> Generator[Any, None, SendResult]:
        return asyncio.wrap_future(self).__await__()


class Producer:
    """Sends messages. One producer is thread-safe; use it from many threads.

    >>> producer = Producer("my-group", "127.0.0.1:9876")   # doctest: +SKIP
    >>> producer.start()                                     # doctest: +SKIP
    >>> producer.send(Message("TopicTest", b"hello", tags="TagA"))  # doctest: +SKIP

    Bodies longer than ``compress_msg_body_over_howmuch`` bytes are compressed with
    ``compress_type``: ``"ZLIB"`` (the default, what every RocketMQ consumer reads), ``"LZ4"``
    (LZ4 frame format) or ``"ZSTD"`` (zstd frame), as RocketMQ 5's ``setCompressType``; LZ4 and
    ZSTD need RocketMQ 5.x Java consumers (or rmq's). ``compress_level`` is the zlib or zstd
    level. An unknown type raises :class:`rmq.errors.ConfigError` from :meth:`start`.

    With ``access_key`` and ``secret_key`` (and ``security_token``) every request is signed
    (ACL 1.0, as Java's ``AclClientRPCHook``); a broker's refusal raises
    :class:`rmq.errors.NoPermissionError` carrying its remark. Consumers take the same keywords.

    With ``enable_msg_trace`` each send that returns a result is traced (a Pub record, see
    :mod:`rmq.trace`) to ``custom_trace_topic`` (default ``RMQ_SYS_TRACE_TOPIC``) in the
    background, as Java's ``DefaultMQProducer(group, enableMsgTrace, customizedTraceTopic)``.
    """

    def __init__(
        self,
        group: str = "DEFAULT_PRODUCER",
        namesrv_addr: str | None = None,
        *,
        instance_name: str = "DEFAULT",
        send_msg_timeout: int = 3000,
        retry_times_when_send_failed: int = 2,
        retry_another_broker_when_not_store_ok: bool = False,
        max_message_size: int = 4 * 1024 * 1024,
        compress_msg_body_over_howmuch: int = 4096,
        compress_type: str = "ZLIB",
        compress_level: int = 5,
        send_latency_fault_enable: bool = False,
        default_topic_queue_nums: int = 4,
        poll_name_server_interval: int = 30000,
        heartbeat_broker_interval: int = 30000,
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
        self.group = group
        self.enable_msg_trace = enable_msg_trace
        self.custom_trace_topic = custom_trace_topic
        self._tracer: SendTracer | None = None
        self._credentials = _instance.credentials(access_key, secret_key, security_token)
        self.tls = TlsOptions.of(tls, tls_ca, tls_cert, tls_key, tls_verify)
        self.namesrv_addr = _instance.default_namesrv_addr(namesrv_addr)
        self.instance_name = instance_name
        self.max_message_size = max_message_size
        self.send_msg_timeout = send_msg_timeout
        self.retry_times_when_send_failed = retry_times_when_send_failed
        self.retry_another_broker_when_not_store_ok = retry_another_broker_when_not_store_ok
        self.compress_msg_body_over_howmuch = compress_msg_body_over_howmuch
        self.compress_type = compress_type
        self.compress_level = compress_level
        self.send_latency_fault_enable = send_latency_fault_enable
        self.default_topic_queue_nums = default_topic_queue_nums
        self.poll_name_server_interval = poll_name_server_interval
        self.heartbeat_broker_interval = heartbeat_broker_interval
        self._native: NativeProducer | None = None

    def _push_handler(self) -> _instance.BrokerPushHandler | None:
        """What hears broker pushes for this producer's group: a transaction producer's checks
        (a plain producer gets none)."""
        return None

    def start(self) -> Producer:
        """Connect (lazily: the first send fetches the route). Returns self."""
        if self._native is None:
            handler = self._push_handler()
            instance = _instance.acquire(
                self.namesrv_addr,
                self.instance_name,
                self.group if handler is not None else None,
                handler,
                heartbeat_broker_interval_ms=self.heartbeat_broker_interval,
                poll_name_server_interval_ms=self.poll_name_server_interval,
                creds=self._credentials,
                tls=self.tls,
            )
            self._instance = instance
            self._native = NativeProducer(
                instance,
                self.group,
                send_timeout_ms=self.send_msg_timeout,
                retry_times_when_send_failed=self.retry_times_when_send_failed,
                retry_another_broker_when_not_store_ok=self.retry_another_broker_when_not_store_ok,
                max_message_size=self.max_message_size,
                compress_msg_body_over_howmuch=self.compress_msg_body_over_howmuch,
                compress_type=self.compress_type,
                compress_level=self.compress_level,
                send_latency_fault_enable=self.send_latency_fault_enable,
                default_topic_queue_nums=self.default_topic_queue_nums,
            )
            if self.enable_msg_trace:
                dispatcher = AsyncTraceDispatcher(
                    self.group, "PRODUCER", self.custom_trace_topic, self
                )
                self._tracer = SendTracer(self.group, dispatcher.start())
        return self

    def shutdown(self) -> None:
        """Unregister from the brokers and release the connections. Idempotent."""
        if self._native is not None:
            tracer, self._tracer = self._tracer, None
            if tracer is not None:
                tracer.dispatcher.shutdown()
            native, self._native = self._native, None
            native.shutdown()
            handled = self._push_handler() is not None
            _instance.release(self._instance, self.group if handled else None)

    def __enter__(self: _P) -> _P:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    @property
    def native(self) -> NativeProducer:
        if self._native is None:
            raise RuntimeError("the producer is not started: call start() first")
        return self._native

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The topic's writable queues."""
        return self.native.publish_queues(topic)

    def _select(
        self, message: Message, selector: MessageQueueSelector | None, arg: Any
    ) -> MessageQueue | None:
        if selector is None:
            return None
        queues = self.native.publish_queues(message.topic)
        queue = selector(queues, message, arg)
        if queue not in queues:
            raise ValueError(f"the selector returned {queue}, which is not a queue of the topic")
        return queue

    def send(
        self,
        message: Message,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        *,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """Send and wait for the broker. With ``selector`` (or ``queue``) the message goes to
        the queue chosen, in one attempt (ordered sends must not move to another queue);
        otherwise queues are taken round-robin and a failed attempt is retried elsewhere."""
        queue = queue or self._select(message, selector, arg)
        tracer = self._tracer
        if tracer is None:
            return self.native.send(message, queue)
        begin = now_ms()
        result = self.native.send(message, queue)
        tracer.sent(message, result, begin)
        return result

    def send_async(
        self,
        message: Message,
        callback: Callable[[SendResult | None, BaseException | None], object] | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
    ) -> SendFuture:
        """Send without blocking. Returns a future (awaitable in asyncio); ``callback(result,
        error)`` runs too, when given, on the client's callback thread."""
        future = SendFuture()
        future.set_running_or_notify_cancel()
        tracer, begin = self._tracer, now_ms()

        def done(result: SendResult | None, error: BaseException | None) -> None:
            if tracer is not None and result is not None:
                tracer.sent(message, result, begin)
            if error is not None:
                future.set_exception(error)
            elif result is not None:
                future.set_result(result)
            if callback is not None:
                callback(result, error)

        self.native.send_async(message, done, self._select(message, selector, arg))
        return future

    def send_oneway(
        self, message: Message, selector: MessageQueueSelector | None = None, arg: Any = None
    ) -> None:
        """Send without waiting for (or getting) the broker's answer."""
        self.native.send_oneway(message, self._select(message, selector, arg))

    def send_batch(
        self, messages: Iterable[Message], *, queue: MessageQueue | None = None
    ) -> list[SendResult]:
        """Send messages of one topic as SEND_BATCH_MESSAGE requests: one request when they fit
        in ``max_message_size``, else one per slice that fits. Returns one result per request
        (its ``msg_id`` lists the batch's ids, comma-separated)."""
        return [
            self.native.send_batch(chunk, queue)
            for chunk in split_batch(list(messages), self.max_message_size)
        ]


def _encoded_size(m: Message) -> int:
    props = sum(len(k.encode()) + len(v.encode()) + 2 for k, v in m.properties.items())
    # 20 bytes of entry header, plus room for the UNIQ_KEY property the client adds.
    return 20 + len(m.body) + props + 44


def split_batch(messages: list[Message], max_size: int) -> list[list[Message]]:
    """Slices of ``messages``, in order, each encoding to at most ``max_size`` bytes."""
    chunks: list[list[Message]] = []
    current: list[Message] = []
    size = 0
    for m in messages:
        n = _encoded_size(m)
        if current and size + n > max_size:
            chunks.append(current)
            current, size = [], 0
        current.append(m)
        size += n
    if current:
        chunks.append(current)
    return chunks
