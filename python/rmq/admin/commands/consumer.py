"""Consumer group sub-commands: create or update a group, its progress, its connections, and
moving its offsets to a point in time."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rmq import fastjson
from rmq._rmq import RETRY_GROUP_TOPIC_PREFIX
from rmq.admin.client import (
    CONSUMER_NOT_ONLINE,
    Admin,
    AdminError,
    BrokerData,
    TopicRoute,
)
from rmq.admin.command import arg, broker_or_cluster, subcommand
from rmq.admin.output import (
    TIMESTAMP_FORMAT_HELP,
    Result,
    date_time,
    parse_bool,
    parse_timestamp,
    table,
    timestamp_or_now_arg,
)
from rmq.client.message_queue import MessageQueue
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import (
    BrokerResponseError,
    RequestCodeNotSupportedError,
    RmqError,
    TopicNotExistError,
)

RETRY_PREFIX = RETRY_GROUP_TOPIC_PREFIX
V4_0_0_SNAPSHOT = 212
"""``MQVersion.Version`` ordinal of V4_0_0_SNAPSHOT; from there every minor.patch has a
SNAPSHOT and a release constant, 200 per major version (checked against 4.9.8 and 5.x)."""


def version_desc(ordinal: int) -> str:
    """``MQVersion.getVersionDesc`` for 4.x and 5.x clients: 409 → ``V4_9_8``."""
    if ordinal < V4_0_0_SNAPSHOT:
        return f"version {ordinal}"
    n = ordinal - V4_0_0_SNAPSHOT
    major, rest = 4 + n // 200, n % 200
    step, snapshot = divmod(rest, 2)
    minor, patch = divmod(step, 10)
    return f"V{major}_{minor}_{patch}" + ("" if snapshot else "_SNAPSHOT")


def _group_brokers(admin: Admin, group: str, topic: str | None) -> list[BrokerData]:
    """Brokers that know the group: those of its retry topic (RocketMQ's way), or those of
    ``topic`` when given."""
    if topic:
        route = admin.route(topic)
    else:
        try:
            route = admin.route(RETRY_PREFIX + group)
        except TopicNotExistError:
            raise TopicNotExistError(
                f"consumer group {group!r} is not known to the nameserver (it has no retry "
                f"topic {RETRY_PREFIX}{group}: no consumer of it ever connected) — check the "
                "group name, or name the topic with -t",
                code=TopicNotExistError.code,
            ) from None
    return [b for b in route.broker_datas if b.select_addr()]


def consume_stats(
    admin: Admin, group: str, topic: str | None
) -> tuple[float, dict[MessageQueue, dict[str, Any]]]:
    """GET_CONSUME_STATS from every broker of the group, merged: (TPS, offsets per queue)."""
    tps = 0.0
    table_: dict[MessageQueue, dict[str, Any]] = {}
    header = {"consumerGroup": group}
    if topic:
        header["topic"] = topic
    for b in _group_brokers(admin, group, topic):
        addr = b.select_addr()
        assert addr is not None
        body = admin.broker_json(addr, RequestCode.GET_CONSUME_STATS, header)
        tps += float(body.get("consumeTps") or 0)
        for key, offsets in (body.get("offsetTable") or {}).items():
            table_[fastjson.message_queue_key(key)] = offsets
    return tps, table_


def consumer_connection(admin: Admin, group: str, addr: str | None = None) -> dict[str, Any]:
    """GET_CONSUMER_CONNECTION_LIST from ``addr`` or the first broker of the group."""
    if addr is None:
        brokers = _group_brokers(admin, group, None)
        if not brokers:
            raise AdminError(f"no broker serves consumer group {group!r}")
        addr = brokers[0].select_addr()
        assert addr is not None
    body = admin.broker_json(
        addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": group}
    )
    if not body.get("connectionSet"):
        raise BrokerResponseError(
            f"consumer group {group!r} has no connected consumer (broker {addr}) — "
            "start a consumer of the group, or check the group name",
            code=CONSUMER_NOT_ONLINE,
        )
    return dict(body)


@subcommand(
    "updateSubGroup",
    "Update or create subscription group",
    broker_or_cluster("create the group on this broker", "create it on every master of this"),
    arg("-g", "--groupName", required=True, help="consumer group name"),
    arg("-s", "--consumeEnable", type=parse_bool, metavar="BOOL", help="consume enable (true)"),
    arg(
        "-m",
        "--consumeFromMinEnable",
        type=parse_bool,
        metavar="BOOL",
        help="from min offset (false)",
    ),
    arg(
        "-d", "--consumeBroadcastEnable", type=parse_bool, metavar="BOOL", help="broadcast (false)"
    ),
    arg("-q", "--retryQueueNums", type=int, metavar="N", help="retry queue nums (1)"),
    arg("-r", "--retryMaxTimes", type=int, metavar="N", help="retry max times (16)"),
    arg("-i", "--brokerId", type=int, metavar="ID", help="consume from which broker id (0)"),
    arg(
        "-w",
        "--whichBrokerWhenConsumeSlowly",
        type=int,
        metavar="ID",
        help="which broker id when consume slowly (1)",
    ),
    arg(
        "-a",
        "--notifyConsumerIdsChanged",
        type=parse_bool,
        metavar="BOOL",
        help="notify consumer ids changed (true)",
    ),
)
def update_sub_group(admin: Admin, args: argparse.Namespace) -> Result:
    # mqadmin's defaults: SubscriptionGroupConfig's, with broadcast and from-min switched off.
    config: dict[str, Any] = {
        "groupName": args.groupName.strip(),
        "consumeEnable": True,
        "consumeFromMinEnable": False,
        "consumeBroadcastEnable": False,
        "retryQueueNums": 1,
        "retryMaxTimes": 16,
        "brokerId": 0,
        "whichBrokerWhenConsumeSlowly": 1,
        "notifyConsumerIdsChangedEnable": True,
    }
    for option, key in (
        ("consumeEnable", "consumeEnable"),
        ("consumeFromMinEnable", "consumeFromMinEnable"),
        ("consumeBroadcastEnable", "consumeBroadcastEnable"),
        ("retryQueueNums", "retryQueueNums"),
        ("retryMaxTimes", "retryMaxTimes"),
        ("brokerId", "brokerId"),
        ("whichBrokerWhenConsumeSlowly", "whichBrokerWhenConsumeSlowly"),
        ("notifyConsumerIdsChanged", "notifyConsumerIdsChangedEnable"),
    ):
        value = getattr(args, option)
        if value is not None:
            config[key] = value
    addrs = admin.masters(args.brokerAddr, args.clusterName)
    body = json.dumps(config, separators=(",", ":")).encode()
    for addr in addrs:
        admin.broker(addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
    lines = [f"create subscription group to {addr} success." for addr in addrs]
    lines.append(
        "SubscriptionGroupConfig ["
        + ", ".join(
            f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in config.items()
        )
        + "]"
    )
    return Result({"brokers": addrs, "subscriptionGroupConfig": config}, lines)


@subcommand(
    "consumerProgress",
    "Query consumers's progress, speed",
    arg("-g", "--groupName", help="consumer group name (without it: every group's summary)"),
    arg("-t", "--topicName", help="only this topic of the group"),
)
def consumer_progress(admin: Admin, args: argparse.Namespace) -> Result:
    if not args.groupName:
        return _all_groups_progress(admin)
    group = args.groupName.strip()
    topic = args.topicName.strip() if args.topicName else None
    tps, offsets = consume_stats(admin, group, topic)
    if topic:
        offsets = {mq: o for mq, o in offsets.items() if mq.topic == topic}
    if not offsets:
        raise BrokerResponseError(
            f"consumer group {group!r} has no consume stats"
            + (f" for topic {topic!r}" if topic else "")
            + " — it has not consumed anything yet, or the group name is wrong",
            code=CONSUMER_NOT_ONLINE,
        )
    rows: list[dict[str, Any]] = []
    for mq in sorted(offsets):
        o = offsets[mq]
        broker_offset = int(o.get("brokerOffset", 0))
        consumer_offset = int(o.get("consumerOffset", 0))
        rows.append(
            {
                "topic": mq.topic,
                "brokerName": mq.broker_name,
                "queueId": mq.queue_id,
                "brokerOffset": broker_offset,
                "consumerOffset": consumer_offset,
                "diff": broker_offset - consumer_offset,
                "lastTimestamp": int(o.get("lastTimestamp", 0)),
            }
        )
    diff_total = sum(r["diff"] for r in rows)
    lines = table(
        ("Topic", "Broker Name", "QID", "Broker Offset", "Consumer Offset", "Diff", "LastTime"),
        (
            (
                r["topic"],
                r["brokerName"],
                r["queueId"],
                r["brokerOffset"],
                r["consumerOffset"],
                r["diff"],
                date_time(r["lastTimestamp"]) if r["lastTimestamp"] else "N/A",
            )
            for r in rows
        ),
    )
    lines += ["", f"Consume TPS: {tps:.2f}", f"Diff Total: {diff_total}"]
    data = {"group": group, "consumeTps": tps, "diffTotal": diff_total, "queues": rows}
    return Result(data, lines)


def _all_groups_progress(admin: Admin) -> Result:
    """One line per group (groups are found by their retry topics, as mqadmin finds them)."""
    rows: list[dict[str, Any]] = []
    warnings = []
    for topic in admin.topic_list():
        if not topic.startswith(RETRY_PREFIX):
            continue
        group = topic[len(RETRY_PREFIX) :]
        row: dict[str, Any] = {
            "group": group,
            "count": 0,
            "version": "OFFLINE",
            "type": "",
            "model": "",
            "consumeTps": 0,
            "diffTotal": 0,
        }
        try:
            tps, offsets = consume_stats(admin, group, None)
            row["consumeTps"] = int(tps)
            row["diffTotal"] = sum(
                int(o.get("brokerOffset", 0)) - int(o.get("consumerOffset", 0))
                for o in offsets.values()
            )
        except RequestCodeNotSupportedError as exc:
            warnings.append(str(exc))
        except RmqError:
            pass
        try:
            cc = consumer_connection(admin, group)
        except RequestCodeNotSupportedError as exc:
            warnings.append(str(exc))
        except RmqError:
            pass  # offline: no connection
        else:
            conns = cc.get("connectionSet") or []
            row["count"] = len(conns)
            row["version"] = version_desc(min(int(c.get("version", 0)) for c in conns))
            passive = cc.get("consumeType") == "CONSUME_PASSIVELY"
            row["type"] = "PUSH" if passive else "PULL"
            row["model"] = str(cc.get("messageModel") or "") if passive else ""
        rows.append(row)
    lines = table(
        ("Group", "Count", "Version", "Type", "Model", "TPS", "Diff Total"),
        (
            (
                r["group"],
                r["count"],
                r["version"],
                r["type"],
                r["model"],
                r["consumeTps"],
                r["diffTotal"],
            )
            for r in rows
        ),
    )
    return Result({"groups": rows}, lines, sorted(set(warnings)))


@subcommand(
    "consumerConnection",
    "Query consumer's socket connection, client version and subscription",
    arg("-g", "--consumerGroup", required=True, help="consumer group name"),
    arg("-b", "--brokerAddr", metavar="ADDR", help="ask this broker"),
)
def consumer_connection_cmd(admin: Admin, args: argparse.Namespace) -> Result:
    addr = admin.broker_addr(args.brokerAddr) if args.brokerAddr else None
    cc = consumer_connection(admin, args.consumerGroup.strip(), addr)
    conns = sorted(cc.get("connectionSet") or [], key=lambda c: str(c.get("clientId", "")))
    lines = table(
        ("ClientId", "ClientAddr", "Language", "Version"),
        (
            (
                c.get("clientId", ""),
                c.get("clientAddr", ""),
                c.get("language", ""),
                version_desc(int(c.get("version", 0))),
            )
            for c in conns
        ),
    )
    subs = cc.get("subscriptionTable") or {}
    lines += ["", "Below is subscription:"]
    lines += table(
        ("Topic", "SubExpression"),
        ((s.get("topic", t), s.get("subString", "")) for t, s in sorted(subs.items())),
    )
    lines += [
        "",
        f"ConsumeType: {cc.get('consumeType')}",
        f"MessageModel: {cc.get('messageModel')}",
        f"ConsumeFromWhere: {cc.get('consumeFromWhere')}",
    ]
    return Result(cc, lines)


def route_in_cluster(admin: Admin, topic: str, cluster: str | None) -> TopicRoute:
    """The topic's route, cut down to the brokers of ``cluster`` when one is named (mqadmin's
    ``-c`` of the offset commands); AdminError when none of them holds the topic."""
    route = admin.route(topic)
    if not cluster:
        return route
    names = {b.broker_name for b in admin.cluster_info().brokers_of(cluster.strip())}
    kept = tuple(b for b in route.broker_datas if b.broker_name in names)
    if not kept:
        raise AdminError(
            f"no broker of cluster {cluster.strip()!r} holds topic {topic!r} — check -c against "
            f"rmq topicClusterList -t {topic}"
        )
    queues = tuple(q for q in route.queue_datas if q.broker_name in names)
    return TopicRoute(topic, queues, kept, route.raw)


@subcommand(
    "resetOffsetByTime",
    "Reset consumer offset by timestamp (without client restart)",
    arg("-g", "--group", required=True, help="consumer group"),
    arg("-t", "--topic", required=True, help="topic"),
    arg(
        "-s",
        "--timestamp",
        required=True,
        type=timestamp_or_now_arg,
        help=f"where to reset to: now, or {TIMESTAMP_FORMAT_HELP}",
    ),
    arg(
        "-f",
        "--force",
        type=parse_bool,
        default=True,
        metavar="{true,false}",
        help="also move offsets forward (default: true); false only rolls back",
    ),
)
def reset_offset_by_time(admin: Admin, args: argparse.Namespace) -> Result:
    group, topic = args.group.strip(), args.topic.strip()
    timestamp = parse_timestamp(args.timestamp, allow_now=True)
    route = route_in_cluster(admin, topic, getattr(args, "clusterName", None))
    header = {
        "topic": topic,
        "group": group,
        "timestamp": str(timestamp),
        "isForce": str(args.force).lower(),
    }
    title = (
        f"rollback consumer offset by specified group[{group}], topic[{topic}], "
        f"force[{str(args.force).lower()}], timestamp(string)[{args.timestamp}], "
        f"timestamp(long)[{timestamp}]"
    )
    offsets: dict[MessageQueue, int] = {}
    fallback_reason = None
    for b in route.broker_datas:
        addr = b.select_addr()
        if addr is None:
            continue
        # The broker resets and tells the group's online consumers (INVOKE_BROKER_TO_RESET_OFFSET).
        resp = admin.broker(
            addr,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
            header,
            accept=(CONSUMER_NOT_ONLINE, ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
        )
        if resp.code != ResponseCode.SUCCESS:
            fallback_reason = resp.code
            break
        body = fastjson.loads(resp.body) if resp.body else {}
        for key, offset in (body.get("offsetTable") or {}).items():
            offsets[fastjson.message_queue_key(key)] = int(offset)
    if fallback_reason is not None:
        return _reset_offline(admin, group, route, timestamp, args.force, title, fallback_reason)
    rows = [
        {"brokerName": mq.broker_name, "queueId": mq.queue_id, "offset": off}
        for mq, off in sorted(offsets.items())
    ]
    lines = [
        title,
        *table(
            ("brokerName", "queueId", "offset"),
            ((r["brokerName"], r["queueId"], r["offset"]) for r in rows),
        ),
    ]
    data = {
        "group": group,
        "topic": topic,
        "timestamp": timestamp,
        "mode": "online",
        "queues": rows,
    }
    return Result(data, lines)


def _reset_offline(
    admin: Admin,
    group: str,
    route: TopicRoute,
    timestamp: int,
    force: bool,
    title: str,
    reason: int,
) -> Result:
    """Set the stored offsets queue by queue (mqadmin's ``resetOffsetByTimestampOld``), for a
    group with no consumer online, or a broker that does not serve
    INVOKE_BROKER_TO_RESET_OFFSET. Consumers started later begin at the new offsets."""
    topic = route.topic
    rows: list[dict[str, Any]] = []
    for b, queue_id in route.read_queues():
        addr = b.select_addr()
        assert addr is not None
        q = {"topic": topic, "queueId": str(queue_id)}
        broker_offset = int(admin.broker(addr, RequestCode.GET_MAX_OFFSET, q).ext_fields["offset"])
        current = admin.broker(
            addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": group, **q},
            accept=(ResponseCode.QUERY_NOT_FOUND,),
        )
        if current.code == ResponseCode.SUCCESS:
            consumer_offset = int(current.ext_fields.get("offset", "0"))
        else:
            consumer_offset = int(
                admin.broker(addr, RequestCode.GET_MIN_OFFSET, q).ext_fields["offset"]
            )
        if timestamp == -1:
            target = broker_offset
        else:
            found = admin.broker(
                addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**q, "timestamp": str(timestamp)}
            )
            target = int(found.ext_fields["offset"])
        rollback = consumer_offset
        if force or target <= consumer_offset:
            rollback = target
            admin.broker(
                addr,
                RequestCode.UPDATE_CONSUMER_OFFSET,
                {"consumerGroup": group, **q, "commitOffset": str(target)},
            )
        rows.append(
            {
                "brokerName": b.broker_name,
                "queueId": queue_id,
                "brokerOffset": broker_offset,
                "consumerOffset": consumer_offset,
                "timestampOffset": target,
                "rollbackOffset": rollback,
            }
        )
    if reason == CONSUMER_NOT_ONLINE:
        note = "no consumer of the group is online: the stored offsets were set directly"
    else:
        note = (
            "the broker does not serve INVOKE_BROKER_TO_RESET_OFFSET: the stored offsets were "
            "set directly; consumers running now keep their own offsets, restart them"
        )
    lines = [
        title,
        *table(
            (
                "brokerName",
                "queueId",
                "brokerOffset",
                "consumerOffset",
                "timestampOffset",
                "rollbackOffset",
            ),
            (tuple(r.values()) for r in rows),
        ),
        "",
        note,
    ]
    data = {
        "group": group,
        "topic": topic,
        "timestamp": timestamp,
        "mode": "offline",
        "note": note,
        "queues": rows,
    }
    return Result(data, lines)


@subcommand(
    "deleteSubGroup",
    "Delete subscription group from broker.",
    broker_or_cluster("delete from this broker", "delete from every master"),
    arg("-g", "--groupName", required=True, help="subscription group name"),
    arg(
        "-r",
        "--removeOffset",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="also remove the group's committed offsets (default: false)",
    ),
)
def delete_sub_group(admin: Admin, args: argparse.Namespace) -> Result:
    group = args.groupName.strip()
    addrs = admin.masters(args.brokerAddr, args.clusterName)
    ext = {"groupName": group, "removeOffset": str(args.removeOffset).lower()}
    for addr in addrs:
        admin.broker(addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, ext)
    lines = [f"delete subscription group [{group}] from broker [{addr}] success." for addr in addrs]
    return Result({"group": group, "removeOffset": args.removeOffset, "brokers": addrs}, lines)


@subcommand(
    "producerConnection",
    "Query producer's socket connection and client version",
    arg("-g", "--producerGroup", required=True, help="producer group name"),
    arg("-t", "--topic", required=True, help="a topic the group sends to (finds its brokers)"),
)
def producer_connection(admin: Admin, args: argparse.Namespace) -> Result:
    group = args.producerGroup.strip()
    conns: list[dict[str, Any]] = []
    warnings: list[str] = []
    for b in admin.route(args.topic.strip()).broker_datas:
        addr = b.master_addr
        if addr is None:
            continue
        try:
            body = admin.broker_json(
                addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group}
            )
        except RmqError as exc:
            warnings.append(f"{addr}: {exc}")
            continue
        conns.extend(body.get("connectionSet") or [])
    if not conns:
        raise AdminError(
            f"producer group {group} has no connection to the brokers of topic {args.topic}: "
            + ("; ".join(warnings) or "none of them knows it")
        )
    lines = table(
        ("ClientId", "ClientAddr", "Language", "Version"),
        (
            (
                c.get("clientId", ""),
                c.get("clientAddr", ""),
                c.get("language", ""),
                version_desc(int(c.get("version", 0))),
            )
            for c in sorted(conns, key=lambda c: str(c.get("clientId", "")))
        ),
    )
    return Result({"connectionSet": conns}, lines, warnings)
