"""rmq's clients sign their requests (ACL 1.0, Java's ``AclClientRPCHook``) well enough for the
real Apache RocketMQ 4.9.7 broker with ``aclEnable=true``: the Python SDK's producer, push and
pull consumers, the admin tool (global ``--access-key``/``--secret-key`` or
``RMQ_ACCESS_KEY``/``RMQ_SECRET_KEY``, and the ACL sub-commands 50-53), the bench and the Spark
data source. Unsigned and wrong-secret calls are refused with the broker's remark, raised as
:class:`rmq.errors.NoPermissionError`, and no secret shows up in an error, a log or the tool's
output.

The broker reads ``$ROCKETMQ_HOME/conf/plain_acl.yml``; the harness sets ROCKETMQ_HOME to
``<work>/rocketmq_home``, so the file is written there before the JVM starts. The Apache 4.9.7
nameserver has no ACL: the signed route requests it receives are answered as usual.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import wait_until
from rmq.admin.cli import main as admin_main
from rmq.errors import NoPermissionError

sys.path.insert(0, str(Path(__file__).parent / "compat" / "apache_broker"))
from apache_rocketmq import ApacheRocketMQ

pytestmark = pytest.mark.timeout(300)

USER, USER_SECRET = "RocketMQ", "12345678"
ADMIN, ADMIN_SECRET = "rocketmq2", "87654321adminSecret"
TOPIC = "SecTopic"
PLAIN_ACL = f"""globalWhiteRemoteAddresses:
- 10.10.103.*
accounts:
- accessKey: {USER}
  secretKey: {USER_SECRET}
  whiteRemoteAddress:
  admin: false
  defaultTopicPerm: DENY
  defaultGroupPerm: SUB
  topicPerms:
  - {TOPIC}=PUB|SUB
  - SparkSec=PUB|SUB
- accessKey: {ADMIN}
  secretKey: {ADMIN_SECRET}
  whiteRemoteAddress:
  admin: true
