"""The conformance corpus's format and its comparison rules, shared by ``capture.py`` (which
writes vectors from real clients talking to Apache RocketMQ) and ``tests/test_corpus.py``
(which replays them against rmq).

A flow file (``tests/corpus/<family>/<flow>.jsonl``) starts with one ``{"flow": …}`` line
(client, how it was made, the topics to create before replaying) followed by one line per
event, in the order Apache answered them:

* ``{"kind": "request", "conn": 3, "server": "broker", "code": 10, "oneway": false,
  "header": "<the header JSON exactly as sent>", "body": "<base64>"|null,
  "response": {"code": 0, "extFields": [...keys...], "body": <shape>}|null}``:
  a request from the client and Apache's answer, normalized by :func:`response_summary`;
* ``{"kind": "server-request", "conn": 3, "code": 40, "reply": {...}|null}``: a request the
  server sent the client (NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, ...) and
  the client's reply (``header`` + ``body``), so a replay can answer rmq's the same way;
* ``{"kind": "close", "conn": 3}``: the client closed that connection.

What legitimately differs between two brokers (offsets in the commit log, message ids,
timestamps, addresses, the order of map keys) is normalized out of the summaries; everything
else (codes, ext-field keys, JSON keys and value types, messages' topics, queues, queue offsets,
tags, keys, bodies and properties) is kept and compared.
"""

from __future__ import annotations

import base64
import json
import socket
import struct
import zlib
from dataclasses import dataclass
from typing import Any

from rmq.fastjson import FastjsonError
from rmq.fastjson import loads as fastjson_loads

JSON_SERIALIZE = 0
RPC_RESPONSE = 1
RPC_ONEWAY = 2
MAX_FRAME = 64 * 1024 * 1024

PULL_MESSAGE = 11
QUERY_MESSAGE = 12
SEARCH_OFFSET_BY_TIMESTAMP = 29
VIEW_MESSAGE_BY_ID = 33
CONSUMER_SEND_MSG_BACK = 36
QUERY_MESSAGE_BODY_CODES = {PULL_MESSAGE, QUERY_MESSAGE, VIEW_MESSAGE_BY_ID}
PULL_NOT_FOUND = 19
PULL_SUSPEND_FLAG = 0x2

# Message properties whose values depend on the moment or on the broker's ids (the keys are
# still compared): when the consumer started (set before a send-back), the id of the original
# message (an offset id on Apache for some clients).
VOLATILE_PROPERTY_VALUES = frozenset({"CONSUME_START_TIME", "ORIGIN_MESSAGE_ID"})


class FrameError(ValueError):
    """Bytes that are not a RocketMQ remoting frame."""


