"""Replication across implementations: an Apache RocketMQ 4.9.7 slave (from Maven Central, see
tests/compat/apache_broker/) follows an rmq master, and an rmq slave follows an Apache master.

Each group is a SYNC_MASTER, so a send is SEND_OK only once the other implementation's slave has
reported the message's bytes over the HA channel. The slave learns its master's HA address from
the nameserver's REGISTER_BROKER answer (rmq's nameserver in the first case, Apache's in the
second), as in production. Checked after a burst: the slave's CommitLog is the master's, byte
for byte, and the messages pulled from the slave (raw PULL_MESSAGE to its address, decoded by
rmq) are the master's. Needs Java 17 and Maven (``make test`` installs them)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    commit_log_max_offset,
    create_topic,
    free_port,
    pull_header,
    wait_commit_logs_agree,
    wait_until,
)
from rmq._rmq import RemotingClient, StoredMessage, decode_messages
from rmq.codes import RequestCode
from rmq.errors import RmqError

sys.path.insert(0, str(Path(__file__).parent / "compat" / "apache_broker"))
from apache_rocketmq import ApacheBroker, ApacheRocketMQ, free_broker_port

pytestmark = pytest.mark.timeout(420)

FILE_SIZE = 16 * 1024 * 1024  # both sides' mappedFileSizeCommitLog (the slave mirrors files)
QUEUES = 4
MESSAGES = 400


def pull_all(
    client: RemotingClient, addr: str, topic: str, ends: list[str] | None = None
) -> list[StoredMessage]:
    """Every message of ``topic``'s queues, pulled from ``addr`` from offset 0 (``ends``
    collects the answer that ended each queue)."""
    got: list[StoredMessage] = []
    for qid in range(QUEUES):
        offset = 0
        while True:
            header = pull_header("ha-apache-reader", topic, qid, max_nums=32)
            header["queueOffset"] = str(offset)
            resp = client.invoke(addr, RequestCode.PULL_MESSAGE, header)
            if resp.code != 0:  # PULL_NOT_FOUND / PULL_OFFSET_MOVED: the queue's end
                if ends is not None:
                    ends.append(f"{qid}@{offset}: {resp.code} {resp.remark}")
                break
            batch = decode_messages(resp.body or b"")
            assert batch, f"pull {addr} {topic}/{qid}@{offset}: success with no messages"
            got.extend(batch)
            offset = batch[-1].queue_offset + 1
    return got


def wait_slave_serves(client: RemotingClient, addr: str, topic: str, expected: int) -> None:
    """Wait until the slave serves ``expected`` messages: it knows a topic once it has copied
    its master's topic config (every 10 s in rmq, 60 s after the first 10 in Apache)."""
    seen: list[str] = []

    def serves() -> bool:
        seen.clear()
        try:
            n = len(pull_all(client, addr, topic, seen))
        except RmqError as exc:
            seen.append(repr(exc))
            return False
        seen.append(f"{n} of {expected} messages")
        return n == expected

    try:
        wait_until(serves, "the slave serving every message", timeout=90)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last pass: {seen}") from None


def identity(msgs: list[StoredMessage]) -> list[tuple[int, int, str, bytes]]:
    return sorted((m.queue_id, m.queue_offset, m.msg_id, m.body) for m in msgs)


def send_burst(namesrv: str, topic: str) -> tuple[int, list[rmq.SendResult]]:
    """Probe until a send is acked by the slave (the first ones may find no slave yet:
    SLAVE_NOT_AVAILABLE, or one that has not reported an offset yet: a timeout; stored on the
    master all the same), then send MESSAGES; returns the number of probes and the burst's
    results."""
    probes: list[str] = []
    with rmq.Producer("ha-apache-producer", namesrv) as producer:

        def probe() -> bool:
            try:
                probes.append(producer.send(rmq.Message(topic, b"probe")).status)
            except RmqError as exc:  # a slave connected but not reporting yet: a timeout
                probes.append(type(exc).__name__)
            return probes[-1] == "SEND_OK"

        wait_until(probe, "a send acked by the slave", timeout=60)
        burst = [producer.send(rmq.Message(topic, f"m-{i}".encode())) for i in range(MESSAGES)]
    return len(probes), burst


