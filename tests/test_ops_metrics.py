"""The broker's Prometheus exporter (``metricsExporterType = PROM``): a real broker, messages
sent and consumed with the SDK, ``/metrics`` scraped over HTTP with urllib; bad exporter
settings stop the start with a clear error."""

from __future__ import annotations

import re
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    BrokerProcess,
    Collector,
    create_topic,
    free_port,
    pull_header,
    push_consumer,
    update_offset_header,
    wait_until,
    write_broker_conf,
)
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode

TOPIC = "MetricsTopic"
GROUP = "cg-metrics"
N = 25
BODY = b"m" * 100

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")
#: RocketMQ 5's attributes of every broker series, for the broker ``prom_broker`` starts.
NODE_LABELS = ('cluster="DefaultCluster"', 'node_type="broker"', 'node_id="broker-m"')


def _without_node_labels(labels: str | None) -> str:
    """The label set without :data:`NODE_LABELS`, which every series must carry."""
    inner = (labels or "{}")[1:-1]
    parts = re.findall(r'[a-zA-Z_]+="(?:[^"\\]|\\.)*"', inner)
    assert all(label in parts for label in NODE_LABELS), labels
    rest = [p for p in parts if p not in NODE_LABELS]
    return "{" + ",".join(rest) + "}" if rest else ""


