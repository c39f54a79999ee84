"""Consumers and producers through a master's outage (issue 14 item 4), with real processes on
127.0.0.1: a broker group ``broker-a`` of a master (brokerId 0) and a slave (brokerId 1, started
on a byte copy of the stopped master's store, so both hold the same messages without
replication), and a second group ``broker-b`` (a master alone).

Each test kills the master with SIGKILL at a chosen moment and starts it again afterwards:
the Python SDK's push consumer and pull consumer, and the Java 4.x client's push consumer,
carry on from the slave, commit their offsets there, and go back to the master when it
returns (they consume messages only the master has), nothing consumed twice; the Spark reader
reads a topic from the slave; a producer sends to the live group only; pulls follow the
master's slave-read suggestion.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    broker_runtime_info,
    create_topic,
    free_port,
    wait_until,
)
from rmq._rmq import RemotingClient, StoredMessage
from rmq.codes import RequestCode

# Messages in each consumer topic before the store is copied (5 per queue).
N = 10
QUEUES = 2
FAILOVER_S = 30.0


class BrokerGroup:
    """``broker-a``'s master and slave, ``broker-b``'s master, one nameserver."""

    def __init__(self, tmp: Path, namesrv: str) -> None:
        self.tmp = tmp
        self.namesrv = namesrv
        self.ports = {"a0": free_port(), "a1": free_port(), "b0": free_port()}
        self.procs: dict[str, BrokerProcess] = {}

    def addr(self, name: str) -> str:
        return f"127.0.0.1:{self.ports[name]}"

    def start(self, name: str, extra: str = "") -> None:
        broker_name = "broker-a" if name.startswith("a") else "broker-b"
        slave = name == "a1"
        conf = self.tmp / f"{name}.conf"
        conf.write_text(
            "brokerClusterName = HaCluster\n"
            f"brokerName = {broker_name}\n"
            f"brokerId = {1 if slave else 0}\n"
            f"brokerRole = {'SLAVE' if slave else 'ASYNC_MASTER'}\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {self.ports[name]}\n"
            "haListenPort = 0\n"  # ephemeral: listenPort + 1 may be taken
            f"storePathRootDir = {self.tmp / name}\n"
            "mappedFileSizeCommitLog = 4194304\n"
            "registerNameServerPeriod = 2000\n"
            f"messageDelayLevel = {' '.join(['1s'] * 18)}\n" + TEST_STORE_CONF + extra
        )
        proc = BrokerProcess("-c", str(conf), "-n", self.namesrv, cwd=self.tmp)
        proc.wait_for("listening on")
        self.procs[name] = proc

    def kill_master(self) -> None:
        """SIGKILL ``broker-a``'s master; wait until the nameserver routes only the slave."""
        self.procs.pop("a0").kill()
        wait_until(lambda: self.route_ids("broker-a") == {1}, "broker-a without its master")

    def restart_master(self, extra: str = "") -> None:
        self.start("a0", extra)
        wait_until(lambda: self.route_ids("broker-a") == {0, 1}, "broker-a's master back")

    def route_ids(self, broker_name: str) -> set[int]:
        """The broker ids the nameserver routes for ``broker_name``."""
        client = RemotingClient()
        try:
            resp = client.invoke(
                self.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPICS[0]}
            )
        finally:
            client.close()
        if resp.code != 0 or not resp.body:
            return set()
        for b in json.loads(resp.body)["brokerDatas"]:
            if b["brokerName"] == broker_name:
                return {int(i) for i in b["brokerAddrs"]}
        return set()

    def stop(self) -> None:
        for p in self.procs.values():
            p.kill()


TOPICS = ("HaPush", "HaPull", "HaSpark", "HaJava", "HaSuggest")
PRODUCER_TOPIC = "HaBoth"
RETRY_TOPIC = "HaRetry"


def send(namesrv: str, topic: str, bodies: list[str]) -> None:
    p = rmq.Producer("ha-producer", namesrv).start()
    try:
        for b in bodies:
            assert p.send(rmq.Message(topic, b)).status == "SEND_OK"
    finally:
        p.shutdown()


