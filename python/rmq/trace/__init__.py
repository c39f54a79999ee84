"""Message trace in RocketMQ's format: traced producers write a Pub per send (and an
EndTransaction per transaction end), traced consumers a SubBefore and a SubAfter per listener
call, to the trace topic (``RMQ_SYS_TRACE_TOPIC`` unless customised); :func:`query_trace`
reads a message's records back. Java's tools read what rmq writes and the other way round.

Turn it on with ``Producer(..., enable_msg_trace=True)`` or
``PushConsumer(..., enable_msg_trace=True)`` (``custom_trace_topic=`` for another topic), and
``traceTopicEnable = true`` on a broker to create the topic.
"""

from __future__ import annotations

from rmq.trace.data import (
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode,
    encode,
)
from rmq.trace.dispatcher import AsyncTraceDispatcher
from rmq.trace.query import query_trace

__all__ = [
    "AsyncTraceDispatcher",
    "ConsumeReturnType",
    "MessageType",
    "TraceBean",
    "TraceContext",
    "TraceType",
    "decode",
    "encode",
    "query_trace",
]
