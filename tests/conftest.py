"""Shared fixtures: real rmq processes on 127.0.0.1 with ephemeral ports."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from helpers import Cluster

# The rmq processes tests start log to stderr only, not to ~/logs/rmqlogs (a test that checks
# the log file passes --log-dir itself).
os.environ.setdefault("RMQ_LOG_DIR", "-")
# Nor do their nameservers share ~/namesrv/kvConfig.json (a test of the file sets kvConfigPath).
os.environ.setdefault("RMQ_KV_CONFIG_PATH", "-")


@pytest.fixture(scope="session", autouse=True)
def remove_append_windows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Remove the append windows (``/dev/shm/rmq-window-*``, see rmq-store's append_window)
    of the brokers this session killed: a killed broker leaves its window for the replay at
    its next start, and a store is only cleaned up by the next store started on the machine."""
    yield
    base = str(tmp_path_factory.getbasetemp())
    for window in Path("/dev/shm").glob("rmq-window-*"):
        with contextlib.suppress(OSError, UnicodeDecodeError):
            if (window / "store").read_text().startswith(base):
                shutil.rmtree(window)


@contextlib.contextmanager
def start_namesrv() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A real ``rmq.namesrv`` on an ephemeral port; yields the process and its address."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.namesrv", "--host", "127.0.0.1", "-p", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    addr = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        if m:
            addr = m.group(1)
            break
    assert addr, "nameserver did not start"
    try:
        yield proc, addr
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        proc.stderr.close()


@pytest.fixture
def namesrv() -> Iterator[tuple[subprocess.Popen[str], str]]:
    with start_namesrv() as started:
        yield started


@pytest.fixture
def cluster(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[Cluster]:
    """A nameserver and one broker, ``broker-a`` (:class:`helpers.Cluster`); modules that need
    another cluster define a ``cluster`` fixture of their own."""
    from helpers import Cluster

    c = Cluster(tmp_path, namesrv[1])
    c.start_broker("broker-a")
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def module_namesrv() -> Iterator[tuple[subprocess.Popen[str], str]]:
    """One nameserver for every test of a module (for module- or class-scoped brokers)."""
    with start_namesrv() as started:
        yield started


# Every delay level one second, as in the Apache broker the compatibility tests start
# (tests/compat/apache_broker): a consume failure comes back after level 3 + reconsumeTimes,
# and a client test should not wait 10 s for it.
FAST_DELAY_LEVELS = " ".join(["1s"] * 18)


@pytest.fixture
def rmq_cluster(
    tmp_path_factory: pytest.TempPathFactory, namesrv: tuple[subprocess.Popen[str], str]
) -> Iterator[tuple[str, str]]:
    """A real ``rmq.namesrv`` and ``rmq.broker`` (``broker-a``, auto-create on, fast delay
    levels); yields ``(namesrv_addr, broker_addr)``."""
    from helpers import BrokerProcess, free_port, write_broker_conf

    work = tmp_path_factory.mktemp("rmq-cluster")
    _, ns_addr = namesrv
    port = free_port()
    conf = write_broker_conf(work, port, f"messageDelayLevel = {FAST_DELAY_LEVELS}\n")
    broker = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=work)
    try:
        broker.wait_for("listening on")
        yield ns_addr, f"127.0.0.1:{port}"
    finally:
        broker.kill()
