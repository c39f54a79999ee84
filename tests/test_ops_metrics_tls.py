"""The Prometheus exporter with ``tls.server.mode`` on: ``/metrics`` is served over HTTPS with
the broker's certificate, and with ``tls.server.need.client.auth = require`` only to clients
presenting a certificate of ``tls.server.trustCertPath``."""

from __future__ import annotations

import http.client
import ssl
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from helpers import BrokerProcess, free_port
from test_ops_metrics import broker_conf
from tls_helpers import make_pki, server_keys


def start(tmp_path: Path, ns: str, tls: str) -> tuple[BrokerProcess, int]:
    mport = free_port()
    conf = broker_conf(
        tmp_path,
        free_port(),
        "metricsExporterType = PROM\nmetricsPromExporterHost = 127.0.0.1\n"
        f"metricsPromExporterPort = {mport}\n" + tls,
    )
    broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=tmp_path)
    broker.wait_for("listening on")
    assert f"https://127.0.0.1:{mport}/metrics" in broker.log
    return broker, mport


def test_https_with_the_broker_certificate(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    pki = make_pki(tmp_path / "pki")
    broker, mport = start(tmp_path, namesrv[1], server_keys(pki, "permissive"))
    try:
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        url = f"https://127.0.0.1:{mport}/metrics"
        with urllib.request.urlopen(url, context=ctx, timeout=10) as resp:
            assert "rocketmq_topic_number " in resp.read().decode()
        with pytest.raises((urllib.error.URLError, http.client.HTTPException, OSError)):
            urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10)
    finally:
        broker.kill()


def test_client_certificate_required(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    pki = make_pki(tmp_path / "pki")
    tls = server_keys(pki, "enforcing") + (
        f"tls.server.need.client.auth = require\ntls.server.trustCertPath = {pki.ca}\n"
    )
    broker, mport = start(tmp_path, namesrv[1], tls)
    try:
        url = f"https://127.0.0.1:{mport}/metrics"
        anonymous = ssl.create_default_context(cafile=str(pki.ca))
        with pytest.raises((urllib.error.URLError, ssl.SSLError, OSError)):
            urllib.request.urlopen(url, context=anonymous, timeout=10).read()
        signed = ssl.create_default_context(cafile=str(pki.ca))
        signed.load_cert_chain(str(pki.client_cert), str(pki.client_key))
        with urllib.request.urlopen(url, context=signed, timeout=10) as resp:
            assert resp.status == 200
    finally:
        broker.kill()