def scrape(port: int) -> dict[str, float]:
    """``/metrics`` as ``{'name{labels}': value}`` (labels as the exporter writes them, less
    the node labels, checked on every series)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"].startswith("application/openmetrics-text")
        text = resp.read().decode()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        m = _SAMPLE.match(line)
        if m and not line.startswith("#"):
            samples[m.group(1) + _without_node_labels(m.group(2))] = float(m.group(3))
    return samples


def broker_conf(work: Path, port: int, extra: str) -> Path:
    return write_broker_conf(work, port, extra, name="broker-m")


@pytest.fixture
def prom_broker(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> Iterator[tuple[str, str, int]]:
    """A broker with the exporter on; yields ``(namesrv, broker address, metrics port)``."""
    _, ns = namesrv
    port, metrics_port = free_port(), free_port()
    conf = broker_conf(
        tmp_path,
        port,
        "metricsExporterType = PROM\nmetricsPromExporterHost = 127.0.0.1\n"
        f"metricsPromExporterPort = {metrics_port}\n",
    )
    broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=tmp_path)
    try:
        broker.wait_for("listening on")
        assert f"http://127.0.0.1:{metrics_port}/metrics" in broker.log
        yield ns, f"127.0.0.1:{port}", metrics_port
    finally:
        broker.kill()


def test_in_out_counters_and_lag(prom_broker: tuple[str, str, int]) -> None:
    ns, addr, mport = prom_broker
    create_topic(ns, [addr], TOPIC, queues=4)
    before = scrape(mport)
    topic = f'{{topic="{TOPIC}"}}'
    assert f"rocketmq_messages_in_total{topic}" not in before
    assert before["rocketmq_topic_number"] >= 1
    assert before["process_resident_memory_bytes"] > 1 << 20
    # The group has committed offset 0 on every queue: everything sent is lag.
    client = RemotingClient()
    try:
        for q in range(4):
            header = update_offset_header(GROUP, TOPIC, q, 0)
            resp = client.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, header)
            assert resp.code == 0, resp.remark
    finally:
        client.close()
    with rmq.Producer("pg-metrics", ns) as producer:
        for _ in range(N):
            producer.send(rmq.Message(TOPIC, BODY))
    sent = scrape(mport)
    assert sent[f"rocketmq_messages_in_total{topic}"] == N
    bytes_in = sent[f"rocketmq_throughput_in_total{topic}"]
    # Stored size: the body, the topic and the fixed fields of each message.
    assert N * (len(BODY) + len(TOPIC)) < bytes_in < N * (len(BODY) + len(TOPIC) + 200)
    group = f'{{topic="{TOPIC}",consumer_group="{GROUP}"}}'
    # The ConsumeQueues (lag's source) are written by the dispatcher, after the send answers.
    lag = f"rocketmq_consumer_lag_messages{group}"
    wait_until(lambda: scrape(mport)[lag] == N, f"a lag of {N}")
    sent = scrape(mport)
    assert sent[f"rocketmq_consumer_lag_latency{group}"] >= 0
    assert f"rocketmq_messages_out_total{group}" not in sent
    # Nothing pulled yet: all of the lag is ready, none in flight.
    assert sent[f"rocketmq_consumer_ready_messages{group}"] == N
    assert sent[f"rocketmq_consumer_inflight_messages{group}"] == 0
    assert sent[f"rocketmq_consumer_queueing_latency{group}"] >= 0
    # Every message was stored as a Normal one well under 1 KiB.
    sizes = f'{{topic="{TOPIC}",message_type="Normal"}}'
    assert sent[f"rocketmq_message_size_count{sizes}"] == N
    small = f'{{le="1024.0",topic="{TOPIC}",message_type="Normal"}}'
    assert sent[f"rocketmq_message_size_bucket{small}"] == N
    assert N * len(BODY) < sent[f"rocketmq_message_size_sum{sizes}"] < N * (len(BODY) + 200)
    # Every send was answered (SEND_MESSAGE_V2 = 310, SUCCESS = 0) and timed.
    sends = '{protocol_type="remoting",request_code="310",response_code="0"}'
    assert sent[f"rocketmq_rpc_latency_count{sends}"] == N
    buckets = {k: v for k, v in sent.items() if k.startswith("rocketmq_rpc_latency_bucket{")}
    send_labels = ('request_code="310"', 'response_code="0"')
    top = [v for k, v in buckets.items() if all(x in k for x in (*send_labels, 'le="+Inf"'))]
    assert top == [N], buckets
    # Cumulative: each bucket holds at least the one below it.
    send_buckets = [v for k, v in buckets.items() if all(x in k for x in send_labels)]
    assert send_buckets == sorted(send_buckets) and len(send_buckets) == 10

    # Raw pulls that commit nothing: the lag moves from ready to in flight.
    client = RemotingClient()
    try:
        for q in range(4):
            resp = client.invoke(addr, RequestCode.PULL_MESSAGE, pull_header(GROUP, TOPIC, q))
            assert resp.code in (0, 19), resp.remark  # SUCCESS, or PULL_NOT_FOUND if empty
    finally:
        client.close()
    pulled = scrape(mport)
    assert pulled[f"rocketmq_consumer_ready_messages{group}"] == 0
    assert pulled[f"rocketmq_consumer_inflight_messages{group}"] == N
    assert pulled[f"rocketmq_consumer_queueing_latency{group}"] == 0
    assert pulled[lag] == N

    got = Collector()
    consumer = push_consumer(ns, GROUP, TOPIC, got)
    try:
        wait_until(lambda: got.count() >= N, f"{N} messages consumed")
        wait_until(
            lambda: scrape(mport)[f"rocketmq_consumer_lag_messages{group}"] == 0,
            "the lag to fall to 0",
        )
        after = scrape(mport)
        assert after[f"rocketmq_consumer_lag_latency{group}"] == 0
        assert after[f"rocketmq_consumer_inflight_messages{group}"] == 0
        assert after[f"rocketmq_consumer_ready_messages{group}"] == 0
        # Every message went out twice: in the raw pulls, then to the consumer.
        assert after[f"rocketmq_messages_out_total{group}"] == 2 * N
        # Pulls hand out the stored messages: the same bytes as were put.
        assert after[f"rocketmq_throughput_out_total{group}"] == 2 * bytes_in
        assert after[f"rocketmq_messages_in_total{topic}"] == N
        assert after["rocketmq_consumer_connections"] >= 1
        assert after["rocketmq_consumer_group_number"] >= 1
    finally:
        consumer.shutdown()


def test_only_metrics_is_served(prom_broker: tuple[str, str, int]) -> None:
    _, _, mport = prom_broker
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"http://127.0.0.1:{mport}/", timeout=10)
    assert err.value.code == 404
    err.value.close()


def test_bad_exporter_type_stops_the_start(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    _, ns = namesrv
    conf = broker_conf(tmp_path, free_port(), "metricsExporterType = PROMETHEUS\n")
    broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=tmp_path)
    assert broker.finish() != 0
    assert "metricsExporterType" in broker.log
    assert "PROM" in broker.log
    assert "Traceback" not in broker.log


def test_busy_exporter_port_stops_the_start(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    _, ns = namesrv
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        conf = broker_conf(
            tmp_path,
            free_port(),
            "metricsExporterType = PROM\nmetricsPromExporterHost = 127.0.0.1\n"
            f"metricsPromExporterPort = {busy}\n",
        )
        broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=tmp_path)
        assert broker.finish() == 1
    assert f"the metrics exporter cannot listen on 127.0.0.1:{busy}" in broker.log
    assert "metricsPromExporterPort" in broker.log
    assert "Traceback" not in broker.log
