"""``python -m rmq.namesrv`` as a real process on 127.0.0.1, driven over the wire."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time

import pytest

from rmq import errors
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode, ResponseCode


def register_body(topics: dict[str, int]) -> bytes:
    table = {
        t: {"topicName": t, "readQueueNums": n, "writeQueueNums": n, "perm": 6}
        for t, n in topics.items()
    }
    return json.dumps(
        {
            "topicConfigSerializeWrapper": {
                "topicConfigTable": table,
                "dataVersion": {"timestamp": 1, "counter": 1},
            },
            "filterServerList": [],
        }
    ).encode()


def register(client: RemotingClient, addr: str, name: str, broker_addr: str) -> None:
    r = client.invoke(
        addr,
        RequestCode.REGISTER_BROKER,
        {
            "brokerName": name,
            "brokerAddr": broker_addr,
            "clusterName": "DefaultCluster",
            "haServerAddr": "127.0.0.1:10912",
            "brokerId": "0",
            "compressed": "false",
            "bodyCrc32": "0",
        },
        register_body({"TopicA": 4, "TBW102": 8}),
    )
    assert r.code == ResponseCode.SUCCESS, r.remark


def test_routes_cluster_topics_and_kv(namesrv: tuple[subprocess.Popen[str], str]) -> None:
    _, addr = namesrv
    c = RemotingClient()
    missing = c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"})
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert (
        missing.remark
        and "No topic route info in name server for the topic: TopicA" in missing.remark
    )

    register(c, addr, "broker-a", "127.0.0.1:10911")
    route = c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"})
    assert route.code == ResponseCode.SUCCESS
    assert route.body is not None
    data = json.loads(route.body)
    assert data["queueDatas"][0]["writeQueueNums"] == 4
    assert data["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}

    cluster = json.loads(c.invoke(addr, RequestCode.GET_BROKER_CLUSTER_INFO).body or b"")
    assert cluster["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    topics = json.loads(c.invoke(addr, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body or b"")
    assert topics["topicList"] == ["TBW102", "TopicA"]

    kv = {"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicA"}
    assert c.invoke(addr, RequestCode.GET_KV_CONFIG, kv).code == ResponseCode.QUERY_NOT_FOUND
    put = c.invoke(addr, RequestCode.PUT_KV_CONFIG, {**kv, "value": "broker-a:4"})
    assert put.code == ResponseCode.SUCCESS
    got = c.invoke(addr, RequestCode.GET_KV_CONFIG, kv)
    assert got.ext_fields["value"] == "broker-a:4"

    wipe = c.invoke(addr, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wipe.ext_fields["wipeTopicCount"] == "2"


def test_bad_requests_get_codes_not_disconnects(namesrv: tuple[subprocess.Popen[str], str]) -> None:
    _, addr = namesrv
    c = RemotingClient()
    r = c.invoke(addr, 4242)
    assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert r.remark and "4242" in r.remark
    r = c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {})
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and "'topic'" in r.remark
    r = c.invoke(addr, RequestCode.REGISTER_BROKER, {"brokerName": "x"})
    assert r.code == ResponseCode.SYSTEM_ERROR
    # A malformed frame closes only its own connection.
    host, port = addr.split(":")
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        raw.sendall(b"\x7f\xff\xff\xff garbage")
        assert raw.recv(16) == b""
    assert c.invoke(addr, RequestCode.GET_BROKER_CLUSTER_INFO).code == ResponseCode.SUCCESS


def test_registration_bodies_in_fastjsons_dialect_are_read(
    namesrv: tuple[subprocess.Popen[str], str],
) -> None:
    """Java brokers write their bodies with fastjson (single quotes, bare keys): read as
    Apache's nameserver reads them; a body that is no JSON object says so, never a traceback."""
    _, addr = namesrv
    c = RemotingClient()
    header = {
        "brokerName": "broker-fj",
        "brokerAddr": "127.0.0.1:30911",
        "clusterName": "DefaultCluster",
        "haServerAddr": "",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": "0",
    }
    body = (
        "{'filterServerList':[],'topicConfigSerializeWrapper':{dataVersion:{counter:1,"
        "timestamp:1},'topicConfigTable':{'FjTopic':{'perm':6,'readQueueNums':3,"
        "'topicName':'FjTopic','writeQueueNums':3}}}}"
    )
    r = c.invoke(addr, RequestCode.REGISTER_BROKER, header, body.encode())
    assert r.code == ResponseCode.SUCCESS, r.remark
    route = c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "FjTopic"})
    assert route.code == ResponseCode.SUCCESS, route.remark
    assert json.loads(route.body or b"")["queueDatas"][0]["readQueueNums"] == 3
    r = c.invoke(addr, RequestCode.REGISTER_BROKER, header, b"[1, 2]")
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and "not a JSON object" in r.remark


