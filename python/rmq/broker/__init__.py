"""The broker process: ``python -m rmq.broker [-c broker.conf] [-n host:port;host:port]``.

It opens the storage engine, serves RocketMQ clients and admin tools on ``listenPort`` (send,
pull, offsets, topics, heartbeats, consumer progress, offset resets, queue locks, broker
config), registers with every nameserver (running an embedded one when none is
configured), deletes expired files at ``deleteWhen`` and shuts down cleanly on SIGTERM/SIGINT.
"""

from __future__ import annotations

from rmq.broker.cli import build_parser, main
from rmq.broker.server import run_broker

__all__ = ["build_parser", "main", "run_broker"]
