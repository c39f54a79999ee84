"""The nameserver's checks: with ``aclEnable = true`` (namesrv.conf) REGISTER_BROKER and the
other state-changing codes need an admin signature and reads a known account, checked in Rust
before the Python handler sees the request; whatever the ACL setting, a registration with an
absurd queue count or a topic name RocketMQ's validator refuses is refused, with one log line
per broker and period; a malformed ACL file stops the start naming file, line and key."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq._rmq import RemotingClient
from rmq.codes import RequestCode, ResponseCode
from sec_acl_helpers import ACL_FILE, ADMIN, PUBLISHER, invoke_signed

HEADER = {
    "brokerName": "broker-s",
    "brokerAddr": "127.0.0.1:50911",
    "clusterName": "DefaultCluster",
    "haServerAddr": "",
    "brokerId": "0",
    "compressed": "false",
    "bodyCrc32": "0",
}


def body(table: dict[str, object]) -> bytes:
    wrapper = {"topicConfigTable": table, "dataVersion": {"timestamp": 1, "counter": 1}}
    return json.dumps({"topicConfigSerializeWrapper": wrapper, "filterServerList": []}).encode()


GOOD = body({"TopicS": {"topicName": "TopicS", "readQueueNums": 4, "writeQueueNums": 4}})
HUGE = body({"TopicS": {"topicName": "TopicS", "readQueueNums": 100_000_000}})
BAD_NAME = body({"bad topic!": {"topicName": "bad topic!", "readQueueNums": 4}})


class Namesrv:
    def __init__(self, work: Path, acl_text: str | None) -> None:
        work.mkdir(parents=True, exist_ok=True)
        self.acl_file = work / "plain_acl.yml"
        conf = work / "namesrv.conf"
        if acl_text is None:
            conf.write_text("")
        else:
            self.acl_file.write_text(acl_text)
            conf.write_text(f"aclEnable = true\naclFilePath = {self.acl_file}\n")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rmq.namesrv",
                "--host",
                "127.0.0.1",
                "-p",
                "0",
                "-c",
                str(conf),
            ],
            stderr=subprocess.PIPE,
            text=True,
            cwd=work,
        )
        assert self.proc.stderr is not None
        self.lines: list[str] = []
        self.addr = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.lines.append(line)
            m = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
            if m:
                self.addr = m.group(1)
                break

    def stop(self) -> str:
        """Stop it; everything it logged."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        assert self.proc.stderr is not None
        rest = self.proc.stderr.read()
        self.proc.stderr.close()
        return "".join(self.lines) + rest


@pytest.fixture
def client() -> Iterator[RemotingClient]:
    c = RemotingClient()
    yield c
    c.close()


def test_with_acl_registrations_need_an_admin_and_reads_a_known_account(
    tmp_path: Path, client: RemotingClient
) -> None:
    ns = Namesrv(tmp_path, ACL_FILE)
    try:
        assert ns.addr, "".join(ns.lines)
        r = client.invoke(ns.addr, RequestCode.REGISTER_BROKER, HEADER, GOOD)
        assert r.code == ResponseCode.NO_PERMISSION, r.remark
        assert "carries no AccessKey" in (r.remark or "")
        r = invoke_signed(client, ns.addr, RequestCode.REGISTER_BROKER, HEADER, GOOD, PUBLISHER)
        assert r.code == ResponseCode.NO_PERMISSION
        assert f"account '{PUBLISHER[0]}' is not an admin" in (r.remark or "")
        wrong = (ADMIN[0], "wrong-secret")
        r = invoke_signed(client, ns.addr, RequestCode.REGISTER_BROKER, HEADER, GOOD, wrong)
        assert r.code == ResponseCode.NO_PERMISSION and "signature" in (r.remark or "")
        # nothing was registered
        route = {"topic": "TopicS"}
        r = invoke_signed(client, ns.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, route)
        assert r.code == ResponseCode.TOPIC_NOT_EXIST, r.remark
        # unsigned reads are refused, a known account reads
        r = client.invoke(ns.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, route)
        assert r.code == ResponseCode.NO_PERMISSION
        r = client.invoke(ns.addr, RequestCode.GET_BROKER_CLUSTER_INFO)
        assert r.code == ResponseCode.NO_PERMISSION
        r = invoke_signed(client, ns.addr, RequestCode.REGISTER_BROKER, HEADER, GOOD, ADMIN)
        assert r.code == ResponseCode.SUCCESS, r.remark
        r = invoke_signed(
            client, ns.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, route, account=PUBLISHER
        )
        assert r.code == ResponseCode.SUCCESS, r.remark
        # state changes other than registration need an admin too
        kv = {"namespace": "NS", "key": "k", "value": "v"}
        r = invoke_signed(client, ns.addr, RequestCode.PUT_KV_CONFIG, kv, account=PUBLISHER)
        assert r.code == ResponseCode.NO_PERMISSION
        wipe = {"brokerName": "broker-s"}
        r = invoke_signed(
            client, ns.addr, RequestCode.WIPE_WRITE_PERM_OF_BROKER, wipe, account=PUBLISHER
        )
        assert r.code == ResponseCode.NO_PERMISSION
        r = invoke_signed(
            client, ns.addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"clusterTest=true", PUBLISHER
        )
        assert r.code == ResponseCode.NO_PERMISSION
        # an absurd registration is refused even from an admin
        r = invoke_signed(client, ns.addr, RequestCode.REGISTER_BROKER, HEADER, HUGE, ADMIN)
        assert r.code == ResponseCode.SYSTEM_ERROR
        assert "readQueueNums = 100000000 is out of range" in (r.remark or "")
    finally:
        log = ns.stop()
    assert ADMIN[1] not in log and PUBLISHER[1] not in log, "no secret in the log"


