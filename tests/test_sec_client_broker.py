"""The rmq broker's own requests sign with ``innerAccessKey``/``innerSecretKey`` (its
registration with the nameservers, and a slave's requests to its master), and its secrets never
show: GET_BROKER_CONFIG, ``rmq getBrokerConfig``, ``python -m rmq.broker -p`` and its log print
``******`` for ``innerSecretKey``.

The nameserver and master here are one recording ``rmq._rmq.RemotingServer``: it answers
REGISTER_BROKER with itself as the master, so the slave under test then asks it for the master's
data. Each recorded request's ``Signature`` is checked against an HMAC-SHA1 computed here with
Python's ``hmac`` (AclClientRPCHook's rule: the values of the header fields other than
``Signature`` in key order, then the body), independently of the Rust signer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import BrokerProcess, free_port, wait_until
from rmq._rmq import RemotingClient, RemotingResponse, RemotingServer
from rmq.codes import RequestCode, ResponseCode

INNER_AK, INNER_SK = "brokerInner", "inn3rS3cretValue"


def expected_signature(ext_fields: dict[str, str], body: bytes | None, secret: str) -> str:
    content = "".join(v for k, v in sorted(ext_fields.items()) if k != "Signature").encode()
    mac = hmac.new(secret.encode(), content + (body or b""), hashlib.sha1)
    return base64.b64encode(mac.digest()).decode()


class Recorder:
    """A nameserver that names itself the master, and a master that answers everything."""

    def __init__(self) -> None:
        self.addr = ""
        self.lock = threading.Lock()
        self.requests: list[tuple[int, dict[str, str], bytes | None]] = []

    def handle(self, request: Any) -> RemotingResponse:
        with self.lock:
            self.requests.append((request.code, dict(request.ext_fields), request.body))
        if request.code == RequestCode.REGISTER_BROKER:
            return RemotingResponse(
                0, None, {"masterAddr": self.addr, "haServerAddr": "127.0.0.1:1"}, None
            )
        return RemotingResponse(ResponseCode.SYSTEM_ERROR, "recorder: not served", None, None)

    def codes(self) -> set[int]:
        with self.lock:
            return {code for code, _, _ in self.requests}


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    server = RemotingServer("127.0.0.1", 0, rec)
    rec.addr = server.local_addr
    try:
        yield rec
    finally:
        server.shutdown()


def write_conf(tmp_path: Path, namesrv: str, role: str = "SLAVE") -> tuple[Path, int]:
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerName=sec-broker\nbrokerId={1 if role == 'SLAVE' else 0}\nbrokerRole={role}\n"
        f"brokerIP1=127.0.0.1\nlistenPort={port}\nnamesrvAddr={namesrv}\n"
        f"storePathRootDir={tmp_path / 'store'}\n"
        f"innerAccessKey={INNER_AK}\ninnerSecretKey={INNER_SK}\n"
    )
    return conf, port


def test_registration_and_the_slaves_requests_to_its_master_are_signed(
    recorder: Recorder, tmp_path: Path
) -> None:
    conf, port = write_conf(tmp_path, recorder.addr)
    broker = BrokerProcess("-c", str(conf), "--log-level", "DEBUG", cwd=tmp_path)
    try:
        broker.wait_for("listening on")
        wait_until(
            lambda: RequestCode.REGISTER_BROKER in recorder.codes() and len(recorder.codes()) > 1,
            "the slave registered and asked its master",
        )
        # The broker's config: the secret is masked, the account name is not.
        client = RemotingClient()
        resp = client.invoke(f"127.0.0.1:{port}", RequestCode.GET_BROKER_CONFIG)
        text = (resp.body or b"").decode()
        assert resp.code == 0 and f"innerAccessKey={INNER_AK}" in text
        assert "innerSecretKey=******" in text and INNER_SK not in text
        client.close()

        admin = subprocess.run(
            [sys.executable, "-m", "rmq.admin", "-n", recorder.addr, "getBrokerConfig",
             "-b", f"127.0.0.1:{port}"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert admin.returncode == 0, admin.stderr
        assert "innerSecretKey" in admin.stdout and "******" in admin.stdout
        assert INNER_SK not in admin.stdout + admin.stderr
    finally:
        broker.stop()
    assert INNER_SK not in broker.log

    with recorder.lock:
        requests = list(recorder.requests)
    assert {RequestCode.REGISTER_BROKER, RequestCode.GET_BROKER_RUNTIME_INFO} <= {
        c for c, _, _ in requests
    }, requests
    for code, fields, body in requests:
        assert fields.get("AccessKey") == INNER_AK, (code, fields)
        assert fields.get("Signature") == expected_signature(fields, body, INNER_SK), code
        assert INNER_SK not in str(fields)


def test_print_config_masks_the_secret(tmp_path: Path) -> None:
    conf, _ = write_conf(tmp_path, "127.0.0.1:1", role="ASYNC_MASTER")
    done = subprocess.run(
        [sys.executable, "-m", "rmq.broker", "-c", str(conf), "-p"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert f"innerAccessKey={INNER_AK}" in done.stdout
    assert "innerSecretKey=******" in done.stdout
    assert INNER_SK not in done.stdout + done.stderr


def test_half_inner_credentials_are_refused_at_start(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"brokerName=b\nstorePathRootDir={tmp_path / 'store'}\ninnerAccessKey=x\n")
    done = subprocess.run(
        [sys.executable, "-m", "rmq.broker", "-c", str(conf), "-p"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode != 0
    assert f"{conf}:3: innerAccessKey is set but innerSecretKey is not" in done.stderr
