"""What a consumer group's clients report about themselves and what its brokers hold for it:
``consumerStatus`` (GET_CONSUMER_RUNNING_INFO, relayed by the broker to each client: its
properties, subscriptions, queues and offsets, optionally its thread stacks) and
``getConsumerConfig`` (GET_SUBSCRIPTIONGROUP_CONFIG on every broker)."""

from __future__ import annotations

import argparse
from typing import Any

from rmq import fastjson
from rmq.admin.client import Admin, AdminError
from rmq.admin.command import arg, subcommand
from rmq.admin.commands.consumer import _group_brokers, consumer_connection, version_desc
from rmq.admin.output import Result
from rmq.codes import RequestCode, ResponseCode

# SubscriptionGroupConfig's fields in Java's declaration order (what mqadmin prints).
GROUP_CONFIG_FIELDS = (
    "groupName",
    "consumeEnable",
    "consumeFromMinEnable",
    "consumeBroadcastEnable",
    "retryQueueNums",
    "retryMaxTimes",
    "brokerId",
    "whichBrokerWhenConsumeSlowly",
    "notifyConsumerIdsChangedEnable",
)


def running_info(
    admin: Admin, addr: str, group: str, client_id: str, jstack: bool
) -> dict[str, Any]:
    """GET_CONSUMER_RUNNING_INFO of one client, through the broker at ``addr``."""
    ext = {"consumerGroup": group, "clientId": client_id, "jstackEnable": str(jstack).lower()}
    body = admin.broker_json(addr, RequestCode.GET_CONSUMER_RUNNING_INFO, ext)
    if not isinstance(body, dict):
        raise AdminError(f"client {client_id} answered a ConsumerRunningInfo that is not an object")
    return body


def _java_value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def format_running_info(info: dict[str, Any]) -> list[str]:
    """``ConsumerRunningInfo.formatString()``'s layout."""
    lines = ["#Consumer Properties#"]
    lines += [f"{k:<40}: {v}" for k, v in sorted((info.get("properties") or {}).items())]
    lines += ["", "", "#Consumer Subscription#"]
    subs = sorted(info.get("subscriptionSet") or [], key=lambda s: str(s.get("topic", "")))
    for i, s in enumerate(subs, 1):
        lines.append(
            f"{i:03d} Topic: {s.get('topic', ''):<40} ClassFilter: "
            f"{_java_value(s.get('classFilterMode', False)):<8} SubExpression: "
            f"{s.get('subString', '')}"
        )
    queues = sorted(
        ((fastjson.message_queue_key(k), v) for k, v in (info.get("mqTable") or {}).items()),
        key=lambda kv: kv[0],
    )
    lines += ["", "", "#Consumer Offset#"]
    lines.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#Consumer Offset':<20}")
    for mq, pq in queues:
        lines.append(
            f"{mq.topic:<32}  {mq.broker_name:<32}  {mq.queue_id:<4}  "
            f"{pq.get('commitOffset', 0):<20}"
        )
    lines += ["", "", "#Consumer MQ Detail#"]
    lines.append(f"{'#Topic':<64}  {'#Broker Name':<32}  {'#QID':<4}  {'#ProcessQueueInfo':<20}")
    for mq, pq in queues:
        detail = ", ".join(f"{k}={_java_value(v)}" for k, v in sorted(pq.items()))
        lines.append(
            f"{mq.topic:<64}  {mq.broker_name:<32}  {mq.queue_id:<4}  ProcessQueueInfo [{detail}]"
        )
    lines += ["", "", "#Consumer RT&TPS#"]
    lines.append(
        f"{'#Topic':<64}  {'#Pull RT':>14} {'#Pull TPS':>14} {'#Consume RT':>14} "
        f"{'#ConsumeOK TPS':>14} {'#ConsumeFailed TPS':>18} {'#ConsumeFailedMsgsInHour':>25}"
    )
    for topic, st in sorted((info.get("statusTable") or {}).items()):
        rates = [float(st.get(k, 0)) for k in ("pullRT", "pullTPS", "consumeRT", "consumeOKTPS")]
        failed_tps = float(st.get("consumeFailedTPS", 0))
        lines.append(
            f"{topic:<32}  "
            + " ".join(f"{r:14.2f}" for r in rates)
            + f" {failed_tps:18.2f} {int(st.get('consumeFailedMsgs', 0)):25d}"
        )
    if info.get("jstack") is not None:
        lines += ["", "", "#Consumer jstack#", str(info["jstack"])]
    return lines


