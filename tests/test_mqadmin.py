"""Apache RocketMQ's own admin tool, mqadmin 4.9.7 (``rocketmq-tools`` from Maven Central),
against a real rmq nameserver and broker: its topic, message, consumer, broker, cluster and
nameserver commands, each checked by what it PRINTS (mqadmin prints a failed command's stack
trace and still returns normally, so the output is what tells).

One module-wide setup: a nameserver, a broker, a producer group that stays connected, twelve
messages with keys and tags, and a push-consumer group that has consumed and committed all of
them. The commands run in one warm JVM (``tests/compat/mqadmin``), a few milliseconds each.
Needs Java 17 and Maven (``make test`` installs them when missing)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import rmq
from helpers import TEST_STORE_CONF, BrokerProcess, free_port, wait_until
from rmq import fastjson
from rmq._rmq import RemotingClient, SendResult, StoredMessage, decode_messages
from rmq.codes import RequestCode, ResponseCode
from test_broker_admin import RawConsumer

sys.path.insert(0, str(Path(__file__).parent / "compat" / "mqadmin"))
from mqadmin import CommandResult, MQAdmin

pytestmark = pytest.mark.timeout(300)  # a first run resolves ~20 MB of jars with Maven

CLUSTER = "MqadminCluster"
BROKER = "broker-mq"
TOPIC = "MqadminTopic"
GROUP = "MqadminGroup"
PRODUCERS = "MqadminProducers"
COUNT = 12


@dataclass
class Env:
    namesrv: str
    broker_addr: str
    admin: MQAdmin
    broker: BrokerProcess
    sent: list[SendResult]
    work: Path
    client: RemotingClient = field(default_factory=RemotingClient)

    def run(self, *args: str, limit_s: float = 60.0) -> CommandResult:
        return self.admin.run(*args, limit_s=limit_s)

    def ok(self, *args: str, expect: str | None = None) -> str:
        """Run a command that must succeed; return its output."""
        r = self.run(*args)
        assert not r.failed, f"mqadmin {' '.join(args)} failed:\n{r.output}\n{self.logs()}"
        if expect is not None:
            assert expect in r.output, f"mqadmin {' '.join(args)}: no {expect!r} in\n{r.output}"
        return r.output

    def logs(self) -> str:
        return "broker log tail:\n" + "".join(self.broker.lines[-20:])

    def committed(self, group: str, topic: str, queue_id: int) -> int | None:
        ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
        r = self.client.invoke(self.broker_addr, RequestCode.QUERY_CONSUMER_OFFSET, ext)
        return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else None


def start_namesrv() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.namesrv", "--host", "127.0.0.1", "-p", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        m = re.search(r"listening on (127\.0\.0\.1:\d+)", proc.stderr.readline())
        if m:
            return proc, m.group(1)
    proc.kill()
    raise AssertionError("nameserver did not start")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    work = tmp_path_factory.mktemp("mqadmin")
    ns_proc, ns = start_namesrv()
    port = free_port()
    conf = work / "broker.conf"
    conf.write_text(
        f"brokerClusterName = {CLUSTER}\nbrokerName = {BROKER}\nbrokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\nstorePathRootDir = {work / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\nautoCreateTopicEnable = true\n" + TEST_STORE_CONF
    )
    broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=work)
    producer = consumer = admin = None
    try:
        broker.wait_for("listening on")
        producer = rmq.Producer(PRODUCERS, ns, heartbeat_broker_interval=1000).start()
        sent = [
            producer.send(
                rmq.Message(
                    TOPIC, f"body-{i}".encode(), tags="TagA" if i % 2 else "TagB", keys=f"key-{i}"
                )
            )
            for i in range(COUNT)
        ]
        got: list[StoredMessage] = []
        lock = threading.Lock()

        def listener(msgs: list[StoredMessage]) -> rmq.ConsumeConcurrentlyStatus:
            with lock:
                got.extend(msgs)
            return rmq.ConsumeConcurrentlyStatus.CONSUME_SUCCESS

        consumer = rmq.PushConsumer(
            GROUP,
            ns,
            consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            rebalance_interval_ms=1000,
            persist_consumer_offset_interval=300,
        )
        consumer.subscribe(TOPIC, "*")
        consumer.register_message_listener_concurrently(listener)  # type: ignore[arg-type]
        consumer.start()
        e = Env(ns, f"127.0.0.1:{port}", MQAdmin(work, ns), broker, sent, work)
        admin = e.admin
        wait_until(lambda: len(got) >= COUNT, "the consumer to get every message")

        def all_committed() -> bool:
            per_queue: dict[int, int] = {}
            for r in sent:
                q = r.queue.queue_id
                per_queue[q] = max(per_queue.get(q, 0), r.queue_offset + 1)
            return all(e.committed(GROUP, TOPIC, q) == off for q, off in per_queue.items())

        wait_until(all_committed, "the consumer's offsets to be committed")
        yield e
    finally:
        if admin is not None:
            admin.close()
        if consumer is not None:
            consumer.shutdown()
        if producer is not None:
            producer.shutdown()
        broker.proc.kill()
        broker.finish()
        ns_proc.kill()
        ns_proc.wait(10)
        assert ns_proc.stderr is not None
        ns_proc.stderr.close()


def rows(output: str, first: str) -> list[list[str]]:
    """Whitespace-split lines of a table whose first column is ``first``."""
    return [line.split() for line in output.splitlines() if line.split()[:1] == [first]]


def test_topic_commands(env: Env) -> None:
    env.ok("updateTopic", "-c", CLUSTER, "-t", "MqadminTmp", "-r", "2", "-w", "2", expect="success")
    listed = env.ok("topicList").split()
    assert TOPIC in listed and "MqadminTmp" in listed
    # -c: cluster, topic and the groups consuming it (QUERY_TOPIC_CONSUME_BY_WHO).
    assert [CLUSTER, TOPIC, GROUP] in rows(env.ok("topicList", "-c"), CLUSTER)
    route = fastjson.loads(env.ok("topicRoute", "-t", TOPIC))
    assert route["queueDatas"][0]["brokerName"] == BROKER
    assert route["queueDatas"][0]["perm"] == 6
    status = rows(env.ok("topicStatus", "-t", TOPIC), BROKER)
    assert len(status) == 4
    assert sum(int(r[3]) for r in status) == COUNT  # #Max Offset per queue
    assert env.ok("topicClusterList", "-t", TOPIC).split() == [CLUSTER]
    assert "SEND_OK" in env.ok("sendMessage", "-t", "MqadminTmp", "-p", "short-lived")
    env.ok("deleteTopic", "-c", CLUSTER, "-t", "MqadminTmp", expect="from NameServer success")
    assert "MqadminTmp" not in env.ok("topicList").split()
    # The deleted topic's ConsumeQueue stays on disk until cleanUnusedTopic (CLEAN_UNUSED_TOPIC).
    queues = env.work / "store" / "consumequeue"
    assert (queues / "MqadminTmp").is_dir()
    assert env.ok("cleanUnusedTopic", "-c", CLUSTER).strip() == "success"
    assert not (queues / "MqadminTmp").exists()
    assert (queues / TOPIC).is_dir()


def test_cluster_list_and_broker_status(env: Env) -> None:
    out = env.ok("clusterList")
    (row,) = rows(out, CLUSTER)
    # #Cluster #Broker #BID #Addr #Version #InTPS(LOAD) #OutTPS(LOAD) #PCWait #Hour #SPACE
    assert row[1:5] == [BROKER, "0", env.broker_addr, "V4_9_8"], out
    assert float(row[5].split("(")[0]) >= 0.0 and float(row[6].split("(")[0]) >= 0.0
    assert 0.0 < float(row[-1]) <= 1.0  # commit log disk ratio
    (more,) = rows(env.ok("clusterList", "-m"), CLUSTER)
    assert int(more[4]) >= COUNT  # messages in today
    assert int(more[5]) >= COUNT  # messages out today (the consumer got them all)

    status = dict(
        (k.strip(), v.strip())
        for k, v in (
            line.split(":", 1)
            for line in env.ok("brokerStatus", "-b", env.broker_addr).splitlines()
            if ":" in line
        )
    )
    for key in ("putTps", "getTransferedTps", "getFoundTps", "getMissTps"):
        assert len([float(x) for x in status[key].split()]) == 3, (key, status[key])
    assert int(status["msgPutTotalTodayNow"]) >= COUNT
    assert int(status["msgGetTotalTodayNow"]) >= COUNT
    assert int(status["earliestMessageTimeStamp"]) <= int(time.time() * 1000)
    assert int(status["earliestMessageTimeStamp"]) >= int(status["bootTimestamp"])
    assert status["brokerVersionDesc"] == "V4_9_8"
    assert status["commitLogDirCapacity"].startswith("Total : ")

    assert "fileReservedTime" in env.ok("getBrokerConfig", "-b", env.broker_addr)
    env.ok("updateBrokerConfig", "-b", env.broker_addr, "-k", "fileReservedTime", "-v", "49")
    config = env.ok("getBrokerConfig", "-b", env.broker_addr)
    assert re.search(r"fileReservedTime\s+=\s+49\b", config), config


def test_consumer_and_producer_commands(env: Env) -> None:
    progress = env.ok("consumerProgress", "-g", GROUP)
    queues = rows(progress, TOPIC)
    assert len(queues) == 4
    assert all(r[3] == r[4] for r in queues), progress  # broker offset == consumer offset
    assert re.search(r"Diff Total: 0\b", progress)
    assert GROUP in env.ok("consumerProgress").split()
    connection = env.ok("consumerConnection", "-g", GROUP)
    assert "CLUSTERING" in connection and "CONSUME_FROM_FIRST_OFFSET" in connection
    assert re.search(rf"{TOPIC}\s+\*", connection), connection
    producers = env.ok("producerConnection", "-g", PRODUCERS, "-t", TOPIC)
    assert re.search(r"^0001\s+\S+@\S+\s+127\.0\.0\.1:\d+\s+\w+\s+V\d", producers, re.M), producers
    stats = env.ok("brokerConsumeStats", "-b", env.broker_addr)
    mine = [r for r in rows(stats, TOPIC) if r[1] == GROUP]
    assert len(mine) == 4 and all(r[4] == r[5] for r in mine), stats
    assert re.search(r"Diff Total: 0\b", stats)
    # statsAll: topic, group, accumulation, in/out TPS, messages in/out in 24 h.
    # (VIEW_BROKER_STATS_DATA: puts from the topic's queue offsets, gets from the group's
    # committed offsets, over the last minute / hour / day.)
    (all_row,) = [r for r in rows(env.ok("statsAll", "-t", TOPIC), TOPIC) if r[1] == GROUP]
    assert all_row[2] == "0", all_row  # accumulation
    assert float(all_row[3]) > 0 and float(all_row[4]) > 0, all_row  # in / out TPS
    assert int(all_row[5]) >= COUNT and int(all_row[6]) >= COUNT, all_row  # in / out 24 h
    view = {"statsName": "GROUP_GET_NUMS", "statsKey": f"{TOPIC}@NoSuchGroup"}
    missing = env.client.invoke(env.broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, view)
    assert missing.code == ResponseCode.SYSTEM_ERROR
    assert missing.remark and missing.remark.startswith("The stats <GROUP_GET_NUMS> <")
    allocation = json.loads(env.ok("allocateMQ", "-t", TOPIC, "-i", "10.0.0.1,10.0.0.2"))
    assert sorted(len(v) for v in allocation["result"].values()) == [2, 2]

    # cloneGroupOffset: a new group starts where GROUP is.
    env.ok("cloneGroupOffset", "-s", GROUP, "-d", "MqadminClone", "-t", TOPIC, expect="success")
    cloned = [env.committed("MqadminClone", TOPIC, q) for q in range(4)]
    assert cloned == [env.committed(GROUP, TOPIC, q) for q in range(4)]
    assert sum(c or 0 for c in cloned) >= COUNT
    # (A group with offsets but no retry topic would fail queryMsgById's consumer track, as it
    # would on RocketMQ: drop the clone's offsets again.)
    env.ok("deleteSubGroup", "-c", CLUSTER, "-g", "MqadminClone", "-r", "true")

    # resetOffsetByTime to now: the live consumer keeps its (already final) offsets.
    reset = env.ok("resetOffsetByTime", "-g", GROUP, "-t", TOPIC, "-s", "now")
    assert len(rows(reset, BROKER)) == 4, reset


def test_subscription_group_delete_removes_offsets(env: Env) -> None:
    group = "MqadminDoomed"
    ext = {"consumerGroup": group, "topic": TOPIC, "queueId": "1", "commitOffset": "1"}
    groups_of = lambda: json.loads(  # noqa: E731
        env.client.invoke(env.broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body
        or b"{}"
    )["subscriptionGroupTable"]
    # Without -r the group goes, its offsets stay.
    env.ok("updateSubGroup", "-c", CLUSTER, "-g", group, expect="success")
    assert group in groups_of()
    r = env.client.invoke(env.broker_addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
    assert r.code == ResponseCode.SUCCESS
    env.ok("deleteSubGroup", "-c", CLUSTER, "-g", group, expect="success")
    assert group not in groups_of()
    assert env.committed(group, TOPIC, 1) == 1
    # With -r true the offsets go too: the broker then answers 0, the queue's start (as
    # RocketMQ does for a group without an offset).
    env.ok("updateSubGroup", "-c", CLUSTER, "-g", group)
    env.ok("deleteSubGroup", "-c", CLUSTER, "-g", group, "-r", "true", expect="success")
    assert group not in groups_of()
    assert env.committed(group, TOPIC, 1) == 0


def test_message_queries(env: Env) -> None:
    first = env.sent[3]
    by_id = env.ok("queryMsgById", "-i", first.offset_msg_id)
    assert re.search(rf"Topic:\s+{TOPIC}", by_id) and re.search(r"Keys:\s+\[key-3\]", by_id), by_id
    # The message's consumers (QUERY_TOPIC_CONSUME_BY_WHO + GET_CONSUME_STATS): consumed.
    assert f"MessageTrack [consumerGroup={GROUP}, trackType=CONSUMED," in by_id, by_id
    by_key = env.ok("queryMsgByKey", "-t", TOPIC, "-k", "key-3")
    assert (
        rows(by_key, first.offset_msg_id) or first.offset_msg_id in by_key or first.msg_id in by_key
    )
    by_unique = env.ok("queryMsgByUniqueKey", "-i", first.msg_id, "-t", TOPIC)
    assert re.search(r"Keys:\s+\[key-3\]", by_unique), by_unique
    q = first.queue.queue_id
    by_offset = env.ok(
        "queryMsgByOffset", "-t", TOPIC, "-b", BROKER, "-i", str(q), "-o", str(first.queue_offset)
    )
    assert re.search(r"Keys:\s+\[key-3\]", by_offset), by_offset
    # queryCq: the queue's units point at the CommitLog offsets the sends returned.
    in_queue = sorted((r for r in env.sent if r.queue.queue_id == q), key=lambda r: r.queue_offset)
    cq = env.ok(
        "queryCq", "-t", TOPIC, "-q", str(q), "-i", "0", "-c", str(len(in_queue)),
        "-b", env.broker_addr, "-g", GROUP,
    )  # fmt: skip
    assert '"subString":"*"' in cq and re.search(r"max: \d+, min: 0", cq), cq
    listed = [int(x) for x in re.findall(r"physicOffset=(\d+)", cq)]
    assert listed == [int(r.offset_msg_id[16:], 16) for r in in_queue], cq
    printed = env.ok("printMsg", "-t", TOPIC, "-d", "true")
    assert all(f"body-{i}" in printed for i in range(COUNT)), printed
    by_queue = env.ok(
        "printMsgByQueue", "-t", TOPIC, "-a", BROKER, "-i", str(q), "-p", "true", "-d", "true"
    )
    assert "body-3" in by_queue, by_queue


def test_send_consume_and_round_trip_times(env: Env) -> None:
    sent = env.ok(
        "sendMessage",
        "-t",
        "MqadminSend",
        "-p",
        "hello-mqadmin",
        "-k",
        "k1",
        "-b",
        BROKER,
        "-i",
        "0",
    )
    assert "SEND_OK" in sent, sent
    consumed = env.ok(
        "consumeMessage", "-t", "MqadminSend", "-b", BROKER, "-i", "0", "-o", "0", "-c", "1"
    )
    assert "hello-mqadmin" in consumed, consumed
    rt = env.ok("checkMsgSendRT", "-t", TOPIC, "-a", "3", "-s", "64")
    assert len(re.findall(r"\btrue\b", rt)) == 3, rt
    # clusterRT measures in an endless loop: the driver interrupts it after its first round.
    r = env.run("clusterRT", "-a", "3", "-s", "64", "-c", CLUSTER, "-i", "60", limit_s=5)
    assert r.interrupted
    (round_one,) = rows(r.output, CLUSTER)
    assert round_one[1] == BROKER and round_one[3:5] == ["3", "0"], r.output  # 3 ok, 0 failed


def test_nameserver_commands(env: Env) -> None:
    before = env.ok("getNamesrvConfig")
    port = env.namesrv.rsplit(":", 1)[1]
    assert re.search(rf"listenPort\s+=\s+{port}\b", before), before
    env.ok("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "true", expect="success")
    assert re.search(r"orderMessageEnable\s+=\s+true", env.ok("getNamesrvConfig"))
    refused = env.run("updateNamesrvConfig", "-k", "kvConfigPath", "-v", "/tmp/x")
    assert refused.failed and "Can not update config path" in refused.output

    env.ok("updateKvConfig", "-s", "MQADMIN_NS", "-k", "k1", "-v", "v1", expect="success")
    kv = {"namespace": "MQADMIN_NS", "key": "k1"}
    assert env.client.invoke(env.namesrv, RequestCode.GET_KV_CONFIG, kv).ext_fields["value"] == "v1"
    env.ok("deleteKvConfig", "-s", "MQADMIN_NS", "-k", "k1", expect="success")
    gone = env.client.invoke(env.namesrv, RequestCode.GET_KV_CONFIG, kv)
    assert gone.code == ResponseCode.QUERY_NOT_FOUND


def test_wipe_write_perm_then_add_it_back(env: Env) -> None:
    wiped = env.ok("wipeWritePerm", "-b", BROKER)
    n = int(re.search(r"OK, (\d+)", wiped).group(1))  # type: ignore[union-attr]
    assert n > 0
    route = fastjson.loads(env.ok("topicRoute", "-t", TOPIC))
    assert route["queueDatas"][0]["perm"] == 4
    refused = env.run("sendMessage", "-t", TOPIC, "-p", "refused")
    assert refused.failed and "SEND_OK" not in refused.output
    added = env.ok("addWritePerm", "-b", BROKER)
    assert re.search(rf"OK, {n}\b", added), added
    assert fastjson.loads(env.ok("topicRoute", "-t", TOPIC))["queueDatas"][0]["perm"] == 6
    assert "SEND_OK" in env.ok("sendMessage", "-t", TOPIC, "-p", "accepted-again")


def test_clean_expired_consume_queues(env: Env) -> None:
    # Nothing has expired here (retention deleted no CommitLog file): success, nothing lost.
    assert env.ok("cleanExpiredCQ", "-b", env.broker_addr).strip() == "success"
    status = rows(env.ok("topicStatus", "-t", TOPIC), BROKER)
    assert sum(int(r[3]) for r in status) >= COUNT


def test_broker_housekeeping_producers_and_exports(env: Env) -> None:
    # Retention on demand: nothing is 72 h old here, so nothing goes.
    assert env.ok("deleteExpiredCommitLog", "-c", CLUSTER).strip() == "success"
    assert len(rows(env.ok("topicStatus", "-t", TOPIC), BROKER)) == 4
    producers = env.ok("producer", "-b", env.broker_addr)
    m = re.search(
        rf"producer group \({PRODUCERS}\) instance : clientId=\S+@\S+,"
        r"remoteIP=127\.0\.0\.1:\d+, language=\w+, version=\d+, lastUpdateTimestamp=(\d+)",
        producers,
    )
    assert m, producers
    # The last heartbeat (1 s interval) in ms since the epoch.
    assert abs(int(m.group(1)) - time.time() * 1000) < 30_000, producers
    export = env.work / "export"
    env.ok("exportMetadata", "-c", CLUSTER, "-f", str(export), expect="success")
    metadata = fastjson.loads((export / "metadata.json").read_text())
    assert TOPIC in metadata["topicConfigTable"]
    assert "TBW102" not in metadata["topicConfigTable"]  # system topics left out (305)
    assert GROUP in metadata["subscriptionGroupTable"]
    env.ok("exportMetrics", "-c", CLUSTER, "-f", str(export), expect="success")
    quota = fastjson.loads((export / "metrics.json").read_text())["evaluateReport"][BROKER]
    assert float(quota["runtimeQuota"]["messageAverageSize"]) > 0


class RunningInfoConsumer(RawConsumer):
    """A consumer that answers GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY
    (309) the way a Java consumer does."""

    def on_frame(self, header: dict[str, Any], body: bytes) -> None:
        if header.get("code") == RequestCode.CONSUME_MESSAGE_DIRECTLY and not header["flag"] & 1:
            (msg,) = decode_messages(body)  # the broker attached the stored message
            result = {
                "order": False,
                "autoCommit": True,
                "consumeResult": "CR_SUCCESS",
                "remark": f"consumed {msg.body.decode()} from {header['extFields']['brokerName']}",
                "spentTimeMills": 1,
            }
            self.respond(header["opaque"], ResponseCode.SUCCESS, json.dumps(result).encode())
        if header.get("code") == RequestCode.GET_CONSUMER_RUNNING_INFO and not header["flag"] & 1:
            info = {
                "properties": {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "asked": "yes"},
                "subscriptionSet": [],
                "mqTable": {},
                "statusTable": {},
            }
            self.respond(header["opaque"], ResponseCode.SUCCESS, json.dumps(info).encode())


def test_consumer_status_and_direct_consume_are_relayed_to_the_consumer(env: Env) -> None:
    group = "MqadminStatusGroup"
    consumer = RunningInfoConsumer(env.broker_addr, "10.0.0.9@status", group, [TOPIC])
    try:
        out = env.ok("consumerStatus", "-g", group, "-i", "10.0.0.9@status")
        assert out.startswith("#Consumer Properties#\n"), out
        assert re.search(r"^asked\s+: yes$", out, re.M), out
        (asked,) = consumer.requests(RequestCode.GET_CONSUMER_RUNNING_INFO)
        assert asked[0]["extFields"]["clientId"] == "10.0.0.9@status"
        # queryMsgById -g -d: CONSUME_MESSAGE_DIRECTLY, the stored message relayed to it.
        pushed = env.ok(
            "queryMsgById", "-i", env.sent[5].offset_msg_id, "-g", group, "-d", "10.0.0.9@status"
        )
        assert "consumeResult=CR_SUCCESS, remark=consumed body-5 from broker-mq" in pushed, pushed
        missing = env.run("consumerStatus", "-g", group, "-i", "10.0.0.9@nobody")
        assert (
            missing.failed
            and "The Consumer <MqadminStatusGroup> <10.0.0.9@nobody> not online" in missing.output
        )
    finally:
        consumer.close()
    # rmq's own Python consumer answers both: its running info, as mqadmin formats it...
    client_id = re.search(r"^(\S+@\S+)\s", env.ok("consumerConnection", "-g", GROUP), re.M)
    assert client_id, "no client id"
    status = env.ok("consumerStatus", "-g", GROUP, "-i", client_id.group(1))
    assert re.search(r"^PROP_CONSUME_TYPE\s+: CONSUME_PASSIVELY$", status, re.M), status
    assert re.search(rf"Topic: {TOPIC}\s+ClassFilter: false\s+SubExpression: \*", status), status
    held = re.findall(rf"^{TOPIC}\s+{BROKER}\s+(\d+)\s+(\d+)\s*$", status, re.M)
    assert held, status  # the queues it holds, with their committed offsets
    # ... and the message mqadmin has the broker relay to it goes to its listener.
    pushed = env.ok(
        "queryMsgById", "-i", env.sent[5].offset_msg_id, "-g", GROUP, "-d", client_id.group(1)
    )
    assert "consumeResult=CR_SUCCESS" in pushed, pushed
