"""Processes the campaign starts, kills and restarts: a nameserver, a broker, the FUSE layer.

Every process is a real ``python -m ...`` child on 127.0.0.1, its stderr appended to a log
file under the campaign's work folder (the report names the file when something fails). The
broker keeps one port across restarts, so producers keep their route and reconnect.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

TOPIC = "ChaosTopic"
QUEUES = 4

# Small CommitLog files so that a few thousand messages roll several of them, small
# ConsumeQueue and index files (the defaults allocate 6 MB per queue and 420 MB of index),
# and disk guards at 99 % so that a busy shared disk does not refuse the campaign's writes.
STORE_CONF = {
    "mappedFileSizeCommitLog": str(1 << 20),
    "mappedFileSizeConsumeQueue": "60000",
    "maxHashSlotNum": "5000",
    "maxIndexNum": "20000",
    "diskSpaceWarningLevelRatio": "99",
    "diskSpaceCleanForciblyRatio": "99",
}


class CampaignError(RuntimeError):
    """A step of the campaign could not be carried out (not a finding about the broker)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _child(
    args: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def wait_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    """Wait until something accepts on ``port``; fail with the log's tail if ``proc`` died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-3000:]
            raise CampaignError(f"process exited ({proc.returncode}); {log} ends with:\n{tail}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise CampaignError(f"nothing listened on port {port} within {timeout:.0f} s; see {log}")


class Namesrv:
    """A nameserver that stays up for a whole phase."""

    def __init__(self, work: Path) -> None:
        self.port = free_port()
        self.log = work / "namesrv.log"
        self.proc = _child(
            ["-m", "rmq.namesrv", "--host", "127.0.0.1", "-p", str(self.port)], self.log, work
        )
        wait_port(self.port, self.proc, self.log, 60)
        self.addr = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        _kill(self.proc)


class Broker:
    """One broker configuration, started and killed as often as the campaign wants."""

    def __init__(
        self,
        work: Path,
        store: Path,
        namesrv: str,
        flush: str,
        extra: dict[str, str],
        name: str = "broker",
    ) -> None:
        self.work = work
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.namesrv = namesrv
        self.store = store
        self.conf = work / f"{name}.conf"
        self.log = work / f"{name}.log"
        conf = {
            "brokerClusterName": "ChaosCluster",
            "brokerName": "broker-chaos",
            "brokerIP1": "127.0.0.1",
            "listenPort": str(self.port),
            "storePathRootDir": str(store),
            "flushDiskType": flush,
            **STORE_CONF,
            **extra,
        }
        self.conf.write_text("".join(f"{k} = {v}\n" for k, v in conf.items()))
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise CampaignError("the broker is not running")
        return self.proc.pid

    def start(self, timeout: float = 120) -> float:
        """Start and wait until it accepts connections; returns the seconds that took."""
        t0 = time.monotonic()
        with self.log.open("a") as out:
            out.write(f"\n==== start {self.starts} ====\n")
        self.proc = _child(
            ["-m", "rmq.broker", "-c", str(self.conf), "-n", self.namesrv], self.log, self.work
        )
        self.starts += 1
        wait_port(self.port, self.proc, self.log, timeout)
        return time.monotonic() - t0

    def kill9(self) -> None:
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM and wait: a clean shutdown."""
        if self.proc is None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(self.proc)
            code = -9
        self.proc = None
        return code

    def create_topic(self) -> None:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "rmq.admin",
                "updateTopic",
                "-n",
                self.namesrv,
                "-b",
                self.addr,
                "-t",
                TOPIC,
                "-r",
                str(QUEUES),
                "-w",
                str(QUEUES),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        if done.returncode != 0:
            raise CampaignError(f"updateTopic failed: {done.stdout}{done.stderr}")

    def log_lines(self, pattern: str) -> list[str]:
        """The broker log's lines matching ``pattern`` (a regex)."""
        rx = re.compile(pattern)
        return [ln for ln in self.log.read_text(errors="replace").splitlines() if rx.search(ln)]


class PowerLossMount:
    """The FUSE layer of :mod:`chaos.powerloss_fs` over ``backing``, mounted on ``mountpoint``."""

    def __init__(self, backing: Path, mountpoint: Path, log: Path) -> None:
        self.backing = backing
        self.mountpoint = mountpoint
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        backing.mkdir(parents=True, exist_ok=True)
        mountpoint.mkdir(parents=True, exist_ok=True)

    def mount(self) -> None:
        # The daemon runs in another folder: it finds the chaos package through PYTHONPATH.
        repo = str(Path(__file__).resolve().parent.parent)
        paths = [repo, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        self.proc = _child(
            ["-m", "chaos.powerloss_fs", str(self.backing), str(self.mountpoint)],
            self.log,
            self.backing.parent,
            {**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        )
        deadline = time.monotonic() + 30
        while not os.path.ismount(self.mountpoint):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-3000:]
                raise CampaignError(
                    f"the FUSE layer did not mount {self.mountpoint} "
                    f"(needs root, /dev/fuse and libfuse3: `make chaos` installs it); "
                    f"{self.log} ends with:\n{tail}"
                )
            time.sleep(0.05)

    def power_loss(self) -> None:
        """SIGKILL the layer: what it held unsynced is gone (call :meth:`unmount` next, once
        the processes using the mount are gone too)."""
        if self.proc is not None:
            _kill(self.proc)
            self.proc = None

    def mounted(self) -> bool:
        """Whether the kernel lists the mount (a dead FUSE mount fails ``stat``, so
        ``os.path.ismount`` cannot tell)."""
        where = str(self.mountpoint.resolve())
        with open("/proc/self/mounts") as mounts:
            return any(line.split()[1] == where for line in mounts)

    def unmount(self) -> None:
        if self.mounted():
            subprocess.run(["umount", "-l", str(self.mountpoint)], check=False)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _kill(self.proc)
            self.proc = None
