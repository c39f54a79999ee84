"""The background sender of trace records (RocketMQ's ``AsyncTraceDispatcher``).

Hooks :meth:`~AsyncTraceDispatcher.append` records to a bounded queue and return at once: a
full queue drops the record and counts it (:attr:`~AsyncTraceDispatcher.discarded`, with a
warning), so tracing never blocks or slows a send or a listener. One worker thread encodes
the records and sends them in batches, as one trace message per batch, to the trace topic by
its own producer (group ``_INNER_TRACE_PRODUCER-<group>-<PRODUCER|CONSUMER>-<n>``): a batch
goes when it reaches ~118 KB or its first record is 500 ms old. The message's keys are the
traced messages' ids and keys, so the broker's index finds it (``queryMsgTraceById``).
:meth:`~AsyncTraceDispatcher.shutdown` sends what is left.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from typing import TYPE_CHECKING

from rmq._rmq import TRACE_TOPIC
from rmq.errors import RmqError
from rmq.trace.data import KEY_SEPARATOR, TraceContext, encode, transfer_keys

if TYPE_CHECKING:
    from rmq.client.producer import Producer

__all__ = ["AsyncTraceDispatcher"]

log = logging.getLogger("rmq.trace")

GROUP_NAME_PREFIX = "_INNER_TRACE_PRODUCER"
TRACE_INSTANCE_NAME = "PID_CLIENT_INNER_TRACE_PRODUCER"
QUEUE_SIZE = 1024
MAX_MSG_SIZE = 128_000
BATCH_BYTES = MAX_MSG_SIZE - 10_000
POLL_S = 0.1
WAIT_THRESHOLD_S = 0.5
SEND_TIMEOUT_MS = 5000
FLUSH_TIMEOUT_S = 5.0
_COUNTER = itertools.count(1)


class AsyncTraceDispatcher:
    """Queues trace records of one producer or consumer and sends them in the background.

    ``host`` is the traced producer or consumer: the trace producer takes its nameserver,
    credentials and TLS settings.
    """

    def __init__(
        self,
        group: str,
        kind: str,
        trace_topic: str | None,
        host: object,
        *,
        queue_size: int | None = None,
    ) -> None:
        self.trace_topic = trace_topic or TRACE_TOPIC
        self.group = group
        self.kind = kind
        self.discarded = 0
        """Records dropped because the queue was full."""
        self._queue: queue.Queue[TraceContext] = queue.Queue(maxsize=queue_size or QUEUE_SIZE)
        self._host = host
        self._producer: Producer | None = None
        self._worker: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> AsyncTraceDispatcher:
        """Start the trace producer and the worker thread. Returns self."""
        from rmq.client.producer import Producer

        host = self._host
        namesrv = getattr(host, "namesrv_addr", None)
        producer = Producer(
            f"{GROUP_NAME_PREFIX}-{self.group}-{self.kind}-{next(_COUNTER)}",
            namesrv,
            instance_name=f"{TRACE_INSTANCE_NAME}_{namesrv}",
            send_msg_timeout=SEND_TIMEOUT_MS,
            max_message_size=MAX_MSG_SIZE,
        )
        # The host's signing keys and TLS settings, already checked by the host.
        producer._credentials = getattr(host, "_credentials", None)
        producer.tls = getattr(host, "tls", producer.tls)
        self._producer = producer.start()
        self._worker = threading.Thread(
            target=self._run, name=f"rmq-trace-{self.kind.lower()}-{self.group}", daemon=True
        )
        self._worker.start()
        return self

    def append(self, ctx: TraceContext) -> bool:
        """Queue ``ctx``; never blocks. False (and one more :attr:`discarded`) when full."""
        try:
            self._queue.put_nowait(ctx)
        except queue.Full:
            with self._lock:
                self.discarded += 1
                n = self.discarded
            if n & (n - 1) == 0:  # 1, 2, 4, 8, ...: a counted warning, not one per record
                log.warning(
                    "trace queue of %s full: %d trace record(s) dropped so far", self.group, n
                )
            return False
        return True

    def shutdown(self) -> None:
        """Send what is queued (waiting up to 5 s), then stop. Idempotent."""
        worker, self._worker = self._worker, None
        if worker is None:
            return
        self._stop.set()
        worker.join(FLUSH_TIMEOUT_S)
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.shutdown()

    # ---- the worker -----------------------------------------------------------------------

    def _run(self) -> None:
        batch: list[TraceContext] = []
        size = 0
        first = 0.0
        while True:
            stopping = self._stop.is_set()
            try:
                ctx = self._queue.get(timeout=0 if stopping else POLL_S)
            except queue.Empty:
                ctx = None
            if ctx is not None and ctx.trace_beans:
                try:
                    n = len(encode(ctx))
                except Exception:  # a bad record must not stop the worker
                    log.exception("dropping a trace record that cannot be encoded: %r", ctx)
                else:
                    if not batch:
                        first = time.monotonic()
                    batch.append(ctx)
                    size += n
            if batch and (
                size >= BATCH_BYTES
                or time.monotonic() - first >= WAIT_THRESHOLD_S
                or (stopping and ctx is None)
            ):
                self._send(batch)
                batch, size = [], 0
            if stopping and ctx is None:
                return

    def _send(self, batch: list[TraceContext]) -> None:
        from rmq.client.message import Message

        producer = self._producer
        if producer is None:
            return
        data = "".join(encode(c) for c in batch)
        keys: dict[str, None] = {}
        for c in batch:
            keys.update(dict.fromkeys(transfer_keys(c)))
        message = Message(self.trace_topic, data.encode(), keys=KEY_SEPARATOR.join(keys))
        try:
            producer.send(message)
        except RmqError as exc:
            log.error(
                "sending %d trace record(s) to %s failed: %s", len(batch), self.trace_topic, exc
            )
