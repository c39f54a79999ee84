"""Spark options at parity with Spark's Kafka source and sink (issue 17 item 5), end to end:
local Spark against a real nameserver and two brokers. The ``topic`` option wins over a
``topic`` column; a ``queue_id`` column is honoured; ``subscribePattern`` and ``assign``;
``subExpression`` (tag filter); the timestamp options and
``startingOffsetsByTimestampStrategy``; ``minOffsetsPerTrigger``
and ``maxTriggerDelay`` on the stream reader. Parsing alone: test_first_spark_options.py."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", minversion="4.2")
pytest.importorskip("pyarrow")

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import rmq
from helpers import wait_until
from test_spark import SparkCluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    c = SparkCluster(tmp_path_factory.mktemp("spark-parity"))
    try:
        c.start_broker("broker-a")
        c.start_broker("broker-b")
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    import rmq.spark

    session = rmq.spark.session(
        {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.session.timeZone": "UTC",
            "spark.sql.warehouse.dir": str(tmp_path_factory.mktemp("warehouse")),
        }
    )
    assert session.sparkContext.getConf().get("spark.pyspark.python") in (None, sys.executable)
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


def read(spark: SparkSession, ns: str, **options: str) -> DataFrame:
    r = spark.read.format("rmq").option("namesrv", ns)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load()


def send(ns: str, topic: str, n: int, start: int = 0) -> None:
    """``n`` messages one by one: the producer spreads them over the topic's queues."""
    with rmq.Producer("spark-parity-test", ns) as p:
        for i in range(start, start + n):
            p.send(rmq.Message(topic, b"%d" % i))


def bodies(df: DataFrame) -> list[int]:
    return sorted(int(bytes(r["body"])) for r in df.select("body").collect())


def test_the_topic_option_wins_over_a_topic_column(
    spark: SparkSession, cluster: SparkCluster
) -> None:
    """A read-then-write copy lands in the option's topic, not back in its source."""
    cluster.create_topic("ParitySrc", queues=2, brokers=["broker-a"])
    cluster.create_topic("ParityDst", queues=2, brokers=["broker-a"])
    send(cluster.namesrv, "ParitySrc", 40)
    src = read(spark, cluster.namesrv, topic="ParitySrc")
    assert "topic" in src.columns
    src.drop("queue_id").write.format("rmq").option("namesrv", cluster.namesrv).option(
        "topic", "ParityDst"
    ).mode("append").save()
    assert bodies(read(spark, cluster.namesrv, topic="ParityDst")) == list(range(40))
    assert bodies(read(spark, cluster.namesrv, topic="ParitySrc")) == list(range(40))
    # Under the option, a topic column of any type is ignored, as is a broker column
    # without queue_id.
    odd = spark.range(40, 45).select(
        F.col("id").cast("string").alias("body"),
        F.col("id").alias("topic"),
        F.col("id").alias("broker"),
    )
    odd.write.format("rmq").option("namesrv", cluster.namesrv).option("topic", "ParityDst").mode(
        "append"
    ).save()
    assert bodies(read(spark, cluster.namesrv, topic="ParityDst")) == list(range(45))


def test_a_queue_id_column_picks_the_queue(spark: SparkSession, cluster: SparkCluster) -> None:
    cluster.create_topic("ParityQueues", queues=4)  # on broker-a and broker-b
    i = F.col("id")
    df = spark.range(0, 60, numPartitions=2).select(
        i.cast("string").alias("body"),
        # Rows 0-19: queue 2 of broker-b; 20-39: queue 3, no broker (the first by name);
        # 40-59: null, where the producer sends its batch.
        F.when(i < 40, F.when(i < 20, F.lit(2)).otherwise(F.lit(3))).alias("queue_id"),
        F.when(i < 20, F.lit("broker-b")).alias("broker"),
    )
    df.write.format("rmq").option("namesrv", cluster.namesrv).option("topic", "ParityQueues").mode(
        "append"
    ).save()
    rows = read(spark, cluster.namesrv, topic="ParityQueues").collect()
    where = {int(bytes(r["body"])): (r["broker"], r["queue_id"]) for r in rows}
    assert len(where) == 60
    assert all(where[n] == ("broker-b", 2) for n in range(20))
    assert all(where[n] == ("broker-a", 3) for n in range(20, 40))
    bad = spark.range(0, 1).select(F.lit("x").alias("body"), F.lit(9).alias("queue_id"))
    with pytest.raises(Exception, match="queue_id 9 is not a writable queue of topic"):
        bad.write.format("rmq").option("namesrv", cluster.namesrv).option(
            "topic", "ParityQueues"
        ).mode("append").save()


