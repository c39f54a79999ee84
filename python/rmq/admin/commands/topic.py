"""Topic sub-commands: create or update, delete, list, route and per-queue status."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rmq import fastjson
from rmq._rmq import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
)
from rmq.admin.client import (
    PERM_READ,
    PERM_WRITE,
    Admin,
    AdminError,
)
from rmq.admin.command import arg, broker_or_cluster, subcommand
from rmq.admin.output import Result, human_time, parse_bool, table
from rmq.client.message_queue import MessageQueue
from rmq.codes import RequestCode
from rmq.errors import RmqError

DEFAULT_TOPIC = AUTO_CREATE_TOPIC_KEY_TOPIC
"""The template topic UPDATE_AND_CREATE_TOPIC names (RocketMQ's ``createTopicKey``)."""
ORDER_TOPIC_CONFIG_NAMESPACE = "ORDER_TOPIC_CONFIG"
RETRY_PREFIX = RETRY_GROUP_TOPIC_PREFIX
DLQ_PREFIX = DLQ_GROUP_TOPIC_PREFIX


def _perm_name(perm: int) -> str:
    """RocketMQ's ``PermName.perm2String``: ``RW-``, ``R--``, ..."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & 1 else "-")
    )


BROKER_OR_CLUSTER = broker_or_cluster(
    "the broker to send the change to", "send the change to every master of it"
)


@subcommand(
    "updateTopic",
    "Update or create topic",
    BROKER_OR_CLUSTER,
    arg("-t", "--topic", required=True, help="topic name"),
    arg(
        "-r",
        "--readQueueNums",
        type=int,
        default=8,
        metavar="N",
        help="read queue nums (default: 8)",
    ),
    arg(
        "-w",
        "--writeQueueNums",
        type=int,
        default=8,
        metavar="N",
        help="write queue nums (default: 8)",
    ),
    arg(
        "-p",
        "--perm",
        type=int,
        default=PERM_READ | PERM_WRITE,
        choices=(2, 4, 6),
        help="permission: 2 write, 4 read, 6 read and write (default: 6)",
    ),
    arg(
        "-o",
        "--order",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="ordered topic: also set its order conf on the nameservers (default: false)",
    ),
)
def update_topic(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    if args.readQueueNums < 1 or args.writeQueueNums < 1:
        raise AdminError("-r and -w must be at least 1")
    config: dict[str, Any] = {
        "topicName": topic,
        "readQueueNums": args.readQueueNums,
        "writeQueueNums": args.writeQueueNums,
        "perm": args.perm,
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": 0,
        "order": args.order,
    }
    header = {
        "topic": topic,
        "defaultTopic": DEFAULT_TOPIC,
        "readQueueNums": str(args.readQueueNums),
        "writeQueueNums": str(args.writeQueueNums),
        "perm": str(args.perm),
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": str(args.order).lower(),
    }
    addrs = admin.masters(args.brokerAddr, args.clusterName)
    lines: list[str] = []
    for addr in addrs:
        admin.broker(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        lines.append(f"create topic to {addr} success.")
    order_conf = None
    if args.order:
        # Ordered topics name their queues per broker on the nameservers:
        # "brokerName:writeQueueNums;..." (RocketMQ's createOrUpdateOrderConf).
        info = admin.cluster_info()
        names = sorted({info.broker_name_of(a) or a for a in addrs})
        order_conf = ";".join(f"{n}:{args.writeQueueNums}" for n in names)
        kv = {"namespace": ORDER_TOPIC_CONFIG_NAMESPACE, "key": topic, "value": order_conf}
        admin.every_namesrv(RequestCode.PUT_KV_CONFIG, kv)
        lines.append(f"set orderConf. isOrder=true, orderConf=[{order_conf}]")
    lines.append(
        f"TopicConfig [topicName={topic}, readQueueNums={args.readQueueNums}, "
        f"writeQueueNums={args.writeQueueNums}, perm={_perm_name(args.perm)}, "
        f"topicFilterType=SINGLE_TAG, topicSysFlag=0, order={str(args.order).lower()}]"
    )
    data = {"brokers": addrs, "topicConfig": config, "orderConf": order_conf}
    return Result(data, lines)


@subcommand(
    "deleteTopic",
    "Delete topic from broker and NameServer",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-c", "--clusterName", required=True, metavar="CLUSTER", help="delete from this cluster"),
)
def delete_topic(admin: Admin, args: argparse.Namespace) -> Result:
    topic, cluster = args.topic.strip(), args.clusterName.strip()
    masters = admin.cluster_info().master_addrs(cluster)
    for addr in masters:
        admin.broker(addr, RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": topic})
    namesrvs = admin.every_namesrv(
        RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": topic, "clusterName": cluster}
    )
    lines = [
        f"delete topic [{topic}] from cluster [{cluster}] success.",
        f"delete topic [{topic}] from NameServer success.",
    ]
    data = {
        "topic": topic,
        "cluster": cluster,
        "brokers": masters,
        "nameservers": [a for a, _ in namesrvs],
    }
    return Result(data, lines)


@subcommand(
    "topicList",
    "Fetch all topic list from name server",
    arg(
        "-c",
        "--clusterModel",
        action="store_true",
        help="also show each topic's cluster and consumer groups",
    ),
)
def topic_list(admin: Admin, args: argparse.Namespace) -> Result:
    topics = admin.topic_list()
    if not args.clusterModel:
        return Result({"topicList": topics}, topics)
    info = admin.cluster_info()
    rows: list[dict[str, Any]] = []
    for topic in topics:
        if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            continue
        cluster, groups = "", []
        try:
            route = admin.route(topic)
            if route.broker_datas:
                first = route.broker_datas[0]
                cluster = info.cluster_of(first.broker_name) or first.cluster
                addr = first.select_addr()
                if addr:
                    body = admin.broker_json(
                        addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic}
                    )
                    groups = sorted(str(g) for g in body.get("groupList") or ())
        except RmqError:
            pass  # mqadmin prints the topic without cluster or groups then, too
        rows.append({"cluster": cluster, "topic": topic, "consumerGroups": groups})
    lines = table(
        ("Cluster Name", "Topic", "Consumer Group"),
        ((r["cluster"], r["topic"], g) for r in rows for g in (r["consumerGroups"] or [""])),
    )
    return Result({"topics": rows}, lines)


@subcommand(
    "topicRoute",
    "Examine topic route info",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-l", "--list", action="store_true", help="print a table instead of the route JSON"),
)
def topic_route(admin: Admin, args: argparse.Namespace) -> Result:
    route = admin.route(args.topic.strip())
    if not args.list:
        return Result(route.raw, json.dumps(route.raw, indent=2).splitlines())
    rows = []
    total_read = total_write = 0
    for b in route.broker_datas:
        q = next((q for q in route.queue_datas if q.broker_name == b.broker_name), None)
        if q is None:
            continue
        total_read += q.read_queue_nums
        total_write += q.write_queue_nums
        addrs = "{" + ", ".join(f"{i}={a}" for i, a in sorted(b.addrs.items())) + "}"
        rows.append(
            (b.cluster, b.broker_name, addrs, q.read_queue_nums, q.write_queue_nums, q.perm)
        )
    lines = table(
        ("ClusterName", "BrokerName", "BrokerAddrs", "ReadQueue", "WriteQueue", "Perm"), rows
    )
    lines.append("-" * max(len(line) for line in lines))
    lines.append(
        f"Total: {len(rows)} brokers, {total_read} read queues, {total_write} write queues"
    )
    return Result(route.raw, lines)


@subcommand(
    "topicStatus",
    "Examine topic Status info",
    arg("-t", "--topic", required=True, help="topic name"),
)
def topic_status(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    route = admin.route(topic)
    stats: dict[MessageQueue, dict[str, Any]] = {}
    for b in route.broker_datas:
        addr = b.select_addr()
        if addr is None:
            continue
        body = admin.broker_json(addr, RequestCode.GET_TOPIC_STATS_INFO, {"topic": topic})
        for key, offsets in (body.get("offsetTable") or {}).items():
            stats[fastjson.message_queue_key(key)] = offsets
    if not stats:
        raise AdminError(f"no broker holds stats of topic {topic!r} (its route has no queues)")
    rows: list[dict[str, Any]] = []
    for mq in sorted(stats):
        o = stats[mq]
        last = int(o.get("lastUpdateTimestamp", 0))
        rows.append(
            {
                "brokerName": mq.broker_name,
                "queueId": mq.queue_id,
                "minOffset": int(o.get("minOffset", 0)),
                "maxOffset": int(o.get("maxOffset", 0)),
                "lastUpdateTimestamp": last,
            }
        )
    lines = table(
        ("Broker Name", "QID", "Min Offset", "Max Offset", "Last Updated"),
        (
            (
                r["brokerName"],
                r["queueId"],
                r["minOffset"],
                r["maxOffset"],
                human_time(r["lastUpdateTimestamp"]) if r["lastUpdateTimestamp"] > 0 else "",
            )
            for r in rows
        ),
    )
    return Result({"topic": topic, "queues": rows}, lines)
