"""Broker housekeeping on demand and the broker-wide consume view: ``cleanExpiredCQ``,
``cleanUnusedTopic``, ``deleteExpiredCommitLog`` (the broker runs the pass now and says what
it removed), ``brokerConsumeStats`` (every group's offsets on one broker,
GET_BROKER_CONSUME_STATS) and ``producer`` (every producer connected to one broker,
GET_ALL_PRODUCER_INFO)."""

from __future__ import annotations

import argparse
from typing import Any

from rmq import fastjson
from rmq.admin.client import Admin, AdminError
from rmq.admin.command import arg, one_of, subcommand
from rmq.admin.output import Result, date_time, parse_bool, table
from rmq.codes import RequestCode

__all__: list[str] = []

BROKER_OR_CLUSTER = one_of(
    arg("-b", "--brokerAddr", metavar="ADDR", help="broker address"),
    arg("-c", "--cluster", metavar="CLUSTER", help="every master of this cluster"),
    required=False,
)


def _targets(admin: Admin, args: argparse.Namespace) -> list[str]:
    """``-b``'s broker, ``-c``'s masters, or (neither, as mqadmin) every master known."""
    if args.brokerAddr or args.cluster:
        return admin.masters(args.brokerAddr, args.cluster)
    info = admin.cluster_info()
    addrs = [a for c in sorted(info.clusters) for a in info.master_addrs(c)]
    if not addrs:
        raise AdminError("the nameserver knows no master broker — is a broker registered?")
    return addrs


def _housekeeping(admin: Admin, args: argparse.Namespace, code: int) -> Result:
    """Send ``code`` to each target; mqadmin's one word, then what each broker did."""
    brokers = []
    for addr in _targets(admin, args):
        resp = admin.broker(addr, code, timeout_ms=max(admin.timeout_ms, 60_000))
        brokers.append({"addr": addr, "remark": resp.remark or ""})
    lines = ["success", *(f"{b['addr']}: {b['remark']}" for b in brokers if b["remark"])]
    return Result({"success": True, "brokers": brokers}, lines)


@subcommand("cleanExpiredCQ", "Clean expired ConsumeQueue on broker.", BROKER_OR_CLUSTER)
def clean_expired_cq(admin: Admin, args: argparse.Namespace) -> Result:
    return _housekeeping(admin, args, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)


@subcommand("cleanUnusedTopic", "Clean unused topic on broker.", BROKER_OR_CLUSTER)
def clean_unused_topic(admin: Admin, args: argparse.Namespace) -> Result:
    return _housekeeping(admin, args, RequestCode.CLEAN_UNUSED_TOPIC)


@subcommand("deleteExpiredCommitLog", "Delete expired CommitLog files", BROKER_OR_CLUSTER)
def delete_expired_commit_log(admin: Admin, args: argparse.Namespace) -> Result:
    return _housekeeping(admin, args, RequestCode.DELETE_EXPIRED_COMMITLOG)


@subcommand(
    "brokerConsumeStats",
    "Fetch broker consume stats data",
    arg("-b", "--brokerAddr", required=True, metavar="ADDR", help="broker address"),
    arg(
        "-t",
        "--timeoutMillis",
        type=int,
        default=50_000,
        metavar="MS",
        help="request timeout in milliseconds (default: 50000)",
    ),
    arg("-l", "--level", type=int, default=0, help="only queues with at least this diff"),
    arg(
        "-o",
        "--order",
        type=parse_bool,
        default=False,
        metavar="{true,false}",
        help="only ordered topics (default: false)",
    ),
)
def broker_consume_stats(admin: Admin, args: argparse.Namespace) -> Result:
    addr = admin.broker_addr(args.brokerAddr)
    if args.timeoutMillis <= 0:
        raise AdminError(f"-t takes a positive number of milliseconds, not {args.timeoutMillis}")
    resp = admin.broker(
        addr,
        RequestCode.GET_BROKER_CONSUME_STATS,
        {"isOrder": str(args.order).lower()},
        timeout_ms=args.timeoutMillis,
    )
    body = fastjson.loads(resp.body) if resp.body else {}
    rows: list[dict[str, Any]] = []
    for by_group in body.get("consumeStatsList") or ():
        for group, stats_list in sorted(by_group.items()):
            for stats in stats_list or ():
                offsets = {
                    fastjson.message_queue_key(k): v
                    for k, v in (stats.get("offsetTable") or {}).items()
                }
                for mq in sorted(offsets):
                    o = offsets[mq]
                    broker_offset = int(o.get("brokerOffset", 0))
                    consumer_offset = int(o.get("consumerOffset", 0))
                    last = int(o.get("lastTimestamp", 0))
                    diff = broker_offset - consumer_offset
                    # mqadmin leaves out queues below the level and those never consumed from.
                    if diff < args.level or last <= 0:
                        continue
                    rows.append(
                        {
                            "topic": mq.topic,
                            "group": str(group),
                            "brokerName": mq.broker_name,
                            "queueId": mq.queue_id,
                            "brokerOffset": broker_offset,
                            "consumerOffset": consumer_offset,
                            "diff": diff,
                            "lastTimestamp": last,
                        }
                    )
    total = int(body.get("totalDiff") or 0)
    lines = table(
        (
            "Topic",
            "Group",
            "Broker Name",
            "QID",
            "Broker Offset",
            "Consumer Offset",
            "Diff",
            "LastTime",
        ),
        ((*list(r.values())[:-1], date_time(r["lastTimestamp"])) for r in rows),
    )
    lines += ["", f"Diff Total: {total}"]
    return Result({"brokerAddr": addr, "totalDiff": total, "queues": rows}, lines)


@subcommand(
    "producer",
    "Query producer's instances, connection, status, etc.",
    arg("-b", "--broker", required=True, metavar="ADDR", help="broker address"),
)
def producer(admin: Admin, args: argparse.Namespace) -> Result:
    addr = admin.broker_addr(args.broker)
    body = admin.broker_json(addr, RequestCode.GET_ALL_PRODUCER_INFO)
    data = {str(g): list(v or ()) for g, v in sorted((body.get("data") or {}).items())}
    lines = []
    for group, instances in data.items():
        if not instances:
            lines.append(f"producer group ({group}) instances are empty")
        for p in instances:
            lines.append(
                f"producer group ({group}) instance : clientId={p.get('clientId')},"
                f"remoteIP={p.get('remoteIP')}, language={p.get('language')}, "
                f"version={p.get('version')}, lastUpdateTimestamp={p.get('lastUpdateTimestamp')}"
            )
    return Result({"brokerAddr": addr, "producers": data}, lines)
