"""Shared fixtures: real rmq processes on 127.0.0.1 with ephemeral ports."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def namesrv() -> Iterator[tuple[subprocess.Popen[str], str]]:
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
def broker_addr(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[str]:
    """A broker (broker-a, 64 MiB CommitLog files, autoCreateTopicEnable) registered with
    ``namesrv``; yields the nameserver address, all a RocketMQ client needs."""
    from test_broker_cli import TEST_STORE_CONF, BrokerProcess, free_port

    _, ns_addr = namesrv
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClusterName = DefaultCluster\n"
        "brokerName = broker-a\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        "mappedFileSizeCommitLog = 67108864\n" + TEST_STORE_CONF
    )
    proc = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=tmp_path)
    try:
        proc.wait_for("listening on")
        yield ns_addr
    finally:
        proc.kill()
