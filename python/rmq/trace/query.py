"""Reading a message's trace back (mqadmin's ``QueryMsgTraceByIdSubCommand`` and
``TraceView``): the trace topic's messages indexed under the message id, found with
QUERY_MESSAGE on every broker of the topic's route (``rmq.admin.commands.message.query_index``),
decoded, and only the records about that
message kept, in time order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmq._rmq import TRACE_TOPIC
from rmq.trace.data import TraceContext, TraceType, decode, now_ms

if TYPE_CHECKING:
    from rmq.admin.client import Admin

__all__ = ["MAX_QUERY_NUM", "query_trace"]

MAX_QUERY_NUM = 64
"""Trace messages asked for per broker (mqadmin's ``queryMessage(topic, id, 64, 0, now)``)."""

_ORDER = {t: i for i, t in enumerate(TraceType)}


def _host(addr: str) -> str:
    """The address of ``host:port`` (Java's ``MessageExt.getBornHostString``)."""
    host = addr.rsplit(":", 1)[0] if ":" in addr else addr
    return host.strip("[]")


def query_trace(admin: Admin, msg_id: str, trace_topic: str | None = None) -> list[TraceContext]:
    """The trace records of the message ``msg_id`` (its unique id, as ``SendResult.msg_id``
    and consumers see it; a Pub is found by the offset id too), oldest first. Each bean's
    ``client_host`` is the born host (address) of the trace message that carried it (the traced
    client's address). Empty when nothing was traced; raises what the admin client raises
    when the trace topic has no route."""
    # Imported here: rmq.admin.commands imports every command module, queryMsgTraceById's too,
    # which imports this package.
    from rmq.admin.commands.message import query_index

    topic = trace_topic or TRACE_TOPIC
    found: list[TraceContext] = []
    for msg in query_index(admin, topic, msg_id, end=now_ms(), max_num=MAX_QUERY_NUM):
        for ctx in decode(msg.body.decode("utf-8", errors="replace")):
            if not ctx.trace_beans:
                continue
            bean = ctx.bean
            if msg_id not in (bean.msg_id, bean.offset_msg_id):
                continue
            bean.client_host = _host(msg.born_host)
            found.append(ctx)
    found.sort(key=lambda c: (c.time_stamp, _ORDER[c.trace_type]))
    return found
