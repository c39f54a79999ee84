"""Offset sub-commands built on the others: skip a group's backlog (``skipAccumulatedMessage``,
a reset to each queue's max offset through ``resetOffsetByTime``'s path) and copy one group's
offsets to another (``cloneGroupOffset``, CLONE_GROUP_OFFSET on each broker of the topic)."""

from __future__ import annotations

import argparse

from rmq.admin.client import Admin, AdminError
from rmq.admin.command import arg, subcommand
from rmq.admin.commands.consumer import consume_stats, reset_offset_by_time
from rmq.admin.output import Result, parse_bool, table
from rmq.codes import RequestCode

__all__: list[str] = []


@subcommand(
    "skipAccumulatedMessage",
    "Skip all messages that are accumulated (not consumed) currently",
    arg("-g", "--group", required=True, help="consumer group"),
    arg("-t", "--topic", required=True, help="topic"),
    arg(
        "-f",
        "--force",
        type=parse_bool,
        default=True,
        metavar="{true,false}",
        help="also move offsets forward (default: true)",
    ),
    arg("-c", "--cluster", metavar="CLUSTER", help="only the brokers of this cluster"),
)
def skip_accumulated_message(admin: Admin, args: argparse.Namespace) -> Result:
    reset = argparse.Namespace(
        group=args.group,
        topic=args.topic,
        timestamp="now",
        force=args.force,
        clusterName=args.cluster,
    )
    done = reset_offset_by_time(admin, reset)
    data = done.data
    rows = data["queues"]
    if data["mode"] == "online":
        lines = table(
            ("brokerName", "queueId", "offset"),
            ((r["brokerName"], r["queueId"], r["offset"]) for r in rows),
        )
    else:
        lines = table(
            (
                "brokerName",
                "queueId",
                "brokerOffset",
                "consumerOffset",
                "timestampOffset",
                "rollbackOffset",
            ),
            (tuple(r.values()) for r in rows),
        )
        lines += ["", data["note"]]
    return Result(data, lines)


@subcommand(
    "cloneGroupOffset",
    "clone offset from other group.",
    arg("-s", "--srcGroup", required=True, help="source consumer group"),
    arg("-d", "--destGroup", required=True, help="destination consumer group"),
    arg("-t", "--topic", required=True, help="topic"),
    arg(
        "-o",
        "--offline",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="the source group or the topic is offline: clone even if no consumer of the "
        "group subscribes to the topic now (default: false)",
    ),
)
def clone_group_offset(admin: Admin, args: argparse.Namespace) -> Result:
    src, dest, topic = args.srcGroup.strip(), args.destGroup.strip(), args.topic.strip()
    _, offsets = consume_stats(admin, src, topic)
    if not any(
        mq.topic == topic and int(o.get("consumerOffset", 0)) > 0 for mq, o in offsets.items()
    ):
        raise AdminError(
            f"consumer group {src!r} has consumed nothing of topic {topic!r} (no offset above "
            f"0): nothing to clone — check -s and -t (rmq consumerProgress -g {src})"
        )
    header = {
        "srcGroup": src,
        "destGroup": dest,
        "topic": topic,
        "offline": str(args.offline).lower(),
    }
    brokers = []
    for b in admin.route(topic).broker_datas:
        addr = b.master_addr
        if addr is None:
            continue
        resp = admin.broker(addr, RequestCode.CLONE_GROUP_OFFSET, header)
        brokers.append({"addr": addr, "remark": resp.remark or ""})
    lines = [
        f"clone group offset success. srcGroup[{src}], destGroup=[{dest}], topic[{topic}]",
        *(f"{b['addr']}: {b['remark']}" for b in brokers if b["remark"]),
    ]
    data = {"srcGroup": src, "destGroup": dest, "topic": topic, "brokers": brokers}
    return Result(data, lines)
