"""Transactional messages end to end against real ``rmq.namesrv`` and ``rmq.broker`` processes:
a committed message is delivered only after its commit, a rolled-back one never; a half message
whose transaction is unknown is checked by the broker and committed by the answer; when the
producer that sent it died, another producer of its group is asked; a broker restarted in the
middle of a check continues its checks (counts and progress kept) and delivers once; a half
message nobody answers for is discarded after ``transactionCheckMax`` checks."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    Cluster,
    Collector,
    free_port,
    push_consumer,
    wait_until,
)
from rmq import LocalTransactionState, StoredMessage
from rmq.errors import ConfigError, MessageIllegalError

COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW

FAST_CHECKS = "transactionCheckInterval = 1000\ntransactionTimeOut = 1000\n"
"""Check every second for halves older than a second (RocketMQ: 60 s and 6 s)."""


class TxCluster(Cluster):
    """A nameserver and one broker whose transaction checks run every second."""

    def __init__(self, tmp: Path, ns_addr: str, extra: str) -> None:
        super().__init__(tmp, ns_addr)
        self.port = free_port()
        self.conf = tmp / "tx.conf"
        self.conf.write_text(
            "brokerClusterName = TxCluster\n"
            "brokerName = broker-a\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {self.port}\n"
            f"storePathRootDir = {tmp / 'broker-a'}\n"
            "mappedFileSizeCommitLog = 4194304\n"
            "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF + extra
        )
        self.start()

    @property
    def broker(self) -> BrokerProcess:
        return self.brokers["broker-a"][0]

    def start(self) -> None:
        proc = BrokerProcess("-c", str(self.conf), "-n", self.namesrv, cwd=self.tmp)
        proc.wait_for("listening on")
        self.brokers["broker-a"] = (proc, f"127.0.0.1:{self.port}")

    def restart(self) -> None:
        """SIGTERM, then start again on the same port and store."""
        assert self.broker.stop() == 0
        self.start()


def _cluster(tmp: Path, namesrv: tuple[subprocess.Popen[str], str], extra: str) -> TxCluster:
    c = TxCluster(tmp, namesrv[1], extra)
    c.create_topic("TxTopic", queues=2)
    return c


@pytest.fixture
def cluster(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[TxCluster]:
    c = _cluster(tmp_path, namesrv, FAST_CHECKS)
    try:
        yield c
    finally:
        c.stop()


class Checks:
    """A check listener that answers from a script and records what it was asked."""

    def __init__(self, answer: Callable[[int, StoredMessage], LocalTransactionState]) -> None:
        self.answer = answer
        self.lock = threading.Lock()
        self.asked: list[StoredMessage] = []

    def __call__(self, msg: StoredMessage) -> LocalTransactionState:
        with self.lock:
            self.asked.append(msg)
            n = len(self.asked)
        return self.answer(n, msg)

    def count(self) -> int:
        with self.lock:
            return len(self.asked)


def producer(
    cluster: TxCluster,
    group: str,
    execute: Callable[[rmq.Message, object], LocalTransactionState],
    check: Callable[[StoredMessage], LocalTransactionState],
) -> rmq.TransactionProducer:
    return rmq.TransactionProducer(
        group,
        cluster.namesrv,
        execute_local_transaction=execute,
        check_local_transaction=check,
        heartbeat_broker_interval=500,
    ).start()


def test_commit_is_delivered_only_after_the_commit(cluster: TxCluster) -> None:
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-commit", "TxTopic", got)
    in_transaction = threading.Event()
    may_commit = threading.Event()
    seen: list[tuple[str | None, object]] = []

    def execute(msg: rmq.Message, arg: object) -> LocalTransactionState:
        seen.append((msg.properties.get("UNIQ_KEY"), arg))
        in_transaction.set()
        assert may_commit.wait(20)
        return COMMIT

    checks = Checks(lambda n, m: UNKNOW)
    p = producer(cluster, "pg-tx-commit", execute, checks)
    try:
        results: list[rmq.TransactionSendResult] = []
        sender = threading.Thread(
            target=lambda: results.append(
                p.send_message_in_transaction(
                    rmq.Message("TxTopic", b"order-1", tags="TagA", keys="o-1"), arg=42
                )
            )
        )
        sender.start()
        assert in_transaction.wait(20)
        time.sleep(1.5)  # the half message is stored; a consumer must not see it
        assert got.bodies() == []
        may_commit.set()
        sender.join(20)
        wait_until(lambda: len(got.bodies()) == 1, "the committed message")
        result = results[0]
        assert result.status == "SEND_OK"
        assert result.local_transaction_state is COMMIT
        assert result.transaction_id == result.msg_id == seen[0][0]
        assert seen[0][1] == 42
        assert result.queue.topic == "TxTopic"
        m = got.msgs[0]
        assert (m.body, m.tags, m.keys, m.msg_id) == (b"order-1", "TagA", "o-1", result.msg_id)
        assert m.queue_id == result.queue.queue_id
        assert m.properties["PGROUP"] == "pg-tx-commit"
        for gone in ("TRAN_MSG", "REAL_TOPIC", "REAL_QID"):
            assert gone not in m.properties
        time.sleep(2.5)  # two check rounds: the committed half is not checked
        assert checks.count() == 0 and len(got.bodies()) == 1
    finally:
        p.shutdown()
        consumer.shutdown()


def test_rollback_is_never_delivered(cluster: TxCluster) -> None:
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-rollback", "TxTopic", got)
    checks = Checks(lambda n, m: COMMIT)
    p = producer(cluster, "pg-tx-rollback", lambda m, a: ROLLBACK if a == "no" else COMMIT, checks)
    try:
        r = p.send_message_in_transaction(rmq.Message("TxTopic", b"rolled back"), "no")
        assert r.local_transaction_state is ROLLBACK
        p.send_message_in_transaction(rmq.Message("TxTopic", b"marker"), "yes")
        wait_until(lambda: got.bodies() == [b"marker"], "the marker")
        time.sleep(2.5)  # two check rounds: the rolled-back half is done too
        assert got.bodies() == [b"marker"] and checks.count() == 0
    finally:
        p.shutdown()
        consumer.shutdown()


def test_unknown_is_checked_and_committed(cluster: TxCluster) -> None:
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-check", "TxTopic", got)
    checks = Checks(lambda n, m: COMMIT)
    p = producer(cluster, "pg-tx-check", lambda m, a: UNKNOW, checks)
    try:
        r = p.send_message_in_transaction(rmq.Message("TxTopic", b"decided later", keys="o-2"))
        assert r.local_transaction_state is UNKNOW
        wait_until(lambda: len(got.bodies()) == 1, "the message committed after a check")
        asked = checks.asked[0]
        assert (asked.topic, asked.queue_id) == ("TxTopic", r.queue.queue_id)
        assert asked.msg_id == r.msg_id and asked.keys == "o-2"
        assert asked.properties["TRANSACTION_CHECK_TIMES"] == "1"
        assert got.msgs[0].body == b"decided later" and got.msgs[0].msg_id == r.msg_id
        time.sleep(2.5)
        assert checks.count() == 1 and len(got.bodies()) == 1
    finally:
        p.shutdown()
        consumer.shutdown()


def test_a_transactional_batch_parks_every_message_until_each_is_ended(
    cluster: TxCluster,
) -> None:
    """rmq's extension: a batch flagged as a transaction is stored as one half message per
    entry; END_TRANSACTION requests end them one by one, and the open ones are checked."""
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-batch", "TxTopic", got)
    checks = Checks(lambda n, m: ROLLBACK if m.body.startswith(b"open") else UNKNOW)
    p = producer(cluster, "pg-tx-batch", lambda m, a: COMMIT, checks)

    def batch(name: str, n: int) -> list[rmq.Message]:
        props = {"TRAN_MSG": "true", "PGROUP": "pg-tx-batch"}
        return [rmq.Message("TxTopic", f"{name}-{i}".encode(), properties=props) for i in range(n)]

    def halves(r: rmq.SendResult) -> tuple[rmq.MessageQueue, str, str, int]:
        return (r.queue, r.offset_msg_id, r.msg_id, r.queue_offset)

    try:
        queue = p.fetch_publish_message_queues("TxTopic")[0]
        kept = p.native.send_batch(batch("kept", 5), queue)
        dropped = p.native.send_batch(batch("dropped", 4), queue)
        p.native.send_batch(batch("open", 3), queue)
        assert len(kept.offset_msg_id.split(",")) == 5
        time.sleep(1.0)
        assert got.bodies() == [], "halves are not delivered"
        assert p.native.end_transactions([halves(kept)], "COMMIT_MESSAGE") == 5
        assert p.native.end_transactions([halves(dropped)], "ROLLBACK_MESSAGE") == 4
        wait_until(lambda: len(got.bodies()) == 5, "the committed batch")
        wait_until(
            lambda: {m.body for m in checks.asked} >= {b"open-0", b"open-1", b"open-2"},
            "a check of each open half",
        )
        time.sleep(2.5)  # two more check rounds: nothing else is delivered
        assert sorted(got.bodies()) == [f"kept-{i}".encode() for i in range(5)]
        assert {m.msg_id for m in got.msgs} == set(kept.msg_id.split(","))
        assert not any(m.body.startswith(b"dropped") for m in checks.asked)
        with pytest.raises(MessageIllegalError, match="all transactional messages"):
            p.native.send_batch([*batch("mixed", 1), rmq.Message("TxTopic", b"plain")], queue)
    finally:
        p.shutdown()
        consumer.shutdown()


DYING_PRODUCER = textwrap.dedent(
    """
    import os, signal, sys
    import rmq

    def execute(msg, arg):
        print(msg.properties["UNIQ_KEY"], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # dies between the half message and its end

    p = rmq.TransactionProducer(
        "pg-tx-shared", sys.argv[1],
        execute_local_transaction=execute,
        check_local_transaction=lambda m: rmq.LocalTransactionState.ROLLBACK_MESSAGE,
    ).start()
    p.send_message_in_transaction(rmq.Message("TxTopic", b"orphan"))
    """
)


def test_a_producer_dies_and_another_of_its_group_commits(cluster: TxCluster) -> None:
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-orphan", "TxTopic", got)
    checks = Checks(lambda n, m: COMMIT)
    survivor = producer(cluster, "pg-tx-shared", lambda m, a: COMMIT, checks)
    try:
        dying = subprocess.run(
            [sys.executable, "-c", DYING_PRODUCER, cluster.namesrv],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert dying.returncode == -9, dying.stderr
        msg_id = dying.stdout.strip()
        wait_until(lambda: len(got.bodies()) == 1, "the orphan, committed by the survivor")
        assert got.msgs[0].body == b"orphan" and got.msgs[0].msg_id == msg_id
        assert [m.msg_id for m in checks.asked] == [msg_id]
    finally:
        survivor.shutdown()
        consumer.shutdown()


def test_broker_restart_in_the_middle_of_a_check(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    cluster = _cluster(
        tmp_path, namesrv, "transactionCheckInterval = 2000\ntransactionTimeOut = 1000\n"
    )
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-restart", "TxTopic", got)
    second_check = threading.Event()
    restarted = threading.Event()

    def answer(n: int, msg: StoredMessage) -> LocalTransactionState:
        if n == 2:  # the broker restarts while this check is open
            second_check.set()
            assert restarted.wait(60)
            return UNKNOW
        return COMMIT if n >= 3 else UNKNOW

    checks = Checks(answer)
    p = producer(cluster, "pg-tx-restart", lambda m, a: UNKNOW, checks)
    try:
        r = p.send_message_in_transaction(rmq.Message("TxTopic", b"survives a restart"))
        assert second_check.wait(30)
        cluster.restart()
        restarted.set()
        wait_until(lambda: len(got.bodies()) == 1, "the message committed after the restart")
        counts = [m.properties["TRANSACTION_CHECK_TIMES"] for m in checks.asked]
        assert counts == ["1", "2", "3"]
        assert {m.msg_id for m in checks.asked} == {r.msg_id}
        time.sleep(4.5)  # two more rounds: nothing is checked or delivered again
        assert checks.count() == 3 and got.bodies() == [b"survives a restart"]
    finally:
        restarted.set()
        p.shutdown()
        consumer.shutdown()
        cluster.stop()


def test_unanswered_half_is_discarded_after_transaction_check_max(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    cluster = _cluster(tmp_path, namesrv, FAST_CHECKS + "transactionCheckMax = 2\n")
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tx-discard", "TxTopic", got)
    checks = Checks(lambda n, m: UNKNOW)
    p = producer(cluster, "pg-tx-discard", lambda m, a: UNKNOW, checks)
    try:
        r = p.send_message_in_transaction(rmq.Message("TxTopic", b"nobody knows"))
        line = cluster.broker.wait_for("discarded, kept in", timeout=30)
        assert r.msg_id in line and "TRANS_CHECK_MAX_TIME_TOPIC" in line
        time.sleep(2.5)
        assert checks.count() == 2 and got.bodies() == []
    finally:
        p.shutdown()
        consumer.shutdown()
        cluster.stop()


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("transactionCheckInterval", "10"),
        ("transactionCheckMax", "0"),
        ("transactionTimeOut", "-1"),
        ("rejectTransactionMessage", "maybe"),
    ],
)
def test_transaction_keys_are_checked(tmp_path: Path, key: str, value: str) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(f"{key} = {value}\n")
    with pytest.raises(ConfigError, match=key):
        rmq.load_broker_config(conf)
