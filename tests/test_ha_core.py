"""Replication end to end: a real SYNC_MASTER broker and its SLAVE (brokerId 1, the same
brokerName, ``haMasterAddress`` set in its broker.conf). Sends through the Python SDK are
SEND_OK only once the slave holds them; the slave serves every acked message; the CommitLog
files end byte-identical; with the slave gone sends answer SLAVE_NOT_AVAILABLE."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    broker_runtime_info,
    create_topic,
    free_port,
    pull_header,
    wait_until,
)
from rmq._rmq import RemotingClient, decode_messages, fastjson_to_json
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import ServiceNotAvailableError

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from compat_common import create_topic_header

TOPIC = "HaCore"
QUEUES = 2


def broker_conf(work: Path, name: str, port: int, extra: str) -> Path:
    conf = work / f"{name}.conf"
    conf.write_text(
        "brokerClusterName = HaCluster\n"
        "brokerName = ha-a\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {work / name}\n"
        "mappedFileSizeCommitLog = 1048576\n"
        "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF + extra
    )
    return conf


def ha_status(client: RemotingClient, addr: str) -> dict[str, object]:
    resp = client.invoke(addr, RequestCode.GET_BROKER_HA_STATUS, {})
    assert resp.code == ResponseCode.SUCCESS, resp.remark
    assert resp.body is not None
    status: dict[str, object] = json.loads(resp.body)
    return status


def checksums(store: Path) -> dict[str, str]:
    return {
        f.name: hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted((store / "commitlog").iterdir())
    }


class Group:
    def __init__(self, work: Path, ns: str) -> None:
        self.work, self.ns = work, ns
        self.master_port, self.slave_port, self.ha_port = free_port(), free_port(), free_port()
        self.master_addr = f"127.0.0.1:{self.master_port}"
        self.slave_addr = f"127.0.0.1:{self.slave_port}"
        master_conf = broker_conf(
            work,
            "master",
            self.master_port,
            f"brokerRole = SYNC_MASTER\nhaListenPort = {self.ha_port}\n",
        )
        self.master = BrokerProcess("-c", str(master_conf), "-n", ns, cwd=work)
        self.master.wait_for("listening on")
        self.slave: BrokerProcess | None = None

    def start_slave(self) -> None:
        conf = broker_conf(
            self.work,
            "slave",
            self.slave_port,
            f"brokerId = 1\nbrokerRole = SLAVE\nhaMasterAddress = 127.0.0.1:{self.ha_port}\n",
        )
        self.slave = BrokerProcess("-c", str(conf), "-n", self.ns, cwd=self.work)
        self.slave.wait_for("listening on")

    def close(self) -> None:
        for p in (self.slave, self.master):
            if p is not None:
                p.kill()


@pytest.fixture
def group(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[Group]:
    g = Group(tmp_path, namesrv[1])
    try:
        yield g
    finally:
        g.close()


def test_sync_master_acks_replicated_sends_and_the_slave_is_a_byte_copy(group: Group) -> None:
    group.start_slave()
    create_topic(group.ns, [group.master_addr], TOPIC, QUEUES)
    client = RemotingClient()
    try:
        # The slave serves reads of the topic (config sync is the control plane's job).
        resp = client.invoke(
            group.slave_addr,
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            create_topic_header(TOPIC, QUEUES, False),
        )
        assert resp.code == ResponseCode.SUCCESS, resp.remark
        wait_until(
            lambda: ha_status(client, group.master_addr)["inSyncSlaveNums"] == 1,
            "the slave connects to the master's HA port",
        )
        sent: set[bytes] = set()
        with rmq.Producer("ha-core-producer", group.ns) as producer:
            for i in range(200):
                body = f"replicated-{i}-".encode() + b"x" * 2000
                result = producer.send(rmq.Message(TOPIC, body))
                assert result.status == "SEND_OK", result
                sent.add(body)
        status = ha_status(client, group.master_addr)
        assert status["master"] is True
        conns = status["haConnectionInfo"]
        assert isinstance(conns, list) and len(conns) == 1
        assert conns[0]["diff"] == 0, status  # every ack waited for the slave
        runtime = broker_runtime_info(client, group.master_addr)
        assert runtime["slaveFallBehindMuch"] == "0", runtime  # brokerStatus says so too
        slave_status = ha_status(client, group.slave_addr)
        assert slave_status["master"] is False
        info = slave_status["haClientRuntimeInfo"]
        assert isinstance(info, dict) and info["isActivated"] is True, slave_status

        # Every acked message is readable from the slave broker.
        def pulled() -> set[bytes]:
            got: set[bytes] = set()
            for q in range(QUEUES):
                header = pull_header("ha-core-reader", TOPIC, q, max_nums=32)
                offset = 0
                while True:
                    header["queueOffset"] = str(offset)
                    resp = client.invoke(group.slave_addr, RequestCode.PULL_MESSAGE, header)
                    if resp.code != ResponseCode.SUCCESS or resp.body is None:
                        break
                    got.update(m.body for m in decode_messages(resp.body))
                    offset = int(resp.ext_fields["nextBeginOffset"])
            return got

        wait_until(lambda: pulled() == sent, "the slave serves every acked message")
    finally:
        client.close()
    # Stopped cleanly, both CommitLogs are the same bytes.
    assert group.slave is not None
    group.slave.stop()
    group.slave.finish()
    group.master.stop()
    group.master.finish()
    master_sums = checksums(group.work / "master")
    assert master_sums and master_sums == checksums(group.work / "slave")


def test_without_a_slave_sync_master_sends_answer_slave_not_available(group: Group) -> None:
    create_topic(group.ns, [group.master_addr], TOPIC, QUEUES)
    client = RemotingClient()
    try:
        with rmq.Producer("ha-core-alone", group.ns) as producer:
            result = producer.send(rmq.Message(TOPIC, b"no slave yet"))
            assert result.status == "SLAVE_NOT_AVAILABLE", result
            group.start_slave()
            wait_until(
                lambda: ha_status(client, group.master_addr)["inSyncSlaveNums"] == 1,
                "the slave connects",
            )
            assert producer.send(rmq.Message(TOPIC, b"replicated")).status == "SEND_OK"
            assert group.slave is not None
            group.slave.kill()
            wait_until(
                lambda: ha_status(client, group.master_addr)["haConnectionInfo"] == [],
                "the master drops the dead slave",
            )
            result = producer.send(rmq.Message(TOPIC, b"slave down"))
            assert result.status == "SLAVE_NOT_AVAILABLE", result

        # Stored all the same: the master serves all three (once dispatched: wait for that).
        def stored() -> int:
            n = 0
            for q in range(QUEUES):
                header = pull_header("ha-alone", TOPIC, q)
                resp = client.invoke(group.master_addr, RequestCode.PULL_MESSAGE, header)
                if resp.code == ResponseCode.SUCCESS and resp.body is not None:
                    n += len(decode_messages(resp.body))
            return n

        wait_until(lambda: stored() == 3, "the master serving all three messages")
        assert stored() == 3
    finally:
        client.close()


def test_a_send_while_the_master_is_down_says_so(group: Group) -> None:
    """With the group's master gone from the route (its slave still there), a send fails with
    ServiceNotAvailableError naming the masterless group, not 'topic does not exist'."""
    create_topic(group.ns, [group.master_addr], TOPIC, QUEUES)
    group.start_slave()
    client = RemotingClient()
    try:
        group.master.kill()

        def master_gone() -> bool:
            resp = client.invoke(group.ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
            route = json.loads(fastjson_to_json((resp.body or b"{}").decode()))
            addrs = [b["brokerAddrs"] for b in route.get("brokerDatas", [])]
            return resp.code == 0 and addrs != [] and all("0" not in a for a in addrs)

        wait_until(master_gone, "the nameserver dropping the dead master", timeout=60)
        with (
            rmq.Producer("ha-core-masterless", group.ns) as producer,
            pytest.raises(ServiceNotAvailableError, match="no broker serving it has a master"),
        ):
            producer.send(rmq.Message(TOPIC, b"nowhere to go"))
    finally:
        client.close()
