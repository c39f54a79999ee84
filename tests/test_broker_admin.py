"""The consumer-admin and config request codes of a real broker process, over the wire:
GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208), GET_CONSUMER_CONNECTION_LIST (203),
INVOKE_BROKER_TO_RESET_OFFSET (222, with RESET_CONSUMER_CLIENT_OFFSET 220 to a connected
consumer), LOCK_BATCH_MQ / UNLOCK_BATCH_MQ (41/42), GET_BROKER_CONFIG / UPDATE_BROKER_CONFIG
(26/25, served by Python). Bodies are checked in the form a Java broker writes them."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    free_port,
    pull_header,
    update_offset_header,
    wait_until,
)
from rmq._rmq import RemotingClient, RemotingResponse, decode_messages
from rmq.broker.admin_handler import RUNTIME_KEYS, BrokerAdminHandler
from rmq.codes import RequestCode, ResponseCode
from rmq.config import load_broker_config, parse_properties
from test_broker_wire import route, send_v2

# fastjson writes Map<MessageQueue, V> with the MessageQueue object as the key.
MQ_KEY = re.compile(r'\{"brokerName":"([^"]*)","queueId":(\d+),"topic":"([^"]*)"\}:')


def fastjson(body: bytes | None) -> dict[str, Any]:
    """A body with MessageQueue keys as JSON, the keys turned into ``topic/broker/queueId``."""
    assert body is not None
    text = MQ_KEY.sub(lambda m: json.dumps(f"{m[3]}/{m[1]}/{m[2]}") + ":", body.decode())
    result: dict[str, Any] = json.loads(text)
    return result


@dataclass
class Broker:
    proc: BrokerProcess
    addr: str
    namesrv: str
    conf: Path
    client: RemotingClient = field(default_factory=RemotingClient)

    def invoke(
        self, code: int, ext: dict[str, str] | None = None, body: bytes | None = None
    ) -> RemotingResponse:
        return self.client.invoke(self.addr, code, ext, body)

    def send(self, topic: str, count: int, queue_offset_start: int = 0) -> None:
        for i in range(count):
            r = send_v2(self.client, self.addr, topic, f"m{i}".encode(), "t", f"k{i}")
            assert r.code == ResponseCode.SUCCESS, r.remark
        expected = str(queue_offset_start + count)
        wait_until(
            lambda: (
                self.invoke(
                    RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": "0"}
                ).ext_fields["offset"]
                == expected
            ),
            "messages not dispatched",
        )

    def store_timestamps(self, topic: str, count: int) -> list[int]:
        pull = pull_header("ts-reader", topic, max_nums=count)
        r = self.invoke(RequestCode.PULL_MESSAGE, pull)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.body is not None
        return [m.store_timestamp for m in decode_messages(r.body)]

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        ext = update_offset_header(group, topic, queue_id, offset)
        assert self.invoke(RequestCode.UPDATE_CONSUMER_OFFSET, ext).code == ResponseCode.SUCCESS

    def committed(self, group: str, topic: str, queue_id: int) -> int:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        r = self.invoke(RequestCode.QUERY_CONSUMER_OFFSET, ext)
        assert r.code == ResponseCode.SUCCESS, r.remark
        return int(r.ext_fields["offset"])

    def config(self) -> tuple[dict[str, str], dict[str, Any]]:
        r = self.invoke(RequestCode.GET_BROKER_CONFIG)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.body is not None
        return parse_properties(r.body.decode()), json.loads(r.ext_fields["version"])

    def update(self, text: str) -> RemotingResponse:
        return self.invoke(RequestCode.UPDATE_BROKER_CONFIG, None, text.encode())


CONF = (
    "# admin test broker\n"
    "brokerClusterName = AdminCluster\n"
    "brokerName = broker-admin\n"
    "brokerIP1 = 127.0.0.1\n"
    "listenPort = {port}\n"
    "storePathRootDir = {store}\n"
    "mappedFileSizeCommitLog = 1048576\n"
    "brokerPermission = 6\n"
    "registerNameServerPeriod = 10000\n"
) + TEST_STORE_CONF


def start_broker(tmp_path: Path, ns_addr: str, conf: Path) -> BrokerProcess:
    proc = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=tmp_path)
    proc.wait_for("listening on")
    return proc


@pytest.fixture
def broker(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[Broker]:
    _, ns_addr = namesrv
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF.format(port=port, store=tmp_path / "store"))
    proc = start_broker(tmp_path, ns_addr, conf)
    b = Broker(proc, f"127.0.0.1:{port}", ns_addr, conf)
    try:
        yield b
    finally:
        b.client.close()
        b.proc.kill()


class RawConsumer:
    """A bare socket speaking RocketMQ's JSON frames: heartbeats as a push consumer and
    records every request the broker sends it (NOTIFY_CONSUMER_IDS_CHANGED,
    RESET_CONSUMER_CLIENT_OFFSET)."""

    def __init__(self, addr: str, client_id: str, group: str, topics: list[str]) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.client_id = client_id
        self.received: list[tuple[dict[str, Any], bytes]] = []
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._opaque = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        heartbeat = {
            "clientID": client_id,
            "consumerDataSet": [
                {
                    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                    "consumeType": "CONSUME_PASSIVELY",
                    "groupName": group,
                    "messageModel": "CLUSTERING",
                    "subscriptionDataSet": [
                        {"topic": t, "subString": "*", "expressionType": "TAG"} for t in topics
                    ],
                    "unitMode": False,
                }
            ],
            "producerDataSet": [],
        }
        opaque = self.send(RequestCode.HEART_BEAT, {}, json.dumps(heartbeat).encode())
        wait_until(lambda: self.response(opaque) is not None, "no heartbeat response")
        assert (self.response(opaque) or {}).get("code") == ResponseCode.SUCCESS

    @property
    def local_addr(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"{host}:{port}"

    def send(self, code: int, ext: dict[str, str], body: bytes = b"") -> int:
        self._opaque += 1
        header = {
            "code": code,
            "extFields": ext,
            "flag": 0,
            "language": "JAVA",
            "opaque": self._opaque,
        }
        self._write(header, body)
        return self._opaque

    def _write(self, header: dict[str, Any], body: bytes) -> None:
        raw = json.dumps({**header, "serializeTypeCurrentRPC": "JSON", "version": 409}).encode()
        with self._send_lock:
            self.sock.sendall(struct.pack(">II", 4 + len(raw) + len(body), len(raw)) + raw + body)

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while len(buf) >= 4:
                (length,) = struct.unpack(">I", buf[:4])
                if len(buf) < 4 + length:
                    break
                frame, buf = buf[4 : 4 + length], buf[4 + length :]
                (word,) = struct.unpack(">I", frame[:4])
                assert word >> 24 == 0, "broker answered a JSON request with a binary header"
                header_len = word & 0xFFFFFF
                header = json.loads(frame[4 : 4 + header_len])
                with self._lock:
                    self.received.append((header, frame[4 + header_len :]))
                self.on_frame(header, frame[4 + header_len :])

    def on_frame(self, header: dict[str, Any], body: bytes) -> None:
        """Called on the reader thread for every frame received (subclasses answer requests)."""

    def respond(self, opaque: int, code: int, body: bytes = b"") -> None:
        """Answer the broker's request ``opaque``."""
        self._write({"code": code, "flag": 1, "opaque": opaque, "language": "JAVA"}, body)

    def response(self, opaque: int) -> dict[str, Any] | None:
        with self._lock:
            for header, _ in self.received:
                if header.get("flag", 0) & 1 and header.get("opaque") == opaque:
                    return header
        return None

    def requests(self, code: int) -> list[tuple[dict[str, Any], bytes]]:
        with self._lock:
            return [(h, b) for h, b in self.received if h["code"] == code and not h["flag"] & 1]

    def close(self) -> None:
        # shutdown() first: a plain close() leaves the reader thread's recv() holding the
        # socket open, so the broker would never see the connection end.
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._reader.join(5)


