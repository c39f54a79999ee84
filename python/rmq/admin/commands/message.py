"""Message sub-commands: look a message up by offset id, key or queue offset, and print a
topic's messages by pulling every queue from its min to its max offset."""

from __future__ import annotations

import argparse
import codecs
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rmq.admin.client import Admin, AdminError, BrokerData
from rmq.admin.command import arg, subcommand
from rmq.admin.output import (
    TIMESTAMP_FORMAT_HELP,
    Result,
    human_time,
    message_body,
    message_json,
    message_lines,
    parse_bool,
    parse_timestamp,
    table,
    timestamp_arg,
)
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import (
    PullNotFoundError,
    PullOffsetMovedError,
    PullRetryImmediatelyError,
    QueryNotFoundError,
    RemotingConnectError,
)

if TYPE_CHECKING:
    from rmq._rmq import StoredMessage

TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
"""The group mqadmin pulls as (RocketMQ's ``MixAll.TOOLS_CONSUMER_GROUP``)."""
PULL_FLAG_SUBSCRIPTION = 0x4
PULL_BATCH = 32
MAX_QUERY_NUM = 64
LONG_MAX = 2**63 - 1

PULL_STATUS: dict[int, str] = {
    ResponseCode.SUCCESS: "FOUND",
    PullNotFoundError.code: "NO_NEW_MSG",
    PullRetryImmediatelyError.code: "NO_MATCHED_MSG",
    PullOffsetMovedError.code: "OFFSET_ILLEGAL",
}


def _decode(body: bytes | None) -> list[StoredMessage]:
    from rmq._rmq import decode_messages

    return decode_messages(body) if body else []


@dataclass
class PullResult:
    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[StoredMessage] = field(default_factory=list)


def _tag_filter(expression: str) -> set[str] | None:
    """The tags of ``TagA || TagB``; None for ``*`` (everything)."""
    tags = {t.strip() for t in expression.split("||") if t.strip()}
    return None if not tags or "*" in tags else tags


def pull(
    admin: Admin,
    addr: str,
    topic: str,
    queue_id: int,
    offset: int,
    max_nums: int,
    expression: str = "*",
) -> PullResult:
    """One PULL_MESSAGE as a pull consumer sends it, without suspension; tags are filtered
    again by name here, since the broker filters by tag hash only."""
    header = {
        "consumerGroup": TOOLS_CONSUMER_GROUP,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": str(offset),
        "maxMsgNums": str(max_nums),
        "sysFlag": str(PULL_FLAG_SUBSCRIPTION),
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": expression,
        "subVersion": "0",
        "expressionType": "TAG",
    }
    resp = admin.broker(addr, RequestCode.PULL_MESSAGE, header, accept=tuple(PULL_STATUS))
    ext = resp.ext_fields
    messages = _decode(resp.body) if resp.code == ResponseCode.SUCCESS else []
    tags = _tag_filter(expression)
    if tags is not None:
        messages = [m for m in messages if m.tags in tags]
    return PullResult(
        PULL_STATUS[resp.code],
        int(ext.get("nextBeginOffset", offset)),
        int(ext.get("minOffset", 0)),
        int(ext.get("maxOffset", 0)),
        messages,
    )


def _queue_offset(
    admin: Admin, addr: str, code: int, topic: str, queue_id: int, **extra: str
) -> int:
    resp = admin.broker(addr, code, {"topic": topic, "queueId": str(queue_id), **extra})
    return int(resp.ext_fields.get("offset", "0"))


def queue_range(
    admin: Admin, addr: str, topic: str, queue_id: int, begin: int | None, end: int | None
) -> tuple[int, int]:
    """The queue offsets [from, to) of a queue's messages stored between ``begin`` and ``end``
    (ms; None: the queue's min or max offset), as printMsg -b/-e and the console read them."""
    if begin is None:
        lo = _queue_offset(admin, addr, RequestCode.GET_MIN_OFFSET, topic, queue_id)
    else:
        lo = _queue_offset(
            admin,
            addr,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            topic,
            queue_id,
            timestamp=str(begin),
        )
    if end is None:
        hi = _queue_offset(admin, addr, RequestCode.GET_MAX_OFFSET, topic, queue_id)
    else:
        hi = _queue_offset(
            admin,
            addr,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            topic,
            queue_id,
            timestamp=str(end),
        )
    return lo, hi


def _check_charset(name: str) -> str:
    try:
        return codecs.lookup(name).name
    except LookupError:
        raise AdminError(f"unknown charset {name!r} (e.g. UTF-8, GBK, ISO-8859-1)") from None


