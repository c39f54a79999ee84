"""The mqadmin sub-commands of issue 16 item 4 against a real nameserver and two real brokers
(``ops-a``, ``ops-b`` of one cluster), each checked by the values it prints: a perm change shows
in the route, a skipped backlog leaves diff 0, cloned offsets equal the source's, a decoded id
gives back the producer's host and the broker's offset, a unique key finds the message just
sent, and the RT commands print a row per broker or per send.

One module-wide setup; the tool runs in-process through ``main(argv)``."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import rmq
import rmq.admin.commands  # registers the sub-commands
from conftest import start_namesrv
from helpers import (
    Cluster,
    Collector,
    create_topic,
    push_consumer,
    update_offset_header,
    wait_until,
)
from rmq._rmq import RemotingClient, SendResult, create_offset_msg_id
from rmq.admin import main
from rmq.admin.cli import unknown_command_hint
from rmq.admin.command import MQADMIN_COMMANDS, REGISTRY
from rmq.client.message import Message
from rmq.codes import RequestCode, ResponseCode

sys.path.insert(0, str(Path(__file__).parent / "compat" / "mqadmin"))
from mqadmin import MQAdmin

from test_mqadmin import RunningInfoConsumer

pytestmark = pytest.mark.timeout(300)  # a first run resolves mqadmin's jars with Maven

CLUSTER = "ClientCluster"  # helpers.Cluster's brokers' cluster
TOPIC = "OpsAdminTopic"
GROUP = "OpsAdminGroup"
NEW = [
    "queryMsgByUniqueKey",
    "brokerConsumeStats",
    "clusterRT",
    "checkMsgSendRT",
    "updateTopicPerm",
    "topicClusterList",
    "allocateMQ",
    "skipAccumulatedMessage",
    "cloneGroupOffset",
    "cleanExpiredCQ",
    "cleanUnusedTopic",
    "deleteExpiredCommitLog",
    "printMsgByQueue",
    "sendMsgStatus",
    "updateOrderConf",
    "queryCq",
    "producer",
    "exportConfigs",
    "exportMetadata",
]


@dataclass
class Env:
    namesrv: str
    addrs: dict[str, str]
    sent: list[SendResult]
    client: RemotingClient = field(default_factory=RemotingClient)

    def committed(self, group: str, broker: str, queue_id: int, topic: str = TOPIC) -> int | None:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        r = self.client.invoke(self.addrs[broker], RequestCode.QUERY_CONSUMER_OFFSET, ext)
        return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else None

    def commit(self, group: str, broker: str, queue_id: int, offset: int) -> None:
        ext = update_offset_header(group, TOPIC, queue_id, offset)
        r = self.client.invoke(self.addrs[broker], RequestCode.UPDATE_CONSUMER_OFFSET, ext)
        assert r.code == ResponseCode.SUCCESS, r.remark


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    work = tmp_path_factory.mktemp("ops-admin")
    with start_namesrv() as (_, ns):
        cluster = Cluster(work, ns)
        try:
            cluster.start_broker("ops-a")
            cluster.start_broker("ops-b")
            cluster.create_topic(TOPIC, queues=2)
            producer = rmq.Producer("OpsAdminProducers", ns).start()
            try:
                sent = [
                    producer.send(
                        Message(TOPIC, f"body-{i}".encode(), tags=f"Tag{i % 2}", keys=f"k{i}")
                    )
                    for i in range(12)
                ]
            finally:
                producer.shutdown()
            addrs = {name: addr for name, (_, addr) in cluster.brokers.items()}
            yield Env(ns, addrs, sent)
        finally:
            cluster.stop()


def run(capsys: pytest.CaptureFixture[str], env: Env, *argv: str) -> tuple[int, str, str]:
    code = main(["-n", env.namesrv, *argv])
    out, err = capsys.readouterr()
    return code, out, err


def ok(capsys: pytest.CaptureFixture[str], env: Env, *argv: str) -> str:
    code, out, err = run(capsys, env, *argv)
    assert code == 0, f"rmq {' '.join(argv)}: {err}"
    return out


def ok_json(capsys: pytest.CaptureFixture[str], env: Env, *argv: str) -> Any:
    return json.loads(ok(capsys, env, "--json", *argv))


def fails(capsys: pytest.CaptureFixture[str], env: Env, *argv: str) -> str:
    code, out, err = run(capsys, env, *argv)
    assert code == 1, f"rmq {' '.join(argv)} did not fail: {out}"
    assert "Traceback" not in err and err.count("\n") == 1, err
    return err


def rows(output: str, first: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.split()[:1] == [first]]


def route_perms(capsys: pytest.CaptureFixture[str], env: Env, topic: str) -> dict[str, int]:
    route = ok_json(capsys, env, "topicRoute", "-t", topic)
    return {q["brokerName"]: q["perm"] for q in route["queueDatas"]}


# ---- the names ---------------------------------------------------------------------------------


def test_new_commands_are_registered_under_mqadmins_names() -> None:
    for name in NEW:
        assert name in REGISTRY and name in MQADMIN_COMMANDS, name
    assert "decodeMessageId" in REGISTRY
    # mqadmin's own spelling of the decoder's class name is told apart by case.
    assert "did you mean 'decodeMessageId'" in unknown_command_hint("DecodeMessageId")
    assert "does not have yet" in unknown_command_hint("startMonitoring")


# ---- topics ----------------------------------------------------------------------------------


def test_update_topic_perm_shows_in_the_route(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    topic = "OpsPermTopic"
    create_topic(env.namesrv, env.addrs.values(), topic, queues=2)
    a = env.addrs["ops-a"]
    out = ok(capsys, env, "updateTopicPerm", "-t", topic, "-p", "4", "-b", a)
    assert f"update topic perm from 6 to 4 in {a} success." in out
    assert f"TopicConfig [topicName={topic}, readQueueNums=2, writeQueueNums=2, perm=R--" in out
    wait_until(lambda: route_perms(capsys, env, topic) == {"ops-a": 4, "ops-b": 6}, "perm 4")
    out = ok(capsys, env, "updateTopicPerm", "-t", topic, "-p", "4", "-b", a)
    assert out.strip() == "new perm equals to the old one!"
    out = ok(capsys, env, "updateTopicPerm", "-t", topic, "-p", "2", "-c", CLUSTER)
    assert f"update topic perm from 4 to 2 in {a} success." in out
    assert f"update topic perm from 6 to 2 in {env.addrs['ops-b']} success." in out
    wait_until(lambda: route_perms(capsys, env, topic) == {"ops-a": 2, "ops-b": 2}, "perm 2")
    err = fails(capsys, env, "updateTopicPerm", "-t", topic, "-p", "6", "-b", env.namesrv)
    assert "is not a master broker of topic" in err and a in err
    code, _, err = run(capsys, env, "updateTopicPerm", "-t", topic, "-p", "5", "-c", CLUSTER)
    assert code == 2 and "invalid choice: 5" in err


def test_topic_cluster_list_and_allocate_mq(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    assert ok(capsys, env, "topicClusterList", "-t", TOPIC).split() == [CLUSTER]
    out = ok(capsys, env, "allocateMQ", "-t", TOPIC, "-i", "10.0.0.2,10.0.0.1")
    result = json.loads(out)["result"]
    queue = [
        {"brokerName": b, "queueId": q, "topic": TOPIC} for b in ("ops-a", "ops-b") for q in (0, 1)
    ]
    # Averagely: sorted ids take contiguous blocks of the sorted queues.
    assert result == {"10.0.0.1": queue[:2], "10.0.0.2": queue[2:]}
    err = fails(capsys, env, "topicClusterList", "-t", "NoSuchOpsTopic")
    assert "TOPIC_NOT_EXIST" in err


def test_update_order_conf_put_get_delete(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    conf = "ops-a:2;ops-b:2"
    out = ok(capsys, env, "updateOrderConf", "-t", TOPIC, "-m", "put", "-v", conf)
    assert out.strip() == f"update orderConf success. topic=[{TOPIC}], orderConf=[{conf}]"
    out = ok(capsys, env, "updateOrderConf", "-t", TOPIC, "-m", "get")
    assert out.strip() == f"get orderConf success. topic=[{TOPIC}], orderConf=[{conf}]"
    ok(capsys, env, "updateOrderConf", "-t", TOPIC, "-m", "delete")
    err = fails(capsys, env, "updateOrderConf", "-t", TOPIC, "-m", "get")
    assert "no order conf for topic" in err and "-m put" in err
    err = fails(capsys, env, "updateOrderConf", "-t", TOPIC, "-m", "put", "-v", "ops-a")
    assert "brokerName:queues" in err


# ---- offsets ---------------------------------------------------------------------------------


def test_skip_accumulated_message_leaves_no_diff(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    group = GROUP + "Skip"
    for broker in env.addrs:
        for qid in (0, 1):
            env.commit(group, broker, qid, 1)
    before = ok_json(capsys, env, "consumerProgress", "-g", group, "-t", TOPIC)
    assert before["diffTotal"] == len(env.sent) - 4
    status = ok_json(capsys, env, "topicStatus", "-t", TOPIC)["queues"]
    max_offsets = {(q["brokerName"], str(q["queueId"])): q["maxOffset"] for q in status}
    out = ok(capsys, env, "skipAccumulatedMessage", "-g", group, "-t", TOPIC)
    assert out.splitlines()[0].split() == ["#brokerName", "#queueId", "#offset"], out
    got = {(r[0], r[1]): int(r[2]) for r in rows(out, "ops-a") + rows(out, "ops-b")}
    assert got == max_offsets
    after = ok_json(capsys, env, "consumerProgress", "-g", group, "-t", TOPIC)
    assert after["diffTotal"] == 0 and all(q["diff"] == 0 for q in after["queues"])
    err = fails(capsys, env, "skipAccumulatedMessage", "-g", group, "-t", TOPIC, "-c", "NoCluster")
    assert "cluster 'NoCluster' is not known" in err


def test_clone_group_offset_copies_offsets(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    src, dest = GROUP + "Src", GROUP + "Dest"
    for i, broker in enumerate(env.addrs):
        for qid in (0, 1):
            env.commit(src, broker, qid, 1 + i + qid)
    out = ok(capsys, env, "cloneGroupOffset", "-s", src, "-d", dest, "-t", TOPIC, "-o", "true")
    assert f"clone group offset success. srcGroup[{src}], destGroup=[{dest}], topic[{TOPIC}]" in out
    for i, broker in enumerate(env.addrs):
        for qid in (0, 1):
            assert env.committed(dest, broker, qid) == 1 + i + qid
    err = fails(capsys, env, "cloneGroupOffset", "-s", "NoOpsGroup", "-d", dest, "-t", TOPIC)
    assert "has consumed nothing of topic" in err and "consumerProgress -g NoOpsGroup" in err


def test_broker_consume_stats(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    group = GROUP + "Stats"
    a = env.addrs["ops-a"]
    ok(capsys, env, "updateSubGroup", "-b", a, "-g", group)  # the broker lists known groups
    env.commit(group, "ops-a", 0, 0)
    env.commit(group, "ops-a", 1, 1)
    data = ok_json(capsys, env, "brokerConsumeStats", "-b", a)
    mine = [q for q in data["queues"] if q["group"] == group]
    # Queue 0 was never consumed from (offset 0): mqadmin leaves it out; queue 1 is in.
    assert [(q["queueId"], q["consumerOffset"]) for q in mine] == [(1, 1)]
    assert mine[0]["diff"] == mine[0]["brokerOffset"] - 1 > 0
    assert data["totalDiff"] >= mine[0]["diff"]
    out = ok(capsys, env, "brokerConsumeStats", "-b", a, "-l", "1000000")
    assert rows(out, TOPIC) == [] and f"Diff Total: {data['totalDiff']}" in out


# ---- messages --------------------------------------------------------------------------------


def test_query_msg_by_unique_key_finds_the_message(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    r = env.sent[3]
    env.commit(GROUP + "Track", "ops-a", 0, 1)
    out = ok(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC)
    assert f"Message ID:          {r.msg_id}" in out
    assert f"OffsetID:            {r.offset_msg_id}" in out
    assert "Message Body:        body-3" in out and "Keys:                [k3]" in out
    (msg,) = ok_json(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC)["messages"]
    assert (msg["queueId"], msg["queueOffset"]) == (r.queue.queue_id, r.queue_offset)
    # Every group with offsets on the topic is tracked: this one never had a consumer (no
    # retry topic, so no broker to ask): UNKNOWN, as mqadmin.
    tracks = {t["consumerGroup"]: t["trackType"] for t in msg["tracks"]}
    assert tracks[GROUP + "Track"] == "UNKNOWN", tracks
    err = fails(capsys, env, "queryMsgByUniqueKey", "-i", "0" * 32, "-t", TOPIC)
    assert "has unique key" in err and "msgId a producer got back" in err
    err = fails(
        capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC, "-g", GROUP, "-d", "x"
    )
    assert "CONSUME_MESSAGE_DIRECTLY" in err


def test_decode_message_id_round_trips(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    r = env.sent[0]
    made = time.time()
    data = ok_json(capsys, env, "decodeMessageId", "-i", r.msg_id)
    assert data["kind"] == "msgId" and data["pid"] == os.getpid() & 0xFFFF
    assert made - 120 < data["timestamp"] / 1000 <= made
    out = ok(capsys, env, "decodeMessageId", "-i", r.msg_id)
    assert out.splitlines()[0] == f"ip={data['ip']}" and f"pid={data['pid']}" in out
    assert out.splitlines()[2].startswith("date=") and "#" in out.splitlines()[2]
    (stored,) = ok_json(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC)["messages"]
    out = ok(capsys, env, "decodeMessageId", "-i", r.offset_msg_id)
    assert out.split() == [
        f"brokerAddr={env.addrs[r.queue.broker_name]}",
        f"commitLogOffset={stored['commitLogOffset']}",
    ]
    # IPv6: 56 digits either way.
    v6 = create_offset_msg_id("[::1]:10911", 4096)
    assert ok(capsys, env, "decodeMessageId", "-i", v6).split() == [
        "brokerAddr=[::1]:10911",
        "commitLogOffset=4096",
    ]
    data = ok_json(capsys, env, "decodeMessageId", "-i", "0" * 31 + "1" + "04D2" + "0" * 20)
    assert (data["kind"], data["ip"], data["pid"]) == ("msgId", "::1", 1234)
    err = fails(capsys, env, "decodeMessageId", "-i", "not-an-id")
    assert "32 (IPv4) or 56 (IPv6) hex digits" in err


def test_print_msg_by_queue_counts_tags(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    mine = [s for s in env.sent if (s.queue.broker_name, s.queue.queue_id) == ("ops-b", 1)]
    args = ("printMsgByQueue", "-t", TOPIC, "-a", "ops-b", "-i", "1")
    out = ok(capsys, env, *args, "-p", "true", "-d", "true", "-f", "true")
    ids = [line.split()[1] for line in out.splitlines() if line.startswith("MSGID: ")]
    assert ids == [s.msg_id for s in mine]
    tags: dict[str, int] = {}
    for s in mine:
        tag = f"Tag{env.sent.index(s) % 2}"
        tags[tag] = tags.get(tag, 0) + 1
    counted = {r[1]: int(r[3]) for r in rows(out, "Tag:")}
    assert counted == tags
    out = ok(capsys, env, *args, "-p", "true")
    assert out.count("NOT PRINT BODY") == len(mine) and "Tag:" not in out
    # From a store time after every message: nothing.
    later = str(int(time.time() * 1000) + 60_000)
    assert ok(capsys, env, *args, "-p", "true", "-b", later) == ""
    err = fails(capsys, env, "printMsgByQueue", "-t", TOPIC, "-a", "nope", "-i", "0")
    assert "no broker named 'nope'" in err


def test_query_cq_shows_the_queue_units(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    a = env.addrs["ops-a"]
    first = next(s for s in env.sent if (s.queue.broker_name, s.queue.queue_id) == ("ops-a", 0))
    (stored,) = ok_json(capsys, env, "queryMsgByUniqueKey", "-i", first.msg_id, "-t", TOPIC)[
        "messages"
    ]
    out = ok(capsys, env, "queryCq", "-t", TOPIC, "-q", "0", "-i", "0", "-c", "1", "-b", a)
    lines = out.splitlines()
    assert lines[0] == "Queue data: " and lines[1].endswith(", min: 0"), out
    assert lines[3] == "idx: 0"
    assert lines[4].startswith(
        f"ConsumeQueueData{{physicOffset={stored['commitLogOffset']}, "
        f"physicSize={stored['storeSize']}, "
    ), out
    assert len([x for x in lines if x.startswith("idx: ")]) == 1
    err = fails(capsys, env, "queryCq", "-t", TOPIC, "-q", "9", "-i", "0", "-b", a)
    assert "9@OpsAdminTopic is not exist" in err


def test_producer_lists_connected_producers(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    group = "OpsProducerGroup"
    producer = rmq.Producer(group, env.namesrv, heartbeat_broker_interval=500).start()
    try:
        producer.send(Message(TOPIC, b"p"), queue=rmq.MessageQueue(TOPIC, "ops-a", 0))
        prefix = f"producer group ({group}) instance : clientId="

        def listed() -> list[str]:
            out = ok(capsys, env, "producer", "-b", env.addrs["ops-a"])
            return [x for x in out.splitlines() if x.startswith(prefix)]

        wait_until(listed, "the producer's heartbeat to ops-a")
        (line,) = listed()
        assert ",remoteIP=127.0.0.1:" in line and "lastUpdateTimestamp=" in line, line
        data = ok_json(capsys, env, "producer", "-b", env.addrs["ops-a"])
        (info,) = data["producers"][group]
        assert line.startswith(prefix + str(info["clientId"]) + ",")
    finally:
        producer.shutdown()


# ---- sends and RT ----------------------------------------------------------------------------


def test_cluster_rt_prints_a_row_per_broker(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    out = ok(capsys, env, "clusterRT", "-a", "3", "-s", "16", "--rounds", "1")
    got = rows(out, CLUSTER)
    assert sorted(r[1] for r in got) == ["ops-a", "ops-b"], out
    for r in got:
        assert float(r[2]) >= 0 and r[3:] == ["3", "0"], r
    out = ok(capsys, env, "clusterRT", "-a", "2", "-p", "true", "-m", "room1", "--rounds", "1")
    lines = out.splitlines()
    assert len(lines) == 2 and all(line.split("|")[1:3] == ["room1", CLUSTER] for line in lines)
    err = fails(capsys, env, "clusterRT", "-c", "NoCluster", "--rounds", "1")
    assert "cluster 'NoCluster' is not known" in err


def test_check_msg_send_rt_prints_a_row_per_send(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    out = ok(capsys, env, "checkMsgSendRT", "-t", TOPIC, "-a", "5", "-s", "32")
    sends = rows(out, "ops-a") + rows(out, "ops-b")
    assert len(sends) == 5 and all(r[2] == "true" for r in sends), out
    # Queues in turn: a0 a1 b0 b1 a0.
    assert [(r[0], r[1]) for r in out_rows(out)] == [
        ("ops-a", "0"),
        ("ops-a", "1"),
        ("ops-b", "0"),
        ("ops-b", "1"),
        ("ops-a", "0"),
    ]
    assert out.splitlines()[-1].startswith("Avg RT: ")
    err = fails(capsys, env, "checkMsgSendRT", "-t", TOPIC, "-a", "0")
    assert "-a takes a positive number, not 0" in err


def out_rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines() if line.startswith("ops-")]


def test_send_msg_status_prints_each_send_result(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    out = ok(capsys, env, "sendMsgStatus", "-b", "ops-b", "-c", "3", "-s", "30")
    lines = out.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert line.startswith("rt=") and "SendResult [sendStatus=SEND_OK" in line
        assert "messageQueue=MessageQueue [topic=ops-b, brokerName=ops-b" in line
    err = fails(capsys, env, "sendMsgStatus", "-b", "ops-x", "-c", "1")
    assert "broker 'ops-x' is not known to the nameserver (brokers: ops-a, ops-b)" in err


def test_cluster_list_more_stats_shows_day_totals(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    data = ok_json(capsys, env, "clusterList", "-m")
    today = {b["brokerName"]: b["inTotalToday"] for b in data["brokers"]}
    per_broker = {name: sum(s.queue.broker_name == name for s in env.sent) for name in env.addrs}
    for name, count in per_broker.items():
        assert today[name] >= count > 0, data
    out = ok(capsys, env, "clusterList", "-m")
    assert out.splitlines()[0].split() == [
        "#Cluster",
        "Name",
        "#Broker",
        "Name",
        "#InTotalYest",
        "#OutTotalYest",
        "#InTotalToday",
        "#OutTotalToday",
    ]
    assert len(rows(out, CLUSTER)) == 2
    err = fails(capsys, env, "clusterList", "-m", "-i", "0")
    assert "-i takes a positive number of seconds" in err


def test_export_configs_writes_the_clusters_configs(
    capsys: pytest.CaptureFixture[str], env: Env, tmp_path: Path
) -> None:
    out = ok(capsys, env, "exportConfigs", "-c", CLUSTER, "-f", str(tmp_path / "x"))
    path = tmp_path / "x" / "configs.json"
    assert out.strip() == f"export {path} success"
    exported = json.loads(path.read_text())
    assert exported["clusterScale"] == {
        "namesrvSize": 1,
        "masterBrokerSize": 2,
        "slaveBrokerSize": 0,
    }
    for name in env.addrs:
        config = exported["brokerConfigs"][name]
        assert config["brokerName"] == name and config["brokerClusterName"] == CLUSTER
        assert config["brokerId"] == "0" and config["autoCreateTopicEnable"] == "true"
    (tmp_path / "file").write_text("")
    err = fails(capsys, env, "exportConfigs", "-c", CLUSTER, "-f", str(tmp_path / "file"))
    assert "cannot write" in err and "choose another -f" in err


def test_export_metadata_writes_user_topics_and_groups(
    capsys: pytest.CaptureFixture[str], env: Env, tmp_path: Path
) -> None:
    group = GROUP + "Export"
    ok(capsys, env, "updateSubGroup", "-c", CLUSTER, "-g", group, "-q", "2")
    out = ok(capsys, env, "exportMetadata", "-c", CLUSTER, "-f", str(tmp_path))
    assert out.strip() == f"export {tmp_path / 'metadata.json'} success"
    exported = json.loads((tmp_path / "metadata.json").read_text())
    topic = exported["topicConfigTable"][TOPIC]
    assert (topic["readQueueNums"], topic["writeQueueNums"]) == (4, 4)  # 2 on each broker
    assert (
        "TBW102" not in exported["topicConfigTable"] and "ops-a" not in exported["topicConfigTable"]
    )
    assert exported["subscriptionGroupTable"][group]["retryQueueNums"] == 4
    assert "TOOLS_CONSUMER" not in exported["subscriptionGroupTable"]
    out = ok(capsys, env, "exportMetadata", "-b", env.addrs["ops-a"], "-t", "-f", str(tmp_path))
    one = json.loads((tmp_path / "topic.json").read_text())
    assert one["topicConfigTable"][TOPIC]["readQueueNums"] == 2 and "dataVersion" in one
    err = fails(capsys, env, "exportMetadata", "-b", env.addrs["ops-a"])
    assert "choose what to export: -t (topics) or -g (groups)" in err


def test_store_housekeeping_commands(capsys: pytest.CaptureFixture[str], env: Env) -> None:
    a = env.addrs["ops-a"]
    out = ok(capsys, env, "cleanExpiredCQ", "-b", a)
    assert out.splitlines()[0] == "success" and f"{a}: removed 0 expired" in out
    out = ok(capsys, env, "cleanUnusedTopic", "-c", CLUSTER)
    assert out.splitlines()[0] == "success"
    assert all(f"{x}: removed" in out for x in env.addrs.values())
    data = ok_json(capsys, env, "deleteExpiredCommitLog")
    assert sorted(b["addr"] for b in data["brokers"]) == sorted(env.addrs.values())
    assert all("deleted 0 expired CommitLog" in b["remark"] for b in data["brokers"])
    err = fails(capsys, env, "cleanExpiredCQ", "-c", "NoCluster")
    assert "cluster 'NoCluster' is not known" in err


def test_query_msg_by_unique_key_consumes_directly(
    capsys: pytest.CaptureFixture[str], env: Env
) -> None:
    """-g -d: the broker holding the message relays it to that client (CONSUME_MESSAGE_DIRECTLY)
    and the client's answer is printed as mqadmin prints it."""
    i, r = next((i, s) for i, s in enumerate(env.sent) if s.queue.broker_name == "ops-a")
    group, client_id = GROUP + "Direct", "10.0.0.9@ops"
    consumer = RunningInfoConsumer(env.addrs["ops-a"], client_id, group, [TOPIC])
    try:
        out = ok(
            capsys,
            env,
            "queryMsgByUniqueKey",
            "-i",
            r.msg_id,
            "-t",
            TOPIC,
            "-g",
            group,
            "-d",
            client_id,
        )
        assert out.strip() == (
            "ConsumeMessageDirectlyResult [order=false, autoCommit=true, "
            f"consumeResult=CR_SUCCESS, remark=consumed body-{i} from ops-a, spentTimeMills=1]"
        )
        ((asked, _),) = consumer.requests(RequestCode.CONSUME_MESSAGE_DIRECTLY)
        assert asked["extFields"]["msgId"] == r.offset_msg_id
    finally:
        consumer.close()
    err = fails(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC, "-g", group)
    assert "give both -g consumerGroup and -d clientId" in err


