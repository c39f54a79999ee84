"""A real nameserver and a real broker on 127.0.0.1, driven over the wire with RocketMQ's
request codes: auto-created topics reach the nameserver, sends are stored and pulled back,
offsets are kept, and a clean shutdown unregisters the broker."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import TEST_STORE_CONF, BrokerProcess, free_port, send_v2_header
from rmq._rmq import RemotingClient, decode_messages
from rmq.codes import RequestCode, ResponseCode

PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4


@pytest.fixture
def broker(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> Iterator[tuple[BrokerProcess, str, str]]:
    _, ns_addr = namesrv
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClusterName = WireCluster\n"
        "brokerName = broker-wire\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n"
        "registerNameServerPeriod = 10000\n" + TEST_STORE_CONF
    )
    proc = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=tmp_path)
    try:
        line = proc.wait_for("listening on")
        assert re.search(r"listening on [0-9.]+:\d+", line), line
        yield proc, f"127.0.0.1:{port}", ns_addr
    finally:
        proc.kill()


def send_v2(client: RemotingClient, addr: str, topic: str, body: bytes, tags: str, keys: str):  # type: ignore[no-untyped-def]
    header = send_v2_header("wire-producer", topic, tags, keys)
    return client.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body)


def route(client: RemotingClient, ns: str, topic: str) -> dict[str, object] | None:
    r = client.invoke(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if r.code != ResponseCode.SUCCESS or r.body is None:
        return None
    result: dict[str, object] = json.loads(r.body)
    return result


def test_send_pull_offsets_and_registration(broker: tuple[BrokerProcess, str, str]) -> None:
    proc, addr, ns = broker
    c = RemotingClient()
    deadline = time.monotonic() + 15
    while route(c, ns, "TBW102") is None:
        assert time.monotonic() < deadline, "broker never registered with the nameserver"
        time.sleep(0.05)

    sent = [
        send_v2(c, addr, "WireTopic", f"body-{i}".encode(), "TagA" if i % 2 else "TagB", f"k{i}")
        for i in range(10)
    ]
    assert all(r.code == ResponseCode.SUCCESS for r in sent), [r.remark for r in sent]
    assert [r.ext_fields["queueOffset"] for r in sent] == [str(i) for i in range(10)]
    assert all(len(r.ext_fields["msgId"]) == 32 for r in sent)

    # The auto-created topic is announced to the nameserver without waiting for the period.
    deadline = time.monotonic() + 10
    while route(c, ns, "WireTopic") is None:
        assert time.monotonic() < deadline, "auto-created topic never reached the nameserver"
        time.sleep(0.05)

    pull_header = {
        "consumerGroup": "wire-group",
        "topic": "WireTopic",
        "queueId": "0",
        "queueOffset": "0",
        "maxMsgNums": "32",
        "sysFlag": str(PULL_FLAG_SUBSCRIPTION),
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "TagA",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    deadline = time.monotonic() + 10
    while True:
        pulled = c.invoke(addr, RequestCode.PULL_MESSAGE, pull_header)
        if pulled.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    assert pulled.code == ResponseCode.SUCCESS, pulled.remark
    assert pulled.body is not None
    messages = decode_messages(pulled.body)
    assert [m.body for m in messages] == [f"body-{i}".encode() for i in range(1, 10, 2)]
    assert all(m.tags == "TagA" for m in messages)
    assert pulled.ext_fields["nextBeginOffset"] == "10"

    # A long-polling pull at the end is answered as soon as a message arrives.
    held = dict(
        pull_header,
        queueOffset="10",
        subscription="*",
        suspendTimeoutMillis="5000",
        sysFlag=str(PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND),
    )
    import threading

    result: list[object] = []
    t = threading.Thread(
        target=lambda: result.append(c.invoke(addr, RequestCode.PULL_MESSAGE, held, None, 10_000))
    )
    start = time.monotonic()
    t.start()
    time.sleep(0.3)
    assert send_v2(c, addr, "WireTopic", b"late", "TagC", "k-late").code == ResponseCode.SUCCESS
    t.join(10)
    late = result[0]
    assert late.code == ResponseCode.SUCCESS
    assert time.monotonic() - start < 3, "held pull was not woken by the new message"
    assert [m.body for m in decode_messages(late.body)] == [b"late"]

    upd = {"consumerGroup": "wire-group", "topic": "WireTopic", "queueId": "0", "commitOffset": "7"}
    assert c.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, upd).code == ResponseCode.SUCCESS
    q = c.invoke(
        addr,
        RequestCode.QUERY_CONSUMER_OFFSET,
        {"consumerGroup": "wire-group", "topic": "WireTopic", "queueId": "0"},
    )
    assert q.code == ResponseCode.SUCCESS and q.ext_fields["offset"] == "7"
    mx = c.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": "WireTopic", "queueId": "0"})
    assert mx.ext_fields["offset"] == "11"

    bad = send_v2(c, addr, "bad topic!", b"x", "t", "k")
    assert bad.code != ResponseCode.SUCCESS and bad.remark
    assert c.invoke(addr, 4242).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

    proc.proc.send_signal(signal.SIGTERM)
    assert proc.proc.wait(30) == 0
    assert route(c, ns, "WireTopic") is None, "a clean shutdown unregisters the broker"
    assert sys.executable


def test_groups_bad_headers_and_connection_floods(broker: tuple[BrokerProcess, str, str]) -> None:
    import socket

    _, addr, _ = broker
    c = RemotingClient()
    group = {"groupName": "orders-group", "consumeEnable": True, "retryMaxTimes": 5}
    r = c.invoke(addr, 200, None, json.dumps(group).encode())
    assert r.code == ResponseCode.SUCCESS, r.remark
    groups = json.loads(c.invoke(addr, 201).body or b"")
    assert groups["subscriptionGroupTable"]["orders-group"]["retryMaxTimes"] == 5
    assert c.invoke(addr, 200, None, b"not json").code == ResponseCode.SYSTEM_ERROR

    # Headers missing required fields get an error naming the field, not a dropped connection.
    r = c.invoke(addr, RequestCode.PULL_MESSAGE, {"topic": "WireTopic"})
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and "consumerGroup" in r.remark
    r = c.invoke(addr, RequestCode.SEND_MESSAGE_V2, {"b": "WireTopic"})
    assert r.code == ResponseCode.SYSTEM_ERROR and r.remark

    # 300 connections at once, some sending garbage: the broker keeps serving everyone.
    host, port = addr.split(":")
    socks = []
    for i in range(300):
        s = socket.create_connection((host, int(port)), timeout=5)
        if i % 3 == 0:
            s.sendall(b"\x00\x00\x00\x05\x09\x00\x00\x00\x00")  # unknown serialize type
        socks.append(s)
    try:
        assert send_v2(c, addr, "FloodTopic", b"still-ok", "t", "k").code == ResponseCode.SUCCESS
    finally:
        for s in socks:
            s.close()
    again = RemotingClient()
    assert (
        again.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": "FloodTopic", "queueId": "0"}).code
        == 0
    )


def test_idle_connections_close_after_server_channel_max_idle_time(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    """``serverChannelMaxIdleTimeSeconds`` (RocketMQ's key, 120 s by default): a connection
    with no traffic for that long is closed; one that keeps talking stays open."""
    _, ns_addr = namesrv
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName = broker-idle\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n"
        "serverChannelMaxIdleTimeSeconds = 1\n" + TEST_STORE_CONF
    )
    proc = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=tmp_path)
    try:
        proc.wait_for("listening on")
        quiet = socket.create_connection(("127.0.0.1", port), timeout=10)
        busy = RemotingClient()
        t0 = time.monotonic()
        for _ in range(6):
            r = busy.invoke(f"127.0.0.1:{port}", RequestCode.GET_BROKER_RUNTIME_INFO)
            assert r.code == ResponseCode.SUCCESS
            time.sleep(0.4)
        assert quiet.recv(16) == b"", "the idle connection was not closed"
        assert time.monotonic() - t0 < 9
        r = busy.invoke(f"127.0.0.1:{port}", RequestCode.GET_BROKER_RUNTIME_INFO)
        assert r.code == ResponseCode.SUCCESS, "the busy connection was closed"
        quiet.close()
    finally:
        proc.kill()
