"""Apache's Go client (``github.com/apache/rocketmq-client-go/v2``, pinned v2.1.2 and the
newest pseudo-version on the Go module proxy) against a real ``rmq.namesrv`` + ``rmq.broker``:
sync, async and batch sends; a ``*`` and a ``TagA || TagB`` push consumer that must each get
exactly their messages; orderly consumption; a retry that comes back with reconsumeTimes 1;
delay level 1 not delivered early (tests/compat/go/main.go). Needs Go (``make test`` checks)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from run_go_compat import PINNED_VERSION, run_check

# The newest pseudo-version the Go module proxy lists for the client (no tag after v2.1.2).
NEWEST_PSEUDO_VERSION = "v2.1.3-0.20251226070945-2173d070fd1b"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("client_version", [PINNED_VERSION, NEWEST_PSEUDO_VERSION])
def test_go_client_end_to_end(rmq_cluster: tuple[str, str], client_version: str) -> None:
    ns_addr, broker_addr = rmq_cluster
    summary = run_check(
        ns_addr, broker=broker_addr, count=60, timeout=60.0, client_version=client_version
    )
    phases = summary["phases"]
    produce = phases["produce-consume"]
    assert produce["sent"] == 180
    assert (produce["all"]["received"], produce["all"]["missing"]) == (180, 0)
    # TagA and TagB are two thirds of the messages; TagC must not reach the filtered group.
    assert (produce["tagAB"]["received"], produce["tagAB"]["unexpected"]) == (120, 0)
    assert phases["orderly"]["outOfOrder"] == 0
    assert phases["orderly"]["consumed"]["missing"] == 0
    assert phases["retry"]["reconsumeTimes"] == ["0:0,1", "1:0,1", "2:0,1", "3:0,1"]
    assert phases["delay"]["minDelayMs"] >= 1000
    assert summary["errors"] == []
