"""A real nameserver and a real broker on 127.0.0.1, driven over the wire with RocketMQ's
request codes: auto-created topics reach the nameserver, sends are stored and pulled back,
offsets are kept, and a clean shutdown unregisters the broker."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import TEST_STORE_CONF, BrokerProcess, free_port, send_v2_header, wait_until
from rmq._rmq import RemotingClient, decode_messages
from rmq.codes import RequestCode, ResponseCode

PULL_FLAG_SUSPEND = 0x2
PULL_FLAG_SUBSCRIPTION = 0x4


@contextlib.contextmanager
def wire_broker(work: Path, ns_addr: str) -> Iterator[tuple[BrokerProcess, str, str]]:
    """A broker ``broker-wire`` in ``work`` registered with ``ns_addr``; yields the process,
    its address and the nameserver's."""
    port = free_port()
    conf = work / "broker.conf"
    conf.write_text(
        "brokerClusterName = WireCluster\n"
        "brokerName = broker-wire\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {work / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n"
        "registerNameServerPeriod = 10000\n" + TEST_STORE_CONF
    )
    proc = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=work)
    try:
        line = proc.wait_for("listening on")
        assert re.search(r"listening on [0-9.]+:\d+", line), line
        yield proc, f"127.0.0.1:{port}", ns_addr
    finally:
        proc.kill()


@pytest.fixture
def broker(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> Iterator[tuple[BrokerProcess, str, str]]:
    with wire_broker(tmp_path, namesrv[1]) as started:
        yield started


def send_v2(client: RemotingClient, addr: str, topic: str, body: bytes, tags: str, keys: str):  # type: ignore[no-untyped-def]
    header = send_v2_header("wire-producer", topic, tags, keys)
    return client.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body)


@dataclass
class Wire:
    """A running broker of :func:`wire_broker` and a client to talk to it."""

    proc: BrokerProcess
    addr: str
    ns: str
    client: RemotingClient


