"""Command line of the web console: the admin tool's connection options (``-n``,
``--access-key``/``--secret-key``, ``--timeout``, ``--tls*``) and where to listen."""

from __future__ import annotations

import argparse
import logging
import os
import threading
from collections.abc import Sequence

from rmq.admin.client import DEFAULT_NAMESRV_ADDR, DEFAULT_TIMEOUT_MS, Admin
from rmq.console.server import ConsoleServer
from rmq.errors import RmqError
from rmq.logsetup import add_arguments, configure_from_args
from rmq.stop_signals import stop_on_signals
from rmq.tls import TlsOptions, add_tls_arguments

__all__ = ["build_parser", "main"]

log = logging.getLogger("rmq.console")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rmq.console",
        description="Serve rmq's web console: cluster, topics, consumer groups, producers, "
        "message search and live TPS of an rmq (or RocketMQ) cluster.",
    )
    parser.add_argument(
        "-n",
        "--namesrvAddr",
        dest="namesrv_addr",
        metavar="ADDR",
        default=os.environ.get("NAMESRV_ADDR") or DEFAULT_NAMESRV_ADDR,
        help="nameserver address list, host:port;host:port (default: $NAMESRV_ADDR, else "
        f"{DEFAULT_NAMESRV_ADDR})",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1; the console has no login, so expose "
        "it to others only behind one)",
    )
    parser.add_argument(
        "--port", type=int, default=8080, help="port to listen on (default: 8080; 0 = any)"
    )
    parser.add_argument(
        "--access-key",
        dest="access_key",
        metavar="AK",
        help="ACL account to sign every request with (default: $RMQ_ACCESS_KEY)",
    )
    parser.add_argument(
        "--secret-key",
        dest="secret_key",
        metavar="SK",
        help="the account's secret key (default: $RMQ_SECRET_KEY)",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=DEFAULT_TIMEOUT_MS,
        metavar="MS",
        help=f"timeout of each request in milliseconds (default: {DEFAULT_TIMEOUT_MS})",
    )
    add_tls_arguments(parser)
    add_arguments(parser, "console")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rmq.console``: serve until SIGTERM or SIGINT."""
    args = build_parser().parse_args(argv)
    configure_from_args(args, "console")
    if args.timeout <= 0:
        log.error("--timeout must be a positive number of milliseconds, not %d", args.timeout)
        return 2
    try:
        admin = Admin(
            args.namesrv_addr,
            args.timeout,
            access_key=args.access_key or os.environ.get("RMQ_ACCESS_KEY") or None,
            secret_key=args.secret_key or os.environ.get("RMQ_SECRET_KEY") or None,
            tls=TlsOptions.from_args(args),
        )
    except RmqError as exc:
        log.error("%s", exc)
        return 2
    try:
        server = ConsoleServer(admin, args.host, args.port).start()
    except RmqError as exc:
        log.error("%s", exc)
        admin.close()
        return 1
    stopping = threading.Event()
    stop_on_signals(stopping, log)
    try:
        # Wake up every second: a SIGTERM that the kernel hands to another thread (the HTTP
        # server's, the transport's) does not interrupt a wait without a timeout, and Python
        # runs its handler only on the main thread, once that is awake.
        while not stopping.wait(1.0):
            pass
    finally:
        server.shutdown()
        admin.close()
    log.info("console stopped")
    return 0
