"""The official Apache RocketMQ Java client (tests/compat/java, rocketmq-client 4.9.8) with
``-Dtls.enable=true`` against an rmq nameserver and broker that enforce TLS: it produces and
consumes, once in RocketMQ's test mode (any server certificate trusted, the Java default) and
once verifying the servers against the test's CA (``tls.client.authServer`` with
``tls.client.trustCertPath``); without ``tls.enable`` it is refused. Needs Java 17 and Maven,
as tests/test_compat_java.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tls_helpers import Pki, TlsCluster, make_pki, server_keys

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from run_java_compat import JavaCompatError, run_check


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[tuple[Pki, str]]:
    pki = make_pki(tmp_path / "pki")
    with TlsCluster(tmp_path) as started:
        namesrv, _, _ = started.start(
            server_keys(pki, "enforcing"),
            server_keys(pki, "enforcing") + "tls.enable = true\ntls.test.mode.enable = true\n",
        )
        yield pki, namesrv.addr


def check(namesrv: str, topic: str, jvm_args: list[str]) -> None:
    summary = run_check(
        namesrv,
        topic,
        500,
        timeout=60.0,
        modes=("produce", "consume-lite"),
        jvm_args=["-Dtls.enable=true", *jvm_args],
    )
    assert summary["ok"]
    assert summary["produce"]["mismatches"] == 0
    lite = summary["consume-lite"]
    assert (lite["received"], lite["missing"], lite["duplicates"]) == (500, 0, 0)


@pytest.mark.timeout(600)
def test_java_client_over_tls_in_test_mode(cluster: tuple[Pki, str]) -> None:
    check(cluster[1], "tls_java_test_mode", [])


@pytest.mark.timeout(600)
def test_java_client_over_tls_verifying_the_servers(cluster: tuple[Pki, str]) -> None:
    pki, namesrv = cluster
    check(
        namesrv,
        "tls_java_verified",
        [
            "-Dtls.test.mode.enable=false",
            "-Dtls.client.authServer=true",
            f"-Dtls.client.trustCertPath={pki.ca}",
        ],
    )


@pytest.mark.timeout(600)
def test_java_client_without_tls_is_refused(cluster: tuple[Pki, str]) -> None:
    with pytest.raises(JavaCompatError, match="did not answer"):
        run_check(cluster[1], "tls_java_plain", 50, timeout=10.0, modes=("produce",))
