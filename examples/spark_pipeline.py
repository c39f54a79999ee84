"""An event pipeline on Spark and rmq: generate events → rmq → aggregate → rmq.

1. Generate ``--events`` click-stream events (user, action, amount, time) in Spark and write
   them to topic ``events`` as JSON bodies (``df.write.format("rmq")``), keyed by user and
   tagged by action.
2. A streaming query (``spark.readStream.format("rmq")``, Trigger.AvailableNow) takes the
   purchases out of ``events`` and writes them to topic ``purchases`` (``writeStream``), with
   its offsets in a checkpoint: run the example again and it only moves the new purchases.
3. A batch query reads ``events`` back, counts events and sums amounts per minute and action,
   and writes the aggregates to topic ``event-stats``; then it reads them back and prints them.

Run it with no arguments and it starts its own broker (with an embedded nameserver) in a
temporary directory::

    .venv/bin/python examples/spark_pipeline.py

or point it at a running cluster (it creates the topics with ``rmq updateTopic``)::

    .venv/bin/python examples/spark_pipeline.py --namesrv 127.0.0.1:9876 --cluster DefaultCluster

Needs the ``spark`` extra (``pip install 'rmq[spark]'``) and Java 17+.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOPICS = ("events", "purchases", "event-stats")


@contextmanager
def own_broker(workdir: Path) -> Iterator[str]:
    """A broker with an embedded nameserver on free ports; yields the nameserver address."""
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    broker_port, ns_port = ports
    conf = workdir / "broker.conf"
    conf.write_text(
        f"brokerIP1 = 127.0.0.1\nlistenPort = {broker_port}\n"
        f"storePathRootDir = {workdir / 'store'}\nmappedFileSizeCommitLog = 67108864\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.broker", "-c", str(conf), "--namesrv-port", str(ns_port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise SystemExit("the broker exited before it was ready")
        if re.search(rf"broker .*listening on \S*:{broker_port}", line):
            break
    try:
        yield f"127.0.0.1:{ns_port}"
    finally:
        proc.terminate()
        proc.wait(60)
        proc.stderr.close()


def create_topics(namesrv: str, cluster: str) -> None:
    from rmq._rmq import ClientInstance
    from rmq.admin.cli import main as rmq_admin
    from rmq.errors import RmqError

    for topic in TOPICS:
        if rmq_admin(
            ["updateTopic", "-n", namesrv, "-c", cluster, "-t", topic, "-r", "4", "-w", "4"]
        ):
            raise SystemExit(f"could not create topic {topic}")
    client = ClientInstance(namesrv)
    try:
        for topic in TOPICS:  # wait until the nameserver routes them
            for _ in range(200):
                try:
                    if client.fetch_subscribe_queues(topic):
                        break
                except RmqError:
                    time.sleep(0.1)
    finally:
        client.shutdown()


def run(namesrv: str, events: int, checkpoint: Path) -> None:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import functions as F

    import rmq.spark  # before the session: its Python workers run this interpreter

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rmq-spark-pipeline")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("WARN")
    rmq.spark.register(spark)

    def rmq_read(topic: str) -> DataFrame:
        return spark.read.format("rmq").option("namesrv", namesrv).option("topic", topic).load()

    # 1. Generate events and write them to rmq.
    now = int(time.time())
    actions = F.array(*(F.lit(a) for a in ("view", "click", "cart", "purchase")))
    generated = spark.range(events).select(
        (F.col("id") % 1000).cast("string").alias("user"),
        F.element_at(actions, F.pmod(F.hash("id"), F.lit(4)) + 1).alias("action"),
        F.round(F.rand(seed=7) * 100, 2).alias("amount"),
        F.timestamp_seconds(F.lit(now) - 600 + F.col("id") % 600).alias("event_time"),
    )
    (
        generated.select(
            F.to_json(F.struct("user", "action", "amount", "event_time")).alias("body"),
            F.col("user").alias("keys"),
            F.col("action").alias("tags"),
        )
        .write.format("rmq")
        .option("namesrv", namesrv)
        .option("topic", "events")
        .mode("append")
        .save()
    )
    print(f"wrote {events} events to topic 'events'")

    schema = "user string, action string, amount double, event_time timestamp"

    # 2. Stream the purchases to their own topic (exactly the new ones on each run).
    query = (
        spark.readStream.format("rmq")
        .option("namesrv", namesrv)
        .option("topic", "events")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "50000")
        .load()
        .where(F.col("tags") == "purchase")
        .select("body", "keys", "tags")
        .writeStream.format("rmq")
        .option("namesrv", namesrv)
        .option("topic", "purchases")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    moved = sum(p["numInputRows"] for p in query.recentProgress)
    print(f"the streaming query read {moved} events and sent their purchases to 'purchases'")

    # 3. Aggregate per minute and action, write the aggregates, read them back.
    parsed = rmq_read("events").select(F.from_json(F.col("body").cast("string"), schema).alias("e"))
    stats = (
        parsed.groupBy(F.date_trunc("minute", "e.event_time").alias("minute"), "e.action")
        .agg(F.count("*").alias("events"), F.round(F.sum("e.amount"), 2).alias("amount"))
        .select(
            F.to_json(F.struct("minute", "action", "events", "amount")).alias("body"),
            F.col("action").alias("tags"),
        )
    )
    stats.write.format("rmq").option("namesrv", namesrv).option("topic", "event-stats").mode(
        "append"
    ).save()
    stat_schema = "minute timestamp, action string, events long, amount double"
    back = rmq_read("event-stats").select(
        F.from_json(F.col("body").cast("string"), stat_schema).alias("s")
    )
    back.select("s.*").orderBy(F.col("minute").desc(), "action").show(12, truncate=False)
    print(f"'purchases' holds {rmq_read('purchases').count()} messages")
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namesrv", help="nameserver address; default: start a broker here")
    parser.add_argument("--cluster", default="DefaultCluster", help="cluster to create topics in")
    parser.add_argument("--events", type=int, default=100_000, help="events to generate")
    parser.add_argument("--checkpoint", help="streaming checkpoint dir (default: a temp dir)")
    args = parser.parse_args()
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="rmq-spark-example-") as tmp:
        workdir = Path(tmp)
        checkpoint = Path(args.checkpoint) if args.checkpoint else workdir / "checkpoint"
        if args.namesrv:
            create_topics(args.namesrv, args.cluster)
            run(args.namesrv, args.events, checkpoint)
        else:
            with own_broker(workdir) as namesrv:
                create_topics(namesrv, "DefaultCluster")
                run(namesrv, args.events, checkpoint)


if __name__ == "__main__":
    main()
