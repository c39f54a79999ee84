"""rmq's Python client SDK against the real Apache RocketMQ nameserver and broker (4.9.7 from
Maven Central, started once for this module; see tests/compat/apache_broker/ and
tests/compat/README.md): every send mode, a compressed body, push consumers with broker-side
tag filtering, a pull consumer's commits, orderly consumption under the broker's queue locks,
offsets kept by the broker across a consumer restart, transactions (commit, rollback, and the
broker's check of an unknown one), and the errors for bad topics.

What the client sends is checked through the Apache servers' own answers: raw requests from
``rmq._rmq.RemotingClient`` (VIEW_MESSAGE_BY_ID, QUERY_CONSUMER_OFFSET, PULL_MESSAGE with the
group's registered subscription, LOCK_BATCH_MQ from a stranger) show what the broker stored and
registered. A failure message ends with the last lines of both Java processes' logs. Needs Java
17 and Maven (``make test`` installs them with apt-get when missing)."""

from __future__ import annotations

import contextlib
import json
import sys
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import FAST, Collector, create_topic_header, push_consumer, wait_until
from rmq._rmq import RemotingClient, StoredMessage, decode_messages
from rmq.client import select_by_sharding_key
from rmq.codes import RequestCode
from rmq.errors import MessageIllegalError, NoPermissionError, RmqError, TopicNotExistError

sys.path.insert(0, str(Path(__file__).parent / "compat" / "apache_broker"))
from apache_rocketmq import ApacheRocketMQ

BROKER = "broker-a"
LOCK_BATCH_MQ = 41
UNLOCK_BATCH_MQ = 42
QUERY_NOT_FOUND = 22
pytestmark = pytest.mark.timeout(300)  # the first run resolves ~30 MB of jars with Maven


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheRocketMQ]:
    with ApacheRocketMQ(tmp_path_factory.mktemp("apache-rocketmq")) as rocketmq:
        yield rocketmq


@contextlib.contextmanager
def explained(apache: ApacheRocketMQ) -> Iterator[None]:
    """Re-raise a failed check or a client error with the Java processes' log tails."""
    try:
        yield
    except (AssertionError, RmqError) as e:
        kind = "" if isinstance(e, AssertionError) else f"{type(e).__name__}: "
        raise AssertionError(
            f"{kind}{e}\n\n"
            f"Apache RocketMQ (namesrv {apache.namesrv_addr}, broker {apache.broker_addr}):\n"
            f"{apache.log_tail()}"
        ) from e


def queues(topic: str) -> list[rmq.MessageQueue]:
    return [rmq.MessageQueue(topic, BROKER, i) for i in range(4)]


def create_topic(apache: ApacheRocketMQ, topic: str, queue_nums: int = 4) -> None:
    """UPDATE_AND_CREATE_TOPIC on the Apache broker, then wait for the nameserver's route."""
    client = RemotingClient()
    try:
        resp = client.invoke(
            apache.broker_addr,
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            create_topic_header(topic, queue_nums),
        )
        assert resp.code == 0, f"UPDATE_AND_CREATE_TOPIC {topic}: {resp.code} {resp.remark}"

        def routed() -> bool:
            r = client.invoke(
                apache.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}
            )
            return r.code == 0

        wait_until(routed, f"the nameserver's route for {topic}")
    finally:
        client.close()


def committed_on_broker(apache: ApacheRocketMQ, group: str, mq: rmq.MessageQueue) -> int | None:
    """QUERY_CONSUMER_OFFSET straight to the Apache broker (None: it has no offset)."""
    client = RemotingClient()
    try:
        resp = client.invoke(
            apache.broker_addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": group, "topic": mq.topic, "queueId": str(mq.queue_id)},
        )
    finally:
        client.close()
    if resp.code == QUERY_NOT_FOUND:
        return None
    assert resp.code == 0, f"QUERY_CONSUMER_OFFSET {mq}: {resp.code} {resp.remark}"
    return int(resp.ext_fields["offset"])