def rebalance_ok(infos: dict[str, dict[str, Any]]) -> bool:
    """No queue held by two clients at once (clustering; RocketMQ's ``analyzeRebalance``)."""
    seen: set[str] = set()
    for info in infos.values():
        if (info.get("properties") or {}).get("messageModel") == "BROADCASTING":
            return True
        for key in info.get("mqTable") or {}:
            if key in seen:
                return False
            seen.add(key)
    return True


@subcommand(
    "consumerStatus",
    "Query consumer's internal data structure",
    arg("-g", "--consumerGroup", required=True, help="consumer group name"),
    arg("-i", "--clientId", help="The consumer's client id"),
    arg("-b", "--brokerAddr", metavar="ADDR", help="broker address"),
    arg(
        "-s",
        "--jstack",
        action="store_true",
        help="Run jstack command in the consumer progress",
    ),
)
def consumer_status(admin: Admin, args: argparse.Namespace) -> Result:
    group = args.consumerGroup.strip()
    addr = admin.broker_addr(args.brokerAddr) if args.brokerAddr else None
    if addr is None:
        brokers = _group_brokers(admin, group, None)
        if not brokers or brokers[0].select_addr() is None:
            raise AdminError(f"no broker serves consumer group {group!r}")
        addr = brokers[0].select_addr()
    assert addr is not None
    if args.clientId:
        info = running_info(admin, addr, group, args.clientId.strip(), args.jstack)
        return Result({args.clientId.strip(): info}, format_running_info(info))
    cc = consumer_connection(admin, group, addr)
    infos: dict[str, dict[str, Any]] = {}
    lines = [f"{'#Index':<10} {'#ClientId':<40} {'#Version':<20} #ConsumerRunningInfo"]
    warnings: list[str] = []
    conns = sorted(cc.get("connectionSet") or [], key=lambda c: str(c.get("clientId", "")))
    for conn in conns:
        client_id = str(conn.get("clientId", ""))
        try:
            infos[client_id] = running_info(admin, addr, group, client_id, args.jstack)
        except Exception as exc:  # one client failing must not hide the others
            warnings.append(f"client {client_id}: {exc}")
            continue
        version = version_desc(int(conn.get("version", 0)))
        lines.append(f"{len(infos):<10} {client_id:<40} {version:<20} (below)")
    subscriptions = {
        cid: sorted((s.get("topic"), s.get("subString")) for s in i.get("subscriptionSet") or [])
        for cid, i in infos.items()
    }
    if infos:
        same = len({tuple(v) for v in subscriptions.values()}) == 1
        if same:
            lines += ["", "Same subscription in the same group of consumer"]
            lines += ["", f"Rebalance {'OK' if rebalance_ok(infos) else 'Failed'}"]
        else:
            lines += ["", "WARN: Different subscription in the same group of consumer!!!"]
        for cid, info in infos.items():
            lines += ["", f"======== {cid} ========", *format_running_info(info)]
    return Result(infos, lines, warnings)


def group_config(admin: Admin, addr: str, group: str) -> dict[str, Any] | None:
    """The broker's SubscriptionGroupConfig of ``group``, None when it has none: through
    GET_SUBSCRIPTIONGROUP_CONFIG (5.x, rmq), else the whole table as a 4.9 broker serves it
    (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, what mqadmin 4.9 reads)."""
    resp = admin.broker(
        addr,
        RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,
        {"group": group},
        accept=(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, ResponseCode.REQUEST_CODE_NOT_SUPPORTED),
    )
    if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        table = admin.broker_json(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        found = (table.get("subscriptionGroupTable") or {}).get(group)
        return dict(found) if isinstance(found, dict) else None
    if resp.code != ResponseCode.SUCCESS or not resp.body:
        return None
    config = fastjson.loads(resp.body)
    return dict(config) if isinstance(config, dict) else None


@subcommand(
    "getConsumerConfig",
    "Get consumer config by subscription group name!",
    arg("-g", "--groupName", required=True, help="subscription group name"),
)
def get_consumer_config(admin: Admin, args: argparse.Namespace) -> Result:
    group = args.groupName.strip()
    cluster = admin.cluster_info()
    configs: list[dict[str, Any]] = []
    lines: list[str] = []
    for cluster_name, names in sorted(cluster.clusters.items()):
        for broker_name in names:
            broker = cluster.brokers.get(broker_name)
            addr = broker.select_addr() if broker else None
            if addr is None:
                continue
            config = group_config(admin, addr, group)
            if config is None:
                continue
            configs.append({"clusterName": cluster_name, "brokerName": broker_name, **config})
            lines.append(
                f"============================={cluster_name}:{broker_name}"
                "============================="
            )
            for name in GROUP_CONFIG_FIELDS:
                lines.append(f"{name:<40}=  {_java_value(config.get(name, ''))}")
    return Result(configs, lines)
