"""``rmq.PullConsumer``: RocketMQ's lite pull consumer (``DefaultLitePullConsumer``). The
application calls :meth:`PullConsumer.poll` in its own loop; queues come from ``subscribe``
(rebalanced within the group, like a push consumer) or from ``assign`` (chosen by the
application). Offsets: ``seek`` moves the next pull, ``commit`` stores what ``poll`` returned
(automatically every ``auto_commit_interval_ms`` when ``auto_commit``).

Pulls are pipelined: when a pull of a queue finds messages, the Rust core sends that queue's
next pull at once, so the next ``poll`` of the queue usually finds its answer waiting (a
``seek`` to another offset discards it)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType

from rmq._rmq import StoredMessage
from rmq.client import _instance
from rmq.client.allocate import AllocateMessageQueueStrategy
from rmq.client.consumer import (
    ConsumeFromWhere,
    MessageModel,
    Rebalancer,
    _GroupMember,
    compute_pull_from_where,
    warn_body_errors,
)
from rmq.client.message_queue import MessageQueue
from rmq.tls import TlsOptions

__all__ = ["PullConsumer"]

log = logging.getLogger("rmq.client")


class PullConsumer(_GroupMember):
    """Pulls on the caller's thread. Not thread-safe: use one per thread.

    >>> with PullConsumer("g", "127.0.0.1:9876") as c:     # doctest: +SKIP
    ...     c.subscribe("TopicTest")
    ...     batch = c.poll(1000)
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
        pull_batch_size: int = 32,
        auto_commit: bool = True,
        auto_commit_interval_ms: int = 5000,
        poll_timeout_ms: int = 5000,
        rebalance_interval_ms: int = 20000,
        offset_store_dir: str | Path | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        tls: bool = False,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        tls_verify: bool = True,
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
        self.pull_batch_size = pull_batch_size
        self.auto_commit = auto_commit
        self.auto_commit_interval_s = auto_commit_interval_ms / 1000
        self.poll_timeout_ms = poll_timeout_ms
        self.rebalance_interval_s = rebalance_interval_ms / 1000
        self._subscriptions: dict[str, str] = {}
        self._assigned_explicitly = False
        self._pending_assignment: list[MessageQueue] = []
        self._positions: dict[MessageQueue, int] = {}
        self._next = 0
        self._last_commit = time.monotonic()
        self._last_rebalance = 0.0
        self._rebalance_now = threading.Event()
        self._running = False

    # ---- configuration ------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Take a share of ``topic``'s queues, rebalanced within the group."""
        if self._assigned_explicitly:
            raise RuntimeError("subscribe() and assign() cannot be mixed on one consumer")
        self._subscriptions[topic] = expression or "*"
        if self._running:
            self._register()
            self._instance.send_heartbeat()
            self._rebalance_now.set()

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Pull exactly ``queues`` (no rebalance)."""
        if self._subscriptions and not self._assigned_explicitly:
            raise RuntimeError("subscribe() and assign() cannot be mixed on one consumer")
        self._assigned_explicitly = True
        queues = sorted(set(queues))
        for mq in queues:
            self._subscriptions.setdefault(mq.topic, "*")
        if self._running:
            self._set_assignment(queues)
        else:
            self._pending_assignment = queues

    # ---- lifecycle ----------------------------------------------------------------------

    def start(self) -> PullConsumer:
        """Connect and join the group. Returns self."""
        if self._running:
            return self
        self._instance = _instance.acquire(
            self.namesrv_addr,
            self.instance_name,
            self.group,
            self,
            creds=self._credentials,
            tls=self.tls,
        )
        self._store = self._open_offset_store(self._instance)
        self._rebalancer = Rebalancer(
            self._instance, self.group, self.message_model, self.allocate_strategy
        )
        self._running = True
        if not self._assigned_explicitly:
            self._register()
            self._instance.send_heartbeat()
            self._rebalance_now.set()
        else:
            self._set_assignment(self._pending_assignment)
        return self

    def _register(self) -> None:
        self._instance.register_consumer(
            self.group,
            list(self._subscriptions.items()),
            message_model=self.message_model.value,
            consume_type="CONSUME_ACTIVELY",
            consume_from_where=self.consume_from_where.value,
        )

    def shutdown(self) -> None:
        """Commit (when ``auto_commit``), leave the group, release connections. Idempotent."""
        if not self._running:
            return
        if self.auto_commit:
            self.commit()
        self._running = False
        for mq in self._positions:
            self._instance.forget_pipelined(self.group, mq)
        if not self._assigned_explicitly:
            self._instance.unregister_consumer(self.group)
        _instance.release(self._instance, self.group)

    def __enter__(self) -> PullConsumer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()

    # ---- queues -------------------------------------------------------------------------

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic``."""
        return self._instance.fetch_subscribe_queues(topic)

    def assignment(self) -> list[MessageQueue]:
        """The queues polled now."""
        return sorted(self._positions)

    def _set_assignment(self, queues: Iterable[MessageQueue]) -> None:
        mine = set(queues)
        gone = [mq for mq in self._positions if mq not in mine]
        if gone:
            self._store.persist_all(gone)
            for mq in gone:
                del self._positions[mq]
                self._store.remove(mq)
                self._instance.forget_pipelined(self.group, mq)
        for mq in sorted(mine - set(self._positions)):
            self._positions[mq] = compute_pull_from_where(
                self._instance,
                self._store,
                mq,
                self.consume_from_where,
                self.consume_timestamp_ms,
            )
            self._store.update(mq, self._positions[mq])

    def _maybe_rebalance(self) -> None:
        if self._assigned_explicitly:
            return
        due = time.monotonic() - self._last_rebalance >= self.rebalance_interval_s
        if not (due or self._rebalance_now.is_set()):
            return
        self._rebalance_now.clear()
        self._last_rebalance = time.monotonic()
        mine: list[MessageQueue] = []
        for topic in self._subscriptions:
            share = self._rebalancer.assigned(topic)
            if share is None:  # cannot tell now: keep what is held
                share = [mq for mq in self._positions if mq.topic == topic]
            mine.extend(share)
        self._set_assignment(mine)

    def on_broker_request(self, code: int, ext_fields: dict[str, str], body: bytes | None) -> None:
        """A consumer joined or left the group: rebalance at the next poll."""
        if code == _instance.NOTIFY_CONSUMER_IDS_CHANGED:
            self._rebalance_now.set()

    # ---- polling and offsets ------------------------------------------------------------

    def poll(self, timeout_ms: int | None = None) -> list[StoredMessage]:
        """The next messages of one queue (up to ``pull_batch_size``), waiting up to
        ``timeout_ms`` for some; ``[]`` when none came."""
        if not self._running:
            raise RuntimeError("the consumer is not started: call start() first")
        deadline = time.monotonic() + (timeout_ms or self.poll_timeout_ms) / 1000
        while True:
            self._maybe_rebalance()
            if (
                self.auto_commit
                and time.monotonic() - self._last_commit >= self.auto_commit_interval_s
            ):
                self.commit()
            queues = sorted(self._positions)
            for i in range(len(queues)):
                mq = queues[(self._next + i) % len(queues)]
                msgs = self._pull_once(mq)
                if msgs:
                    self._next = (self._next + i + 1) % len(queues)
                    return msgs
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            time.sleep(min(0.02, remaining))

    def _pull_once(self, mq: MessageQueue) -> list[StoredMessage]:
        offset = self._positions[mq]
        try:
            result = self._instance.pull(
                self.group,
                mq,
                offset,
                self.pull_batch_size,
                expression=self._subscriptions.get(mq.topic, "*"),
                pipelined=True,
            )
        except Exception as exc:
            log.warning("%s: pulling %s at %d: %s", self.group, mq, offset, exc)
            return []
        if result.status == "OFFSET_ILLEGAL":
            log.warning(
                "%s: offset %d of %s is out of range; continuing from %d",
                self.group,
                offset,
                mq,
                result.next_begin_offset,
            )
        warn_body_errors(self.group, result.messages)
        self._positions[mq] = result.next_begin_offset
        # What poll hands out counts as consumed for commit().
        self._store.update(mq, result.next_begin_offset)
        return result.messages

    def seek(self, mq: MessageQueue, offset: int) -> None:
        """Pull ``mq`` from ``offset`` next."""
        if mq not in self._positions:
            raise ValueError(f"{mq} is not assigned to this consumer")
        self._positions[mq] = offset
        self._store.update(mq, offset)

    def seek_to_begin(self, mq: MessageQueue) -> None:
        """Pull ``mq`` from its first stored message next."""
        self.seek(mq, self._instance.min_offset(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        """Pull only messages that arrive from now on."""
        self.seek(mq, self._instance.max_offset(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The offset of ``mq``'s first message stored at or after ``timestamp_ms``."""
        return self._instance.search_offset(mq, timestamp_ms)

    def committed(self, mq: MessageQueue) -> int:
        """The offset stored for ``mq`` (-1 when none)."""
        return self._store.read_store(mq)

    def commit(self, offsets: Mapping[MessageQueue, int] | None = None) -> None:
        """Store the offsets ``poll`` reached (or ``offsets``): on the brokers (clustering) or in
        the local offsets file (broadcasting)."""
        if offsets:
            for mq, off in offsets.items():
                self._store.update(mq, off)
        self._store.persist_all(list(offsets or self._positions), wait=True)
        self._last_commit = time.monotonic()
