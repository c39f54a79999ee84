"""The console's JSON API: one function per ``/api/...`` path, each answering with what the
admin tool's sub-command of the same purpose computes.

Every figure comes from :mod:`rmq.admin`: a handler runs the registered sub-command
(``clusterList``, ``topicStatus``, ``consumerProgress``, ``resetOffsetByTime``...) with
options parsed by that sub-command's own argparse definition, and returns its ``--json``
document. So a page shows what ``rmq`` prints, with the same validation and error messages,
and nothing (lag, TPS, offsets) is computed a second time here. Two views have no
sub-command and use the admin tool's pieces instead: every producer group of the cluster
(GET_ALL_PRODUCER_INFO through the admin client) and a topic's messages in a time range
(``printMsg``'s ``queue_range`` and ``pull``, capped). Failures are
:class:`ApiError` (a status and one readable line) or :class:`rmq.errors.RmqError`, which
:mod:`rmq.console.server` turns into a JSON error.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

from rmq.admin.client import Admin
from rmq.admin.command import REGISTRY
from rmq.admin.commands.consumer import version_desc
from rmq.admin.commands.message import pull, query_index, queue_range
from rmq.admin.output import message_json, parse_timestamp
from rmq.codes import RequestCode
from rmq.errors import QueryNotFoundError, RmqError, TopicNotExistError

__all__ = ["GET", "POST", "ApiError", "Query", "run_command"]

Query = Mapping[str, str]
"""A request's parameters (the query string of a GET, the JSON object of a POST)."""

MAX_TIME_RANGE_MESSAGES = 200
"""Most messages a topic + time range search returns (the oldest first, queue by queue)."""


class ApiError(Exception):
    """A request the console answers with ``status`` and ``message`` (no traceback)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    """A sub-command's parser whose usage errors become :class:`ApiError` (400)."""

    def error(self, message: str) -> NoReturn:
        raise ApiError(400, f"{self.prog}: {message}")


def run_command(admin: Admin, name: str, argv: list[str]) -> Any:
    """Run ``rmq NAME ARGV...`` and return its ``--json`` document; its warnings (a broker
    that did not answer) ride along under ``"warnings"`` when there are any."""
    import rmq.admin.commands  # noqa: F401  (registers the sub-commands)

    command = REGISTRY[name]
    parser = _Parser(prog=f"rmq {name}", add_help=False)
    command.configure(parser)
    args = parser.parse_args(argv)
    args.json = True
    result = command.run(admin, args)
    data = result.data
    if result.warnings and isinstance(data, dict):
        data = {**data, "warnings": list(result.warnings)}
    return data


def _need(q: Query, name: str) -> str:
    value = (q.get(name) or "").strip()
    if not value:
        raise ApiError(400, f"the parameter {name!r} is required")
    return value


def _arg(option: str, value: str) -> str:
    """``--option=value``: one word, so a value that starts with ``-`` stays a value."""
    return f"--{option}={value}"


def _opt(option: str, q: Query, name: str) -> list[str]:
    value = (q.get(name) or "").strip()
    return [_arg(option, value)] if value else []


# ---- cluster and brokers ------------------------------------------------------------------


def cluster(admin: Admin, q: Query) -> Any:
    """clusterList: every broker's role, address, version, in/out TPS, disk ratio."""
    data = run_command(admin, "clusterList", [])
    return {**data, "namesrv": admin.namesrv_addrs, "time": int(time.time() * 1000)}


def broker_runtime(admin: Admin, q: Query) -> Any:
    """brokerStatus -b ADDR: the broker's GET_BROKER_RUNTIME_INFO table."""
    return run_command(admin, "brokerStatus", [_arg("brokerAddr", _need(q, "addr"))])


# ---- topics -------------------------------------------------------------------------------


def topics(admin: Admin, q: Query) -> Any:
    """topicList -c: every topic with its cluster and consumer groups."""
    return run_command(admin, "topicList", ["-c"])


