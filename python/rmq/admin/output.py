"""What a sub-command hands back, and the formatting mqadmin's output uses.

A sub-command returns a :class:`Result`: a JSON-able document for ``--json`` and the lines
people read. Tables are aligned to their content with mqadmin's ``#Column`` headers; times
are local, in mqadmin's formats; timestamps are read as mqadmin reads them.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rmq._rmq import decompress_body
from rmq.admin.client import AdminError
from rmq.errors import RmqError

if TYPE_CHECKING:
    from rmq._rmq import StoredMessage

__all__ = [
    "TIMESTAMP_FORMAT_HELP",
    "Result",
    "date_time",
    "human_time",
    "message_body",
    "message_json",
    "message_lines",
    "parse_bool",
    "parse_timestamp",
    "table",
    "timestamp_arg",
    "timestamp_or_now_arg",
]

TIMESTAMP_FORMAT_HELP = "milliseconds since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS (local time)"


@dataclass
class Result:
    """A sub-command's answer: ``data`` is printed by ``--json`` as one document, ``lines``
    otherwise (an iterable, so long outputs can be produced while they are printed);
    ``warnings`` go to stderr either way (a broker that did not answer a listing, ...)."""

    data: Any
    lines: Iterable[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """Rows left-aligned under ``#Header`` columns, two spaces apart (mqadmin's look, but
    sized to the content instead of fixed widths)."""
    head = [f"#{h}" for h in headers]
    body = [["" if v is None else str(v) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(head)]
    out = []
    for row in [head, *body]:
        cells = [c.ljust(w) for c, w in zip(row, widths, strict=True)]
        out.append("  ".join(cells).rstrip())
    return out


def human_time(ms: int) -> str:
    """``yyyy-MM-dd HH:mm:ss,SSS`` in local time (RocketMQ's ``timeMillisToHumanString2``)."""
    t = dt.datetime.fromtimestamp(ms / 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"


def date_time(ms: int) -> str:
    """``yyyy-MM-dd HH:mm:ss`` in local time."""
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def parse_timestamp(value: str, *, allow_now: bool = False) -> int:
    """Milliseconds since the epoch from mqadmin's timestamp forms; ``now`` gives -1 (what
    RocketMQ sends for "the latest offset") when allowed."""
    v = value.strip()
    if allow_now and v == "now":
        return -1
    if v.lstrip("-").isdigit():
        return int(v)
    try:
        t = dt.datetime.strptime(v, "%Y-%m-%d#%H:%M:%S:%f")
    except ValueError:
        forms = "'now', " if allow_now else ""
        raise AdminError(
            f"timestamp {value!r} is not {forms}{TIMESTAMP_FORMAT_HELP}, "
            "e.g. 2024-01-31#13:45:00:000"
        ) from None
    return int(t.timestamp() * 1000)


def timestamp_arg(value: str) -> str:
    """argparse ``type=`` for a timestamp option: checked at parse time (a usage error, exit
    2), read later with :func:`parse_timestamp`."""
    try:
        parse_timestamp(value)
    except AdminError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def timestamp_or_now_arg(value: str) -> str:
    """Like :func:`timestamp_arg`, also accepting ``now``."""
    try:
        parse_timestamp(value, allow_now=True)
    except AdminError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def parse_bool(value: str) -> bool:
    """``true``/``false`` (any case), for argparse ``type=``."""
    v = value.strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise argparse.ArgumentTypeError(f"expected true or false, not {value!r}")


def message_body(msg: StoredMessage) -> bytes:
    """The body as the producer sent it: compressed bodies (ZLIB, LZ4 or ZSTD) are
    decompressed; one that does not decompress is shown as stored."""
    try:
        return decompress_body(msg.sys_flag, msg.body)
    except RmqError:
        return msg.body


def message_json(msg: StoredMessage, charset: str = "utf-8") -> dict[str, Any]:
    body = message_body(msg)
    return {
        "msgId": msg.msg_id,
        "offsetMsgId": msg.offset_msg_id,
        "topic": msg.topic,
        "tags": msg.tags,
        "keys": msg.keys,
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "storeSize": msg.store_size,
        "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": msg.born_host,
        "storeHost": msg.store_host,
        "sysFlag": msg.sys_flag,
        "flag": msg.flag,
        "bodyCRC": msg.body_crc,
        "properties": dict(sorted(msg.properties.items())),
        "body": body.decode(charset, errors="replace"),
        "bodyBase64": base64.b64encode(body).decode("ascii"),
    }


def message_lines(msg: StoredMessage, charset: str = "utf-8") -> list[str]:
    """One message as mqadmin's queryMsgById prints it, with the body inline."""
    props = ", ".join(f"{k}={v}" for k, v in sorted(msg.properties.items()))
    rows: list[tuple[str, object]] = [
        ("OffsetID:", msg.offset_msg_id),
        ("Message ID:", msg.msg_id),
        ("Topic:", msg.topic),
        ("Tags:", f"[{msg.tags or ''}]"),
        ("Keys:", f"[{msg.keys or ''}]"),
        ("Queue ID:", msg.queue_id),
        ("Queue Offset:", msg.queue_offset),
        ("CommitLog Offset:", msg.commit_log_offset),
        ("Reconsume Times:", msg.reconsume_times),
        ("Born Timestamp:", human_time(msg.born_timestamp)),
        ("Store Timestamp:", human_time(msg.store_timestamp)),
        ("Born Host:", msg.born_host),
        ("Store Host:", msg.store_host),
        ("System Flag:", msg.sys_flag),
        ("Properties:", "{" + props + "}"),
        ("Message Body:", message_body(msg).decode(charset, errors="replace")),
    ]
    return [f"{label:<20} {value}" for label, value in rows]
