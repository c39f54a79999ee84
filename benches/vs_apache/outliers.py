"""Where a sync send's latency outliers come from (issue 18, item 5), on rmq and on Apache
RocketMQ 4.9.7 alike.

For each system and flush mode it starts the broker (as ``run.py`` does), drives it with the
Java load generator's sync sends, records the kernel's scheduler for the measured window with
``perf sched record -a``, and then sets three figures side by side:

- the client's latency percentiles and maximum (the generator's HdrHistogram);
- the broker's own time for a put, as the broker reports it (``brokerStatus``:
  ``putMessageEntireTimeMax`` and ``putMessageDistributeTime``; rmq and Apache both fill them);
- the scheduling delays (``perf sched timehist``'s "sch delay": from a thread being woken to it
  running on a CPU) of the broker's threads and of the generator's, as a maximum and as counts
  above 1 ms and 10 ms.

A client maximum far above the broker's put times but close to the largest scheduling delays
says the outlier is time spent waiting for a CPU, not work. Needs ``perf`` (``apt-get install
linux-perf``) and the rights to trace the scheduler (root, or ``kernel.perf_event_paranoid``
≤ -1).

    python benches/vs_apache/outliers.py [--seconds 15] [--threads 32] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench  # the same generator, jar and markers as the main bench
import systems

TIMEHIST_TASK = re.compile(r"\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
STATUS_KEYS = ("putMessageEntireTimeMax", "putMessageDistributeTime")


@dataclass
class Delays:
    """Scheduling delays (ms) of one group of threads over the window."""

    wakeups: int = 0
    over_1ms: int = 0
    over_10ms: int = 0
    max_ms: float = 0.0

    def add(self, ms: float) -> None:
        self.wakeups += 1
        self.over_1ms += ms > 1.0
        self.over_10ms += ms > 10.0
        self.max_ms = max(self.max_ms, ms)

    def cell(self) -> str:
        return f"{self.max_ms:.1f} ms ({self.over_10ms} > 10 ms, {self.over_1ms} > 1 ms)"


def sched_delays(data: Path, groups: dict[str, set[int]]) -> dict[str, Delays]:
    """Per group of pids, the "sch delay" of every switch-in ``perf sched timehist`` lists."""
    out = subprocess.run(
        ["perf", "sched", "timehist", "-i", str(data)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return parse_timehist(out, groups)


def parse_timehist(text: str, groups: dict[str, set[int]]) -> dict[str, Delays]:
    """``perf sched timehist`` lines (``time [cpu] comm[tid/pid] wait sch_delay run``) into
    :class:`Delays` per group of pids; threads of no group count as "other"."""
    found = {name: Delays() for name in [*groups, "other"]}
    for line in text.splitlines():
        m = TIMEHIST_TASK.search(line)
        if not m:
            continue
        pid = int(m.group(2) or m.group(1))
        name = next((g for g, pids in groups.items() if pid in pids), "other")
        found[name].add(float(m.group(4)))
    return found


def broker_status(namesrv: str, python: str) -> dict[str, str]:
    """The put-time figures of the one broker registered with ``namesrv``."""
    clusters = subprocess.run(
        [python, "-m", "rmq.admin", "clusterList", "-n", namesrv],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    addr = re.search(r"\b(\d+\.\d+\.\d+\.\d+:\d+)\b", clusters)
    if addr is None:
        return {}
    status = subprocess.run(
        [python, "-m", "rmq.admin", "brokerStatus", "-n", namesrv, "-b", addr.group(1)],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    figures = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in STATUS_KEYS:
            figures[key.strip()] = value.strip()
    return figures


def one_run(
    args: argparse.Namespace, b: bench.Bench, system: systems.System, flush: str
) -> dict[str, Any]:
    system.start()
    try:
        cmd = b.java(
            "sync",
            "-n",
            system.namesrv_addr,
            "-t",
            f"Outliers{int(time.time())}",
            "-w",
            str(args.threads),
            "-s",
            "1024",
            "-d",
            str(args.seconds),
            "--warmup",
            "3",
        )
        data = Path(tempfile.mkdtemp(prefix="vs-apache-sched-")) / "sched.data"
        gen = subprocess.Popen(
            [*systems.apache_rocketmq.die_with_parent(), *cmd],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=b.client_home,
        )
        perf: subprocess.Popen[bytes] | None = None
        doc: dict[str, Any] = {}
        assert gen.stdout is not None
        for line in gen.stdout:
            line = line.strip()
            if line == bench.MEASURE_START:
                perf = subprocess.Popen(
                    ["perf", "sched", "record", "-a", "-o", str(data)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            elif line == bench.MEASURE_END and perf is not None:
                perf.send_signal(signal.SIGINT)
                perf.wait(60)
            elif line.startswith("{"):
                doc = json.loads(line)
        gen.wait(60)
        groups = {
            "broker": set(system.pids()),
            "generator": {gen.pid},
        }
        delays = sched_delays(data, groups)
        shutil.rmtree(data.parent, ignore_errors=True)
        status = broker_status(system.namesrv_addr, args.python)
    finally:
        system.stop()
    lat = doc.get("latency_ms", {})
    print(
        f"{system.name} {flush}: {doc.get('msgs_per_s', 0):,.0f} msg/s, max {lat.get('max')} ms,"
        f" broker put max {status.get('putMessageEntireTimeMax', '?')} ms",
        flush=True,
    )
    return {
        "system": system.name,
        "flush": flush,
        "doc": doc,
        "delays": delays,
        "status": status,
        "load": os.getloadavg(),
    }


def nonzero_buckets(distribution: str) -> str:
    """``[<=0ms]:9 [0~10ms]:0 [10~50ms]:2 ...`` without its empty buckets; "—" when the broker
    leaves it out (Apache 4.9.7 reports ``null``)."""
    kept = [b for b in distribution.split() if ":" in b and not b.endswith("]:0")]
    return " ".join(kept) or "—"


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Latency outliers of sync sends, rmq and Apache RocketMQ 4.9.7",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- command: `python benches/vs_apache/outliers.py {' '.join(sys.argv[1:])}`",
        f"- machine: {bench.machine()}",
        f"- load: Java generator, sync sends, {args.threads} threads, 1 KiB bodies, "
        f"{args.seconds} s measured under `perf sched record -a`",
        "",
        "Scheduling delay: from a thread being woken to it running on a CPU (`perf sched "
        "timehist`), largest in the window, with how many were over 10 ms and over 1 ms.",
        "",
        "| system | flush | msg/s | client p99 / p99.9 / max ms | broker put max ms | "
        "broker put times | broker threads' sched delay | generator threads' sched delay "
        "| load avg |",
        "|---|---|---:|---|---:|---|---|---|---|",
    ]
    for r in rows:
        lat = r["doc"].get("latency_ms", {})
        lines.append(
            f"| {r['system']} | {r['flush']} | {r['doc'].get('msgs_per_s', 0):,.0f} | "
            f"{lat.get('p99')} / {lat.get('p99.9')} / {lat.get('max')} | "
            f"{r['status'].get('putMessageEntireTimeMax', '?')} | "
            f"{nonzero_buckets(r['status'].get('putMessageDistributeTime', ''))} | "
            f"{r['delays']['broker'].cell()} | {r['delays']['generator'].cell()} | "
            f"{' '.join(f'{x:.1f}' for x in r['load'])} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--threads", type=int, default=32)
    p.add_argument("--flush", nargs="+", default=["ASYNC_FLUSH", "SYNC_FLUSH"])
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--out", type=Path, default=Path(__file__).parent / "OUTLIERS.md")
    args = p.parse_args()
    if shutil.which("perf") is None:
        sys.exit("outliers.py needs perf: apt-get install linux-perf")
    b = bench.Bench(argparse.Namespace(python=args.python))
    rows = []
    try:
        for flush in args.flush:
            rows.append(one_run(args, b, systems.RmqSystem(flush, args.python), flush))
            rows.append(one_run(args, b, systems.ApacheSystem(flush), flush))
    finally:
        b.close()
        systems.remove_work_dirs()
    args.out.write_text(report(args, rows))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
