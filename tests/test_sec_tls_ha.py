"""Replication over TLS: a master and a slave (real broker processes) whose remoting and HA
ports enforce TLS, the slave connecting to its master's HA port with ``tls.enable``; the slave
copies what the master stores, byte for byte up to the master's CommitLog max offset, in frames
larger than rustls buffers at once, and without waiting for a heartbeat (its first report comes
with the handshake's last bytes). A plain connection to an enforcing master's HA port is closed,
with one log line saying what to set."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    commit_log_max_offset,
    free_port,
    wait_commit_logs_agree,
    wait_until,
)
from rmq._rmq import RemotingClient
from tls_helpers import Namesrv, Pki, make_pki, server_keys

FILE_SIZE = 4194304


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def namesrv(tmp_path: Path, pki: Pki) -> Iterator[Namesrv]:
    ns = Namesrv(tmp_path, server_keys(pki, "permissive"))
    yield ns
    ns.stop()


def start(
    tmp: Path, ns: str, name: str, role: str, broker_id: int, extra: str
) -> tuple[BrokerProcess, str]:
    port = free_port()
    conf = tmp / f"{name}.conf"
    conf.write_text(
        "brokerName = group-tls\n"
        f"brokerId = {broker_id}\n"
        f"brokerRole = {role}\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        "haListenPort = 0\n"  # ephemeral: listenPort + 1 may be taken
        f"storePathRootDir = {tmp / name}\n"
        f"mappedFileSizeCommitLog = {FILE_SIZE}\n" + TEST_STORE_CONF + extra
    )
    proc = BrokerProcess("-c", str(conf), "-n", ns, cwd=tmp)
    proc.wait_for("listening on")
    return proc, f"127.0.0.1:{port}"


def test_slave_replicates_from_a_tls_master(tmp_path: Path, pki: Pki, namesrv: Namesrv) -> None:
    tls = (
        server_keys(pki, "enforcing")
        + f"tls.enable = true\ntls.client.trustCertPath = {pki.ca}\n"
        # Frames of up to 1 MiB: more than the 64 KiB of records rustls holds at once.
        + "haTransferBatchSize = 1048576\n"
        # No heartbeat within the test: the slave's first report alone must start the copy.
        + "haSendHeartbeatInterval = 600000\nhaHousekeepingInterval = 1200000\n"
    )
    master, master_addr = start(tmp_path, namesrv.addr, "master", "ASYNC_MASTER", 0, tls)
    slave, slave_addr = start(tmp_path, namesrv.addr, "slave", "SLAVE", 1, tls)
    try:
        with rmq.Producer("ha-tls", namesrv.addr, tls=True, tls_ca=str(pki.ca)) as producer:
            for i in range(200):
                producer.send(rmq.Message("HaTls", b"%d" % i + bytes(1000)))
        client = RemotingClient(tls=True, tls_ca=str(pki.ca))
        end = commit_log_max_offset(client, master_addr)
        assert end > 200 * 1000
        try:
            wait_until(
                lambda: commit_log_max_offset(client, slave_addr) == end,
                "the slave's CommitLog to reach the master's",
            )
        except AssertionError as e:
            raise AssertionError(f"{e}\nmaster:\n{master.log}\nslave:\n{slave.log}") from None
        on_slave, on_master = wait_commit_logs_agree(
            (tmp_path / "slave", tmp_path / "master"), end, FILE_SIZE
        )
        assert on_slave == on_master, "the slave's CommitLog differs from the master's"
    finally:
        slave.kill()
        master.kill()
    assert any("connected over TLS" in line for line in master.lines), master.log


def test_a_plain_slave_is_refused_by_an_enforcing_master(
    tmp_path: Path, pki: Pki, namesrv: Namesrv
) -> None:
    # A plain slave's first bytes on the HA port: its 8-byte offset report. (A real rmq slave
    # without tls.enable cannot even get that far: the master's remoting port refuses it.)
    master, _ = start(
        tmp_path, namesrv.addr, "master", "ASYNC_MASTER", 0, server_keys(pki, "enforcing")
    )
    try:
        ha_port = int(re.findall(r"accepting slaves on port (\d+)", master.log)[0])
        for _ in range(3):
            with socket.create_connection(("127.0.0.1", ha_port), timeout=10) as s:
                s.sendall((0).to_bytes(8, "big"))
                assert s.recv(12) == b"", "the master closes a plain slave's connection"
        line = master.wait_for("HA: closing plain connection")
        assert "set tls.enable = true on the slave" in line
    finally:
        master.kill()
    refusals = [line for line in master.lines if "HA: closing plain connection" in line]
    assert len(refusals) == 1, "one log line per peer per minute, however often it retries"
