"""The campaign's report: ``report.json`` (every figure) and ``report.md`` (a summary).

``RELIABILITY.md`` quotes the markdown summary of a run made on the project's machine; the
JSON is for tools (and for comparing runs).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

from chaos.cluster import STORE_CONF


def machine() -> dict[str, Any]:
    cpu = "unknown"
    with open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as mem:
        total_kib = int(mem.readline().split()[1])
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(total_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "commit": commit or "unknown",
    }


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _phase_row(p: dict[str, Any]) -> str:
    if "error" in p:
        cells = [p["phase"], p["flush"], p["crash"], str(p.get("cycles", 0)), "error"]
        return "| " + " | ".join(cells) + " |" + " |" * 7
    return (
        f"| {p['phase']} | {p['flush']} | {p['crash']} | {p['cycles']} | {p['acked']} "
        f"| **{p['lost']}** | {p['duplicated']} | {p['unacked_present']} "
        f"| {p['lost_per_crash_max']} | {p['acked_lost_from_commitlog']} "
        f"| {p['acked_in_commitlog_unreachable']} | {p['served_twice']} |"
    )


def markdown(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [
        f"# make chaos: {'PASSED' if report['passed'] else 'FAILED'}",
        "",
        f"- command: `{report['command']}`",
        f"- started {report['started_utc']} UTC, took {report['seconds']:.0f} s",
        f"- machine: {m['cpus']} cores ({m['cpu']}), {m['memory_gib']} GiB, Linux "
        f"{m['kernel']}, Python {m['python']}, commit {m['commit']}",
        f"- load average at start {report['load_start']}, at end {report['load_end']}",
        "",
    ]
    if report["phases"]:
        lines += [
            "## Crash cycles",
            "",
            "| phase | flush | crash | cycles | acked | lost | duplicated | unacked but present "
            "| most lost in one crash | of them gone from the CommitLog | of them in the "
            "CommitLog but unreachable | reads served at a wrong queue offset |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *(_phase_row(p) for p in report["phases"]),
            "",
        ]
    for p in report["phases"]:
        if "error" in p:
            lines += [f"- **{p['phase']}** failed: {p['error'][:500]}", ""]
        elif p["flush"] == "ASYNC_FLUSH" and p["crash"] == "powerloss":
            worst = p["lost_from_commitlog_per_crash_max"]
            ms = 1000 * worst / max(1, p["acked_per_second"])
            conf = {**STORE_CONF, **p["store_config"]}
            size = int(conf["mappedFileSizeCommitLog"]) >> 20
            units = int(conf["mappedFileSizeConsumeQueue"]) // 20
            lines += [
                f"- {p['phase']} ({size} MiB CommitLog files, ConsumeQueue files of {units} "
                f"units): at most {worst} acked "
                f"messages gone from the CommitLog in one power loss, about {ms:.0f} ms of load "
                f"at {p['acked_per_second']} acked/s.",
            ]
    sc = report.get("selfcheck", {})
    lines += [
        "",
        f"Power-loss layer self-check: {'ok' if sc.get('ok') else 'FAILED'} "
        f"({sum(sc.get('checks', {}).values())}/{len(sc.get('checks', {}))} checks).",
        "",
    ]
    h = report.get("ha")
    if h:
        lines += ["## Replication: kill -9 of a SYNC_MASTER", ""]
        if "error" in h:
            lines += [f"- failed after {h.get('cycles', 0)} cycles: {h['error'][:500]}", ""]
        else:
            lines += [
                f"- {h['cycles']} cycles, {h['threads']} Python SDK and "
                f"{max(1, h['threads'] // 2)} Java client producer threads: {h['acked']} acked "
                f"({h['acked_by_java']} by Java), "
                f"**{h['lost']} lost**, {h['duplicated']} duplicated, {h['unacked_present']} "
                "unacked but present",
                f"- the push consumer had every message acked before a kill from the slave "
                f"after {h['carry_on_seconds_median']} s (median), {h['carry_on_seconds_max']} s "
                f"(max); {h['acked_missing_after_carry_on']} still missing after 30 s",
                f"- master restarts took at most {h['restart_seconds_max']} s; at the end the "
                f"slave caught up in {h['final_catch_up_seconds']} s and the CommitLogs "
                f"({h['commit_log_bytes']} bytes) are "
                f"{'identical' if h['commit_logs_identical'] else '**different**'}",
                "",
            ]
    mem = report.get("memory")
    if mem:
        lines += [
            "## Memory per connection",
            "",
            f"- broker RSS at rest: {mem['rss_at_rest_bytes'] / 2**20:.1f} MiB",
            f"- {mem['idle_connections']} idle connections: "
            f"{mem['bytes_per_idle_connection'] / 1024:.1f} KiB each "
            f"({mem['idle_connections_still_open']} still open after the measurement)",
            f"- {mem['stalled_frames']} connections each sending the first "
            f"{mem['frame_sent_bytes'] // 1024} KiB of a "
            f"{mem['frame_announced_bytes'] >> 20} MiB frame: "
            f"{mem['bytes_per_stalled_frame'] / 1024:.1f} KiB each; "
            f"{mem['stalled_closed_by_broker_after_timeout']}/{mem['stalled_frames']} closed by "
            "the broker after the frame stall timeout",
            "",
        ]
    if report.get("failures"):
        lines += ["## Failures", "", *(f"- {f}" for f in report["failures"]), ""]
    return "\n".join(lines)


def write(out: Path, report: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "report.md").write_text(markdown(report))


def utc_now() -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime())