def test_subscribe_pattern_and_assign(spark: SparkSession, cluster: SparkCluster) -> None:
    for topic, start in (("ParityPatOne", 0), ("ParityPatTwo", 100), ("ParityOther", 200)):
        cluster.create_topic(topic, queues=2)
        send(cluster.namesrv, topic, 30, start)
    ns = cluster.namesrv
    by_pattern = read(spark, ns, subscribePattern="ParityPat.*")
    assert {r["topic"] for r in by_pattern.select("topic").distinct().collect()} == {
        "ParityPatOne",
        "ParityPatTwo",
    }
    assert bodies(by_pattern) == [*range(30), *range(100, 130)]
    assert read(spark, ns, subscribePattern="ParityPat").count() == 0  # the whole name matches

    everything = read(spark, ns, topic="ParityPatOne,ParityPatTwo").collect()

    def expected(pred: Any) -> list[int]:
        return sorted(int(bytes(r["body"])) for r in everything if pred(r))

    one = read(spark, ns, assign=json.dumps({"ParityPatOne": {"broker-b": [1]}}))
    assert bodies(one) == expected(
        lambda r: (r["topic"], r["broker"], r["queue_id"]) == ("ParityPatOne", "broker-b", 1)
    )
    assert bodies(one), "the assigned queue got messages"
    both = read(spark, ns, assign=json.dumps({"ParityPatTwo": [0]}))
    assert bodies(both) == expected(lambda r: r["topic"] == "ParityPatTwo" and r["queue_id"] == 0)
    with pytest.raises(Exception, match="option 'assign' names queue ParityPatOne/broker-a/7"):
        read(spark, ns, assign='{"ParityPatOne": {"broker-a": [7]}}').count()
    with pytest.raises(Exception, match=r"queue id\(s\) \[5\] of topic 'ParityPatTwo'"):
        read(spark, ns, assign='{"ParityPatTwo": [0, 5]}').count()
    with pytest.raises(Exception, match="exactly one of them; given: topic, assign"):
        read(spark, ns, topic="ParityPatOne", assign='{"ParityPatOne": [0]}').count()


def test_sub_expression_reads_only_matching_tags(
    spark: SparkSession, cluster: SparkCluster
) -> None:
    cluster.create_topic("ParityTags", queues=2, brokers=["broker-a"])
    with rmq.Producer("spark-parity-test", cluster.namesrv) as p:
        for i in range(90):
            p.send(rmq.Message("ParityTags", b"%d" % i, tags=("created", "paid", "shipped")[i % 3]))
    ns = cluster.namesrv
    got = read(spark, ns, topic="ParityTags", subExpression="created || shipped").collect()
    assert sorted(int(bytes(r["body"])) for r in got) == [i for i in range(90) if i % 3 != 1]
    assert {r["tags"] for r in got} == {"created", "shipped"}
    assert read(spark, ns, topic="ParityTags", subExpression="refunded").count() == 0
    assert read(spark, ns, topic="ParityTags").count() == 90


def test_timestamp_options(spark: SparkSession, cluster: SparkCluster) -> None:
    cluster.create_topic("ParityTime", queues=2, brokers=["broker-a"])
    ns = cluster.namesrv
    send(ns, "ParityTime", 20)
    time.sleep(1.0)  # store timestamps of the two sends a second apart
    mid = int(time.time() * 1000)
    send(ns, "ParityTime", 20, 20)
    late = list(range(20, 40))
    base = {"topic": "ParityTime"}
    assert bodies(read(spark, ns, **base, startingTimestamp=str(mid))) == late
    assert bodies(read(spark, ns, **base, endingTimestamp=str(mid))) == list(range(20))

    rows = read(spark, ns, **base).collect()
    q0 = {int(bytes(r["body"])) for r in rows if r["queue_id"] == 0}
    assert q0 and q0 != set(range(40))
    per_queue = json.dumps({"ParityTime": {"broker-a": {"0": mid}}})
    got = bodies(read(spark, ns, **base, startingOffsetsByTimestamp=per_queue))
    assert got == sorted(n for n in range(40) if n not in q0 or n >= 20)
    got = bodies(read(spark, ns, **base, endingOffsetsByTimestamp=per_queue))
    assert got == sorted(n for n in range(40) if n not in q0 or n < 20)

    future = json.dumps({"ParityTime": {"broker-a": {"1": mid + 3_600_000}}})
    with pytest.raises(Exception, match="ParityTime/broker-a/1 has no message stored at or after"):
        read(spark, ns, **base, startingOffsetsByTimestamp=future).count()
    got = bodies(
        read(
            spark,
            ns,
            **base,
            startingOffsetsByTimestamp=future,
            startingOffsetsByTimestampStrategy="latest",
        )
    )
    assert got == sorted(q0)  # queue 1 starts at its end


