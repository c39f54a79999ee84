"""Message trace (issue 16 item 6) with real processes: a broker with ``traceTopicEnable``
creates ``RMQ_SYS_TRACE_TOPIC``; a traced producer and consumer write Pub, SubBefore and
SubAfter records (and a transactional producer an EndTransaction) that ``rmq.trace.query_trace``
and ``rmq queryMsgTraceById`` read back; untraced clients write nothing; a full trace queue
drops records instead of blocking sends. The record format itself is checked against text
written as RocketMQ 4.9.7's ``TraceDataEncoder`` writes it."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    Collector,
    create_topic,
    free_port,
    push_consumer,
    wait_until,
)
from rmq._rmq import TRACE_TOPIC, RemotingClient, decode_messages
from rmq.admin import main
from rmq.admin.client import Admin
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import RmqError
from rmq.trace import (
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    decode,
    encode,
    query_trace,
)
from rmq.trace import dispatcher as dispatcher_module
from rmq.trace.data import transfer_keys

C1, C2 = "\x01", "\x02"


def _broker(work: Path, ns_addr: str, extra: str) -> tuple[BrokerProcess, str]:
    port = free_port()
    conf = work / "broker.conf"
    conf.write_text(
        "brokerClusterName = TraceCluster\n"
        "brokerName = broker-trace\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {work / 'store'}\n"
        "mappedFileSizeCommitLog = 16777216\n"
        f"messageDelayLevel = {' '.join(['1s'] * 18)}\n" + extra + TEST_STORE_CONF
    )
    broker = BrokerProcess("-c", str(conf), "-n", ns_addr, cwd=work)
    broker.wait_for("listening on")
    return broker, f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory,
    module_namesrv: tuple[subprocess.Popen[str], str],
) -> Iterator[tuple[str, str]]:
    """A nameserver and a broker with ``traceTopicEnable = true``."""
    _, ns_addr = module_namesrv
    broker, addr = _broker(
        tmp_path_factory.mktemp("trace"),
        ns_addr,
        # Quick transaction checks for the EndTransaction-from-a-check test.
        "traceTopicEnable = true\ntransactionCheckInterval = 1000\ntransactionTimeOut = 1000\n",
    )
    try:
        with Admin(ns_addr) as admin:
            wait_until(lambda: _routed(admin, TRACE_TOPIC), "the trace topic's route")
        yield ns_addr, addr
    finally:
        broker.kill()


def _routed(admin: Admin, topic: str) -> bool:
    try:
        return bool(admin.route(topic).queue_datas)
    except RmqError:
        return False


def _trace_max_offset(addr: str) -> int:
    client = RemotingClient()
    try:
        r = client.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": TRACE_TOPIC, "queueId": "0"})
        assert r.code == ResponseCode.SUCCESS, r.remark
        return int(r.ext_fields["offset"])
    finally:
        client.close()


def _records(ns_addr: str, msg_id: str, want: int) -> list[TraceContext]:
    """The message's trace records once ``want`` of them are indexed."""
    found: list[TraceContext] = []

    def enough() -> bool:
        nonlocal found
        with Admin(ns_addr) as admin:
            found = query_trace(admin, msg_id)
        return len(found) >= want

    wait_until(enough, f"{want} trace records of {msg_id}")
    return found


# ---- the format ------------------------------------------------------------------------------


