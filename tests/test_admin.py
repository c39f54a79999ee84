"""The ``rmq`` admin tool end to end.

Three kinds of peers: a real broker process with its embedded nameserver (what users run), a
stand-in "Java broker" on a real socket that answers the codes with RocketMQ's own fastjson
bodies (MessageQueue objects as map keys, bare numeric keys), and nothing at all (a nameserver
that is down). The tool runs as a subprocess where the exit status and stderr matter, and
in-process through ``main(argv)`` elsewhere (faster).

Tests named ``test_new_codes_*`` need a broker build that serves GET_TOPIC_STATS_INFO (202),
GET_CONSUMER_CONNECTION_LIST (203), GET_CONSUME_STATS (208), GET_BROKER_CONFIG (26) and
UPDATE_BROKER_CONFIG (25); without them they fail with the tool's REQUEST_CODE_NOT_SUPPORTED
message.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    free_port,
    send_v2_header,
    update_offset_header,
    wait_until,
)
from rmq import fastjson
from rmq._rmq import RemotingClient, RemotingRequest, RemotingResponse, RemotingServer
from rmq.admin import main
from rmq.admin.command import REGISTRY
from rmq.admin.commands.consumer import version_desc
from rmq.admin.output import parse_timestamp, table
from rmq.client.message_queue import MessageQueue
from rmq.codes import RequestCode, ResponseCode

CLUSTER = "AdminCluster"
BROKER_NAME = "broker-admin"
MQADMIN_COMMANDS = {
    "updateTopic",
    "deleteTopic",
    "sendMessage",
    "consumeMessage",
    "topicList",
    "topicRoute",
    "topicStatus",
    "updateSubGroup",
    "clusterList",
    "brokerStatus",
    "consumerProgress",
    "consumerConnection",
    "queryMsgById",
    "queryMsgByKey",
    "queryMsgByOffset",
    "resetOffsetByTime",
    "printMsg",
    "getBrokerConfig",
    "updateBrokerConfig",
    "deleteSubGroup",
    "producerConnection",
    "getNamesrvConfig",
    "wipeWritePerm",
    "addWritePerm",
}


# ---- a real broker with its embedded nameserver ----------------------------------------------


class Cluster:
    def __init__(self, namesrv: str, broker: str) -> None:
        self.namesrv = namesrv
        self.broker = broker
        self.client = RemotingClient()

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The tool as a subprocess, pointed at this cluster's nameserver."""
        return subprocess.run(
            [sys.executable, "-m", "rmq.admin", "-n", self.namesrv, *args],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    def send(
        self, topic: str, body: bytes, *, tags: str, keys: str, queue_id: int
    ) -> dict[str, str]:
        """SEND_MESSAGE_V2 as the Java producer sends it."""
        header = send_v2_header("admin-test-producer", topic, tags, keys, queue_id)
        r = self.client.invoke(self.broker, RequestCode.SEND_MESSAGE_V2, header, body)
        assert r.code == ResponseCode.SUCCESS, r.remark
        return r.ext_fields

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        ext = update_offset_header(group, topic, queue_id, offset)
        r = self.client.invoke(self.broker, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        assert r.code == ResponseCode.SUCCESS, r.remark

    def consumer_offset(self, group: str, topic: str, queue_id: int) -> int | None:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        r = self.client.invoke(self.broker, RequestCode.QUERY_CONSUMER_OFFSET, ext)
        return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else None

    def route(self, topic: str) -> dict[str, Any] | None:
        r = self.client.invoke(self.namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return json.loads(r.body or b"") if r.code == ResponseCode.SUCCESS else None


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    tmp = tmp_path_factory.mktemp("admin")
    port = free_port()
    conf = tmp / "broker.conf"
    conf.write_text(
        f"brokerClusterName = {CLUSTER}\n"
        f"brokerName = {BROKER_NAME}\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n" + TEST_STORE_CONF
    )
    broker = BrokerProcess("-c", str(conf), cwd=tmp)  # embedded nameserver on a free port
    try:
        line = broker.wait_for("embedded nameserver listening on")
        m = re.search(r"listening on [0-9.]+:(\d+)", line)
        assert m, line
        c = Cluster(f"127.0.0.1:{m.group(1)}", f"127.0.0.1:{port}")
        broker.wait_for("store open at")
        wait_until(lambda: c.route("TBW102"), "the broker's registration")
        yield c
    finally:
        broker.kill()


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The tool in-process: (exit status, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def rmq_json(capsys: pytest.CaptureFixture[str], c: Cluster, *argv: str) -> Any:
    code, out, err = run_main(capsys, "-n", c.namesrv, "--json", *argv)
    assert code == 0, err
    return json.loads(out)


# ---- the command line itself ----------------------------------------------------------------


def test_help_lists_mqadmin_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rmq.admin", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    for name in MQADMIN_COMMANDS:
        assert name in done.stdout
    assert set(REGISTRY) >= MQADMIN_COMMANDS


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).with_name("rmq")
    if not script.exists():
        pytest.skip("the package is not installed with its console scripts here")
    done = subprocess.run(
        [str(script), "topicRoute", "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert "-t TOPIC" in done.stdout and "--namesrvAddr" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "required: COMMAND"),
        (["noSuchCommand"], "unknown command 'noSuchCommand'"),
        (["updateTopic", "-t", "T"], "one of the arguments -b/--brokerAddr -c/--clusterName"),
        (["updateTopic", "-t", "T", "-b", "127.0.0.1:1", "-c", "C"], "not allowed with"),
        (["updateTopic", "-t", "T", "-c", "C", "-o", "maybe"], "expected true or false"),
        (["updateTopic", "-t", "T", "-c", "C", "-p", "5"], "invalid choice: 5"),
        (["topicRoute"], "required: -t/--topic"),
        (["--timeout", "0", "topicList"], "positive number of milliseconds"),
        (["resetOffsetByTime", "-g", "g", "-t", "T", "-s", "yesterday"], "yyyy-MM-dd#HH:mm:ss:SSS"),
        (["queryMsgByOffset", "-t", "T", "-b", "b", "-i", "x", "-o", "0"], "invalid int value"),
    ],
)
def test_usage_errors_exit_2(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = run_main(capsys, *argv)
    assert code == 2
    assert message in err
    assert out == ""


def test_nameserver_down_is_one_clear_line(tmp_path: Path) -> None:
    dead = f"127.0.0.1:{free_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "rmq.admin", "-n", dead, "topicList"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"rmq topicList: cannot reach nameserver {dead}: connection refused")
    assert "NAMESRV_ADDR" in lines[0] and "Traceback" not in done.stderr

    # The address also comes from NAMESRV_ADDR, and -n may follow the sub-command (mqadmin style).
    env = dict(os.environ, NAMESRV_ADDR=dead)
    done = subprocess.run(
        [sys.executable, "-m", "rmq.admin", "clusterList"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1 and f"cannot reach nameserver {dead}" in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "rmq.admin", "clusterList", "-n", "not-an-address"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "'not-an-address' is not an address like 127.0.0.1:9876" in done.stderr


# ---- against a real broker ------------------------------------------------------------------


def test_topic_lifecycle(cluster: Cluster) -> None:
    created = cluster.run("updateTopic", "-c", CLUSTER, "-t", "AdminLife", "-r", "3", "-w", "2")
    assert created.returncode == 0, created.stderr
    assert f"create topic to {cluster.broker} success." in created.stdout
    assert "readQueueNums=3, writeQueueNums=2, perm=RW-" in created.stdout
    wait_until(lambda: cluster.route("AdminLife"), "the new topic's route")

    listed = cluster.run("topicList")
    assert listed.returncode == 0 and "AdminLife" in listed.stdout.split()

    route = json.loads(cluster.run("--json", "topicRoute", "-t", "AdminLife").stdout)
    assert route["queueDatas"] == [
        {
            "brokerName": BROKER_NAME,
            "perm": 6,
            "readQueueNums": 3,
            "topicSysFlag": 0,
            "writeQueueNums": 2,
        }
    ]
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": cluster.broker}
    assert route["brokerDatas"][0]["cluster"] == CLUSTER

    as_table = cluster.run("topicRoute", "-t", "AdminLife", "-l").stdout.splitlines()
    assert as_table[0].split() == [
        "#ClusterName",
        "#BrokerName",
        "#BrokerAddrs",
        "#ReadQueue",
        "#WriteQueue",
        "#Perm",
    ]
    assert as_table[1].split() == [CLUSTER, BROKER_NAME, f"{{0={cluster.broker}}}", "3", "2", "6"]

    clustered = cluster.run("topicList", "-c")
    assert clustered.returncode == 0, clustered.stderr
    assert any(line.split()[:2] == [CLUSTER, "AdminLife"] for line in clustered.stdout.splitlines())

    deleted = cluster.run("deleteTopic", "-c", CLUSTER, "-t", "AdminLife")
    assert deleted.returncode == 0, deleted.stderr
    assert "delete topic [AdminLife] from cluster [AdminCluster] success." in deleted.stdout
    assert "delete topic [AdminLife] from NameServer success." in deleted.stdout
    assert "AdminLife" not in cluster.run("topicList").stdout.split()
    time.sleep(0.3)  # the broker re-registers after the delete: the topic must stay gone
    gone = cluster.run("topicRoute", "-t", "AdminLife")
    assert gone.returncode == 1
    assert "TOPIC_NOT_EXIST (17)" in gone.stderr and "AdminLife" in gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1


def test_update_topic_on_one_broker_with_perm_and_order(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    code, out, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "updateTopic",
        "-b",
        cluster.broker,
        "-t",
        "AdminOrdered",
        "-w",
        "4",
        "-r",
        "4",
        "-p",
        "4",
        "-o",
        "true",
    )
    assert code == 0, err
    assert f"orderConf=[{BROKER_NAME}:4]" in out
    wait_until(lambda: cluster.route("AdminOrdered"), "the ordered topic's route")
    route = rmq_json(capsys, cluster, "topicRoute", "-t", "AdminOrdered")
    assert route["queueDatas"][0]["perm"] == 4
    assert route["orderTopicConf"] == f"{BROKER_NAME}:4"


def test_cluster_list_and_broker_status(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    doc = rmq_json(capsys, cluster, "clusterList")
    (row,) = doc["brokers"]
    assert (row["cluster"], row["brokerName"], row["brokerId"], row["addr"]) == (
        CLUSTER,
        BROKER_NAME,
        0,
        cluster.broker,
    )
    assert row["version"] == "V4_9_8" and row["reachable"]

    code, out, err = run_main(capsys, "-n", cluster.namesrv, "clusterList")
    assert code == 0, err
    header, line = out.splitlines()
    assert header.startswith("#Cluster Name  #Broker Name  #BID  #Addr")
    assert line.split()[:5] == [CLUSTER, BROKER_NAME, "0", cluster.broker, "V4_9_8"]

    status = rmq_json(capsys, cluster, "brokerStatus", "-b", cluster.broker)
    assert status["brokerVersionDesc"] == "V4_9_8"
    code, out, _ = run_main(capsys, "-n", cluster.namesrv, "brokerStatus", "-b", cluster.broker)
    assert re.search(r"^brokerVersionDesc\s+: V4_9_8$", out, re.M)
    code, out, _ = run_main(capsys, "-n", cluster.namesrv, "brokerStatus", "-c", CLUSTER)
    assert re.search(rf"^{re.escape(cluster.broker)}\s+brokerVersionDesc\s+: V4_9_8$", out, re.M)

    code, _, err = run_main(capsys, "-n", cluster.namesrv, "brokerStatus", "-c", "NoSuchCluster")
    assert code == 1
    assert f"cluster 'NoSuchCluster' is not known to the nameserver (clusters: {CLUSTER})" in err


def test_a_dead_nameserver_in_the_list_is_skipped(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    code, out, err = run_main(
        capsys, "-n", f"127.0.0.1:{free_port()};{cluster.namesrv}", "topicList"
    )
    assert code == 0, err
    assert "TBW102" in out.split()


@pytest.fixture(scope="module")
def messages(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Six messages in AdminMsgs (2 queues): key-<i>, all with key 'common', TagA on odd i."""
    created = subprocess.run(
        [
            sys.executable,
            "-m",
            "rmq.admin",
            "-n",
            cluster.namesrv,
            "updateTopic",
            "-c",
            CLUSTER,
            "-t",
            "AdminMsgs",
            "-r",
            "2",
            "-w",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    wait_until(lambda: cluster.route("AdminMsgs"), "route of AdminMsgs")
    sent = []
    for i in range(6):
        ext = cluster.send(
            "AdminMsgs",
            f"body-{i}".encode(),
            tags="TagA" if i % 2 else "TagB",
            keys=f"key-{i} common",
            queue_id=i % 2,
        )
        sent.append(
            {
                "i": i,
                "msgId": ext["msgId"],
                "queueId": i % 2,
                "queueOffset": int(ext["queueOffset"]),
            }
        )
    return sent


def query_by_key(capsys: pytest.CaptureFixture[str], cluster: Cluster, key: str) -> Any:
    """``rmq --json queryMsgByKey`` of AdminMsgs; None when it printed nothing."""
    main(["-n", cluster.namesrv, "--json", "queryMsgByKey", "-t", "AdminMsgs", "-k", key])
    out = capsys.readouterr().out
    return json.loads(out) if out else None


def wait_indexed(capsys: pytest.CaptureFixture[str], cluster: Cluster) -> None:
    """Dispatch to the IndexFile is asynchronous: wait until key-3 (of ``messages``) is in it."""
    wait_until(lambda: query_by_key(capsys, cluster, "key-3"), "the index to hold key-3")


def test_query_by_key_finds_the_message_through_the_index(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    third = messages[3]
    wait_indexed(capsys, cluster)
    (found,) = query_by_key(capsys, cluster, "key-3")["messages"]
    assert found["body"] == "body-3" and found["tags"] == "TagA"
    assert found["offsetMsgId"] == third["msgId"]
    assert (found["queueId"], found["queueOffset"]) == (third["queueId"], third["queueOffset"])


def test_query_by_key_lists_every_message_that_shares_the_key(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    wait_indexed(capsys, cluster)
    code, out, err = run_main(
        capsys, "-n", cluster.namesrv, "queryMsgByKey", "-t", "AdminMsgs", "-k", "common"
    )
    assert code == 0, err
    rows = out.splitlines()
    assert rows[0].split() == ["#Message", "ID", "#QID", "#Offset", "#Offset", "ID"]
    assert {r.split()[0] for r in rows[1:]} == {m["msgId"] for m in messages}


def test_query_by_key_outside_the_time_window_or_of_an_unused_key_fails(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    wait_indexed(capsys, cluster)
    # A window in the future finds nothing; a key nobody used neither.
    code, _, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "queryMsgByKey",
        "-t",
        "AdminMsgs",
        "-k",
        "key-3",
        "-b",
        str(int(time.time() * 1000) + 3_600_000),
    )
    assert code == 1 and "has key 'key-3' in that time range" in err
    code, _, err = run_main(
        capsys, "-n", cluster.namesrv, "queryMsgByKey", "-t", "AdminMsgs", "-k", "nobody"
    )
    assert code == 1 and "no message of topic 'AdminMsgs' has key 'nobody'" in err


def test_query_by_id_prints_the_messages_fields(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    third = messages[3]
    done = cluster.run("queryMsgById", "-i", third["msgId"])
    assert done.returncode == 0, done.stderr
    fields = dict(re.split(r":\s+", line, maxsplit=1) for line in done.stdout.splitlines())
    assert fields["OffsetID"] == third["msgId"]
    assert fields["Topic"] == "AdminMsgs"
    assert fields["Keys"] == "[key-3 common]"
    assert fields["Queue Offset"] == str(third["queueOffset"])
    assert fields["Store Host"] == cluster.broker
    assert fields["Message Body"] == "body-3"
    both = rmq_json(
        capsys, cluster, "queryMsgById", "-i", f"{messages[0]['msgId']},{third['msgId']}"
    )
    assert [m["body"] for m in both["messages"]] == ["body-0", "body-3"]


def test_query_by_offset_finds_the_message_and_names_a_bad_offset_or_broker(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    third = messages[3]
    at = rmq_json(
        capsys,
        cluster,
        "queryMsgByOffset",
        "-t",
        "AdminMsgs",
        "-b",
        BROKER_NAME,
        "-i",
        str(third["queueId"]),
        "-o",
        str(third["queueOffset"]),
    )
    assert at["messages"][0]["offsetMsgId"] == third["msgId"]
    code, _, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "queryMsgByOffset",
        "-t",
        "AdminMsgs",
        "-b",
        BROKER_NAME,
        "-i",
        "0",
        "-o",
        "99",
    )
    assert (
        code == 1 and "no message at offset 99 of queue 0" in err and "holds offsets 0 to 2" in err
    )
    code, _, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "queryMsgByOffset",
        "-t",
        "AdminMsgs",
        "-b",
        "nope",
        "-i",
        "0",
        "-o",
        "0",
    )
    assert code == 1 and f"no broker named 'nope' (brokers: {BROKER_NAME})" in err


def test_query_by_id_refuses_what_is_not_an_offset_message_id(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    code, _, err = run_main(capsys, "-n", cluster.namesrv, "queryMsgById", "-i", "not-an-id")
    assert code == 1 and "offset message id" in err


def test_print_msg_pulls_every_queue(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    doc = rmq_json(capsys, cluster, "printMsg", "-t", "AdminMsgs")
    assert [(q["queueId"], q["minOffset"], q["maxOffset"]) for q in doc["queues"]] == [
        (0, 0, 3),
        (1, 0, 3),
    ]
    bodies = sorted(m["body"] for q in doc["queues"] for m in q["messages"])
    assert bodies == [f"body-{i}" for i in range(6)]

    tag_a = rmq_json(capsys, cluster, "printMsg", "-t", "AdminMsgs", "-s", "TagA")
    assert sorted(m["body"] for q in tag_a["queues"] for m in q["messages"]) == [
        "body-1",
        "body-3",
        "body-5",
    ]

    code, out, err = run_main(
        capsys, "-n", cluster.namesrv, "printMsg", "-t", "AdminMsgs", "-d", "false"
    )
    assert code == 0, err
    lines = out.splitlines()
    queue0 = f"MessageQueue [topic=AdminMsgs, brokerName={BROKER_NAME}, queueId=0]"
    assert lines[0] == f"minOffset=0, maxOffset=3, {queue0}"
    msg_lines = [line for line in lines if line.startswith("MSGID: ")]
    assert len(msg_lines) == 6 and all(line.endswith("BODY: NOT PRINT BODY") for line in msg_lines)
    assert {line.split()[1] for line in msg_lines} == {m["msgId"] for m in messages}

    # A begin time after every message leaves nothing to print.
    later = rmq_json(
        capsys, cluster, "printMsg", "-t", "AdminMsgs", "-b", str(int(time.time() * 1000) + 60_000)
    )
    assert all(q["messages"] == [] for q in later["queues"])


def test_update_sub_group(capsys: pytest.CaptureFixture[str], cluster: Cluster) -> None:
    code, out, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "updateSubGroup",
        "-c",
        CLUSTER,
        "-g",
        "admin-group",
        "-r",
        "5",
        "-q",
        "2",
        "-s",
        "false",
    )
    assert code == 0, err
    assert f"create subscription group to {cluster.broker} success." in out
    r = cluster.client.invoke(cluster.broker, 201)  # GET_ALL_SUBSCRIPTIONGROUP_CONFIG
    group = json.loads(r.body or b"")["subscriptionGroupTable"]["admin-group"]
    assert (group["retryMaxTimes"], group["retryQueueNums"], group["consumeEnable"]) == (
        5,
        2,
        False,
    )
    assert group["consumeBroadcastEnable"] is False


def test_reset_offset_by_time(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    group = "admin-reset-group"
    for q in (0, 1):
        cluster.commit_offset(group, "AdminMsgs", q, 1)
    before_all = "2000-01-01#00:00:00:000"
    code, out, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "resetOffsetByTime",
        "-g",
        group,
        "-t",
        "AdminMsgs",
        "-s",
        before_all,
    )
    assert code == 0, err
    assert f"rollback consumer offset by specified group[{group}], topic[AdminMsgs]" in out
    assert [cluster.consumer_offset(group, "AdminMsgs", q) for q in (0, 1)] == [0, 0]

    doc = rmq_json(
        capsys, cluster, "resetOffsetByTime", "-g", group, "-t", "AdminMsgs", "-s", "now"
    )
    assert doc["timestamp"] == -1
    assert [cluster.consumer_offset(group, "AdminMsgs", q) for q in (0, 1)] == [3, 3]

    # Without force, offsets only move back: "the beginning" rolls back, nothing moves forward.
    cluster.commit_offset(group, "AdminMsgs", 0, 1)
    code, _, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "resetOffsetByTime",
        "-g",
        group,
        "-t",
        "AdminMsgs",
        "-s",
        "now",
        "-f",
        "false",
    )
    assert code == 0, err
    assert cluster.consumer_offset(group, "AdminMsgs", 0) == 1


def test_broker_errors_are_one_line(capsys: pytest.CaptureFixture[str], cluster: Cluster) -> None:
    dead = f"127.0.0.1:{free_port()}"
    code, out, err = run_main(capsys, "-n", cluster.namesrv, "updateTopic", "-b", dead, "-t", "X")
    assert code == 1 and out == ""
    assert err.strip() == (
        f"rmq updateTopic: cannot reach broker {dead}: connection refused — is the broker running, "
        "and is the address one rmq clusterList shows?"
    )
    code, _, err = run_main(capsys, "-n", cluster.namesrv, "consumerProgress", "-g", "never-seen")
    assert code == 1
    assert "consumer group 'never-seen' is not known to the nameserver" in err


# ---- against a broker build with the new admin codes (see the module docstring) -------------


def heartbeat(c: Cluster, group: str, topic: str) -> RemotingClient:
    """A consumer's HEART_BEAT on a connection of its own (kept open by the returned client)."""
    client = RemotingClient()
    body = {
        "clientID": "127.0.0.1@admin-test",
        "consumerDataSet": [
            {
                "groupName": group,
                "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                "unitMode": False,
                "subscriptionDataSet": [
                    {
                        "topic": topic,
                        "subString": "*",
                        "tagsSet": [],
                        "codeSet": [],
                        "expressionType": "TAG",
                        "subVersion": 0,
                        "classFilterMode": False,
                    }
                ],
            }
        ],
        "producerDataSet": [],
    }
    r = client.invoke(c.broker, RequestCode.HEART_BEAT, None, json.dumps(body).encode())
    assert r.code == ResponseCode.SUCCESS, r.remark
    return client


def test_new_codes_topic_status(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    doc = rmq_json(capsys, cluster, "topicStatus", "-t", "AdminMsgs")
    queues = {q["queueId"]: q for q in doc["queues"]}
    assert set(queues) == {0, 1}
    assert all(
        (q["brokerName"], q["minOffset"], q["maxOffset"]) == (BROKER_NAME, 0, 3)
        for q in queues.values()
    )
    assert all(q["lastUpdateTimestamp"] > 0 for q in queues.values())
    _, out, _ = run_main(capsys, "-n", cluster.namesrv, "topicStatus", "-t", "AdminMsgs")
    assert out.splitlines()[0].split()[:4] == ["#Broker", "Name", "#QID", "#Min"]


def test_new_codes_consumer_progress_and_connection(
    capsys: pytest.CaptureFixture[str], cluster: Cluster, messages: list[dict[str, Any]]
) -> None:
    group = "admin-progress-group"
    consumer = heartbeat(cluster, group, "AdminMsgs")
    try:
        cluster.commit_offset(group, "AdminMsgs", 0, 1)
        cluster.commit_offset(group, "AdminMsgs", 1, 3)
        wait_until(lambda: cluster.route(f"%RETRY%{group}"), "the group's retry topic")
        doc = rmq_json(capsys, cluster, "consumerProgress", "-g", group, "-t", "AdminMsgs")
        rows = {q["queueId"]: q for q in doc["queues"]}
        assert (rows[0]["brokerOffset"], rows[0]["consumerOffset"], rows[0]["diff"]) == (3, 1, 2)
        assert (rows[1]["brokerOffset"], rows[1]["consumerOffset"], rows[1]["diff"]) == (3, 3, 0)
        assert doc["diffTotal"] == 2
        code, out, err = run_main(capsys, "-n", cluster.namesrv, "consumerProgress", "-g", group)
        assert code == 0, err
        assert "Diff Total: 2" in out

        conn = rmq_json(capsys, cluster, "consumerConnection", "-g", group)
        assert [c["clientId"] for c in conn["connectionSet"]] == ["127.0.0.1@admin-test"]
        assert conn["messageModel"] == "CLUSTERING"
        code, out, _ = run_main(capsys, "-n", cluster.namesrv, "consumerConnection", "-g", group)
        assert "127.0.0.1@admin-test" in out and "ConsumeType: CONSUME_PASSIVELY" in out

        summary = rmq_json(capsys, cluster, "consumerProgress")
        (row,) = [g for g in summary["groups"] if g["group"] == group]
        assert (row["count"], row["type"], row["model"], row["diffTotal"]) == (
            1,
            "PUSH",
            "CLUSTERING",
            2,
        )
    finally:
        consumer.close()


def test_new_codes_broker_config(capsys: pytest.CaptureFixture[str], cluster: Cluster) -> None:
    code, out, err = run_main(
        capsys,
        "-n",
        cluster.namesrv,
        "updateBrokerConfig",
        "-b",
        cluster.broker,
        "-k",
        "fileReservedTime",
        "-v",
        "96",
    )
    assert code == 0, err
    assert f"update broker config success, {cluster.broker}" in out
    config = rmq_json(capsys, cluster, "getBrokerConfig", "-b", cluster.broker)
    assert config["fileReservedTime"] == "96"
    assert config["brokerName"] == BROKER_NAME
    code, out, _ = run_main(capsys, "-n", cluster.namesrv, "getBrokerConfig", "-c", CLUSTER)
    assert f"============Master: {cluster.broker}============" in out
    assert re.search(r"^fileReservedTime\s+= 96$", out, re.M)


# ---- against a stand-in Java broker (RocketMQ's fastjson bodies) -----------------------------


class JavaShapedPeer:
    """Answers as a Java nameserver before 4.9.4 and a Java broker would, on one port: routes
    with bare numeric keys, stats tables keyed by MessageQueue objects. Records requests."""

    def __init__(self) -> None:
        self.requests: list[tuple[int, dict[str, str], bytes | None]] = []
        self.answers: dict[int, RemotingResponse] = {}
        self.lock = threading.Lock()
        self.server = RemotingServer("127.0.0.1", 0, self)
        self.addr = self.server.local_addr.replace("0.0.0.0", "127.0.0.1")
        route = (
            '{"brokerDatas":[{"brokerAddrs":{0:"ADDR"},"brokerName":"broker-j","cluster":"JCluster"}],'
            '"filterServerTable":{},"queueDatas":[{"brokerName":"broker-j","perm":6,'
            '"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}'.replace("ADDR", self.addr)
        )
        cluster_info = (
            '{"brokerAddrTable":{"broker-j":{"brokerAddrs":{0:"ADDR"},"brokerName":"broker-j",'
            '"cluster":"JCluster"}},"clusterAddrTable":{"JCluster":["broker-j"]}}'.replace(
                "ADDR", self.addr
            )
        )
        self.answers[RequestCode.GET_ROUTEINFO_BY_TOPIC] = RemotingResponse(
            0, None, None, route.encode()
        )
        self.answers[RequestCode.GET_BROKER_CLUSTER_INFO] = RemotingResponse(
            0, None, None, cluster_info.encode()
        )
        self.answers[RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER] = RemotingResponse(
            0, None, None, b'{"topicList":["JTopic"]}'
        )

    def handle(self, request: RemotingRequest) -> RemotingResponse:
        with self.lock:
            self.requests.append((request.code, dict(request.ext_fields), request.body))
        return self.answers.get(request.code) or RemotingResponse(
            3, f"request type {request.code} not supported"
        )

    def sent(self, code: int) -> list[tuple[dict[str, str], bytes | None]]:
        with self.lock:
            return [(ext, body) for c, ext, body in self.requests if c == code]


@pytest.fixture
def java_peer() -> Iterator[JavaShapedPeer]:
    peer = JavaShapedPeer()
    try:
        yield peer
    finally:
        peer.server.shutdown()


def mq(queue_id: int, topic: str = "JTopic") -> str:
    return json.dumps({"brokerName": "broker-j", "queueId": queue_id, "topic": topic})


def fastjson_body(text: str) -> bytes:
    """A body with MessageQueue objects as map keys (MQ0, MQ1: queues 0 and 1 of JTopic)."""
    return text.replace("MQ0", mq(0)).replace("MQ1", mq(1)).encode()


def test_java_topic_status(capsys: pytest.CaptureFixture[str], java_peer: JavaShapedPeer) -> None:
    stats = (
        '{"offsetTable":{MQ1:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},'
        'MQ0:{"lastUpdateTimestamp":1700000000000,"maxOffset":10,"minOffset":2}}}'
    )
    java_peer.answers[202] = RemotingResponse(0, None, None, fastjson_body(stats))
    code, out, err = run_main(capsys, "-n", java_peer.addr, "topicStatus", "-t", "JTopic")
    assert code == 0, err
    header, q0, q1 = out.splitlines()
    assert header.split() == [
        "#Broker",
        "Name",
        "#QID",
        "#Min",
        "Offset",
        "#Max",
        "Offset",
        "#Last",
        "Updated",
    ]
    assert q0.split()[:4] == ["broker-j", "0", "2", "10"] and q0.endswith(",000")
    assert q1.split() == ["broker-j", "1", "0", "0"]
    assert java_peer.sent(202) == [({"topic": "JTopic"}, None)]


def test_java_consumer_progress_and_connection(
    capsys: pytest.CaptureFixture[str], java_peer: JavaShapedPeer
) -> None:
    stats = (
        '{"consumeTps":2.5,"offsetTable":{MQ1:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":0},'
        'MQ0:{"brokerOffset":7,"consumerOffset":7,"lastTimestamp":1700000000000}}}'
    )
    java_peer.answers[208] = RemotingResponse(0, None, None, fastjson_body(stats))
    doc = json.loads(_ok(capsys, java_peer, "--json", "consumerProgress", "-g", "jg"))
    assert doc["diffTotal"] == 6 and doc["consumeTps"] == 2.5
    assert [(q["queueId"], q["diff"]) for q in doc["queues"]] == [(0, 0), (1, 6)]
    out = _ok(capsys, java_peer, "consumerProgress", "-g", "jg", "-t", "JTopic")
    assert out.splitlines()[-2:] == ["Consume TPS: 2.50", "Diff Total: 6"]
    assert "N/A" in out  # queue 1 was never consumed
    assert [ext for ext, _ in java_peer.sent(208)] == [
        {"consumerGroup": "jg"},
        {"consumerGroup": "jg", "topic": "JTopic"},
    ]
    # The group's brokers come from its retry topic, as mqadmin finds them.
    assert {"topic": "%RETRY%jg"} in [ext for ext, _ in java_peer.sent(105)]

    conn = (
        '{"connectionSet":[{"clientAddr":"10.0.0.5:51234","clientId":"10.0.0.5@1234","language":"JAVA","version":409}],'
        '"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",'
        '"subscriptionTable":{"JTopic":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*",'
        '"subVersion":1,"tagsSet":[],"topic":"JTopic"}}}'
    )
    java_peer.answers[203] = RemotingResponse(0, None, None, conn.encode())
    out = _ok(capsys, java_peer, "consumerConnection", "-g", "jg")
    assert re.search(r"^10\.0\.0\.5@1234\s+10\.0\.0\.5:51234\s+JAVA\s+V4_9_8$", out, re.M)
    assert re.search(r"^JTopic\s+\*$", out, re.M)
    assert "MessageModel: CLUSTERING" in out
    summary = json.loads(_ok(capsys, java_peer, "--json", "consumerProgress"))
    assert summary == {"groups": []}  # no %RETRY% topic in the (empty) topic list

    java_peer.answers[203] = RemotingResponse(
        0, None, None, b'{"connectionSet":[],"subscriptionTable":{}}'
    )
    code, _, err = run_main(capsys, "-n", java_peer.addr, "consumerConnection", "-g", "jg")
    assert code == 1 and "has no connected consumer" in err


def test_java_broker_config(capsys: pytest.CaptureFixture[str], java_peer: JavaShapedPeer) -> None:
    java_peer.answers[26] = RemotingResponse(
        0,
        None,
        {"version": '{"counter":3,"timestamp":1}'},
        b"brokerName=broker-j\nfileReservedTime=72\nlistenPort=10911\n",
    )
    java_peer.answers[25] = RemotingResponse(0)
    config = json.loads(_ok(capsys, java_peer, "--json", "getBrokerConfig", "-b", java_peer.addr))
    assert config == {"brokerName": "broker-j", "fileReservedTime": "72", "listenPort": "10911"}
    out = _ok(capsys, java_peer, "getBrokerConfig", "-c", "JCluster")
    assert f"============Master: {java_peer.addr}============" in out
    out = _ok(
        capsys,
        java_peer,
        "updateBrokerConfig",
        "-c",
        "JCluster",
        "-k",
        "fileReservedTime",
        "-v",
        "48",
    )
    assert out.strip() == f"update broker config success, {java_peer.addr}"
    assert java_peer.sent(25) == [({}, b"fileReservedTime=48\n")]


def test_java_reset_offset_with_online_consumers(
    capsys: pytest.CaptureFixture[str], java_peer: JavaShapedPeer
) -> None:
    java_peer.answers[222] = RemotingResponse(
        0, None, None, fastjson_body('{"offsetTable":{MQ1:5,MQ0:0}}')
    )
    out = _ok(
        capsys,
        java_peer,
        "resetOffsetByTime",
        "-g",
        "jg",
        "-t",
        "JTopic",
        "-s",
        "1700000000000",
        "-f",
        "false",
    )
    assert out.splitlines()[1].split() == ["#brokerName", "#queueId", "#offset"]
    assert [line.split() for line in out.splitlines()[2:]] == [
        ["broker-j", "0", "0"],
        ["broker-j", "1", "5"],
    ]
    assert java_peer.sent(222) == [
        ({"topic": "JTopic", "group": "jg", "timestamp": "1700000000000", "isForce": "false"}, None)
    ]
    now = _ok(
        capsys, java_peer, "--json", "resetOffsetByTime", "-g", "jg", "-t", "JTopic", "-s", "now"
    )
    assert json.loads(now)["mode"] == "online"
    assert java_peer.sent(222)[-1][0]["timestamp"] == "-1"


def test_java_unsupported_code_names_itself(
    capsys: pytest.CaptureFixture[str], java_peer: JavaShapedPeer
) -> None:
    code, out, err = run_main(capsys, "-n", java_peer.addr, "topicStatus", "-t", "JTopic")
    assert code == 1 and out == ""
    assert err.strip() == (
        f"rmq topicStatus: GET_TOPIC_STATS_INFO to broker {java_peer.addr} failed: "
        "REQUEST_CODE_NOT_SUPPORTED (3): request type 202 not supported — is "
        f"{java_peer.addr} a broker? -b takes a broker's address (port 10911 by default), not a "
        "nameserver's; if it is one, it does not serve this request (an older RocketMQ, or one "
        "rmq does not serve yet)"
    )


def test_java_cluster_list_with_bare_keys(
    capsys: pytest.CaptureFixture[str], java_peer: JavaShapedPeer
) -> None:
    java_peer.answers[28] = RemotingResponse(
        0,
        None,
        None,
        json.dumps(
            {
                "table": {
                    "brokerVersionDesc": "V4_9_7",
                    "putTps": "12.5 11.0 10.0",
                    "getTransferedTps": "3.0 2.0 1.0",
                    "sendThreadPoolQueueSize": "0",
                    "sendThreadPoolQueueHeadWaitTimeMills": "0",
                    "pullThreadPoolQueueSize": "1",
                    "pullThreadPoolQueueHeadWaitTimeMills": "2",
                    "pageCacheLockTimeMills": "0",
                    "commitLogDiskRatio": "0.25",
                }
            }
        ).encode(),
    )
    out = _ok(capsys, java_peer, "clusterList")
    row = out.splitlines()[1].split()
    assert row[:7] == [
        "JCluster",
        "broker-j",
        "0",
        java_peer.addr,
        "V4_9_7",
        "12.50(0,0ms)",
        "3.00(1,2ms)",
    ]
    assert row[-1] == "0.2500"


def _ok(capsys: pytest.CaptureFixture[str], peer: JavaShapedPeer, *argv: str) -> str:
    code, out, err = run_main(capsys, "-n", peer.addr, *argv)
    assert code == 0, err
    return out


# ---- pieces --------------------------------------------------------------------------------


def test_fastjson_reader() -> None:
    body = (
        '{"offsetTable":{{"brokerName":"b","queueId":3,"topic":"T"}:{"x":1}},'
        '"addrs":{0:"a",-1:\'b\'}}'
    )
    doc = fastjson.loads(body.encode())
    (key,) = doc["offsetTable"]
    assert fastjson.message_queue_key(key) == MessageQueue("T", "b", 3)
    assert doc["offsetTable"][key] == {"x": 1}
    assert doc["addrs"] == {"0": "a", "-1": "b"}
    assert fastjson.loads('{"a":[1,2.5,true,null,"\\u00e9"]}') == {"a": [1, 2.5, True, None, "é"]}
    assert fastjson.loads("{'it''s':'x'}".replace("''", "\\'")) == {"it's": "x"}
    # The standard form the Rust protocol crate writes (the key is the MessageQueue's JSON text).
    std = json.dumps({"offsetTable": {'{"brokerName":"b","queueId":1,"topic":"T"}': 5}})
    (key,) = fastjson.loads(std)["offsetTable"]
    assert fastjson.message_queue_key(key) == MessageQueue("T", "b", 1)
    for bad in ("{", '{"a":}', "[1,]", '{"a":1} x', "{a:b}"):
        with pytest.raises(fastjson.FastjsonError):
            fastjson.loads(bad)
    with pytest.raises(fastjson.FastjsonError, match="nested too deeply"):
        fastjson.loads("{a:" * 300 + "1" + "}" * 300)


def test_version_desc_table_and_timestamps() -> None:
    assert version_desc(409) == "V4_9_8"
    assert version_desc(401) == "V4_9_4"
    assert version_desc(212) == "V4_0_0_SNAPSHOT"
    assert version_desc(413) == "V5_0_0"
    assert version_desc(475) == "V5_3_1"
    assert version_desc(100) == "version 100"
    assert table(("A", "Long B"), [(1, "x"), ("wide-cell", None)]) == [
        "#A         #Long B",
        "1          x",
        "wide-cell",
    ]
    assert parse_timestamp("1700000000000") == 1_700_000_000_000
    assert parse_timestamp("now", allow_now=True) == -1
    local = time.mktime(time.strptime("2024-01-31 13:45:00", "%Y-%m-%d %H:%M:%S"))
    assert parse_timestamp("2024-01-31#13:45:00:250") == int(local * 1000) + 250


def test_send_and_consume_message_through_the_sdk(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    """sendMessage stores through rmq.Producer (auto-creating the topic); consumeMessage
    reads it back through rmq.PullConsumer."""
    sent = rmq_json(capsys, cluster, "sendMessage", "-t", "AdminSdk", "-p", "hello", "-c", "TagX")
    assert sent["sendStatus"] == "SEND_OK" and len(sent["msgId"]) == 32
    wait_until(lambda: cluster.route("AdminSdk"), "route of AdminSdk")
    got = rmq_json(capsys, cluster, "consumeMessage", "-t", "AdminSdk", "-c", "10")
    assert [(m["body"], m["tags"]) for m in got["messages"]] == [("hello", "TagX")]


# ---- nameserver config, write permission, group deletion, producer connections -------------


def test_namesrv_config_and_write_perm(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    port = cluster.namesrv.rsplit(":", 1)[1]
    assert rmq_json(capsys, cluster, "getNamesrvConfig") == {cluster.namesrv: {"listenPort": port}}
    code, out, err = run_main(capsys, "-n", cluster.namesrv, "wipeWritePerm", "-b", BROKER_NAME)
    assert code == 0, err
    m = re.search(
        rf"wipe write perm of broker\[{BROKER_NAME}\] in name server\[\S+\] OK, (\d+)", out
    )
    assert m and int(m.group(1)) > 0, out
    route = cluster.route("TBW102")
    assert route and route["queueDatas"][0]["perm"] & 2 == 0
    added = rmq_json(capsys, cluster, "addWritePerm", "-b", BROKER_NAME)
    assert added["addTopicCount"] == {cluster.namesrv: int(m.group(1))}
    route = cluster.route("TBW102")
    assert route and route["queueDatas"][0]["perm"] == 6


def test_delete_sub_group_and_its_offsets(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    group = "AdminDoomedGroup"
    code, _, err = run_main(
        capsys, "-n", cluster.namesrv, "updateSubGroup", "-b", cluster.broker, "-g", group
    )
    assert code == 0, err
    cluster.commit_offset(group, "TBW102", 0, 1)
    code, out, err = run_main(
        capsys, "-n", cluster.namesrv, "deleteSubGroup", "-c", CLUSTER, "-g", group, "-r", "true"
    )
    assert code == 0, err
    assert f"delete subscription group [{group}] from broker [{cluster.broker}] success." in out
    assert cluster.consumer_offset(group, "TBW102", 0) == 0  # gone: the queue's start


def test_producer_connection(capsys: pytest.CaptureFixture[str], cluster: Cluster) -> None:
    with rmq.Producer("AdminProducers", cluster.namesrv, heartbeat_broker_interval=500) as p:
        p.send(rmq.Message("AdminProducerTopic", b"x"))

        def listed() -> bool:
            code, out, _ = run_main(
                capsys, "-n", cluster.namesrv, "producerConnection", "-g", "AdminProducers",
                "-t", "AdminProducerTopic",
            )  # fmt: skip
            return code == 0 and "127.0.0.1:" in out

        wait_until(listed, "the producer's heartbeat")
    code, _, err = run_main(
        capsys, "-n", cluster.namesrv, "producerConnection", "-g", "NoSuchProducers",
        "-t", "AdminProducerTopic",
    )  # fmt: skip
    assert code != 0 and "the producer group[NoSuchProducers] not exist" in err, err


def test_the_offset_id_other_commands_print_is_what_query_msg_by_id_takes(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    """A message from the SDK carries its unique key (UNIQ_KEY) as msgId; queryMsgByKey's
    "Offset ID" column and printMsg's OffsetID are the store's offset id, which queryMsgById
    takes (they used to print the unique key there)."""
    producer = rmq.Producer("PG_OFFSET_ID", cluster.namesrv)
    producer.start()
    try:
        result = producer.send(rmq.Message("AdminMsgs", b"offset-id", keys="offset-id-key"))
    finally:
        producer.shutdown()
    assert result.msg_id != result.offset_msg_id

    def indexed() -> Any:
        return query_by_key(capsys, cluster, "offset-id-key")

    wait_until(indexed, "the index to hold offset-id-key")
    (found,) = indexed()["messages"]
    assert (found["msgId"], found["offsetMsgId"]) == (result.msg_id, result.offset_msg_id)
    by_id = rmq_json(capsys, cluster, "queryMsgById", "-i", found["offsetMsgId"])
    assert [m["body"] for m in by_id["messages"]] == ["offset-id"]
    done = cluster.run("queryMsgById", "-i", found["offsetMsgId"])
    fields = dict(re.split(r":\s+", line, maxsplit=1) for line in done.stdout.splitlines())
    assert (fields["OffsetID"], fields["Message ID"]) == (result.offset_msg_id, result.msg_id)


@pytest.mark.parametrize(
    ("typed", "hint"),
    [
        ("clusterlist", "did you mean 'clusterList'? (names are case-sensitive)"),
        ("TOPICLIST", "did you mean 'topicList'?"),
        ("topiclst", "did you mean 'topicList'"),
        ("startMonitoring", "'startMonitoring' is an mqadmin command that rmq's admin tool"),
        ("frobnicate", "unknown command 'frobnicate': run 'rmq --help' for the list"),
    ],
)
def test_an_unknown_command_gets_a_hint_not_every_choice(
    capsys: pytest.CaptureFixture[str], typed: str, hint: str
) -> None:
    code, _, err = run_main(capsys, typed)
    assert code == 2
    assert hint in err, err
    assert "choose from" not in err


def test_a_broker_given_as_the_nameserver_is_named_as_the_likely_cause(
    capsys: pytest.CaptureFixture[str], cluster: Cluster
) -> None:
    code, _, err = run_main(capsys, "-n", cluster.broker, "clusterList")
    assert code == 1
    assert f"is {cluster.broker} a nameserver? -n takes nameserver addresses" in err, err
    assert "upgrade" not in err
    code, _, err = run_main(capsys, "-n", cluster.namesrv, "brokerStatus", "-b", cluster.namesrv)
    assert code == 1
    assert f"is {cluster.namesrv} a broker? -b takes a broker's address" in err, err
    # The SDK says the same of a producer given a broker's address as its nameserver.
    with (
        rmq.Producer("pg-wrong-addr", cluster.broker) as producer,
        pytest.raises(rmq.errors.RequestCodeNotSupportedError) as refused,
    ):
        producer.send(rmq.Message("AnyTopic", b"x"))
    assert f"is {cluster.broker} a nameserver? namesrv_addr takes" in str(refused.value)
