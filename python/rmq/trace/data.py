"""RocketMQ's message-trace records and their text format (``TraceBean``, ``TraceContext``,
``TraceDataEncoder`` of the 4.9 client), owned here once for the SDK's dispatcher, which
writes them, and for ``queryMsgTraceById`` and the console, which read them.

A trace message's body is a run of records, each ended by ``FIELD_SEPARATOR`` (char 2), with
its fields separated by ``CONTENT_SEPARATOR`` (char 1); the first field is the record type.
Java writes ``null`` for a missing string; so does :func:`encode`, so a Java reader and this
one see the same text. Field order per type (4.9.7):

* ``Pub``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, bodyLength,
  costTime, msgType (ordinal), offsetMsgId, success
* ``SubBefore``: type, timestamp, regionId, group, requestId, msgId, retryTimes, keys
* ``SubAfter``: type, requestId, msgId, costTime, success, keys, contextCode, timestamp, group
* ``EndTransaction``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
  msgType, transactionId, transactionState, fromTransactionCheck
"""

from __future__ import annotations

import enum
import logging
import time
import uuid
from dataclasses import dataclass, field

from rmq._rmq import PROPERTY_TRACE_SWITCH

__all__ = [
    "CONTENT_SEPARATOR",
    "FIELD_SEPARATOR",
    "ConsumeReturnType",
    "MessageType",
    "TraceBean",
    "TraceContext",
    "TraceType",
    "decode",
    "encode",
    "trace_switched_off",
    "transfer_keys",
]

log = logging.getLogger("rmq.trace")

CONTENT_SEPARATOR = "\x01"
"""Separates the fields of one record (``TraceConstants.CONTENT_SPLITOR``)."""
FIELD_SEPARATOR = "\x02"
"""Ends each record (``TraceConstants.FIELD_SPLITOR``)."""
KEY_SEPARATOR = " "
"""Separates several keys in the ``KEYS`` property (``MessageConst.KEY_SEPARATOR``)."""


class TraceType(str, enum.Enum):
    """The kind of a record (``TraceType``)."""

    Pub = "Pub"
    SubBefore = "SubBefore"
    SubAfter = "SubAfter"
    EndTransaction = "EndTransaction"


class MessageType(enum.IntEnum):
    """``MessageType``, written as its ordinal."""

    Normal_Msg = 0
    Trans_Msg_Half = 1
    Trans_msg_Commit = 2
    Delay_Msg = 3


class ConsumeReturnType(enum.IntEnum):
    """How a listener call ended (``ConsumeReturnType``), a SubAfter's ``contextCode``."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _request_id() -> str:
    return uuid.uuid4().hex.upper()


@dataclass
class TraceBean:
    """One message in a record (``TraceBean``). ``None`` stands for Java's null."""

    topic: str | None = ""
    msg_id: str | None = ""
    offset_msg_id: str | None = ""
    tags: str | None = ""
    keys: str | None = ""
    store_host: str | None = ""
    client_host: str | None = ""
    """Read from the trace message's born host (as mqadmin's ``TraceView``); not written."""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: MessageType | None = None
    transaction_state: str | None = None
    transaction_id: str | None = None
    from_transaction_check: bool = False


@dataclass
class TraceContext:
    """One record (``TraceContext``): its type, when, by which group, and its beans."""

    trace_type: TraceType
    time_stamp: int = field(default_factory=now_ms)
    region_id: str | None = ""
    region_name: str = ""
    group_name: str | None = ""
    cost_time: int = 0
    success: bool = True
    request_id: str | None = field(default_factory=_request_id)
    context_code: int = 0
    trace_beans: list[TraceBean] = field(default_factory=list)

    @property
    def bean(self) -> TraceBean:
        """The first (for Pub and EndTransaction, the only) bean."""
        return self.trace_beans[0]


