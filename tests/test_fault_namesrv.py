"""Issue 13's nameserver rows, against real processes: malformed bodies and headers sent to
every request code the nameserver serves get clean error replies (no traceback, the server
keeps serving), and a route claiming 100 000 000 queues costs a client no more than
``MAX_QUEUE_NUMS`` queues per broker.

(The refusal of a REGISTER_BROKER with 100 000 000 queues is asserted in
``test_namesrv.py::test_absurd_or_malformed_registrations_are_refused_and_change_nothing``.)
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq._rmq import (
    MAX_QUEUE_NUMS,
    ClientInstance,
    RemotingClient,
    RemotingRequest,
    RemotingResponse,
    RemotingServer,
)
from rmq.codes import RequestCode, ResponseCode

# Every code python/rmq/namesrv/server.py answers (an unknown one is REQUEST_CODE_NOT_SUPPORTED).
NAMESRV_CODES = [
    RequestCode.REGISTER_BROKER,
    RequestCode.UNREGISTER_BROKER,
    RequestCode.GET_ROUTEINFO_BY_TOPIC,
    RequestCode.GET_BROKER_CLUSTER_INFO,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER,
    RequestCode.ADD_WRITE_PERM_OF_BROKER,
    RequestCode.GET_TOPICS_BY_CLUSTER,
    RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
    RequestCode.GET_UNIT_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
    RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    RequestCode.GET_NAMESRV_CONFIG,
    RequestCode.UPDATE_NAMESRV_CONFIG,
    RequestCode.DELETE_TOPIC_IN_NAMESRV,
    RequestCode.PUT_KV_CONFIG,
    RequestCode.GET_KV_CONFIG,
    RequestCode.DELETE_KV_CONFIG,
    RequestCode.GET_KVLIST_BY_NAMESPACE,
]

# Headers: none, the right keys with wrong-typed or odd values, and keys of other requests.
HEADERS: list[dict[str, str]] = [
    {},
    {
        "brokerName": "b",
        "brokerAddr": "127.0.0.1:1",
        "clusterName": "c",
        "haServerAddr": "",
        "brokerId": "one",
        "compressed": "maybe",
        "bodyCrc32": "x",
        "topic": "",
        "namespace": "",
        "key": "",
        "value": "",
        "cluster": "",
    },
    {
        "brokerName": "\u0000\uffff",
        "brokerAddr": "not an address",
        "clusterName": "c" * 4096,
        "brokerId": "99999999999999999999",
        "topic": "t\u0001\u0002",
        "namespace": "ns",
        "key": "k",
        "value": "v" * 4096,
        "cluster": "c",
    },
]


def _wrapper(table: object, version: object = None) -> bytes:
    dv = {"timestamp": 1, "counter": 1} if version is None else version
    return json.dumps(
        {"topicConfigSerializeWrapper": {"topicConfigTable": table, "dataVersion": dv}}
    ).encode()


# Bodies: not JSON, JSON of every wrong type, objects whose fields have the wrong types.
BODIES: list[bytes | None] = [
    None,
    b"",
    b"garbage",
    b"\xff\xfe\x00\x01",
    b"null",
    b"7",
    b'"text"',
    b"[1, 2]",
    b"{}",
    b"{" * 5000,
    b"[" * 100_000 + b"]" * 100_000,
    b'{"topicConfigSerializeWrapper": 5}',
    b'{"topicConfigSerializeWrapper": {"topicConfigTable": [], "dataVersion": "x"}}',
    b'{"filterServerList": 5, "topicConfigSerializeWrapper": null}',
    _wrapper({"T": {"perm": "rw", "readQueueNums": [], "writeQueueNums": {}}}),
    _wrapper({"T": {"topicName": 5, "readQueueNums": 1.5, "writeQueueNums": -1}}),
    _wrapper({"T": None}),
    _wrapper({}, version={"timestamp": "x", "counter": [1]}),
    _wrapper({}, version=[]),
    b"key=value\nother",
    b"=\n\x00=\x01\nlistenPort=not-a-port\n",
]


@pytest.fixture
def namesrv_with_log(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    """A real nameserver whose stderr goes to a file (read after the requests)."""
    log = tmp_path / "namesrv.stderr"
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rmq.namesrv", "--host", "127.0.0.1", "-p", "0"],
            stderr=err,
            cwd=tmp_path,
        )
    try:
        deadline = time.monotonic() + 20
        addr = None
        while addr is None and time.monotonic() < deadline:
            m = re.search(r"listening on (127\.0\.0\.1:\d+)", log.read_text(errors="replace"))
            addr = m.group(1) if m else None
            time.sleep(0.05)
        assert addr, f"nameserver did not start: {log.read_text(errors='replace')}"
        yield proc, addr, log
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)


def test_malformed_requests_to_every_code_get_clean_errors_and_no_traceback(
    namesrv_with_log: tuple[subprocess.Popen[bytes], str, Path],
) -> None:
    proc, addr, log = namesrv_with_log
    c = RemotingClient()
    answered = 0
    codes: dict[int, int] = {}
    for code in NAMESRV_CODES:
        for header in HEADERS:
            for body in BODIES:
                r = c.invoke(addr, code, header, body, timeout_ms=10_000)
                answered += 1
                codes[r.code] = codes.get(r.code, 0) + 1
                if r.code != ResponseCode.SUCCESS:
                    assert r.remark, (code, header, body, r.code)
    sent = len(NAMESRV_CODES) * len(HEADERS) * len(BODIES)
    assert answered == sent == 1197
    # Only the codes a RocketMQ nameserver answers with: no route / no KV value for the odd
    # names, SYSTEM_ERROR with a remark for what does not parse.
    expected = {
        ResponseCode.SUCCESS,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.QUERY_NOT_FOUND,
    }
    assert set(codes) <= expected, codes
    assert codes.get(ResponseCode.SYSTEM_ERROR, 0) > 0
    assert proc.poll() is None, "the nameserver died"
    # ... and still serves: a broker registers and its topic is routed.
    header = {
        "brokerName": "broker-ok",
        "brokerAddr": "127.0.0.1:30911",
        "clusterName": "DefaultCluster",
        "haServerAddr": "",
        "brokerId": "0",
    }
    r = c.invoke(
        addr,
        RequestCode.REGISTER_BROKER,
        header,
        _wrapper(
            {
                "OkTopic": {
                    "topicName": "OkTopic",
                    "readQueueNums": 2,
                    "writeQueueNums": 2,
                    "perm": 6,
                }
            }
        ),
    )
    assert r.code == ResponseCode.SUCCESS, r.remark
    route = c.invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "OkTopic"})
    assert route.code == ResponseCode.SUCCESS, route.remark
    c.close()
    stderr = log.read_text(errors="replace")
    assert stderr.count("Traceback") == 0, stderr[-4000:]


class _AbsurdRoutes:
    """A fake nameserver: every topic is routed to one broker with 100 000 000 queues, as a
    registration the real nameserver would refuse (or an older one accepted) claims."""

    def handle(self, request: RemotingRequest) -> RemotingResponse:
        if request.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
            return RemotingResponse(ResponseCode.SYSTEM_ERROR, "only routes here")
        route = {
            "brokerDatas": [
                {
                    "brokerAddrs": {"0": "127.0.0.1:1"},
                    "brokerName": "broker-huge",
                    "cluster": "DefaultCluster",
                }
            ],
            "queueDatas": [
                {
                    "brokerName": "broker-huge",
                    "perm": 6,
                    "readQueueNums": 100_000_000,
                    "writeQueueNums": 100_000_000,
                    "topicSysFlag": 0,
                }
            ],
        }
        return RemotingResponse(ResponseCode.SUCCESS, None, {}, json.dumps(route).encode())


def test_a_route_with_100_000_000_queues_costs_a_client_at_most_max_queue_nums() -> None:
    """Before the cap every producer of such a topic allocated until it was killed (19.7 GB)."""
    server = RemotingServer("127.0.0.1", 0, _AbsurdRoutes())
    inst = ClientInstance(server.local_addr)
    try:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        queues = inst.fetch_subscribe_queues("HugeTopic")
        grew_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    finally:
        inst.shutdown()
        server.shutdown()
    assert len(queues) == MAX_QUEUE_NUMS == 65_536
    assert {q.queue_id for q in queues} == set(range(MAX_QUEUE_NUMS))
    assert grew_kib < 256 * 1024, f"fetching the route grew the client by {grew_kib} KiB"
