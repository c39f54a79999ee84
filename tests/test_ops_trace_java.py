"""Message trace across rmq and Apache RocketMQ 4.9.7's Java code (from Maven Central), both
ways, against an rmq broker with ``traceTopicEnable = true``:

* what rmq's SDK traces (a Pub, and a consumer group's SubBefore/SubAfter) is decoded by
  Apache's ``mqadmin queryMsgTraceById``;
* what Java's ``DefaultMQProducer(group, true)`` and ``DefaultMQPushConsumer(group, true)``
  trace (tests/compat/java/trace/TraceCheck.java) is decoded by ``rmq.trace.query_trace`` and
  printed by ``rmq queryMsgTraceById``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import Collector, create_topic, push_consumer, wait_until
from rmq._rmq import TRACE_TOPIC
from rmq.admin import main
from rmq.admin.client import Admin
from rmq.trace import ConsumeReturnType, TraceType, query_trace
from test_ops_trace import _broker, _routed

sys.path.insert(0, str(Path(__file__).parent / "compat" / "mqadmin"))
from mqadmin import MQAdmin, java_executable, resolve_classpath

TRACE_CHECK = Path(__file__).parent / "compat" / "java" / "trace" / "TraceCheck.java"
MQADMIN_PROJECT = Path(__file__).parent / "compat" / "mqadmin"


@pytest.fixture(scope="module")
def cluster(
    tmp_path_factory: pytest.TempPathFactory,
    module_namesrv: tuple[subprocess.Popen[str], str],
) -> Iterator[str]:
    """A nameserver and a broker with the trace topic; yields the nameserver address."""
    _, ns_addr = module_namesrv
    work = tmp_path_factory.mktemp("trace-java")
    broker, _ = _broker(work, ns_addr, "traceTopicEnable = true\n")
    try:
        with Admin(ns_addr) as admin:
            wait_until(lambda: _routed(admin, TRACE_TOPIC), "the trace topic's route")
        yield ns_addr
    finally:
        broker.kill()


def test_apache_mqadmin_reads_what_rmq_traced(tmp_path: Path, cluster: str) -> None:
    ns_addr = cluster
    topic, group, cgroup = "TraceJavaA", "rmq-trace-pg", "rmq-trace-cg"
    with Admin(ns_addr) as admin:
        addrs = [b.select_addr() or "" for b in admin.cluster_info().brokers_of("TraceCluster")]
    create_topic(ns_addr, addrs, topic, 1)
    with rmq.Producer(group, ns_addr, enable_msg_trace=True) as producer:
        sent = producer.send(rmq.Message(topic, b"to java", tags="T", keys="k-java"))
    got = Collector()
    consumer = push_consumer(ns_addr, cgroup, topic, got, enable_msg_trace=True)
    try:
        wait_until(lambda: got.count() == 1, "the message consumed")
    finally:
        consumer.shutdown()

    def all_indexed() -> bool:
        with Admin(ns_addr) as admin:
            return len(query_trace(admin, sent.msg_id)) == 3

    wait_until(all_indexed, "Pub, SubBefore and SubAfter indexed")
    with MQAdmin(tmp_path / "mqadmin", ns_addr) as mqadmin:
        out = mqadmin.run("queryMsgTraceById", "-i", sent.msg_id)
    assert not out.failed, out.output
    lines = [line.split() for line in out.output.splitlines() if line.strip()]
    assert lines[0] == [
        "#Type",
        "#ProducerGroup",
        "#ClientHost",
        "#SendTime",
        "#CostTimes",
        "#Status",
    ], out.output
    pub = lines[1]
    assert (pub[0], pub[1], pub[-1]) == ("Pub", group, "success"), out.output
    subs = [line for line in lines if line[0] == "Sub"]
    assert [(s[1], s[-1]) for s in subs] == [(cgroup, "success")], out.output


def test_rmq_reads_what_a_java_producer_and_consumer_traced(
    tmp_path: Path, cluster: str, capsys: pytest.CaptureFixture[str]
) -> None:
    ns_addr = cluster
    topic, group, cgroup = "TraceJavaB", "java-trace-pg", "java-trace-cg"
    with Admin(ns_addr) as admin:
        addrs = [b.select_addr() or "" for b in admin.cluster_info().brokers_of("TraceCluster")]
    create_topic(ns_addr, addrs, topic, 1)
    done = subprocess.run(
        [
            java_executable(),
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Djava.net.preferIPv4Stack=true",
            f"-Duser.home={tmp_path}",
            "-cp",
            resolve_classpath(MQADMIN_PROJECT),
            str(TRACE_CHECK),
            ns_addr,
            topic,
            group,
            cgroup,
            "java-key",
        ],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "JAVA_TOOL_OPTIONS"},
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    # The client's shutdown logs to stdout too: the answer is the JSON line.
    (answer,) = [line for line in done.stdout.splitlines() if line.startswith('{"msgId"')]
    ids = json.loads(answer)
    with Admin(ns_addr) as admin:
        records = query_trace(admin, ids["msgId"])
    assert [r.trace_type for r in records] == [
        TraceType.Pub,
        TraceType.SubBefore,
        TraceType.SubAfter,
    ]
    pub, before, after = records
    assert pub.group_name == group and pub.success
    assert before.group_name == cgroup and before.bean.retry_times == 0
    assert (after.group_name, after.success, after.request_id) == (cgroup, True, before.request_id)
    assert after.context_code == ConsumeReturnType.SUCCESS
    assert (pub.bean.topic, pub.bean.tags, pub.bean.keys) == (topic, "TagTrace", "java-key")
    assert pub.bean.offset_msg_id == ids["offsetMsgId"]
    assert pub.bean.body_length == len(b"traced by java")
    code = main(["-n", ns_addr, "queryMsgTraceById", "-i", ids["msgId"]])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[1].split()[:2] == ["Pub", group] and out[1].split()[-1] == "success", out
    subs = [line.split() for line in out if line.startswith("Sub ")]
    assert [(s[1], s[-1]) for s in subs] == [(cgroup, "success")], out
