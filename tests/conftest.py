"""Shared fixtures: real rmq processes on 127.0.0.1 with ephemeral ports."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator

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
