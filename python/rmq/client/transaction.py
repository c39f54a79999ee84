"""``rmq.TransactionProducer``: RocketMQ's ``TransactionMQProducer``.

A transactional send is a half message plus a local transaction:

1. the message goes to the broker with ``TRAN_MSG=true`` and the producer group in ``PGROUP``;
   the broker keeps it out of its topic (a *half* message);
2. ``execute_local_transaction(message, arg)`` runs here and says how it ended;
3. END_TRANSACTION (oneway) tells the broker: ``COMMIT_MESSAGE`` delivers the message,
   ``ROLLBACK_MESSAGE`` drops it, ``UNKNOW`` leaves it to a check.

A half message nobody ended (the answer was UNKNOW, the END_TRANSACTION was lost, or the
producer died) is checked by the broker after ``transactionTimeOut``: it sends
CHECK_TRANSACTION_STATE to a live producer of the same group, which calls
``check_local_transaction(message)`` on its check thread pool and answers with END_TRANSACTION.
So every producer of a group must be able to answer for the group's transactions (typically
from a shared database), not only the one that sent the message.

Example (``db`` stands for the application's own store)::

    def execute(msg, order):
        db.insert_order(order)
        return LocalTransactionState.COMMIT_MESSAGE

    def check(msg):
        if db.has_order(msg.keys):
            return LocalTransactionState.COMMIT_MESSAGE
        return LocalTransactionState.ROLLBACK_MESSAGE

    producer = TransactionProducer(
        "orders", "127.0.0.1:9876",
        execute_local_transaction=execute, check_local_transaction=check,
    ).start()
    producer.send_message_in_transaction(Message("Orders", b"...", keys=order.id), order)
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rmq._rmq import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    PROPERTY_PRODUCER_GROUP,
    PROPERTY_TRANSACTION_PREPARED,
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    StoredMessage,
    decode_messages,
)
from rmq.client import _instance
from rmq.client.message import Message
from rmq.client.message_queue import MessageQueue
from rmq.client.producer import Producer
from rmq.errors import RmqError
from rmq.trace.hooks import offset_id_host

__all__ = [
    "CheckLocalTransaction",
    "ExecuteLocalTransaction",
    "LocalTransactionState",
    "TransactionProducer",
    "TransactionSendResult",
]

log = logging.getLogger("rmq.client")

_TRAN_MSG = PROPERTY_TRANSACTION_PREPARED
_PGROUP = PROPERTY_PRODUCER_GROUP
_UNIQ_KEY = PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_AUTO_CREATE_TOPIC = AUTO_CREATE_TOPIC_KEY_TOPIC
_BROKER_ADDR = "brokerAddr"
_PRODUCER_GROUP = "producerGroup"
_ROLLED_BACK_STATUSES = frozenset(
    {"FLUSH_DISK_TIMEOUT", "FLUSH_SLAVE_TIMEOUT", "SLAVE_NOT_AVAILABLE"}
)


class LocalTransactionState(str, enum.Enum):
    """How a local transaction ended (RocketMQ's names, ``UNKNOW`` included)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    """Deliver the message."""
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    """Drop the message."""
    UNKNOW = "UNKNOW"
    """Not known yet: the broker asks again later (``check_local_transaction``)."""


ExecuteLocalTransaction = Callable[[Message, Any], LocalTransactionState | None]
"""``execute_local_transaction(message, arg)``: run the local transaction of a half message
that the broker stored (``message.properties["UNIQ_KEY"]`` is its transaction id)."""

CheckLocalTransaction = Callable[[StoredMessage], LocalTransactionState | None]
"""``check_local_transaction(message)``: how the transaction of a half message the broker asks
about ended (``message.msg_id`` is its transaction id, ``message.topic`` its real topic)."""


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """What :meth:`TransactionProducer.send_message_in_transaction` did (RocketMQ's
    ``TransactionSendResult``)."""

    status: str
    """How the half message was stored: ``SEND_OK``, ``FLUSH_DISK_TIMEOUT``, ..."""
    msg_id: str
    """The message's unique id, which is also its transaction id."""
    offset_msg_id: str
    """The broker's offset id of the half message."""
    queue: MessageQueue
    """The queue the message is delivered to once committed."""
    queue_offset: int
    """The half message's offset in the broker's half queue."""
    transaction_id: str
    """The transaction id (the unique id, unless the broker returned another)."""
    local_transaction_state: LocalTransactionState
    """What the local transaction said (``UNKNOW`` when it raised)."""


def _state(value: object) -> LocalTransactionState:
    """A listener's answer as a state (None counts as UNKNOW; a bad value raises ValueError)."""
    if value is None:
        return LocalTransactionState.UNKNOW
    return LocalTransactionState(value)


class TransactionProducer(Producer):
    """A producer of transactional messages; also sends ordinary messages like
    :class:`~rmq.Producer`, whose options it takes (``**options``).

    ``check_thread_pool_size`` threads answer broker checks (RocketMQ's
    ``checkThreadPoolMaxSize``, 1); at most ``check_request_hold_max`` checks wait for them
    (``checkRequestHoldMax``, 2000), further ones are dropped with a warning and asked again by
    the broker later.
    """

    def __init__(
        self,
        group: str,
        namesrv_addr: str | None = None,
        *,
        execute_local_transaction: ExecuteLocalTransaction,
        check_local_transaction: CheckLocalTransaction,
        check_thread_pool_size: int = 1,
        check_request_hold_max: int = 2000,
        **options: Any,
    ) -> None:
        super().__init__(group, namesrv_addr, **options)
        if check_thread_pool_size < 1:
            raise ValueError(f"check_thread_pool_size must be >= 1, not {check_thread_pool_size}")
        self.execute_local_transaction = execute_local_transaction
        self.check_local_transaction = check_local_transaction
        self.check_thread_pool_size = check_thread_pool_size
        self.check_request_hold_max = check_request_hold_max
        self._checks: concurrent.futures.ThreadPoolExecutor | None = None
        self._checks_lock = threading.Lock()
        self._checks_waiting = 0

    def _push_handler(self) -> _instance.BrokerPushHandler | None:
        return self

    def start(self) -> TransactionProducer:
        """Connect and start answering broker checks. Returns self."""
        with self._checks_lock:
            if self._checks is None:
                self._checks = concurrent.futures.ThreadPoolExecutor(
                    self.check_thread_pool_size, thread_name_prefix="rmq-transaction-check"
                )
        super().start()
        self._announce()
        return self

    def _announce(self) -> None:
        """Heartbeat at once, so that brokers can ask this producer about the group's
        transactions before it sends anything. Like RocketMQ's producer, it learns the brokers
        from the route of the auto-create topic (when the cluster has one)."""
        # Without an auto-create topic, brokers are learnt from the first send's route.
        with contextlib.suppress(RmqError):
            self._instance.fetch_subscribe_queues(_AUTO_CREATE_TOPIC)
        self._instance.send_heartbeat()

    def shutdown(self) -> None:
        """Stop answering checks, unregister from the brokers and release the connections."""
        with self._checks_lock:
            checks, self._checks = self._checks, None
        if checks is not None:
            checks.shutdown(wait=True, cancel_futures=True)
        super().shutdown()

    # ---- sending ----------------------------------------------------------------------------

    def send_message_in_transaction(
        self, message: Message, arg: Any = None
    ) -> TransactionSendResult:
        """Send ``message`` as a half message, run ``execute_local_transaction(message, arg)``
        and end the transaction as it says. A delay level is ignored (cleared), as in RocketMQ.

        Raises what :meth:`send` raises when the half message cannot be stored. An exception
        of the local transaction is logged and ends the transaction as UNKNOW (the broker
        checks later), as RocketMQ does; so does a failed END_TRANSACTION.
        """
        if message.delay_level:
            message.delay_level = 0
        message.properties[_TRAN_MSG] = "true"
        message.properties[_PGROUP] = self.group
        result = self.send(message)
        state = LocalTransactionState.UNKNOW
        remark: str | None = None
        if result.status == "SEND_OK":
            message.properties[_UNIQ_KEY] = result.msg_id
            try:
                state = _state(self.execute_local_transaction(message, arg))
            except Exception as exc:
                log.exception(
                    "the local transaction of message %s raised; ending it as UNKNOW (the "
                    "broker will check)",
                    result.msg_id,
                )
                remark = f"executeLocalTransactionBranch exception: {exc!r}"
        elif result.status in _ROLLED_BACK_STATUSES:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        try:
            self.native.end_transaction(result, state.value, remark)
        except RmqError as exc:
            log.warning(
                "local transaction of message %s ended %s, but END_TRANSACTION failed (%s); "
                "the broker will check",
                result.msg_id,
                state.value,
                exc,
            )
        if self._tracer is not None:
            self._tracer.end_transaction(
                message,
                result.msg_id,
                result.transaction_id or result.msg_id,
                offset_id_host(result.offset_msg_id),
                state.value,
                from_check=False,
            )
        return TransactionSendResult(
            status=result.status,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            queue=result.queue,
            queue_offset=result.queue_offset,
            transaction_id=result.transaction_id or result.msg_id,
            local_transaction_state=state,
        )

    # ---- broker checks ----------------------------------------------------------------------

    def on_broker_request(self, code: int, ext_fields: dict[str, str], body: bytes | None) -> None:
        """A CHECK_TRANSACTION_STATE for this group: queued for the check threads (this runs on
        the client's shared callback thread, which must not wait for a listener)."""
        if code != _instance.CHECK_TRANSACTION_STATE:
            return
        with self._checks_lock:
            checks = self._checks
            if checks is None:
                return
            if self._checks_waiting >= self.check_request_hold_max:
                log.warning(
                    "%d transaction checks are waiting already (check_request_hold_max); "
                    "dropping one (the broker asks again)",
                    self._checks_waiting,
                )
                return
            self._checks_waiting += 1
        try:
            checks.submit(self._answer_check, dict(ext_fields), body)
        except RuntimeError:  # shut down meanwhile
            self._check_done()

    def _check_done(self) -> None:
        with self._checks_lock:
            self._checks_waiting -= 1

    def _answer_check(self, fields: dict[str, str], body: bytes | None) -> None:
        try:
            broker_addr = fields.pop(_BROKER_ADDR, "")
            fields.pop(_PRODUCER_GROUP, None)
            messages = decode_messages(body or b"")
            if not broker_addr or not messages:
                log.warning("a transaction check without a message or broker address: ignored")
                return
            message = messages[0]
            remark: str | None = None
            try:
                state = _state(self.check_local_transaction(message))
            except Exception as exc:
                log.exception("check_local_transaction raised for message %s", message.msg_id)
                state = LocalTransactionState.UNKNOW
                remark = f"checkLocalTransactionState Exception: {exc!r}"
            native = self._native
            if native is None:
                return
            native.end_transaction_from_check(
                broker_addr, fields, message.msg_id, state.value, remark
            )
            if self._tracer is not None:
                self._tracer.end_transaction(
                    message,
                    message.msg_id,
                    message.msg_id,  # as Java's hook: the unique key is the transaction id
                    broker_addr,
                    state.value,
                    from_check=True,
                )
        except RmqError as exc:
            log.warning("answering a transaction check failed: %s", exc)
        finally:
            self._check_done()
