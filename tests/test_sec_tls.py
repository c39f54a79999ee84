"""TLS end to end with real processes and certificates made by the test (tests/tls_helpers.py):
an enforcing nameserver and broker serve the SDK and the admin tool over TLS, the broker
registers over TLS, plain clients are refused (one log line per peer); a permissive broker
serves plain and TLS clients on one port; mutual TLS refuses a client without a trusted
certificate; a bad certificate path stops start-up naming the key and the file."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import BrokerProcess, free_port
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode
from rmq.errors import ConfigError, RemotingConnectError, RmqError
from tls_helpers import Pki, TlsCluster, encrypt_key, make_pki, server_keys


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[TlsCluster]:
    with TlsCluster(tmp_path) as started:
        yield started


def pull_all(
    namesrv: str, topic: str, group: str, count: int, *, more: bool = False, **tls: object
) -> list[bytes]:
    """Pull ``topic`` from its first offset with a new group until ``count`` messages came
    (``more``: then poll once more, for any message beyond them)."""
    got: list[bytes] = []
    with rmq.PullConsumer(
        group,
        namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **tls,  # type: ignore[arg-type]
    ) as consumer:
        consumer.subscribe(topic)
        deadline = time.monotonic() + 30
        while len(got) < count and time.monotonic() < deadline:
            got.extend(m.body for m in consumer.poll(3000))
        if more:
            got.extend(m.body for m in consumer.poll(1000))
    return got


def send_and_pull(namesrv: str, topic: str, group: str, count: int, **tls: object) -> list[bytes]:
    """Send ``count`` messages (one of them 300 KiB) and pull them back, both over ``tls``."""
    bodies = [b"m%d" % i for i in range(count - 1)] + [bytes(range(256)) * 1200]
    with rmq.Producer(f"{group}-p", namesrv, **tls) as producer:  # type: ignore[arg-type]
        for body in bodies:
            producer.send(rmq.Message(topic, body))
    got = pull_all(namesrv, topic, group, count, **tls)
    assert sorted(got) == sorted(bodies)
    return got


def admin(namesrv: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rmq.admin", "-n", namesrv, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_enforcing_serves_tls_clients_and_refuses_plain_ones(pki: Pki, cluster: TlsCluster) -> None:
    namesrv, broker_addr, broker = cluster.start(
        server_keys(pki, "enforcing"),
        server_keys(pki, "enforcing") + f"tls.enable = true\ntls.client.trustCertPath = {pki.ca}\n",
    )
    ns = namesrv.addr
    # The broker registered with the enforcing nameserver (over TLS): its topic routes work.
    sent = send_and_pull(ns, "TlsTopic", "tls-group", 20, tls=True, tls_ca=str(pki.ca))

    listed = admin(ns, "--tls", "--tls-ca", str(pki.ca), "clusterList")
    assert listed.returncode == 0, listed.stderr
    assert "broker-a" in listed.stdout
    plain_admin = admin(ns, "clusterList")
    assert plain_admin.returncode == 1

    # Plain clients are closed by the nameserver and by the broker (a few tries each).
    with (
        pytest.raises(RmqError),
        rmq.Producer("plain-p", ns, retry_times_when_send_failed=3) as producer,
    ):
        producer.send(rmq.Message("TlsTopic", b"plain"))
    plain = RemotingClient()
    for _ in range(3):
        with pytest.raises(RemotingConnectError):
            plain.invoke(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        plain.close()
    # A client that verifies against another CA refuses the servers.
    with (
        pytest.raises(RmqError),
        rmq.Producer("wrong-ca", ns, tls=True, tls_ca=str(pki.other_ca)) as producer,
    ):
        producer.send(rmq.Message("TlsTopic", b"x"))

    # Nothing plain was stored: the topic holds what the TLS producer sent, no more.
    stored = pull_all(ns, "TlsTopic", "tls-group-2", 20, tls=True, tls_ca=str(pki.ca), more=True)
    assert sorted(stored) == sorted(sent)
    broker.kill()
    for log in (broker.log, namesrv.log):
        refusals = [line for line in log.splitlines() if "accepts TLS only" in line]
        assert len(refusals) == 1, f"one log line per refused peer per minute: {log}"
        assert "127.0.0.1" in refusals[0] and "tls=True" in refusals[0]


def test_permissive_serves_plain_and_tls_on_one_port(pki: Pki, cluster: TlsCluster) -> None:
    namesrv, _, _ = cluster.start(server_keys(pki, "permissive"), server_keys(pki, "permissive"))
    ns = namesrv.addr
    send_and_pull(ns, "Mixed", "mixed-plain", 5)
    # tls_verify=False: RocketMQ's test mode, any server certificate is trusted.
    send_and_pull(ns, "Mixed2", "mixed-tls", 5, tls=True, tls_verify=False)
    listed = admin(ns, "--tls", "--tls-insecure", "topicList")
    assert listed.returncode == 0, listed.stderr


def test_mutual_tls_refuses_a_client_without_a_trusted_certificate(
    pki: Pki, cluster: TlsCluster
) -> None:
    # Mutual TLS on the broker; the nameserver asks for no client certificate.
    namesrv, _, _ = cluster.start(
        server_keys(pki, "enforcing"),
        server_keys(pki, "enforcing")
        + "tls.enable = true\ntls.test.mode.enable = true\n"
        + f"tls.server.need.client.auth = require\ntls.server.trustCertPath = {pki.ca}\n",
    )
    ns = namesrv.addr
    # A TLS client speaks TLS to the nameserver too (as RocketMQ's tls.enable does).
    mtls = {
        "tls": True,
        "tls_ca": str(pki.ca),
        "tls_cert": str(pki.client_cert),
        "tls_key": str(pki.client_key),
    }
    send_and_pull(ns, "Mutual", "mutual", 5, **mtls)
    listed = admin(
        ns,
        *("--tls-ca", str(pki.ca), "--tls-cert", str(pki.client_cert)),
        *("--tls-key", str(pki.client_key), "topicRoute", "-t", "Mutual", "-l"),
    )
    assert listed.returncode == 0, listed.stderr
    for identity in ({}, {"tls_cert": str(pki.stranger_cert), "tls_key": str(pki.stranger_key)}):
        with (
            pytest.raises(RmqError),
            rmq.Producer(
                "no-cert", ns, tls=True, tls_ca=str(pki.ca), instance_name=str(identity), **identity
            ) as producer,
        ):
            producer.send(rmq.Message("Mutual", b"x"))


def test_bad_tls_settings_stop_start_up_naming_the_key(pki: Pki, tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName = broker-a\n"
        f"listenPort = {free_port()}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        "tls.server.mode = enforcing\n"
        "tls.enable = true\n"  # it registers with its embedded nameserver over TLS
        f"tls.server.certPath = {tmp_path / 'missing.pem'}\n"
        f"tls.server.keyPath = {pki.server_key}\n"
    )
    broker = BrokerProcess("-c", str(conf), cwd=tmp_path)
    assert broker.finish() == 1
    assert f"tls.server.certPath = {tmp_path / 'missing.pem'}: cannot be read" in broker.log

    ns_conf = tmp_path / "namesrv.conf"
    ns_conf.write_text(f"tls.server.mode = permissive\ntls.server.certPath = {pki.server_cert}\n")
    done = subprocess.run(
        [sys.executable, "-m", "rmq.namesrv", "-p", "0", "-c", str(ns_conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "tls.server.keyPath: not set" in done.stderr

    with pytest.raises(
        ConfigError, match=re.escape("tls_ca = /nonexistent/ca.pem: cannot be read")
    ):
        rmq.Producer("p", "127.0.0.1:1", tls=True, tls_ca="/nonexistent/ca.pem").start()
    with pytest.raises(ConfigError, match="without tls=True"):
        rmq.Producer("p", "127.0.0.1:1", tls_ca=str(pki.ca)).start()


def test_spark_options_carry_tls(pki: Pki) -> None:
    from rmq.spark.options import parse_read_options, parse_write_options
    from rmq.tls import TlsOptions

    base = {"namesrv": "127.0.0.1:9876", "topic": "t"}
    assert parse_read_options(base, streaming=False).tls == TlsOptions()
    opts = {**base, "tlsCa": str(pki.ca), "tlsCert": "c.pem", "tlsKey": "k.pem"}
    assert parse_read_options(opts, streaming=False).tls == TlsOptions(
        True, str(pki.ca), "c.pem", "k.pem", True
    )
    written = parse_write_options({**base, "tls": "true", "tlsVerify": "false"}, streaming=False)
    assert written.tls == TlsOptions(enabled=True, verify=False)
    with pytest.raises(ConfigError, match="tlsVerify"):
        parse_read_options({**base, "tlsVerify": "maybe"}, streaming=False)


def test_an_encrypted_key_opens_with_its_password(
    pki: Pki, cluster: TlsCluster, tmp_path: Path
) -> None:
    key = encrypt_key(pki.server_key, tmp_path / "server-encrypted.key", "s3cret")
    assert b"ENCRYPTED PRIVATE KEY" in key.read_bytes()
    conf = (
        "tls.server.mode = enforcing\n"
        f"tls.server.certPath = {pki.server_cert}\n"
        f"tls.server.keyPath = {key}\n"
    )
    namesrv, _, _ = cluster.start(
        server_keys(pki, "permissive"), conf + "tls.server.keyPassword = s3cret\n"
    )
    send_and_pull(namesrv.addr, "Encrypted", "encrypted", 3, tls=True, tls_ca=str(pki.ca))

    wrong = tmp_path / "wrong.conf"
    wrong.write_text(
        "brokerName = broker-b\n"
        f"listenPort = {free_port()}\n"
        f"storePathRootDir = {tmp_path / 'store-b'}\n"
        + conf
        + "tls.enable = true\ntls.server.keyPassword = nope\n"
    )
    broker = BrokerProcess("-c", str(wrong), cwd=tmp_path)
    assert broker.finish() == 1
    assert f"tls.server.keyPath = {key}: cannot be decrypted with tls.server.keyPassword" in (
        broker.log
    )


def test_the_embedded_nameserver_serves_tls_as_the_broker_does(pki: Pki, tmp_path: Path) -> None:
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName = broker-e\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        + server_keys(pki, "enforcing")
        + "tls.enable = true\ntls.test.mode.enable = true\n"
    )
    broker = BrokerProcess("-c", str(conf), cwd=tmp_path)
    try:
        line = broker.wait_for("embedded nameserver listening on")
        ns = f"127.0.0.1:{line.rsplit(':', 1)[1].strip()}"
        broker.wait_for("listening on 0.0.0.0")
        send_and_pull(ns, "Embedded", "embedded", 3, tls=True, tls_ca=str(pki.ca))
        assert admin(ns, "clusterList").returncode == 1
    finally:
        broker.kill()


def test_key_passwords_are_never_printed(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("tls.server.keyPassword = s3cret\ntls.client.keyPassword = t0p\n")
    done = subprocess.run(
        [sys.executable, "-m", "rmq.broker", "-c", str(conf), "-p"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "tls.server.keyPassword=******" in done.stdout
    assert "tls.client.keyPassword=******" in done.stdout
    assert "s3cret" not in done.stdout + done.stderr and "t0p" not in done.stdout + done.stderr


def test_enforcing_with_the_embedded_nameserver_needs_tls_enable(pki: Pki, tmp_path: Path) -> None:
    """The embedded nameserver serves TLS only; a broker that would register with it in plain
    TCP stops at start saying what to set, instead of failing every registration."""
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName = broker-p\n"
        f"listenPort = {free_port()}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n" + server_keys(pki, "enforcing")
    )
    broker = BrokerProcess("-c", str(conf), cwd=tmp_path)
    assert broker.finish() == 1
    assert "set tls.enable = true" in broker.log
    assert not (tmp_path / "store").exists(), "refused before the store opened"