"""


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheRocketMQ]:
    work = tmp_path_factory.mktemp("apache-acl")
    conf = work / "rocketmq_home" / "conf"
    conf.mkdir(parents=True)
    (conf / "plain_acl.yml").write_text(PLAIN_ACL)
    with ApacheRocketMQ(work, broker_extra={"aclEnable": "true"}) as rocketmq:
        # Topics are created by the admin account (the user may not).
        for topic in (TOPIC, "SparkSec"):
            code, _, err = run_admin(
                rocketmq, "--access-key", ADMIN, "--secret-key", ADMIN_SECRET,
                "updateTopic", "-b", rocketmq.broker_addr, "-t", topic, "-r", "2", "-w", "2",
            )  # fmt: skip
            assert code == 0, err
        yield rocketmq


def acl_file(apache: ApacheRocketMQ) -> Path:
    return apache.work / "rocketmq_home" / "conf" / "plain_acl.yml"


def run_admin(apache: ApacheRocketMQ, *argv: str) -> tuple[int, str, str]:
    """The admin tool in a subprocess (its exit status, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-m", "rmq.admin", "-n", apache.namesrv_addr, *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout, done.stderr


def producer(apache: ApacheRocketMQ, name: str, **creds: str) -> rmq.Producer:
    # One instance per test producer: different credentials never share a client.
    return rmq.Producer(
        f"PG_{name}",
        apache.namesrv_addr,
        instance_name=name,
        retry_times_when_send_failed=0,
        **creds,
    ).start()


# ---- the SDK ----------------------------------------------------------------------------------


def test_a_signed_producer_push_and_pull_consumer_work(apache: ApacheRocketMQ) -> None:
    creds = {"access_key": USER, "secret_key": USER_SECRET}
    p = producer(apache, "signed", **creds)
    try:
        sent = {p.send(rmq.Message(TOPIC, f"m{i}".encode())).msg_id for i in range(10)}
    finally:
        p.shutdown()
    assert len(sent) == 10

    with rmq.PullConsumer(
        "SecPullGroup",
        apache.namesrv_addr,
        instance_name="sec-pull",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        **creds,
    ) as pull:
        pull.subscribe(TOPIC)
        got: set[str] = set()
        deadline = time.monotonic() + 30
        while got != sent and time.monotonic() < deadline:
            got.update(m.msg_id for m in pull.poll(1000))
        pull.commit()
    assert got == sent

    seen: set[str] = set()
    lock = threading.Lock()

    def listen(msgs: list[rmq.StoredMessage]) -> None:
        with lock:
            seen.update(m.msg_id for m in msgs)

    push = rmq.PushConsumer(
        "SecPushGroup",
        apache.namesrv_addr,
        instance_name="sec-push",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        rebalance_interval_ms=500,
        **creds,
    )
    push.subscribe(TOPIC)
    push.register_message_listener_concurrently(listen)
    push.start()
    try:
        wait_until(lambda: seen >= sent, "the signed push consumer got every message")
    finally:
        push.shutdown()


@pytest.mark.parametrize(
    ("creds", "remark"),
    [
        ({}, "No accessKey is configured"),
        ({"access_key": USER, "secret_key": "wrong-secret-9"}, "Check signature failed for"),
        ({"access_key": "nobody", "secret_key": "whatever-1"}, "No acl config for nobody"),
    ],
    ids=["unsigned", "wrong-secret", "unknown-account"],
)  # fmt: skip
def test_refused_sends_raise_no_permission_with_the_remark(
    apache: ApacheRocketMQ,
    creds: dict[str, str],
    remark: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = producer(apache, f"refused-{len(creds)}-{creds.get('access_key', '')}", **creds)
    caplog.set_level(logging.DEBUG)
    try:
        with pytest.raises(NoPermissionError) as info:
            p.send(rmq.Message(TOPIC, b"x"))
    finally:
        p.shutdown()
    assert remark in str(info.value)
    assert remark in info.value.remark
    for secret in (creds.get("secret_key"), USER_SECRET, ADMIN_SECRET):
        if secret:
            assert secret not in str(info.value)
            assert secret not in caplog.text


def test_a_topic_outside_the_accounts_perms_is_refused(apache: ApacheRocketMQ) -> None:
    p = producer(apache, "denied", access_key=USER, secret_key=USER_SECRET)
    try:
        with pytest.raises(NoPermissionError, match="No default permission for topic:OtherTopic"):
            p.send(rmq.Message("OtherTopic", b"x"))
    finally:
        p.shutdown()


def test_credentials_need_both_keys() -> None:
    with pytest.raises(ValueError, match="secret_key is not"):
        rmq.Producer("g", "127.0.0.1:1", access_key="ak")
    with pytest.raises(ValueError, match="access_key is not"):
        rmq.PullConsumer("g", "127.0.0.1:1", secret_key="sk")


# ---- the admin tool ---------------------------------------------------------------------------


def test_admin_signs_with_flags_or_environment(
    apache: ApacheRocketMQ, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = apache.broker_addr
    code, out, err = run_admin(apache, "getBrokerConfig", "-b", b)
    assert code == 1
    assert "No accessKey is configured" in err and "RMQ_ACCESS_KEY" in err, err

    code, out, err = run_admin(
        apache, "--access-key", ADMIN, "--secret-key", "not-the-secret", "getBrokerConfig", "-b", b
    )
    assert code == 1 and f"Check signature failed for accessKey={ADMIN}" in err, err
    assert "not-the-secret" not in out + err

    monkeypatch.setenv("RMQ_ACCESS_KEY", ADMIN)
    monkeypatch.setenv("RMQ_SECRET_KEY", ADMIN_SECRET)
    code, out, err = run_admin(apache, "getBrokerConfig", "-b", b)
    assert code == 0, err
    assert "brokerName" in out and "aclEnable" in out
    assert ADMIN_SECRET not in out + err

    # --help says where the secret comes from, and never shows it.
    code, out, _ = run_admin(apache, "--help")
    assert code == 0 and "RMQ_SECRET_KEY" in out and ADMIN_SECRET not in out


def test_admin_acl_sub_commands(apache: ApacheRocketMQ, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RMQ_ACCESS_KEY", ADMIN)
    monkeypatch.setenv("RMQ_SECRET_KEY", ADMIN_SECRET)
    b = apache.broker_addr
    new_secret = "n3wUs3rS3cret"

    code, before, err = run_admin(
        apache, "--json", "clusterAclConfigVersion", "-c", "DefaultCluster"
    )
    assert code == 0, err
    (info,) = json.loads(before)["brokers"]
    assert info["brokerAddr"] == b and info["brokerName"] == "broker-a"

    code, out, err = run_admin(
        apache, "updateAclConfig", "-b", b, "-a", "tmpuser", "-s", new_secret,
        "-t", f"{TOPIC}=PUB", "-u", "SUB", "-m", "false",
    )  # fmt: skip
    assert code == 0, err
    assert f"create or update plain access config to {b} success." in out
    assert new_secret not in out + err and "******" in out
    assert "tmpuser" in acl_file(apache).read_text()

    def new_user_sends() -> bool:
        p = producer(
            apache, f"tmp-{time.monotonic_ns()}", access_key="tmpuser", secret_key=new_secret
        )
        try:
            p.send(rmq.Message(TOPIC, b"from tmpuser"))
            return True
        except NoPermissionError:
            return False
        finally:
            p.shutdown()

    wait_until(new_user_sends, "the account made by updateAclConfig can send")

    code, out, err = run_admin(apache, "clusterAclConfigVersion", "-b", b)
    assert code == 0, err
    assert "get broker's plain access config version success." in out
    assert b in out

    code, out, err = run_admin(
        apache, "updateGlobalWhiteAddr", "-c", "DefaultCluster", "-g", "10.10.104.*,192.168.9.*"
    )
    assert code == 0, err
    assert f"update global white remote addresses to {b} success." in out
    assert "192.168.9.*" in acl_file(apache).read_text()

    code, out, err = run_admin(apache, "deleteAclConfig", "-c", "DefaultCluster", "-a", "tmpuser")
    assert code == 0, err
    assert f"delete plain access config account to {b} success." in out
    assert "account's accesskey is:tmpuser" in out
    wait_until(lambda: not new_user_sends(), "the deleted account is refused")

    # Without the admin account, the ACL requests are refused with the broker's remark.
    monkeypatch.delenv("RMQ_ACCESS_KEY")
    monkeypatch.delenv("RMQ_SECRET_KEY")
    code, out, err = run_admin(apache, "deleteAclConfig", "-b", b, "-a", USER)
    assert code == 1 and "No accessKey is configured" in err, err
    assert USER in acl_file(apache).read_text()


def test_admin_in_process_does_not_echo_the_secret(
    apache: ApacheRocketMQ, capsys: pytest.CaptureFixture[str]
) -> None:
    code = admin_main(
        ["-n", apache.namesrv_addr, "--access-key", ADMIN, "--secret-key", ADMIN_SECRET,
         "brokerStatus", "-b", apache.broker_addr]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "brokerVersionDesc" in out and ADMIN_SECRET not in out + err


# ---- the bench -------------------------------------------------------------------------------


def bench(apache: ApacheRocketMQ, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "rmq.bench", *argv, "-n", apache.namesrv_addr, "-t", TOPIC,
         "-c", "20", "-q", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip


def test_bench_signs(apache: ApacheRocketMQ) -> None:
    done = bench(apache, "producer", "-w", "2", "--access-key", USER, "--secret-key", USER_SECRET)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["sent"] == 20 and summary["failures"] == 0, summary

    done = bench(
        apache, "consumer", "-g", "SecBenchGroup", "--access-key", USER, "--secret-key", USER_SECRET
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["consumed"] >= 20  # -c stops after 20; a pull may bring more

    refused = bench(apache, "producer", "-w", "1")
    assert refused.returncode == 1
    assert "No accessKey is configured" in refused.stderr, refused.stderr


# ---- Spark ------------------------------------------------------------------------------------


def test_spark_options_reach_the_executors(
    apache: ApacheRocketMQ, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local mode runs the tasks in Python worker processes: the rows written and read back
    went through clients made there from the options."""
    pytest.importorskip("pyspark", minversion="4.2")
    pytest.importorskip("pyarrow")
    from pyspark.sql import SparkSession

    import rmq.spark

    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rmq-sec-client")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.warehouse.dir", str(tmp_path / "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rmq.spark.register(spark)
    try:
        ns = apache.namesrv_addr
        df = spark.range(0, 40, numPartitions=2).selectExpr(
            "cast(cast(id as string) as binary) as body"
        )
        opts = {"namesrv": ns, "topic": "SparkSec", "accessKey": USER, "secretKey": USER_SECRET}
        df.write.format("rmq").options(**opts).mode("append").save()
        rows = spark.read.format("rmq").options(**opts).load().select("body").collect()
        assert sorted(int(bytes(r["body"])) for r in rows) == list(range(40))

        unsigned = {"namesrv": ns, "topic": "SparkSec"}
        with pytest.raises(Exception, match="No accessKey is configured"):
            df.write.format("rmq").options(**unsigned).mode("append").save()
    finally:
        spark.stop()