def _s(value: object) -> str:
    """Java's ``StringBuilder.append``: null, booleans and numbers as Java prints them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.IntEnum):
        return str(int(value))
    return str(value)


def _record(*fields: object) -> str:
    return CONTENT_SEPARATOR.join(_s(f) for f in fields) + FIELD_SEPARATOR


def encode(ctx: TraceContext) -> str:
    """The text of ``ctx`` (``TraceDataEncoder.encoderFromContextBean``'s ``transData``):
    one record for Pub and EndTransaction, one per bean for SubBefore and SubAfter."""
    t = ctx.trace_type
    if t is TraceType.Pub:
        b = ctx.bean
        return _record(
            t.value,
            ctx.time_stamp,
            ctx.region_id,
            ctx.group_name,
            b.topic,
            b.msg_id,
            b.tags,
            b.keys,
            b.store_host,
            b.body_length,
            ctx.cost_time,
            b.msg_type,
            b.offset_msg_id,
            ctx.success,
        )
    if t is TraceType.SubBefore:
        return "".join(
            _record(
                t.value,
                ctx.time_stamp,
                ctx.region_id,
                ctx.group_name,
                ctx.request_id,
                b.msg_id,
                b.retry_times,
                b.keys,
            )
            for b in ctx.trace_beans
        )
    if t is TraceType.SubAfter:
        return "".join(
            _record(
                t.value,
                ctx.request_id,
                b.msg_id,
                ctx.cost_time,
                ctx.success,
                b.keys,
                ctx.context_code,
                ctx.time_stamp,
                ctx.group_name,
            )
            for b in ctx.trace_beans
        )
    b = ctx.bean
    return _record(
        t.value,
        ctx.time_stamp,
        ctx.region_id,
        ctx.group_name,
        b.topic,
        b.msg_id,
        b.tags,
        b.keys,
        b.store_host,
        b.msg_type,
        b.transaction_id,
        b.transaction_state,
        b.from_transaction_check,
    )


def transfer_keys(ctx: TraceContext) -> list[str]:
    """The keys the trace message is indexed under (``TraceTransferBean.transKey``): each
    bean's msgId and its own keys, plus a Pub's offsetMsgId (so either id finds it)."""
    keys: list[str] = []
    for b in ctx.trace_beans:
        if b.msg_id:
            keys.append(b.msg_id)
        if ctx.trace_type is TraceType.Pub and b.offset_msg_id:
            keys.append(b.offset_msg_id)
        if b.keys:
            keys.extend(k for k in b.keys.split(KEY_SEPARATOR) if k)
    return keys


def _bool(text: str) -> bool:
    return text.lower() == "true"  # Boolean.parseBoolean


def _null(text: str) -> str | None:
    return None if text == "null" else text


def _decode_one(line: list[str]) -> TraceContext | None:
    kind = line[0]
    if kind == TraceType.Pub.value:
        ctx = TraceContext(TraceType.Pub, int(line[1]), _null(line[2]), group_name=_null(line[3]))
        bean = TraceBean(
            topic=_null(line[4]),
            msg_id=_null(line[5]),
            tags=_null(line[6]),
            keys=_null(line[7]),
            store_host=_null(line[8]),
            body_length=int(line[9]),
            msg_type=MessageType(int(line[11])),
        )
        ctx.cost_time = int(line[10])
        if len(line) == 13:
            ctx.success = _bool(line[12])
        elif len(line) >= 14:
            bean.offset_msg_id = _null(line[12])
            ctx.success = _bool(line[13])
            if len(line) >= 15:
                bean.client_host = _null(line[14])
        ctx.trace_beans = [bean]
        return ctx
    if kind == TraceType.SubBefore.value:
        ctx = TraceContext(
            TraceType.SubBefore,
            int(line[1]),
            _null(line[2]),
            group_name=_null(line[3]),
            request_id=_null(line[4]),
        )
        ctx.trace_beans = [
            TraceBean(msg_id=_null(line[5]), retry_times=int(line[6]), keys=_null(line[7]))
        ]
        return ctx
    if kind == TraceType.SubAfter.value:
        ctx = TraceContext(TraceType.SubAfter, 0, request_id=_null(line[1]), group_name="")
        ctx.trace_beans = [TraceBean(msg_id=_null(line[2]), keys=_null(line[5]))]
        ctx.cost_time = int(line[3])
        ctx.success = _bool(line[4])
        if len(line) >= 7:
            ctx.context_code = int(line[6])
        if len(line) >= 9:
            ctx.time_stamp = int(line[7])
            ctx.group_name = _null(line[8])
        return ctx
    if kind == TraceType.EndTransaction.value:
        ctx = TraceContext(
            TraceType.EndTransaction, int(line[1]), _null(line[2]), group_name=_null(line[3])
        )
        ctx.trace_beans = [
            TraceBean(
                topic=_null(line[4]),
                msg_id=_null(line[5]),
                tags=_null(line[6]),
                keys=_null(line[7]),
                store_host=_null(line[8]),
                msg_type=MessageType(int(line[9])),
                transaction_id=_null(line[10]),
                transaction_state=_null(line[11]),
                from_transaction_check=_bool(line[12]),
            )
        ]
        return ctx
    return None  # a type this version does not know: skipped, as Java does


def decode(data: str) -> list[TraceContext]:
    """The records of a trace message's body (``decoderFromTraceDataString``). A malformed
    record is skipped with a warning instead of failing the whole message."""
    out: list[TraceContext] = []
    for record in data.split(FIELD_SEPARATOR):
        if not record:
            continue
        line = record.split(CONTENT_SEPARATOR)
        try:
            ctx = _decode_one(line)
        except (IndexError, ValueError) as exc:
            log.warning("skipping a malformed trace record %r: %s", record[:200], exc)
            continue
        if ctx is not None:
            out.append(ctx)
    return out


def trace_switched_off(properties: dict[str, str]) -> bool:
    """A message whose ``TRACE_ON`` property is ``false`` is not traced by consumers."""
    return properties.get(PROPERTY_TRACE_SWITCH) == "false"
