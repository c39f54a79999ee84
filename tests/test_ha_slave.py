"""A broker group of real processes: a master and a slave started on a byte copy of the
master's store (brokerRole SLAVE, brokerId 1, same brokerName). The slave refuses writes naming
its master, serves pulls, is routed as brokerId 1, copies the master's topics, groups, consumer
and delay offsets, and sends the master the consumer offsets committed to it that are ahead;
clusterList shows both; promotion by updateBrokerConfig keeps the slave's data."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    create_topic,
    free_port,
    pull_header,
    send_v2_header,
    update_offset_header,
    wait_until,
)
from rmq import fastjson
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode, ResponseCode

NAME = "group-a"
TOPIC = "HaSlaveTopic"
GROUP = "HaSlaveGroup"


def conf(tmp: Path, name: str, role: str, broker_id: int, port: int) -> Path:
    path = tmp / f"{name}.conf"
    path.write_text(
        "brokerClusterName = HaCluster\n"
        f"brokerName = {NAME}\n"
        f"brokerId = {broker_id}\n"
        f"brokerRole = {role}\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        # An ephemeral HA port: listenPort + 1 (the default) may be another socket's by the
        # time the slave is promoted and binds it.
        "haListenPort = 0\n"
        f"storePathRootDir = {tmp / name}\n"
        "mappedFileSizeCommitLog = 4194304\n"
        "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF
    )
    return path


class Group:
    def __init__(self, tmp: Path, ns: str) -> None:
        self.tmp = tmp
        self.ns = ns
        self.client = RemotingClient()
        self.master_port = free_port()
        self.slave_port = free_port()
        self.master_addr = f"127.0.0.1:{self.master_port}"
        self.slave_addr = f"127.0.0.1:{self.slave_port}"
        self.master: BrokerProcess | None = None
        self.slave: BrokerProcess | None = None

    def start(self, name: str, role: str, broker_id: int, port: int) -> BrokerProcess:
        path = conf(self.tmp, name, role, broker_id, port)
        proc = BrokerProcess("-c", str(path), "-n", self.ns, cwd=self.tmp)
        proc.wait_for("listening on")
        return proc

    def invoke(
        self, addr: str, code: int, header: dict[str, str] | None = None, body: bytes | None = None
    ) -> Any:
        return self.client.invoke(addr, code, header, body)

    def send(self, addr: str, n: int, queue_id: int = 0) -> list[Any]:
        return [
            self.invoke(
                addr,
                RequestCode.SEND_MESSAGE_V2,
                send_v2_header("P", TOPIC, "TagA", f"k{i}", queue_id),
                f"body-{i}".encode(),
            )
            for i in range(n)
        ]

    def stop(self) -> None:
        for p in (self.master, self.slave):
            if p is not None:
                p.kill()
        self.client.close()


@pytest.fixture(scope="module")
def group(
    tmp_path_factory: pytest.TempPathFactory, module_namesrv: tuple[object, str]
) -> Iterator[Group]:
    tmp = tmp_path_factory.mktemp("ha_slave")
    g = Group(tmp, module_namesrv[1])
    g.master = g.start("master", "ASYNC_MASTER", 0, g.master_port)
    create_topic(g.ns, [g.master_addr], TOPIC, 2)
    assert all(r.code == ResponseCode.SUCCESS for r in g.send(g.master_addr, 10))
    r = g.invoke(
        g.master_addr, RequestCode.UPDATE_CONSUMER_OFFSET, update_offset_header(GROUP, TOPIC, 0, 4)
    )
    assert r.code == ResponseCode.SUCCESS
    assert g.master.stop() == 0
    # The slave starts from a byte copy of the stopped master's store.
    shutil.copytree(tmp / "master", tmp / "slave")
    g.master = g.start("master", "ASYNC_MASTER", 0, g.master_port)
    g.slave = g.start("slave", "SLAVE", 1, g.slave_port)
    try:
        yield g
    finally:
        g.stop()


def route_addrs(g: Group) -> dict[str, str]:
    r = g.invoke(g.ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    if r.code != ResponseCode.SUCCESS or not r.body:
        return {}
    addrs: dict[str, str] = json.loads(r.body)["brokerDatas"][0]["brokerAddrs"]
    return addrs


def test_the_route_lists_master_and_slave(group: Group) -> None:
    wait_until(
        lambda: route_addrs(group) == {"0": group.master_addr, "1": group.slave_addr},
        "the route with brokerId 0 and 1",
    )


def test_the_slave_refuses_writes_naming_its_master(group: Group) -> None:
    def refused_naming_master() -> bool:
        (r,) = group.send(group.slave_addr, 1)
        return r.code == ResponseCode.SERVICE_NOT_AVAILABLE and group.master_addr in (
            r.remark or ""
        )

    wait_until(refused_naming_master, "a refusal naming the master")
    (r,) = group.send(group.slave_addr, 1)
    assert "is a slave" in r.remark
    batch = group.invoke(
        group.slave_addr,
        RequestCode.SEND_BATCH_MESSAGE,
        send_v2_header("P", TOPIC, "", "", 0),
        b"",
    )
    assert batch.code == ResponseCode.SERVICE_NOT_AVAILABLE
    back = group.invoke(
        group.slave_addr,
        RequestCode.CONSUMER_SEND_MSG_BACK,
        {"offset": "0", "group": GROUP, "delayLevel": "0", "originMsgId": "", "originTopic": TOPIC},
    )
    assert back.code == ResponseCode.SERVICE_NOT_AVAILABLE
    # The master still takes them.
    (ok,) = group.send(group.master_addr, 1, queue_id=1)
    assert ok.code == ResponseCode.SUCCESS


def test_the_slave_serves_pulls_from_its_copy(group: Group) -> None:
    r = group.invoke(group.slave_addr, RequestCode.PULL_MESSAGE, pull_header(GROUP, TOPIC, 0))
    assert r.code == ResponseCode.SUCCESS, r.remark
    from rmq._rmq import decode_messages

    bodies = [m.body for m in decode_messages(r.body)]
    assert bodies == [f"body-{i}".encode() for i in range(10)]


def test_the_master_serves_offsets_for_its_slaves(group: Group) -> None:
    r = group.invoke(group.master_addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
    assert r.code == ResponseCode.SUCCESS
    # fastjson's form, as Apache's ConsumerOffsetManager.encode() writes it: bare queue ids.
    assert f'"{TOPIC}@{GROUP}":{{0:4}}'.encode() in r.body
    assert fastjson.loads(r.body)["offsetTable"][f"{TOPIC}@{GROUP}"] == {"0": 4}
    r = group.invoke(group.master_addr, RequestCode.GET_ALL_DELAY_OFFSET)
    assert r.code == ResponseCode.SUCCESS
    assert r.body.startswith(b'{"offsetTable":{1:')


def test_the_slave_copies_the_master_and_keeps_commits_ahead(group: Group) -> None:
    # A group and a topic created on the master after the slave started reach the slave.
    sub = {"groupName": "HaCopiedGroup", "consumeEnable": True}
    r = group.invoke(
        group.master_addr,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        None,
        json.dumps(sub).encode(),
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    create_topic(group.ns, [group.master_addr], "HaCopiedTopic", 1)

    def slave_has(code: int, table: str, name: str) -> bool:
        resp = group.invoke(group.slave_addr, code)
        return name in json.loads(resp.body).get(table, {})

    wait_until(
        lambda: (
            slave_has(RequestCode.GET_ALL_TOPIC_CONFIG, "topicConfigTable", "HaCopiedTopic")
            and slave_has(
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
                "subscriptionGroupTable",
                "HaCopiedGroup",
            )
        ),
        "the slave's copy of the master's topic and group",
        timeout=25,
    )
    # A consumer commits to the slave (as it does while the master is down): the offset ahead
    # of the master's reaches the master and stays on the slave.
    r = group.invoke(
        group.slave_addr,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        update_offset_header(GROUP, TOPIC, 0, 9),
    )
    assert r.code == ResponseCode.SUCCESS

    def master_offset() -> int:
        resp = group.invoke(
            group.master_addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"},
        )
        return int(resp.ext_fields.get("offset", -1))

    wait_until(lambda: master_offset() == 9, "the slave's commit on the master", timeout=25)
    resp = group.invoke(
        group.slave_addr,
        RequestCode.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"},
    )
    assert resp.ext_fields["offset"] == "9"


def test_cluster_list_shows_master_and_slave(group: Group) -> None:
    wait_until(lambda: len(route_addrs(group)) == 2, "both registered")
    done = subprocess.run(
        [sys.executable, "-m", "rmq.admin", "-n", group.ns, "--json", "clusterList"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    rows = {(r["brokerName"], r["brokerId"], r["addr"]) for r in json.loads(done.stdout)["brokers"]}
    assert rows == {(NAME, 0, group.master_addr), (NAME, 1, group.slave_addr)}


def test_a_slave_whose_master_is_gone_keeps_serving_reads(group: Group) -> None:
    assert group.master is not None and group.slave is not None
    group.master.kill()
    r = group.invoke(group.slave_addr, RequestCode.PULL_MESSAGE, pull_header(GROUP, TOPIC, 0))
    assert r.code == ResponseCode.SUCCESS, r.remark
    r = group.invoke(
        group.slave_addr,
        RequestCode.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": GROUP, "topic": TOPIC, "queueId": "0"},
    )
    assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == "9"
    (refused,) = group.send(group.slave_addr, 1)
    assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert group.slave.proc.poll() is None


def test_promotion_keeps_the_slaves_data_and_notes_the_epoch(group: Group) -> None:
    assert group.master is not None and group.slave is not None
    group.master.kill()  # the master is gone (killed by the test before)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmq.admin",
            "-n",
            group.ns,
            "updateBrokerConfig",
            "-b",
            group.slave_addr,
            "-k",
            "brokerRole",
            "-v",
            "SYNC_MASTER",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    note = json.loads((group.tmp / "slave" / "epoch.json").read_text())
    assert note["epoch"] == 1 and note["epochStartOffset"] > 0
    wait_until(lambda: route_addrs(group) == {"0": group.slave_addr}, "the promoted route")
    r = group.invoke(group.slave_addr, RequestCode.PULL_MESSAGE, pull_header(GROUP, TOPIC, 0))
    assert r.code == ResponseCode.SUCCESS  # the copy is still there
    info = json.loads(group.invoke(group.slave_addr, RequestCode.GET_BROKER_RUNTIME_INFO).body)
    assert info["table"]["brokerEpoch"] == "1"
    assert info["table"]["brokerEpochStartOffset"] == str(note["epochStartOffset"])