def test_topic_stats_and_consume_stats(broker: Broker) -> None:
    r = broker.invoke(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "NoSuchTopic"})
    assert r.code == ResponseCode.TOPIC_NOT_EXIST
    assert r.remark and "NoSuchTopic" in r.remark and "create it" in r.remark

    broker.send("StatsTopic", 5)
    stamps = broker.store_timestamps("StatsTopic", 5)
    r = broker.invoke(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "StatsTopic"})
    assert r.code == ResponseCode.SUCCESS, r.remark
    table = fastjson(r.body)["offsetTable"]
    assert sorted(table) == [f"StatsTopic/broker-admin/{q}" for q in range(4)]
    assert table["StatsTopic/broker-admin/0"] == {
        "lastUpdateTimestamp": stamps[4],
        "maxOffset": 5,
        "minOffset": 0,
    }
    assert table["StatsTopic/broker-admin/1"] == {
        "lastUpdateTimestamp": 0,
        "maxOffset": 0,
        "minOffset": 0,
    }

    broker.commit("stats-group", "StatsTopic", 0, 3)
    r = broker.invoke(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "stats-group"})
    assert r.code == ResponseCode.SUCCESS, r.remark
    stats = fastjson(r.body)
    assert stats["consumeTps"] == 0.0
    assert stats["offsetTable"]["StatsTopic/broker-admin/0"] == {
        "brokerOffset": 5,
        "consumerOffset": 3,
        "lastTimestamp": stamps[2],
    }
    assert len(stats["offsetTable"]) == 4
    # The same for one topic; an unknown group answers an empty table and says why.
    r = broker.invoke(
        RequestCode.GET_CONSUME_STATS, {"consumerGroup": "stats-group", "topic": "StatsTopic"}
    )
    assert len(fastjson(r.body)["offsetTable"]) == 4
    r = broker.invoke(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "nobody"})
    assert r.code == ResponseCode.SUCCESS
    assert fastjson(r.body)["offsetTable"] == {}
    assert r.remark and "no consumer offsets" in r.remark
    # A header without the group names the missing field.
    r = broker.invoke(RequestCode.GET_CONSUME_STATS, {})
    assert r.code == ResponseCode.SYSTEM_ERROR and r.remark and "consumerGroup" in r.remark


