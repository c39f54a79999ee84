"""Message sub-commands keyed by the producer's unique id or by one queue:
``queryMsgByUniqueKey`` (the index lookup by ``UNIQ_KEY``, each consumer group's track of the
message, or a direct re-consume by one client), ``decodeMessageId`` (what an id says: broker
and CommitLog offset, or producer host, pid and time), ``printMsgByQueue`` and ``queryCq`` (a
ConsumeQueue's raw units)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rmq import fastjson
from rmq.admin.client import CONSUMER_NOT_ONLINE, Admin, AdminError
from rmq.admin.command import arg, subcommand
from rmq.admin.commands.consumer import consume_stats, consumer_connection
from rmq.admin.commands.message import (
    _broker_of,
    _check_charset,
    _queue_offset,
    _summary,
    pull,
    query_index,
)
from rmq.admin.output import (
    TIMESTAMP_FORMAT_HELP,
    Result,
    message_body,
    message_json,
    message_lines,
    parse_bool,
    parse_timestamp,
    timestamp_arg,
)
from rmq.codes import RequestCode
from rmq.errors import QueryNotFoundError, RmqError

if TYPE_CHECKING:
    from rmq._rmq import StoredMessage

__all__: list[str] = []

UNIQUE_KEY_MAX = 32
"""mqadmin asks each broker for at most 32 messages by unique key."""


def _java(value: object) -> str:
    """A value as Java's string concatenation writes it."""
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _track(admin: Admin, msg: StoredMessage, group: str) -> dict[str, Any]:
    """mqadmin's ``MessageTrack`` of one group: has it consumed the message?"""
    track: dict[str, Any] = {"consumerGroup": group, "trackType": "UNKNOWN", "exceptionDesc": None}
    try:
        cc = consumer_connection(admin, group)
    except RmqError as exc:
        # mqadmin: NOT_ONLINE when the broker says so, UNKNOWN for any other failure (a group
        # with no retry topic, so no broker to ask).
        code = getattr(exc, "code", None)
        if code == CONSUMER_NOT_ONLINE:
            track["trackType"] = "NOT_ONLINE"
        track["exceptionDesc"] = f"CODE:{code} DESC:{exc}"
        return track
    if cc.get("consumeType") == "CONSUME_ACTIVELY":
        track["trackType"] = "PULL"
        return track
    try:
        _, offsets = consume_stats(admin, group, msg.topic)
    except RmqError as exc:
        track["exceptionDesc"] = f"CODE:{getattr(exc, 'code', None)} DESC:{exc}"
        return track
    store_broker = admin.cluster_info().broker_name_of(msg.store_host)
    consumed = any(
        mq.topic == msg.topic
        and mq.queue_id == msg.queue_id
        and (store_broker is None or mq.broker_name == store_broker)
        and int(o.get("consumerOffset", 0)) > msg.queue_offset
        for mq, o in offsets.items()
    )
    track["trackType"] = "CONSUMED" if consumed else "NOT_CONSUME_YET"
    sub = (cc.get("subscriptionTable") or {}).get(msg.topic)
    tags = {str(t) for t in (sub or {}).get("tagsSet") or ()}
    if consumed and sub is not None and tags and "*" not in tags and msg.tags not in tags:
        track["trackType"] = "CONSUMED_BUT_FILTERED"
    return track