def topic(admin: Admin, q: Query) -> Any:
    """One topic: topicStatus (queues with min/max offsets), topicRoute, statsAll -t (in TPS
    and, per group, out TPS and accumulation)."""
    name = _need(q, "topic")
    out: dict[str, Any] = {"topic": name}
    out["status"] = run_command(admin, "topicStatus", [_arg("topic", name)])
    out["route"] = run_command(admin, "topicRoute", [_arg("topic", name)])
    try:
        out["stats"] = run_command(admin, "statsAll", [_arg("topic", name)])["stats"]
    except RmqError as exc:
        out["stats"], out["statsError"] = [], str(exc)
    return out


# ---- consumer groups and producers --------------------------------------------------------


def groups(admin: Admin, q: Query) -> Any:
    """consumerProgress without -g: every group's clients, TPS and total lag."""
    return run_command(admin, "consumerProgress", [])


def group(admin: Admin, q: Query) -> Any:
    """One group: consumerProgress -g (lag per queue) and consumerConnection (its clients;
    an error line instead when none is connected)."""
    name = _need(q, "group")
    out: dict[str, Any] = {"group": name}
    try:
        out["progress"] = run_command(
            admin, "consumerProgress", [_arg("groupName", name), *_opt("topicName", q, "topic")]
        )
    except RmqError as exc:
        out["progress"], out["progressError"] = None, str(exc)
    try:
        conn = run_command(admin, "consumerConnection", [_arg("consumerGroup", name)])
        conn["connectionSet"] = _with_version(conn.get("connectionSet"))
        out["connection"] = conn
    except RmqError as exc:
        out["connection"], out["connectionError"] = None, str(exc)
    return out


def reset_offset(admin: Admin, q: Query) -> Any:
    """resetOffsetByTime -g -t -s [-f]: move the group's offsets to a point in time."""
    argv = [_arg("group", _need(q, "group")), _arg("topic", _need(q, "topic"))]
    argv += [_arg("timestamp", _need(q, "timestamp")), *_opt("force", q, "force")]
    return run_command(admin, "resetOffsetByTime", argv)


def producers(admin: Admin, q: Query) -> Any:
    """producerConnection -g -t: the group's connections to the brokers of a topic."""
    data = run_command(
        admin,
        "producerConnection",
        [_arg("producerGroup", _need(q, "group")), _arg("topic", _need(q, "topic"))],
    )
    return {**data, "connectionSet": _with_version(data.get("connectionSet"))}


def all_producers(admin: Admin, q: Query) -> Any:
    """GET_ALL_PRODUCER_INFO of every master: each producer group's connections, with the
    broker that holds each one (a broker that does not answer is a warning)."""
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    for b in admin.cluster_info().brokers.values():
        addr = b.master_addr
        if addr is None:
            continue
        try:
            body = admin.broker_json(addr, RequestCode.GET_ALL_PRODUCER_INFO)
        except RmqError as exc:
            warnings.append(str(exc))
            continue
        for group, conns in sorted((body.get("data") or {}).items()):
            for c in _with_version(conns):
                rows.append({"group": str(group), "brokerName": b.broker_name, **c})
    rows.sort(key=lambda r: (r["group"], str(r.get("clientId", "")), r["brokerName"]))
    out: dict[str, Any] = {"producers": rows}
    if warnings:
        out["warnings"] = warnings
    return out


def _with_version(conns: Any) -> list[dict[str, Any]]:
    """Connections with ``versionDesc`` (``V4_9_8``) beside the ordinal, as the admin tool
    prints it."""
    return [
        {**c, "versionDesc": version_desc(int(c.get("version") or 0))}
        for c in conns or ()
        if isinstance(c, dict)
    ]


# ---- messages -----------------------------------------------------------------------------


def messages_by_key(admin: Admin, q: Query) -> Any:
    """queryMsgByKey -t -k [-b -e]."""
    argv = [_arg("topic", _need(q, "topic")), _arg("msgKey", _need(q, "key"))]
    argv += _opt("beginTimestamp", q, "begin") + _opt("endTimestamp", q, "end")
    return run_command(admin, "queryMsgByKey", argv)


