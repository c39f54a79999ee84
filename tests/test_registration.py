"""A broker's registration loop against a real nameserver process."""

from __future__ import annotations

import json
import subprocess
import time

from rmq._rmq import RemotingClient
from rmq.broker.registration import BrokerIdentity, NamesrvRegistrar
from rmq.codes import RequestCode, ResponseCode


def body(topics: list[str]) -> bytes:
    table = {
        t: {"topicName": t, "readQueueNums": 4, "writeQueueNums": 4, "perm": 6} for t in topics
    }
    wrapper = {"topicConfigTable": table, "dataVersion": {"timestamp": 1, "counter": len(topics)}}
    return json.dumps({"topicConfigSerializeWrapper": wrapper, "filterServerList": []}).encode()


def route_code(client: RemotingClient, addr: str, topic: str) -> int:
    return client.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code


def test_register_refresh_and_unregister(
    namesrv: tuple[subprocess.Popen[str], str],
) -> None:
    _, addr = namesrv
    topics = ["TopicA"]
    identity = BrokerIdentity("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912")
    # A second, unreachable nameserver must not stop registration with the first.
    registrar = NamesrvRegistrar(
        RemotingClient(), ["127.0.0.1:1", addr], identity, lambda: body(topics), period_s=0.2
    )
    registrar.start()
    reader = RemotingClient()
    assert route_code(reader, addr, "TopicA") == ResponseCode.SUCCESS
    topics.append("TopicB")
    registrar.trigger()
    deadline = time.monotonic() + 10
    while route_code(reader, addr, "TopicB") != ResponseCode.SUCCESS:
        assert time.monotonic() < deadline, "new topic never reached the nameserver"
        time.sleep(0.05)
    registrar.stop(unregister=True)
    assert route_code(reader, addr, "TopicA") == ResponseCode.TOPIC_NOT_EXIST


def test_trigger_and_wait_returns_after_a_round_with_the_change() -> None:
    """A topic change is registered before the request that made it is answered (RocketMQ's
    synchronous registerBrokerAll): trigger_and_wait returns only once a round that read the
    new topic table has reached the nameserver."""
    import threading

    from rmq._rmq import RemotingResponse

    topics = ["TopicA"]
    sent: list[bytes] = []
    slow = threading.Event()

    class SlowNamesrv:
        def invoke(self, addr, code, ext_fields=None, body=None, timeout_ms=3000):  # type: ignore[no-untyped-def]
            if slow.is_set():
                time.sleep(0.3)  # a nameserver that takes its time
            sent.append(body or b"")
            return RemotingResponse(ResponseCode.SUCCESS)

    identity = BrokerIdentity("DefaultCluster", "broker-a", 0, "127.0.0.1:10911", "127.0.0.1:10912")
    registrar = NamesrvRegistrar(
        SlowNamesrv(), ["ns:9876"], identity, lambda: body(topics), period_s=60
    )
    assert not registrar.trigger_and_wait(1.0)  # not started: nothing to wait for
    registrar.start()
    try:
        slow.set()
        topics.append("TopicB")
        assert registrar.trigger_and_wait(5.0)
        assert b"TopicB" in sent[-1]
    finally:
        registrar.stop(unregister=False)
    assert not registrar.trigger_and_wait(1.0)  # stopped: returns at once


def test_created_topic_is_routable_when_the_broker_answers(rmq_cluster: tuple[str, str]) -> None:
    """UPDATE_AND_CREATE_TOPIC on a real broker, then at once GET_ROUTEINFO_BY_TOPIC at the
    nameserver: the route is there (the Go client's consumer looks it up right away)."""
    ns_addr, broker_addr = rmq_cluster
    client = RemotingClient()
    try:
        # Several in a row, as a client creating its topics does, then every route at once.
        topics = [f"routable_{i}" for i in range(8)]
        for topic in topics:
            header = {
                "topic": topic,
                "defaultTopic": "TBW102",
                "readQueueNums": "4",
                "writeQueueNums": "4",
                "perm": "6",
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": "0",
                "order": "false",
            }
            resp = client.invoke(broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            assert resp.code == ResponseCode.SUCCESS, resp.remark
        codes = {topic: route_code(client, ns_addr, topic) for topic in topics}
        assert codes == dict.fromkeys(topics, ResponseCode.SUCCESS)
    finally:
        client.close()
