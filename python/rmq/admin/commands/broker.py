"""Cluster and broker sub-commands: the cluster layout (and its day totals), a broker's runtime
key/values, and reading, changing or exporting a broker's configuration."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rmq.admin.client import MASTER_ID, Admin, AdminError, BrokerData
from rmq.admin.command import arg, broker_or_cluster, subcommand
from rmq.admin.output import Result, table
from rmq.codes import RequestCode
from rmq.config import redact_secrets
from rmq.errors import RmqError


def runtime_info(admin: Admin, addr: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO: the broker's KVTable."""
    body = admin.broker_json(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    return {str(k): str(v) for k, v in (body.get("table") or {}).items()}


def _first_float(value: str | None) -> float:
    """``putTps`` and friends hold several figures ("10.0 9.5 9.8"); mqadmin shows the first."""
    try:
        return float((value or "").split()[0])
    except (IndexError, ValueError):
        return 0.0


def _tps(kv: dict[str, str], tps_key: str, pool: str) -> str:
    tps = _first_float(kv.get(tps_key))
    size = kv.get(f"{pool}ThreadPoolQueueSize")
    wait = kv.get(f"{pool}ThreadPoolQueueHeadWaitTimeMills")
    if size is None and wait is None:
        return f"{tps:.2f}"
    return f"{tps:.2f}({size or 0},{wait or 0}ms)"


def _addresses(admin: Admin, args: argparse.Namespace) -> list[tuple[str, str]]:
    """(label, address) of ``-b ADDR``, or of every master and slave of ``-c CLUSTER``."""
    if args.brokerAddr:
        addr = admin.broker_addr(args.brokerAddr)
        return [(addr, addr)]
    out = []
    for b in admin.cluster_info().brokers_of(args.clusterName):
        master = b.master_addr
        for bid, addr in sorted(b.addrs.items()):
            if bid == MASTER_ID:
                out.append((f"Master: {addr}", addr))
            else:
                out.append((f"My Master: {master}=====Slave: {addr}", addr))
    return out


def _day_totals(kv: dict[str, str]) -> tuple[int, int, int, int] | None:
    """(in yesterday, out yesterday, in today, out today) from the runtime info's day marks,
    as mqadmin's ``clusterList -m`` computes them; None when the broker has no such keys."""
    try:
        put = [int(kv[f"msgPutTotal{w}"]) for w in ("YesterdayMorning", "TodayMorning", "TodayNow")]
        get = [int(kv[f"msgGetTotal{w}"]) for w in ("YesterdayMorning", "TodayMorning", "TodayNow")]
    except (KeyError, ValueError):
        return None
    return put[1] - put[0], get[1] - get[0], put[2] - put[1], get[2] - get[1]


def _more_stats(admin: Admin) -> Result:
    info = admin.cluster_info()
    rows: list[dict[str, Any]] = []
    warnings = []
    for cluster in sorted(info.clusters):
        for name in info.clusters[cluster]:
            b: BrokerData | None = info.brokers.get(name)
            for bid, addr in sorted(b.addrs.items()) if b else ():
                try:
                    totals = _day_totals(runtime_info(admin, addr))
                except RmqError as exc:
                    warnings.append(str(exc))
                    totals = None
                if totals is None:
                    totals = (0, 0, 0, 0)
                keys = ("inTotalYest", "outTotalYest", "inTotalToday", "outTotalToday")
                row = {"cluster": cluster, "brokerName": name, "brokerId": bid, "addr": addr}
                rows.append(row | dict(zip(keys, totals, strict=True)))
    lines = table(
        (
            "Cluster Name",
            "Broker Name",
            "InTotalYest",
            "OutTotalYest",
            "InTotalToday",
            "OutTotalToday",
        ),
        (
            (
                r["cluster"],
                r["brokerName"],
                r["inTotalYest"],
                r["outTotalYest"],
                r["inTotalToday"],
                r["outTotalToday"],
            )
            for r in rows
        ),
    )
    return Result({"brokers": rows}, lines, warnings)


@subcommand(
    "clusterList",
    "List all of clusters",
    arg("-m", "--moreStats", action="store_true", help="print the day totals in and out"),
    arg(
        "-i",
        "--interval",
        type=int,
        metavar="SECONDS",
        help="print again every SECONDS seconds until interrupted (not with --json)",
    ),
)
def cluster_list(admin: Admin, args: argparse.Namespace) -> Result:
    once = _more_stats if args.moreStats else _base_info
    if args.interval is None or args.json:
        return once(admin)
    if args.interval <= 0:
        raise AdminError(f"-i takes a positive number of seconds, not {args.interval}")
    first = once(admin)

    def rounds() -> Iterator[str]:
        result = first
        while True:
            yield from result.lines
            time.sleep(args.interval)
            result = once(admin)

    return Result(first.data, rounds(), first.warnings)


def _base_info(admin: Admin) -> Result:
    info = admin.cluster_info()
    now_ms = int(time.time() * 1000)
    rows: list[dict[str, Any]] = []
    warnings = []
    for cluster in sorted(info.clusters):
        for name in info.clusters[cluster]:
            b: BrokerData | None = info.brokers.get(name)
            if b is None:
                continue
            for bid, addr in sorted(b.addrs.items()):
                try:
                    kv = runtime_info(admin, addr)
                except RmqError as exc:
                    warnings.append(str(exc))
                    kv = {}
                earliest = kv.get("earliestMessageTimeStamp", "")
                hours = (now_ms - int(earliest)) / 3_600_000 if earliest.isdigit() else 0.0
                rows.append(
                    {
                        "cluster": cluster,
                        "brokerName": name,
                        "brokerId": bid,
                        "addr": addr,
                        "version": kv.get("brokerVersionDesc", ""),
                        "inTps": _first_float(kv.get("putTps")),
                        "outTps": _first_float(kv.get("getTransferedTps")),
                        "in": _tps(kv, "putTps", "send"),
                        "out": _tps(kv, "getTransferedTps", "pull"),
                        "pageCacheLockTimeMills": kv.get("pageCacheLockTimeMills", ""),
                        "hours": round(hours, 2),
                        "commitLogDiskRatio": _first_float(kv.get("commitLogDiskRatio")),
                        "reachable": bool(kv),
                    }
                )
    lines = table(
        (
            "Cluster Name",
            "Broker Name",
            "BID",
            "Addr",
            "Version",
            "InTPS(LOAD)",
            "OutTPS(LOAD)",
            "PCWait(ms)",
            "Hour",
            "SPACE",
        ),
        (
            (
                r["cluster"],
                r["brokerName"],
                r["brokerId"],
                r["addr"],
                r["version"] if r["reachable"] else "UNREACHABLE",
                r["in"],
                r["out"],
                r["pageCacheLockTimeMills"],
                f"{r['hours']:.2f}",
                f"{r['commitLogDiskRatio']:.4f}",
            )
            for r in rows
        ),
    )
    data = {"brokers": [{k: v for k, v in r.items() if k not in ("in", "out")} for r in rows]}
    return Result(data, lines, warnings)


BROKER_OR_CLUSTER = broker_or_cluster("broker address", "every broker of this cluster")


@subcommand("brokerStatus", "Fetch broker runtime status data", BROKER_OR_CLUSTER)
def broker_status(admin: Admin, args: argparse.Namespace) -> Result:
    tables = {addr: runtime_info(admin, addr) for _, addr in _addresses(admin, args)}
    width = max((len(k) for kv in tables.values() for k in kv), default=0)
    lines: list[str] = []
    for addr, kv in tables.items():
        prefix = "" if args.brokerAddr else f"{addr:<22} "
        lines.extend(f"{prefix}{k:<{width}}: {v}" for k, v in sorted(kv.items()))
    return Result(tables if not args.brokerAddr else next(iter(tables.values())), lines)


def _properties(text: str) -> dict[str, str]:
    """``key=value`` lines (RocketMQ's ``MixAll.properties2String`` output)."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")):
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip()
    return out


@subcommand("getBrokerConfig", "Get broker config by cluster or special broker", BROKER_OR_CLUSTER)
def get_broker_config(admin: Admin, args: argparse.Namespace) -> Result:
    configs: dict[str, dict[str, str]] = {}
    lines: list[str] = []
    for label, addr in _addresses(admin, args):
        resp = admin.broker(addr, RequestCode.GET_BROKER_CONFIG)
        # An Apache broker answers its secrets (innerSecretKey...) in clear: never show them.
        text = (resp.body or b"").decode("utf-8")
        config = dict(sorted(redact_secrets(_properties(text)).items()))
        configs[addr] = config
        lines.append(f"============{label}============")
        width = max((len(k) for k in config), default=0)
        lines.extend(f"{k:<{width}} = {v}" for k, v in config.items())
        lines.append("")
    if args.brokerAddr:
        return Result(next(iter(configs.values())), lines)
    return Result(configs, lines)


@subcommand(
    "updateBrokerConfig",
    "Update broker's config",
    broker_or_cluster("update this broker", "update every master of this cluster"),
    arg("-k", "--key", required=True, help="config key"),
    arg("-v", "--value", required=True, help="config value"),
)
def update_broker_config(admin: Admin, args: argparse.Namespace) -> Result:
    key, value = args.key.strip(), args.value.strip()
    addrs = admin.masters(args.brokerAddr, args.clusterName)
    body = f"{key}={value}\n".encode()
    for addr in addrs:
        admin.broker(addr, RequestCode.UPDATE_BROKER_CONFIG, None, body)
    lines = [f"update broker config success, {addr}" for addr in addrs]
    return Result({"key": key, "value": value, "brokers": addrs}, lines)


EXPORTED_BROKER_KEYS = (
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
)
"""The broker keys mqadmin's exportConfigs keeps (a key the broker does not have is left out)."""


@subcommand(
    "exportConfigs",
    "export configs",
    arg("-c", "--clusterName", required=True, metavar="CLUSTER", help="the cluster to export"),
    arg(
        "-f",
        "--filePath",
        default="/tmp/rocketmq/export",
        help="directory of configs.json (default: /tmp/rocketmq/export)",
    ),
)
def export_configs(admin: Admin, args: argparse.Namespace) -> Result:
    brokers = admin.cluster_info().brokers_of(args.clusterName.strip())
    configs: dict[str, dict[str, str]] = {}
    slaves = 0
    for b in brokers:
        if b.master_addr is None:
            continue
        slaves += len(b.addrs) - 1
        resp = admin.broker(b.master_addr, RequestCode.GET_BROKER_CONFIG)
        props = _properties((resp.body or b"").decode("utf-8"))
        configs[props.get("brokerName", b.broker_name)] = {
            k: props[k] for k in EXPORTED_BROKER_KEYS if k in props
        }
    result = {
        "brokerConfigs": configs,
        "clusterScale": {
            "namesrvSize": len(admin.namesrv_addrs),
            "masterBrokerSize": len(configs),
            "slaveBrokerSize": slaves,
        },
    }
    path = Path(args.filePath.strip()) / "configs.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise AdminError(f"cannot write {path}: {exc.strerror} — choose another -f") from None
    return Result({"path": str(path), **result}, [f"export {path} success"])
