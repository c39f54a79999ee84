"""Retry, dead letters and delay levels end to end: a real nameserver and ``rmq.broker``
processes on 127.0.0.1 with short ``messageDelayLevel`` tables, the Python SDK's producer and
push consumer, and the broker's store read back after it stopped.

* a message the listener keeps failing comes back through ``%RETRY%<group>`` with its
  reconsume count going up, its original topic and id, and after ``max_reconsume_times`` lands
  in ``%DLQ%<group>`` (write-only);
* a listener that raises counts as RECONSUME_LATER; when the broker refuses the send-back
  (read-only), the consumer retries the message itself, later, without the retry topic;
* delayed sends are delivered to the queue their producer chose, not before their level's delay;
* a broker stopped while delayed messages are being delivered, cleanly or with ``kill -9``,
  loses none of them after the restart; a clean stop repeats none;
* a bad ``messageDelayLevel`` stops start-up with a message naming the level.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import TEST_STORE_CONF, BrokerProcess, Cluster, free_port, push_consumer, wait_until
from rmq._rmq import MessageStore, RemotingClient, StoredMessage
from rmq.codes import RequestCode
from rmq.config import load_broker_config
from rmq.scheduling.delay import BATCH_UNITS, load_delay_offsets


class DelayCluster(Cluster):
    """The client tests' cluster, with a broker whose config a test extends (delay levels) and
    that can be stopped and started again on the same store."""

    def __init__(self, tmp: Path, ns_addr: str) -> None:
        super().__init__(tmp, ns_addr)
        self.conf = tmp / "broker-a.conf"
        self.root = tmp / "broker-a"
        self.port = 0

    def start_delay_broker(self, extra: str) -> str:
        self.port = free_port()
        self.conf.write_text(
            "brokerClusterName = DelayCluster\n"
            "brokerName = broker-a\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {self.port}\n"
            f"storePathRootDir = {self.root}\n"
            "mappedFileSizeCommitLog = 4194304\n" + TEST_STORE_CONF + extra
        )
        return self.restart()

    def restart(self) -> str:
        proc = BrokerProcess("-c", str(self.conf), "-n", self.namesrv, cwd=self.tmp)
        proc.wait_for("listening on")
        addr = f"127.0.0.1:{self.port}"
        self.brokers["broker-a"] = (proc, addr)
        return addr

    @property
    def proc(self) -> BrokerProcess:
        return self.brokers["broker-a"][0]

    @property
    def addr(self) -> str:
        return self.brokers["broker-a"][1]

    def max_offset(self, topic: str, queue: int) -> int:
        client = RemotingClient()
        try:
            resp = client.invoke(
                self.addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue)}
            )
        finally:
            client.close()
        return int(resp.ext_fields["offset"]) if resp.code == 0 else 0

    def open_store(self) -> MessageStore:
        """The broker's store, once the broker has stopped."""
        return MessageStore(str(self.root), load_broker_config(self.conf).store)


def read_queue(store: MessageStore, topic: str, queue: int) -> list[StoredMessage]:
    out: list[StoredMessage] = []
    while True:
        got = store.get_message(topic, queue, len(out), 256)
        if not got.messages:
            return out
        out.extend(got.messages)


