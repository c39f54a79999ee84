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