# ---- with a consumer online, and against Apache's mqadmin -------------------------------------


def _max_offsets(env: Env) -> dict[tuple[str, int], int]:
    """(broker name, queue id) → max offset of each of TOPIC's queues."""
    out: dict[tuple[str, int], int] = {}
    for broker, addr in env.addrs.items():
        for qid in (0, 1):
            ext = {"topic": TOPIC, "queueId": str(qid)}
            r = env.client.invoke(addr, RequestCode.GET_MAX_OFFSET, ext)
            out[(broker, qid)] = int(r.ext_fields["offset"])
    return out


@pytest.fixture(scope="module")
def online(env: Env) -> Iterator[rmq.PushConsumer]:
    """GROUP consuming TOPIC, caught up (every offset committed at the end of its queue)."""
    got = Collector()
    consumer = push_consumer(env.namesrv, GROUP, TOPIC, got)
    try:
        ends = _max_offsets(env)
        wait_until(lambda: got.count() >= sum(ends.values()), "the consumer to get every message")
        wait_until(
            lambda: all(env.committed(GROUP, b, q) == end for (b, q), end in ends.items()),
            "the consumer to commit its offsets",
        )
        yield consumer
    finally:
        consumer.shutdown()


def test_online_group_is_tracked_as_consumed(
    capsys: pytest.CaptureFixture[str], env: Env, online: rmq.PushConsumer
) -> None:
    r = env.sent[5]
    (msg,) = ok_json(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC)["messages"]
    tracks = {t["consumerGroup"]: t["trackType"] for t in msg["tracks"]}
    assert tracks[GROUP] == "CONSUMED", tracks
    out = ok(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC)
    assert f"MessageTrack [consumerGroup={GROUP}, trackType=CONSUMED, exceptionDesc=null]" in out
    # Online, the broker resets the consumer's offsets itself: the 3-column answer.
    out = ok(capsys, env, "skipAccumulatedMessage", "-g", GROUP, "-t", TOPIC)
    assert out.splitlines()[0].split() == ["#brokerName", "#queueId", "#offset"], out
    assert len(rows(out, "ops-a") + rows(out, "ops-b")) == 4


