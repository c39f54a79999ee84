"""``queryMsgTraceById``: a message's trace (see :mod:`rmq.trace`) in mqadmin's layout: the
Pub line (producer group, client host, send time, cost, status), then, per consumer group, a
Sub line per consumption (from its SubAfter record); rmq adds the EndTransaction lines of a
transactional message, which mqadmin leaves out."""

from __future__ import annotations

import argparse
import dataclasses

from rmq._rmq import TRACE_TOPIC
from rmq.admin.client import Admin
from rmq.admin.command import arg, subcommand
from rmq.admin.output import Result, date_time
from rmq.errors import TopicNotExistError
from rmq.trace import TraceContext, TraceType, query_trace

_ROW = "{:<10} {:<20} {:<20} {:<20} {:<10} {:<10}"


def _row(*cells: object) -> str:
    return _ROW.format(*("null" if c is None else str(c) for c in cells))


def _status(ctx: TraceContext) -> str:
    return "success" if ctx.success else "failed"


def trace_lines(records: list[TraceContext]) -> list[str]:
    """mqadmin's ``printMessageTrace`` over ``records``, then the EndTransaction lines."""
    lines: list[str] = []
    by_group: dict[str, list[TraceContext]] = {}
    for ctx in records:
        if ctx.trace_type is TraceType.Pub:
            lines.append(
                _row("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status")
            )
            lines.append(
                _row(
                    "Pub",
                    ctx.group_name,
                    ctx.bean.client_host,
                    date_time(ctx.time_stamp),
                    f"{ctx.cost_time}ms",
                    _status(ctx),
                )
            )
            lines.append("")
        elif ctx.trace_type is TraceType.SubAfter:
            by_group.setdefault(ctx.group_name or "", []).append(ctx)
    for subs in by_group.values():
        lines.append(
            _row("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes", "#Status")
        )
        lines.extend(
            _row(
                "Sub",
                c.group_name,
                c.bean.client_host,
                date_time(c.time_stamp),
                f"{c.cost_time}ms",
                _status(c),
            )
            for c in subs
        )
        lines.append("")
    ends = [c for c in records if c.trace_type is TraceType.EndTransaction]
    if ends:
        lines.append(
            _row("#Type", "#ProducerGroup", "#ClientHost", "#EndTime", "#FromCheck", "#State")
        )
        lines.extend(
            _row(
                "EndTran",
                c.group_name,
                c.bean.client_host,
                date_time(c.time_stamp),
                str(c.bean.from_transaction_check).lower(),
                c.bean.transaction_state,
            )
            for c in ends
        )
        lines.append("")
    return lines


@subcommand(
    "queryMsgTraceById",
    "query a message trace",
    arg("-i", "--msgId", required=True, help="Message Id"),
    arg("-t", "--traceTopic", help="The name value of message trace topic"),
)
def query_msg_trace_by_id(admin: Admin, args: argparse.Namespace) -> Result:
    msg_id = args.msgId.strip()
    topic = args.traceTopic.strip() if args.traceTopic else None
    try:
        records = query_trace(admin, msg_id, topic)
    except TopicNotExistError:
        name = topic or TRACE_TOPIC
        raise TopicNotExistError(
            f"the trace topic {name} has no route: start the brokers with traceTopicEnable = "
            f"true{'' if topic is None else f' and msgTraceTopicName = {name}'}, or name the "
            "trace topic the clients use with -t"
        ) from None
    data = {"msgId": msg_id, "records": [dataclasses.asdict(r) for r in records]}
    warnings = [] if records else [f"no trace record of message {msg_id} was found"]
    return Result(data, trace_lines(records), warnings)
