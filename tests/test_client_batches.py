"""The fast consume path (issue 18 item 3) keeps the consumer's promises: batches of
``consume_message_batch_max_size`` in queue order, lazily decoded messages equal to what
was sent, offsets committed from batches that a restarted consumer resumes from, pipelined
pulls that a seek or a rebalance discards, with nothing lost or delivered twice."""

from __future__ import annotations

import threading
import time

import rmq
from helpers import Cluster, Collector, push_consumer, route_queues, wait_until
from rmq._rmq import ClientInstance, StoredMessage


def send(cluster: Cluster, topic: str, bodies: list[bytes]) -> None:
    with rmq.Producer(f"pg-{topic}", cluster.namesrv) as producer:
        for body in bodies:
            producer.send(rmq.Message(topic, body))


class Batches:
    """A concurrent listener that keeps each call's batch."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[list[StoredMessage]] = []

    def __call__(self, msgs: list[StoredMessage]) -> None:
        with self.lock:
            self.calls.append(list(msgs))

    def messages(self) -> list[StoredMessage]:
        with self.lock:
            return [m for call in self.calls for m in call]


def test_batches_honour_the_max_size_and_the_order_of_their_queue(cluster: Cluster) -> None:
    cluster.create_topic("Batched", queues=2)
    send(cluster, "Batched", [b"%d" % i for i in range(300)])
    got = Batches()
    consumer = push_consumer(
        cluster.namesrv, "cg-batched", "Batched", got, consume_message_batch_max_size=8
    )
    try:
        wait_until(lambda: len(got.messages()) >= 300, "300 messages")
        time.sleep(0.5)  # anything delivered twice would show up by now
    finally:
        consumer.shutdown()
    bodies = sorted(m.body for m in got.messages())
    assert bodies == sorted(b"%d" % i for i in range(300))
    assert all(1 <= len(call) <= 8 for call in got.calls)
    # A backlog fills every batch but a queue's last: more than one message per call.
    assert max(len(call) for call in got.calls) == 8
    for call in got.calls:
        assert len({m.queue_id for m in call}) == 1, "a batch holds one queue's messages"
        offsets = [m.queue_offset for m in call]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), offsets


def test_lazily_decoded_messages_give_what_was_sent(cluster: Cluster) -> None:
    cluster.create_topic("Lazy", queues=1)
    with rmq.Producer("pg-lazy", cluster.namesrv) as producer:
        sent = producer.send(
            rmq.Message(
                "Lazy", b"payload", tags="TagA", keys=["k1", "k2"], properties={"color": "red"}
            )
        )
    with rmq.PullConsumer(
        "cg-lazy", cluster.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    ) as c:
        c.subscribe("Lazy")
        msgs = c.poll(5000)
    assert len(msgs) == 1
    m = msgs[0]
    assert (m.topic, m.queue_id, m.queue_offset) == ("Lazy", 0, 0)
    assert m.body == b"payload" and m.body is m.body, "the body is made once and kept"
    assert m.tags == "TagA" and m.keys == "k1 k2"
    assert m.msg_id == sent.msg_id and m.offset_msg_id == sent.offset_msg_id
    props = m.properties
    assert props["color"] == "red" and props["TAGS"] == "TagA" and props["KEYS"] == "k1 k2"
    assert props["UNIQ_KEY"] == sent.msg_id
    props["color"] = "blue"  # each read is a new dict: the message does not change
    assert m.properties["color"] == "red"
    assert m.store_host.endswith(":" + m.store_host.rsplit(":", 1)[1]) and ":" in m.born_host
    assert m.store_size > len(b"payload") and m.body_error is None
    assert m.born_timestamp <= m.store_timestamp and m.reconsume_times == 0
    assert "Lazy" in repr(m) and sent.msg_id in repr(m)


def test_a_restarted_consumer_resumes_where_the_batch_commits_said(cluster: Cluster) -> None:
    cluster.create_topic("Resume", queues=2)
    inst = ClientInstance(cluster.namesrv, instance_name="resume-check")
    # The producer shares the consumer's client instance, which so outlives the consumer
    # with the long polls it left on the broker.
    with rmq.Producer("pg-resume", cluster.namesrv) as producer:
        for i in range(100):
            producer.send(rmq.Message("Resume", b"first-%d" % i))
        first = Collector()
        consumer = push_consumer(
            cluster.namesrv, "cg-resume", "Resume", first, consume_message_batch_max_size=16
        )
        wait_until(lambda: first.count() == 100, "first 100")
        consumer.shutdown()
        queues = route_queues(inst, "Resume")
        ends = {mq: inst.max_offset(mq) for mq in queues}
        # New messages wake those long polls: nothing they answer (nor a pull sent ahead
        # after them) may move the committed offsets back.
        for i in range(50):
            producer.send(rmq.Message("Resume", b"second-%d" % i))
        time.sleep(1.0)
        committed = {mq: inst.query_consumer_offset("cg-resume", mq) for mq in queues}
    inst.shutdown()
    assert committed == ends
    assert sum(o or 0 for o in committed.values()) == 100
    second = Collector()
    consumer = push_consumer(
        cluster.namesrv, "cg-resume", "Resume", second, consume_message_batch_max_size=16
    )
    try:
        wait_until(lambda: second.count() == 50, "second 50")
        time.sleep(0.5)
        assert sorted(second.bodies()) == sorted(b"second-%d" % i for i in range(50))
    finally:
        consumer.shutdown()


def test_a_rebalance_loses_and_repeats_nothing_with_pipelined_pulls(cluster: Cluster) -> None:
    cluster.create_topic("Handover", queues=4)
    send(cluster, "Handover", [b"%d" % i for i in range(400)])
    a, b = Collector(), Collector()
    first = push_consumer(
        cluster.namesrv,
        "cg-handover",
        "Handover",
        a,
        consume_message_batch_max_size=4,
        instance_name="a",
    )
    second = None
    try:
        wait_until(lambda: a.count() == 400, "the backlog drained by the first consumer")
        first.persist_offsets(wait=True)
        second = push_consumer(
            cluster.namesrv,
            "cg-handover",
            "Handover",
            b,
            consume_message_batch_max_size=4,
            instance_name="b",
        )
        wait_until(
            lambda: len(first.assignment()) == 2 and len(second.assignment()) == 2,
            "4 queues split 2/2",
        )
        send(cluster, "Handover", [b"%d" % i for i in range(400, 800)])
        wait_until(lambda: a.count() + b.count() >= 800, "800 messages")
        time.sleep(1.0)  # anything delivered twice would show up by now
    finally:
        first.shutdown()
        if second is not None:
            second.shutdown()
    assert sorted(a.bodies() + b.bodies()) == sorted(b"%d" % i for i in range(800))
    assert b.count() > 0 and all(int(body) >= 400 for body in b.bodies())


def test_a_seek_discards_the_pull_sent_ahead(cluster: Cluster) -> None:
    cluster.create_topic("Ahead", queues=1)
    send(cluster, "Ahead", [b"%d" % i for i in range(100)])
    with rmq.PullConsumer("cg-ahead", cluster.namesrv, pull_batch_size=10) as c:
        mq = c.fetch_message_queues("Ahead")[0]
        c.assign([mq])
        c.seek(mq, 0)
        assert [m.queue_offset for m in c.poll(3000)] == list(range(10))
        # The pull of 10..19 is on its way; the next poll takes it.
        assert [m.queue_offset for m in c.poll(3000)] == list(range(10, 20))
        c.seek(mq, 5)  # the pull sent ahead (20..29) is not what comes next
        assert [m.queue_offset for m in c.poll(3000)] == list(range(5, 15))
        c.seek(mq, 95)
        assert [m.body for m in c.poll(3000)] == [b"%d" % i for i in range(95, 100)]
        assert c.poll(200) == []


def test_a_slow_listener_still_runs_batches_on_many_threads_at_once(cluster: Cluster) -> None:
    """Fast listeners get several batches a consume task (one hand-off per pull); a slow one
    must keep RocketMQ's concurrency: up to consume_thread_max batches at once."""
    cluster.create_topic("SlowListener", queues=1)
    send(cluster, "SlowListener", [b"%d" % i for i in range(40)])
    lock = threading.Lock()
    inside, most, seen = 0, 0, []

    def listener(msgs: list[StoredMessage]) -> None:
        nonlocal inside, most
        with lock:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)
        with lock:
            inside -= 1
            seen.extend(m.body for m in msgs)

    consumer = push_consumer(
        cluster.namesrv, "cg-slow", "SlowListener", listener, consume_thread_max=8
    )
    try:
        wait_until(lambda: len(seen) >= 40, "40 messages")
    finally:
        consumer.shutdown()
    assert sorted(seen) == sorted(b"%d" % i for i in range(40))
    assert most >= 6, f"at most {most} listener calls ran at once"
