"""``statsAll``: every topic's in TPS and every consumer group's out TPS and backlog, as
mqadmin's ``StatsAllSubCommand`` prints them, from the brokers' VIEW_BROKER_STATS_DATA
(``TOPIC_PUT_NUMS`` / ``GROUP_GET_NUMS`` over the last minute, hour and day) and
GET_CONSUME_STATS."""

from __future__ import annotations

import argparse
from typing import Any

from rmq._rmq import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from rmq.admin.client import Admin, TopicRoute
from rmq.admin.command import arg, subcommand
from rmq.admin.commands.consumer import consume_stats
from rmq.admin.output import Result, table
from rmq.codes import RequestCode
from rmq.errors import RmqError


def _view(admin: Admin, addr: str, name: str, key: str) -> tuple[float, int]:
    """(TPS over the last minute, messages in the last 24 h) of one stats item on one broker;
    (0, 0) when the broker counted nothing under it (it answers SYSTEM_ERROR then)."""
    try:
        body = admin.broker_json(
            addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": name, "statsKey": key}
        )
    except RmqError:
        return 0.0, 0
    minute = body.get("statsMinute") or {}
    # mqadmin's compute24HourSum: the day's sum, else the hour's, else the minute's.
    day_sum = next(
        (int(w.get("sum") or 0) for w in _windows(body) if int(w.get("sum") or 0)),
        0,
    )
    return float(minute.get("tps") or 0), day_sum


def _windows(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [body.get(k) or {} for k in ("statsDay", "statsHour", "statsMinute")]


def _masters(route: TopicRoute) -> list[str]:
    return [a for b in route.broker_datas if (a := b.master_addr)]


def _groups(admin: Admin, route: TopicRoute) -> list[str]:
    """QUERY_TOPIC_CONSUME_BY_WHO on every broker of the topic, merged."""
    groups: set[str] = set()
    for b in route.broker_datas:
        addr = b.select_addr()
        if not addr:
            continue
        try:
            body = admin.broker_json(
                addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": route.topic}
            )
        except RmqError:
            continue
        groups.update(str(g) for g in body.get("groupList") or ())
    return sorted(groups)


def _topic_rows(admin: Admin, topic: str, active_only: bool) -> list[dict[str, Any]]:
    route = admin.route(topic)
    masters = _masters(route)
    in_tps, in_today = 0.0, 0
    for addr in masters:
        tps, today = _view(admin, addr, "TOPIC_PUT_NUMS", topic)
        in_tps, in_today = in_tps + tps, in_today + today
    groups = _groups(admin, route)
    rows: list[dict[str, Any]] = []
    if not groups:
        if not active_only or in_today > 0:
            rows.append(_row(topic, "", 0, in_tps, 0.0, in_today, None))
        return rows
    for group in groups:
        out_tps, out_today = 0.0, 0
        for addr in masters:
            tps, today = _view(admin, addr, "GROUP_GET_NUMS", f"{topic}@{group}")
            out_tps, out_today = out_tps + tps, out_today + today
        accumulation = 0
        try:
            _, offsets = consume_stats(admin, group, topic)
            accumulation = sum(
                int(o.get("brokerOffset", 0)) - int(o.get("consumerOffset", 0))
                for mq, o in offsets.items()
                if mq.topic == topic
            )
        except RmqError:
            pass  # mqadmin prints 0 then, too
        if not active_only or in_today > 0 or out_today > 0:
            rows.append(
                _row(topic, group, max(accumulation, 0), in_tps, out_tps, in_today, out_today)
            )
    return rows


def _row(
    topic: str,
    group: str,
    accumulation: int,
    in_tps: float,
    out_tps: float,
    in_today: int,
    out_today: int | None,
) -> dict[str, Any]:
    return {
        "topic": topic,
        "consumerGroup": group,
        "accumulation": accumulation,
        "inTps": round(in_tps, 2),
        "outTps": round(out_tps, 2),
        "inMsg24Hour": in_today,
        "outMsg24Hour": out_today,
    }


@subcommand(
    "statsAll",
    "Topic and Consumer tps stats",
    arg("-a", "--activeTopic", action="store_true", help="only topics with traffic in 24 h"),
    arg("-t", "--topic", help="only this topic"),
)
def stats_all(admin: Admin, args: argparse.Namespace) -> Result:
    wanted = args.topic.strip() if args.topic else None
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    topics = [wanted] if wanted else admin.topic_list()
    for topic in topics:
        if topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            continue
        try:
            rows += _topic_rows(admin, topic, args.activeTopic)
        except RmqError as exc:
            if wanted:
                raise
            warnings.append(f"{topic}: {exc}")
    lines = table(
        (
            "#Topic",
            "#Consumer Group",
            "#Accumulation",
            "#InTPS",
            "#OutTPS",
            "#InMsg24Hour",
            "#OutMsg24Hour",
        ),
        (
            (
                r["topic"],
                r["consumerGroup"],
                r["accumulation"],
                f"{r['inTps']:.2f}",
                f"{r['outTps']:.2f}",
                r["inMsg24Hour"],
                "NO_CONSUMER" if r["outMsg24Hour"] is None else r["outMsg24Hour"],
            )
            for r in rows
        ),
    )
    return Result({"stats": rows}, lines, warnings)
