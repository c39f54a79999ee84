"""Sub-commands on where a topic lives and who reads it: its permission per broker
(``updateTopicPerm``), the clusters holding it (``topicClusterList``), its ordered-queue
configuration on the nameservers (``updateOrderConf``) and how the averaging strategy would
share its queues among consumers (``allocateMQ``)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rmq.admin.client import MASTER_ID, Admin, AdminError, QueueData, TopicRoute
from rmq.admin.command import arg, one_of, subcommand
from rmq.admin.commands.topic import DEFAULT_TOPIC, ORDER_TOPIC_CONFIG_NAMESPACE, _perm_name
from rmq.admin.output import Result
from rmq.client.allocate import AllocateMessageQueueAveragely
from rmq.client.message_queue import MessageQueue
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import QueryNotFoundError

__all__: list[str] = []


def _topic_config_line(topic: str, q: QueueData, perm: int) -> str:
    """RocketMQ's ``TopicConfig.toString``."""
    return (
        f"TopicConfig [topicName={topic}, readQueueNums={q.read_queue_nums}, "
        f"writeQueueNums={q.write_queue_nums}, perm={_perm_name(perm)}, "
        f"topicFilterType=SINGLE_TAG, topicSysFlag={q.topic_sys_flag}, order=false]"
    )


def _set_perm(admin: Admin, addr: str, topic: str, q: QueueData, perm: int) -> None:
    """UPDATE_AND_CREATE_TOPIC with the broker's queue counts and the new perm."""
    header = {
        "topic": topic,
        "defaultTopic": DEFAULT_TOPIC,
        "readQueueNums": str(q.read_queue_nums),
        "writeQueueNums": str(q.write_queue_nums),
        "perm": str(perm),
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": str(q.topic_sys_flag),
        "order": "false",
    }
    admin.broker(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)


def _queue_data(route: TopicRoute, broker_name: str) -> QueueData | None:
    return next((q for q in route.queue_datas if q.broker_name == broker_name), None)


@subcommand(
    "updateTopicPerm",
    "Update topic perm",
    one_of(
        arg("-b", "--brokerAddr", metavar="ADDR", help="the master broker to change it on"),
        arg("-c", "--clusterName", metavar="CLUSTER", help="change it on every master of this"),
    ),
    arg("-t", "--topic", required=True, help="topic name"),
    arg(
        "-p",
        "--perm",
        type=int,
        required=True,
        choices=(2, 4, 6),
        help="the topic's permission: 2 write, 4 read, 6 read and write",
    ),
)
def update_topic_perm(admin: Admin, args: argparse.Namespace) -> Result:
    topic, perm = args.topic.strip(), args.perm
    route = admin.route(topic)
    if not route.queue_datas:
        raise AdminError(f"topic {topic!r} has no queues in its route (rmq topicRoute -t {topic})")
    if args.brokerAddr:
        addr = admin.broker_addr(args.brokerAddr)
        broker = next((b for b in route.broker_datas if b.addrs.get(MASTER_ID) == addr), None)
        q = _queue_data(route, broker.broker_name) if broker else None
        if broker is None or q is None:
            masters = ", ".join(a for b in route.broker_datas if (a := b.master_addr)) or "none"
            raise AdminError(
                f"{addr} is not a master broker of topic {topic!r} (its masters: {masters}) — "
                "-b takes the address of a master that holds the topic"
            )
        data: dict[str, Any] = {"topic": topic, "perm": perm, "brokers": []}
        if q.perm == perm:
            return Result({**data, "unchanged": True}, ["new perm equals to the old one!"])
        _set_perm(admin, addr, topic, q, perm)
        data["brokers"].append({"addr": addr, "oldPerm": q.perm})
        lines = [
            f"update topic perm from {q.perm} to {perm} in {addr} success.",
            f"{_topic_config_line(topic, q, perm)}.",
        ]
        return Result(data, lines)
    info = admin.cluster_info()
    lines = []
    changed = []
    for b in info.brokers_of(args.clusterName.strip()):
        master = b.master_addr
        q = _queue_data(route, b.broker_name)
        if master is None or q is None:
            continue  # the topic is not on this broker: mqadmin's copy would create it there
        _set_perm(admin, master, topic, q, perm)
        changed.append({"addr": master, "oldPerm": q.perm})
        lines.append(f"update topic perm from {q.perm} to {perm} in {master} success.")
    if not changed:
        raise AdminError(
            f"no master of cluster {args.clusterName.strip()!r} holds topic {topic!r} — check "
            f"-c against rmq topicClusterList -t {topic}"
        )
    return Result({"topic": topic, "perm": perm, "brokers": changed}, lines)