def _tracks(admin: Admin, msg: StoredMessage) -> list[dict[str, Any]]:
    """A track per group that consumes the topic (asked of its first broker, as mqadmin)."""
    addr = next((a for b in admin.route(msg.topic).broker_datas if (a := b.select_addr())), None)
    if addr is None:
        return []
    body = admin.broker_json(addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": msg.topic})
    return [_track(admin, msg, str(g)) for g in sorted(body.get("groupList") or ())]


def _consume_directly(admin: Admin, group: str, client_id: str, msg: StoredMessage) -> Result:
    resp = admin.broker(
        msg.store_host,
        RequestCode.CONSUME_MESSAGE_DIRECTLY,
        {"consumerGroup": group, "clientId": client_id, "msgId": msg.offset_msg_id},
        timeout_ms=admin.timeout_ms * 3,
    )
    r = fastjson.loads(resp.body) if resp.body else {}
    line = (
        f"ConsumeMessageDirectlyResult [order={_java(r.get('order'))}, "
        f"autoCommit={_java(r.get('autoCommit'))}, "
        f"consumeResult={_java(r.get('consumeResult'))}, remark={_java(r.get('remark'))}, "
        f"spentTimeMills={_java(r.get('spentTimeMills'))}]"
    )
    return Result(r, [line])


@subcommand(
    "queryMsgByUniqueKey",
    "Query Message by Unique key",
    arg("-i", "--msgId", required=True, help="the message's unique id (msgId, UNIQ_KEY)"),
    arg("-t", "--topic", required=True, help="the topic of the message"),
    arg("-g", "--consumerGroup", help="consume it once more by this group's client (with -d)"),
    arg("-d", "--clientId", help="the consumer's client id (with -g)"),
    arg("-a", "--showAll", action="store_true", help="every stored copy (at most 32)"),
)
def query_msg_by_unique_key(admin: Admin, args: argparse.Namespace) -> Result:
    topic, msg_id = args.topic.strip(), args.msgId.strip()
    if bool(args.consumerGroup) != bool(args.clientId):
        raise AdminError("give both -g consumerGroup and -d clientId, or neither")
    # The stored copies of the message (a retried send stores more than one), oldest first.
    found = query_index(admin, topic, msg_id, max_num=UNIQUE_KEY_MAX, unique=True)
    if not found:
        raise QueryNotFoundError(
            f"no message of topic {topic!r} has unique key {msg_id!r} — -i takes the msgId a "
            "producer got back (queryMsgById takes the offset id)"
        )
    if args.consumerGroup:
        return _consume_directly(admin, args.consumerGroup.strip(), args.clientId.strip(), found[0])
    shown = found if args.showAll else found[:1]
    lines: list[str] = []
    messages = []
    warnings: list[str] = []
    for msg in shown:
        try:
            tracks = _tracks(admin, msg)
        except RmqError as exc:  # the message is found; only who consumed it is not known
            tracks = []
            warnings.append(f"cannot tell which groups consumed it: {exc}")
        messages.append(message_json(msg) | {"tracks": tracks})
        if lines:
            lines.append("")
        lines += message_lines(msg)
        lines.append("")
        if not tracks and not warnings:
            lines.append("WARN: No Consumer")
        for t in tracks:
            desc = t["exceptionDesc"] if t["exceptionDesc"] is not None else "null"
            lines.append(
                f"MessageTrack [consumerGroup={t['consumerGroup']}, trackType={t['trackType']}, "
                f"exceptionDesc={desc}]"
            )
    return Result({"messages": messages}, lines, warnings)


@subcommand(
    "decodeMessageId",
    "decode unique message ID (or an offset message ID)",
    arg("-i", "--messageId", required=True, help="a msgId or an offsetMsgId"),
)
def decode_message_id(admin: Admin, args: argparse.Namespace) -> Result:
    from rmq._rmq import decode_offset_msg_id, decode_uniq_id

    msg_id = args.messageId.strip()
    try:
        ip, pid, made_ms = decode_uniq_id(msg_id)
    except ValueError:
        raise AdminError(
            f"{msg_id!r} is not a message id: expected 32 (IPv4) or 56 (IPv6) hex digits, as "
            "the msgId or offsetMsgId sendMessage prints"
        ) from None
    # Both kinds have the same length. An offset id holds the port as 4 bytes after the
    # address, so its first two are zero; a unique id holds the producer's pid there.
    port_high = msg_id[8:12] if len(msg_id) == 32 else msg_id[32:36]
    if port_high == "0000":
        addr, offset = decode_offset_msg_id(msg_id)
        data: dict[str, Any] = {
            "kind": "offsetMsgId",
            "brokerAddr": addr,
            "commitLogOffset": offset,
        }
        return Result(data, [f"brokerAddr={addr}", f"commitLogOffset={offset}"])
    t = dt.datetime.fromtimestamp(made_ms / 1000)
    date = t.strftime("%Y-%m-%d#%H:%M:%S") + f":{made_ms % 1000:03d}"
    data = {"kind": "msgId", "ip": ip, "pid": pid, "timestamp": made_ms, "date": date}
    return Result(data, [f"ip={ip}", f"pid={pid}", f"date={date}"])


@subcommand(
    "printMsgByQueue",
    "Print Message Detail",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-a", "--brokerName", required=True, help="broker name"),
    arg("-i", "--queueId", type=int, required=True, help="queue id"),
    arg("-c", "--charsetName", default="UTF-8", help="charset of the bodies (default: UTF-8)"),
    arg("-s", "--subExpression", default="*", help="tag expression, e.g. 'TagA || TagB'"),
    arg("-b", "--beginTimestamp", type=timestamp_arg, help=f"from ({TIMESTAMP_FORMAT_HELP})"),
    arg("-e", "--endTimestamp", type=timestamp_arg, help=f"to ({TIMESTAMP_FORMAT_HELP})"),
    arg(
        "-p",
        "--printMsg",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="print the messages (default: false)",
    ),
    arg(
        "-d",
        "--printBody",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="print bodies (default: false)",
    ),
    arg(
        "-f",
        "--calculate",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="count messages by tag (default: false)",
    ),
)
def print_msg_by_queue(admin: Admin, args: argparse.Namespace) -> Result:
    topic, broker, qid = args.topic.strip(), args.brokerName.strip(), args.queueId
    charset = _check_charset(args.charsetName.strip())
    addr = _broker_of(admin, topic, broker)
    lo = _queue_offset(admin, addr, RequestCode.GET_MIN_OFFSET, topic, qid)
    hi = _queue_offset(admin, addr, RequestCode.GET_MAX_OFFSET, topic, qid)
    for option, name in ((args.beginTimestamp, "lo"), (args.endTimestamp, "hi")):
        if option:
            at = _queue_offset(
                admin,
                addr,
                RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
                topic,
                qid,
                timestamp=str(parse_timestamp(option)),
            )
            lo, hi = (at, hi) if name == "lo" else (lo, at)
    tags: Counter[str] = Counter()
    printed: list[dict[str, Any]] = []

    def walk() -> Iterator[str]:
        offset = lo
        while offset < hi:
            result = pull(admin, addr, topic, qid, offset, 32, args.subExpression)
            if result.status not in ("FOUND", "NO_MATCHED_MSG"):
                break
            for msg in result.messages:
                if msg.queue_offset >= hi:
                    continue
                if args.calculate and msg.tags:
                    tags[msg.tags] += 1
                if args.printMsg:
                    if args.json:
                        printed.append(message_json(msg, charset))
                    body = (
                        message_body(msg).decode(charset, errors="replace")
                        if args.printBody
                        else "NOT PRINT BODY"
                    )
                    yield f"MSGID: {msg.msg_id} {_summary(msg)} BODY: {body}"
            if result.next_begin_offset <= offset:
                break
            offset = result.next_begin_offset
        for tag, count in sorted(tags.items(), key=lambda tc: (-tc[1], tc[0])):
            yield f"Tag: {tag:<30} Count: {count}"

    if args.json:
        for _ in walk():
            pass
        data = {"minOffset": lo, "maxOffset": hi, "messages": printed, "tags": dict(tags)}
        return Result(data)
    return Result(None, walk())


@subcommand(
    "queryCq",
    "Query cq command.",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-q", "--queue", type=int, required=True, help="queue id"),
    arg("-i", "--index", type=int, required=True, help="first queue offset to show"),
    arg("-c", "--count", type=int, default=10, help="how many units (default: 10)"),
    arg("-b", "--broker", metavar="ADDR", help="broker address (default: the topic's first)"),
    arg("-g", "--consumer", help="also show this consumer group's subscription"),
)
def query_cq(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    if args.count <= 0:
        raise AdminError(f"-c takes a positive number of units, not {args.count}")
    if args.broker:
        addr = admin.broker_addr(args.broker)
    else:
        brokers = admin.route(topic).broker_datas
        master = brokers[0].master_addr if brokers else None
        if master is None:
            raise AdminError(f"topic {topic!r} has no master broker in its route; name one with -b")
        addr = master
    header = {
        "topic": topic,
        "queueId": str(args.queue),
        "index": str(args.index),
        "count": str(args.count),
    }
    if args.consumer:
        header["consumerGroup"] = args.consumer.strip()
    body = admin.broker_json(addr, RequestCode.QUERY_CONSUME_QUEUE, header)
    lines: list[str] = []
    if body.get("subscriptionData") is not None:
        lines += [
            "Subscription data: ",
            *json.dumps(body["subscriptionData"], indent=4).splitlines(),
        ]
        lines.append("=" * 38)
    if body.get("filterData") is not None:
        lines += ["Filter data: ", str(body["filterData"]), "=" * 38]
    lines += [
        "Queue data: ",
        f"max: {body.get('maxQueueIndex', 0)}, min: {body.get('minQueueIndex', 0)}",
        "=" * 38,
    ]
    for i, unit in enumerate(body.get("queueData") or (), start=args.index):
        lines += [
            f"idx: {i}",
            "ConsumeQueueData{"
            f"physicOffset={unit.get('physicOffset')}, physicSize={unit.get('physicSize')}, "
            f"tagsCode={unit.get('tagsCode')}, "
            f"extendDataJson='{_java(unit.get('extendDataJson'))}', "
            f"bitMap='{_java(unit.get('bitMap'))}', eval={_java(unit.get('eval', False))}, "
            f"msg='{_java(unit.get('msg'))}'}}",
            "=" * 38,
        ]
    return Result(body, lines)
