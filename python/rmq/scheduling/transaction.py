"""The transaction check-back: RocketMQ's ``TransactionalMessageCheckService`` and the check loop
of ``TransactionalMessageServiceImpl``, decided in Python.

A producer that sends a half message (``TRAN_MSG=true``) owes the broker an END_TRANSACTION.
The broker (Rust) parks the half in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 and, when the
producer commits or rolls back, writes an op record to ``RMQ_SYS_TRANS_OP_HALF_TOPIC`` queue 0
(tag ``d``, body = the half's queue offset). This module finds the halves nobody ended and asks
their producers, every ``transactionCheckInterval`` ms:

* it walks the half queue from its progress offset, skipping halves that have an op record
  (read from the op queue as it goes);
* a half younger than ``transactionTimeOut`` ms (or its ``CHECK_IMMUNITY_TIME_IN_SECONDS``)
  stops the walk: it and everything after it wait for a later round;
* a half checked ``transactionCheckMax`` times already, or older than ``fileReservedTime``, is
  discarded: an error line in the log, and a copy in ``TRANS_CHECK_MAX_TIME_TOPIC`` (as
  RocketMQ keeps it, for an operator to inspect);
* any other half is stored again at the end of the half queue with ``TRANSACTION_CHECK_TIMES``
  counted up, and the producer group of the copy (``PGROUP``) is asked about it with
  CHECK_TRANSACTION_STATE over one of its live connections (taken in turn; when one has closed
  the next is asked). The producer answers with END_TRANSACTION (``fromTransactionCheck``) for
  the copy, which ends it; with "unknown" (or no answer) the copy is checked again a round
  later.

Progress (the half and op queue offsets) is kept as consumer offsets of group
``CID_RMQ_SYS_TRANS``, as RocketMQ keeps it, and written to ``consumerOffset.json`` after every
round that moved it, so a restarted broker continues where the last round ended; the check
counts travel inside the half messages themselves. As in RocketMQ, a producer that answers a
check after the next round has already re-checked the same half may see its transaction
committed twice: transactional delivery is at least once.

:class:`TransactionChecker` runs one round (:meth:`~TransactionChecker.check_once`) against
the store and the broker server; :class:`TransactionCheckService` is the thread that runs it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from rmq._rmq import (
    CID_SYS_RMQ_TRANS,
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_REAL_TOPIC,
    PROPERTY_TRANSACTION_CHECK_TIMES,
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET,
    decode_trans_op,
)
from rmq._rmq import TRANS_CHECK_MAX_TIME_TOPIC as CHECK_MAX_TIME_TOPIC
from rmq._rmq import TRANS_HALF_TOPIC as HALF_TOPIC
from rmq._rmq import TRANS_OP_HALF_TOPIC as OP_TOPIC
from rmq.errors import RmqError
from rmq.scheduling._periodic import PeriodicService

__all__ = [
    "CHECK_MAX_TIME_TOPIC",
    "CID_SYS_RMQ_TRANS",
    "HALF_TOPIC",
    "OP_TOPIC",
    "CheckRound",
    "TransactionCheckPolicy",
    "TransactionCheckService",
    "TransactionChecker",
]

log = logging.getLogger(__name__)

# Half messages wait in HALF_TOPIC (queue 0); END_TRANSACTION records in OP_TOPIC that a half
# is done (an op record, whose format rmq_common::trans_op owns); halves checked
# transactionCheckMax times without an answer go to CHECK_MAX_TIME_TOPIC; the half and op
# queue offsets are kept as consumer offsets of CID_SYS_RMQ_TRANS. All names come from Rust.

MAX_PROCESS_TIME_LIMIT_MS = 60_000
"""A round stops after this long (RocketMQ's ``MAX_PROCESS_TIME_LIMIT``)."""
OP_PULL_BATCH = 32
"""Op records read at a time."""

_PROP_CHECK_TIMES = PROPERTY_TRANSACTION_CHECK_TIMES
_PROP_IMMUNITY = PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS
_PROP_PREPARED_QUEUE_OFFSET = PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET
_PROP_PRODUCER_GROUP = PROPERTY_PRODUCER_GROUP
_PROP_REAL_TOPIC = PROPERTY_REAL_TOPIC

_NO_NEW = frozenset({"NO_MESSAGE_IN_QUEUE", "OFFSET_OVERFLOW_ONE"})
_NO_MATCH = frozenset({"NO_MATCHED_MESSAGE"})


@dataclass(frozen=True, slots=True)
class TransactionCheckPolicy:
    """The broker keys that steer the check-back, in the units it uses."""

    check_interval_s: float = 60.0
    """``transactionCheckInterval`` in seconds: time between rounds."""
    timeout_ms: int = 6000
    """``transactionTimeOut``: a half younger than this is not checked yet."""
    check_max: int = 15
    """``transactionCheckMax``: checks of one half before it is discarded."""

    def __post_init__(self) -> None:
        if self.check_interval_s <= 0:
            raise ValueError(f"check_interval_s must be > 0, not {self.check_interval_s}")
        if self.timeout_ms < 0:
            raise ValueError(f"timeout_ms must be >= 0, not {self.timeout_ms}")
        if self.check_max < 1:
            raise ValueError(f"check_max must be >= 1, not {self.check_max}")


class StoredHalf(Protocol):
    """The part of :class:`rmq._rmq.StoredMessage` the check-back reads."""

    @property
    def topic(self) -> str: ...
    @property
    def queue_id(self) -> int: ...
    @property
    def queue_offset(self) -> int: ...
    @property
    def commit_log_offset(self) -> int: ...
    @property
    def body(self) -> bytes: ...
    @property
    def flag(self) -> int: ...
    @property
    def sys_flag(self) -> int: ...
    @property
    def born_timestamp(self) -> int: ...
    @property
    def born_host(self) -> str: ...
    @property
    def store_timestamp(self) -> int: ...
    @property
    def reconsume_times(self) -> int: ...
    @property
    def properties(self) -> dict[str, str]: ...
    @property
    def msg_id(self) -> str: ...
    @property
    def tags(self) -> str | None: ...


class Pulled(Protocol):
    """The part of :class:`rmq._rmq.GetMessageResult` the check-back reads."""

    @property
    def status(self) -> str: ...
    @property
    def next_begin_offset(self) -> int: ...
    @property
    def messages(self) -> Sequence[StoredHalf]: ...


class Stored(Protocol):
    """The part of :class:`rmq._rmq.PutMessageResult` the check-back reads."""

    @property
    def queue_offset(self) -> int: ...
    @property
    def wrote_offset(self) -> int: ...


class HalfStore(Protocol):
    """The part of :class:`rmq._rmq.MessageStore` the check-back uses."""

    def get_message(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        max_count: int = 32,
        tags: Sequence[str] | None = None,
    ) -> Pulled: ...

    def put_message(
        self,
        topic: str,
        queue_id: int,
        body: bytes,
        properties: Mapping[str, str] | None = None,
        *,
        flag: int = 0,
        sys_flag: int = 0,
        born_timestamp: int = 0,
        born_host: str = "127.0.0.1:0",
        reconsume_times: int = 0,
        prepared_transaction_offset: int = 0,
    ) -> Stored: ...

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    @property
    def file_reserved_time(self) -> int: ...


class CheckServer(Protocol):
    """The part of :class:`rmq._rmq.BrokerServer` the check-back uses."""

    def producer_connections(self, group: str) -> list[tuple[int, str, str]]: ...

    def check_transaction_state(self, connection_id: int, commit_log_offset: int) -> bool: ...

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int: ...

    def commit_consumer_offset(
        self, group: str, topic: str, queue_id: int, offset: int
    ) -> None: ...

    def create_topic_if_absent(self, topic: str, queue_nums: int = 1, perm: int = 6) -> None: ...

    def persist(self) -> None: ...


@dataclass(slots=True)
class CheckRound:
    """What one round did (for logs and tests)."""

    checked: list[str] = field(default_factory=list)
    """Unique ids of the halves producers were asked about."""
    unasked: list[str] = field(default_factory=list)
    """Unique ids of halves re-stored for a check, but with no live producer of their group."""
    discarded: list[str] = field(default_factory=list)
    """Unique ids of the halves discarded (checked too often, or expired)."""
    half_offset: int = 0
    """The half queue's progress after the round."""
    op_offset: int = 0
    """The op queue's progress after the round."""


@dataclass(slots=True)
class _OpRead:
    """One read of the op queue (RocketMQ's ``PullResult`` as ``fillOpRemoveMap`` returns it)."""

    next_begin_offset: int
    messages: list[StoredHalf] | None
    """None when nothing was read (no new record, or an illegal offset)."""


def _int(text: str | None, default: int = -1) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        log.error("transaction check: %r is not a number", text)
        return default


class TransactionChecker:
    """Runs check rounds over a store and a broker server (see the module docs).

    ``now_ms`` is the clock (milliseconds since the epoch), replaceable in tests.
    """

    def __init__(
        self,
        store: HalfStore,
        server: CheckServer,
        policy: TransactionCheckPolicy,
        *,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.store = store
        self.server = server
        self.policy = policy
        self._now_ms = now_ms
        self._next_connection = 0
        # Half offsets below the progress whose op records this round read.
        self._ended_before: set[int] = set()

    # ---- progress -----------------------------------------------------------------------

    def _fetch_offset(self, topic: str) -> int:
        offset = self.server.query_consumer_offset(CID_SYS_RMQ_TRANS, topic, 0)
        return offset if offset >= 0 else self.store.get_min_offset_in_queue(topic, 0)

    def _commit_offset(self, topic: str, offset: int) -> None:
        self.server.commit_consumer_offset(CID_SYS_RMQ_TRANS, topic, 0, offset)

    # ---- one round ------------------------------------------------------------------------

    def check_once(self) -> CheckRound:
        """One round over the half queue; commits and persists the progress it made."""
        start = self._now_ms()
        timeout = self.policy.timeout_ms
        half_offset = self._fetch_offset(HALF_TOPIC)
        op_offset = self._fetch_offset(OP_TOPIC)
        result = CheckRound(half_offset=half_offset, op_offset=op_offset)
        remove: dict[int, int] = {}  # half queue offset -> op queue offset
        done_op: list[int] = []
        self._ended_before.clear()
        op_read = self._fill_op_remove_map(remove, op_offset, half_offset, done_op)
        null_reads = 1
        new_offset = i = half_offset
        while self._now_ms() - start <= MAX_PROCESS_TIME_LIMIT_MS:
            if i in remove:
                done_op.append(remove.pop(i))
                new_offset = i = i + 1
                continue
            msg, pulled = self._half_at(i)
            if msg is None:
                null_reads += 1
                if null_reads > 2 or pulled.status in _NO_NEW:
                    break
                new_offset = i = pulled.next_begin_offset
                continue
            checks = self._count_check(msg)
            if checks is None or self._expired(msg):
                self._discard(msg, result)
                new_offset = i = i + 1
                continue
            if msg.store_timestamp >= start:
                break  # stored during this round (a copy made by it, or a new half)
            age = self._now_ms() - msg.born_timestamp
            immunity = timeout
            immunity_text = msg.properties.get(_PROP_IMMUNITY)
            if immunity_text is not None:
                immunity = self._immunity_ms(immunity_text)
                if age < immunity and self._check_prepare_queue_offset(remove, done_op, msg):
                    new_offset = i = i + 1
                    continue
            elif 0 <= age < immunity:
                break  # too young, and so is everything after it
            ops = op_read.messages
            need_check = (
                (ops is None and age > immunity)
                or (ops is not None and ops[-1].born_timestamp - start > timeout)
                or age <= -1
            )
            if not need_check:
                if ops is None:
                    break  # no op record left to read; decide in a later round
                # The op records read so far are old: read more before deciding.
                op_read = self._fill_op_remove_map(
                    remove, op_read.next_begin_offset, half_offset, done_op
                )
                continue
            copy = self._put_back(msg, checks)
            if copy is None:
                break  # the store refused; the next round tries again from here
            self._ask_producer(msg, copy, checks, result)
            new_offset = i = i + 1
        if new_offset != half_offset:
            self._commit_offset(HALF_TOPIC, new_offset)
        new_op_offset = self._calculate_op_offset(done_op, op_offset)
        if new_op_offset != op_offset:
            self._commit_offset(OP_TOPIC, new_op_offset)
        if new_offset != half_offset or new_op_offset != op_offset:
            self.server.persist()
        result.half_offset, result.op_offset = new_offset, new_op_offset
        return result

    def _half_at(self, offset: int) -> tuple[StoredHalf | None, Pulled]:
        pulled = self.store.get_message(HALF_TOPIC, 0, offset, 1)
        return (pulled.messages[0] if pulled.messages else None), pulled

    def _fill_op_remove_map(
        self, remove: dict[int, int], op_offset: int, mini_offset: int, done_op: list[int]
    ) -> _OpRead:
        """Read op records from ``op_offset``: those of halves at or after ``mini_offset`` go
        to ``remove`` (half offset → op offset), older ones straight to ``done_op``."""
        pulled = self.store.get_message(OP_TOPIC, 0, op_offset, OP_PULL_BATCH)
        if pulled.status != "FOUND":
            if pulled.status not in _NO_NEW:
                if pulled.status not in _NO_MATCH and pulled.status != "NO_MATCHED_LOGIC_QUEUE":
                    log.warning(
                        "transaction op queue offset %d is illegal (%s); moving to %d",
                        op_offset,
                        pulled.status,
                        pulled.next_begin_offset,
                    )
                self._commit_offset(OP_TOPIC, pulled.next_begin_offset)
            return _OpRead(pulled.next_begin_offset, None)
        for op in pulled.messages:
            try:
                half_offset = decode_trans_op(op.tags, op.body)
            except ValueError as exc:
                log.error("transaction op record at op queue offset %d: %s", op.queue_offset, exc)
                continue
            if half_offset < mini_offset:
                done_op.append(op.queue_offset)
                self._ended_before.add(half_offset)
            else:
                remove[half_offset] = op.queue_offset
        return _OpRead(pulled.next_begin_offset, list(pulled.messages))

    def _count_check(self, msg: StoredHalf) -> int | None:
        """``needDiscard``: the check count this check makes, or None when the half was
        checked ``check_max`` times already."""
        text = msg.properties.get(_PROP_CHECK_TIMES)
        if text is None:
            return 1
        times = _int(text)
        return None if times >= self.policy.check_max else times + 1

    def _expired(self, msg: StoredHalf) -> bool:
        """``needSkip``: born longer ago than ``fileReservedTime``."""
        age_ms = self._now_ms() - msg.born_timestamp
        return age_ms > self.store.file_reserved_time * 3_600_000

    def _immunity_ms(self, text: str) -> int:
        seconds = _int(text)
        return self.policy.timeout_ms if seconds == -1 else seconds * 1000

    def _check_prepare_queue_offset(
        self, remove: dict[int, int], done_op: list[int], msg: StoredHalf
    ) -> bool:
        """A half within its check immunity: done when the op record of its original is known,
        else stored again (remembering the original's offset) to be looked at later. (RocketMQ
        looks only among the op records of halves not yet passed, so a copy whose original
        ended after the copy was made goes on being copied, and is checked once its immunity
        is over; here any op record read this round counts.)"""
        prepared = msg.properties.get(_PROP_PREPARED_QUEUE_OFFSET)
        if prepared is None:
            return self._put_back_immune(msg)
        offset = _int(prepared)
        if offset == -1:
            return False
        if offset in remove:
            done_op.append(remove.pop(offset))
            return True
        if offset in self._ended_before:
            return True
        return self._put_back_immune(msg)

    def _put(self, msg: StoredHalf, properties: dict[str, str]) -> Stored | None:
        try:
            return self.store.put_message(
                msg.topic,
                msg.queue_id,
                msg.body,
                properties,
                flag=msg.flag,
                sys_flag=msg.sys_flag,
                born_timestamp=msg.born_timestamp,
                born_host=msg.born_host,
                reconsume_times=msg.reconsume_times,
            )
        except RmqError as exc:  # logged; the next round tries again
            log.error("storing half message %s again failed: %s", msg.msg_id, exc)
            return None

    def _put_back(self, msg: StoredHalf, checks: int) -> Stored | None:
        """``putBackHalfMsgQueue``: the half again, at the end of the half queue, with its
        check count. (RocketMQ drops the flag and reconsume times here; they are kept.)"""
        return self._put(msg, {**msg.properties, _PROP_CHECK_TIMES: str(checks)})

    def _put_back_immune(self, msg: StoredHalf) -> bool:
        props = dict(msg.properties)
        props.setdefault(_PROP_PREPARED_QUEUE_OFFSET, str(msg.queue_offset))
        return self._put(msg, props) is not None

    def _discard(self, msg: StoredHalf, result: CheckRound) -> None:
        """``resolveDiscardMsg``: log it, and keep a copy in ``TRANS_CHECK_MAX_TIME_TOPIC``."""
        log.error(
            "half message %s (topic %s, producer group %s, born %d) checked %s time(s) without "
            "an answer, or older than fileReservedTime: discarded, kept in %s",
            msg.msg_id,
            msg.properties.get(_PROP_REAL_TOPIC),
            msg.properties.get(_PROP_PRODUCER_GROUP),
            msg.born_timestamp,
            msg.properties.get(_PROP_CHECK_TIMES, "0"),
            CHECK_MAX_TIME_TOPIC,
        )
        result.discarded.append(msg.msg_id)
        self.server.create_topic_if_absent(CHECK_MAX_TIME_TOPIC, 1, 6)
        try:
            self.store.put_message(
                CHECK_MAX_TIME_TOPIC,
                0,
                msg.body,
                msg.properties,
                flag=msg.flag,
                sys_flag=msg.sys_flag,
                born_timestamp=msg.born_timestamp,
                born_host=msg.born_host,
                reconsume_times=msg.reconsume_times,
            )
        except RmqError as exc:
            log.error("keeping discarded half message %s failed: %s", msg.msg_id, exc)

    def _ask_producer(self, msg: StoredHalf, copy: Stored, checks: int, result: CheckRound) -> None:
        """``sendCheckMessage``: CHECK_TRANSACTION_STATE about the copy to a live producer of
        the half's group, taking the group's connections in turn."""
        group = msg.properties.get(_PROP_PRODUCER_GROUP)
        connections = self.server.producer_connections(group) if group else []
        start = self._next_connection
        self._next_connection += 1
        for k in range(len(connections)):
            connection_id, client_id, addr = connections[(start + k) % len(connections)]
            try:
                sent = self.server.check_transaction_state(connection_id, copy.wrote_offset)
            except RmqError as exc:
                log.error("checking half message %s failed: %s", msg.msg_id, exc)
                return
            if sent:
                # Debug: one line per half message; each round logs a summary at info.
                log.debug(
                    "asked producer %s (%s, group %s) about half message %s (check %d of %d)",
                    client_id,
                    addr,
                    group,
                    msg.msg_id,
                    checks,
                    self.policy.check_max,
                )
                result.checked.append(msg.msg_id)
                return
        result.unasked.append(msg.msg_id)
        log.warning(
            "half message %s: no live producer of group %s to ask (check %d of %d); "
            "asking again in a later round",
            msg.msg_id,
            group,
            checks,
            self.policy.check_max,
        )

    @staticmethod
    def _calculate_op_offset(done: list[int], old: int) -> int:
        """The op queue's progress: past every consecutive handled record from ``old``."""
        new = old
        for offset in sorted(done):
            if offset != new:
                break
            new += 1
        return new


class TransactionCheckService(PeriodicService):
    """A daemon thread that runs :meth:`TransactionChecker.check_once` every
    ``policy.check_interval_s`` seconds (the first round one interval after :meth:`start`).
    A failing round is logged and the next one runs as usual."""

    _what = "transaction check"

    def __init__(self, checker: TransactionChecker) -> None:
        super().__init__("rmq-transaction-check")
        self.checker = checker

    @property
    def policy(self) -> TransactionCheckPolicy:
        """The policy the next round applies."""
        return self.checker.policy

    @policy.setter
    def policy(self, policy: TransactionCheckPolicy) -> None:
        self.checker.policy = policy

    def _interval_s(self) -> float:
        return self.checker.policy.check_interval_s

    def _round(self) -> None:
        began = time.monotonic()
        r = self.checker.check_once()
        if r.checked or r.discarded or r.unasked:
            log.info(
                "transaction check: %d asked, %d without a live producer, %d discarded "
                "in %.0f ms (half offset %d, op offset %d)",
                len(r.checked),
                len(r.unasked),
                len(r.discarded),
                (time.monotonic() - began) * 1000,
                r.half_offset,
                r.op_offset,
            )
