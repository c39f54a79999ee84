"""The Python client SDK end to end against real ``rmq.namesrv`` and ``rmq.broker`` processes:
every send mode, consumers in clustering and broadcasting mode, rebalance when a consumer
leaves, offsets that survive a consumer restart, tag filtering, ordered consumption per
sharding key, compression, and sends that continue on the surviving broker when one of two
is killed."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import rmq
from helpers import (
    FAST,
    Cluster,
    Collector,
    free_port,
    pull_header,
    push_consumer,
    route_queues,
    wait_until,
)
from rmq._rmq import RemotingClient, StoredMessage
from rmq.client import select_by_sharding_key
from rmq.codes import RequestCode
from rmq.errors import MessageIllegalError, RemotingConnectError, TopicNotExistError


def test_every_send_mode_is_stored_and_consumed(cluster: Cluster) -> None:
    cluster.create_topic("SendModes")
    got = Collector()
    with rmq.Producer("pg-modes", cluster.namesrv) as producer:
        sync = producer.send(rmq.Message("SendModes", b"sync", tags="A", keys=["k1", "k2"]))
        assert sync.status == "SEND_OK"
        assert len(sync.msg_id) == 32 and len(sync.offset_msg_id) == 32
        assert sync.queue.topic == "SendModes" and sync.queue.broker_name == "broker-a"

        calls: list[tuple[object, object]] = []
        fut = producer.send_async(
            rmq.Message("SendModes", b"async"), callback=lambda r, e: calls.append((r, e))
        )
        assert fut.result(10).status == "SEND_OK"

        async def awaited() -> rmq.SendResult:
            return await producer.send_async(rmq.Message("SendModes", b"awaited"))

        assert asyncio.run(awaited()).status == "SEND_OK"
        producer.send_oneway(rmq.Message("SendModes", b"oneway"))
        batch = producer.send_batch([rmq.Message("SendModes", b"batch-%d" % i) for i in range(10)])
        assert len(batch) == 1 and len(batch[0].msg_id.split(",")) == 10
        queue = producer.fetch_publish_message_queues("SendModes")[2]
        chosen = producer.send(rmq.Message("SendModes", b"selected"), lambda qs, m, a: qs[a], 2)
        assert chosen.queue == queue
        wait_until(lambda: len(calls) == 1, "the async callback")
        assert calls[0][1] is None

        consumer = push_consumer(cluster.namesrv, "cg-modes", "SendModes", got)
        try:
            wait_until(lambda: len(got.bodies()) == 15, "15 messages")
        finally:
            consumer.shutdown()
    expected = {b"sync", b"async", b"awaited", b"oneway", b"selected"} | {
        b"batch-%d" % i for i in range(10)
    }
    assert set(got.bodies()) == expected and len(got.bodies()) == 15
    by_body = {m.body: m for m in got.msgs}
    assert by_body[b"sync"].tags == "A" and by_body[b"sync"].keys == "k1 k2"
    assert by_body[b"sync"].msg_id == sync.msg_id
    assert by_body[b"sync"].offset_msg_id == sync.offset_msg_id
    assert by_body[b"selected"].queue_id == 2


def test_large_bodies_are_compressed_on_the_wire_and_restored(cluster: Cluster) -> None:
    cluster.create_topic("Compress", queues=1)
    body = b"0123456789abcdef" * 1000  # 16 000 bytes, over the 4096 threshold
    with rmq.Producer("pg-z", cluster.namesrv) as producer:
        producer.send(rmq.Message("Compress", body))
    inst = rmq._rmq.ClientInstance(cluster.namesrv)
    try:
        mq = inst.fetch_subscribe_queues("Compress")[0]
        wait_until(lambda: inst.max_offset(mq) == 1, "the message to be dispatched")
        # The broker stored it compressed (sys flag bit 0, fewer bytes)...
        _, addr = cluster.brokers["broker-a"]
        stored = RemotingClient().invoke(
            addr,
            RequestCode.PULL_MESSAGE,
            pull_header("raw", "Compress", max_nums=1),
        )
        assert stored.code == 0, stored.remark
        raw = rmq._rmq.decode_messages(stored.body or b"")[0]
        assert raw.sys_flag & 1 and len(raw.body) < len(body) // 10
        # ...and the client hands back the original.
        pulled = inst.pull("g", mq, 0, 1)
        assert pulled.messages[0].body == body and not pulled.messages[0].sys_flag & 1
    finally:
        inst.shutdown()


def test_illegal_messages_and_unreachable_nameserver_raise_clear_errors(cluster: Cluster) -> None:
    with rmq.Producer("pg-bad", cluster.namesrv, max_message_size=1024) as producer:
        with pytest.raises(MessageIllegalError, match="1025 bytes; the most is 1024"):
            producer.send(rmq.Message("AnyTopic", b"x" * 1025))
        with pytest.raises(MessageIllegalError, match="contains ' '"):
            producer.send(rmq.Message("bad topic", b"x"))
        with pytest.raises(MessageIllegalError, match="empty"):
            producer.send(rmq.Message("AnyTopic", b""))
    with (
        rmq.Producer("pg-down", f"127.0.0.1:{free_port()}") as producer,
        pytest.raises(RemotingConnectError, match="cannot reach"),
    ):
        producer.send(rmq.Message("AnyTopic", b"x"))


def test_auto_created_topic_and_unknown_topic_error(cluster: Cluster) -> None:
    with rmq.Producer("pg-auto", cluster.namesrv) as producer:
        r = producer.send(rmq.Message("AutoCreated", b"x"))
        assert r.status == "SEND_OK"
    inst = rmq._rmq.ClientInstance(cluster.namesrv)
    try:
        wait_until(lambda: len(route_queues(inst, "AutoCreated")) == 4, "auto-created route")
        with pytest.raises(TopicNotExistError, match="no route for topic"):
            inst.fetch_subscribe_queues("NeverCreated")
    finally:
        inst.shutdown()


def test_clustering_consumes_each_message_once_and_rebalances(cluster: Cluster) -> None:
    cluster.create_topic("Clustered", queues=6)
    collectors = [Collector() for _ in range(3)]
    consumers = [
        push_consumer(cluster.namesrv, "cg-cluster", "Clustered", c, instance_name=f"c{i}")
        for i, c in enumerate(collectors)
    ]
    try:
        wait_until(
            lambda: sorted(len(c.assignment()) for c in consumers) == [2, 2, 2],
            "6 queues split 2/2/2",
        )
        all_queues = [mq for c in consumers for mq in c.assignment()]
        assert len(set(all_queues)) == 6
        with rmq.Producer("pg-cluster", cluster.namesrv) as producer:
            for i in range(300):
                producer.send(rmq.Message("Clustered", b"%d" % i))
            wait_until(lambda: sum(len(c.bodies()) for c in collectors) >= 300, "300 messages")
            assert all(c.bodies() for c in collectors), "every consumer got a share"
            # Offsets reach the broker every 0.5 s here; a queue that moves in a rebalance
            # restarts from there (messages after it would be delivered again, as RocketMQ).
            time.sleep(1.5)
            consumers[0].shutdown()
            wait_until(
                lambda: sorted(len(c.assignment()) for c in consumers[1:]) == [3, 3],
                "rebalance to 3/3 after one consumer left",
            )
            for i in range(300, 600):
                producer.send(rmq.Message("Clustered", b"%d" % i))
            wait_until(lambda: sum(len(c.bodies()) for c in collectors) >= 600, "600 messages")
        time.sleep(1.0)  # anything delivered twice would show up by now
        bodies = [b for c in collectors for b in c.bodies()]
        assert sorted(bodies) == sorted(b"%d" % i for i in range(600))
        assert not collectors[0].bodies() or all(int(b) < 300 for b in collectors[0].bodies())
    finally:
        for c in consumers:
            c.shutdown()


def test_broadcasting_gives_every_consumer_everything(cluster: Cluster, tmp_path: Path) -> None:
    cluster.create_topic("Broadcast")
    collectors = [Collector() for _ in range(2)]
    consumers = [
        push_consumer(
            cluster.namesrv,
            "cg-bcast",
            "Broadcast",
            c,
            instance_name=f"b{i}",
            message_model="BROADCASTING",
            offset_store_dir=tmp_path / "offsets",
        )
        for i, c in enumerate(collectors)
    ]
    try:
        with rmq.Producer("pg-bcast", cluster.namesrv) as producer:
            for i in range(100):
                producer.send(rmq.Message("Broadcast", b"%d" % i))
        for c in collectors:
            wait_until(lambda c=c: len(c.bodies()) >= 100, "100 messages each")  # type: ignore[misc]
        for c in collectors:
            assert sorted(c.bodies()) == sorted(b"%d" % i for i in range(100))
    finally:
        for consumer in consumers:
            consumer.shutdown()
    files = sorted((tmp_path / "offsets").glob("*/cg-bcast/offsets.json"))
    assert len(files) == 2
    offsets = rmq.client.offset_store.parse_offset_table(files[0].read_text())
    assert sum(offsets.values()) == 100


def test_offsets_survive_a_consumer_restart(cluster: Cluster) -> None:
    cluster.create_topic("Restart", queues=2)
    with rmq.Producer("pg-restart", cluster.namesrv) as producer:
        for i in range(50):
            producer.send(rmq.Message("Restart", b"first-%d" % i))
        first = Collector()
        consumer = push_consumer(cluster.namesrv, "cg-restart", "Restart", first)
        wait_until(lambda: len(first.bodies()) == 50, "first 50")
        consumer.shutdown()
        for i in range(50):
            producer.send(rmq.Message("Restart", b"second-%d" % i))
    second = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-restart", "Restart", second)
    try:
        wait_until(lambda: len(second.bodies()) == 50, "second 50")
        time.sleep(0.5)
        assert sorted(second.bodies()) == sorted(b"second-%d" % i for i in range(50))
    finally:
        consumer.shutdown()


def test_tag_filtering(cluster: Cluster) -> None:
    cluster.create_topic("Tagged", queues=2)
    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-tags", "Tagged", got, expression="TagA || TagC")
    try:
        with rmq.Producer("pg-tags", cluster.namesrv) as producer:
            for i in range(90):
                producer.send(rmq.Message("Tagged", b"%d" % i, tags="Tag" + "ABC"[i % 3]))
        wait_until(lambda: len(got.bodies()) >= 60, "TagA and TagC messages")
        time.sleep(0.5)
        assert sorted(m.tags or "" for m in got.msgs) == ["TagA"] * 30 + ["TagC"] * 30
    finally:
        consumer.shutdown()


def test_tags_with_the_same_hash_are_told_apart_by_the_client(cluster: Cluster) -> None:
    """The broker filters by the tag's hash code (Java's String.hashCode: "Aa" and "BB" are
    both 2112), so both reach the consumer's pull; the client keeps only its exact tags."""
    cluster.create_topic("HashTags", queues=1)
    got = Collector()
    with rmq.Producer("pg-hash-tags", cluster.namesrv) as producer:
        for i in range(10):
            producer.send(rmq.Message("HashTags", b"%d" % i, tags="Aa" if i % 2 else "BB"))
    consumer = push_consumer(cluster.namesrv, "cg-hash-tags", "HashTags", got, expression="Aa")
    inst = rmq._rmq.ClientInstance(cluster.namesrv)
    try:
        wait_until(lambda: len(got.bodies()) >= 5, "the Aa messages")
        # The group's offset moves past every BB message: filtered out, not left pending.
        (mq,) = inst.fetch_subscribe_queues("HashTags")
        wait_until(
            lambda: inst.query_consumer_offset("cg-hash-tags", mq) == 10,
            "the committed offset past all 10 messages",
        )
        assert sorted(m.body for m in got.msgs) == [b"1", b"3", b"5", b"7", b"9"]
        assert {m.tags for m in got.msgs} == {"Aa"}
    finally:
        consumer.shutdown()
        inst.shutdown()


