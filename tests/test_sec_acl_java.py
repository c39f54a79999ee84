"""ACL 1.0 with Apache RocketMQ's own Java code (4.9.7, from Maven Central) against an rmq
broker with ``aclEnable = true``: the client with ``AclClientRPCHook(new
SessionCredentials(ak, sk))`` produces and consumes (tests/compat/java/acl/AclCheck.java), an
account with SUB only, a wrong secret and no credentials are refused with NO_PERMISSION; and
mqadmin's ACL commands (``updateAclConfig``, ``clusterAclConfigVersion``, ``deleteAclConfig``,
``updateGlobalWhiteAddr``), signed with the credentials of its ``conf/tools.yml``, edit the
broker's plain_acl.yml."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import BrokerProcess, create_topic_header
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode, ResponseCode
from sec_acl_helpers import (
    ACL_GROUP,
    ACL_TOPIC,
    ADMIN,
    PUBLISHER,
    SUB_ONLY,
    acl_broker,
    invoke_signed,
)

sys.path.insert(0, str(Path(__file__).parent / "compat" / "mqadmin"))
from mqadmin import MQAdmin, java_executable, resolve_classpath

ACL_CHECK = Path(__file__).parent / "compat" / "java" / "acl" / "AclCheck.java"
MQADMIN_PROJECT = Path(__file__).parent / "compat" / "mqadmin"
COUNT = 20


@pytest.fixture
def cluster(
    tmp_path: Path, namesrv: tuple[object, str]
) -> Iterator[tuple[str, str, Path, BrokerProcess]]:
    """A nameserver and an ACL broker with ``ACL_TOPIC`` created and routed."""
    _, ns_addr = namesrv
    with acl_broker(tmp_path / "broker", ns_addr) as (addr, acl_file, proc):
        client = RemotingClient()
        try:
            header = create_topic_header(ACL_TOPIC, 2)
            r = invoke_signed(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            assert r.code == 0, r.remark
            deadline = time.monotonic() + 30
            while (
                client.invoke(
                    ns_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": ACL_TOPIC}
                ).code
                != ResponseCode.SUCCESS
            ):
                assert time.monotonic() < deadline, "the topic was not routed"
                time.sleep(0.2)
        finally:
            client.close()
        yield ns_addr, addr, acl_file, proc


def test_the_java_client_produces_and_consumes_with_aclclientrpchook(
    tmp_path: Path, cluster: tuple[str, str, Path, BrokerProcess]
) -> None:
    ns_addr, _, _, _ = cluster
    done = subprocess.run(
        [
            java_executable(),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true",
            f"-Duser.home={tmp_path}",
            "-cp",
            resolve_classpath(MQADMIN_PROJECT),
            str(ACL_CHECK),
            ns_addr,
            ACL_TOPIC,
            ACL_GROUP,
            str(COUNT),
            *PUBLISHER,
            *SUB_ONLY,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"},
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["sent"] == COUNT and summary["received"] == COUNT, summary
    code, remark = summary["subOnly"]
    assert code == ResponseCode.NO_PERMISSION
    assert remark == f"account '{SUB_ONLY[0]}' has no PUB permission on topic '{ACL_TOPIC}'"
    code, remark = summary["wrongSecret"]
    assert code == ResponseCode.NO_PERMISSION and "signature check failed" in remark, remark
    code, remark = summary["unsigned"]
    assert code == ResponseCode.NO_PERMISSION and "no AccessKey" in remark, remark


def test_mqadmin_acl_commands(
    tmp_path: Path, cluster: tuple[str, str, Path, BrokerProcess]
) -> None:
    ns_addr, addr, acl_file, _ = cluster
    work = tmp_path / "mqadmin"
    conf = work / "rocketmq_home" / "conf"
    conf.mkdir(parents=True)
    (conf / "tools.yml").write_text(f"accessKey: {ADMIN[0]}\nsecretKey: {ADMIN[1]}\n")
    with MQAdmin(work, ns_addr) as admin:
        out = admin.run(
            "updateAclConfig",
            "-b",
            addr,
            "-a",
            "javaadmin1",
            "-s",
            "javasecret1",
            "-t",
            f"{ACL_TOPIC}=PUB,T_NO=DENY",
            "-i",
            "SUB",
            "-u",
            "SUB",
            "-m",
            "false",
        )
        assert not out.failed, out.output
        assert "update plain access config to" in out.output, out.output
        text = acl_file.read_text()
        assert "javaadmin1" in text and "T_NO=DENY" in text, text
        client = RemotingClient()
        try:
            header = {"topic": ACL_TOPIC, "queueId": "0"}
            r = invoke_signed(
                client,
                addr,
                RequestCode.GET_MAX_OFFSET,
                header,
                account=("javaadmin1", "javasecret1"),
            )
            assert r.code == 0, r.remark
        finally:
            client.close()
        out = admin.run("clusterAclConfigVersion", "-b", addr)
        assert not out.failed, out.output
        assert "broker-acl" in out.output and addr in out.output, out.output
        out = admin.run(
            "updateGlobalWhiteAddr", "-b", addr, "-g", "10.1.1.*,10.2.2.2", "-p", str(acl_file)
        )
        assert not out.failed, out.output
        assert "10.2.2.2" in acl_file.read_text()
        out = admin.run("deleteAclConfig", "-b", addr, "-a", "javaadmin1")
        assert not out.failed, out.output
        assert "javaadmin1" not in acl_file.read_text()
    # Without credentials, mqadmin is refused and the file stays.
    (conf / "tools.yml").unlink()
    before = acl_file.read_text()
    with MQAdmin(tmp_path / "mqadmin2", ns_addr) as admin:
        out = admin.run(
            "updateAclConfig", "-b", addr, "-a", "intruder1", "-s", "intruder12", "-m", "true"
        )
        assert out.failed, out.output
        assert "CODE: 16" in out.output and "carries no AccessKey" in out.output, out.output
    assert acl_file.read_text() == before
