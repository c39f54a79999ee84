"""Command line of the nameserver: options as RocketMQ's ``mqnamesrv`` (``-c``, ``-p``).

The nameserver keeps routes in memory; brokers re-register every 30 s. Every 5 s it drops
brokers that have been silent for 120 s; a broker whose connection closes is dropped at once.
"""

from __future__ import annotations

import argparse
import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rmq.config import parse_properties
from rmq.errors import RmqError
from rmq.logsetup import add_arguments, configure_from_args
from rmq.metrics_http import MetricsExporter, process_figures
from rmq.namesrv.config import (
    ACCEPTED_UNUSED_KEYS,
    ACL_KEYS,
    KNOWN_KEYS,
    KV_KEYS,
    METRICS_KEYS,
    TLS_KEYS,
    NamesrvConfig,
)
from rmq.namesrv.kv_config import KvConfigError, KvConfigManager, default_kv_config_path
from rmq.namesrv.route_info import RouteInfoManager
from rmq.namesrv.server import NamesrvProcessor
from rmq.stop_signals import stop_on_signals

if TYPE_CHECKING:
    from rmq._rmq import RemotingServer

__all__ = ["DEFAULT_PORT", "main", "run"]

log = logging.getLogger("rmq.namesrv")

DEFAULT_PORT = 9876
SCAN_INTERVAL_S = 5.0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rmq.namesrv", description="Run an rmq (RocketMQ-compatible) nameserver."
    )
    parser.add_argument("-c", "--config", metavar="FILE", help="namesrv.conf (Java properties)")
    parser.add_argument(
        "-p",
        "--port",
        type=int,
        default=None,
        help=f"listen port (default: listenPort from the config, else {DEFAULT_PORT}; 0 = any)",
    )
    parser.add_argument(
        "--host", default="0.0.0.0", help="address to listen on (default: all interfaces)"
    )
    add_arguments(parser, "namesrv")
    return parser


def _read_config(path: str) -> tuple[int | None, dict[str, str]]:
    """``listenPort`` (if set) and every key of a namesrv.conf."""
    props = parse_properties(Path(path).read_text(encoding="utf-8"), path)
    for key in sorted(set(props) - KNOWN_KEYS - ACL_KEYS - METRICS_KEYS - KV_KEYS):
        if key in ACCEPTED_UNUSED_KEYS:
            log.info("%s: %s is accepted but has no effect in rmq", path, key)
        else:
            log.warning("%s: unknown key %s is ignored", path, key)
    from rmq._rmq import check_config_value

    for key in sorted(ACL_KEYS & set(props)):
        try:
            check_config_value(key, props[key], "namesrv")
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    raw = props.get("listenPort")
    if raw is None:
        return None, props

    try:
        text, _ = check_config_value("listenPort", raw, "namesrv")
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return int(text), props


def run(host: str, port: int, stop: threading.Event, settings: dict[str, str] | None = None) -> int:
    """Serve until ``stop`` is set (``settings``: the config file's keys, reported by
    GET_NAMESRV_CONFIG, but for ``tls.*``, which set up TLS). Returns the exit status."""
    from rmq._rmq import RemotingServer

    settings = settings or {}
    kv_path = settings.get("kvConfigPath")
    kv = KvConfigManager(Path(kv_path).expanduser() if kv_path else default_kv_config_path())
    try:
        kv.load()
    except KvConfigError as exc:
        log.error("%s", exc)
        return 2
    reported = {
        k: v for k, v in settings.items() if k in ACCEPTED_UNUSED_KEYS | ACL_KEYS | METRICS_KEYS
    }
    if kv.path is not None:
        reported["kvConfigPath"] = str(kv.path)  # the file in use, default or not
    config = NamesrvConfig(port, reported)
    processor = NamesrvProcessor(RouteInfoManager(kv=kv), config=config)
    acl_enable = settings.get("aclEnable", "false").strip().lower() == "true"
    acl_file = settings.get("aclFilePath") or None
    metrics = settings.get("metricsExporterType", "NONE") == "PROM"
    tls = {k: v for k, v in (settings or {}).items() if k in TLS_KEYS}
    try:
        server = RemotingServer(
            host,
            port,
            processor,
            acl_enable=acl_enable,
            acl_file=acl_file,
            tls=tls or None,
            metrics=metrics,
        )
    except (RuntimeError, RmqError) as exc:
        log.error("%s", exc)
        return 1
    exporter = None
    if metrics:
        try:
            exporter = namesrv_metrics_exporter(settings, server, processor)
        except RmqError as exc:
            log.error("%s", exc)
            server.shutdown()
            return 1
    if acl_enable:
        log.info("ACL on: every request is checked against %s", acl_file or "the default file")
    config.listen_port = int(server.local_addr.rsplit(":", 1)[1])
    log.info("rmq nameserver listening on %s", server.local_addr)
    try:
        while not stop.wait(SCAN_INTERVAL_S):
            processor.routes.scan_not_active_broker()
    finally:
        if exporter is not None:
            exporter.shutdown()
        server.shutdown()
    log.info("shutdown complete")
    return 0


def namesrv_metrics_exporter(
    settings: dict[str, str], server: RemotingServer, processor: NamesrvProcessor
) -> MetricsExporter:
    """``GET /metrics`` on ``metricsPromExporterHost:metricsPromExporterPort`` (HTTPS with the
    nameserver's ``tls.server.*`` keys when TLS is on)."""
    from rmq._rmq import namesrv_metrics_text

    def scrape() -> str:
        brokers, topics, clusters = processor.routes.sizes()
        cpu, resident = process_figures()
        return namesrv_metrics_text(
            server,
            brokers=brokers,
            topics=topics,
            clusters=clusters,
            cpu_seconds=cpu,
            resident_bytes=resident,
        )

    return MetricsExporter(
        scrape,
        settings.get("metricsPromExporterHost", "0.0.0.0"),
        int(settings.get("metricsPromExporterPort", "5557")),
        tls={k: v for k, v in settings.items() if k in TLS_KEYS},
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_from_args(args, "namesrv")
    port = DEFAULT_PORT
    settings: dict[str, str] = {}
    if args.config:
        try:
            configured, settings = _read_config(args.config)
        except (OSError, ValueError) as exc:
            log.error("%s", exc)
            return 2
        if configured is not None:
            port = configured
    if args.port is not None:
        port = args.port
    stop = threading.Event()

    stop_on_signals(stop, log)
    return run(args.host, port, stop, settings)