def committed(addr: str, group: str, topic: str) -> int:
    """The sum of ``group``'s offsets of ``topic`` committed on the broker at ``addr``."""
    client = RemotingClient()
    try:
        total = 0
        for q in range(QUEUES):
            header = {"consumerGroup": group, "topic": topic, "queueId": str(q)}
            resp = client.invoke(addr, RequestCode.QUERY_CONSUMER_OFFSET, header, None, 3000)
            if resp.code != 0:
                return -1
            total += int(resp.ext_fields["offset"])
        return total
    finally:
        client.close()


@pytest.fixture(scope="module")
def group(
    tmp_path_factory: pytest.TempPathFactory,
    module_namesrv: tuple[subprocess.Popen[str], str],
) -> Iterator[BrokerGroup]:
    g = BrokerGroup(tmp_path_factory.mktemp("ha-failover"), module_namesrv[1])
    try:
        g.start("a0")
        g.start("b0")
        create_topic(g.namesrv, [g.addr("a0")], TOPICS[0], QUEUES)
        for t in TOPICS[1:]:
            create_topic(g.namesrv, [g.addr("a0")], t, QUEUES)
        for t in (PRODUCER_TOPIC, RETRY_TOPIC):
            create_topic(g.namesrv, [g.addr("a0"), g.addr("b0")], t, QUEUES)
        for t in TOPICS:
            send(g.namesrv, t, [f"{t}-{i}" for i in range(N)])
        # The slave: a byte copy of the stopped master's store, topics and offsets included.
        assert g.procs.pop("a0").stop() == 0
        shutil.copytree(g.tmp / "a0", g.tmp / "a1")
        g.start("a0")
        g.start("a1")
        wait_until(lambda: g.route_ids("broker-a") == {0, 1}, "broker-a's master and slave")
        yield g
    finally:
        g.stop()


def test_push_consumer_carries_on_from_the_slave_and_returns(group: BrokerGroup) -> None:
    topic, cg = TOPICS[0], "ha-push"
    got: list[StoredMessage] = []
    lock = threading.Lock()
    gate = threading.Event()

    def listener(msgs: list[StoredMessage]) -> None:
        with lock:
            got.extend(msgs)
        gate.wait(60)  # held until the master is dead: the rest must come from the slave

    # One message at a time and at most two waiting per queue: little is pulled before the
    # kill.
    c = rmq.PushConsumer(
        cg,
        group.namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        consume_thread_max=1,
        pull_batch_size=1,
        pull_threshold_for_queue=1,
        rebalance_interval_ms=1000,
        persist_consumer_offset_interval=500,
    )
    c.subscribe(topic)
    c.register_message_listener_concurrently(listener)  # type: ignore[arg-type]
    c.start()
    try:
        wait_until(lambda: got, "the first message from the master")
        group.kill_master()
        t0 = time.monotonic()
        gate.set()
        wait_until(lambda: len(got) >= N, "every message, from the slave", FAILOVER_S)
        assert time.monotonic() - t0 < FAILOVER_S
        wait_until(
            lambda: committed(group.addr("a1"), cg, topic) == N, "offsets committed on the slave"
        )

        group.restart_master()
        # Messages only the master has: consumed once the consumer is back on it.
        send(group.namesrv, topic, [f"{topic}-new-{i}" for i in range(4)])
        wait_until(lambda: len(got) >= N + 4, "the new messages, from the master", FAILOVER_S)
        wait_until(
            lambda: committed(group.addr("a0"), cg, topic) == N + 4,
            "offsets committed on the master",
        )
        time.sleep(1)  # anything consumed twice would have come by now
        bodies = sorted(m.body.decode() for m in got)
        want = sorted([f"{topic}-{i}" for i in range(N)] + [f"{topic}-new-{i}" for i in range(4)])
        assert bodies == want
    finally:
        gate.set()
        c.shutdown()