def test_pull_consumer_assign_seek_commit(cluster: Cluster) -> None:
    cluster.create_topic("Lite", queues=2)
    with rmq.Producer("pg-lite", cluster.namesrv) as producer:
        for i in range(40):
            producer.send(rmq.Message("Lite", b"%d" % i))
    with rmq.PullConsumer(
        "cg-lite", cluster.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    ) as c:
        c.subscribe("Lite")
        got: list[bytes] = []
        while len(got) < 40:
            batch = c.poll(3000)
            assert batch, f"poll returned nothing after {len(got)} messages"
            got.extend(m.body for m in batch)
        assert sorted(got) == sorted(b"%d" % i for i in range(40))
        mq = c.assignment()[0]
        c.seek(mq, 5)
        again = c.poll(3000)
        assert again and again[0].queue_offset == 5
        c.commit()
        assert c.committed(mq) == 5 + len(again)
    with rmq.PullConsumer("cg-lite-assign", cluster.namesrv) as c:
        queues = c.fetch_message_queues("Lite")
        c.assign(queues[:1])
        c.seek_to_begin(queues[0])
        assert c.poll(3000)[0].queue_offset == 0
        assert c.assignment() == queues[:1]


def test_ordered_messages_per_sharding_key(cluster: Cluster) -> None:
    cluster.create_topic("Ordered", queues=4, order=True)
    seen: dict[str, list[int]] = defaultdict(list)
    lock = threading.Lock()

    def orderly(msgs: list[StoredMessage]) -> None:
        with lock:
            for m in msgs:
                key, seq = m.body.decode().split(":")
                seen[key].append(int(seq))

    def orderly_consumer(i: int) -> rmq.PushConsumer:
        c = rmq.PushConsumer(
            "cg-order",
            cluster.namesrv,
            instance_name=f"o{i}",
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            **FAST,  # type: ignore[arg-type]
        )
        c.subscribe("Ordered")
        c.register_message_listener_orderly(orderly)
        return c.start()

    consumers = [orderly_consumer(0), orderly_consumer(1)]
    try:
        with rmq.Producer("pg-order", cluster.namesrv) as producer:

            def produce(thread: int) -> None:
                for seq in range(100):
                    for key in (f"t{thread}-k{j}" for j in range(4)):
                        msg = rmq.Message("Ordered", f"{key}:{seq}")
                        msg.sharding_key = key
                        producer.send(msg, select_by_sharding_key)

            threads = [threading.Thread(target=produce, args=(t,)) for t in range(3)]
            for t in threads:
                t.start()
            # Consumers join and leave while messages flow; queues change hands in order.
            time.sleep(0.3)
            consumers.append(orderly_consumer(2))
            time.sleep(0.5)
            consumers[0].shutdown()
            for t in threads:
                t.join()
        wait_until(lambda: sum(len(v) for v in seen.values()) >= 1200, "1200 ordered messages")
        time.sleep(0.5)
        with lock:
            for key, seqs in seen.items():
                # At least once: a replayed stretch may repeat, but first deliveries are in
                # send order with nothing skipped.
                first: list[int] = []
                for s in seqs:
                    if s not in first:
                        first.append(s)
                assert first == list(range(100)), f"{key} out of order: {seqs}"
    finally:
        for c in consumers:
            c.shutdown()