def test_records_decode_from_and_encode_to_rocketmqs_text() -> None:
    # Written field by field as RocketMQ 4.9.7's TraceDataEncoder writes them.
    pub = (
        C1.join(
            [
                "Pub",
                "1700000000000",
                "DefaultRegion",
                "pg",
                "T",
                "MSGID1",
                "TagA",
                "k1 k2",
                "10.0.0.1:10911",
                "5",
                "3",
                "0",
                "0A00000100002A9F0000000000000000",
                "true",
            ]
        )
        + C2
    )
    before = C1.join(["SubBefore", "1700000000100", "null", "cg", "REQ1", "MSGID1", "0", "k1 k2"])
    after = C1.join(
        ["SubAfter", "REQ1", "MSGID1", "7", "false", "k1 k2", "4", "1700000000107", "cg"]
    )
    end = C1.join(
        [
            "EndTransaction",
            "1700000000050",
            "DefaultRegion",
            "pg",
            "T",
            "MSGID1",
            "null",
            "null",
            "10.0.0.1:10911",
            "2",
            "MSGID1",
            "COMMIT_MESSAGE",
            "false",
        ]
    )
    text = pub + before + C2 + after + C2 + end + C2
    records = decode(text)
    assert [r.trace_type for r in records] == list(TraceType)
    p, b, a, e = records
    assert (p.time_stamp, p.region_id, p.group_name, p.cost_time, p.success) == (
        1700000000000,
        "DefaultRegion",
        "pg",
        3,
        True,
    )
    assert p.bean == TraceBean(
        topic="T",
        msg_id="MSGID1",
        offset_msg_id="0A00000100002A9F0000000000000000",
        tags="TagA",
        keys="k1 k2",
        store_host="10.0.0.1:10911",
        body_length=5,
        msg_type=MessageType.Normal_Msg,
    )
    assert (b.group_name, b.request_id, b.region_id, b.bean.msg_id) == (
        "cg",
        "REQ1",
        None,
        "MSGID1",
    )
    assert (a.request_id, a.cost_time, a.success, a.context_code, a.time_stamp, a.group_name) == (
        "REQ1",
        7,
        False,
        ConsumeReturnType.FAILED,
        1700000000107,
        "cg",
    )
    assert (e.bean.transaction_state, e.bean.tags, e.bean.msg_type) == (
        "COMMIT_MESSAGE",
        None,
        MessageType.Trans_msg_Commit,
    )
    # Re-encoding gives RocketMQ's text back, byte for byte.
    b.trace_beans[0].retry_times = 0
    assert "".join(encode(r) for r in records) == text


def test_older_layouts_decode_and_a_malformed_record_is_skipped() -> None:
    old_pub = C1.join(["Pub", "1", "r", "g", "T", "M", "t", "k", "h", "1", "2", "3", "false"])
    old_after = C1.join(["SubAfter", "R", "M", "9", "true", "k"])
    broken = C1.join(["Pub", "notanumber"])
    records = decode(old_pub + C2 + broken + C2 + old_after + C2 + "Unknown" + C1 + "x" + C2)
    assert [r.trace_type for r in records] == [TraceType.Pub, TraceType.SubAfter]
    assert records[0].success is False and records[0].bean.msg_type is MessageType.Delay_Msg
    assert (records[1].cost_time, records[1].success, records[1].context_code) == (9, True, 0)


def test_a_batch_of_consumed_messages_is_one_record_per_message() -> None:
    ctx = TraceContext(TraceType.SubBefore, 5, "r", group_name="g", request_id="R")
    ctx.trace_beans = [TraceBean(msg_id="M1", keys=None), TraceBean(msg_id="M2", keys="a b")]
    text = encode(ctx)
    assert text == (
        C1.join(["SubBefore", "5", "r", "g", "R", "M1", "0", "null"])
        + C2
        + C1.join(["SubBefore", "5", "r", "g", "R", "M2", "0", "a b"])
        + C2
    )
    assert transfer_keys(ctx) == ["M1", "M2", "a", "b"]
    assert [r.bean.msg_id for r in decode(text)] == ["M1", "M2"]


# ---- the broker ------------------------------------------------------------------------------


