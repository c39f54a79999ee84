"""The official Apache RocketMQ Java client (4.9.8, from Maven Central) against a real
``rmq.namesrv`` and ``rmq.broker``: sync, async, oneway and batch sends with tags and keys, then
a push consumer, a tag-filtered push consumer and a lite pull consumer, each message checked
byte for byte (see tests/compat/README.md). Needs Java 17 and Maven (``make test`` installs
them with apt-get when missing)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from run_java_compat import run_check


@pytest.mark.timeout(600)
def test_java_client_sends_and_consumes_10000_messages(rmq_cluster: tuple[str, str]) -> None:
    summary = run_check(rmq_cluster[0], "compat_json", 10_000, timeout=120.0)
    assert summary["ok"]
    produce = summary["produce"]
    assert (produce["sync"], produce["async"], produce["oneway"], produce["batch"]) == (
        4000,
        2000,
        1000,
        3000,
    )
    assert produce["mismatches"] == 0
    assert summary["admin"]["ok"]
    assert summary["consume-push"]["ok"]
    lite = summary["consume-lite"]
    assert (lite["received"], lite["missing"], lite["duplicates"]) == (10_000, 0, 0)
    assert not summary["errors"]


@pytest.mark.timeout(600)
def test_java_client_with_binary_headers(rmq_cluster: tuple[str, str]) -> None:
    summary = run_check(
        rmq_cluster[0],
        "compat_binary",
        2_000,
        timeout=120.0,
        extra_args=["--serialize-type", "ROCKETMQ"],
    )
    assert summary["ok"]
    assert summary["consume-lite"]["missing"] == 0
