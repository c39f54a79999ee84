"""A push consumer's answers to the calls an admin makes through the broker (RocketMQ's
``ClientRemotingProcessor``): GET_CONSUMER_RUNNING_INFO (``mqadmin consumerStatus``) answers
``ConsumerRunningInfo`` and CONSUME_MESSAGE_DIRECTLY (``mqadmin consumeMessage``, the
dashboard's "resend") hands the attached message to the listener and answers
``ConsumeMessageDirectlyResult``.

Both bodies are written here in fastjson's form, as a Java client writes them: properties
sorted, and ``mqTable``, a map keyed by ``MessageQueue``, with the queue object itself as
the key, which is what Java's fastjson reads back (``rmq.fastjson`` reads it too). The
per-topic ``ConsumeStatus`` rates are not measured by this SDK and are sent as 0; the
failure count is.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rmq._rmq import decode_messages, java_string_hash

if TYPE_CHECKING:
    from rmq.client.consumer import PushConsumer

__all__ = [
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "consume_message_directly",
    "running_info_body",
    "subscription_data",
]

# ConsumerRunningInfo's property names (Java's constants' values).
PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def subscription_data(topic: str, expression: str, sub_version: int) -> dict[str, Any]:
    """``SubscriptionData`` of a TAG subscription, as a Java client reports it."""
    tags = [] if expression.strip() in ("", "*") else [t.strip() for t in expression.split("||")]
    tags = [t for t in tags if t]
    return {
        "classFilterMode": False,
        "codeSet": sorted({java_string_hash(t) for t in tags}),
        "expressionType": "TAG",
        "subString": expression or "*",
        "subVersion": sub_version,
        "tagsSet": sorted(set(tags)),
        "topic": topic,
    }


def _jstack() -> str:
    """Every Python thread's stack, in the spirit of Java's ``UtilAll.jstack()``."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        stack = "".join(traceback.format_stack(frame))
        parts.append(f"Thread: {names.get(ident, ident)}\n{stack}")
    return "\n".join(parts)


def running_info_body(consumer: PushConsumer, jstack: bool) -> bytes:
    """The ``ConsumerRunningInfo`` JSON of ``consumer`` (``jstack``: with thread stacks)."""
    from rmq import __version__

    properties = {
        "consumerGroup": consumer.group,
        "messageModel": consumer.message_model.value,
        "consumeFromWhere": consumer.consume_from_where.value,
        "consumeThreadMax": str(consumer.consume_thread_max),
        "consumeThreadMin": str(consumer.consume_thread_max),
        "consumeMessageBatchMaxSize": str(consumer.consume_message_batch_max_size),
        "pullBatchSize": str(consumer.pull_batch_size),
        "pullThresholdForQueue": str(consumer.pull_threshold_for_queue),
        "instanceName": consumer.instance_name,
        PROP_NAMESERVER_ADDR: consumer.namesrv_addr,
        PROP_CONSUME_TYPE: "CONSUME_PASSIVELY",
        PROP_CONSUME_ORDERLY: "true" if consumer.orderly else "false",
        PROP_THREADPOOL_CORE_SIZE: str(consumer.consume_thread_max),
        PROP_CLIENT_VERSION: f"rmq-python {__version__}",
        PROP_CONSUMER_START_TIMESTAMP: str(consumer.start_timestamp_ms),
    }
    subscriptions = consumer.subscription_table()
    subs = [
        subscription_data(topic, expr, consumer.start_timestamp_ms)
        for topic, expr in sorted(subscriptions.items())
    ]
    queues = consumer.process_queue_infos()
    mq_table = ",".join(
        _dumps({"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic})
        + ":"
        + _dumps(info)
        for mq, info in sorted(queues.items())
    )
    failed = consumer.consume_failed_counts()
    status_table = {
        topic: {
            "consumeFailedMsgs": failed.get(topic, 0),
            "consumeFailedTPS": 0.0,
            "consumeOKTPS": 0.0,
            "consumeRT": 0.0,
            "pullRT": 0.0,
            "pullTPS": 0.0,
        }
        for topic in sorted(subscriptions)
    }
    head = '{"jstack":' + _dumps(_jstack()) + "," if jstack else "{"
    text = (
        head
        + '"mqTable":{'
        + mq_table
        + '},"properties":'
        + _dumps(properties)
        + ',"statusTable":'
        + _dumps(status_table)
        + ',"subscriptionSet":'
        + _dumps(subs)
        + "}"
    )
    return text.encode("utf-8")


def process_queue_info(
    commit_offset: int,
    offsets: list[int],
    size_bytes: int,
    locked: bool,
    last_lock_ms: int,
    dropped: bool,
    last_pull_ms: int,
    last_consume_ms: int,
) -> dict[str, Any]:
    """``ProcessQueueInfo`` of one held queue."""
    return {
        "cachedMsgCount": len(offsets),
        "cachedMsgMaxOffset": max(offsets) if offsets else 0,
        "cachedMsgMinOffset": min(offsets) if offsets else 0,
        "cachedMsgSizeInMiB": size_bytes // (1024 * 1024),
        "commitOffset": commit_offset,
        "droped": dropped,
        "lastConsumeTimestamp": last_consume_ms,
        "lastLockTimestamp": last_lock_ms,
        "lastPullTimestamp": last_pull_ms,
        "locked": locked,
        "transactionMsgCount": 0,
        "transactionMsgMaxOffset": 0,
        "transactionMsgMinOffset": 0,
        "tryUnlockTimes": 0,
    }


def consume_message_directly(
    consumer: PushConsumer, ext_fields: Mapping[str, str], body: bytes | None
) -> bytes:
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
        ok = consumer.consume_directly(msgs[:1])
        result = "CR_SUCCESS" if ok else "CR_LATER"
    except Exception:
        result = "CR_THROW_EXCEPTION"
        remark = traceback.format_exc()
    out: dict[str, Any] = {
        "autoCommit": True,
        "consumeResult": result,
        "order": consumer.orderly,
        "spentTimeMills": int((time.monotonic() - start) * 1000),
    }
    if remark is not None:
        out["remark"] = remark
    return _dumps(out).encode("utf-8")
