"""The broker's answers to QUERY_TOPICS_BY_CONSUMER, GET_TOPIC_CONFIG,
GET_SUBSCRIPTIONGROUP_CONFIG and QUERY_CONSUME_TIME_SPAN, and the calls it relays to a Python
push consumer (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY), with the admin
sub-commands on them (``consumerStatus``, ``getConsumerConfig``); a real namesrv and broker."""

from __future__ import annotations

import collections
import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import rmq
from helpers import wait_until
from rmq import fastjson
from rmq._rmq import RemotingClient, StoredMessage
from rmq.admin import main
from rmq.codes import RequestCode, ResponseCode

pytestmark = pytest.mark.timeout(180)

TOPIC = "OpsCodesTopic"
GROUP = "OpsCodesGroup"
IDLE = "OpsCodesIdleGroup"
N = 8


class Running:
    """A started producer (``N`` messages sent to ``TOPIC``) and push consumer of ``GROUP``
    that records what its listener gets."""

    def __init__(self, namesrv: str) -> None:
        self.got: list[StoredMessage] = []
        self.threads: list[str] = []
        self.lock = threading.Lock()
        self.producer = rmq.Producer("OpsCodesProducer", namesrv).start()
        self.sent = [self.producer.send(rmq.Message(TOPIC, f"m{i}".encode())) for i in range(N)]
        self.consumer = rmq.PushConsumer(
            GROUP,
            namesrv,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            persist_consumer_offset_interval=200,
        )
        self.consumer.subscribe(TOPIC, "*")
        self.consumer.register_message_listener_concurrently(self.listen)
        self.consumer.start()

    def listen(self, msgs: list[StoredMessage]) -> None:
        with self.lock:
            self.got.extend(msgs)
            self.threads.append(threading.current_thread().name)

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [m.body for m in self.got]


@pytest.fixture
def running(rmq_cluster: tuple[str, str]) -> Iterator[Running]:
    r = Running(rmq_cluster[0])
    per_queue = collections.Counter(s.queue.queue_id for s in r.sent)

    def committed(queue_id: int) -> int:
        ext = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": str(queue_id)}
        resp = call(rmq_cluster[1], RequestCode.QUERY_CONSUMER_OFFSET, ext)
        return int(resp.ext_fields.get("offset", -1))

    try:
        wait_until(lambda: len(r.bodies()) >= N, "the consumer to get every message")
        wait_until(
            lambda: all(committed(q) == n for q, n in per_queue.items()),
            "the group's offsets to be committed on the broker",
        )
        yield r
    finally:
        r.consumer.shutdown()
        r.producer.shutdown()


def call(broker: str, code: int, ext: dict[str, str]) -> Any:
    r = RemotingClient().invoke(broker, code, ext)
    return r


