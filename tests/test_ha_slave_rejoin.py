"""Switching roles by hand, end to end: the slave is promoted with updateBrokerConfig after its
master died holding messages the slave never got; the old master comes back as a slave, cuts
those messages (they are beyond the new epoch's start), follows the new master, and the group
ends with identical CommitLog bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    broker_runtime_info,
    commit_log_max_offset,
    create_topic,
    free_port,
    pull_header,
    send_v2_header,
    wait_until,
)
from rmq._rmq import RemotingClient, decode_messages
from rmq.codes import RequestCode, ResponseCode

NAME = "group-r"
TOPIC = "HaRejoinTopic"


def write_conf(tmp: Path, name: str, role: str, port: int) -> Path:
    path = tmp / f"{name}.conf"
    path.write_text(
        "brokerClusterName = HaRejoin\n"
        f"brokerName = {NAME}\n"
        f"brokerId = {0 if role != 'SLAVE' else 1}\n"
        f"brokerRole = {role}\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        "haListenPort = 0\n"
        f"storePathRootDir = {tmp / name}\n"
        "mappedFileSizeCommitLog = 4194304\n"
        "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF
    )
    return path


def send(client: RemotingClient, addr: str, tag: str, n: int) -> None:
    for i in range(n):
        r = client.invoke(
            addr,
            RequestCode.SEND_MESSAGE_V2,
            send_v2_header("P", TOPIC, tag, f"{tag}{i}", 0),
            f"{tag}-{i}".encode(),
        )
        assert r.code == ResponseCode.SUCCESS, r.remark


def bodies(client: RemotingClient, addr: str) -> list[bytes]:
    r = client.invoke(addr, RequestCode.PULL_MESSAGE, pull_header("G", TOPIC, 0))
    assert r.code == ResponseCode.SUCCESS, r.remark
    return [m.body for m in decode_messages(r.body or b"")]


def commit_log(tmp: Path, name: str, length: int) -> bytes:
    with open(tmp / name / "commitlog" / f"{0:020d}", "rb") as f:
        return f.read(length)


def test_promote_the_slave_then_the_old_master_rejoins_truncated(
    tmp_path: Path, namesrv: tuple[Any, str]
) -> None:
    ns = namesrv[1]
    client = RemotingClient()
    a_port, b_port = free_port(), free_port()
    a_addr, b_addr = f"127.0.0.1:{a_port}", f"127.0.0.1:{b_port}"
    procs: list[BrokerProcess] = []

    def start(name: str, role: str, port: int) -> BrokerProcess:
        p = BrokerProcess("-c", str(write_conf(tmp_path, name, role, port)), "-n", ns, cwd=tmp_path)
        procs.append(p)
        p.wait_for("listening on")
        return p

    try:
        a = start("a", "ASYNC_MASTER", a_port)
        b = start("b", "SLAVE", b_port)
        create_topic(ns, [a_addr], TOPIC, 1)
        send(client, a_addr, "first", 10)
        wait_until(
            lambda: commit_log_max_offset(client, b_addr) == commit_log_max_offset(client, a_addr),
            "b caught up",
        )
        epoch_start = commit_log_max_offset(client, b_addr)
        assert b.stop() == 0
        send(client, a_addr, "lost", 5)  # only a has these
        a_max = commit_log_max_offset(client, a_addr)
        assert a_max > epoch_start
        a.kill()  # the master dies

        b = start("b", "SLAVE", b_port)
        done = subprocess.run(
            [
                *(sys.executable, "-m", "rmq.admin", "-n", ns, "updateBrokerConfig"),
                *("-b", b_addr, "-k", "brokerRole", "-v", "ASYNC_MASTER"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "brokerRole=ASYNC_MASTER" in (tmp_path / "b.conf").read_text().replace(" ", "")
        assert broker_runtime_info(client, b_addr)["brokerEpochStartOffset"] == str(epoch_start)
        send(client, b_addr, "second", 3)  # the new master takes writes
        b_max = commit_log_max_offset(client, b_addr)

        # The old master returns as a slave: it cuts what the group never had, then follows.
        a = start("a", "SLAVE", a_port)
        assert "truncating" in a.log
        wait_until(lambda: commit_log_max_offset(client, a_addr) == b_max, "a caught up with b")
        assert commit_log(tmp_path, "a", b_max) == commit_log(tmp_path, "b", b_max)
        expected = [f"first-{i}".encode() for i in range(10)]
        expected += [f"second-{i}".encode() for i in range(3)]
        assert bodies(client, a_addr) == expected
        (refused,) = [
            client.invoke(
                a_addr, RequestCode.SEND_MESSAGE_V2, send_v2_header("P", TOPIC, "x", "x"), b"x"
            )
        ]
        assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE and b_addr in (
            refused.remark or ""
        )
        # haStatus on the new master: one slave, caught up.
        status = subprocess.run(
            [sys.executable, "-m", "rmq.admin", "-n", ns, "--json", "haStatus", "-b", b_addr],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stderr
        doc = json.loads(status.stdout)
        assert doc["masterCommitLogMaxOffset"] == b_max
        (conn,) = doc["haConnectionInfo"]
        assert (conn["slaveAckOffset"], conn["diff"], conn["lagMs"]) == (b_max, 0, 0)
        status = subprocess.run(
            [sys.executable, "-m", "rmq.admin", "-n", ns, "haStatus", "-b", a_addr],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert status.returncode == 0, status.stderr
        assert f"#CommitLogMaxOffset: {b_max}" in status.stdout
        # A plain restart of the slave keeps what it has.
        assert a.stop() == 0
        a = start("a", "SLAVE", a_port)
        assert "truncating" not in a.log
        wait_until(lambda: commit_log_max_offset(client, a_addr) == b_max, "a resumed")
    finally:
        for p in procs:
            p.kill()
        client.close()