def messages_by_id(admin: Admin, q: Query) -> Any:
    """A Message ID (the producer's unique key; needs the topic) or an offset message id.

    Both are 32 hex digits, so a unique key is looked up first when a topic is given (as
    RocketMQ's tools do); an offset id is only tried when it names a broker of the cluster,
    so a unique key given without a topic is not sent to the address it happens to decode
    to."""
    from rmq._rmq import decode_offset_msg_id

    msg_id = _need(q, "id")
    topic_name = (q.get("topic") or "").strip()
    if topic_name:
        found = query_index(admin, topic_name, msg_id, unique=True)
        if found:
            return {"messages": [message_json(m) for m in found], "idKind": "unique key"}
    where = f"no message of topic {topic_name!r} has it as Message ID, and " if topic_name else ""
    try:
        addr, _ = decode_offset_msg_id(msg_id)
    except ValueError as exc:
        if topic_name:
            raise QueryNotFoundError(f"{where}{exc}") from None
        raise ApiError(
            400, f"{exc}: give an offset message id, or a Message ID and its topic"
        ) from None
    known = {a for b in admin.cluster_info().brokers.values() for a in b.addrs.values()}
    if addr not in known:
        raise QueryNotFoundError(
            f"{where}{msg_id} is no offset message id of a broker of this cluster (it would "
            f"name {addr}) — if it is a Message ID (unique key), give its topic too"
        )
    data = run_command(admin, "queryMsgById", [_arg("msgId", msg_id)])
    return {**data, "idKind": "offset id"}


def messages_by_time(admin: Admin, q: Query) -> Any:
    """A topic's messages stored between ``begin`` and ``end`` (printMsg -b -e's range),
    at most ``MAX_TIME_RANGE_MESSAGES``."""
    name = _need(q, "topic")
    begin = parse_timestamp(_need(q, "begin"))
    end = parse_timestamp(q["end"]) if (q.get("end") or "").strip() else None
    found: list[dict[str, Any]] = []
    truncated = False
    for b, queue_id in admin.route(name).read_queues():
        addr = b.select_addr()
        if truncated:
            break
        if addr is None:
            continue
        offset, hi = queue_range(admin, addr, name, queue_id, begin, end)
        while offset < hi and not truncated:
            result = pull(admin, addr, name, queue_id, offset, min(32, hi - offset))
            for msg in result.messages:
                if msg.queue_offset >= hi:
                    continue
                if len(found) == MAX_TIME_RANGE_MESSAGES:
                    truncated = True
                    break
                found.append(message_json(msg))
            if result.status not in ("FOUND", "NO_MATCHED_MSG"):
                break
            if result.next_begin_offset <= offset:
                break
            offset = result.next_begin_offset
    found.sort(key=lambda m: (m["storeTimestamp"], m["commitLogOffset"]))
    return {"topic": name, "messages": found, "truncated": truncated}


def trace(admin: Admin, q: Query) -> Any:
    """The message's trace records (``rmq.trace.query_trace``)."""
    from rmq.trace import query_trace

    msg_id = _need(q, "id")
    trace_topic = (q.get("traceTopic") or "").strip() or None
    try:
        records = query_trace(admin, msg_id, trace_topic)
    except TopicNotExistError:
        return {
            "available": True,
            "records": [],
            "message": f"no trace topic {trace_topic or 'RMQ_SYS_TRACE_TOPIC'} in the cluster: "
            "nothing was traced (enable tracing in the producers and consumers, and "
            "traceTopicEnable on a broker)",
        }
    return {"available": True, "records": [_plain(r) for r in records]}


def _plain(record: object) -> Any:
    """A trace record (a dataclass) as JSON-able values."""
    import dataclasses

    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        return dataclasses.asdict(record)
    return record if isinstance(record, (dict, list, str, int, float)) else str(record)


Handler = Callable[[Admin, Query], Any]

GET: dict[str, Handler] = {
    "/api/cluster": cluster,
    "/api/broker": broker_runtime,
    "/api/topics": topics,
    "/api/topic": topic,
    "/api/groups": groups,
    "/api/group": group,
    "/api/producers": producers,
    "/api/producers/all": all_producers,
    "/api/messages/by-key": messages_by_key,
    "/api/messages/by-id": messages_by_id,
    "/api/messages/by-time": messages_by_time,
    "/api/trace": trace,
}
"""GET paths and their handlers (parameters in the query string)."""

POST: dict[str, Handler] = {
    "/api/group/reset-offset": reset_offset,
}
"""POST paths and their handlers (parameters in a JSON object)."""