def test_sends_continue_on_the_other_broker_when_one_dies(cluster: Cluster) -> None:
    cluster.start_broker("broker-b")
    cluster.create_topic("TwoBrokers", queues=2)
    with rmq.Producer(
        "pg-fault", cluster.namesrv, send_latency_fault_enable=True, send_msg_timeout=5000
    ) as producer:
        brokers = {
            producer.send(rmq.Message("TwoBrokers", b"x")).queue.broker_name for _ in range(8)
        }
        assert brokers == {"broker-a", "broker-b"}
        proc, _ = cluster.brokers["broker-b"]
        proc.kill()
        results = [producer.send(rmq.Message("TwoBrokers", b"after-%d" % i)) for i in range(40)]
    assert all(r.status == "SEND_OK" for r in results)
    assert {r.queue.broker_name for r in results} == {"broker-a"}


class _FakeQueues:
    """Queue offsets as a broker reports them: max 100, the first message stored at or after
    t=5000 is at offset 40."""

    def max_offset(self, mq: rmq.MessageQueue) -> int:
        return 100

    def search_offset(self, mq: rmq.MessageQueue, timestamp_ms: int) -> int:
        return 40 if timestamp_ms >= 5000 else 0


class _FakeStore:
    def __init__(self, committed: int) -> None:
        self.committed = committed

    def read_store(self, mq: rmq.MessageQueue) -> int:
        return self.committed