@contextlib.contextmanager
def rmq_broker(tmp: Path, name: str, namesrv: str, conf: str) -> Iterator[tuple[str, Path]]:
    # Free with its VIP channel (port - 2): an Apache slave copies its master's config there.
    port = free_broker_port()
    store = tmp / name
    path = tmp / f"{name}.conf"
    path.write_text(
        "brokerClusterName = DefaultCluster\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {store}\n"
        f"mappedFileSizeCommitLog = {FILE_SIZE}\n"
        "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF + conf
    )
    proc = BrokerProcess("-c", str(path), "-n", namesrv, cwd=tmp)
    try:
        proc.wait_for("listening on")
        yield f"127.0.0.1:{port}", store
    finally:
        proc.kill()


def check_replica(
    client: RemotingClient,
    master: tuple[str, Path],
    slave: tuple[str, Path],
    topic: str,
    sent: tuple[int, list[rmq.SendResult]],
    explain: str,
) -> None:
    (master_addr, master_store), (slave_addr, slave_store) = master, slave
    probes, burst = sent
    statuses = {r.status for r in burst}
    assert statuses == {"SEND_OK"}, f"SYNC_MASTER sends: {statuses}\n{explain}"
    end = commit_log_max_offset(client, master_addr)
    wait_until(
        lambda: commit_log_max_offset(client, slave_addr) == end, "the slave's max offset", 30
    )

    on_slave, on_master = wait_commit_logs_agree((slave_store, master_store), end, FILE_SIZE)
    assert on_slave == on_master, f"the slave's CommitLog differs from the master's\n{explain}"
    from_master = pull_all(client, master_addr, topic)
    assert MESSAGES < len(from_master) <= MESSAGES + probes
    assert {r.msg_id for r in burst} <= {m.msg_id for m in from_master}
    wait_slave_serves(client, slave_addr, topic, len(from_master))
    assert identity(pull_all(client, slave_addr, topic)) == identity(from_master)


def test_apache_slave_follows_rmq_master(tmp_path: Path, namesrv: tuple[object, str]) -> None:
    ns = namesrv[1]
    topic = "HaApacheSlaveTopic"
    client = RemotingClient()
    slave = ApacheBroker(
        tmp_path / "apache-slave",
        ns,
        "ha-rmq-master",
        {"brokerRole": "SLAVE", "brokerId": "1", "slaveReadEnable": "true"},
    )
    with rmq_broker(
        tmp_path,
        "ha-rmq-master",
        ns,
        f"brokerName = ha-rmq-master\nbrokerRole = SYNC_MASTER\nhaListenPort = {free_port()}\n",
    ) as master:
        try:
            create_topic(ns, [master[0]], topic, QUEUES)
            slave.start()
            sent = send_burst(ns, topic)
            check_replica(client, master, (slave.addr, slave.store), topic, sent, slave.log_tail())
        finally:
            slave.stop()
            client.close()


def test_rmq_slave_follows_apache_master(tmp_path: Path) -> None:
    topic = "HaRmqSlaveTopic"
    client = RemotingClient()
    with ApacheRocketMQ(
        tmp_path / "apache",
        broker_name="ha-apache-master",
        broker_extra={"brokerRole": "SYNC_MASTER"},
    ) as apache:
        assert apache.apache_broker is not None
        with rmq_broker(
            tmp_path,
            "ha-rmq-slave",
            apache.namesrv_addr,
            "brokerName = ha-apache-master\nbrokerRole = SLAVE\nbrokerId = 1\n",
        ) as slave:
            try:
                create_topic(apache.namesrv_addr, [apache.broker_addr], topic, QUEUES)
                sent = send_burst(apache.namesrv_addr, topic)
                check_replica(
                    client,
                    (apache.broker_addr, apache.apache_broker.store),
                    slave,
                    topic,
                    sent,
                    apache.log_tail(),
                )
            finally:
                client.close()