def test_pull_consumer_carries_on_from_the_slave_and_returns(group: BrokerGroup) -> None:
    topic, cg = TOPICS[1], "ha-pull"
    c = rmq.PullConsumer(
        cg,
        group.namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        pull_batch_size=2,
        auto_commit=False,
        poll_timeout_ms=500,
    )
    c.subscribe(topic)
    c.start()
    got: list[str] = []

    def poll_until(n: int) -> None:
        def more() -> bool:
            got.extend(m.body.decode() for m in c.poll(200))
            return len(got) >= n

        wait_until(more, f"{n} messages", FAILOVER_S)

    try:
        poll_until(2)
        c.commit()
        before = len(got)
        assert before < N
        group.kill_master()
        poll_until(N)
        c.commit()
        assert committed(group.addr("a1"), cg, topic) == N

        group.restart_master()
        send(group.namesrv, topic, [f"{topic}-new-{i}" for i in range(4)])
        poll_until(N + 4)
        c.commit()
        assert committed(group.addr("a0"), cg, topic) == N + 4
        want = [f"{topic}-{i}" for i in range(N)] + [f"{topic}-new-{i}" for i in range(4)]
        assert sorted(got) == sorted(want)
    finally:
        c.shutdown()


def test_producer_sends_to_the_live_group_only(group: BrokerGroup) -> None:
    for fault_enable in (False, True):
        p = rmq.Producer(
            f"ha-send-{fault_enable}", group.namesrv, send_latency_fault_enable=fault_enable
        ).start()
        try:
            # Both groups take sends while broker-a has its master.
            brokers = {
                p.send(rmq.Message(PRODUCER_TOPIC, f"warm-{i}")).queue.broker_name for i in range(8)
            }
            assert brokers == {"broker-a", "broker-b"}
            group.kill_master()
            results = [p.send(rmq.Message(PRODUCER_TOPIC, f"m-{i}")) for i in range(12)]
            assert {r.status for r in results} == {"SEND_OK"}
            assert {r.queue.broker_name for r in results} == {"broker-b"}
        finally:
            p.shutdown()
            group.restart_master()


def test_spark_reader_reads_from_the_slave_and_returns(
    group: BrokerGroup,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pyspark", minversion="4.2")
    pytest.importorskip("pyarrow")
    from pyspark.sql import SparkSession

    import rmq.spark

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2,2]")
        .appName("rmq-ha-failover")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rmq.spark.register(spark)
    topic = TOPICS[2]

    def bodies() -> list[str]:
        rows = (
            spark.read.format("rmq")
            .option("namesrv", group.namesrv)
            .option("topic", topic)
            .load()
            .select("body")
            .collect()
        )
        return sorted(bytes(r.body).decode() for r in rows)

    try:
        group.kill_master()
        assert bodies() == sorted(f"{topic}-{i}" for i in range(N))
        # Back to the master once it returns: messages only it has are read too.
        group.restart_master()
        send(group.namesrv, topic, [f"{topic}-new-{i}" for i in range(2)])
        want = sorted([f"{topic}-{i}" for i in range(N)] + [f"{topic}-new-{i}" for i in range(2)])
        wait_until(lambda: bodies() == want, "the master's new messages read", FAILOVER_S)
    finally:
        spark.stop()
        if "a0" not in group.procs:
            group.restart_master()


def get_total(addr: str) -> int:
    """Messages the broker at ``addr`` has served to pulls (``msgGetTotalTodayNow``)."""
    client = RemotingClient()
    try:
        return int(broker_runtime_info(client, addr)["msgGetTotalTodayNow"])
    finally:
        client.close()


def test_consumers_follow_the_slave_read_suggestion(group: BrokerGroup) -> None:
    """A master with ``slaveReadEnable`` and every read cold (``accessMessageInMemoryMaxRatio``
    0) suggests the slave (``whichBrokerWhenConsumeSlowly`` 1), the slave (without it) the
    master: the consumer's pulls follow each suggestion, and offsets go to the master."""
    group.procs.pop("a0").stop()
    group.restart_master("slaveReadEnable = true\naccessMessageInMemoryMaxRatio = 0\n")
    topic, cg = TOPICS[4], "ha-suggest"
    slave_before = get_total(group.addr("a1"))
    c = rmq.PullConsumer(
        cg,
        group.namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        pull_batch_size=2,
        auto_commit=False,
    )
    c.subscribe(topic)
    c.start()
    got: list[str] = []
    try:

        def more() -> bool:
            got.extend(m.body.decode() for m in c.poll(200))
            return len(got) >= N

        wait_until(more, f"{N} messages")
        c.commit()
        assert sorted(got) == sorted(f"{topic}-{i}" for i in range(N))
        # Each queue holds 5: the master serves 2 and suggests the slave, the slave (without
        # slaveReadEnable) serves 2 and suggests the master, which serves the last one.
        assert get_total(group.addr("a1")) - slave_before == 2 * QUEUES
        assert get_total(group.addr("a0")) == N - 2 * QUEUES
        assert committed(group.addr("a0"), cg, topic) == N
    finally:
        c.shutdown()
        group.procs.pop("a0").stop()
        group.restart_master()