def test_topic_and_group_config_lookups(rmq_cluster: tuple[str, str], running: Running) -> None:
    _, broker = rmq_cluster
    r = call(broker, RequestCode.GET_TOPIC_CONFIG, {"topic": TOPIC})
    assert r.code == ResponseCode.SUCCESS
    config = json.loads(r.body)
    assert config["topicName"] == TOPIC and config["perm"] == 6
    assert config["readQueueNums"] == config["writeQueueNums"] > 0
    r = call(broker, RequestCode.GET_TOPIC_CONFIG, {"topic": "NoSuchTopic"})
    assert r.code == ResponseCode.TOPIC_NOT_EXIST
    assert r.remark == "No topic in this broker. topic: NoSuchTopic"
    assert call(broker, RequestCode.GET_TOPIC_CONFIG, {}).code == ResponseCode.SYSTEM_ERROR

    r = call(broker, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": GROUP})
    assert r.code == ResponseCode.SUCCESS
    group = json.loads(r.body)
    assert group["groupName"] == GROUP and group["consumeEnable"] is True
    r = call(broker, RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": "NoSuchGroup"})
    assert r.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert "No group in this broker" in (r.remark or "")

    r = call(broker, RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": GROUP})
    body = json.loads(r.body)
    assert TOPIC in body["topicList"] and body["brokerAddr"] == broker
    r = call(broker, RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": "NoSuchGroup"})
    assert json.loads(r.body)["topicList"] == []


def spans(broker: str, group: str) -> list[dict[str, Any]]:
    r = call(broker, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": TOPIC, "group": group})
    assert r.code == ResponseCode.SUCCESS, r.remark
    out: list[dict[str, Any]] = fastjson.loads(r.body)["consumeTimeSpanSet"]
    return out


def test_consume_time_span(rmq_cluster: tuple[str, str], running: Running) -> None:
    _, broker = rmq_cluster
    with_msgs = {s.queue.queue_id for s in running.sent}
    # A group that consumed nothing: the next message has waited since it was stored.
    idle = spans(broker, IDLE)
    assert {s["messageQueue"]["queueId"] for s in idle} == set(range(len(idle)))
    for s in idle:
        assert s["messageQueue"]["topic"] == TOPIC
        assert s["messageQueue"]["brokerName"] == "broker-a"
        if s["messageQueue"]["queueId"] in with_msgs:
            assert 0 < s["minTimeStamp"] <= s["maxTimeStamp"]
            assert s["consumeTimeStamp"] == s["minTimeStamp"]
            assert s["delayTime"] > 0
        else:
            assert s["minTimeStamp"] == s["maxTimeStamp"] == -1 and s["delayTime"] == 0

    # The running group has committed every message: caught up everywhere.
    for s in spans(broker, GROUP):
        if s["messageQueue"]["queueId"] in with_msgs:
            assert s["delayTime"] == 0 and s["consumeTimeStamp"] == s["maxTimeStamp"] > 0
    r = call(broker, RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "NoSuch", "group": GROUP})
    assert r.code == ResponseCode.TOPIC_NOT_EXIST and r.remark == "topic[NoSuch] not exist"


def admin(capsys: pytest.CaptureFixture[str], namesrv: str, *argv: str) -> str:
    capsys.readouterr()
    assert main(["-n", namesrv, *argv]) == 0
    return capsys.readouterr().out


def test_consumer_status_shows_subscription_and_queues(
    rmq_cluster: tuple[str, str], running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    namesrv, _ = rmq_cluster
    client_id = running.consumer._instance.client_id
    data = json.loads(admin(capsys, namesrv, "--json", "consumerStatus", "-g", GROUP))
    info = data[client_id]
    props = info["properties"]
    assert props["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert props["PROP_NAMESERVER_ADDR"] == namesrv
    assert int(props["PROP_CONSUMER_START_TIMESTAMP"]) == running.consumer.start_timestamp_ms
    assert props["PROP_THREADPOOL_CORE_SIZE"] == "20"
    assert props["PROP_CLIENT_VERSION"].startswith("rmq-python")
    topics = {s["topic"]: s["subString"] for s in info["subscriptionSet"]}
    assert topics == {TOPIC: "*", f"%RETRY%{GROUP}": "*"}
    per_queue = collections.Counter(r.queue.queue_id for r in running.sent)
    held = {
        mq.queue_id: pq
        for k, pq in info["mqTable"].items()
        if (mq := fastjson.message_queue_key(k)).topic == TOPIC
    }
    assert set(per_queue) <= set(held)
    for queue_id, pq in held.items():
        assert pq["commitOffset"] == per_queue.get(queue_id, 0)
        assert pq["cachedMsgCount"] == 0 and pq["droped"] is False
        assert pq["lastPullTimestamp"] >= running.consumer.start_timestamp_ms
        if queue_id in per_queue:
            assert pq["lastConsumeTimestamp"] >= running.consumer.start_timestamp_ms
    assert set(info["statusTable"]) == set(topics)
    assert "jstack" not in info

    text = admin(capsys, namesrv, "consumerStatus", "-g", GROUP, "-i", client_id, "-s")
    assert "#Consumer Properties#" in text and "#Consumer jstack#" in text
    assert re.search(rf"00[12] Topic: {TOPIC}\s+ClassFilter: false\s+SubExpression: \*", text)
    section = text.split("#Consumer Offset#")[1].split("#Consumer MQ Detail#")[0]
    rows = [line.split() for line in section.splitlines()]
    offsets = {int(r[2]): int(r[3]) for r in rows if r and r[0] == TOPIC}
    assert offsets == {q: per_queue.get(q, 0) for q in held}

    every = admin(capsys, namesrv, "consumerStatus", "-g", GROUP)
    assert re.search(rf"^1\s+{re.escape(client_id)}\s", every, re.M)
    assert "Same subscription in the same group of consumer" in every
    assert "Rebalance OK" in every and "#Consumer Offset#" in every

    capsys.readouterr()
    assert main(["-n", namesrv, "consumerStatus", "-g", GROUP, "-i", "no-such-client"]) != 0
    assert "not online" in capsys.readouterr().err


def test_consume_message_directly_reaches_the_listener(
    rmq_cluster: tuple[str, str], running: Running
) -> None:
    _, broker = rmq_cluster
    target = running.sent[3]
    before = running.bodies().count(b"m3")
    ext = {
        "consumerGroup": GROUP,
        "clientId": running.consumer._instance.client_id,
        "msgId": target.offset_msg_id,
    }
    r = call(broker, RequestCode.CONSUME_MESSAGE_DIRECTLY, ext)
    assert r.code == ResponseCode.SUCCESS, r.remark
    result = json.loads(r.body)
    assert result["consumeResult"] == "CR_SUCCESS"
    assert result["order"] is False and result["autoCommit"] is True
    assert running.bodies().count(b"m3") == before + 1
    # On the consume pool, as any batch (not on the client's callback thread, which a
    # listener waiting for a send callback would then block).
    assert running.threads[-1].startswith(f"rmq-consume-{GROUP}")

    def raising(msgs: list[StoredMessage]) -> None:
        raise RuntimeError(f"cannot take {msgs[0].body!r}")

    def later(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
        return rmq.ConsumeConcurrentlyStatus.RECONSUME_LATER

    running.consumer.register_message_listener_concurrently(raising)  # type: ignore[arg-type]
    result = json.loads(call(broker, RequestCode.CONSUME_MESSAGE_DIRECTLY, ext).body)
    assert result["consumeResult"] == "CR_THROW_EXCEPTION"
    assert "RuntimeError: cannot take b'm3'" in result["remark"]
    running.consumer.register_message_listener_concurrently(later)
    result = json.loads(call(broker, RequestCode.CONSUME_MESSAGE_DIRECTLY, ext).body)
    assert result["consumeResult"] == "CR_LATER"


def test_get_consumer_config(
    rmq_cluster: tuple[str, str], running: Running, capsys: pytest.CaptureFixture[str]
) -> None:
    namesrv, _ = rmq_cluster
    lines = admin(capsys, namesrv, "getConsumerConfig", "-g", GROUP).splitlines()
    assert lines[0] == "=" * 29 + "DefaultCluster:broker-a" + "=" * 29
    assert re.fullmatch(rf"groupName\s+=  {GROUP}", lines[1])
    assert re.fullmatch(r"retryMaxTimes\s+=  16", lines[6])
    assert admin(capsys, namesrv, "getConsumerConfig", "-g", "NoSuchGroup").strip() == ""


def test_a_pull_consumer_refuses_running_info_saying_why(rmq_cluster: tuple[str, str]) -> None:
    namesrv, broker = rmq_cluster
    producer = rmq.Producer("OpsCodesPullProducer", namesrv).start()
    producer.send(rmq.Message(TOPIC, b"x"))  # the topic's route leads the heartbeat there
    producer.shutdown()
    consumer = rmq.PullConsumer("OpsCodesPullGroup", namesrv)
    consumer.subscribe(TOPIC)
    with consumer:
        ext = {"consumerGroup": "OpsCodesPullGroup", "clientId": consumer._instance.client_id}
        # Its heartbeat at start went nowhere (no route yet); send one now, not in 30 s.
        consumer._instance.fetch_subscribe_queues(TOPIC)
        consumer._instance.send_heartbeat()
        answers: list[Any] = []

        def relayed() -> bool:
            answers.append(call(broker, RequestCode.GET_CONSUMER_RUNNING_INFO, ext))
            return "not online" not in (answers[-1].remark or "")

        wait_until(relayed, "the pull consumer to register with the broker")
        r = answers[-1]
        assert r.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        assert "push consumers only" in r.remark and "PullConsumer" in r.remark
