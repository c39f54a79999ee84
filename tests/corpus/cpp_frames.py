"""Frames in the format of RocketMQ's C++ core (apache/rocketmq-client-cpp 2.x, which the
C++, Python ``rocketmq-client-python`` and PHP clients wrap), hand-written from its source
because no C++-core client can be built here (it needs a prebuilt native library).

What the source shows, and these frames reproduce (``capture.py --family cpp`` sends them to
Apache RocketMQ through the recording proxy, so the corpus holds Apache's real answers):

* ``RemotingCommand::Encode``: header by JsonCpp's ``FastWriter`` (keys sorted, compact, a
  trailing newline), ``"language":"CPP"``, ``"version":333`` (MQVersion V4_6_0), ``"remark":""``,
  and ``extFields`` always carrying ``AccessKey``, ``Signature`` and ``OnsChannel`` (empty
  strings when no credentials are set), even for HEART_BEAT, which has no other ext field.
* ``SendMessageRequestHeader::Encode`` (SEND_MESSAGE, 10) and ``SendMessageRequestHeaderV2``
  (SEND_MESSAGE_V2, 310, the one ``MQClientAPIImpl::sendMessage`` uses): ints as JSON numbers
  (``defaultTopicQueueNums``, ``queueId``, ``sysFlag``, ``flag``, ``consumeRetryTimes``),
  ``bornTimestamp``/``reconsumeTimes`` as strings, the booleans ``unitMode`` and ``batch`` as
  ``"0"``/``"1"`` (``UtilAll::to_string(bool)``).
* ``PullMessageRequestHeader``: ``queueId``, ``maxMsgNums``, ``sysFlag`` as numbers, the longs
  as strings; ``QueryConsumerOffsetRequestHeader.queueId`` a number; UPDATE_CONSUMER_OFFSET sent
  oneway (``MQClientAPIImpl::updateConsumerOffsetOneway``).
* ``HeartbeatData::Encode``: ``consumeType``, ``messageModel``, ``consumeFromWhere`` as the C++
  enums' ordinals (same order as Java's), ``subVersion`` as a string, ``codeSet`` as numbers,
  no ``unitMode``; a producer entry is ``{"groupName": …}`` only.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

from vectors import Frame, read_frame

from rmq._rmq import java_string_hash

TOPICS = ["corpus_cpp"]
TOPIC = TOPICS[0]
PRODUCER_GROUP = "corpus_cpp_producer"
CONSUMER_GROUP = "corpus_cpp_consumer"
CLIENT_ID = "127.0.0.1@corpus_cpp"
CPP_VERSION = 333  # MQVersion::V4_6_0, rocketmq-client-cpp's s_CurrentVersion

# Codes (RocketMQ's RequestCode numbers).
SEND_MESSAGE = 10
PULL_MESSAGE = 11
QUERY_CONSUMER_OFFSET = 14
UPDATE_CONSUMER_OFFSET = 15
HEART_BEAT = 34
UNREGISTER_CLIENT = 35
GET_CONSUMER_LIST_BY_GROUP = 38
GET_ROUTEINFO_BY_TOPIC = 105
SEND_MESSAGE_V2 = 310

# The C++ core's enum ordinals (ConsumeType.h).
CONSUME_PASSIVELY = 1
CLUSTERING = 1
CONSUME_FROM_FIRST_OFFSET = 4


def fast_writer(value: Any) -> bytes:
    """JsonCpp's FastWriter: sorted keys (its objects are std::map), compact, newline."""
    return (json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n").encode()


def command(code: int, opaque: int, ext: dict[str, Any] | None, oneway: bool = False) -> bytes:
    fields = dict(ext or {})
    fields.update({"AccessKey": "", "Signature": "", "OnsChannel": ""})
    header = {
        "code": code,
        "language": "CPP",
        "version": CPP_VERSION,
        "opaque": opaque,
        "flag": 2 if oneway else 0,
        "remark": "",
        "extFields": fields,
    }
    return fast_writer(header)


def properties(props: dict[str, str]) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def send_v1(queue_id: int, tag: str, key: str) -> dict[str, Any]:
    return {
        "producerGroup": PRODUCER_GROUP,
        "topic": TOPIC,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": 4,
        "queueId": queue_id,
        "sysFlag": 0,
        "bornTimestamp": str(int(time.time() * 1000)),
        "flag": 0,
        "properties": properties({"TAGS": tag, "KEYS": key, "WAIT": "true"}),
        "reconsumeTimes": "0",
        "unitMode": "0",
        "batch": "0",
    }


def send_v2(queue_id: int, tag: str, key: str) -> dict[str, Any]:
    v1 = send_v1(queue_id, tag, key)
    return {
        "a": v1["producerGroup"],
        "b": v1["topic"],
        "c": v1["defaultTopic"],
        "d": v1["defaultTopicQueueNums"],
        "e": v1["queueId"],
        "f": v1["sysFlag"],
        "g": v1["bornTimestamp"],
        "h": v1["flag"],
        "i": v1["properties"],
        "j": "0",
        "k": "0",
        "l": 0,
        "m": "0",
    }


def heartbeat() -> bytes:
    expr = "TagA || TagB"
    sub = {
        "subString": expr,
        "subVersion": str(int(time.time() * 1000)),
        "topic": TOPIC,
        "tagsSet": ["TagA", "TagB"],
        "codeSet": [java_string_hash("TagA"), java_string_hash("TagB")],
    }
    consumer = {
        "groupName": CONSUMER_GROUP,
        "consumeFromWhere": CONSUME_FROM_FIRST_OFFSET,
        "consumeType": CONSUME_PASSIVELY,
        "messageModel": CLUSTERING,
        "subscriptionDataSet": [sub],
    }
    body = {
        "clientID": CLIENT_ID,
        "consumerDataSet": [consumer],
        "producerDataSet": [{"groupName": PRODUCER_GROUP}],
    }
    return fast_writer(body)


class Connection:
    def __init__(self, addr: str) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=20)
        self.opaque = 0

    def call(self, code: int, ext: dict[str, Any] | None, body: bytes = b"") -> Frame | None:
        self.opaque += 1
        oneway = code == UPDATE_CONSUMER_OFFSET
        frame = Frame(command(code, self.opaque, ext, oneway), body)
        self.sock.sendall(frame.encode())
        if oneway:
            return None
        while True:
            reply = read_frame(self.sock)
            if reply is None:
                raise ConnectionError(f"connection closed waiting for the answer to {code}")
            if reply.is_response and int(reply.header["opaque"]) == self.opaque:
                return reply

    def close(self) -> None:
        self.sock.close()