@pytest.fixture
def cluster(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[DelayCluster]:
    c = DelayCluster(tmp_path, namesrv[1])
    try:
        yield c
    finally:
        c.stop()


def test_a_failing_message_is_retried_then_dead_lettered(cluster: DelayCluster) -> None:
    # Level 3 and up (the retries' levels) are 1 s here.
    cluster.start_delay_broker("messageDelayLevel = 1s 1s 1s\n")
    topic, group = "RetryT", "cg-retry"
    cluster.create_topic(topic, queues=2)
    lock = threading.Lock()
    attempts: list[StoredMessage] = []

    def listener(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
        failed = False
        with lock:
            for m in msgs:
                if m.body == b"always-fails":
                    attempts.append(m)
                    failed = True
        if failed:
            return rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER
        return rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with rmq.Producer("pg-retry", cluster.namesrv) as producer:
        sent = producer.send(rmq.Message(topic, b"always-fails", tags="TagA", keys="k-1"))
    consumer = push_consumer(cluster.namesrv, group, topic, listener, max_reconsume_times=2)
    try:
        wait_until(
            lambda: cluster.max_offset(f"%DLQ%{group}", 0) == 1,
            "the message in the dead-letter queue",
        )
        time.sleep(1.5)  # longer than a retry delay: no further attempt comes
    finally:
        consumer.shutdown()
    with lock:
        seen = [(m.reconsume_times, m.topic, m.msg_id, m.tags) for m in attempts]
    assert seen == [(n, topic, sent.msg_id, "TagA") for n in range(3)], seen
    assert cluster.proc.stop(signal.SIGTERM) == 0, cluster.proc.log

    with cluster.open_store() as store:
        dead = read_queue(store, f"%DLQ%{group}", 0)
        retried = read_queue(store, f"%RETRY%{group}", 0)
    assert len(dead) == 1 and len(retried) == 2
    d = dead[0]
    assert (d.body, d.reconsume_times, d.msg_id, d.keys) == (b"always-fails", 3, sent.msg_id, "k-1")
    assert d.properties["RETRY_TOPIC"] == topic
    assert d.properties["ORIGIN_MESSAGE_ID"] == sent.offset_msg_id
    assert "DELAY" not in d.properties
    assert [m.reconsume_times for m in retried] == [1, 2]
    topics = json.loads((cluster.root / "config" / "topics.json").read_text())["topicConfigTable"]
    assert topics[f"%DLQ%{group}"]["perm"] == 2, "write-only: consumers cannot read it"
    assert topics[f"%RETRY%{group}"]["perm"] == 6


def test_raising_listeners_retry_and_refused_send_backs_retry_locally(
    cluster: DelayCluster,
) -> None:
    cluster.start_delay_broker("messageDelayLevel = 1s 1s 1s\n")
    topic, group = "RaiseT", "cg-raise"
    cluster.create_topic(topic, queues=1)
    lock = threading.Lock()
    seen: list[tuple[bytes, int, str]] = []

    def set_permission(perm: int) -> None:
        client = RemotingClient()
        try:
            r = client.invoke(
                cluster.addr,
                RequestCode.UPDATE_BROKER_CONFIG,
                None,
                f"brokerPermission={perm}\n".encode(),
            )
            assert r.code == 0, r.remark
        finally:
            client.close()

    def listener(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
        m = msgs[0]
        with lock:
            seen.append((m.body, m.reconsume_times, m.topic))
            first = sum(b == m.body for b, _, _ in seen) == 1
        if m.body == b"raises" and first:
            raise ValueError("the listener's own bug")
        if m.body == b"local" and first:
            # The broker turns read-only: CONSUMER_SEND_MSG_BACK gets NO_PERMISSION.
            set_permission(4)
            return rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER
        return rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    with rmq.Producer("pg-raise", cluster.namesrv) as producer:
        producer.send(rmq.Message(topic, b"raises"))
    consumer = push_consumer(cluster.namesrv, group, topic, listener, reconsume_later_delay_ms=500)
    try:
        wait_until(lambda: len(seen) == 2, "the raised-on message back from the retry topic")
        with rmq.Producer("pg-raise", cluster.namesrv) as producer:
            producer.send(rmq.Message(topic, b"local"))
        wait_until(lambda: len(seen) == 4, "the local retry of the refused send-back")
        time.sleep(1.5)  # longer than a retry delay: nothing else comes
    finally:
        consumer.shutdown()
        set_permission(6)
    assert seen == [
        (b"raises", 0, topic),
        (b"raises", 1, topic),  # through %RETRY%cg-raise, original topic restored
        (b"local", 0, topic),
        (b"local", 0, topic),  # retried in the consumer: no reconsume counted by a broker
    ], seen
    assert cluster.max_offset(f"%RETRY%{group}", 0) == 1


def test_delay_levels_deliver_to_the_chosen_queue_when_due(cluster: DelayCluster) -> None:
    cluster.start_delay_broker("messageDelayLevel = 1s 2s 3s\n")
    topic = "DelayT"
    cluster.create_topic(topic, queues=2)
    received: dict[bytes, tuple[StoredMessage, float]] = {}
    lock = threading.Lock()

    def listener(msgs: list[StoredMessage]) -> None:
        now = time.time()
        with lock:
            for m in msgs:
                received[m.body] = (m, now)

    consumer = push_consumer(cluster.namesrv, "cg-delay", topic, listener)
    cases = {b"level-0": 0, b"level-1": 1, b"level-2": 2, b"level-3": 3, b"level-7": 7}
    delay_ms = {0: 0, 1: 1000, 2: 2000, 3: 3000, 7: 3000}  # 7 is above the highest: 3
    sent: dict[bytes, tuple[rmq.SendResult, int]] = {}
    try:
        with rmq.Producer("pg-delay", cluster.namesrv) as producer:
            queues = producer.fetch_publish_message_queues(topic)
            for i, (body, level) in enumerate(cases.items()):
                before = int(time.time() * 1000)
                msg = rmq.Message(topic, body, tags="TagD", keys=[f"key-{level}"])
                msg.delay_level = level
                result = producer.send(msg, queue=queues[i % 2])
                sent[body] = (result, before)
        wait_until(lambda: len(received) == len(cases), "every delayed message", timeout=20)
    finally:
        consumer.shutdown()
    for body, level in cases.items():
        result, before = sent[body]
        m, _ = received[body]
        assert m.topic == topic and m.queue_id == result.queue.queue_id, body
        assert m.msg_id == result.msg_id and m.tags == "TagD", body
        assert m.keys == f"key-{level}"
        assert "DELAY" not in m.properties
        if level:
            assert m.properties["REAL_TOPIC"] == topic
            assert m.properties["REAL_QID"] == str(result.queue.queue_id)
            # Stored into the real queue no earlier than its level's delay after the send.
            assert m.store_timestamp >= before + delay_ms[level], (body, m.store_timestamp - before)
            assert m.store_timestamp < before + delay_ms[level] + 5000
        else:
            assert m.store_timestamp < before + 1000
    # The delayed sends waited in SCHEDULE_TOPIC_XXXX, one queue per level.
    assert [cluster.max_offset("SCHEDULE_TOPIC_XXXX", q) for q in range(3)] == [1, 1, 2]


@pytest.mark.parametrize("stop", ["SIGTERM", "kill -9"])
def test_a_restart_during_delivery_loses_nothing(cluster: DelayCluster, stop: str) -> None:
    cluster.start_delay_broker("messageDelayLevel = 2s 5s\n")
    topic, n = "RestartT", 400
    cluster.create_topic(topic, queues=2)

    def delivered() -> int:
        return cluster.max_offset(topic, 0) + cluster.max_offset(topic, 1)

    with rmq.Producer("pg-restart", cluster.namesrv) as producer:
        for i in range(n):
            producer.send(rmq.Message(topic, b"d-%04d" % i, delay_level=1))
            if i % 20 == 19:
                time.sleep(0.1)  # the sends span ~2 s, so deliveries do too
    wait_until(lambda: delivered() >= 40, "deliveries to begin", timeout=20)
    if stop == "SIGTERM":
        assert cluster.proc.stop(signal.SIGTERM) == 0, cluster.proc.log
    else:
        cluster.proc.proc.kill()
        cluster.proc.finish()
    cluster.restart()
    waiting = cluster.proc.wait_for("messages waiting per level")
    assert "none" not in waiting, f"the broker was stopped after delivering everything: {waiting}"
    wait_until(lambda: delivered() >= n, f"all {n} delivered (have {delivered()})", timeout=30)
    time.sleep(0.3)
    assert cluster.proc.stop(signal.SIGTERM) == 0, cluster.proc.log

    with cluster.open_store() as store:
        bodies = [m.body for q in (0, 1) for m in read_queue(store, topic, q)]
    counts = collections.Counter(bodies)
    assert set(counts) == {b"d-%04d" % i for i in range(n)}, "a delayed message was lost"
    repeated = sum(c - 1 for c in counts.values())
    if stop == "SIGTERM":
        assert repeated == 0, f"{repeated} deliveries repeated after a clean stop"
    else:
        # At most the batch whose re-put finished just before the kill, before its offset was
        # written (see rmq.scheduling.delay); usually none.
        assert repeated <= BATCH_UNITS, repeated
    offsets = load_delay_offsets(cluster.root / "config" / "delayOffset.json")
    assert offsets[1] == n and offsets[2] == 0


def test_a_bad_delay_level_stops_start_up_naming_it(cluster: DelayCluster) -> None:
    cluster.conf.write_text(
        f"listenPort = {free_port()}\nstorePathRootDir = {cluster.root}\n"
        "messageDelayLevel = 1s 5x 10s\n"
    )
    proc = BrokerProcess("-c", str(cluster.conf), "-n", cluster.namesrv, cwd=cluster.tmp)
    assert proc.finish() != 0
    assert (
        "messageDelayLevel = '1s 5x 10s' is not allowed (level 2 ('5x') needs a unit s, m, h "
        "or d after the number" in proc.log
    ), proc.log
    assert not cluster.root.exists(), "nothing is created before the config is valid"
