"""How many `rmq-io` network threads a process gets: half the CPUs it may use (at least one),
or `RMQ_IO_THREADS`; a bad value is warned about and the default used, never a crash."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Starts the runtime with a request from a client (refused: nothing listens there), which uses
# the workers alone (a server's Python handler would add blocking-pool threads, named alike),
# then prints how many of the process's threads are named rmq-io.
PROBE = """
import logging, os, socket
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
from rmq import errors
from rmq._rmq import RemotingClient

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
try:
    RemotingClient().invoke(f"127.0.0.1:{port}", 105, {}, None, 2000)
except errors.RemotingError:
    pass
names = []
for tid in os.listdir("/proc/self/task"):
    with open(f"/proc/self/task/{tid}/comm") as f:
        names.append(f.read().strip())
print(names.count("rmq-io"))
"""


def probe(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RMQ_IO_THREADS"}
    if value is not None:
        env["RMQ_IO_THREADS"] = value
    return subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60
    )


def default_threads() -> int:
    """Half of what Rust's `available_parallelism` sees: the CPUs this process may run on,
    bounded by a cgroup v2 quota (whole CPUs, at least one)."""
    cpus = len(os.sched_getaffinity(0))
    try:
        with open("/sys/fs/cgroup/cpu.max") as f:
            quota, period = f.read().split()
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cpus // 2)


def test_half_the_cpus_by_default() -> None:
    out = probe(None)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == default_threads()
    assert "RMQ_IO_THREADS" not in out.stderr


def test_the_variable_sets_the_number() -> None:
    out = probe("3")
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == 3


@pytest.mark.parametrize("bad", ["0", "many", "-2", "100000"])
def test_a_bad_value_is_warned_about_and_the_default_used(bad: str) -> None:
    out = probe(bad)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == default_threads()
    assert f"RMQ_IO_THREADS={bad!r}".replace("'", '"') in out.stderr, out.stderr
    assert "is not a number of threads from 1 to 256" in out.stderr
    assert "Traceback" not in out.stderr