def run_flow(namesrv: str, broker: str) -> None:
    """Route lookup, heartbeat, sends (V1 and V2, three tags), consumer list, offset query,
    a tag-filtered pull, offset commit (oneway) and query, unregister: a C++ producer's and
    push consumer's life. The topic must exist (``TOPICS``)."""
    ns = Connection(namesrv)
    ns.call(GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    ns.close()
    b = Connection(broker)
    b.call(HEART_BEAT, None, heartbeat())
    for i, tag in enumerate(["TagA", "TagB", "TagC", "TagA", "TagC", "TagB"]):
        header = send_v1(0, tag, f"cpp-{i}") if i % 2 == 0 else send_v2(0, tag, f"cpp-{i}")
        code = SEND_MESSAGE if i % 2 == 0 else SEND_MESSAGE_V2
        b.call(code, header, f"cpp body {i} {tag}".encode())
    b.call(GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": CONSUMER_GROUP})
    offset_query = {"consumerGroup": CONSUMER_GROUP, "topic": TOPIC, "queueId": 0}
    b.call(QUERY_CONSUMER_OFFSET, offset_query)
    pull = {
        "consumerGroup": CONSUMER_GROUP,
        "topic": TOPIC,
        "queueId": 0,
        "queueOffset": "0",
        "maxMsgNums": 32,
        "sysFlag": 2 | 4,  # suspend + subscription
        "commitOffset": "0",
        "subVersion": "0",
        "suspendTimeoutMillis": "15000",
        "subscription": "TagA || TagB",
    }
    b.call(PULL_MESSAGE, pull)
    commit = {**offset_query, "commitOffset": "6"}
    b.call(UPDATE_CONSUMER_OFFSET, commit)
    time.sleep(0.2)  # the oneway commit lands before the query
    b.call(QUERY_CONSUMER_OFFSET, offset_query)
    unregister = {
        "clientID": CLIENT_ID,
        "producerGroup": PRODUCER_GROUP,
        "consumerGroup": CONSUMER_GROUP,
    }
    b.call(UNREGISTER_CLIENT, unregister)
    b.close()
