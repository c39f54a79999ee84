"""The web console's JSON API (``python -m rmq.console`` and ``python -m rmq.broker
--console-port``) against a real nameserver and broker, without a browser: each page's data
is the admin tool's figures (compared with ``rmq ... --json``), searches find a message just
sent, the reset-offset POST moves a group's offsets, and failures are JSON errors that say
what happened, never a traceback. tests/test_ops_console_browser.py drives the pages."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import rmq
from helpers import TEST_STORE_CONF, BrokerProcess, create_topic, free_port, wait_until
from rmq.admin import main as rmq_main
from test_mqadmin import start_namesrv

pytestmark = pytest.mark.timeout(180)

TOPIC = "ConsoleTopic"
GROUP = "ConsoleGroup"
PRODUCER_GROUP = "ConsoleProducers"
KEY = "order-4711"
HOSTILE = '<img src=x onerror="document.title=1">&amp;'
"""A body and key with markup: the page must show them as text."""
DASH_KEY = "-k=1"
"""A key that looks like an option: it must reach queryMsgByKey as the key."""


class ConsoleProcess:
    """``python -m rmq.console`` on a free port; :attr:`url` once it listens."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rmq.console", "--port", "0", *args],
            env={**os.environ, "PYTHONFAULTHANDLER": "1"},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        self.lines: list[str] = []
        for line in self.proc.stderr:
            self.lines.append(line)
            m = re.search(r"web console on (http://\S+/)", line)
            if m:
                self.url = m.group(1)
                break
        else:
            raise AssertionError("the console did not start:\n" + "".join(self.lines))
        # Keep draining stderr so the console never blocks on a full pipe.
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)

    def stop(self) -> int:
        self.proc.terminate()
        try:
            code = self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
            self.proc.wait(10)
            self._drainer.join(10)
            raise AssertionError("the console ignored SIGTERM:\n" + "".join(self.lines)) from None
        self._drainer.join(15)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        return code


def console_url_of(broker: BrokerProcess) -> str:
    """The URL the broker's ``--console-port`` console logged (before "listening on")."""
    for line in broker.lines:
        m = re.search(r"web console on (http://\S+/)", line)
        if m:
            return m.group(1)
    raise AssertionError("the broker logged no console URL:\n" + broker.log)


@dataclass
class Env:
    namesrv: str
    broker_addr: str
    broker: BrokerProcess
    console: ConsoleProcess
    producer: rmq.Producer
    sent: list[rmq.SendResult]
    work: Path

    @property
    def url(self) -> str:
        return self.console.url


def start_broker(work: Path, ns: str, name: str, *extra: str) -> tuple[BrokerProcess, str]:
    port = free_port()
    conf = work / f"{name}.conf"
    conf.write_text(
        f"brokerClusterName = ConsoleCluster\nbrokerName = {name}\nbrokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\nstorePathRootDir = {work / name}\n"
        "mappedFileSizeCommitLog = 16777216\nregisterNameServerPeriod = 2000\n"
        "traceTopicEnable = true\n" + TEST_STORE_CONF
    )
    broker = BrokerProcess("-c", str(conf), "-n", ns, *extra, cwd=work)
    broker.wait_for("listening on")
    return broker, f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    work = tmp_path_factory.mktemp("console")
    ns_proc, ns = start_namesrv()
    broker = console = producer = None
    try:
        broker, addr = start_broker(work, ns, "broker-console", "--console-port", "0")
        create_topic(ns, [addr], TOPIC, 4)
        console = ConsoleProcess("-n", ns)
        producer = rmq.Producer(PRODUCER_GROUP, ns, heartbeat_broker_interval=500).start()
        sent = [
            producer.send(rmq.Message(TOPIC, f"plain {i}".encode(), keys=f"k{i}")) for i in range(6)
        ]
        sent.append(producer.send(rmq.Message(TOPIC, b"dash", keys=DASH_KEY)))
        sent.append(producer.send(rmq.Message(TOPIC, HOSTILE.encode(), tags="TagA", keys=KEY)))
        yield Env(ns, addr, broker, console, producer, sent, work)
    finally:
        if producer is not None:
            producer.shutdown()
        if console is not None:
            console.stop()
        # SIGTERM: the broker stops its console too and still exits cleanly.
        code = broker.stop() if broker is not None else 0
        ns_proc.kill()
        ns_proc.wait(10)
        assert ns_proc.stderr is not None
        ns_proc.stderr.close()
        assert code == 0, broker.log if broker is not None else ""