def test_apache_mqadmin_prints_the_same(
    capsys: pytest.CaptureFixture[str],
    env: Env,
    online: rmq.PushConsumer,
    tmp_path: Path,
) -> None:
    """Apache 4.9.7's mqadmin against the same cluster prints what rmq's tool prints."""
    with MQAdmin(tmp_path, env.namesrv) as apache:

        def theirs(*argv: str) -> str:
            result = apache.run(*argv)
            assert not result.failed, result.output
            return result.output

        assert theirs("topicClusterList", "-t", TOPIC).split() == [CLUSTER]
        a = env.addrs["ops-a"]
        ours = rows(ok(capsys, env, "brokerConsumeStats", "-b", a), TOPIC)
        apache_out = theirs("brokerConsumeStats", "-b", a)
        # #Topic #Group #Broker Name #QID #Broker Offset #Consumer Offset #Diff (then the time)
        assert sorted(r[:7] for r in rows(apache_out, TOPIC)) == sorted(r[:7] for r in ours)
        total = [line for line in apache_out.splitlines() if line.startswith("Diff Total")]
        assert total == [
            line
            for line in ok(capsys, env, "brokerConsumeStats", "-b", a).splitlines()
            if line.startswith("Diff Total")
        ]
        ours_more = rows(ok(capsys, env, "clusterList", "-m"), CLUSTER)
        assert sorted(rows(theirs("clusterList", "-m"), CLUSTER)) == sorted(ours_more)
        topic = "OpsApachePermTopic"
        create_topic(env.namesrv, env.addrs.values(), topic, queues=2)
        apache_out = theirs("updateTopicPerm", "-t", topic, "-p", "4", "-b", a)
        wait_until(lambda: route_perms(capsys, env, topic)["ops-a"] == 4, "Apache's perm 4")
        ours_out = ok(capsys, env, "updateTopicPerm", "-t", topic, "-p", "6", "-b", a)
        assert apache_out.splitlines() == [
            line.replace("4 to 6", "6 to 4").replace("RW-", "R--") for line in ours_out.splitlines()
        ]
        apache_out = theirs("sendMsgStatus", "-b", "ops-b", "-c", "2")
        send_line = re.compile(
            r"rt=\d+ms, SendResult=SendResult \[sendStatus=SEND_OK, msgId=[0-9A-F]{32}, "
            r"offsetMsgId=[0-9A-F]{32}, messageQueue=MessageQueue \[topic=ops-b, "
            r"brokerName=ops-b, queueId=\d+\], queueOffset=\d+\]"
        )
        assert len(apache_out.splitlines()) == 2, apache_out
        assert all(send_line.fullmatch(x) for x in apache_out.splitlines()), apache_out
        ours_out = ok(capsys, env, "sendMsgStatus", "-b", "ops-b", "-c", "2")
        assert len(ours_out.splitlines()) == 2, ours_out
        assert all(send_line.fullmatch(x) for x in ours_out.splitlines()), ours_out
        theirs("exportMetadata", "-c", CLUSTER, "-f", str(tmp_path / "apache"))
        ok(capsys, env, "exportMetadata", "-c", CLUSTER, "-f", str(tmp_path / "rmq"))
        exported = [
            json.loads((tmp_path / d / "metadata.json").read_text()) for d in ("apache", "rmq")
        ]
        for table in ("topicConfigTable", "subscriptionGroupTable"):
            assert exported[0][table] == exported[1][table], table
        # Apache's exportConfigs reads keys rmq has no setting for (useTLS, filterServerNums).
        theirs("exportConfigs", "-c", CLUSTER, "-f", str(tmp_path / "apache"))
        configs = json.loads((tmp_path / "apache" / "configs.json").read_text())
        assert configs["brokerConfigs"]["ops-a"]["brokerName"] == "ops-a", configs
        cq = ("queryCq", "-t", TOPIC, "-q", "1", "-i", "0", "-b", a)
        assert theirs(*cq).splitlines() == ok(capsys, env, *cq).splitlines()
        r = env.sent[7]
        # Not theirs(): the UNKNOWN tracks' descriptions carry Java exception names.
        apache_out = apache.run("queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC).output
        ours_out = ok(capsys, env, "queryMsgByUniqueKey", "-i", r.msg_id, "-t", TOPIC)
        for label in (
            "Topic:",
            "Tags:",
            "Keys:",
            "Queue ID:",
            "Queue Offset:",
            "CommitLog Offset:",
        ):
            assert _field(apache_out, label) == _field(ours_out, label), label
        assert _tracks(apache_out) == _tracks(ours_out)
        assert ("consumerGroup=" + GROUP, "trackType=CONSUMED") in _tracks(ours_out)


def _field(out: str, label: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith(label)]
    return line[len(label) :].strip()


def _tracks(out: str) -> set[tuple[str, str]]:
    """(consumerGroup=G, trackType=T) of each MessageTrack printed."""
    found = re.findall(r"MessageTrack \[(consumerGroup=[^,]*), (trackType=[A-Z_]*)", out)
    return set(found)