def test_min_offsets_per_trigger_and_max_trigger_delay(cluster: SparkCluster) -> None:
    """The driver's stream reader skips a trigger while fewer than ``minOffsetsPerTrigger``
    messages are new, until ``maxTriggerDelay`` has passed."""
    from rmq.spark.options import parse_read_options
    from rmq.spark.reader import RmqStreamReader

    cluster.create_topic("ParityTrigger", queues=2, brokers=["broker-a"])
    send(cluster.namesrv, "ParityTrigger", 10)
    base = {"namesrv": cluster.namesrv, "topic": "ParityTrigger", "startingOffsets": "earliest"}

    def reader(**options: str) -> RmqStreamReader:
        return RmqStreamReader(parse_read_options({**base, **options}, streaming=True))

    def total(offsets: dict[str, Any] | None) -> int:
        assert offsets is not None
        return sum(q for b in offsets["ParityTrigger"].values() for q in b.values())

    waiting = reader(minOffsetsPerTrigger="11", maxTriggerDelay="1h")
    wait_until(lambda: total(waiting.reportLatestOffset()) == 10, "10 messages dispatched")
    start = waiting.initialOffset()
    assert waiting.latestOffset(start, waiting.getDefaultReadLimit()) == start
    send(cluster.namesrv, "ParityTrigger", 1, 10)
    wait_until(lambda: total(waiting.reportLatestOffset()) == 11, "the 11th dispatched")
    assert total(waiting.latestOffset(start, waiting.getDefaultReadLimit())) == 11

    overdue = reader(minOffsetsPerTrigger="100", maxTriggerDelay="0ms")
    start = overdue.initialOffset()
    assert overdue.latestOffset(start, overdue.getDefaultReadLimit()) != start
    # Trigger.AvailableNow reads what is there regardless.
    now = reader(minOffsetsPerTrigger="100", maxTriggerDelay="1h")
    now.prepareForTriggerAvailableNow()
    start = now.initialOffset()
    assert now.latestOffset(start, now.getDefaultReadLimit()) != start


def test_offsets_behind_latest_from_the_query_progress(
    spark: SparkSession, cluster: SparkCluster, tmp_path: Any
) -> None:
    """Kafka's min/avg/maxOffsetsBehindLatest from each micro-batch's progress."""
    import rmq.spark

    cluster.create_topic("ParityLag", queues=2, brokers=["broker-a"])
    send(cluster.namesrv, "ParityLag", 40)
    wait_until(lambda: read(spark, cluster.namesrv, topic="ParityLag").count() == 40, "dispatch")
    stream = (
        spark.readStream.format("rmq")
        .option("namesrv", cluster.namesrv)
        .option("topic", "ParityLag")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "10")
        .load()
    )
    q = (
        stream.writeStream.format("memory")
        .queryName("parity_lag")
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    batches = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in batches] == [10, 10, 10, 10]
    first = rmq.spark.offsets_behind_latest(batches[0])
    assert int(first["maxOffsetsBehindLatest"]) > 0
    assert float(first["avgOffsetsBehindLatest"]) * 2 == 30  # 30 left over two queues
    assert rmq.spark.offsets_behind_latest(batches[-1]) == {
        "minOffsetsBehindLatest": "0",
        "avgOffsetsBehindLatest": "0.0",
        "maxOffsetsBehindLatest": "0",
    }


def test_a_pattern_stream_picks_up_a_topic_created_while_it_runs(cluster: SparkCluster) -> None:
    """``subscribePattern`` re-lists the nameserver's topics every trigger; a new topic's
    queues are read from their min offset."""
    from rmq.spark.offsets import from_json
    from rmq.spark.options import parse_read_options
    from rmq.spark.reader import RmqStreamReader

    ns = cluster.namesrv
    cluster.create_topic("ParityGrowA", queues=1, brokers=["broker-a"])
    opts = {"namesrv": ns, "subscribePattern": "ParityGrow.*", "startingOffsets": "earliest"}
    r = RmqStreamReader(parse_read_options(opts, streaming=True))
    start = r.initialOffset()
    assert set(start) == {"ParityGrowA"}
    cluster.create_topic("ParityGrowB", queues=1, brokers=["broker-a"])
    send(ns, "ParityGrowB", 3)
    wait_until(
        lambda: sum(from_json(r.latestOffset(start, r.getDefaultReadLimit())).values()) == 3,
        "the new topic's messages in the next trigger",
    )
    end = r.latestOffset(start, r.getDefaultReadLimit())
    assert set(end) == {"ParityGrowA", "ParityGrowB"}
    [part] = r.partitions(start, end)
    assert (part.rng.queue.topic, part.rng.start, part.rng.end) == ("ParityGrowB", 0, 3)
