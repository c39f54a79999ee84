"""Replication figures, each against a baseline measured in the same run.

1. **SYNC_MASTER against ASYNC_MASTER throughput**: a master and its slave (both ASYNC_FLUSH,
   RocketMQ's recommended pair), ``python -m rmq.bench producer --async -i 64`` of 1 KiB bodies
   for ``--seconds``; the two roles alternate over ``--rounds`` rounds (fresh stores each time).
2. **Replication lag under a steady load**: an ASYNC_MASTER at ``--rate`` msg/s of 1 KiB (the
   bench producer's ``--rate``); the master's and the slave's CommitLog max offsets are sampled
   every 10 ms (GET_BROKER_RUNTIME_INFO to the slave, then to the master); lag = master -
   slave in bytes, and in ms at the rate achieved. Baseline: the same sampling with both
   requests to the master (what the master writes between the two reads).

The catch-up rate of a slave far behind is ``benches/ha_catchup.py``.

    .venv/bin/python benches/ha_replication.py [--rounds 3] [--seconds 15] [--rate 50000]

Prints one line per measurement and a JSON summary (medians) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # chaos.cluster: the namesrv and broker processes
from chaos.cluster import Broker, Namesrv, free_port  # noqa: E402
from chaos.ha import max_offset  # noqa: E402
from rmq._rmq import RemotingClient  # noqa: E402

TOPIC = "BenchHa"
FILE_SIZE = 1 << 30  # RocketMQ's default CommitLog file: the catch-up reads whole files
STORE = {
    "mappedFileSizeCommitLog": str(FILE_SIZE),
    "mappedFileSizeConsumeQueue": "600000",
    "maxHashSlotNum": "5000",
    "maxIndexNum": "20000",
    "diskSpaceWarningLevelRatio": "99",
    "diskSpaceCleanForciblyRatio": "99",
    "defaultTopicQueueNums": "8",
}


def say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


class Group:
    """A nameserver, a master of ``role`` and (optionally started) slave, fresh stores."""

    def __init__(self, work: Path, role: str) -> None:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        self.ns = Namesrv(work)
        common = {"brokerName": "bench-ha", **STORE}
        self.master = Broker(
            work,
            work / "master",
            self.ns.addr,
            "ASYNC_FLUSH",
            {**common, "brokerRole": role, "haListenPort": str(free_port())},
            name="master",
        )
        self.slave = Broker(
            work,
            work / "slave",
            self.ns.addr,
            "ASYNC_FLUSH",
            {**common, "brokerRole": "SLAVE", "brokerId": "1"},
            name="slave",
        )
        self.work = work

    def stop(self) -> None:
        for b in (self.master, self.slave):
            b.kill9()
        self.ns.stop()
        shutil.rmtree(self.work, ignore_errors=True)


def bench_producer(namesrv: str, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "rmq.bench", "producer", "-n", namesrv, "-t", TOPIC, "-q",
         "--json", "-s", "1024", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"bench producer failed: {done.stderr[-2000:]}")
    doc: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return doc


def wait_caught_up(client: RemotingClient, g: Group, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m, s = max_offset(client, g.master.addr), max_offset(client, g.slave.addr)
        if m is not None and m == s:
            return
        time.sleep(0.01)
    raise SystemExit("the slave did not catch up")


def throughput(work: Path, role: str, seconds: int) -> float:
    g = Group(work, role)
    try:
        g.master.start()
        g.slave.start()
        g.master.create_topic()
        client = RemotingClient()
        # Wait for the slave to connect: a SYNC_MASTER without one answers SLAVE_NOT_AVAILABLE.
        bench_producer(g.ns.addr, "-c", "100", "-w", "1")
        wait_caught_up(client, g)
        client.close()
        tps = float(bench_producer(g.ns.addr, "--async", "-i", "64", "-d", str(seconds))["tps"])
        say(f"throughput {role}: {tps:.0f} msg/s")
        return tps
    finally:
        g.stop()


def lag(work: Path, rate: int, seconds: int) -> dict[str, float]:
    g = Group(work, "ASYNC_MASTER")
    try:
        g.master.start()
        g.slave.start()
        g.master.create_topic()
        client = RemotingClient()
        lags: list[int] = []
        base: list[int] = []
        stop = threading.Event()

        def sample(master: str, slave: str, out: list[int]) -> None:
            # The slave first: the master's offset read after it can only be further, so
            # the baseline (both reads from the master) is what the sampling adds.
            while not stop.is_set():
                s, m = max_offset(client, slave), max_offset(client, master)
                if m is not None and s is not None:
                    out.append(max(0, m - s))
                time.sleep(0.01)

        t = threading.Thread(target=sample, args=(g.master.addr, g.slave.addr, lags))
        t.start()
        first = max_offset(client, g.master.addr) or 0
        sent = bench_producer(
            g.ns.addr, "--async", "-i", "256", "--rate", str(rate), "-d", str(seconds)
        )
        stop.set()
        t.join()
        written = (max_offset(client, g.master.addr) or 0) - first
        # Baseline: the sampling's own reading, both requests to the master, under the same
        # load (what a lag of zero looks like through two sequential requests).
        stop.clear()
        t = threading.Thread(target=sample, args=(g.master.addr, g.master.addr, base))
        t.start()
        bench_producer(g.ns.addr, "--async", "-i", "256", "--rate", str(rate), "-d", "5")
        stop.set()
        t.join()
        client.close()
        achieved = float(sent["tps"])
        bytes_per_ms = max(1.0, written / (float(sent["elapsed_s"]) * 1000))
        q = statistics.quantiles(lags, n=100)
        qb = statistics.quantiles(base, n=100)
        out = {
            "rate_asked": rate,
            "rate_achieved": round(achieved),
            "samples": len(lags),
            "lag_p50_bytes": q[49],
            "lag_p99_bytes": q[98],
            "lag_p99_ms": round(q[98] / bytes_per_ms, 2),
            "baseline_p99_bytes": qb[98],
            "baseline_p99_ms": round(qb[98] / bytes_per_ms, 2),
        }
        say(f"lag: {out}")
        return out
    finally:
        g.stop()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--rate", type=int, default=50_000)
    p.add_argument("--work", type=Path, default=ROOT / "target" / "bench-tmp" / "ha")
    args = p.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    ratios, sync_tps, async_tps = [], [], []
    for r in range(args.rounds):
        order = ["SYNC_MASTER", "ASYNC_MASTER"] if r % 2 == 0 else ["ASYNC_MASTER", "SYNC_MASTER"]
        got = {role: throughput(args.work, role, args.seconds) for role in order}
        sync_tps.append(got["SYNC_MASTER"])
        async_tps.append(got["ASYNC_MASTER"])
        ratios.append(got["SYNC_MASTER"] / got["ASYNC_MASTER"])
    summary: dict[str, Any] = {"load_average_start": load}
    if ratios:
        summary["sync_master_tps_median"] = round(statistics.median(sync_tps))
        summary["async_master_tps_median"] = round(statistics.median(async_tps))
        summary["sync_over_async_median"] = round(statistics.median(ratios), 3)
    summary |= {
        "lag": lag(args.work, args.rate, args.seconds),
        "load_average_end": " ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