def test_absurd_registrations_are_refused_without_acl_and_logged_once(
    tmp_path: Path, client: RemotingClient
) -> None:
    ns = Namesrv(tmp_path, None)
    try:
        assert ns.addr, "".join(ns.lines)
        for _ in range(5):
            r = client.invoke(ns.addr, RequestCode.REGISTER_BROKER, HEADER, BAD_NAME)
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert "topic 'bad topic!'" in (r.remark or "")
            assert "contains illegal characters" in (r.remark or ""), r.remark
            r = client.invoke(ns.addr, RequestCode.REGISTER_BROKER, HEADER, HUGE)
            assert r.code == ResponseCode.SYSTEM_ERROR
            assert "out of range" in (r.remark or "")
        long_name = "T" * 200
        r = client.invoke(
            ns.addr, RequestCode.REGISTER_BROKER, HEADER, body({long_name: {"readQueueNums": 1}})
        )
        assert r.code == ResponseCode.SYSTEM_ERROR
        assert "longer than topic max length" in (r.remark or "")
        r = client.invoke(ns.addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicS"})
        assert r.code == ResponseCode.TOPIC_NOT_EXIST
        r = client.invoke(ns.addr, RequestCode.REGISTER_BROKER, HEADER, GOOD)
        assert r.code == ResponseCode.SUCCESS, r.remark
    finally:
        log = ns.stop()
    refusals = [line for line in log.splitlines() if "REGISTER_BROKER from" in line]
    assert len(refusals) == 1, log
    assert "broker-s" in refusals[0] and "127.0.0.1:50911" in refusals[0]


def test_a_malformed_acl_file_stops_the_start(tmp_path: Path) -> None:
    bad = ACL_FILE.replace("    defaultGroupPerm: SUB\n", "    defaultGroupPerm: [SUB\n", 1)
    ns = Namesrv(tmp_path, bad)
    log = ns.stop()
    assert not ns.addr, log
    assert ns.proc.returncode != 0
    assert f"bad ACL file {ns.acl_file}:" in log, log
    assert "Traceback" not in log, log
    bad = ACL_FILE.replace("    defaultTopicPerm: DENY\n", "    defaultTopicPerm: NONE\n", 1)
    ns = Namesrv(tmp_path / "two", bad)
    log = ns.stop()
    n = bad.splitlines().index("    defaultTopicPerm: NONE") + 1
    assert f"{ns.acl_file}:{n}: key accounts[1].defaultTopicPerm" in log, log


def test_the_embedded_nameserver_checks_the_brokers_acl_file(
    tmp_path: Path, client: RemotingClient
) -> None:
    """``python -m rmq.broker`` without namesrvAddr embeds a nameserver: with aclEnable it
    checks the broker's ACL file, the broker registers with it signed by innerAccessKey, and
    without innerAccessKey the start stops saying what to set."""
    from helpers import STOP_TIMEOUT_S, BrokerProcess, free_port
    from sec_acl_helpers import broker_conf

    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL_FILE)
    ns_port = free_port()
    conf = broker_conf(tmp_path, free_port(), acl_file, "")
    unsigned = BrokerProcess("-c", str(conf), "--namesrv-port", str(ns_port), cwd=tmp_path)
    try:
        line = unsigned.wait_for("innerAccessKey")
        assert "embedded nameserver" in line and "admin account" in line
        assert unsigned.proc.wait(STOP_TIMEOUT_S) == 1
    finally:
        unsigned.kill()

    with conf.open("a") as f:
        f.write(f"innerAccessKey = {ADMIN[0]}\ninnerSecretKey = {ADMIN[1]}\n")
    broker = BrokerProcess("-c", str(conf), "--namesrv-port", str(ns_port), cwd=tmp_path)
    try:
        broker.wait_for("embedded nameserver listening on")
        ns = f"127.0.0.1:{ns_port}"
        # the broker's own registration passed the check: its cluster is known
        deadline = time.monotonic() + 30
        while True:
            r = invoke_signed(client, ns, RequestCode.GET_BROKER_CLUSTER_INFO, {}, None, ADMIN)
            if r.code == ResponseCode.SUCCESS and b"broker-acl" in (r.body or b""):
                break
            assert time.monotonic() < deadline, r.remark
            time.sleep(0.2)
        # a stranger's registration and an unsigned read are refused
        r = client.invoke(ns, RequestCode.REGISTER_BROKER, HEADER, GOOD)
        assert r.code == ResponseCode.NO_PERMISSION, r.remark
        r = client.invoke(ns, RequestCode.GET_BROKER_CLUSTER_INFO)
        assert r.code == ResponseCode.NO_PERMISSION, r.remark
    finally:
        broker.kill()