def lock_as_stranger(apache: ApacheRocketMQ, group: str, mqs: list[rmq.MessageQueue]) -> set[int]:
    """LOCK_BATCH_MQ for ``mqs`` under a client id nobody uses; returns the queue ids the
    broker granted (and unlocks them again at once)."""
    stranger = "127.0.0.1@stranger"
    mq_set = [
        {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id} for mq in mqs
    ]
    client = RemotingClient()
    try:
        body = {
            "consumerGroup": group,
            "clientId": stranger,
            "onlyThisBroker": True,
            "mqSet": mq_set,
        }
        resp = client.invoke(apache.broker_addr, LOCK_BATCH_MQ, None, json.dumps(body).encode())
        assert resp.code == 0, f"LOCK_BATCH_MQ: {resp.code} {resp.remark}"
        granted = json.loads(resp.body or b"{}").get("lockOKMQSet", [])
        if granted:
            unlock = {"consumerGroup": group, "clientId": stranger, "mqSet": granted}
            client.invoke(apache.broker_addr, UNLOCK_BATCH_MQ, None, json.dumps(unlock).encode())
        return {int(mq["queueId"]) for mq in granted}
    finally:
        client.close()


def view_message(apache: ApacheRocketMQ, offset_msg_id: str) -> StoredMessage:
    """VIEW_MESSAGE_BY_ID: the message exactly as the Apache broker stored it (not inflated)."""
    port = int(apache.broker_addr.rsplit(":", 1)[1])
    assert offset_msg_id[:16] == f"7F000001{port:08X}", (
        f"offset msg id {offset_msg_id} does not name the broker {apache.broker_addr}"
    )
    client = RemotingClient()
    try:
        resp = client.invoke(
            apache.broker_addr,
            RequestCode.VIEW_MESSAGE_BY_ID,
            {"offset": str(int(offset_msg_id[16:], 16))},
        )
    finally:
        client.close()
    assert resp.code == 0, f"VIEW_MESSAGE_BY_ID {offset_msg_id}: {resp.code} {resp.remark}"
    (stored,) = decode_messages(resp.body or b"")
    return stored


def test_every_send_mode_reaches_the_apache_broker_and_comes_back_intact(
    apache: ApacheRocketMQ,
) -> None:
    topic = "ApacheSendModes"  # auto-created from TBW102 by the first send
    user_props = {"seq": "0", "uni": "h\u00e9llo \u2713 \u6d88\u606f"}
    big = b"".join(b"%06d rmq compressible payload line\n" % i for i in range(500))  # 19.5 KB
    assert len(big) > 4096
    got = Collector()
    with explained(apache), rmq.Producer("pg-apache-modes", apache.namesrv_addr) as producer:
        sync = [
            producer.send(
                rmq.Message(
                    topic,
                    b"sync-%d" % i,
                    tags="Tag" + "AB"[i % 2],
                    keys=[f"key-{i}", f"alt-{i}"],
                    properties={**user_props, "seq": str(i)},
                )
            )
            for i in range(8)
        ]
        callbacks: list[tuple[object, object]] = []
        futures = [
            producer.send_async(
                rmq.Message(topic, b"async-%d" % i, tags="TagA"),
                callback=lambda r, e: callbacks.append((r, e)),
            )
            for i in range(8)
        ]
        async_results = [f.result(10) for f in futures]
        for i in range(4):
            producer.send_oneway(rmq.Message(topic, b"oneway-%d" % i, tags="TagB"))
        batch = producer.send_batch(
            [rmq.Message(topic, b"batch-%d" % i, tags="TagA", keys=f"bk-{i}") for i in range(10)]
        )
        compressed = producer.send(rmq.Message(topic, big, tags="Big"))

        for r in [*sync, *async_results, *batch, compressed]:
            assert r.status == "SEND_OK", r
            assert r.queue.topic == topic and r.queue.broker_name == BROKER, r
        assert len(batch) == 1, f"one SEND_BATCH_MESSAGE expected, got {batch}"
        batch_ids = batch[0].msg_id.split(",")
        assert len(batch_ids) == 10 and len(batch[0].offset_msg_id.split(",")) == 10, batch[0]
        wait_until(lambda: len(callbacks) == 8, "8 async callbacks")
        assert all(e is None for _, e in callbacks), callbacks

        # The Apache broker stored the big body as our client sent it: zlib data with sysFlag
        # COMPRESSED and compression-type bits 0 (as clients before 4.9.4 send) or 3 (ZLIB,
        # sysFlag 769, as the 4.9.8 Java client sends); CompressionType.findByValue maps both
        # to ZLIB, so any 4.9/5.x consumer inflates it.
        stored = view_message(apache, compressed.offset_msg_id)
        assert stored.sys_flag & 1, f"sysFlag {stored.sys_flag:#x} lacks COMPRESSED_FLAG"
        assert stored.sys_flag & 0x700 in (0, 0x300), f"sysFlag {stored.sys_flag:#x}: not ZLIB"
        assert len(stored.body) < len(big) // 4, f"stored {len(stored.body)} bytes"
        assert zlib.decompress(stored.body) == big
        assert stored.msg_id == compressed.msg_id and stored.store_host == apache.broker_addr

        consumer = push_consumer(apache.namesrv_addr, "cg-apache-modes", topic, got)
        try:
            wait_until(lambda: got.count() >= 31, f"31 messages (have {got.count()})")
            time.sleep(0.5)  # anything delivered twice would show by now
        finally:
            consumer.shutdown()

        msgs = got.snapshot()
        by_body = {m.body: m for m in msgs}
        expected = (
            {b"sync-%d" % i for i in range(8)}
            | {b"async-%d" % i for i in range(8)}
            | {b"oneway-%d" % i for i in range(4)}
            | {b"batch-%d" % i for i in range(10)}
            | {big}
        )
        assert len(msgs) == 31 and set(by_body) == expected, (
            f"{len(msgs)} messages; missing {sorted(b[:12] for b in expected - set(by_body))}, "
            f"unexpected {sorted(b[:12] for b in set(by_body) - expected)}"
        )
        for i, r in enumerate(sync):
            m = by_body[b"sync-%d" % i]
            assert (m.msg_id, m.offset_msg_id) == (r.msg_id, r.offset_msg_id), (m, r)
            assert (m.queue_id, m.queue_offset) == (r.queue.queue_id, r.queue_offset), (m, r)
            assert m.tags == "Tag" + "AB"[i % 2] and m.keys == f"key-{i} alt-{i}", m.properties
            assert m.properties["seq"] == str(i) and m.properties["uni"] == user_props["uni"]
            assert m.store_host == apache.broker_addr and m.reconsume_times == 0
        for i, r in enumerate(async_results):
            assert by_body[b"async-%d" % i].msg_id == r.msg_id
        batch_msgs = [by_body[b"batch-%d" % i] for i in range(10)]
        assert [m.msg_id for m in batch_msgs] == batch_ids
        assert [m.keys for m in batch_msgs] == [f"bk-{i}" for i in range(10)]
        assert {m.queue_id for m in batch_msgs} == {batch[0].queue.queue_id}
        assert [m.queue_offset for m in batch_msgs] == list(
            range(batch[0].queue_offset, batch[0].queue_offset + 10)
        )
        assert by_body[big].msg_id == compressed.msg_id and not by_body[big].sys_flag & 1


