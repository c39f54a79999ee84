"""The broker process: ``python -m rmq.broker [-c broker.conf] [-n host:port;host:port]``.

Today it runs in *store-only* mode: it opens the storage engine, runs expired-file deletion at
``deleteWhen`` and shuts down cleanly on SIGTERM/SIGINT. The remoting server, nameserver
registration and the embedded nameserver land in later versions.
"""

from __future__ import annotations

from rmq.broker.cli import build_parser, main
from rmq.broker.store_only import run_store_only

__all__ = ["build_parser", "main", "run_store_only"]
