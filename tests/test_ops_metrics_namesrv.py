"""The nameserver's Prometheus exporter (``metricsExporterType = PROM`` in namesrv.conf): a real
nameserver and broker; ``/metrics`` shows the registration's RPC latency, the route table's
sizes and the process figures under ``node_type="nameserver"``; the keys cannot change at run
time."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from helpers import BrokerProcess, free_port, wait_until
from rmq._rmq import RemotingClient
from rmq.codes import RequestCode
from test_ops_metrics import broker_conf

_LINE = re.compile(r"^([a-zA-Z_]+)\{([^}]*)\} (\S+)$")


def scrape(port: int) -> dict[tuple[str, str], float]:
    """``/metrics`` as ``{(name, labels): value}``."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[tuple[str, str], float] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if m:
            out[(m.group(1), m.group(2))] = float(m.group(3))
    return out


def value(samples: dict[tuple[str, str], float], name: str, *labels: str) -> float | None:
    found = [v for (n, ls), v in samples.items() if n == name and all(x in ls for x in labels)]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def test_namesrv_metrics(tmp_path: Path) -> None:
    mport = free_port()
    conf = tmp_path / "namesrv.conf"
    conf.write_text(
        "metricsExporterType = PROM\nmetricsPromExporterHost = 127.0.0.1\n"
        f"metricsPromExporterPort = {mport}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.namesrv", "--host", "127.0.0.1", "-p", "0", "-c", str(conf)],
        stderr=subprocess.PIPE,
        text=True,
    )
    broker = None
    try:
        assert proc.stderr is not None
        seen, addr = "", None
        deadline = time.monotonic() + 30
        while addr is None or "/metrics" not in seen:
            assert time.monotonic() < deadline, seen
            line = proc.stderr.readline()
            assert line, f"the nameserver exited: {seen}"
            seen += line
            if m := re.search(r"listening on (127\.0\.0\.1:\d+)", line):
                addr = m.group(1)
        assert f"http://127.0.0.1:{mport}/metrics" in seen
        node = f'node_id="{addr}"'

        before = scrape(mport)
        assert value(before, "rocketmq_namesrv_broker_number", node) == 0
        assert value(before, "rocketmq_namesrv_topic_number", 'node_type="nameserver"') == 0

        bconf = broker_conf(tmp_path, free_port(), "")
        broker = BrokerProcess("-c", str(bconf), "-n", addr, cwd=tmp_path)
        broker.wait_for("listening on")
        register = f'request_code="{RequestCode.REGISTER_BROKER}"'

        def registered() -> bool:
            s = scrape(mport)
            return (value(s, "rocketmq_rpc_latency_count", register, node) or 0) >= 1

        wait_until(registered, "the broker's registration to be timed")
        after = scrape(mport)
        assert value(after, "rocketmq_namesrv_broker_number", node) == 1
        assert value(after, "rocketmq_namesrv_cluster_number", node) == 1
        # The broker registers its system topics (TBW102, SELF_TEST_TOPIC, ...).
        assert (value(after, "rocketmq_namesrv_topic_number", node) or 0) >= 2
        assert (value(after, "process_resident_memory_bytes", node) or 0) > 1 << 20

        # The keys are reported and cannot change while the nameserver runs.
        client = RemotingClient()
        try:
            got = client.invoke(addr, RequestCode.GET_NAMESRV_CONFIG)
            assert got.code == 0 and b"metricsExporterType=PROM" in (got.body or b"")
            body = b"metricsPromExporterPort=1\n"
            refused = client.invoke(addr, RequestCode.UPDATE_NAMESRV_CONFIG, body=body)
            assert refused.code != 0
            assert "metricsPromExporterPort cannot change" in (refused.remark or "")
        finally:
            client.close()
    finally:
        if broker is not None:
            broker.kill()
        proc.kill()
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