@pytest.mark.timeout(300)
def test_java_push_consumer_carries_on_from_the_slave_and_returns(
    group: BrokerGroup, tmp_path: Path
) -> None:
    """The official Java client (4.9.8; tests/compat/java/.../FailoverCheck.java): the same
    course as the Python push consumer's."""
    sys.path.insert(0, str(Path(__file__).parent / "compat"))
    from run_java_compat import build_jar, java_executable

    topic, cg = TOPICS[3], "ha-java"
    jar = build_jar()
    args = [group.namesrv, topic, cg, str(tmp_path / "java-logs")]
    with (tmp_path / "java.err").open("w") as err:
        proc = subprocess.Popen(
            [java_executable(), "-Xmx256m", "-cp", str(jar), "rmq.compat.FailoverCheck", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    assert proc.stdin is not None and proc.stdout is not None
    got: list[str] = []
    out = proc.stdout

    def read() -> None:
        for line in out:
            if line.startswith("got "):
                got.append(line[4:].rstrip("\n"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_until(lambda: got, "the first message from the master", 60)
        group.kill_master()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        wait_until(lambda: len(got) >= N, "every message, from the slave", FAILOVER_S)
        wait_until(
            lambda: committed(group.addr("a1"), cg, topic) == N, "offsets committed on the slave"
        )
        group.restart_master()
        send(group.namesrv, topic, [f"{topic}-new-{i}" for i in range(4)])
        wait_until(lambda: len(got) >= N + 4, "the new messages, from the master", 60)
        wait_until(
            lambda: committed(group.addr("a0"), cg, topic) == N + 4,
            "offsets committed on the master",
        )
        proc.stdin.write("quit\n")
        proc.stdin.flush()
        assert proc.wait(60) == 0, (tmp_path / "java.err").read_text()[-4000:]
        reader.join(10)
        want = [f"{topic}-{i}" for i in range(N)] + [f"{topic}-new-{i}" for i in range(4)]
        assert sorted(got) == sorted(want)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        reader.join(10)
        proc.stdin.close()
        out.close()


def test_a_failed_message_goes_to_the_retry_topic_of_a_live_group(group: BrokerGroup) -> None:
    """A message whose consumption fails while its master is down cannot go back to its broker
    (CONSUMER_SEND_MSG_BACK): as RocketMQ's consumers do, a copy goes to ``%RETRY%<group>``
    through the client's inner producer, stored by broker-b, and comes back from there with
    one reconsume time more while broker-a's master is still down."""
    cg = "ha-retry"
    seen: list[int] = []
    gate = threading.Event()

    def listener(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
        seen.extend(m.reconsume_times for m in msgs)
        if len(seen) == 1:
            gate.wait(60)
            return rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER
        return rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    c = rmq.PushConsumer(
        cg,
        group.namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval_ms=1000,
        poll_name_server_interval=2000,
    )
    c.subscribe(RETRY_TOPIC)
    c.register_message_listener_concurrently(listener)
    c.start()
    p = rmq.Producer("ha-retry-producer", group.namesrv).start()
    try:
        # The retry topic exists on both groups (created by the consumer's heartbeats).
        wait_until(
            lambda: (
                {q.broker_name for q in p.fetch_publish_message_queues(c.retry_topic)}
                == {"broker-a", "broker-b"}
            ),
            "the retry topic on both groups",
        )
        queue = rmq.MessageQueue(RETRY_TOPIC, "broker-a", 0)
        assert p.send(rmq.Message(RETRY_TOPIC, "retry-me"), queue=queue).status == "SEND_OK"
        wait_until(lambda: seen, "the message from broker-a's master")
        group.kill_master()
        gate.set()
        wait_until(lambda: len(seen) >= 2, "the message again, from broker-b", FAILOVER_S)
        assert seen[:2] == [0, 1]
    finally:
        gate.set()
        p.shutdown()
        c.shutdown()
        group.restart_master()