PULL_HEADER = {
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


def max_offset(wire: Wire, topic: str) -> int:
    """GET_MAX_OFFSET of ``topic`` queue 0 (-1 while the broker does not know the topic)."""
    r = wire.client.invoke(wire.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"})
    return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else -1


def route(client: RemotingClient, ns: str, topic: str) -> dict[str, object] | None:
    r = client.invoke(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    if r.code != ResponseCode.SUCCESS or r.body is None:
        return None
    result: dict[str, object] = json.loads(r.body)
    return result


@pytest.fixture(scope="module")
def wire(
    tmp_path_factory: pytest.TempPathFactory,
    module_namesrv: tuple[subprocess.Popen[str], str],
) -> Iterator[Wire]:
    work = tmp_path_factory.mktemp("wire")
    with wire_broker(work, module_namesrv[1]) as (proc, addr, ns):
        client = RemotingClient()
        try:
            yield Wire(proc, addr, ns, client)
        finally:
            client.close()


@pytest.fixture(scope="module")
def sent(wire: Wire) -> list[Any]:
    """The responses to ten SEND_MESSAGE_V2s, once all ten are in the ConsumeQueue."""
    responses = [
        send_v2(
            wire.client,
            wire.addr,
            "WireTopic",
            f"body-{i}".encode(),
            "TagA" if i % 2 else "TagB",
            f"k{i}",
        )
        for i in range(10)
    ]
    wait_until(lambda: max_offset(wire, "WireTopic") >= 10, "ten messages dispatched")
    return responses


class TestSendPullOffsetsAndRegistration:
    """One broker (``wire``) for the class; ten messages sent to ``WireTopic`` queue 0 (tags
    alternating TagB/TagA) by the ``sent`` fixture. The shutdown case stops the broker, so it
    comes last."""

    def test_the_broker_registers_with_the_nameserver(self, wire: Wire) -> None:
        deadline = time.monotonic() + 15
        while route(wire.client, wire.ns, "TBW102") is None:
            assert time.monotonic() < deadline, "broker never registered with the nameserver"
            time.sleep(0.05)

    def test_send_v2_answers_consecutive_queue_offsets_and_message_ids(
        self, sent: list[Any]
    ) -> None:
        assert all(r.code == ResponseCode.SUCCESS for r in sent), [r.remark for r in sent]
        assert [r.ext_fields["queueOffset"] for r in sent] == [str(i) for i in range(10)]
        assert all(len(r.ext_fields["msgId"]) == 32 for r in sent)

    def test_an_auto_created_topic_is_announced_without_waiting_for_the_period(
        self, wire: Wire, sent: list[Any]
    ) -> None:
        deadline = time.monotonic() + 10
        while route(wire.client, wire.ns, "WireTopic") is None:
            assert time.monotonic() < deadline, "auto-created topic never reached the nameserver"
            time.sleep(0.05)

    def test_a_pull_returns_only_the_subscribed_tag(self, wire: Wire, sent: list[Any]) -> None:
        # Dispatch is asynchronous: wait until all ten sends are in the queue.
        wait_until(lambda: max_offset(wire, "WireTopic") >= 10, "WireTopic's ten messages")
        pulled = wire.client.invoke(wire.addr, RequestCode.PULL_MESSAGE, PULL_HEADER)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark
        assert pulled.body is not None
        messages = decode_messages(pulled.body)
        assert [m.body for m in messages] == [f"body-{i}".encode() for i in range(1, 10, 2)]
        assert all(m.tags == "TagA" for m in messages)
        assert pulled.ext_fields["nextBeginOffset"] == "10"

    def test_a_long_polling_pull_at_the_end_is_answered_when_a_message_arrives(
        self, wire: Wire
    ) -> None:
        # Its own topic, so that the other cases' offsets do not depend on this one.
        c, addr = wire.client, wire.addr
        assert send_v2(c, addr, "WireHeld", b"first", "TagC", "k0").code == ResponseCode.SUCCESS
        wait_until(lambda: max_offset(wire, "WireHeld") >= 1, "WireHeld's first message")
        held = dict(
            PULL_HEADER,
            topic="WireHeld",
            queueOffset="1",
            subscription="*",
            suspendTimeoutMillis="5000",
            sysFlag=str(PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND),
        )
        result: list[Any] = []
        t = threading.Thread(
            target=lambda: result.append(
                c.invoke(addr, RequestCode.PULL_MESSAGE, held, None, 10_000)
            )
        )
        start = time.monotonic()
        t.start()
        time.sleep(0.3)
        assert send_v2(c, addr, "WireHeld", b"late", "TagC", "k-late").code == ResponseCode.SUCCESS
        t.join(10)
        late = result[0]
        assert late.code == ResponseCode.SUCCESS
        assert time.monotonic() - start < 3, "held pull was not woken by the new message"
        assert [m.body for m in decode_messages(late.body)] == [b"late"]

    def test_consumer_offsets_are_committed_and_queried(self, wire: Wire, sent: list[Any]) -> None:
        c, addr = wire.client, wire.addr
        upd = {
            "consumerGroup": "wire-group",
            "topic": "WireTopic",
            "queueId": "0",
            "commitOffset": "7",
        }
        assert c.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, upd).code == ResponseCode.SUCCESS
        q = c.invoke(
            addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": "wire-group", "topic": "WireTopic", "queueId": "0"},
        )
        assert q.code == ResponseCode.SUCCESS and q.ext_fields["offset"] == "7"
        assert max_offset(wire, "WireTopic") == 10

    def test_a_bad_topic_and_an_unknown_request_code_are_refused(self, wire: Wire) -> None:
        bad = send_v2(wire.client, wire.addr, "bad topic!", b"x", "t", "k")
        assert bad.code != ResponseCode.SUCCESS and bad.remark
        assert wire.client.invoke(wire.addr, 4242).code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED

    def test_a_clean_shutdown_unregisters_the_broker(self, wire: Wire, sent: list[Any]) -> None:
        wait_until(lambda: route(wire.client, wire.ns, "WireTopic") is not None, "WireTopic route")
        wire.proc.proc.send_signal(signal.SIGTERM)
        assert wire.proc.proc.wait(30) == 0
        assert route(wire.client, wire.ns, "WireTopic") is None, (
            "a clean shutdown unregisters the broker"
        )


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
