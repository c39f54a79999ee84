"""``haStatus`` (mqadmin's name and flags): how far each broker group's slaves are behind.

The body is GET_BROKER_HA_STATUS's (907) ``HARuntimeInfo`` JSON. For a master it shows its
CommitLog max offset and, per connected slave, the offset the slave acknowledged, the lag in
bytes (``diff``) and in time: how long ago the oldest message the slave lacks was stored (its
store timestamp, read with VIEW_MESSAGE_BY_ID at the slave's acknowledged offset; 0 when the
slave has everything, "-" when that offset is not the start of a record). For a slave it shows
the master it follows, its own max offset and when it last read from the master.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from rmq.admin.client import MASTER_ID, Admin
from rmq.admin.command import broker_or_cluster, subcommand
from rmq.admin.output import Result, table
from rmq.codes import RequestCode
from rmq.errors import RmqError


def ha_status(admin: Admin, addr: str) -> dict[str, Any]:
    """GET_BROKER_HA_STATUS of one broker: its ``HARuntimeInfo``."""
    body = admin.broker_json(addr, RequestCode.GET_BROKER_HA_STATUS)
    return body if isinstance(body, dict) else {}


def _lag_ms(admin: Admin, master: str, ack_offset: int, diff: int, now_ms: int) -> int | None:
    """Age of the oldest message the slave lacks (0 when it lacks none)."""
    from rmq._rmq import decode_messages

    if diff <= 0:
        return 0
    try:
        resp = admin.broker(master, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(ack_offset)})
        found = decode_messages(resp.body) if resp.body else []
    except (RmqError, ValueError):
        return None
    return max(0, now_ms - found[0].store_timestamp) if found else None


def _targets(admin: Admin, args: argparse.Namespace) -> list[tuple[str, bool]]:
    """(address, is master) of ``-b``, or of every broker of ``-c``."""
    if args.brokerAddr:
        return [(admin.broker_addr(args.brokerAddr), True)]
    out = []
    for b in admin.cluster_info().brokers_of(args.clusterName.strip()):
        for bid, addr in sorted(b.addrs.items()):
            out.append((addr, bid == MASTER_ID))
    return out


@subcommand(
    "haStatus",
    "Fetch ha runtime status data",
    broker_or_cluster("which broker to fetch", "which cluster"),
)
def ha_status_command(admin: Admin, args: argparse.Namespace) -> Result:
    now_ms = int(time.time() * 1000)
    docs: dict[str, Any] = {}
    lines: list[str] = []
    warnings: list[str] = []
    for addr, _ in _targets(admin, args):
        try:
            info = ha_status(admin, addr)
        except RmqError as exc:
            warnings.append(str(exc))
            continue
        conns = info.get("haConnectionInfo") or []
        is_master = bool(info.get("master"))
        doc: dict[str, Any] = {"addr": addr, **info}
        if lines:
            lines.append("")
        if is_master:
            slaves = []
            for c in conns:
                ack = int(c.get("slaveAckOffset", 0))
                diff = int(c.get("diff", 0))
                lag = _lag_ms(admin, addr, ack, diff, now_ms)
                slaves.append({**c, "lagMs": lag})
            doc["haConnectionInfo"] = slaves
            lines += [
                f"#MasterAddr: {addr}",
                f"#MasterCommitLogMaxOffset: {info.get('masterCommitLogMaxOffset', 0)}",
                f"#SlaveNum: {len(conns)}",
                f"#InSyncSlaveNum: {info.get('inSyncSlaveNums', 0)}",
            ]
            lines += table(
                ("SlaveAddr", "SlaveAckOffset", "Diff", "Lag(ms)", "TransferSpeed(KB/s)", "InSync"),
                (
                    (
                        s.get("addr", ""),
                        s.get("slaveAckOffset", 0),
                        s.get("diff", 0),
                        "-" if s["lagMs"] is None else s["lagMs"],
                        f"{int(s.get('transferredByteInSecond', 0)) / 1024:.2f}",
                        "OK" if s.get("inSync") else "Fall Behind",
                    )
                    for s in slaves
                ),
            )
        else:
            client = info.get("haClientRuntimeInfo") or {}
            last_read = int(client.get("lastReadTimestamp", 0) or 0)
            ago = f"{(now_ms - last_read) / 1000:.1f} s ago" if last_read > 0 else "never"
            lines += [
                f"#SlaveAddr: {addr}",
                f"#MasterAddr: {client.get('masterAddr', '')}",
                f"#CommitLogMaxOffset: {client.get('maxOffset', 0)}",
                f"#TransferSpeed(KB/s): {int(client.get('transferredByteInSecond', 0)) / 1024:.2f}",
                f"#LastReadFromMaster: {ago}",
                f"#Activated: {bool(client.get('isActivated'))}",
            ]
        docs[addr] = doc
    data: Any = next(iter(docs.values()), {}) if args.brokerAddr else docs
    return Result(data, lines, warnings)