@pytest.mark.parametrize(
    ("topic", "committed", "where", "expected"),
    [
        ("T", 7, "CONSUME_FROM_LAST_OFFSET", 7),  # a committed offset always wins
        ("T", 7, "CONSUME_FROM_TIMESTAMP", 7),
        ("T", -1, "CONSUME_FROM_LAST_OFFSET", 100),
        ("T", -1, "CONSUME_FROM_FIRST_OFFSET", 0),
        ("T", -1, "CONSUME_FROM_TIMESTAMP", 40),
        ("%RETRY%g", -1, "CONSUME_FROM_LAST_OFFSET", 0),  # retry topics: from the start
        ("%RETRY%g", -1, "CONSUME_FROM_TIMESTAMP", 100),
    ],
)
def test_where_a_new_group_starts(topic: str, committed: int, where: str, expected: int) -> None:
    from rmq.client.consumer import compute_pull_from_where

    mq = rmq.MessageQueue(topic, "broker-a", 0)
    start = compute_pull_from_where(
        _FakeQueues(),  # type: ignore[arg-type]
        _FakeStore(committed),  # type: ignore[arg-type]
        mq,
        rmq.ConsumeFromWhere(where),
        6000,
    )
    assert start == expected


def test_a_new_group_on_a_young_queue_reads_it_from_the_start(cluster: Cluster) -> None:
    """As RocketMQ's broker: a group with no offset on a queue that still starts at 0 is told
    0, so even CONSUME_FROM_LAST_OFFSET reads the queue from its first message (the start
    position matters once retention has removed the queue's head)."""
    cluster.create_topic("Young", queues=2)
    with rmq.Producer("pg-young", cluster.namesrv) as producer:
        for i in range(20):
            producer.send(rmq.Message("Young", b"%d" % i))
    got = Collector()
    consumer = push_consumer(
        cluster.namesrv, "cg-young", "Young", got, consume_from_where="CONSUME_FROM_LAST_OFFSET"
    )
    try:
        wait_until(lambda: len(got.bodies()) >= 20, "the queue from its start")
    finally:
        consumer.shutdown()
    assert sorted(got.bodies()) == sorted(b"%d" % i for i in range(20))