def test_consumer_connections_and_reset_offset(broker: Broker) -> None:
    r = broker.invoke(RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "reset-group"})
    assert r.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert r.remark and "reset-group" in r.remark

    broker.send("ResetTopic", 6)
    stamps = broker.store_timestamps("ResetTopic", 6)
    for q in range(4):
        broker.commit("reset-group", "ResetTopic", q, 6 if q == 0 else 0)
    consumer = RawConsumer(
        broker.addr, "127.0.0.1@raw", "reset-group", ["ResetTopic", "%RETRY%reset-group"]
    )
    try:
        r = broker.invoke(
            RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "reset-group"}
        )
        assert r.code == ResponseCode.SUCCESS, r.remark
        conn = json.loads(r.body or b"")
        assert conn["connectionSet"] == [
            {
                "clientAddr": consumer.local_addr,
                "clientId": "127.0.0.1@raw",
                "language": "JAVA",
                "version": 409,
            }
        ]
        assert (conn["consumeType"], conn["messageModel"], conn["consumeFromWhere"]) == (
            "CONSUME_PASSIVELY",
            "CLUSTERING",
            "CONSUME_FROM_FIRST_OFFSET",
        )
        assert sorted(conn["subscriptionTable"]) == ["%RETRY%reset-group", "ResetTopic"]

        # Back to the 3rd message: queue 0 goes from 6 to (about) 2, the others stay at 0.
        reset = {
            "topic": "ResetTopic",
            "group": "reset-group",
            "timestamp": str(stamps[2]),
            "isForce": "false",
        }
        r = broker.invoke(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset)
        assert r.code == ResponseCode.SUCCESS, r.remark
        offsets = fastjson(r.body)["offsetTable"]
        # The first message stored at or after that time (messages can share a millisecond).
        expected_q0 = next(i for i, stamp in enumerate(stamps) if stamp >= stamps[2])
        assert offsets == {
            "ResetTopic/broker-admin/0": expected_q0,
            "ResetTopic/broker-admin/1": 0,
            "ResetTopic/broker-admin/2": 0,
            "ResetTopic/broker-admin/3": 0,
        }
        assert broker.committed("reset-group", "ResetTopic", 0) == expected_q0
        wait_until(
            lambda: bool(consumer.requests(RequestCode.RESET_CONSUMER_CLIENT_OFFSET)),
            "the consumer got no RESET_CONSUMER_CLIENT_OFFSET",
        )
        header, body = consumer.requests(RequestCode.RESET_CONSUMER_CLIENT_OFFSET)[0]
        assert header["flag"] & 2, "RESET_CONSUMER_CLIENT_OFFSET is oneway"
        assert header["extFields"] == reset
        assert fastjson(body)["offsetTable"] == offsets
    finally:
        consumer.close()

    # With the consumer gone the reset still happens (forced to the end this time).
    wait_until(
        lambda: (
            broker.invoke(
                RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "reset-group"}
            ).code
            == ResponseCode.CONSUMER_NOT_ONLINE
        ),
        "the closed consumer is still listed",
    )
    r = broker.invoke(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "ResetTopic", "group": "reset-group", "timestamp": "-1", "isForce": "true"},
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    assert fastjson(r.body)["offsetTable"]["ResetTopic/broker-admin/0"] == 6
    assert broker.committed("reset-group", "ResetTopic", 0) == 6