@subcommand(
    "topicClusterList",
    "get cluster info for topic",
    arg("-t", "--topic", required=True, help="topic name"),
)
def topic_cluster_list(admin: Admin, args: argparse.Namespace) -> Result:
    route = admin.route(args.topic.strip())
    info = admin.cluster_info()
    clusters = sorted(
        {info.cluster_of(b.broker_name) or b.cluster for b in route.broker_datas} - {""}
    )
    return Result({"topic": route.topic, "clusters": clusters}, clusters)


@subcommand(
    "updateOrderConf",
    "Create or update or delete order conf",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-v", "--orderConf", help="order conf, e.g. brokerName1:num;brokerName2:num (for put)"),
    arg("-m", "--method", required=True, choices=("put", "get", "delete"), help="what to do"),
)
def update_order_conf(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    kv = {"namespace": ORDER_TOPIC_CONFIG_NAMESPACE, "key": topic}
    if args.method == "get":
        try:
            _, resp = admin.namesrv(RequestCode.GET_KV_CONFIG, kv)
        except QueryNotFoundError:
            raise QueryNotFoundError(
                f"the nameserver has no order conf for topic {topic!r} — set one with "
                f"rmq updateOrderConf -t {topic} -m put -v brokerName:queues",
                code=ResponseCode.QUERY_NOT_FOUND,
            ) from None
        value = resp.ext_fields.get("value", "")
        line = f"get orderConf success. topic=[{topic}], orderConf=[{value}]"
        return Result({"topic": topic, "orderConf": value}, [line])
    if args.method == "put":
        conf = (args.orderConf or "").strip()
        if not conf:
            raise AdminError("please set orderConf with option -v (e.g. -v broker-a:4;broker-b:4)")
        for part in conf.split(";"):
            name, sep, num = part.partition(":")
            if not name.strip() or not sep or not num.strip().isdigit():
                raise AdminError(
                    f"order conf {conf!r} is not brokerName:queues;brokerName:queues (bad part "
                    f"{part!r})"
                )
        admin.every_namesrv(RequestCode.PUT_KV_CONFIG, {**kv, "value": conf})
        line = f"update orderConf success. topic=[{topic}], orderConf=[{conf}]"
        return Result({"topic": topic, "orderConf": conf}, [line])
    admin.every_namesrv(RequestCode.DELETE_KV_CONFIG, kv)
    return Result(
        {"topic": topic, "orderConf": None}, [f"delete orderConf success. topic=[{topic}]"]
    )


@subcommand(
    "allocateMQ",
    "Allocate MQ",
    arg("-t", "--topic", required=True, help="topic name"),
    arg("-i", "--ipList", required=True, help="consumer ids (ips), comma separated"),
)
def allocate_mq(admin: Admin, args: argparse.Namespace) -> Result:
    topic = args.topic.strip()
    ips = [ip.strip() for ip in args.ipList.split(",") if ip.strip()]
    if not ips:
        raise AdminError("-i names no consumer: give ips like 10.0.0.1,10.0.0.2")
    route = admin.route(topic)
    mqs = [MessageQueue(topic, b.broker_name, qid) for b, qid in route.read_queues()]
    if not mqs:
        raise AdminError(f"topic {topic!r} has no readable queue to allocate")
    strategy = AllocateMessageQueueAveragely()
    result = {
        ip: [
            {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic}
            for mq in strategy.allocate("aa", ip, mqs, ips)
        ]
        for ip in ips
    }
    data = {"result": result}
    return Result(data, [json.dumps(data, separators=(",", ":"))])
