"""Live TPS where RocketMQ's tools look for it, under a running load: a real nameserver and
broker, a producer sending from a background thread for the whole module, and a push consumer
of one of two groups. ``rmq clusterList`` / ``statsAll`` and Apache's mqadmin 4.9.7
``clusterList`` / ``statsAll`` must show non-zero in/out TPS of the right order of magnitude
(GET_BROKER_RUNTIME_INFO's ``putTps``/``getTransferedTps``, VIEW_BROKER_STATS_DATA's
``TOPIC_PUT_NUMS``/``GROUP_GET_NUMS``), and the other statistics (sizes, broker-wide counts,
send-backs, ``consumeTps``) must count what happened. Nothing here is timed: rates are checked
against the producer's own measured rate within a loose factor."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import rmq
from helpers import TEST_STORE_CONF, BrokerProcess, free_port, wait_until
from rmq import fastjson
from rmq._rmq import RemotingClient, StoredMessage
from rmq.admin import main
from rmq.codes import RequestCode, ResponseCode
from test_mqadmin import MQAdmin, rows, start_namesrv

pytestmark = pytest.mark.timeout(300)

CLUSTER = "TpsCluster"
BROKER = "broker-tps"
TOPIC = "TpsTopic"
GROUP = "TpsGroup"
IDLE_GROUP = "TpsIdleGroup"
RETRYING = "TpsRetryGroup"
BATCH = 20


class Load:
    """Batches of ``BATCH`` messages to ``TOPIC`` as fast as one thread sends them."""

    def __init__(self, producer: rmq.Producer) -> None:
        self.producer = producer
        self.sent = 0
        self.started = time.monotonic()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        body = b"x" * 100
        try:
            while not self.stop.is_set():
                self.producer.send_batch([rmq.Message(TOPIC, body) for _ in range(BATCH)])
                self.sent += BATCH
        except BaseException as exc:  # reported by rate(), in the test thread
            self.error = exc

    def rate(self) -> float:
        """Messages per second since the load started."""
        assert self.error is None, self.error
        return self.sent / (time.monotonic() - self.started)


@dataclass
class Env:
    namesrv: str
    broker_addr: str
    load: Load
    got: list[StoredMessage]
    work: Path


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    work = tmp_path_factory.mktemp("tps")
    ns_proc, ns = start_namesrv()
    port = free_port()
    conf = work / "broker.conf"
    conf.write_text(
        f"brokerClusterName = {CLUSTER}\nbrokerName = {BROKER}\nbrokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\nstorePathRootDir = {work / 'store'}\n"
        "mappedFileSizeCommitLog = 16777216\nautoCreateTopicEnable = true\n"
        "messageDelayLevel = " + " ".join(["1s"] * 18) + "\n" + TEST_STORE_CONF
    )
    broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=work)
    producer = load = None
    consumers: list[rmq.PushConsumer] = []
    try:
        broker.wait_for("listening on")
        producer = rmq.Producer("TpsProducers", ns).start()
        producer.send(rmq.Message(TOPIC, b"first"))  # creates the topic
        load = Load(producer)
        got: list[StoredMessage] = []
        lock = threading.Lock()

        def listener(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
            with lock:
                got.extend(msgs)
            return rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        def retry_all(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
            return rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER

        for group, fn, topic in ((GROUP, listener, TOPIC), (RETRYING, retry_all, "TpsRetry")):
            c = rmq.PushConsumer(
                group,
                ns,
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                rebalance_interval_ms=1000,
                persist_consumer_offset_interval=300,
            )
            c.subscribe(topic, "*")
            c.register_message_listener_concurrently(fn)  # type: ignore[arg-type]
            c.start()
            consumers.append(c)
        producer.send(rmq.Message("TpsRetry", b"always retried"))
        wait_until(lambda: len(got) >= 2000 and load.sent >= 2000, "2000 messages through")
        yield Env(ns, f"127.0.0.1:{port}", load, got, work)
    finally:
        if load is not None:
            load.stop.set()
            load.thread.join(30)
        for c in consumers:
            c.shutdown()
        if producer is not None:
            producer.shutdown()
        broker.proc.kill()
        broker.finish()
        ns_proc.kill()
        ns_proc.wait(10)
        assert ns_proc.stderr is not None
        ns_proc.stderr.close()


def rmq_json(capsys: pytest.CaptureFixture[str], env: Env, *argv: str) -> Any:
    capsys.readouterr()
    code = main(["-n", env.namesrv, "--json", *argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def near(measured: float, rate: float) -> bool:
    """Non-zero and of the producer's order of magnitude (a loose factor, not a timing)."""
    return rate / 10 < measured < rate * 10


