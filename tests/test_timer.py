"""Timer messages (RocketMQ 5, RIP-43) end to end: a real nameserver and ``rmq.broker``
process, the Python SDK's producer (timer properties set as message properties, as the Java
5.x client's ``setDeliverTimeMs`` / ``setDelayTimeSec`` / ``setDelayTimeMs`` do) and push
consumer, and the broker's store read back after it stopped.

* ``TIMER_DELIVER_MS`` = now + 10 s arrives in its second (stored into its queue no earlier
  than asked, at most a second and a little later), also when the broker is killed with
  ``kill -9`` while it waits and started again; ``TIMER_DELAY_SEC`` and ``TIMER_DELAY_MS`` the
  same; the delivered message keeps body, keys, tags, user properties, its id (UNIQ_KEY) and
  the queue it was sent to;
* a deliver time in the past is delivered at once; a delay level wins over timer properties;
* a delay beyond ``timerMaxDelaySec`` is refused with RocketMQ's code and remark;
* a clean stop while timers are being delivered loses none and repeats none.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import BrokerProcess, free_port, push_consumer, wait_until
from rmq._rmq import StoredMessage
from rmq.errors import MessageIllegalError
from test_retry_delay import DelayCluster, read_queue

TIMER_CONF = "timerMaxDelaySec = 60\nmessageDelayLevel = 1s 2s\n"


@pytest.fixture
def cluster(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[DelayCluster]:
    c = DelayCluster(tmp_path, namesrv[1])
    try:
        yield c
    finally:
        c.stop()


class Arrivals:
    """What a push consumer received, by body, with when it arrived (first time only)."""

    def __init__(self) -> None:
        self.got: dict[bytes, tuple[StoredMessage, float]] = {}
        self.lock = threading.Lock()

    def __call__(self, msgs: list[StoredMessage]) -> None:
        now = time.time()
        with self.lock:
            for m in msgs:
                self.got.setdefault(m.body, (m, now))


def test_timers_arrive_in_their_second_across_a_kill_9(cluster: DelayCluster) -> None:
    cluster.start_delay_broker(TIMER_CONF)
    topic = "TimerT"
    cluster.create_topic(topic, queues=2)
    arrivals = Arrivals()
    consumer = push_consumer(cluster.namesrv, "cg-timer", topic, arrivals)
    user = {"color": "blue", "n": "7"}
    try:
        with rmq.Producer("pg-timer", cluster.namesrv) as producer:
            q = producer.fetch_publish_message_queues(topic)
            # A delay above timerMaxDelaySec (60 s): RocketMQ's code and remark.
            with pytest.raises(MessageIllegalError) as refused:
                producer.send(rmq.Message(topic, b"x", properties={"TIMER_DELAY_SEC": "61"}))
            assert refused.value.code == 13
            assert (
                "timer message illegal, the delay time should not be bigger than the max delay "
                "60000ms; or if set del msg, the delay time should be bigger than the current time"
            ) in str(refused.value)

            sent: dict[bytes, tuple[rmq.SendResult, int]] = {}

            def send(body: bytes, queue: int, props: dict[str, str], due_in_ms: int) -> None:
                now = int(time.time() * 1000)
                msg = rmq.Message(
                    topic, body, tags="TagT", keys=[f"k-{body.decode()}"], properties=props
                )
                msg.properties.update(user)
                result = producer.send(msg, queue=q[queue])
                sent[body] = (result, now + due_in_ms)

            deliver_at = int(time.time() * 1000) + 10_000
            send(b"deliver-10s", 1, {"TIMER_DELIVER_MS": str(deliver_at)}, 10_000)
            sent[b"deliver-10s"] = (sent[b"deliver-10s"][0], deliver_at)
            send(b"sec-5", 0, {"TIMER_DELAY_SEC": "5"}, 5_000)
            send(b"ms-5500", 1, {"TIMER_DELAY_MS": "5500"}, 5_500)
            send(b"past", 1, {"TIMER_DELIVER_MS": str(int(time.time() * 1000) - 5000)}, 0)
            both = {"DELAY": "1", "TIMER_DELAY_SEC": "30"}
            send(b"level-and-timer", 0, both, 1_000)
        # The timers wait in rmq_sys_wheel_timer; the past one is there at once.
        wait_until(lambda: b"past" in arrivals.got, "the past-due message", timeout=10)
        assert cluster.max_offset("rmq_sys_wheel_timer", 0) == 3
        time.sleep(1.5)
        cluster.proc.proc.kill()  # kill -9 while all three timers wait
        cluster.proc.finish()
        cluster.restart()
        wait_until(lambda: len(arrivals.got) == len(sent), "every timer message", timeout=25)
    finally:
        consumer.shutdown()

    for body, (result, due_ms) in sent.items():
        m, received = arrivals.got[body]
        assert m.topic == topic and m.queue_id == result.queue.queue_id, body
        assert m.msg_id == result.msg_id, body  # the UNIQ_KEY the producer got
        assert m.body == body and m.tags == "TagT" and m.keys == f"k-{body.decode()}", body
        assert {k: m.properties.get(k) for k in user} == user, body
        # Never early: stored into its queue, and received, at or after the asked time.
        assert m.store_timestamp >= due_ms, (body, m.store_timestamp - due_ms)
        assert received * 1000 >= due_ms, body
    timer_bodies = (b"deliver-10s", b"sec-5", b"ms-5500")
    for body in timer_bodies:
        m, _ = arrivals.got[body]
        assert "REAL_TOPIC" not in m.properties and "REAL_QID" not in m.properties, body
        out_ms = int(m.properties["TIMER_OUT_MS"])
        assert int(m.properties["TIMER_DEQUEUE_MS"]) >= out_ms + 1000
        assert int(m.properties["TIMER_ENQUEUE_MS"]) <= sent[body][1] - 4000
    # The 10 s timer, due after the restart, is delivered within its second (1 s precision,
    # plus scheduling on a busy machine).
    m, received = arrivals.got[b"deliver-10s"]
    assert m.store_timestamp < deliver_at + 1500, m.store_timestamp - deliver_at
    assert received * 1000 < deliver_at + 4000, received * 1000 - deliver_at
    # Past: an ordinary message at once, its timer property kept.
    m, _ = arrivals.got[b"past"]
    assert "TIMER_OUT_MS" not in m.properties and "TIMER_DELIVER_MS" in m.properties
    assert m.store_timestamp < sent[b"past"][1] + 2000
    # A delay level wins: delivered after its level (1 s), timer properties dropped.
    m, _ = arrivals.got[b"level-and-timer"]
    assert "TIMER_DELAY_SEC" not in m.properties and "TIMER_OUT_MS" not in m.properties
    assert m.properties["REAL_TOPIC"] == topic  # it went through SCHEDULE_TOPIC_XXXX
    assert m.store_timestamp < sent[b"level-and-timer"][1] + 10_000


def test_a_clean_stop_while_delivering_loses_and_repeats_nothing(cluster: DelayCluster) -> None:
    cluster.start_delay_broker(TIMER_CONF)
    topic, n = "TimerRestartT", 120
    cluster.create_topic(topic, queues=2)
    due: dict[bytes, int] = {}
    with rmq.Producer("pg-timer-restart", cluster.namesrv) as producer:
        start = int(time.time() * 1000)
        for i in range(n):
            body = b"t-%03d" % i
            delay = 1500 + 25 * i  # due over 1.5 .. 4.5 s
            producer.send(rmq.Message(topic, body, properties={"TIMER_DELAY_MS": str(delay)}))
            due[body] = int(time.time() * 1000) + delay
    assert int(time.time() * 1000) - start < 1500, "sending took too long for this test"

    def delivered() -> int:
        return cluster.max_offset(topic, 0) + cluster.max_offset(topic, 1)

    wait_until(lambda: delivered() >= 10, "deliveries to begin", timeout=10)
    assert delivered() < n, "everything was delivered before the stop"
    assert cluster.proc.stop(signal.SIGTERM) == 0, cluster.proc.log
    cluster.restart()
    wait_until(lambda: delivered() >= n, f"all {n} delivered (have {delivered()})", timeout=15)
    time.sleep(0.5)
    assert cluster.proc.stop(signal.SIGTERM) == 0, cluster.proc.log

    with cluster.open_store() as store:
        msgs = [m for q in (0, 1) for m in read_queue(store, topic, q)]
    counts = collections.Counter(m.body for m in msgs)
    assert set(counts) == set(due), "a timer message was lost"
    assert max(counts.values()) == 1, "a timer message was delivered twice after a clean stop"
    early = [m.body for m in msgs if m.store_timestamp < due[m.body]]
    assert not early, f"delivered early: {early}"


def test_an_unsupported_timer_precision_stops_start_up_naming_it(cluster: DelayCluster) -> None:
    cluster.conf.write_text(
        f"listenPort = {free_port()}\nstorePathRootDir = {cluster.root}\ntimerPrecisionMs = 100\n"
    )
    proc = BrokerProcess("-c", str(cluster.conf), "-n", cluster.namesrv, cwd=cluster.tmp)
    assert proc.finish() != 0
    assert "timerPrecisionMs" in proc.log and "only 1000" in proc.log, proc.log


@pytest.mark.timeout(600)
def test_java_5_client_timer_messages(cluster: DelayCluster, tmp_path: Path) -> None:
    """The official RocketMQ 5.x remoting client (rocketmq-client 5.3.1, from Maven Central):
    ``setDeliverTimeMs``, ``setDelayTimeSec`` and ``setDelayTimeMs`` arrive in their second, with
    their id, queue, tags, keys and user property; a delay beyond ``timerMaxDelaySec`` is refused
    with code 13 and RocketMQ's remark (tests/compat/java5/.../TimerCheck.java)."""
    sys.path.insert(0, str(Path(__file__).parent / "compat"))
    from run_java_compat import build_java5_jar, java_executable

    jar = build_java5_jar()
    java = java_executable()
    cluster.start_delay_broker(TIMER_CONF)
    cluster.create_topic("TimerJava5", queues=4)
    proc = subprocess.run(
        [
            java,
            "-Xmx512m",
            "-cp",
            str(jar),
            "rmq.compat5.TimerCheck",
            cluster.namesrv,
            "TimerJava5",
            str(tmp_path / "jl"),
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"no summary; stderr:\n{proc.stderr[-4000:]}"
    summary = json.loads(lines[-1])
    assert proc.returncode == 0, f"{summary}\nstderr:\n{proc.stderr[-4000:]}"
    assert summary["refusedCode"] == 13
    assert summary["refusedRemark"].startswith(
        "timer message illegal, the delay time should not be bigger than the max delay 60000ms"
    ), summary
    for m in summary["messages"]:
        assert m["msgIdMatches"] and m["queueMatches"], m
        assert (m["tags"], m["keys"], m["color"]) == ("TagJ", f"key-{m['body']}", "green"), m
        assert m["timerOutMs"] is not None, m
        # Never early, within its second (plus scheduling on a busy machine).
        assert m["due"] <= m["store"] < m["due"] + 1500, m
        assert m["received"] >= m["due"], m
