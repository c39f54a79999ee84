"""rmq's clients against rmq's own broker with ``aclEnable = true`` (the broker side is
tests/test_sec_acl_broker.py; its ACL file and accounts come from ``sec_acl_helpers``): the
signed SDK producer and consumers work, unsigned, wrong-secret and under-privileged ones get
:class:`rmq.errors.NoPermissionError` (NO_PERMISSION, 16) with the broker's remark, and the
admin tool signs its requests, the four ACL sub-commands included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import BrokerProcess, wait_until
from rmq.codes import ResponseCode
from rmq.errors import NoPermissionError
from sec_acl_helpers import ACL_GROUP, ACL_TOPIC, ADMIN, PUBLISHER, SUB_ONLY, acl_broker

Broker = tuple[str, Path, BrokerProcess, str]


@pytest.fixture(scope="module")
def broker(
    tmp_path_factory: pytest.TempPathFactory, module_namesrv: tuple[object, str]
) -> Iterator[Broker]:
    _, ns = module_namesrv
    with acl_broker(tmp_path_factory.mktemp("sec-client-rmq"), ns) as (addr, acl_file, proc):
        done = admin(
            ns, "updateTopic", "-b", addr, "-t", ACL_TOPIC, "-r", "2", "-w", "2", as_=ADMIN
        )
        assert done.returncode == 0, done.stderr
        wait_until(lambda: routed(ns), f"{ACL_TOPIC} is routed")
        yield addr, acl_file, proc, ns


def routed(ns: str) -> bool:
    return admin(ns, "topicRoute", "-t", ACL_TOPIC).returncode == 0


def admin(
    ns: str, *argv: str, as_: tuple[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The admin tool in a subprocess; ``as_`` signs through RMQ_ACCESS_KEY/RMQ_SECRET_KEY."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RMQ_")}
    if as_ is not None:
        env.update(RMQ_ACCESS_KEY=as_[0], RMQ_SECRET_KEY=as_[1])
    return subprocess.run(
        [sys.executable, "-m", "rmq.admin", "-n", ns, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def producer(ns: str, name: str, account: tuple[str, str] | None) -> rmq.Producer:
    creds = {"access_key": account[0], "secret_key": account[1]} if account else {}
    return rmq.Producer(
        f"PG_{name}", ns, instance_name=name, retry_times_when_send_failed=0, **creds
    ).start()


def test_signed_producer_and_consumers(broker: Broker) -> None:
    _, _, _, ns = broker
    p = producer(ns, "rmq-signed", PUBLISHER)
    try:
        sent = {p.send(rmq.Message(ACL_TOPIC, f"m{i}".encode())).msg_id for i in range(8)}
    finally:
        p.shutdown()
    with rmq.PullConsumer(
        ACL_GROUP,
        ns,
        instance_name="rmq-pull",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        access_key=PUBLISHER[0],
        secret_key=PUBLISHER[1],
    ) as pull:
        pull.subscribe(ACL_TOPIC)
        got: set[str] = set()
        deadline = time.monotonic() + 30
        while not sent <= got and time.monotonic() < deadline:
            got.update(m.msg_id for m in pull.poll(1000))
        pull.commit()
    assert sent <= got


@pytest.mark.parametrize(
    "account",
    [None, (PUBLISHER[0], "not-the-secret"), SUB_ONLY],
    ids=["unsigned", "wrong-secret", "sub-only"],
)
def test_refused_sends_raise_no_permission(
    broker: Broker, account: tuple[str, str] | None, caplog: pytest.LogCaptureFixture
) -> None:
    _, _, _, ns = broker
    p = producer(
        ns, f"rmq-refused-{account[0] if account else 'none'}-{time.monotonic_ns()}", account
    )
    try:
        with pytest.raises(NoPermissionError) as info:
            p.send(rmq.Message(ACL_TOPIC, b"x"))
    finally:
        p.shutdown()
    err = info.value
    assert err.code == ResponseCode.NO_PERMISSION and err.remark, err
    assert err.remark in str(err)
    if account == SUB_ONLY:
        assert SUB_ONLY[0] in err.remark and ACL_TOPIC in err.remark and "PUB" in err.remark
    for secret in (PUBLISHER[1], SUB_ONLY[1], "not-the-secret"):
        assert secret not in str(err) and secret not in caplog.text


def test_admin_tool_signs_and_manages_accounts(broker: Broker) -> None:
    addr, acl_file, _, ns = broker
    # Unsigned and non-admin: refused with the broker's remark.
    done = admin(ns, "getBrokerConfig", "-b", addr)
    assert done.returncode == 1 and "NO_PERMISSION (16)" in done.stderr, done.stderr
    done = admin(ns, "updateTopic", "-b", addr, "-t", "NotAllowed", as_=PUBLISHER)
    assert done.returncode == 1 and "NO_PERMISSION" in done.stderr and PUBLISHER[0] in done.stderr

    done = admin(ns, "getBrokerConfig", "-b", addr, as_=ADMIN)
    assert done.returncode == 0, done.stderr
    assert ADMIN[1] not in done.stdout + done.stderr

    secret = "fr3shS3cretKey"
    done = admin(
        ns, "updateAclConfig", "-b", addr, "-a", "freshuser1", "-s", secret,
        "-t", f"{ACL_TOPIC}=PUB", "-u", "SUB", as_=ADMIN,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert secret not in done.stdout + done.stderr
    assert "freshuser1" in acl_file.read_text()

    def fresh_sends() -> bool:
        p = producer(ns, f"fresh-{time.monotonic_ns()}", ("freshuser1", secret))
        try:
            p.send(rmq.Message(ACL_TOPIC, b"from fresh1"))
            return True
        except NoPermissionError:
            return False
        finally:
            p.shutdown()

    wait_until(fresh_sends, "the account made by updateAclConfig sends")

    done = admin(ns, "--json", "clusterAclConfigVersion", "-b", addr, as_=ADMIN)
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert info["brokerAddr"] == addr and info["counter"] >= 1, info

    done = admin(ns, "updateGlobalWhiteAddr", "-b", addr, "-g", "10.9.8.*", as_=ADMIN)
    assert done.returncode == 0, done.stderr
    assert "10.9.8.*" in acl_file.read_text()

    done = admin(ns, "deleteAclConfig", "-c", "DefaultCluster", "-a", "freshuser1", as_=ADMIN)
    assert done.returncode == 0, done.stderr
    wait_until(lambda: not fresh_sends(), "the deleted account is refused")


def test_a_signed_transaction_commits(broker: Broker) -> None:
    """The half message, and the END_TRANSACTION after it (a oneway request), are signed: a
    check would roll the message back, so only the signed commit makes it readable."""
    _, _, _, ns = broker
    tx = rmq.TransactionProducer(
        "PG_sec_tx",
        ns,
        instance_name="rmq-sec-tx",
        execute_local_transaction=lambda msg, arg: rmq.LocalTransactionState.COMMIT_MESSAGE,
        check_local_transaction=lambda msg: rmq.LocalTransactionState.ROLLBACK_MESSAGE,
        access_key=PUBLISHER[0],
        secret_key=PUBLISHER[1],
    ).start()
    try:
        result = tx.send_message_in_transaction(rmq.Message(ACL_TOPIC, b"tx body"))
    finally:
        tx.shutdown()
    assert result.local_transaction_state == rmq.LocalTransactionState.COMMIT_MESSAGE
    with rmq.PullConsumer(
        "G_sec_tx_reader",
        ns,
        instance_name="rmq-sec-tx-reader",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        access_key=PUBLISHER[0],
        secret_key=PUBLISHER[1],
    ) as pull:
        pull.subscribe(ACL_TOPIC)
        bodies: list[bytes] = []
        deadline = time.monotonic() + 30
        while b"tx body" not in bodies and time.monotonic() < deadline:
            bodies.extend(m.body for m in pull.poll(1000))
    assert b"tx body" in bodies