def test_orderly_message_goes_to_the_dlq_after_max_reconsume_times(cluster: Cluster) -> None:
    """An orderly listener that keeps failing one message: it is retried in place, then moved
    to %DLQ%<group>, and the queue moves on past it in order."""
    cluster.create_topic("OrderedDlq", queues=1, order=True)
    attempts: dict[bytes, int] = defaultdict(int)
    done: list[bytes] = []

    def orderly(msgs: list[StoredMessage]) -> rmq.ConsumeOrderlyStatus:
        m = msgs[0]
        attempts[m.body] += 1
        if m.body == b"poison":
            return rmq.ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        done.append(m.body)
        return rmq.ConsumeOrderlyStatus.SUCCESS

    with rmq.Producer("pg-odlq", cluster.namesrv) as producer:
        for body in (b"a", b"poison", b"b"):
            producer.send(rmq.Message("OrderedDlq", body))
    c = rmq.PushConsumer(
        "cg-odlq",
        cluster.namesrv,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        max_reconsume_times=2,
        suspend_current_queue_time_millis=100,
        **FAST,  # type: ignore[arg-type]
    )
    c.subscribe("OrderedDlq")
    c.register_message_listener_orderly(orderly)
    c.start()
    try:
        wait_until(lambda: done == [b"a", b"b"], "the queue to move past the poison message")
    finally:
        c.shutdown()
    assert attempts[b"poison"] == 3  # the first try and max_reconsume_times retries
    inst = rmq._rmq.ClientInstance(cluster.namesrv)
    try:
        dlq = rmq.MessageQueue("%DLQ%cg-odlq", "broker-a", 0)
        wait_until(lambda: inst.max_offset(dlq) == 1, "the poison message in the DLQ")
    finally:
        inst.shutdown()
