"""The nameserver's KV config file (``kvConfigPath``) and QUERY_DATA_VERSION, and the admin
sub-commands on them (``updateKvConfig``, ``deleteKvConfig``, ``updateNamesrvConfig``), against
real ``rmq.namesrv`` processes."""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmq._rmq import RemotingClient
from rmq.admin import main
from rmq.codes import RequestCode, ResponseCode

pytestmark = pytest.mark.timeout(120)

NS = "RMQ_OPS_NS"


@contextlib.contextmanager
def namesrv_with(conf: Path) -> Iterator[str]:
    """An ``rmq.namesrv`` started with ``-c conf``; yields its address."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.namesrv", "-c", str(conf), "--host", "127.0.0.1", "-p", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    addr = None
    for line in proc.stderr:
        m = re.search(r"listening on (127\.0\.0\.1:\d+)", line)
        if m:
            addr = m.group(1)
            break
    try:
        assert addr, "nameserver did not start"
        yield addr
    finally:
        proc.kill()
        proc.wait(10)
        proc.stderr.close()


def admin(capsys: pytest.CaptureFixture[str], addr: str, *argv: str) -> str:
    capsys.readouterr()
    assert main(["-n", addr, *argv]) == 0
    return capsys.readouterr().out


def kv_get(c: RemotingClient, addr: str, key: str) -> str | None:
    r = c.invoke(addr, RequestCode.GET_KV_CONFIG, {"namespace": NS, "key": key})
    if r.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    assert r.code == ResponseCode.SUCCESS, r.remark
    return r.ext_fields["value"]


def test_kv_config_survives_a_restart_in_rocketmqs_file_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kv_file = tmp_path / "sub" / "kvConfig.json"
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"kvConfigPath = {kv_file}\n")
    c = RemotingClient()
    with namesrv_with(conf) as addr:
        out = admin(capsys, addr, "updateKvConfig", "-s", NS, "-k", "k1", "-v", "v1")
        assert out.strip() == "create or update kv config to namespace success."
        admin(capsys, addr, "updateKvConfig", "-s", NS, "-k", "k2", "-v", "v2")
        admin(capsys, addr, "updateKvConfig", "-s", "ORDER_TOPIC_CONFIG", "-k", "T", "-v", "b:4")
        out = admin(capsys, addr, "deleteKvConfig", "-s", NS, "-k", "k2")
        assert out.strip() == "delete kv config from namespace success."
        assert kv_get(c, addr, "k1") == "v1"
        config = c.invoke(addr, RequestCode.GET_NAMESRV_CONFIG).body or b""
        assert f"kvConfigPath={kv_file}" in config.decode().splitlines()
    # What is on disk is RocketMQ's KVConfigSerializeWrapper, and only what is left.
    on_disk = json.loads(kv_file.read_text())
    assert on_disk == {"configTable": {NS: {"k1": "v1"}, "ORDER_TOPIC_CONFIG": {"T": "b:4"}}}
    with namesrv_with(conf) as addr:
        assert kv_get(c, addr, "k1") == "v1"
        assert kv_get(c, addr, "k2") is None
        listed = c.invoke(addr, RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": NS})
        assert json.loads(listed.body or b"") == {"table": {"k1": "v1"}}
    # A file a Java nameserver wrote loads too.
    kv_file.write_text('{"configTable":{"NS2":{"a":"1"}}}')
    with namesrv_with(conf) as addr:
        r = c.invoke(addr, RequestCode.GET_KV_CONFIG, {"namespace": "NS2", "key": "a"})
        assert r.ext_fields["value"] == "1"


@pytest.mark.parametrize("content", ["{not json", '{"configTable": {"NS": ["a", "b"]}}', "[1, 2]"])
def test_a_corrupt_kv_file_refuses_start_and_names_the_file(tmp_path: Path, content: str) -> None:
    kv_file = tmp_path / "kvConfig.json"
    kv_file.write_text(content)
    conf = tmp_path / "namesrv.conf"
    conf.write_text(f"kvConfigPath = {kv_file}\n")
    r = subprocess.run(
        [sys.executable, "-m", "rmq.namesrv", "-c", str(conf), "--host", "127.0.0.1", "-p", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2
    assert str(kv_file) in r.stderr
    assert "corrupt" in r.stderr and "move it away" in r.stderr
    assert "Traceback" not in r.stderr
    assert kv_file.read_text() == content  # never overwritten


def register(c: RemotingClient, addr: str, version: dict[str, Any]) -> None:
    body = {
        "topicConfigSerializeWrapper": {
            "topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4}},
            "dataVersion": version,
        },
        "filterServerList": [],
    }
    r = c.invoke(addr, RequestCode.REGISTER_BROKER, BROKER, json.dumps(body).encode())
    assert r.code == ResponseCode.SUCCESS, r.remark


BROKER = {
    "brokerName": "broker-v",
    "brokerAddr": "127.0.0.1:10999",
    "clusterName": "C",
    "brokerId": "0",
    "haServerAddr": "",
}


def query_version(c: RemotingClient, addr: str, version: dict[str, Any]) -> tuple[str, Any]:
    r = c.invoke(addr, RequestCode.QUERY_DATA_VERSION, BROKER, json.dumps(version).encode())
    assert r.code == ResponseCode.SUCCESS, r.remark
    return r.ext_fields["changed"], json.loads(r.body) if r.body else None


def test_query_data_version_says_whether_the_broker_must_register_again(
    namesrv: tuple[subprocess.Popen[str], str],
) -> None:
    _, addr = namesrv
    c = RemotingClient()
    v1 = {"counter": 3, "timestamp": 1700000000000}
    # Unknown broker: changed, and no stored version to send back.
    assert query_version(c, addr, v1) == ("true", None)
    register(c, addr, v1)
    assert query_version(c, addr, v1) == ("false", v1)
    v2 = {"counter": 4, "timestamp": 1700000000500}
    assert query_version(c, addr, v2) == ("true", v1)
    register(c, addr, v2)
    assert query_version(c, addr, v2) == ("false", v2)
    bad = c.invoke(addr, RequestCode.QUERY_DATA_VERSION, BROKER, b"not json")
    assert bad.code == ResponseCode.SYSTEM_ERROR and "DataVersion" in (bad.remark or "")
    missing = c.invoke(addr, RequestCode.QUERY_DATA_VERSION, {"brokerAddr": "x:1"}, b"{}")
    assert missing.code == ResponseCode.SYSTEM_ERROR and "brokerName" in (missing.remark or "")


def test_update_namesrv_config_sub_command(
    namesrv: tuple[subprocess.Popen[str], str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, addr = namesrv
    out = admin(capsys, addr, "updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true")
    assert out.splitlines() == [
        f"update name server config success![{addr}]",
        "orderMessageEnable : true",
    ]
    got = admin(capsys, addr, "getNamesrvConfig")
    assert re.search(r"orderMessageEnable\s*=\s*true", got)
    capsys.readouterr()
    assert main(["-n", addr, "updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x"]) != 0
    assert "Can not update config path" in capsys.readouterr().err