def get(url: str, path: str, **params: str) -> tuple[int, Any]:
    query = "?" + urllib.parse.urlencode(params) if params else ""
    try:
        with urllib.request.urlopen(url.rstrip("/") + path + query, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        body = exc.read()
        assert exc.headers["Content-Type"].startswith("application/json"), body
        return exc.code, json.loads(body)


def post(url: str, path: str, body: Any, ctype: str = "application/json") -> tuple[int, Any]:
    req = urllib.request.Request(
        url.rstrip("/") + path,
        data=json.dumps(body).encode(),
        headers={"Content-Type": ctype},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def ok(url: str, path: str, **params: str) -> Any:
    status, data = get(url, path, **params)
    assert status == 200, data
    return data


def rmq_json(capsys: pytest.CaptureFixture[str], ns: str, *argv: str) -> Any:
    capsys.readouterr()
    code = rmq_main(["-n", ns, "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_cluster_lists_the_broker_as_clusterList_does(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    data = ok(env.url, "/api/cluster")
    (row,) = data["brokers"]
    assert row["addr"] == env.broker_addr and row["brokerName"] == "broker-console"
    assert row["brokerId"] == 0 and row["reachable"] and row["version"], row
    assert data["namesrv"] == [env.namesrv]
    (cli,) = rmq_json(capsys, env.namesrv, "clusterList")["brokers"]
    assert {k: v for k, v in row.items() if "Tps" not in k and k != "hours"} == {
        k: v for k, v in cli.items() if "Tps" not in k and k != "hours"
    }
    runtime = ok(env.url, "/api/broker", addr=env.broker_addr)
    assert runtime["brokerVersionDesc"] == row["version"] and "putTps" in runtime


def test_the_broker_serves_the_same_console(env: Env) -> None:
    url = console_url_of(env.broker)
    (row,) = ok(url, "/api/cluster")["brokers"]
    assert row["addr"] == env.broker_addr
    with urllib.request.urlopen(url, timeout=10) as resp:
        page = resp.read().decode()
        assert "rmq console" in page and resp.headers["Content-Security-Policy"]


def test_topic_pages_show_queues_offsets_route_and_tps(env: Env) -> None:
    topics = ok(env.url, "/api/topics")["topics"]
    assert TOPIC in {t["topic"] for t in topics}
    d = ok(env.url, "/api/topic", topic=TOPIC)
    queues = d["status"]["queues"]
    assert len(queues) == 4
    assert sum(q["maxOffset"] - q["minOffset"] for q in queues) == len(env.sent)
    assert [b["brokerName"] for b in d["route"]["brokerDatas"]] == ["broker-console"]
    assert d["route"]["queueDatas"][0]["readQueueNums"] == 4
    assert (
        d["stats"]
        and d["stats"][0]["topic"] == TOPIC
        and d["stats"][0]["inMsg24Hour"] >= len(env.sent)
    )


def test_search_by_key_id_and_time_finds_the_message(env: Env) -> None:
    target = env.sent[-1]
    (m,) = ok(env.url, "/api/messages/by-key", topic=TOPIC, key=KEY)["messages"]
    assert m["body"] == HOSTILE and m["keys"] == KEY and m["msgId"] == target.msg_id
    # Message ID (unique key) with its topic, and offset id alone.
    by_unique = ok(env.url, "/api/messages/by-id", id=target.msg_id, topic=TOPIC)
    assert by_unique["idKind"] == "unique key"
    assert [x["offsetMsgId"] for x in by_unique["messages"]] == [target.offset_msg_id]
    by_offset = ok(env.url, "/api/messages/by-id", id=target.offset_msg_id)
    assert by_offset["idKind"] == "offset id" and by_offset["messages"][0]["body"] == HOSTILE
    # A unique key without its topic is not sent to whatever address it may decode to.
    status, err = get(env.url, "/api/messages/by-id", id=target.msg_id)
    assert status in (400, 404) and "its topic" in err["error"], err
    # Another topic's Message ID: not found there, and no offset id either.
    status, err = get(env.url, "/api/messages/by-id", id=target.msg_id, topic="TBW102")
    assert status == 404 and "no message of topic 'TBW102'" in err["error"], err
    # Topic + time range: every message since a minute ago, oldest first.
    since = str(int(time.time() * 1000) - 60_000)
    found = ok(env.url, "/api/messages/by-time", topic=TOPIC, begin=since)
    assert {x["msgId"] for x in found["messages"]} == {s.msg_id for s in env.sent}
    assert not found["truncated"]
    (dash,) = ok(env.url, "/api/messages/by-key", topic=TOPIC, key=DASH_KEY)["messages"]
    assert dash["body"] == "dash"
    status, err = get(env.url, "/api/messages/by-key", topic=TOPIC, key="no-such-key")
    assert status == 404 and "no-such-key" in err["error"]


def test_a_time_range_search_is_capped(env: Env) -> None:
    from rmq.console.api import MAX_TIME_RANGE_MESSAGES

    bulk = "ConsoleBulkTopic"
    create_topic(env.namesrv, [env.broker_addr], bulk, 2)
    since = str(int(time.time() * 1000) - 60_000)
    n = MAX_TIME_RANGE_MESSAGES + 10
    env.producer.send_batch([rmq.Message(bulk, f"m{i}".encode()) for i in range(n)])
    # The queues are built by the broker's dispatcher just after the send is answered.
    wait_until(
        lambda: ok(env.url, "/api/messages/by-time", topic=bulk, begin=since)["truncated"],
        "the batch to be searchable",
    )
    found = ok(env.url, "/api/messages/by-time", topic=bulk, begin=since)
    assert found["truncated"] and len(found["messages"]) == MAX_TIME_RANGE_MESSAGES
    assert len({m["msgId"] for m in found["messages"]}) == MAX_TIME_RANGE_MESSAGES


def test_an_untraced_message_has_no_trace(env: Env) -> None:
    data = ok(env.url, "/api/trace", id=env.sent[-1].msg_id)
    assert data["available"] is True and data["records"] == [], data


def test_producer_connection(env: Env) -> None:
    def listed() -> Any:
        status, data = get(env.url, "/api/producers", group=PRODUCER_GROUP, topic=TOPIC)
        return status == 200 and data["connectionSet"]

    wait_until(listed, "the producer's heartbeat")
    (conn,) = listed()
    assert conn["clientAddr"].startswith("127.0.0.1:") and conn["language"]
    assert conn["versionDesc"].startswith("V"), conn
    # Every producer group of every master (GET_ALL_PRODUCER_INFO), without naming a topic.
    rows = ok(env.url, "/api/producers/all")["producers"]
    mine = [r for r in rows if r["group"] == PRODUCER_GROUP]
    assert [(r["brokerName"], r["clientId"]) for r in mine] == [
        ("broker-console", conn["clientId"])
    ], rows
    status, err = get(env.url, "/api/producers", group="NoSuchProducers", topic=TOPIC)
    assert status == 400 and "NoSuchProducers" in err["error"]


def test_group_lag_and_reset_offset_by_time(env: Env) -> None:
    got: list[Any] = []
    consumer = rmq.PushConsumer(
        GROUP,
        env.namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval_ms=1000,
        persist_consumer_offset_interval=300,
    )
    consumer.subscribe(TOPIC, "*")
    consumer.register_message_listener_concurrently(  # type: ignore[arg-type]
        lambda msgs: got.extend(msgs) or rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS
    )
    consumer.start()
    try:

        def lag() -> int | None:
            d = ok(env.url, "/api/group", group=GROUP)
            return d["progress"]["diffTotal"] if d["progress"] else None

        wait_until(lambda: lag() == 0, "the group's lag to reach 0")
        d = ok(env.url, "/api/group", group=GROUP)
        assert len(d["connection"]["connectionSet"]) == 1
        assert {q["queueId"] for q in d["progress"]["queues"]} == {0, 1, 2, 3}
        groups = {g["group"]: g for g in ok(env.url, "/api/groups")["groups"]}
        assert groups[GROUP]["count"] == 1
    finally:
        consumer.shutdown()
    # Offline now: reset to the beginning, every message is lag again.
    status, reset = post(
        env.url, "/api/group/reset-offset", {"group": GROUP, "topic": TOPIC, "timestamp": "0"}
    )
    assert status == 200, reset
    assert reset["group"] == GROUP and len(reset["queues"]) == 4
    d = ok(env.url, "/api/group", group=GROUP)
    assert d["progress"]["diffTotal"] == len(env.sent)
    assert d["connection"] is None and "CONSUMER_NOT_ONLINE" in d["connectionError"]


def test_bad_requests_get_json_errors(env: Env) -> None:
    assert get(env.url, "/api/nope")[0] == 404
    status, err = get(env.url, "/api/topic")
    assert status == 400 and "'topic' is required" in err["error"]
    status, err = get(env.url, "/api/topic", topic="NoSuchTopicHere")
    assert status == 404 and "NoSuchTopicHere" in err["error"]
    status, err = get(env.url, "/api/messages/by-time", topic=TOPIC, begin="yesterday")
    assert status == 400 and "yesterday" in err["error"]
    status, err = post(env.url, "/api/group/reset-offset", {"group": GROUP}, ctype="text/plain")
    assert status == 415  # what a page of another origin could send without a preflight
    status, err = post(env.url, "/api/group/reset-offset", {"group": GROUP})
    assert status == 400 and "'topic' is required" in err["error"]
    status, err = post(
        env.url, "/api/group/reset-offset", {"group": GROUP, "topic": TOPIC, "timestamp": "x"}
    )
    assert status == 400 and "rmq resetOffsetByTime" in err["error"], err
    assert get(env.url, "/api/group/reset-offset")[0] == 405
    for path in ("/static/../server.py", "/static/", "/static/.hidden", "/etc/passwd"):
        try:
            urllib.request.urlopen(env.url.rstrip("/") + path, timeout=10)
        except urllib.error.HTTPError as exc:
            assert exc.code == 404, path
        else:
            raise AssertionError(f"{path} was served")


def test_requests_for_another_host_name_are_refused(env: Env) -> None:
    """DNS rebinding: a page of evil.example resolved to 127.0.0.1 gets nothing."""
    port = urllib.parse.urlsplit(env.url).port
    for host, status in ((f"evil.example:{port}", 403), (f"localhost:{port}", 200)):
        req = urllib.request.Request(env.url + "api/cluster", headers={"Host": host})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                assert resp.status == status, host
        except urllib.error.HTTPError as exc:
            assert exc.code == status, host
            assert "evil.example" in json.loads(exc.read())["error"]


def test_a_dead_nameserver_is_a_readable_error(env: Env) -> None:
    console = ConsoleProcess("-n", f"127.0.0.1:{free_port()}")
    try:
        status, err = get(console.url, "/api/cluster")
        assert status == 502 and "cannot reach nameserver" in err["error"], err
        assert "Traceback" not in "".join(console.lines)
    finally:
        assert console.stop() == 0


def test_a_port_in_use_is_a_readable_error() -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, "-m", "rmq.console", "-n", "127.0.0.1:9876", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert proc.returncode == 1, proc.stderr
    assert f"the console cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_command_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rmq.console", "-n", "not-an-address"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "not an address like" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_traced_message_shows_its_trace(env: Env) -> None:
    """A message sent with tracing on: the trace API hands over its Pub record (rmq.trace's
    dataclasses as JSON objects, beans included)."""
    with rmq.Producer("ConsoleTracedProducer", env.namesrv, enable_msg_trace=True) as traced:
        r = traced.send(rmq.Message(TOPIC, b"traced", keys="traced-key"))

    def pub() -> Any:
        records = ok(env.url, "/api/trace", id=r.msg_id)["records"]
        return [x for x in records if x["trace_type"] in ("Pub", "PUB")]

    wait_until(pub, "the Pub record in the trace topic")
    (record,) = pub()
    assert record["group_name"] == "ConsoleTracedProducer"
    (bean,) = record["trace_beans"]
    assert bean["msg_id"] == r.msg_id and bean["topic"] == TOPIC and bean["keys"] == "traced-key"


def test_the_page_loads_nothing_from_elsewhere() -> None:
    """Offline: the static files (package data of rmq.console) name no other host; the SVG
    namespace is an identifier, never fetched."""
    from importlib import resources

    static = resources.files("rmq.console").joinpath("static")
    names = sorted(p.name for p in static.iterdir())
    assert names == ["chart.js", "console.css", "console.js", "index.html"]
    for name in names:
        text = static.joinpath(name).read_text(encoding="utf-8")
        urls = set(re.findall(r"\w+://[^\s\"'`)]+", text)) - {"http://www.w3.org/2000/svg"}
        assert not urls, (name, urls)
    index = static.joinpath("index.html").read_text(encoding="utf-8")
    assert re.findall(r'(?:src|href)="(/[^"]*)"', index) == [
        "/static/console.css",
        "/static/chart.js",
        "/static/console.js",
    ]


def test_an_unresponsive_broker_is_a_readable_error(env: Env) -> None:
    """A broker that stops answering (SIGSTOP: its connections stay open, so the nameserver
    keeps it registered): the cluster page marks it and says why; its topic is a 502."""

    stuck, stuck_addr = start_broker(env.work, env.namesrv, "broker-stuck")
    console = None
    try:
        create_topic(env.namesrv, [stuck_addr], "ConsoleStuckTopic", 1)
        console = ConsoleProcess("-n", env.namesrv, "--timeout", "500")
        stuck.proc.send_signal(signal.SIGSTOP)
        data = ok(console.url, "/api/cluster")
        rows = {r["addr"]: r for r in data["brokers"]}
        assert rows[env.broker_addr]["reachable"] and not rows[stuck_addr]["reachable"]
        assert any(f"no answer from broker {stuck_addr}" in w for w in data["warnings"]), data
        status, err = get(console.url, "/api/topic", topic="ConsoleStuckTopic")
        assert status == 502 and f"no answer from broker {stuck_addr}" in err["error"], err
    finally:
        stuck.proc.send_signal(signal.SIGCONT)
        stuck.kill()
        if console is not None:
            console.stop()