@subcommand(
    "queryMsgById",
    "Query Message by Id",
    arg("-i", "--msgId", required=True, help="offset message id(s), comma separated"),
)
def query_msg_by_id(admin: Admin, args: argparse.Namespace) -> Result:
    from rmq._rmq import decode_offset_msg_id

    messages = []
    for msg_id in (m.strip() for m in args.msgId.split(",")):
        if not msg_id:
            continue
        try:
            addr, offset = decode_offset_msg_id(msg_id)
        except ValueError as exc:
            raise AdminError(f"{exc} — -i takes the offset message id (offsetMsgId)") from None
        try:
            resp = admin.broker(addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(offset)})
        except RemotingConnectError as exc:
            raise RemotingConnectError(
                f"{exc}; the id {msg_id} names broker {addr}: is it an offset message id? "
                "(queryMsgByKey shows them under #Offset ID)"
            ) from None
        found = _decode(resp.body)
        if not found:
            raise QueryNotFoundError(
                f"broker {addr} holds no message at commit log offset {offset}"
            )
        messages.append(found[0])
    if not messages:
        raise AdminError("-i names no message id")
    lines: list[str] = []
    for msg in messages:
        if lines:
            lines.append("")
        lines += message_lines(msg)
    return Result({"messages": [message_json(m) for m in messages]}, lines)


def query_index(
    admin: Admin,
    topic: str,
    key: str,
    *,
    begin: int = 0,
    end: int = LONG_MAX,
    max_num: int = MAX_QUERY_NUM,
    unique: bool = False,
) -> list[StoredMessage]:
    """QUERY_MESSAGE on every broker of ``topic``: the messages whose key (or, with
    ``unique``, whose unique key, the Message ID) is ``key``, in store order. The index
    matches key hashes: only exact matches are kept, as RocketMQ clients do."""
    header = {
        "topic": topic,
        "key": key,
        "maxNum": str(max_num),
        "beginTimestamp": str(begin),
        "endTimestamp": str(end),
        "_UNIQUE_KEY_QUERY": str(unique).lower(),
    }
    found: list[StoredMessage] = []
    for b in admin.route(topic).broker_datas:
        addr = b.select_addr()
        if addr is None:
            continue
        resp = admin.broker(
            addr, RequestCode.QUERY_MESSAGE, header, accept=(QueryNotFoundError.code,)
        )
        for msg in _decode(resp.body):
            if msg.topic != topic:
                continue
            matches = msg.msg_id == key if unique else key in (msg.keys or "").split(" ")
            if matches:
                found.append(msg)
    found.sort(key=lambda m: (m.store_timestamp, m.commit_log_offset))
    return found


@subcommand(
    "queryMsgByKey",
    "Query Message by Key",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-k", "--msgKey", required=True, help="message key"),
    arg(
        "-b",
        "--beginTimestamp",
        type=timestamp_arg,
        help=f"store time from ({TIMESTAMP_FORMAT_HELP}; default 0)",
    ),
    arg(
        "-e",
        "--endTimestamp",
        type=timestamp_arg,
        help=f"store time to ({TIMESTAMP_FORMAT_HELP}; default: no end)",
    ),
    arg(
        "-m",
        "--maxNum",
        type=int,
        default=MAX_QUERY_NUM,
        help=f"most results (default: {MAX_QUERY_NUM})",
    ),
)
def query_msg_by_key(admin: Admin, args: argparse.Namespace) -> Result:
    topic, key = args.topic.strip(), args.msgKey.strip()
    begin = parse_timestamp(args.beginTimestamp) if args.beginTimestamp else 0
    end = parse_timestamp(args.endTimestamp) if args.endTimestamp else LONG_MAX
    found = query_index(admin, topic, key, begin=begin, end=end, max_num=args.maxNum)
    if not found:
        raise QueryNotFoundError(
            f"no message of topic {topic!r} has key {key!r}"
            + (" in that time range" if args.beginTimestamp or args.endTimestamp else "")
        )
    msgs = [message_json(m) for m in found]
    lines = table(
        ("Message ID", "QID", "Offset", "Offset ID"),
        ((m["msgId"], m["queueId"], m["queueOffset"], m["offsetMsgId"]) for m in msgs),
    )
    return Result({"messages": msgs}, lines)


def _broker_of(admin: Admin, topic: str, broker_name: str) -> str:
    route = admin.route(topic)
    b: BrokerData | None = route.broker(broker_name)
    addr = b.select_addr() if b else None
    if addr is None:
        names = ", ".join(x.broker_name for x in route.broker_datas) or "none"
        raise AdminError(f"topic {topic!r} has no broker named {broker_name!r} (brokers: {names})")
    return addr