def test_tag_filtering_happens_on_the_apache_broker(apache: ApacheRocketMQ) -> None:
    topic = "ApacheTags"
    got = Collector()
    with explained(apache):
        with rmq.Producer("pg-apache-tags", apache.namesrv_addr) as producer:
            for i in range(60):
                producer.send(rmq.Message(topic, b"%d" % i, tags="Tag" + "ABC"[i % 3]))
        group = "cg-apache-tags"
        consumer = push_consumer(apache.namesrv_addr, group, topic, got, expression="TagA || TagC")
        try:
            wait_until(lambda: got.count() >= 40, f"40 TagA/TagC messages (have {got.count()})")
            time.sleep(0.5)
            msgs = got.snapshot()
            assert sorted(int(m.body) for m in msgs) == [i for i in range(60) if i % 3 != 1]
            assert sorted(m.tags or "" for m in msgs) == ["TagA"] * 20 + ["TagC"] * 20

            # The client filters by tag string too, so prove the broker did: PULL_MESSAGE
            # without a subscription makes the Apache broker use the one our heartbeat
            # registered (subString, tagsSet and the codeSet of String.hashCode values).
            client = RemotingClient()
            try:
                tags: list[str] = []
                for mq in queues(topic):
                    resp = client.invoke(
                        apache.broker_addr,
                        RequestCode.PULL_MESSAGE,
                        {
                            "consumerGroup": group,
                            "topic": topic,
                            "queueId": str(mq.queue_id),
                            "queueOffset": "0",
                            "maxMsgNums": "32",
                            "sysFlag": "0",
                            "commitOffset": "0",
                            "suspendTimeoutMillis": "0",
                            "subVersion": "0",
                            "expressionType": "TAG",
                        },
                    )
                    assert resp.code == 0, (
                        f"raw PULL_MESSAGE with group {group}'s registered subscription, "
                        f"{mq}: {resp.code} {resp.remark}"
                    )
                    tags += [m.tags or "" for m in decode_messages(resp.body or b"")]
            finally:
                client.close()
            assert sorted(tags) == ["TagA"] * 20 + ["TagC"] * 20, (
                f"the broker filtered with our heartbeat's subscription to {sorted(tags)}"
            )
        finally:
            consumer.shutdown()


