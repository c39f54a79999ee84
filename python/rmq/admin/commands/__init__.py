"""The sub-commands, grouped as mqadmin groups them. Importing a module registers its
sub-commands; a new group of sub-commands is one more module and one more import here."""

from __future__ import annotations

from . import (
    acl,
    broker,
    consumer,
    consumer_status,
    export,
    ha,
    maintenance,
    message,
    msgid,
    namesrv,
    offset,
    produce,
    route,
    rt,
    stats,
    topic,
    trace,
)

__all__ = [
    "acl",
    "broker",
    "consumer",
    "consumer_status",
    "export",
    "ha",
    "maintenance",
    "message",
    "msgid",
    "namesrv",
    "offset",
    "produce",
    "route",
    "rt",
    "stats",
    "topic",
    "trace",
]