def test_rmq_cluster_list_shows_live_in_and_out_tps(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    (row,) = rmq_json(capsys, env, "clusterList")["brokers"]
    rate = env.load.rate()
    assert near(row["inTps"], rate), (row, rate)
    assert row["outTps"] > 0, row
    # brokerStatus: RocketMQ's keys, the TPS ones as "10 s, 60 s, 600 s" rates.
    kv = rmq_json(capsys, env, "brokerStatus", "-b", env.broker_addr)
    for key in ("putTps", "getTransferedTps", "getFoundTps", "getTotalTps"):
        figures = [float(x) for x in kv[key].split()]
        assert len(figures) == 3 and all(f > 0 for f in figures), (key, kv[key])
    assert int(kv["msgPutTotalTodayNow"]) >= 2000 and int(kv["msgGetTotalTodayNow"]) >= 2000
    assert int(kv["putMessageTimesTotal"]) >= 2000 and int(kv["putMessageSizeTotal"]) > 0
    assert kv["putMessageDistributeTime"].startswith("[<=0ms]:"), kv


def test_rmq_stats_all_shows_topic_and_group_tps(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    stats = rmq_json(capsys, env, "statsAll", "-t", TOPIC)["stats"]
    by_group = {r["consumerGroup"]: r for r in stats}
    assert set(by_group) == {GROUP}, stats
    row = by_group[GROUP]
    assert near(row["inTps"], env.load.rate()), row
    assert row["outTps"] > 0 and row["outMsg24Hour"] >= 2000, row
    assert row["inMsg24Hour"] >= 2000 and row["accumulation"] >= 0, row
    # Every topic: the retry group's topic too; -a keeps only topics with traffic.
    everything = rmq_json(capsys, env, "statsAll", "-a")["stats"]
    assert {(r["topic"], r["consumerGroup"]) for r in everything} >= {
        (TOPIC, GROUP),
        ("TpsRetry", RETRYING),
    }
    assert not any(r["topic"].startswith("%RETRY%") for r in everything)


def view(env: Env, name: str, key: str) -> Any:
    r = RemotingClient().invoke(
        env.broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": name, "statsKey": key}
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    return json.loads(r.body or b"")


def test_view_broker_stats_data_serves_rocketmq_statistics(env: Env) -> None:
    puts = view(env, "TOPIC_PUT_NUMS", TOPIC)["statsMinute"]
    # avgpt: messages per send; the load sends batches of BATCH (and one single message).
    assert puts["sum"] >= 2000 and BATCH / 2 < puts["avgpt"] <= BATCH, puts
    size = view(env, "TOPIC_PUT_SIZE", TOPIC)["statsDay"]
    assert size["sum"] >= puts["sum"] * 100, (size, puts)  # each record holds a 100-byte body
    assert view(env, "BROKER_PUT_NUMS", CLUSTER)["statsDay"]["sum"] >= puts["sum"]
    gets = view(env, "GROUP_GET_NUMS", f"{TOPIC}@{GROUP}")["statsDay"]
    assert gets["sum"] >= 2000 and gets["tps"] > 0, gets
    assert view(env, "GROUP_GET_SIZE", f"{TOPIC}@{GROUP}")["statsDay"]["sum"] >= gets["sum"] * 100
    assert view(env, "BROKER_GET_NUMS", CLUSTER)["statsDay"]["sum"] >= gets["sum"]
    wait_until(
        lambda: view_sum(env, "SNDBCK_PUT_NUMS", f"TpsRetry@{RETRYING}") >= 2,
        "the retrying group's send-backs to be counted",
    )
    # A group that never pulled the topic has no item: RocketMQ's error, naming what is kept.
    r = RemotingClient().invoke(
        env.broker_addr,
        RequestCode.VIEW_BROKER_STATS_DATA,
        {"statsName": "GROUP_GET_NUMS", "statsKey": f"{TOPIC}@{IDLE_GROUP}"},
    )
    assert r.code == ResponseCode.SYSTEM_ERROR
    assert r.remark and r.remark.startswith(f"The stats <GROUP_GET_NUMS> <{TOPIC}@{IDLE_GROUP}>")
    r = RemotingClient().invoke(
        env.broker_addr,
        RequestCode.VIEW_BROKER_STATS_DATA,
        {"statsName": "NO_SUCH_STATS", "statsKey": TOPIC},
    )
    assert r.code == ResponseCode.SYSTEM_ERROR and r.remark and "TOPIC_PUT_SIZE" in r.remark


def view_sum(env: Env, name: str, key: str) -> int:
    r = RemotingClient().invoke(
        env.broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": name, "statsKey": key}
    )
    return int(json.loads(r.body or b"")["statsDay"]["sum"]) if r.code == 0 else 0


def test_consume_stats_carry_consume_tps(env: Env) -> None:
    client = RemotingClient()
    r = client.invoke(
        env.broker_addr, RequestCode.GET_CONSUME_STATS, {"consumerGroup": GROUP, "topic": TOPIC}
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    assert fastjson.loads(r.body or b"")["consumeTps"] > 0
    r = client.invoke(env.broker_addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"})
    assert r.code == ResponseCode.SUCCESS, r.remark
    body = fastjson.loads(r.body or b"")
    mine = [s for g in body["consumeStatsList"] for s in g.get(GROUP, [])]
    assert any(s["consumeTps"] > 0 for s in mine), body  # (its retry topic has none)


def test_apache_mqadmin_shows_live_tps(env: Env) -> None:
    with MQAdmin(env.work / "mqadmin", env.namesrv) as admin:
        out = admin.run("clusterList").output
        (row,) = rows(out, CLUSTER)
        # #Cluster #Broker #BID #Addr #Version #InTPS(LOAD) #OutTPS(LOAD) ...
        in_tps, out_tps = (float(v.split("(")[0]) for v in row[5:7])
        assert near(in_tps, env.load.rate()), out
        assert out_tps > 0, out
        out = admin.run("statsAll", "-t", TOPIC).output
        (stat,) = [r for r in rows(out, TOPIC) if r[1] == GROUP]
        # #Topic #Consumer Group #Accumulation #InTPS #OutTPS #InMsg24Hour #OutMsg24Hour
        assert near(float(stat[3]), env.load.rate()), out
        assert float(stat[4]) > 0 and int(stat[6]) >= 2000, out
