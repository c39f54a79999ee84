"""Alibaba's ali-ons (the RocketMQ 4.x Node client, pinned in tests/compat/node) against a real
``rmq.namesrv`` + ``rmq.broker``: sync sends with tags and keys, a ``*`` and a ``TagA || TagB``
push consumer that must each get exactly their messages, a retry that comes back with
reconsumeTimes 1, delay level 1 not delivered early (tests/compat/node/compat.js). ali-ons has
no batch send and no orderly consumer. Needs Node.js and npm (``make test`` checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from run_node_compat import run_check


@pytest.mark.timeout(300)
def test_ali_ons_end_to_end(rmq_cluster: tuple[str, str]) -> None:
    ns_addr, broker_addr = rmq_cluster
    summary = run_check(ns_addr, broker_addr, count=30, timeout=60.0)
    phases = summary["phases"]
    assert phases["produce"]["sent"] == 30
    assert (phases["all"]["received"], phases["all"]["missing"]) == (30, 0)
    assert (phases["tagAB"]["received"], phases["tagAB"]["unexpected"]) == (20, 0)
    assert phases["retry"]["reconsumeTimes"] == ["0:0,1", "1:0,1", "2:0,1", "3:0,1"]
    assert phases["delay"]["minDelayMs"] >= 1000
    assert summary["errors"] == []