@subcommand(
    "queryMsgByOffset",
    "Query Message by offset",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-b", "--brokerName", required=True, help="broker name"),
    arg("-i", "--queueId", type=int, required=True, help="queue id"),
    arg("-o", "--offset", type=int, required=True, help="queue offset"),
)
def query_msg_by_offset(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    addr = _broker_of(admin, topic, args.brokerName.strip())
    result = pull(admin, addr, topic, args.queueId, args.offset, 1)
    if result.status != "FOUND" or not result.messages:
        raise PullNotFoundError(
            f"no message at offset {args.offset} of queue {args.queueId} of topic {topic!r} on "
            f"{args.brokerName}: {result.status} (the queue holds offsets "
            f"{result.min_offset} to {result.max_offset - 1})"
        )
    msg = result.messages[0]
    return Result({"messages": [message_json(msg)]}, message_lines(msg))


def _summary(msg: StoredMessage) -> str:
    props = ", ".join(f"{k}={v}" for k, v in sorted(msg.properties.items()))
    return (
        f"MessageExt [topic={msg.topic}, queueId={msg.queue_id}, queueOffset={msg.queue_offset}, "
        f"storeTimestamp={human_time(msg.store_timestamp)}, bornHost={msg.born_host}, "
        f"storeHost={msg.store_host}, sysFlag={msg.sys_flag}, "
        f"reconsumeTimes={msg.reconsume_times}, "
        f"properties={{{props}}}]"
    )


@subcommand(
    "printMsg",
    "Print Message Detail",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-c", "--charsetName", default="UTF-8", help="charset of the bodies (default: UTF-8)"),
    arg("-s", "--subExpression", default="*", help="tag expression, e.g. 'TagA || TagB'"),
    arg(
        "-b",
        "--beginTimestamp",
        type=timestamp_arg,
        help=f"start at this store time ({TIMESTAMP_FORMAT_HELP})",
    ),
    arg(
        "-e",
        "--endTimestamp",
        type=timestamp_arg,
        help=f"stop at this store time ({TIMESTAMP_FORMAT_HELP})",
    ),
    arg(
        "-d",
        "--printBody",
        type=parse_bool,
        default=True,
        metavar="{true,false}",
        help="print bodies (default: true)",
    ),
)
def print_msg(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    charset = _check_charset(args.charsetName.strip())
    begin = parse_timestamp(args.beginTimestamp) if args.beginTimestamp else None
    end = parse_timestamp(args.endTimestamp) if args.endTimestamp else None
    route = admin.route(topic)
    queues: list[dict[str, Any]] = []

    def walk() -> Iterator[str]:
        for b, queue_id in route.read_queues():
            addr = b.select_addr()
            assert addr is not None
            lo, hi = queue_range(admin, addr, topic, queue_id, begin, end)
            mq = f"MessageQueue [topic={topic}, brokerName={b.broker_name}, queueId={queue_id}]"
            entry: dict[str, Any] = {
                "brokerName": b.broker_name,
                "queueId": queue_id,
                "minOffset": lo,
                "maxOffset": hi,
                "messages": [],
            }
            queues.append(entry)
            yield f"minOffset={lo}, maxOffset={hi}, {mq}"
            offset = lo
            while offset < hi:
                batch = min(PULL_BATCH, hi - offset)
                result = pull(admin, addr, topic, queue_id, offset, batch, args.subExpression)
                if result.status == "FOUND":
                    for msg in result.messages:
                        if msg.queue_offset >= hi:
                            continue
                        if args.json:
                            entry["messages"].append(message_json(msg, charset))
                        body = (
                            message_body(msg).decode(charset, errors="replace")
                            if args.printBody
                            else "NOT PRINT BODY"
                        )
                        yield f"MSGID: {msg.msg_id} {_summary(msg)} BODY: {body}"
                elif result.status == "NO_MATCHED_MSG":
                    yield f"{mq} no matched msg. status={result.status}, offset={offset}"
                else:
                    yield f"{mq} print msg finished. status={result.status}, offset={offset}"
                    break
                if result.next_begin_offset <= offset:
                    yield f"{mq} stopped: the broker did not move past offset {offset}"
                    break
                offset = result.next_begin_offset
            yield "-" * 56

    if args.json:
        for _ in walk():
            pass
        return Result({"topic": topic, "queues": queues})
    return Result(None, walk())