def test_pull_consumer_commits_to_the_apache_broker(apache: ApacheRocketMQ) -> None:
    topic = "ApacheLite"
    group = "cg-apache-lite"
    with explained(apache):
        with rmq.Producer("pg-apache-lite", apache.namesrv_addr) as producer:
            for i in range(40):
                producer.send(rmq.Message(topic, b"%d" % i))
        with rmq.PullConsumer(
            group,
            apache.namesrv_addr,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            auto_commit=False,
        ) as c:
            c.subscribe(topic)
            got: list[StoredMessage] = []
            while len(got) < 40:
                batch = c.poll(5000)
                assert batch, f"poll returned nothing after {len(got)} messages"
                got.extend(batch)
            assert sorted(int(m.body) for m in got) == list(range(40))
            assignment = c.assignment()
            assert assignment == queues(topic), assignment
            ends = {
                mq: 1 + max(m.queue_offset for m in got if m.queue_id == mq.queue_id)
                for mq in assignment
            }
            assert sum(ends.values()) == 40

            c.commit()
            for mq in assignment:
                assert c.committed(mq) == ends[mq], mq
                assert committed_on_broker(apache, group, mq) == ends[mq], mq

            first = assignment[0]
            c.seek(first, 1)
            again = c.poll(5000)
            assert again and again[0].queue_id == first.queue_id and again[0].queue_offset == 1
            c.commit({first: 1})
            assert c.committed(first) == 1
            assert committed_on_broker(apache, group, first) == 1

        # A new consumer of the group starts where the broker says: only `first` from 1 on.
        with rmq.PullConsumer(group, apache.namesrv_addr, auto_commit=False) as c2:
            c2.subscribe(topic)
            rest: list[StoredMessage] = []
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and len(rest) < ends[first] - 1:
                rest.extend(c2.poll(500))
            time.sleep(0.2)
            rest.extend(c2.poll(300))
            assert sorted(m.queue_offset for m in rest) == list(range(1, ends[first]))
            assert {m.queue_id for m in rest} == {first.queue_id}


