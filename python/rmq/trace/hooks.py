"""What a traced producer or consumer records, and when (RocketMQ's
``SendMessageTraceHookImpl``, ``ConsumeMessageTraceHookImpl`` and
``EndTransactionTraceHookImpl``): the client classes call these around a send, a listener
call and an END_TRANSACTION, and the records go to an :class:`AsyncTraceDispatcher`.

* :meth:`SendTracer.sent`: a Pub after each send that returned a result (a failed send, a
  oneway send and a batch write none, as in RocketMQ).
* :meth:`ConsumeTracer.call`: a SubBefore before the listener and a SubAfter after it, with
  the cost per message, whether it succeeded and how it ended (``ConsumeReturnType``).
* :meth:`SendTracer.end_transaction`: an EndTransaction with the state sent to the broker.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from rmq._rmq import (
    PROPERTY_DELAY_TIME_LEVEL,
    PROPERTY_MSG_REGION,
    PROPERTY_TRANSACTION_PREPARED,
    decode_offset_msg_id,
)
from rmq.trace.data import (
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    now_ms,
    trace_switched_off,
)
from rmq.trace.dispatcher import AsyncTraceDispatcher

if TYPE_CHECKING:
    from rmq._rmq import SendResult, StoredMessage
    from rmq.client.message import Message

__all__ = ["DEFAULT_REGION", "ConsumeTracer", "SendTracer", "offset_id_host"]

DEFAULT_REGION = "DefaultRegion"
"""``MixAll.DEFAULT_TRACE_REGION_ID``."""

_S = TypeVar("_S")


def offset_id_host(offset_msg_id: str) -> str:
    """The broker address an offset message id names ("" when it is not one)."""
    with contextlib.suppress(ValueError):
        return decode_offset_msg_id(offset_msg_id)[0]
    return ""


def _msg_type(message: Message) -> MessageType:
    if message.properties.get(PROPERTY_TRANSACTION_PREPARED) == "true":
        return MessageType.Trans_Msg_Half
    if message.properties.get(PROPERTY_DELAY_TIME_LEVEL, "0") not in ("", "0"):
        return MessageType.Delay_Msg
    return MessageType.Normal_Msg


class SendTracer:
    """Pub and EndTransaction records of one producer group."""

    def __init__(self, group: str, dispatcher: AsyncTraceDispatcher) -> None:
        self.group = group
        self.dispatcher = dispatcher

    def traced(self, message: Message) -> bool:
        """Trace messages themselves are not traced."""
        return not message.topic.startswith(self.dispatcher.trace_topic)

    def sent(self, message: Message, result: SendResult, begin_ms: int) -> None:
        """A Pub for ``message``, sent from ``begin_ms`` until now with ``result``; none when
        the broker answered ``traceOn = false`` (as Java's SendMessageTraceHookImpl)."""
        if not self.traced(message) or not result.trace_on:
            return
        cost = now_ms() - begin_ms
        bean = TraceBean(
            topic=message.topic,
            msg_id=result.msg_id,
            offset_msg_id=result.offset_msg_id,
            tags=message.tags,
            keys=message.keys,
            store_host=offset_id_host(result.offset_msg_id),
            body_length=len(message.body),
            msg_type=_msg_type(message),
            store_time=begin_ms + cost // 2,
        )
        ctx = TraceContext(
            TraceType.Pub,
            begin_ms,
            result.region_id or DEFAULT_REGION,
            group_name=self.group,
            cost_time=cost,
            success=result.status == "SEND_OK",
            trace_beans=[bean],
        )
        self.dispatcher.append(ctx)

    def end_transaction(
        self,
        message: Message | StoredMessage,
        msg_id: str,
        transaction_id: str | None,
        store_host: str,
        state: str,
        *,
        from_check: bool,
    ) -> None:
        """An EndTransaction: the producer told ``store_host`` to end ``msg_id`` as
        ``state``."""
        if not message.topic.startswith(self.dispatcher.trace_topic):
            bean = TraceBean(
                topic=message.topic,
                msg_id=msg_id,
                tags=message.tags,
                keys=message.keys,
                store_host=store_host,
                msg_type=MessageType.Trans_msg_Commit,
                transaction_id=transaction_id,
                transaction_state=state,
                from_transaction_check=from_check,
            )
            region = message.properties.get(PROPERTY_MSG_REGION) or DEFAULT_REGION
            ctx = TraceContext(TraceType.EndTransaction, region_id=region, group_name=self.group)
            ctx.trace_beans = [bean]
            self.dispatcher.append(ctx)


class ConsumeTracer:
    """SubBefore and SubAfter records of one consumer group."""

    def __init__(self, group: str, dispatcher: AsyncTraceDispatcher) -> None:
        self.group = group
        self.dispatcher = dispatcher

    def call(
        self,
        listener: Callable[[list[StoredMessage]], _S],
        msgs: list[StoredMessage],
        succeeded: Callable[[_S], bool],
    ) -> _S:
        """``listener(msgs)``, recorded; its exception propagates after the SubAfter."""
        before = self._before(msgs)
        try:
            status = listener(msgs)
        except BaseException:
            self._after(before, len(msgs), False, ConsumeReturnType.EXCEPTION)
            raise
        if status is None:  # rmq counts None as success; RocketMQ's code says it was None
            self._after(before, len(msgs), True, ConsumeReturnType.RETURNNULL)
        elif succeeded(status):
            self._after(before, len(msgs), True, ConsumeReturnType.SUCCESS)
        else:
            self._after(before, len(msgs), False, ConsumeReturnType.FAILED)
        return status

    def _before(self, msgs: Sequence[StoredMessage]) -> TraceContext | None:
        ctx = TraceContext(TraceType.SubBefore, group_name=self.group)
        for m in msgs:
            if trace_switched_off(m.properties):
                continue
            ctx.trace_beans.append(
                TraceBean(
                    topic=m.topic,
                    msg_id=m.msg_id,
                    tags=m.tags,
                    keys=m.keys,
                    store_time=m.store_timestamp,
                    body_length=m.store_size,
                    retry_times=m.reconsume_times,
                )
            )
            ctx.region_id = m.properties.get(PROPERTY_MSG_REGION)
        if not ctx.trace_beans:
            return None
        ctx.time_stamp = now_ms()
        self.dispatcher.append(ctx)
        return ctx

    def _after(
        self, before: TraceContext | None, count: int, success: bool, code: ConsumeReturnType
    ) -> None:
        if before is None:
            return
        ctx = TraceContext(
            TraceType.SubAfter,
            region_id=before.region_id,
            group_name=before.group_name,
            request_id=before.request_id,
            success=success,
            cost_time=(now_ms() - before.time_stamp) // max(count, 1),
            context_code=int(code),
            trace_beans=before.trace_beans,
        )
        self.dispatcher.append(ctx)