@dataclass
class Frame:
    """One remoting frame: the header as sent (JSON text) and the body."""

    header_raw: bytes
    body: bytes
    serialize: int = JSON_SERIALIZE

    @property
    def header(self) -> dict[str, Any]:
        if self.serialize != JSON_SERIALIZE:
            raise FrameError(f"header serialize type {self.serialize} is not JSON")
        parsed = json.loads(self.header_raw)
        if not isinstance(parsed, dict):
            raise FrameError(f"header is not a JSON object: {self.header_raw[:80]!r}")
        return parsed

    @property
    def is_response(self) -> bool:
        return bool(int(self.header.get("flag", 0)) & RPC_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(int(self.header.get("flag", 0)) & RPC_ONEWAY)

    def encode(self) -> bytes:
        mark = (self.serialize << 24) | len(self.header_raw)
        total = 4 + len(self.header_raw) + len(self.body)
        return struct.pack(">iI", total, mark) + self.header_raw + self.body


def parse_frame(data: bytes) -> Frame:
    """A frame without its 4-byte length prefix."""
    if len(data) < 4:
        raise FrameError(f"frame of {len(data)} bytes is shorter than its header length")
    (mark,) = struct.unpack(">I", data[:4])
    serialize, header_len = mark >> 24, mark & 0xFFFFFF
    if 4 + header_len > len(data):
        raise FrameError(f"header length {header_len} exceeds the frame ({len(data)} bytes)")
    return Frame(data[4 : 4 + header_len], data[4 + header_len :], serialize)


def read_frame(sock: socket.socket) -> Frame | None:
    """The next frame from a socket; None at end of stream."""
    prefix = _read_exact(sock, 4)
    if prefix is None:
        return None
    (length,) = struct.unpack(">i", prefix)
    if not 4 <= length <= MAX_FRAME:
        raise FrameError(f"frame length {length} out of range")
    data = _read_exact(sock, length)
    if data is None:
        raise FrameError("connection closed inside a frame")
    return parse_frame(data)


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < n:
        chunk = sock.recv(n - len(chunks))
        if not chunk:
            if chunks:
                raise FrameError("connection closed inside a frame")
            return None
        chunks += chunk
    return bytes(chunks)


# ---- summaries ---------------------------------------------------------------------------


def message_summary(msg: Any) -> dict[str, Any]:
    """What a client sees of a message, without commit-log offsets, ids, hosts or times."""
    props = {
        k: ("<volatile>" if k in VOLATILE_PROPERTY_VALUES else v)
        for k, v in sorted(msg.properties.items())
    }
    return {
        "topic": msg.topic,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "flag": msg.flag,
        "sysFlag": msg.sys_flag,
        "reconsumeTimes": msg.reconsume_times,
        "bodyCrc": zlib.crc32(msg.body),
        "bodyLen": len(msg.body),
        "properties": props,
    }


def json_shape(value: Any) -> Any:
    """Keys and value types of a JSON document. Map keys are kept (topic and group names
    are the same in a replay) except MessageQueue keys, which become ``<MessageQueue>``;
    a list becomes the sorted distinct shapes of its elements."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out[_key_shape(key)] = _merge(out.get(_key_shape(key)), json_shape(item))
        return dict(sorted(out.items()))
    if isinstance(value, list):
        shapes: dict[str, Any] = {}
        for item in value:
            s = json_shape(item)
            shapes[json.dumps(s, sort_keys=True)] = s
        return [shapes[k] for k in sorted(shapes)]
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if value is None:
        return "null"
    return "str"


def _key_shape(key: str) -> str:
    if key.startswith("{"):
        try:
            parsed = json.loads(key)
        except ValueError:
            return key
        if isinstance(parsed, dict) and {"topic", "brokerName", "queueId"} <= parsed.keys():
            return "<MessageQueue>"
    return key


def _merge(a: Any, b: Any) -> Any:
    """Two MessageQueue-keyed entries collapse into one: keep the union of their shapes."""
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a.get(k), b.get(k)) for k in sorted(a.keys() | b.keys())}
    return a


SEND_CODES = {10, 310, 320}


def commit_log_offsets(request_code: int, response: Frame) -> list[int]:
    """The commit-log offsets an answer reveals (send: the offset ids in ``msgId``; pull,
    query, view: each message's), so a replay can map Apache's offsets to rmq's in later
    requests that name one (CONSUMER_SEND_MSG_BACK, VIEW_MESSAGE_BY_ID)."""
    from rmq._rmq import decode_messages, decode_offset_msg_id

    try:
        if request_code in SEND_CODES:
            ids = str((response.header.get("extFields") or {}).get("msgId", ""))
            return [decode_offset_msg_id(i)[1] for i in ids.split(",") if i]
        if request_code in QUERY_MESSAGE_BODY_CODES and response.body:
            return [m.commit_log_offset for m in decode_messages(response.body)]
    except Exception:  # not offset ids / not messages: nothing to map
        return []
    return []


def body_summary(code: int, body: bytes) -> Any:
    """A normalized view of a response body, by the request code that asked for it."""
    if not body:
        return None
    if code in QUERY_MESSAGE_BODY_CODES:
        from rmq._rmq import decode_messages

        try:
            return {"messages": [message_summary(m) for m in decode_messages(body)]}
        except Exception as exc:  # a body that is not CommitLog records
            return {"undecodable-messages": str(exc)[:200]}
    try:
        return {"json": json_shape(fastjson_loads(body))}
    except (FastjsonError, UnicodeDecodeError, ValueError):
        pass
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return {"bytes": len(body)}
    lines = [line for line in text.splitlines() if line.strip()]
    if lines and all("=" in line for line in lines):
        return {"properties": True}
    return {"text": True}


def response_summary(request_code: int, response: Frame) -> dict[str, Any]:
    header = response.header
    ext = header.get("extFields") or {}
    summary: dict[str, Any] = {
        "code": int(header.get("code", -1)),
        "extFields": sorted(ext),
        "body": body_summary(request_code, response.body),
    }
    offsets = commit_log_offsets(request_code, response)
    if offsets:
        summary["_offsets"] = offsets  # not compared: only to map offsets in a replay
    return summary


def b64(data: bytes) -> str | None:
    return base64.b64encode(data).decode("ascii") if data else None


def unb64(text: str | None) -> bytes:
    return base64.b64decode(text) if text else b""


# ---- comparison --------------------------------------------------------------------------


def compare_shapes(apache: Any, rmq: Any, path: str = "$") -> list[str]:
    """Where rmq's JSON shape lacks something Apache's has (extra keys in rmq's are fine:
    clients ignore unknown fields)."""
    if isinstance(apache, dict):
        if not isinstance(rmq, dict):
            return [f"{path}: Apache has an object, rmq {_kind(rmq)}"]
        problems: list[str] = []
        for key, sub in apache.items():
            if key not in rmq:
                problems.append(f"{path}.{key}: missing in rmq")
            else:
                problems += compare_shapes(sub, rmq[key], f"{path}.{key}")
        return problems
    if isinstance(apache, list):
        if not isinstance(rmq, list):
            return [f"{path}: Apache has a list, rmq {_kind(rmq)}"]
        if apache and not rmq:
            return [f"{path}: Apache's list has elements, rmq's is empty"]
        problems = []
        for sub in apache:
            if not any(not compare_shapes(sub, r, path) for r in rmq):
                best = min((compare_shapes(sub, r, f"{path}[]") for r in rmq), key=len)
                problems += best or [f"{path}[]: no element of rmq's list matches"]
        return problems
    if apache != rmq and not (apache == "int" and rmq == "float"):
        return [f"{path}: Apache has {apache}, rmq {rmq}"]
    return []


def _kind(shape: Any) -> str:
    if isinstance(shape, dict):
        return "an object"
    if isinstance(shape, list):
        return "a list"
    return str(shape)


def compare_messages(apache: list[dict[str, Any]], rmq: list[dict[str, Any]]) -> list[str]:
    """Messages in a pull/query/view answer: rmq must return some, and the ones both return
    (a pull may legitimately return fewer or more of those available) must be the same."""
    if apache and not rmq:
        return [f"Apache returned {len(apache)} messages, rmq none"]
    problems = []
    for i, (a, r) in enumerate(zip(apache, rmq, strict=False)):
        if a != r:
            diff = {k: (a.get(k), r.get(k)) for k in a.keys() | r.keys() if a.get(k) != r.get(k)}
            problems.append(f"message {i}: (Apache, rmq) differ in {diff}")
            break
    return problems