def test_orderly_consumers_hold_the_apache_brokers_queue_locks(apache: ApacheRocketMQ) -> None:
    topic = "ApacheOrdered"
    group = "cg-apache-order"
    seen: dict[str, list[int]] = defaultdict(list)
    queue_of: dict[str, set[int]] = defaultdict(set)
    lock = threading.Lock()

    def orderly(msgs: list[StoredMessage]) -> None:
        with lock:
            for m in msgs:
                key, seq = m.body.decode().split(":")
                seen[key].append(int(seq))
                queue_of[key].add(m.queue_id)

    with explained(apache):
        create_topic(apache, topic)
        consumers = []
        try:
            for i in range(2):
                c = rmq.PushConsumer(
                    group,
                    apache.namesrv_addr,
                    instance_name=f"order-{i}",
                    consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                    **FAST,  # type: ignore[arg-type]
                )
                c.subscribe(topic)
                c.register_message_listener_orderly(orderly)
                consumers.append(c.start())
            wait_until(
                lambda: sorted(len(c.assignment()) for c in consumers) == [2, 2],
                "the 4 queues split 2/2 between the two orderly consumers",
            )
            with rmq.Producer("pg-apache-order", apache.namesrv_addr) as producer:

                def produce(thread: int) -> None:
                    for seq in range(50):
                        for key in (f"t{thread}-k{j}" for j in range(3)):
                            msg = rmq.Message(topic, f"{key}:{seq}")
                            msg.sharding_key = key
                            producer.send(msg, select_by_sharding_key)

                threads = [threading.Thread(target=produce, args=(t,)) for t in range(2)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()

            def total() -> int:
                with lock:
                    return sum(len(v) for v in seen.values())

            wait_until(lambda: total() >= 300, f"300 ordered messages (have {total()})")
            with lock:
                for key, seqs in seen.items():
                    assert seqs == list(range(50)), f"{key} out of order or repeated: {seqs}"
                    assert len(queue_of[key]) == 1, f"{key} spread over queues {queue_of[key]}"
            # Every queue is locked on the Apache broker by one of our consumers...
            granted = lock_as_stranger(apache, group, queues(topic))
            assert not granted, f"queues {granted} of {topic} were not locked by our consumers"
        finally:
            for c in consumers:
                c.shutdown()
        # ...and shutdown released the locks (UNLOCK_BATCH_MQ), so anyone may take them now.
        assert lock_as_stranger(apache, group, queues(topic)) == {0, 1, 2, 3}


def test_offsets_stored_on_the_apache_broker_survive_a_consumer_restart(
    apache: ApacheRocketMQ,
) -> None:
    topic = "ApacheRestart"
    group = "cg-apache-restart"
    with explained(apache), rmq.Producer("pg-apache-restart", apache.namesrv_addr) as producer:
        for i in range(30):
            producer.send(rmq.Message(topic, b"first-%d" % i))
        first = Collector()
        consumer = push_consumer(apache.namesrv_addr, group, topic, first)
        try:
            wait_until(lambda: first.count() >= 30, f"the first 30 (have {first.count()})")
        finally:
            consumer.shutdown()
        assert sorted(m.body for m in first.snapshot()) == sorted(
            b"first-%d" % i for i in range(30)
        )

        # shutdown() sent UPDATE_CONSUMER_OFFSET (oneway) per queue: the broker has them all.
        def stored_total() -> int:
            return sum(committed_on_broker(apache, group, mq) or 0 for mq in queues(topic))

        wait_until(lambda: stored_total() == 30, f"offsets summing to 30 (have {stored_total()})")

        for i in range(30):
            producer.send(rmq.Message(topic, b"second-%d" % i))
        second = Collector()
        consumer = push_consumer(apache.namesrv_addr, group, topic, second)
        try:
            wait_until(lambda: second.count() >= 30, f"the second 30 (have {second.count()})")
            time.sleep(0.5)
        finally:
            consumer.shutdown()
        assert sorted(m.body for m in second.snapshot()) == sorted(
            b"second-%d" % i for i in range(30)
        )


def test_a_failed_message_comes_back_through_the_apache_brokers_retry_topic(
    apache: ApacheRocketMQ,
) -> None:
    """SPEC §5: a message the listener fails goes back to the broker (CONSUMER_SEND_MSG_BACK,
    delay level 3 + reconsume count) and returns from ``%RETRY%<group>``, which a clustering
    consumer subscribes to as well, with ``reconsume_times`` 1 and its original topic and id.
    (The test broker's delay levels are all 1 s.)"""
    topic = "ApacheRetry"
    group = "cg-apache-retry"
    retry_topic = f"%RETRY%{group}"
    lock = threading.Lock()
    deliveries: list[StoredMessage] = []

    def listener(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
        with lock:
            deliveries.extend(msgs)
        if any(m.body == b"fail-once" and m.reconsume_times == 0 for m in msgs):
            return rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER
        return rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS

    def attempts() -> list[tuple[int, str]]:
        with lock:
            return [(m.reconsume_times, m.topic) for m in deliveries if m.body == b"fail-once"]

    def retry_topic_max_offset() -> int | str:
        client = RemotingClient()
        try:
            resp = client.invoke(
                apache.broker_addr,
                RequestCode.GET_MAX_OFFSET,
                {"topic": retry_topic, "queueId": "0"},
            )
        finally:
            client.close()
        return int(resp.ext_fields["offset"]) if resp.code == 0 else f"{resp.code} {resp.remark}"

    with explained(apache):
        with rmq.Producer("pg-apache-retry", apache.namesrv_addr) as producer:
            sent = producer.send(rmq.Message(topic, b"fail-once", tags="TagA"))
            producer.send(rmq.Message(topic, b"fine", tags="TagA"))
        consumer = push_consumer(apache.namesrv_addr, group, topic, listener)
        try:
            try:
                wait_until(
                    lambda: any(times >= 1 for times, _ in attempts()),
                    "the failed message to come back with reconsume_times 1",
                    timeout=10.0,
                )
            except AssertionError as e:
                raise AssertionError(
                    f"{e}. Deliveries of the failed message (reconsume_times, topic): "
                    f"{attempts()}; {retry_topic} queue 0 max offset on the Apache broker: "
                    f"{retry_topic_max_offset()} (0 or TOPIC_NOT_EXIST: the client never sent "
                    "CONSUMER_SEND_MSG_BACK (36) for it; SPEC §5, RocketMQ's "
                    "ConsumeMessageConcurrentlyService.sendMessageBack)"
                ) from e
            with lock:
                again = [m for m in deliveries if m.body == b"fail-once" and m.reconsume_times]
            assert again[0].reconsume_times == 1, again[0]
            assert again[0].topic == topic, f"topic {again[0].topic!r}: RETRY_TOPIC not restored"
            assert again[0].msg_id == sent.msg_id, (again[0].msg_id, sent.msg_id)
            assert retry_topic_max_offset() == 1
        finally:
            consumer.shutdown()


def test_transactions_against_the_apache_broker(apache: ApacheRocketMQ) -> None:
    """SPEC §5: a committed transaction is delivered, a rolled-back one never; an unknown one
    is checked by the Apache broker (CHECK_TRANSACTION_STATE with the half message as body),
    answered from the check thread pool, and delivered after the answer. (The test broker
    checks every second for halves older than a second.)"""
    topic = "ApacheTx"
    outcome = {
        "commit": rmq.LocalTransactionState.COMMIT_MESSAGE,
        "rollback": rmq.LocalTransactionState.ROLLBACK_MESSAGE,
        "unknown": rmq.LocalTransactionState.UNKNOW,
    }
    lock = threading.Lock()
    checked: list[StoredMessage] = []

    def check(msg: StoredMessage) -> rmq.LocalTransactionState:
        with lock:
            checked.append(msg)
        return rmq.LocalTransactionState.COMMIT_MESSAGE

    got = Collector()
    with explained(apache):
        create_topic(apache, topic)
        consumer = push_consumer(apache.namesrv_addr, "cg-apache-tx", topic, got)
        producer = rmq.TransactionProducer(
            "pg-apache-tx",
            apache.namesrv_addr,
            execute_local_transaction=lambda msg, arg: outcome[arg],
            check_local_transaction=check,
        ).start()
        try:
            sent = {
                arg: producer.send_message_in_transaction(
                    rmq.Message(topic, arg.encode(), tags="TagTx", keys=f"k-{arg}"), arg
                )
                for arg in outcome
            }
            assert all(r.status == "SEND_OK" for r in sent.values())
            wait_until(lambda: got.count() >= 2, "the committed and the checked message")
            time.sleep(2.5)  # more check rounds: nothing else arrives
            by_body = {m.body: m for m in got.snapshot()}
            assert sorted(by_body) == [b"commit", b"unknown"], sorted(by_body)
            assert got.count() == 2
            assert by_body[b"unknown"].msg_id == sent["unknown"].msg_id
            # (The Apache broker stores committed messages with TRAN_MSG, REAL_TOPIC and
            # REAL_QID still in their properties: EndTransactionProcessor clears them after
            # building the properties string. rmq's broker drops them.)
            assert by_body[b"commit"].properties["PGROUP"] == "pg-apache-tx"
            with lock:
                asked = list(checked)
            assert [m.msg_id for m in asked] == [sent["unknown"].msg_id]
            assert (asked[0].topic, asked[0].keys) == (topic, "k-unknown")
            assert asked[0].properties["TRANSACTION_CHECK_TIMES"] == "1"
        finally:
            producer.shutdown()
            consumer.shutdown()


def test_bad_topics_give_clear_errors(apache: ApacheRocketMQ) -> None:
    with explained(apache):
        # The Apache nameserver answers TOPIC_NOT_EXIST; the error names the topic and says
        # what to do.
        with (
            rmq.PullConsumer("cg-apache-bad", apache.namesrv_addr) as c,
            pytest.raises(TopicNotExistError, match="NoSuchApacheTopic") as no_route,
        ):
            c.fetch_message_queues("NoSuchApacheTopic")
        assert "No topic route info in name server" in str(no_route.value)

        with rmq.Producer("pg-apache-bad", apache.namesrv_addr) as producer:
            # The Apache broker refuses system topics with NO_PERMISSION and its own remark.
            with pytest.raises(NoPermissionError) as forbidden:
                producer.send(rmq.Message("SCHEDULE_TOPIC_XXXX", b"x"))
            assert forbidden.value.code == 16
            assert "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden" in str(
                forbidden.value
            )
            # Names RocketMQ's Validators reject never reach the broker.
            with pytest.raises(MessageIllegalError, match="contains ' '"):
                producer.send(rmq.Message("bad topic", b"x"))
            with pytest.raises(MessageIllegalError, match="the most is 127"):
                producer.send(rmq.Message("T" * 128, b"x"))
            with pytest.raises(MessageIllegalError, match="TBW102"):
                producer.send(rmq.Message("TBW102", b"x"))
