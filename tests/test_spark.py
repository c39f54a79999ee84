"""The Spark data source ``format("rmq")`` end to end: local Spark (``local[2]``) against real
``rmq.namesrv`` and ``rmq.broker`` processes. One SparkSession and one cluster serve the whole
module (a Spark session takes seconds to start on a small machine).

Covered: a 200 000-row batch write read back by batch and by stream (Trigger.AvailableNow),
exactly, row by row; a stream restarted from its checkpoint reads only what came after;
``maxOffsetsPerTrigger``; a stream written through the streaming sink; ``minPartitions`` and
offset JSON; ``failOnDataLoss`` against files really deleted by the broker's retention; and
the errors bad options give.
"""

from __future__ import annotations

import json
import os
import re
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark", minversion="4.2")
pytest.importorskip("pyarrow")

import pyarrow as pa  # type: ignore[import-untyped]
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import rmq
from helpers import TEST_STORE_CONF, BrokerProcess, create_topic, free_port, wait_until
from rmq._rmq import ClientInstance, RemotingClient
from test_compression import send_raw

ROWS = 200_000


# ---- processes ---------------------------------------------------------------------------------


class SparkCluster:
    """A nameserver and brokers for the module, started on demand."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.procs: list[BrokerProcess] = []
        self.namesrv_proc = subprocess.Popen(
            [sys.executable, "-m", "rmq.namesrv", "--host", "127.0.0.1", "-p", "0"],
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.namesrv_proc.stderr is not None
        deadline = time.monotonic() + 30
        addr = None
        while addr is None and time.monotonic() < deadline:
            m = re.search(r"listening on (127\.0\.0\.1:\d+)", self.namesrv_proc.stderr.readline())
            addr = m.group(1) if m else None
        assert addr, "nameserver did not start"
        self.namesrv = addr
        self.broker_addrs: dict[str, str] = {}

    def start_broker(self, name: str, extra: str = "") -> BrokerProcess:
        port = free_port()
        conf = self.tmp / f"{name}.conf"
        conf.write_text(
            "brokerClusterName = SparkCluster\n"
            f"brokerName = {name}\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {port}\n"
            f"storePathRootDir = {self.tmp / name}\n"
            "mappedFileSizeCommitLog = 67108864\n"
            "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF + extra
        )
        proc = BrokerProcess("-c", str(conf), "-n", self.namesrv, cwd=self.tmp)
        proc.wait_for("listening on")
        self.procs.append(proc)
        self.broker_addrs[name] = f"127.0.0.1:{port}"
        return proc

    def create_topic(self, topic: str, queues: int = 4, brokers: list[str] | None = None) -> None:
        names = brokers or list(self.broker_addrs)
        create_topic(self.namesrv, [self.broker_addrs[n] for n in names], topic, queues)

    def stop(self) -> None:
        for p in self.procs:
            p.kill()
        self.namesrv_proc.kill()
        self.namesrv_proc.wait(10)
        assert self.namesrv_proc.stderr is not None
        self.namesrv_proc.stderr.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    c = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        c.start_broker("broker-a")
        c.start_broker("broker-b")
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    saved = {k: os.environ.get(k) for k in ("PYSPARK_PYTHON", "SPARK_LOCAL_IP")}
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    session = (
        # Two threads; a failed task is retried once (local mode retries nothing by default).
        SparkSession.builder.master("local[2,2]")
        .appName("rmq-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("warehouse")))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    import rmq.spark

    rmq.spark.register(session)
    try:
        yield session
    finally:
        session.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


# ---- helpers -----------------------------------------------------------------------------------


def events(spark: SparkSession, n: int, start: int = 0) -> DataFrame:
    """``n`` rows: body ``event-<i>-`` padded to 100 bytes, keys ``<i>``, tags by parity, one
    property."""
    i = F.col("id")
    return spark.range(start, start + n, numPartitions=2).select(
        F.rpad(F.concat(F.lit("event-"), i.cast("string"), F.lit("-")), 100, "x")
        .cast("binary")
        .alias("body"),
        i.cast("string").alias("keys"),
        F.when(i % 2 == 0, F.lit("even")).otherwise(F.lit("odd")).alias("tags"),
        F.create_map(F.lit("n"), i.cast("string")).alias("properties"),
    )


def write(df: DataFrame, ns: str, topic: str, **options: str) -> None:
    w = df.write.format("rmq").option("namesrv", ns).option("topic", topic).mode("append")
    for k, v in options.items():
        w = w.option(k, v)
    w.save()


def read(spark: SparkSession, ns: str, topic: str, **options: str) -> DataFrame:
    r = spark.read.format("rmq").option("namesrv", ns).option("topic", topic)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def assert_events(df: DataFrame, lo: int, hi: int, topic: str) -> None:
    """``df`` (as read) holds exactly the events ``lo..hi-1``, each once, intact."""
    rows = df.select(
        "keys", "body", "tags", "properties", "topic", "msg_id", "queue_offset", "broker"
    ).collect()
    keys = sorted(int(r["keys"]) for r in rows)
    assert keys == list(range(lo, hi)), (len(keys), hi - lo)
    for r in rows[:: max(1, len(rows) // 2000)]:
        i = int(r["keys"])
        assert bytes(r["body"]) == f"event-{i}-".ljust(100, "x").encode()
        assert r["tags"] == ("even" if i % 2 == 0 else "odd")
        assert r["properties"] == {"n": str(i)}
        assert r["topic"] == topic
    assert len({r["msg_id"] for r in rows}) == len(rows)
    assert {r["broker"] for r in rows} <= {"broker-a", "broker-b"}


def total_messages(ns: str, topic: str) -> int:
    inst = ClientInstance(ns)
    try:
        return sum(
            inst.max_offset(q) - inst.min_offset(q) for q in inst.fetch_subscribe_queues(topic)
        )
    finally:
        inst.shutdown()


@pytest.fixture(scope="module")
def events_topic(spark: SparkSession, cluster: SparkCluster) -> str:
    """A topic holding events 0..ROWS-1, written by the batch sink."""
    cluster.create_topic("SparkEvents", queues=4)
    write(events(spark, ROWS), cluster.namesrv, "SparkEvents", batchSize="2000")
    assert total_messages(cluster.namesrv, "SparkEvents") == ROWS
    return "SparkEvents"


# ---- batch -------------------------------------------------------------------------------------


def test_batch_write_then_batch_read(
    spark: SparkSession, cluster: SparkCluster, events_topic: str
) -> None:
    df = read(spark, cluster.namesrv, events_topic)
    assert df.schema.simpleString() == (
        "struct<topic:string,queue_id:int,broker:string,queue_offset:bigint,body:binary,"
        "tags:string,keys:string,properties:map<string,string>,born_timestamp:timestamp,"
        "store_timestamp:timestamp,msg_id:string>"
    )
    # One partition per (broker, queue): 2 brokers x 4 queues.
    assert df.rdd.getNumPartitions() == 8
    assert_events(df, 0, ROWS, events_topic)
    # Offsets are dense per queue and timestamps are sane.
    per_queue = (
        df.groupBy("broker", "queue_id")
        .agg(
            F.count("*").alias("n"),
            F.min("queue_offset").alias("lo"),
            F.max("queue_offset").alias("hi"),
        )
        .collect()
    )
    assert sum(r["n"] for r in per_queue) == ROWS
    assert all(r["hi"] - r["lo"] + 1 == r["n"] and r["lo"] == 0 for r in per_queue)
    assert (
        df.where(
            F.col("store_timestamp") < F.col("born_timestamp") - F.expr("INTERVAL 1 MINUTE")
        ).count()
        == 0
    )


def test_batch_read_offsets_json_and_min_partitions(
    spark: SparkSession, cluster: SparkCluster, events_topic: str
) -> None:
    df = read(spark, cluster.namesrv, events_topic, minPartitions="20")
    assert df.rdd.getNumPartitions() >= 20
    assert df.count() == ROWS
    # Ten messages of one queue: from offset 5 (JSON) to 15; the other queues are empty
    # ranges (latest..latest).
    inst = ClientInstance(cluster.namesrv)
    try:
        queues = inst.fetch_subscribe_queues(events_topic)
    finally:
        inst.shutdown()
    start: dict[str, dict[str, dict[str, int]]] = {events_topic: {}}
    end: dict[str, dict[str, dict[str, int]]] = {events_topic: {}}
    for q in queues:
        first = (q.broker_name, q.queue_id) == ("broker-a", 1)
        start[events_topic].setdefault(q.broker_name, {})[str(q.queue_id)] = 5 if first else -1
        end[events_topic].setdefault(q.broker_name, {})[str(q.queue_id)] = 15 if first else -1
    part = read(
        spark,
        cluster.namesrv,
        events_topic,
        startingOffsets=json.dumps(start),
        endingOffsets=json.dumps(end),
    ).collect()
    assert sorted(r["queue_offset"] for r in part) == list(range(5, 15))
    assert {(r["broker"], r["queue_id"]) for r in part} == {("broker-a", 1)}


def test_batch_read_starting_timestamp(
    spark: SparkSession, cluster: SparkCluster, events_topic: str
) -> None:
    future = str(int(time.time() * 1000) + 3_600_000)
    # Past every message: Kafka's startingOffsetsByTimestampStrategy (default error).
    latest = {"startingOffsetsByTimestampStrategy": "latest"}
    assert (
        read(spark, cluster.namesrv, events_topic, startingTimestamp=future, **latest).count() == 0
    )
    with pytest.raises(Exception, match="startingOffsetsByTimestampStrategy=latest"):
        read(spark, cluster.namesrv, events_topic, startingTimestamp=future).count()
    assert read(spark, cluster.namesrv, events_topic, startingTimestamp="0").count() == ROWS


# ---- streaming ---------------------------------------------------------------------------------


def run_available_now(df: DataFrame, sink_dir: Path, checkpoint: Path) -> Any:
    q = (
        df.writeStream.format("parquet")
        .option("path", str(sink_dir))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(240)
    assert q.exception() is None, q.exception()
    return q


def test_stream_read_available_now_and_restart_from_checkpoint(
    spark: SparkSession, cluster: SparkCluster, events_topic: str, tmp_path: Path
) -> None:
    stream = (
        spark.readStream.format("rmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", events_topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "80000")
        .load()
    )
    sink, checkpoint = tmp_path / "sink", tmp_path / "checkpoint"
    q = run_available_now(stream, sink, checkpoint)
    batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
    assert sum(batches) == ROWS and max(batches) <= 80000 and len(batches) >= 3, batches
    assert_events(spark.read.parquet(str(sink)), 0, ROWS, events_topic)

    # More events arrive; the restarted query reads only those.
    write(events(spark, 1000, start=ROWS), cluster.namesrv, events_topic)
    q = run_available_now(stream, sink, checkpoint)
    assert sum(p["numInputRows"] for p in q.recentProgress) == 1000
    assert_events(spark.read.parquet(str(sink)), 0, ROWS + 1000, events_topic)
    # Offsets in the checkpoint are the documented JSON.
    offsets_dir = checkpoint / "offsets"
    last = max((p for p in offsets_dir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    offset = json.loads(last.read_text().splitlines()[-1])
    assert set(offset) == {events_topic}
    assert set(offset[events_topic]) == {"broker-a", "broker-b"}
    assert sum(sum(v.values()) for v in offset[events_topic].values()) == ROWS + 1000


def test_stream_write_through_the_streaming_sink(
    spark: SparkSession, cluster: SparkCluster, events_topic: str, tmp_path: Path
) -> None:
    cluster.create_topic("SparkEventsCopy", queues=2, brokers=["broker-a"])
    copy = (
        spark.readStream.format("rmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", events_topic)
        .option("startingOffsets", "earliest")
        .load()
        .where(F.col("queue_offset") < 1000)
        .select("body", "keys", "tags", "properties")
    )
    q = (
        copy.writeStream.format("rmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "SparkEventsCopy")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(240)
    assert q.exception() is None, q.exception()
    got = read(spark, cluster.namesrv, "SparkEventsCopy").collect()
    assert len(got) == 8 * 1000
    assert len({r["msg_id"] for r in got}) == len(got)
    assert all(re.fullmatch(r"[0-9A-F]{32}", r["msg_id"]) for r in got)
    by_key = {r["keys"]: r for r in got}
    r = by_key[got[0]["keys"]]
    i = int(r["keys"])
    assert bytes(r["body"]) == f"event-{i}-".ljust(100, "x").encode()


def test_topic_column_and_sharding_key_keep_each_key_in_order(
    spark: SparkSession, cluster: SparkCluster
) -> None:
    cluster.create_topic("SparkOrdersA", queues=4, brokers=["broker-a"])
    cluster.create_topic("SparkOrdersB", queues=4, brokers=["broker-a"])
    i = F.col("id")
    df = spark.range(0, 4000, numPartitions=1).select(
        F.when(i % 2 == 0, F.lit("SparkOrdersA")).otherwise(F.lit("SparkOrdersB")).alias("topic"),
        (i % 10).cast("string").alias("customer"),
        i.cast("string").alias("body"),  # a string body is sent as its UTF-8 bytes
    )
    # No topic option: the column decides (with the option set, the option would win).
    df.write.format("rmq").option("namesrv", cluster.namesrv).option(
        "shardingKeyColumn", "customer"
    ).option("batchSize", "64").mode("append").save()
    rows = read(spark, cluster.namesrv, "SparkOrdersA,SparkOrdersB").collect()
    assert len(rows) == 4000
    by_key: dict[tuple[str, int], list[tuple[int, int, int]]] = {}
    for r in rows:
        n = int(bytes(r["body"]))
        assert r["topic"] == ("SparkOrdersA" if n % 2 == 0 else "SparkOrdersB")
        by_key.setdefault((r["topic"], n % 10), []).append((r["queue_offset"], n, r["queue_id"]))
    for entries in by_key.values():
        assert len({q for _, _, q in entries}) == 1  # one queue per key
        assert [n for _, n, _ in sorted(entries)] == sorted(n for _, n, _ in entries)  # in order


def test_rows_without_properties_go_as_columns_with_null_tags_and_keys(
    spark: SparkSession, cluster: SparkCluster
) -> None:
    """Rows of one topic without a properties column take the columnar path (buffers to the
    native producer): string bodies, null tags and keys, and ids as on the row path."""
    cluster.create_topic("SparkColumns", queues=2, brokers=["broker-a"])
    i = F.col("id")
    df = spark.range(0, 5000, numPartitions=2).select(
        F.concat(F.lit("body-"), i.cast("string")).alias("body"),
        F.when(i % 2 == 0, F.lit("even")).alias("tags"),
        F.when(i % 3 == 0, F.lit(None)).otherwise(i.cast("string")).alias("keys"),
    )
    write(df, cluster.namesrv, "SparkColumns", batchSize="700")
    rows = read(spark, cluster.namesrv, "SparkColumns").collect()
    assert len(rows) == 5000 and len({r["msg_id"] for r in rows}) == 5000
    seen = set()
    for r in rows:
        n = int(bytes(r["body"]).decode().removeprefix("body-"))
        seen.add(n)
        assert r["tags"] == ("even" if n % 2 == 0 else None)
        assert r["keys"] == (None if n % 3 == 0 else str(n))
        assert r["properties"] == {}
        assert re.fullmatch(r"[0-9A-F]{20}[0-9]{12}", r["msg_id"])
    assert seen == set(range(5000))


def test_lz4_and_zstd_bodies_are_read_decompressed(
    spark: SparkSession, cluster: SparkCluster
) -> None:
    """Rows hold the bodies the producers sent, whatever the compression (ZLIB, LZ4, ZSTD;
    RocketMQ 5's sysFlag bits); a body that does not decompress fails the read, naming it."""
    cluster.create_topic("SparkCodecs", queues=2, brokers=["broker-a"])
    sent: dict[str, bytes] = {}
    for kind in ("ZLIB", "LZ4", "ZSTD"):
        with rmq.Producer(f"pg-spark-{kind}", cluster.namesrv, compress_type=kind) as p:
            for i in range(50):
                key = f"{kind}-{i}"
                sent[key] = key.encode() + bytes((j * j + i) % 251 for j in range(3000 + 40 * i))
                p.send(rmq.Message("SparkCodecs", sent[key], keys=key))
    rows = read(spark, cluster.namesrv, "SparkCodecs").select("keys", "body").collect()
    assert {r["keys"]: bytes(r["body"]) for r in rows} == sent
    assert len(rows) == len(sent)

    cluster.create_topic("SparkBadBody", queues=1, brokers=["broker-a"])
    client = RemotingClient()
    try:
        addr = cluster.broker_addrs["broker-a"]
        send_raw(client, addr, "SparkBadBody", b"fine", 0)
        send_raw(client, addr, "SparkBadBody", b"\x04\x22\x4d\x18 not LZ4", 0x101)
    finally:
        client.close()
    wait_until(lambda: total_messages(cluster.namesrv, "SparkBadBody") == 2, "the raw sends")
    with pytest.raises(Exception, match=r"SparkBadBody:0 queue offset 1 .*LZ4 body"):
        read(spark, cluster.namesrv, "SparkBadBody").collect()


AUTO_REGISTERED = """
import sys
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
df = spark.read.format("rmq").option("namesrv", sys.argv[1]).option("topic", sys.argv[2]).load()
print("COUNT", df.count())
spark.stop()
"""


def test_spark_registers_format_rmq_by_itself(cluster: SparkCluster, events_topic: str) -> None:
    """A new Spark application reads ``format("rmq")`` without ``rmq.spark.register``: Spark
    registers the ``DefaultSource`` of the installed ``pyspark_rmq`` module."""
    expected = total_messages(cluster.namesrv, events_topic)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    done = subprocess.run(
        [sys.executable, "-c", AUTO_REGISTERED, cluster.namesrv, events_topic],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"COUNT {expected}" in done.stdout, done.stdout


def test_string_buffers_of_a_sliced_array_start_at_its_first_row() -> None:
    from rmq.spark.writer import _string_buffers

    arr = pa.array(["a", None, "ccc", "dd"]).slice(1)
    validity, offsets, data = _string_buffers(arr)
    assert validity is not None and validity[0] & 0b111 == 0b110
    assert struct.unpack("<4i", offsets) == (0, 0, 3, 5) and data == b"cccdd"
    assert _string_buffers(pa.array([b"x", b"yz"]))[0] is None  # no nulls: no bitmap


def test_a_retried_task_resends_with_the_same_msg_ids(
    spark: SparkSession, cluster: SparkCluster
) -> None:
    """At least once: a task that fails mid-write is retried and sends its rows again, with
    the same msg_id, so dropping duplicates by msg_id gives every row exactly once."""
    cluster.create_topic("SparkRetried", queues=2, brokers=["broker-b"])

    def fail_once(i: int) -> int:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0 and i == 25_000:
            raise RuntimeError("injected failure")
        return i

    ids = spark.range(0, 60_000, numPartitions=2).select(
        F.udf(fail_once, "long", useArrow=False)("id").alias("id")
    )
    df = ids.select(
        F.col("id").cast("string").cast("binary").alias("body"),
        F.col("id").cast("string").alias("keys"),
    )
    write(df, cluster.namesrv, "SparkRetried", batchSize="1000")
    # Acked rows reach their queues a moment later (the broker dispatches asynchronously), and
    # how many the failed attempt sent is not known: read once the queues stop growing.
    settled, last = time.monotonic() + 30, -1
    while (n := total_messages(cluster.namesrv, "SparkRetried")) != last or n < 60_000:
        assert time.monotonic() < settled, f"queues still at {n} messages"
        last = n
        time.sleep(0.3)
    got = read(spark, cluster.namesrv, "SparkRetried")
    total = got.count()
    assert total > 60_000, "the first attempt sent nothing before failing"
    unique = got.dropDuplicates(["msg_id"]).select("keys", "body").collect()
    assert sorted(int(r["keys"]) for r in unique) == list(range(60_000))
    assert all(bytes(r["body"]).decode() == r["keys"] for r in unique)


def half_messages(ns: str, topic: str) -> int:
    """Half messages parked on the brokers of ``topic`` (the half topic's queue 0)."""
    inst = ClientInstance(ns)
    try:
        brokers = {q.broker_name for q in inst.fetch_subscribe_queues(topic)}
        return sum(
            inst.max_offset(rmq.MessageQueue("RMQ_SYS_TRANS_HALF_TOPIC", b, 0)) for b in brokers
        )
    finally:
        inst.shutdown()


def test_exactly_once_stream_write_survives_a_failed_task_and_a_replay(
    spark: SparkSession, cluster: SparkCluster, events_topic: str, tmp_path: Path
) -> None:
    """deliveryGuarantee=exactly-once: a task that fails mid-write leaves half messages that
    are never delivered, and a micro-batch Spark replays after its commit was recorded is not
    delivered twice; a streaming reader sees every row exactly once."""
    cluster.create_topic("SparkExactlyOnce", queues=4)
    rows = 8 * 3000

    def fail_once(offset: int) -> int:
        from pyspark import TaskContext

        ctx = TaskContext.get()
        if ctx is not None and ctx.attemptNumber() == 0 and offset == 2000:
            raise RuntimeError("injected failure")
        return offset

    source = (
        spark.readStream.format("rmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", events_topic)
        .option("startingOffsets", "earliest")
        .load()
        .where(F.col("queue_offset") < 3000)
        .select(
            "body",
            "keys",
            F.udf(fail_once, "long", useArrow=False)("queue_offset").alias("offset"),
        )
    )
    checkpoint = tmp_path / "checkpoint"

    def run() -> None:
        q = (
            source.writeStream.format("rmq")
            .option("namesrv", cluster.namesrv)
            .option("topic", "SparkExactlyOnce")
            .option("deliveryGuarantee", "exactly-once")
            .option("batchSize", "500")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination(240)
        assert q.exception() is None, q.exception()

    def delivered() -> list[Any]:
        sink, reader_checkpoint = tmp_path / "sink", tmp_path / "reader-checkpoint"
        stream = (
            spark.readStream.format("rmq")
            .option("namesrv", cluster.namesrv)
            .option("topic", "SparkExactlyOnce")
            .option("startingOffsets", "earliest")
            .load()
        )
        run_available_now(stream, sink, reader_checkpoint)
        return spark.read.parquet(str(sink)).select("keys", "body", "properties").collect()

    # Rows reach the writer in Arrow batches of 500, so a task fails after parking some.
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    try:
        run()
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    parked = half_messages(cluster.namesrv, "SparkExactlyOnce")
    assert parked > rows, f"the failed attempts parked nothing before failing ({parked})"
    got = delivered()
    assert sorted(int(r["keys"]) for r in got) == sorted(
        int(r["keys"])
        for r in read(spark, cluster.namesrv, events_topic)
        .where(F.col("queue_offset") < 3000)
        .select("keys")
        .collect()
    )
    assert len(got) == rows
    i = int(got[0]["keys"])
    assert bytes(got[0]["body"]) == f"event-{i}-".ljust(100, "x").encode()
    assert got[0]["properties"] == {}, "the transaction's bookkeeping is not shown"
    commits = tmp_path / "checkpoint" / "rmq-sink-commits"
    assert sorted(p.name for p in commits.iterdir()) == ["0"]

    # The driver dies after the sink recorded batch 0 but before Spark noted it: Spark replays
    # the batch, whose rows must not be delivered again.
    for name in ("0", ".0.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    run()
    assert half_messages(cluster.namesrv, "SparkExactlyOnce") >= parked + rows
    time.sleep(1)
    assert len(delivered()) == rows
    assert total_messages(cluster.namesrv, "SparkExactlyOnce") == rows


# ---- retention -------------------------------------------------------------------------------


def test_fail_on_data_loss(spark: SparkSession, cluster: SparkCluster, tmp_path: Path) -> None:
    every_hour = ";".join(f"{h:02d}" for h in range(24))
    cluster.start_broker(
        "broker-r",
        f"mappedFileSizeCommitLog = 65536\ndeleteWhen = {every_hour}\n"
        "fileReservedTime = 1\ncleanResourceInterval = 200\n",
    )
    cluster.create_topic("SparkRetention", queues=1, brokers=["broker-r"])
    with rmq.Producer("spark-retention", cluster.namesrv) as p:
        for chunk in range(10):
            p.send_batch(
                [
                    rmq.Message("SparkRetention", b"r" * 500)
                    for _ in range(100 * chunk, 100 * chunk + 100)
                ]
            )
    # Age every CommitLog file but the newest by two hours: retention deletes them.
    files = sorted((cluster.tmp / "broker-r" / "commitlog").iterdir())
    assert len(files) > 3
    old = time.time() - 7200
    for f in files[:-1]:
        os.utime(f, (old, old))
    inst = ClientInstance(cluster.namesrv)
    try:
        mq = inst.fetch_subscribe_queues("SparkRetention")[0]
        wait_until(lambda: inst.min_offset(mq) > 0, "retention to delete old files")
        lo, hi = inst.min_offset(mq), inst.max_offset(mq)
    finally:
        inst.shutdown()
    from_zero = json.dumps({"SparkRetention": {"broker-r": {"0": 0}}})
    with pytest.raises(Exception, match=r"deleted by the broker's retention.*failOnDataLoss=false"):
        read(spark, cluster.namesrv, "SparkRetention", startingOffsets=from_zero).count()
    skipped = read(
        spark, cluster.namesrv, "SparkRetention", startingOffsets=from_zero, failOnDataLoss="false"
    )
    assert skipped.count() == hi - lo
    stream = (
        spark.readStream.format("rmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "SparkRetention")
        .option("startingOffsets", from_zero)
        .load()
    )
    q = (
        stream.writeStream.format("noop")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match=r"deleted by the broker's retention"):
        q.awaitTermination(240)


# ---- bad options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"namesrv": None}, r"needs option 'namesrv'"),
        ({"topic": None}, r"needs option 'topic'"),
        ({"startingOffsets": "newest"}, r"'startingOffsets' must be 'earliest', 'latest' or JSON"),
        ({"startingOffsets": '{"SparkEvents": [1]}'}, r"'startingOffsets'.*broker names"),
        ({"endingOffsets": "earliest"}, r"'endingOffsets' cannot be 'earliest'"),
        ({"minPartitions": "0"}, r"'minPartitions' must be an integer >= 1"),
        ({"failOnDataLoss": "maybe"}, r"'failOnDataLoss' must be 'true' or 'false'"),
        ({"maxOffsetsPerTrigger": "10"}, r"'maxOffsetsPerTrigger' is for streaming"),
        ({"topic": "NoSuchTopic"}, r"topic 'NoSuchTopic' does not exist"),
        ({"startingOffsets": '{"Other": {"b": {"0": 1}}}'}, r"not in option 'topic'"),
    ],
)
def test_bad_read_options(
    spark: SparkSession,
    cluster: SparkCluster,
    events_topic: str,
    options: dict[str, str | None],
    match: str,
) -> None:
    opts: dict[str, str | None] = {"namesrv": cluster.namesrv, "topic": events_topic, **options}
    r = spark.read.format("rmq")
    for k, v in opts.items():
        if v is not None:
            r = r.option(k, v)
    with pytest.raises(Exception, match=match):
        r.load().count()


def test_bad_write_options(spark: SparkSession, cluster: SparkCluster, events_topic: str) -> None:
    df = events(spark, 10)
    with pytest.raises(Exception, match=r"needs a 'body' column"):
        write(df.drop("body"), cluster.namesrv, events_topic)
    with pytest.raises(Exception, match=r"column 'tags' must be string"):
        write(df.withColumn("tags", F.lit(1)), cluster.namesrv, events_topic)
    with pytest.raises(Exception, match=r"option 'topic' or a 'topic' column"):
        df.write.format("rmq").option("namesrv", cluster.namesrv).mode("append").save()
    with pytest.raises(Exception, match=r"'batchSize' must be an integer >= 1"):
        write(df, cluster.namesrv, events_topic, batchSize="lots")
    with pytest.raises(Exception, match=r"append-only"):
        df.write.format("rmq").option("namesrv", cluster.namesrv).option("topic", "t").mode(
            "overwrite"
        ).save()
    with pytest.raises(Exception, match=r"'shardingKeyColumn' names column 'nope'"):
        write(df, cluster.namesrv, events_topic, shardingKeyColumn="nope")
    assert total_messages(cluster.namesrv, events_topic) >= ROWS  # nothing half-written


def test_rmq_does_not_import_pyspark() -> None:
    code = "import sys, rmq, rmq.client; assert 'pyspark' not in sys.modules; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