def test_the_broker_creates_the_trace_topic_only_when_enabled(
    cluster: tuple[str, str], tmp_path: Path
) -> None:
    ns_addr, broker_addr = cluster
    with Admin(ns_addr) as admin:
        (queues,) = admin.route(TRACE_TOPIC).queue_datas
        assert (queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (1, 1, 6)
        config = admin.broker(broker_addr, RequestCode.GET_BROKER_CONFIG, {}).body or b""
    lines = config.decode().splitlines()
    assert "traceTopicEnable=true" in lines and f"msgTraceTopicName={TRACE_TOPIC}" in lines
    # Another broker, trace topic off but a custom name set: no topic of either name.
    custom = "MY_TRACE_TOPIC"
    broker, addr = _broker(tmp_path, ns_addr, f"msgTraceTopicName = {custom}\n")
    try:
        client = RemotingClient()
        try:
            r = client.invoke(addr, RequestCode.GET_ALL_TOPIC_CONFIG, {})
            assert r.code == ResponseCode.SUCCESS
            assert custom.encode() not in (r.body or b"")
            assert TRACE_TOPIC.encode() not in (r.body or b"")
        finally:
            client.close()
    finally:
        broker.kill()


# ---- the SDK ---------------------------------------------------------------------------------


def test_a_traced_send_and_consume_yield_pub_subbefore_and_subafter(
    cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ns_addr, broker_addr = cluster
    topic, group, cgroup = "TraceTopicA", "trace-pg", "trace-cg"
    create_topic(ns_addr, [broker_addr], topic, 1)
    with rmq.Producer(group, ns_addr, enable_msg_trace=True) as producer:
        sent = producer.send(rmq.Message(topic, b"hello", tags="TagT", keys=["kA", "kB"]))
    attempts: list[int] = []
    lock = threading.Lock()

    def listener(msgs: list[rmq.StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
        with lock:
            attempts.append(msgs[0].reconsume_times)
            first = len(attempts) == 1
        # The first delivery fails: it comes back once (delay levels are 1 s here).
        return (
            rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER
            if first
            else rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS
        )

    consumer = push_consumer(ns_addr, cgroup, topic, listener, enable_msg_trace=True)
    try:
        wait_until(lambda: len(attempts) >= 2, "the message and its retry")
    finally:
        consumer.shutdown()
    records = _records(ns_addr, sent.msg_id, 5)
    kinds = [r.trace_type for r in records]
    assert kinds.count(TraceType.Pub) == 1, kinds
    assert kinds.count(TraceType.SubBefore) == 2 and kinds.count(TraceType.SubAfter) == 2, kinds
    assert records[0].trace_type is TraceType.Pub
    pub = records[0]
    assert (pub.group_name, pub.success, pub.region_id) == (group, True, "DefaultRegion")
    assert pub.bean.topic == topic and pub.bean.msg_id == sent.msg_id
    assert pub.bean.offset_msg_id == sent.offset_msg_id
    assert (pub.bean.tags, pub.bean.keys, pub.bean.body_length) == ("TagT", "kA kB", 5)
    assert pub.bean.store_host == broker_addr and pub.bean.msg_type is MessageType.Normal_Msg
    befores = [r for r in records if r.trace_type is TraceType.SubBefore]
    afters = [r for r in records if r.trace_type is TraceType.SubAfter]
    assert sorted(b.bean.retry_times for b in befores) == [0, 1]
    assert all(r.group_name == cgroup and r.bean.msg_id == sent.msg_id for r in befores + afters)
    # Each SubAfter pairs with its SubBefore by request id; the failed one says FAILED.
    by_request = {b.request_id: b for b in befores}
    outcome = sorted(
        (by_request[a.request_id].bean.retry_times, a.success, a.context_code) for a in afters
    )
    assert outcome == [(0, False, ConsumeReturnType.FAILED), (1, True, ConsumeReturnType.SUCCESS)]
    # The offset id finds the Pub too.
    with Admin(ns_addr) as admin:
        by_offset_id = query_trace(admin, sent.offset_msg_id)
    assert [r.trace_type for r in by_offset_id] == [TraceType.Pub]
    # The admin tool prints mqadmin's layout.
    code = main(["-n", ns_addr, "queryMsgTraceById", "-i", sent.msg_id])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].split() == [
        "#Type",
        "#ProducerGroup",
        "#ClientHost",
        "#SendTime",
        "#CostTimes",
        "#Status",
    ]
    assert out[1].split()[:3] == ["Pub", group, "127.0.0.1"] and out[1].endswith("success   ")
    subs = [line.split() for line in out if line.startswith("Sub ")]
    assert [(s[1], s[-1]) for s in subs] == [(cgroup, "failed"), (cgroup, "success")]
    assert "#ConsumerGroup" in "\n".join(out)
    # --json: the records with TraceBean/TraceContext's fields.
    assert main(["-n", ns_addr, "--json", "queryMsgTraceById", "-i", sent.msg_id]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["trace_type"] for r in doc["records"]][:2] == ["Pub", "SubBefore"]
    assert doc["records"][0]["trace_beans"][0]["offset_msg_id"] == sent.offset_msg_id


def test_an_async_send_is_traced_and_a_oneway_send_is_not(cluster: tuple[str, str]) -> None:
    ns_addr, broker_addr = cluster
    topic = "TraceTopicAsync"
    create_topic(ns_addr, [broker_addr], topic, 1)
    with rmq.Producer("trace-async-pg", ns_addr, enable_msg_trace=True) as producer:
        sent = producer.send_async(rmq.Message(topic, b"async", keys="k-oneway")).result(30)
        producer.send_oneway(rmq.Message(topic, b"oneway", keys="k-oneway"))
    (pub,) = _records(ns_addr, sent.msg_id, 1)
    assert (pub.trace_type, pub.group_name, pub.bean.msg_id) == (
        TraceType.Pub,
        "trace-async-pg",
        sent.msg_id,
    )
    # The oneway send had no result to trace: the trace messages indexed under the key the
    # two messages share (both records would have gone out in one batch) hold one Pub.
    with Admin(ns_addr) as admin:
        header = {
            "topic": TRACE_TOPIC,
            "key": "k-oneway",
            "maxNum": "64",
            "beginTimestamp": "0",
            "endTimestamp": str(2**63 - 1),
        }
        resp = admin.broker(broker_addr, RequestCode.QUERY_MESSAGE, header)
    records = [r for m in decode_messages(resp.body or b"") for r in decode(m.body.decode())]
    assert [(r.trace_type, r.bean.msg_id) for r in records] == [(TraceType.Pub, sent.msg_id)]


def test_a_transaction_yields_its_half_pub_and_an_endtransaction(
    cluster: tuple[str, str],
) -> None:
    ns_addr, broker_addr = cluster
    topic = "TraceTopicTx"
    create_topic(ns_addr, [broker_addr], topic, 1)
    with rmq.TransactionProducer(
        "trace-tx",
        ns_addr,
        execute_local_transaction=lambda m, a: rmq.LocalTransactionState.COMMIT_MESSAGE,
        check_local_transaction=lambda m: rmq.LocalTransactionState.COMMIT_MESSAGE,
        enable_msg_trace=True,
    ) as producer:
        result = producer.send_message_in_transaction(rmq.Message(topic, b"tx", keys="order-1"))
    records = _records(ns_addr, result.msg_id, 2)
    assert [r.trace_type for r in records] == [TraceType.Pub, TraceType.EndTransaction]
    pub, end = records
    assert pub.bean.msg_type is MessageType.Trans_Msg_Half
    assert end.group_name == "trace-tx" and end.bean.topic == topic
    assert (end.bean.transaction_state, end.bean.from_transaction_check) == (
        "COMMIT_MESSAGE",
        False,
    )
    assert end.bean.transaction_id == result.transaction_id
    assert end.bean.store_host == broker_addr and end.bean.keys == "order-1"


def test_a_checked_transaction_yields_an_endtransaction_from_the_check(
    cluster: tuple[str, str],
) -> None:
    ns_addr, broker_addr = cluster
    topic = "TraceTopicTxCheck"
    create_topic(ns_addr, [broker_addr], topic, 1)
    checked = threading.Event()

    def check(m: rmq.StoredMessage) -> rmq.LocalTransactionState:
        checked.set()
        return rmq.LocalTransactionState.COMMIT_MESSAGE

    with rmq.TransactionProducer(
        "trace-tx-check",
        ns_addr,
        execute_local_transaction=lambda m, a: rmq.LocalTransactionState.UNKNOW,
        check_local_transaction=check,
        enable_msg_trace=True,
    ) as producer:
        result = producer.send_message_in_transaction(rmq.Message(topic, b"tx"))
        wait_until(checked.is_set, "the broker's transaction check")
    records = _records(ns_addr, result.msg_id, 3)
    ends = [r.bean for r in records if r.trace_type is TraceType.EndTransaction]
    assert [(e.transaction_state, e.from_transaction_check) for e in ends] == [
        ("UNKNOW", False),
        ("COMMIT_MESSAGE", True),
    ]
    assert ends[1].store_host == broker_addr and ends[1].transaction_id == result.msg_id


def test_a_custom_trace_topic_and_an_orderly_consumer_whose_listener_raised(
    cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ns_addr, broker_addr = cluster
    topic, trace_topic = "TraceTopicOrderly", "MY_TRACE_TOPIC"
    create_topic(ns_addr, [broker_addr], topic, 1)
    create_topic(ns_addr, [broker_addr], trace_topic, 1)
    with rmq.Producer(
        "trace-custom-pg", ns_addr, enable_msg_trace=True, custom_trace_topic=trace_topic
    ) as producer:
        sent = producer.send(rmq.Message(topic, b"in order"))
    calls: list[int] = []

    def listener(msgs: list[rmq.StoredMessage]) -> rmq.ConsumeOrderlyStatus:
        calls.append(len(msgs))
        if len(calls) == 1:
            raise RuntimeError("the first call fails")
        return rmq.ConsumeOrderlyStatus.SUCCESS

    consumer = rmq.PushConsumer(
        "trace-orderly-cg",
        ns_addr,
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval_ms=1000,
        suspend_current_queue_time_millis=100,
        enable_msg_trace=True,
        custom_trace_topic=trace_topic,
    )
    consumer.subscribe(topic)
    consumer.register_message_listener_orderly(listener)
    consumer.start()
    try:
        wait_until(lambda: len(calls) >= 2, "the failed call and its retry")
    finally:
        consumer.shutdown()

    def found() -> list[TraceContext]:
        with Admin(ns_addr) as admin:
            return query_trace(admin, sent.msg_id, trace_topic)

    wait_until(lambda: len(found()) >= 5, "Pub and two SubBefore/SubAfter pairs")
    afters = [(r.success, r.context_code) for r in found() if r.trace_type is TraceType.SubAfter]
    assert afters[:2] == [(False, ConsumeReturnType.EXCEPTION), (True, ConsumeReturnType.SUCCESS)]
    # Nothing of it went to the default trace topic; -t finds it.
    with Admin(ns_addr) as admin:
        assert query_trace(admin, sent.msg_id) == []
    assert main(["-n", ns_addr, "queryMsgTraceById", "-i", sent.msg_id, "-t", trace_topic]) == 0
    assert "trace-orderly-cg" in capsys.readouterr().out


def test_without_trace_nothing_reaches_the_trace_topic(cluster: tuple[str, str]) -> None:
    ns_addr, broker_addr = cluster
    topic = "TraceTopicOff"
    create_topic(ns_addr, [broker_addr], topic, 1)
    before = _trace_max_offset(broker_addr)
    got = Collector()
    with rmq.Producer("untraced-pg", ns_addr) as producer:
        sent = [producer.send(rmq.Message(topic, f"m{i}".encode())) for i in range(5)]
    consumer = push_consumer(ns_addr, "untraced-cg", topic, got)
    try:
        wait_until(lambda: got.count() == 5, "5 messages consumed")
    finally:
        consumer.shutdown()
    assert _trace_max_offset(broker_addr) == before
    with Admin(ns_addr) as admin:
        assert query_trace(admin, sent[0].msg_id) == []


def test_a_full_trace_queue_drops_records_and_never_blocks_a_send(
    cluster: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ns_addr, broker_addr = cluster
    topic = "TraceTopicFull"
    create_topic(ns_addr, [broker_addr], topic, 1)
    monkeypatch.setattr(dispatcher_module, "QUEUE_SIZE", 4)
    release = threading.Event()
    original = dispatcher_module.AsyncTraceDispatcher._run

    def stuck_run(self: dispatcher_module.AsyncTraceDispatcher) -> None:
        release.wait()  # the worker takes nothing until released, as if its sends hung
        original(self)

    monkeypatch.setattr(dispatcher_module.AsyncTraceDispatcher, "_run", stuck_run)
    producer = rmq.Producer("trace-full-pg", ns_addr, enable_msg_trace=True).start()
    try:
        results = [producer.send(rmq.Message(topic, f"m{i}".encode())) for i in range(40)]
        # Every send returned while the worker was stuck: the overflow was dropped, counted.
        assert all(r.status == "SEND_OK" for r in results)
        tracer = producer._tracer
        assert tracer is not None
        assert tracer.dispatcher.discarded == 36
    finally:
        release.set()
        producer.shutdown()
    # Shutting down sent the four records the queue held.
    assert [r.trace_type for r in _records(ns_addr, results[3].msg_id, 1)] == [TraceType.Pub]
    with Admin(ns_addr) as admin:
        assert query_trace(admin, results[4].msg_id) == []


def test_query_errors_are_told_plainly(
    cluster: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ns_addr, _ = cluster
    # A trace topic nobody created: the tool names it, without a traceback.
    code = main(["-n", ns_addr, "queryMsgTraceById", "-i", "ABC", "-t", "NO_SUCH_TRACE_TOPIC"])
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err, err
    assert "the trace topic NO_SUCH_TRACE_TOPIC has no route" in err
    assert "traceTopicEnable = true and msgTraceTopicName = NO_SUCH_TRACE_TOPIC" in err
    # A message nothing traced: an empty answer and a warning saying so.
    code = main(["-n", ns_addr, "queryMsgTraceById", "-i", "0A0000000000000000000000000000FF"])
    captured = capsys.readouterr()
    assert code == 0 and captured.out == ""
    assert "no trace record of message 0A0000000000000000000000000000FF" in captured.err
