"""A push consumer's answers to the calls an admin makes through the broker (RocketMQ's
``ClientRemotingProcessor``): GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus``) answers
``ConsumerRunningInfo`` and CONSUME_MESSAGE_DIRECTLY (``mqadmin queryMsgById -d``, the
dashboard's "resend") hands the attached message to the listener and answers
``ConsumeMessageDirectlyResult``.

This module gathers what to report; the bodies are written by the Rust types
(``rmq_protocol::body::running_info``, through ``ClientInstance.consumer_running_info`` and
``rmq._rmq.consume_message_directly_result``), in fastjson's form as a Java client writes
them. The subscriptions reported are those the client registered with the brokers. The
per-topic ``ConsumeStatus`` rates are not measured by this SDK and are sent as 0; the count
of failed messages is.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING

from rmq._rmq import consume_message_directly_result, decode_messages

if TYPE_CHECKING:
    from rmq.client.consumer import PushConsumer

__all__ = ["consume_message_directly", "running_info_body"]


def _jstack() -> str:
    """Every Python thread's stack, in the spirit of Java's ``UtilAll.jstack()``."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        stack = "".join(traceback.format_stack(frame))
        parts.append(f"Thread: {names.get(ident, ident)}\n{stack}")
    return "\n".join(parts)


def running_info_body(consumer: PushConsumer, jstack: bool) -> bytes:
    """The ``ConsumerRunningInfo`` body of ``consumer`` (``jstack``: with thread stacks)."""
    from rmq import __version__

    settings = {
        "consumerGroup": consumer.group,
        "messageModel": consumer.message_model.value,
        "consumeFromWhere": consumer.consume_from_where.value,
        "consumeThreadMax": str(consumer.consume_thread_max),
        "consumeThreadMin": str(consumer.consume_thread_max),
        "consumeMessageBatchMaxSize": str(consumer.consume_message_batch_max_size),
        "pullBatchSize": str(consumer.pull_batch_size),
        "pullThresholdForQueue": str(consumer.pull_threshold_for_queue),
        "instanceName": consumer.instance_name,
    }
    return consumer.client_instance.consumer_running_info(
        consumer.group,
        settings,
        consumer.process_queue_states(),
        consumer.consume_failed_counts(),
        namesrv_addr=consumer.namesrv_addr,
        orderly=consumer.orderly,
        thread_pool_core_size=consumer.consume_thread_max,
        start_timestamp_ms=consumer.start_timestamp_ms,
        client_version=f"rmq-python {__version__}",
        jstack=_jstack() if jstack else None,
    )


def consume_message_directly(consumer: PushConsumer, body: bytes | None) -> bytes:
    """Decode the message the broker attached, hand it to the consumer's listener once and
    answer ``ConsumeMessageDirectlyResult`` (``consumeResult``: CR_SUCCESS, CR_LATER or
    CR_THROW_EXCEPTION with the traceback as ``remark``).

    :raises ValueError: the body holds no message.
    """
    msgs = decode_messages(body or b"")
    if not msgs:
        raise ValueError("the CONSUME_MESSAGE_DIRECTLY request carries no message")
    start = time.monotonic()
    remark = None
    try:
        result = "CR_SUCCESS" if consumer.consume_directly(msgs[:1]) else "CR_LATER"
    except Exception:
        result = "CR_THROW_EXCEPTION"
        remark = traceback.format_exc()
    spent_ms = int((time.monotonic() - start) * 1000)
    return consume_message_directly_result(consumer.orderly, result, spent_ms, remark)
