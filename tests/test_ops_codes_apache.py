"""The admin calls of issue 16 against the real Apache RocketMQ 4.9.7 nameserver and broker
(tests/compat/apache_broker/): the Apache broker relays GET_CONSUMER_RUNNING_INFO and
CONSUME_MESSAGE_DIRECTLY to a Python push consumer, which answers what Java's tools read
(``rmq consumerStatus`` shows it), ``rmq getConsumerConfig`` falls back to the 4.9 broker's
whole group table, and the Apache broker's QUERY_CONSUME_TIME_SPAN carries every field rmq's
answer has. Needs Java 17 and Maven, as tests/test_compat_apache_broker.py."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import Collector, push_consumer, wait_until
from rmq import fastjson
from rmq._rmq import RemotingClient
from rmq.admin import main
from rmq.codes import RequestCode, ResponseCode

sys.path.insert(0, str(Path(__file__).parent / "compat" / "apache_broker"))
from apache_rocketmq import ApacheRocketMQ

pytestmark = pytest.mark.timeout(300)

TOPIC = "ApacheOpsCodes"
GROUP = "cg-apache-ops-codes"


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheRocketMQ]:
    with ApacheRocketMQ(tmp_path_factory.mktemp("apache-ops-codes")) as rocketmq:
        yield rocketmq


def test_python_consumer_answers_the_apache_brokers_relayed_calls(
    apache: ApacheRocketMQ, capsys: pytest.CaptureFixture[str]
) -> None:
    got = Collector()
    with rmq.Producer("pg-apache-ops-codes", apache.namesrv_addr) as producer:
        sent = [producer.send(rmq.Message(TOPIC, b"%d" % i)) for i in range(6)]
    consumer = push_consumer(apache.namesrv_addr, GROUP, TOPIC, got)
    try:
        wait_until(lambda: got.count() >= 6, "the consumer to get every message")
        client_id = consumer.client_instance.client_id
        capsys.readouterr()
        assert main(["-n", apache.namesrv_addr, "--json", "consumerStatus", "-g", GROUP]) == 0
        info = json.loads(capsys.readouterr().out)[client_id]
        assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
        assert TOPIC in {s["topic"] for s in info["subscriptionSet"]}
        assert TOPIC in {fastjson.message_queue_key(k).topic for k in info["mqTable"]}

        ext = {"consumerGroup": GROUP, "clientId": client_id, "msgId": sent[2].offset_msg_id}
        r = RemotingClient().invoke(apache.broker_addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, ext)
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert json.loads(r.body or b"")["consumeResult"] == "CR_SUCCESS"
        wait_until(lambda: got.count() >= 7, "the directly consumed message")

        assert main(["-n", apache.namesrv_addr, "getConsumerConfig", "-g", GROUP]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert re.fullmatch(r"=+DefaultCluster:broker-a=+", lines[0]), lines
        assert re.fullmatch(rf"groupName\s+=  {GROUP}", lines[1]), lines
    finally:
        consumer.shutdown()


def test_apache_consume_time_span_has_rmqs_fields(apache: ApacheRocketMQ) -> None:
    ext = {"topic": TOPIC, "group": GROUP}
    r = RemotingClient().invoke(apache.broker_addr, RequestCode.QUERY_CONSUME_TIME_SPAN, ext)
    assert r.code == ResponseCode.SUCCESS, r.remark
    spans = fastjson.loads(r.body or b"")["consumeTimeSpanSet"]
    ours = {"consumeTimeStamp", "delayTime", "maxTimeStamp", "messageQueue", "minTimeStamp"}
    assert spans and all(ours <= set(s) for s in spans)
    missing = RemotingClient().invoke(
        apache.broker_addr, RequestCode.QUERY_CONSUME_TIME_SPAN, {**ext, "topic": "NoSuch"}
    )
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert missing.remark == "topic[NoSuch] not exist"