def test_reset_offset_of_an_unknown_topic_or_a_group_without_offsets_is_refused(
    broker: Broker,
) -> None:
    broker.send("ResetTopic", 1)
    broker.commit("reset-group", "ResetTopic", 0, 1)
    r = broker.invoke(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "NoSuchTopic", "group": "reset-group", "timestamp": "0", "isForce": "true"},
    )
    assert r.code == ResponseCode.TOPIC_NOT_EXIST and r.remark and "NoSuchTopic" in r.remark
    r = broker.invoke(
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        {"topic": "ResetTopic", "group": "never-consumed", "timestamp": "0", "isForce": "true"},
    )
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and "never-consumed" in r.remark and "no committed offset" in r.remark


def lock_body(client_id: str, queues: list[int]) -> bytes:
    mqs = [{"brokerName": "broker-admin", "queueId": q, "topic": "OrderTopic"} for q in queues]
    return json.dumps(
        {"clientId": client_id, "consumerGroup": "order-group", "mqSet": mqs}
    ).encode()


def test_lock_and_unlock_batch(broker: Broker) -> None:
    def lock(client_id: str, queues: list[int]) -> list[int]:
        r = broker.invoke(RequestCode.LOCK_BATCH_MQ, None, lock_body(client_id, queues))
        assert r.code == ResponseCode.SUCCESS, r.remark
        body = json.loads(r.body or b"")
        assert set(body) == {"lockOKMQSet"}
        return sorted(mq["queueId"] for mq in body["lockOKMQSet"])

    assert lock("client-1", [0, 1]) == [0, 1]
    assert lock("client-2", [0, 1, 2, 3]) == [2, 3]
    assert lock("client-1", [0, 1, 2]) == [0, 1], "renews its own, cannot take client-2's"
    # Unlocking someone else's queue does nothing; one's own frees it.
    r = broker.invoke(RequestCode.UNLOCK_BATCH_MQ, None, lock_body("client-1", [2, 3]))
    assert r.code == ResponseCode.SUCCESS
    assert lock("client-1", [2]) == []
    broker.invoke(RequestCode.UNLOCK_BATCH_MQ, None, lock_body("client-2", [2, 3]))
    assert lock("client-1", [2, 3]) == [2, 3]
    r = broker.invoke(RequestCode.LOCK_BATCH_MQ, None, b"{not json")
    assert r.code == ResponseCode.SYSTEM_ERROR and r.remark


def route_perms(b: Broker, topic: str) -> set[int]:
    data = route(b.client, b.namesrv, topic)
    if data is None:
        return set()
    return {int(q["perm"]) for q in data["queueDatas"]}  # type: ignore[index,union-attr]


