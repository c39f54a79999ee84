"""Reading a message's trace back (mqadmin's ``QueryMsgTraceByIdSubCommand`` and
``TraceView``): the trace topic's messages indexed under the message id, found with
QUERY_MESSAGE on every broker of the topic's route, decoded, and only the records about that
message kept, in time order."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmq._rmq import TRACE_TOPIC, decode_messages
from rmq.codes import RequestCode
from rmq.errors import QueryNotFoundError
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
    topic = trace_topic or TRACE_TOPIC
    header = {
        "topic": topic,
        "key": msg_id,
        "maxNum": str(MAX_QUERY_NUM),
        "beginTimestamp": "0",
        "endTimestamp": str(now_ms()),
        "_UNIQUE_KEY_QUERY": "false",
    }
    found: list[TraceContext] = []
    seen: set[tuple[str, int]] = set()
    for b in admin.route(topic).broker_datas:
        addr = b.select_addr()
        if addr is None:
            continue
        resp = admin.broker(
            addr, RequestCode.QUERY_MESSAGE, header, accept=(QueryNotFoundError.code,)
        )
        for msg in decode_messages(resp.body) if resp.body else []:
            where = (msg.store_host, msg.commit_log_offset)
            if msg.topic != topic or where in seen:
                continue
            seen.add(where)
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
