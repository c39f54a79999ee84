"""The two systems under test in benches/vs_apache, started one at a time with a default store
in a fresh temp dir, and what is read about their processes from ``/proc``.

- :class:`RmqSystem`: ``python -m rmq.broker`` from the repository's venv with its embedded
  nameserver (one process).
- :class:`ApacheSystem`: Apache RocketMQ 4.9.7 through tests/compat/apache_broker's launcher,
  the broker with :data:`apache_rocketmq.BENCH_BROKER_JAVA_OPTIONS` (a 4 GiB G1 heap) and a
  default store; the nameserver keeps the launcher's small test JVM. Both JVMs count.

Each system exposes the pids whose CPU time and memory are the broker's, its nameserver
address, the time from ``start()`` to a first acknowledged send and its idle RSS.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Protocol

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "compat" / "apache_broker"))
import apache_rocketmq as apache_rocketmq  # noqa: E402  (on sys.path above; re-exported)

CLK_TCK = os.sysconf("SC_CLK_TCK")
START_TIMEOUT_S = 120.0
IDLE_SETTLE_S = 3.0
WORK_DIRS: list[Path] = []
"""Every temp dir made here: :func:`remove_work_dirs` removes what an interrupted ``stop()``
left."""


def work_dir(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    WORK_DIRS.append(path)
    return path


def remove_work_dirs() -> None:
    while WORK_DIRS:
        shutil.rmtree(WORK_DIRS.pop(), ignore_errors=True)


def cpu_seconds(pids: list[int]) -> float:
    """utime + stime of ``pids`` (all their threads), in seconds."""
    total = 0
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        total += int(fields[11]) + int(fields[12])  # fields 14 and 15 of proc(5)
    return total / CLK_TCK


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def rss_mib(pids: list[int], peak: bool = False) -> float:
    """Resident set (``VmRSS``) or its peak since the last :func:`reset_peak` (``VmHWM``)."""
    return sum(_status_kib(pid, "VmHWM" if peak else "VmRSS") for pid in pids) / 1024


def anon_rss_mib(pids: list[int]) -> float:
    """The anonymous part of the resident set (``RssAnon``): heap and buffers, without the
    mapped store files' page-cache pages that ``VmRSS`` counts too."""
    return sum(_status_kib(pid, "RssAnon") for pid in pids) / 1024


def reset_peak(pids: list[int]) -> None:
    """Restart ``VmHWM`` from the current RSS (``clear_refs`` 5; needs the processes' owner)."""
    for pid in pids:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


def first_send(namesrv: str, deadline: float) -> None:
    """Send one message with rmq's SDK, retrying until the route exists and a send is acked."""
    import rmq

    last = ""
    while time.monotonic() < deadline:
        producer = rmq.Producer("vs_apache_first_send", namesrv)
        try:
            producer.start()
            producer.send(rmq.Message("VsApacheFirstSend", b"x" * 1024))
            return
        except rmq.RmqError as e:
            last = str(e)
            time.sleep(0.05)
        finally:
            producer.shutdown()
    raise RuntimeError(f"no send was acknowledged by the broker at {namesrv}: {last}")


class System(Protocol):
    name: str
    namesrv_addr: str
    startup_s: float
    idle_rss_mib: float

    def pids(self) -> list[int]: ...
    def start(self) -> None: ...
    def stop(self) -> None: ...
    def log_tail(self) -> str: ...


class RmqSystem:
    """``python -m rmq.broker`` with its embedded nameserver and RocketMQ's default store."""

    name = "rmq"

    def __init__(self, flush: str, python: str) -> None:
        self.flush = flush
        self.python = python
        self.work = work_dir("vs-apache-rmq-")
        self.proc: subprocess.Popen[bytes] | None = None
        self.namesrv_addr = ""
        self.startup_s = 0.0
        self.idle_rss_mib = 0.0

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc else []

    def log(self) -> str:
        path = self.work / "broker.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def log_tail(self) -> str:
        return "\n".join(self.log().splitlines()[-30:])

    def start(self) -> None:
        port = apache_rocketmq.free_broker_port()
        conf = self.work / "broker.conf"
        conf.write_text(
            "brokerClusterName = DefaultCluster\nbrokerName = broker-a\n"
            f"brokerIP1 = 127.0.0.1\nlistenPort = {port}\n"
            f"storePathRootDir = {self.work / 'store'}\n"
            f"autoCreateTopicEnable = true\nflushDiskType = {self.flush}\n"
        )
        begin = time.monotonic()
        with (self.work / "broker.log").open("wb") as log:
            self.proc = subprocess.Popen(
                [
                    *apache_rocketmq.die_with_parent(),
                    self.python,
                    "-m",
                    "rmq.broker",
                    "-c",
                    str(conf),
                    "--namesrv-port",
                    "0",
                ],
                cwd=self.work,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = begin + START_TIMEOUT_S
        while not self.namesrv_addr:
            m = re.search(r"embedded nameserver listening on (\S+)", self.log())
            if m:
                self.namesrv_addr = m.group(1)
            elif self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"rmq broker did not start:\n{self.log_tail()}")
            else:
                time.sleep(0.01)
        first_send(self.namesrv_addr, deadline)
        self.startup_s = time.monotonic() - begin
        time.sleep(IDLE_SETTLE_S)
        self.idle_rss_mib = rss_mib(self.pids())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        shutil.rmtree(self.work, ignore_errors=True)


class ApacheSystem:
    """Apache RocketMQ 4.9.7's nameserver and broker (4 GiB G1 heap, default store)."""

    name = "apache"

    def __init__(self, flush: str) -> None:
        self.work = work_dir("vs-apache-apache-")
        self.rocketmq = apache_rocketmq.ApacheRocketMQ(
            self.work,
            broker_extra={"flushDiskType": flush},
            broker_java_options=apache_rocketmq.BENCH_BROKER_JAVA_OPTIONS,
            test_store=False,
        )
        self.namesrv_addr = ""
        self.startup_s = 0.0
        self.idle_rss_mib = 0.0

    def pids(self) -> list[int]:
        servers = (self.rocketmq.namesrv, self.rocketmq.broker)
        return [s.proc.pid for s in servers if s is not None]

    def log_tail(self) -> str:
        return str(self.rocketmq.log_tail())

    def start(self) -> None:
        apache_rocketmq.classpath()  # Maven's first resolution is not start-up time
        begin = time.monotonic()
        self.rocketmq.start()
        self.namesrv_addr = self.rocketmq.namesrv_addr
        first_send(self.namesrv_addr, begin + START_TIMEOUT_S)
        self.startup_s = time.monotonic() - begin
        time.sleep(IDLE_SETTLE_S)
        self.idle_rss_mib = rss_mib(self.pids())

    def stop(self) -> None:
        self.rocketmq.stop()
        shutil.rmtree(self.work, ignore_errors=True)