def test_get_and_update_broker_config(broker: Broker, tmp_path: Path) -> None:
    props, version = broker.config()
    assert (props["brokerName"], props["brokerClusterName"]) == ("broker-admin", "AdminCluster")
    assert props["brokerPermission"] == "6"
    assert props["mappedFileSizeCommitLog"] == "1048576"
    assert "flushIntervalCommitLog" in props, "store keys are listed too"
    assert set(version) == {"counter", "timestamp"} and version["counter"] == 0

    broker.send("PermTopic", 1)
    wait_until(lambda: route_perms(broker, "PermTopic") == {6}, "topic never registered")

    # Read only: sends are refused at once, the nameserver hears of it, the file keeps it.
    r = broker.update("brokerPermission=4\n")
    assert r.code == ResponseCode.SUCCESS, r.remark
    props, version = broker.config()
    assert props["brokerPermission"] == "4" and version["counter"] == 1
    r = send_v2(broker.client, broker.addr, "PermTopic", b"x", "t", "k")
    assert r.code == ResponseCode.NO_PERMISSION, r.remark
    wait_until(lambda: route_perms(broker, "PermTopic") == {4}, "nameserver kept perm 6")
    text = broker.conf.read_text()
    assert "brokerPermission=4\n" in text and text.startswith("# admin test broker\n")
    assert "brokerPermission = 6" not in text

    # Refused updates change nothing and say what is wrong.
    r = broker.update("brokerName=other\n")
    assert r.code == ResponseCode.NO_PERMISSION
    assert r.remark and "brokerName cannot change while the broker runs" in r.remark
    assert all(key in r.remark for key in RUNTIME_KEYS)
    r = broker.update("brokerPermission=6\nflushDiskTyp=SYNC_FLUSH\n")
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and "unknown key 'flushDiskTyp'" in r.remark and "flushDiskType" in r.remark
    r = broker.update("brokerPermission=5\n")
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and "brokerPermission = '5' is not allowed; use 6" in r.remark
    props, version = broker.config()
    assert props["brokerPermission"] == "4" and version["counter"] == 1

    # Clamped as RocketMQ clamps, and said so.
    r = broker.update(
        "registerNameServerPeriod = 5000\ndeleteWhen = 03;15\nbrokerPermission=6\n"
        "fileReservedTime=96\n"
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    assert r.remark and "using 10000" in r.remark
    props, version = broker.config()
    assert (props["registerNameServerPeriod"], props["deleteWhen"]) == ("10000", "03;15")
    assert props["fileReservedTime"] == "96"
    assert version["counter"] == 2
    r = send_v2(broker.client, broker.addr, "PermTopic", b"y", "t", "k")
    assert r.code == ResponseCode.SUCCESS, r.remark

    r = broker.invoke(4242)
    assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert r.remark and "4242" in r.remark

    # A restart reads the updated file.
    broker.update("brokerPermission=2\n")
    assert broker.proc.stop() == 0
    broker.client.close()
    broker.proc = start_broker(tmp_path, broker.namesrv, broker.conf)
    props, version = broker.config()
    assert (props["brokerPermission"], props["deleteWhen"]) == ("2", "03;15")
    assert props["fileReservedTime"] == "96"
    assert version["counter"] == 0
    loaded = load_broker_config(broker.conf)
    assert loaded.register_name_server_period == 10_000


@dataclass
class FakeRequest:
    code: int
    body: bytes | None = None
    peer: str = "127.0.0.1:1"


def test_admin_handler_without_a_config_file() -> None:
    """In-process: updates apply and the listener sees old and new; nothing is written."""
    config = load_broker_config(None, {"brokerName": "b"}, store_defaults={"flushDiskType": "x"})
    seen: list[tuple[int, int]] = []
    handler = BrokerAdminHandler(
        config,
        config_path=None,
        store_defaults={"flushDiskType": "ASYNC_FLUSH", "mappedFileSizeCommitLog": "1024"},
        listener=lambda old, new: seen.append((old.broker_permission, new.broker_permission)),
    )
    r = handler.handle(FakeRequest(RequestCode.UPDATE_BROKER_CONFIG, b"brokerPermission=2"))
    assert r.code == ResponseCode.SUCCESS and r.remark is None
    assert seen == [(6, 2)] and handler.config.broker_permission == 2
    r = handler.handle(FakeRequest(RequestCode.GET_BROKER_CONFIG))
    props = parse_properties((r.body or b"").decode())
    assert props["brokerPermission"] == "2" and props["mappedFileSizeCommitLog"] == "1024"
    assert json.loads(r.ext_fields["version"])["counter"] == 1
    assert handler.handle(FakeRequest(RequestCode.UPDATE_BROKER_CONFIG)).code == 0
    r = handler.handle(FakeRequest(RequestCode.UPDATE_BROKER_CONFIG, b"flushDiskType=SYNC_FLUSH"))
    assert r.code == ResponseCode.NO_PERMISSION and r.remark and "flushDiskType" in r.remark
    r = handler.handle(FakeRequest(RequestCode.UPDATE_BROKER_CONFIG, b"\xff\xfe"))
    assert r.code == ResponseCode.SYSTEM_ERROR
    r = handler.handle(FakeRequest(RequestCode.PULL_MESSAGE))
    assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


@pytest.mark.timeout(600)
def test_java_client_admin_codes(broker: Broker, tmp_path: Path) -> None:
    """The official Java client (4.9.8) parses every body: an orderly consumer (queue locks),
    an orderly consumer whose message goes to the DLQ after its max reconsume times, topic and
    consume stats, consumer connections, a reset it follows (it gets
    RESET_CONSUMER_CLIENT_OFFSET and consumes again), broker config get and update
    (tests/compat/java/.../AdminCheck.java)."""
    sys.path.insert(0, str(Path(__file__).parent / "compat"))
    from run_java_compat import build_jar

    jar = build_jar()
    java = shutil.which("java")
    assert java, "java is not installed (make test installs it)"
    args = [broker.namesrv, broker.addr, "AdminJavaTopic", str(tmp_path / "java-logs")]
    proc = subprocess.run(
        [java, "-Xmx512m", "-cp", str(jar), "rmq.compat.AdminCheck", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no summary; stderr:\n{proc.stderr[-4000:]}"
    summary = json.loads(lines[-1])
    assert summary["ok"], f"{summary}\nstderr:\n{proc.stderr[-4000:]}"
    assert set(summary["checks"]) == {
        "orderly",
        "orderlyDlq",
        "stats",
        "connectionsAndReset",
        "config",
    }