def test_absurd_or_malformed_registrations_are_refused_and_change_nothing(
    namesrv: tuple[subprocess.Popen[str], str],
) -> None:
    """A registration claiming 100 000 000 queues, or with a topic config that is not an
    object, is refused with a remark naming the topic and field; the route stays as it was and
    the nameserver keeps answering (no traceback)."""
    _, addr = namesrv
    c = RemotingClient()
    register(c, addr, "broker-v", "127.0.0.1:40911")
    header = {
        "brokerName": "broker-v",
        "brokerAddr": "127.0.0.1:40911",
        "clusterName": "DefaultCluster",
        "haServerAddr": "",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": "0",
    }

    def body(table: object) -> bytes:
        wrapper = {"topicConfigTable": table, "dataVersion": {"timestamp": 2, "counter": 2}}
        return json.dumps({"topicConfigSerializeWrapper": wrapper}).encode()

    huge = {"TopicA": {"topicName": "TopicA", "readQueueNums": 100_000_000, "writeQueueNums": 4}}
    cases = [
        (body(huge), "topic 'TopicA': readQueueNums = 100000000 is out of range"),
        (body({"TopicA": 7}), "topic 'TopicA': its config is not a JSON object"),
        (body({"TopicA": {"readQueueNums": "many"}}), "topic 'TopicA': a field is not an integer"),
        (body([1, 2]), "topicConfigTable is not a JSON object"),
    ]
    for raw, expected in cases:
        r = c.invoke(addr, RequestCode.REGISTER_BROKER, header, raw)
        assert r.code == ResponseCode.SYSTEM_ERROR, (expected, r.remark)
        assert r.remark and expected in r.remark, r.remark
    route = c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"})
    queues = json.loads(route.body or b"")["queueDatas"]
    assert [q["readQueueNums"] for q in queues if q["brokerName"] == "broker-v"] == [4]


def test_broker_connection_close_forgets_it_at_once(
    namesrv: tuple[subprocess.Popen[str], str],
) -> None:
    _, addr = namesrv
    broker = RemotingClient()
    register(broker, addr, "broker-b", "127.0.0.1:20911")
    reader = RemotingClient()
    assert reader.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).code == 0
    broker.close()
    deadline = time.monotonic() + 10
    while reader.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).code == 0:
        assert time.monotonic() < deadline, "route survived the broker's connection"
        time.sleep(0.05)


def test_sigterm_shuts_down_cleanly(namesrv: tuple[subprocess.Popen[str], str]) -> None:
    proc, addr = namesrv
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    assert proc.stderr is not None
    assert "shutdown complete" in proc.stderr.read()
    with pytest.raises(errors.RemotingConnectError, match="connecting to"):
        RemotingClient().invoke(addr, RequestCode.GET_BROKER_CLUSTER_INFO, timeout_ms=1000)


def test_namesrv_config_and_add_write_perm(namesrv: tuple[subprocess.Popen[str], str]) -> None:
    _, addr = namesrv
    c = RemotingClient()
    port = addr.rsplit(":", 1)[1]
    got = c.invoke(addr, RequestCode.GET_NAMESRV_CONFIG)
    assert got.code == ResponseCode.SUCCESS
    assert (got.body or b"").decode() == f"listenPort={port}\n"
    ok = c.invoke(addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n")
    assert ok.code == ResponseCode.SUCCESS, ok.remark
    assert b"orderMessageEnable=true\n" in (
        c.invoke(addr, RequestCode.GET_NAMESRV_CONFIG).body or b""
    )
    # RocketMQ's refusal for the path keys; clear errors for the rest; nothing half-applied.
    path = c.invoke(addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, b"kvConfigPath=/x\n")
    assert path.code == ResponseCode.NO_PERMISSION
    assert path.remark and "Can not update config path" in path.remark
    for body, why in [
        (b"clusterTest=false\nnoSuchKey=1\n", "unknown nameserver config key 'noSuchKey'"),
        (b"clusterTest=yes\n", "not a boolean"),
        (b"listenPort=1\n", "cannot change while the nameserver runs"),
    ]:
        bad = c.invoke(addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, body)
        assert bad.code == ResponseCode.SYSTEM_ERROR
        assert bad.remark and why in bad.remark, bad.remark
    assert b"clusterTest" not in (c.invoke(addr, RequestCode.GET_NAMESRV_CONFIG).body or b"")

    register(c, addr, "broker-a", "127.0.0.1:10911")
    wipe = c.invoke(addr, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wipe.ext_fields["wipeTopicCount"] == "2"
    add = c.invoke(addr, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert add.code == ResponseCode.SUCCESS
    assert add.ext_fields["addTopicCount"] == "2"
    route = json.loads(
        c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).body or b""
    )
    assert route["queueDatas"][0]["perm"] == 6
    missing = c.invoke(addr, RequestCode.ADD_WRITE_PERM_OF_BROKER, {})
    assert missing.code == ResponseCode.SYSTEM_ERROR
    assert missing.remark and "'brokerName'" in missing.remark
