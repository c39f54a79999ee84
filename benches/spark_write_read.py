"""Spark ↔ rmq throughput: rows/s writing and reading 1 M rows of 256-byte bodies with
``local[2]``, against ``df.write.parquet`` / ``spark.read.parquet`` of the same DataFrame in the
same run (SPEC §8: figures are ratios against a baseline measured alongside).

    .venv/bin/python benches/spark_write_read.py [--rows 1000000] [--body 256] [--runs 3] [--json]

It starts its own broker (embedded nameserver, ASYNC_FLUSH, 256 MiB CommitLog files, disk
watermarks raised; default settings otherwise) in a temporary directory, or uses ``--namesrv``
(then the topics ``SparkBench<N>`` must not exist yet, or be empty, and the cluster must be
``--cluster``). The DataFrame is generated, cached and counted before any timing, and both sinks
are warmed up with one full untimed write each, so each timed write measures the sink in steady
state. Each run writes a fresh topic (4 queues); the reads read the topic of the first run back
(``.write.format("noop")``, which materialises every row) and the parquet files of the first run.
Bodies are 256 hex digits of SHA-256 digests by default (``--body-kind padded``: the row number
padded with ``x``, which parquet compresses to almost nothing).

``--broker-config KEY=VALUE`` adds lines to the own broker's config (e.g. a raised
``maxTransferCountOnMessageInMemory``); ``--read-variant NAME:OPT=V`` reads the topic again with
other reader options, interleaved with the default read in every run. The JSON summary gives
each timed phase's CPU seconds by process (``cpu_seconds``: the broker, Spark's JVM, its Python
workers, from ``/proc``), to tell where a read's time goes.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def own_broker(workdir: Path, extra: list[str]) -> Iterator[str]:
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    broker_port, ns_port = ports
    conf = workdir / "broker.conf"
    store = workdir / "store"
    # The disk watermarks are raised so that a shared machine's nearly full disk neither
    # refuses the writes nor deletes the topics before they are read back.
    conf.write_text(
        f"brokerIP1 = 127.0.0.1\nlistenPort = {broker_port}\nstorePathRootDir = {store}\n"
        "mappedFileSizeCommitLog = 268435456\ndiskMaxUsedSpaceRatio = 95\n"
        "diskSpaceCleanForciblyRatio = 98\ndiskSpaceWarningLevelRatio = 99\n"
        "cleanFileForciblyEnable = false\n" + "".join(f"{kv}\n" for kv in extra)
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.broker", "-c", str(conf), "--namesrv-port", str(ns_port)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
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
        proc.wait(120)
        proc.stderr.close()


def create_topic(namesrv: str, cluster: str, topic: str) -> None:
    from rmq._rmq import ClientInstance
    from rmq.admin.cli import main as rmq_admin
    from rmq.errors import RmqError

    args = ["updateTopic", "-n", namesrv, "-c", cluster, "-t", topic, "-r", "4", "-w", "4"]
    with contextlib.redirect_stdout(io.StringIO()):  # keep stdout for the summary
        failed = rmq_admin(args)
    if failed:
        raise SystemExit(f"could not create topic {topic}")
    client = ClientInstance(namesrv)
    try:
        for _ in range(300):
            try:
                if client.fetch_subscribe_queues(topic):
                    return
            except RmqError:
                pass
            time.sleep(0.1)
    finally:
        client.shutdown()
    raise SystemExit(f"no route for {topic}")


def cpu_by_process_kind() -> dict[str, float]:
    """CPU seconds (user + system) so far of this driver's descendants, by kind: the broker,
    Spark's JVM, its Python workers (processes that exited are not counted)."""
    tick = os.sysconf("SC_CLK_TCK")
    procs: dict[int, tuple[int, bytes, float]] = {}  # pid: (parent, command, CPU seconds)
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        procs[int(pid)] = (int(fields[1]), cmd, (int(fields[11]) + int(fields[12])) / tick)
    kinds = {"broker": 0.0, "jvm": 0.0, "python_workers": 0.0, "driver": procs[os.getpid()][2]}
    for pid, (parent, cmd, cpu) in procs.items():
        chain = [pid]
        while parent in procs and parent != os.getpid():
            chain.append(parent)
            parent = procs[parent][0]
        if parent != os.getpid():
            continue  # not ours
        top = procs[chain[-1]][1]
        if b"rmq.broker" in top:
            kinds["broker"] += cpu
        elif b"java" in cmd:
            kinds["jvm"] += cpu
        elif b"python" in cmd:
            kinds["python_workers"] += cpu
    return kinds


CPU: dict[str, list[dict[str, float]]] = {}
"""CPU seconds per process kind of each timed phase (see :func:`timed`)."""


def timed(fn: Callable[[], object], phase: str = "") -> float:
    before = cpu_by_process_kind()
    t0 = time.perf_counter()
    fn()
    took = time.perf_counter() - t0
    after = cpu_by_process_kind()
    if phase:
        CPU.setdefault(phase, []).append(
            {k: round(after[k] - before[k], 2) for k in after} | {"wall": round(took, 2)}
        )
    return took


def run(args: argparse.Namespace, namesrv: str, workdir: Path) -> dict[str, Any]:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import rmq.spark

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rmq-spark-bench")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    rmq.spark.register(spark)

    n, size = args.rows, args.body
    row = F.col("id").cast("string")
    if args.body_kind == "hex":
        # Hex digits of SHA-256 digests: text that snappy cannot shrink much, as event payloads.
        digests = [F.sha2(F.concat(row, F.lit(f"-{k}")), 256) for k in range(size // 64 + 1)]
        body = F.substring(F.concat(*digests), 1, size)
    else:
        body = F.rpad(row, size, "x")  # a counter padded with one character: parquet's best case
    df = spark.range(n, numPartitions=2).select(body.cast("binary").alias("body")).cache()
    assert df.count() == n

    # Warm up both sinks with one full, untimed write each (Python workers started, producer
    # connected, the JVM's code compiled): the timed runs then measure steady state.
    create_topic(namesrv, args.cluster, "SparkBenchWarmup")
    df.write.parquet(str(workdir / "parquet-warmup"))
    df.write.format("rmq").option("namesrv", namesrv).option("topic", "SparkBenchWarmup").mode(
        "append"
    ).save()

    def write_parquet(path: Path) -> Callable[[], object]:
        return lambda: df.write.parquet(str(path))

    def write_rmq(topic: str) -> Callable[[], object]:
        w = df.write.format("rmq").option("namesrv", namesrv).option("topic", topic)
        return lambda: w.mode("append").save()

    def drain(frame: Any) -> Callable[[], object]:
        return lambda: frame.write.format("noop").mode("overwrite").save()

    results: dict[str, list[float]] = {"parquet_write": [], "rmq_write": []}
    for i in range(args.runs):
        results["parquet_write"].append(
            n / timed(write_parquet(workdir / f"parquet-{i}"), "parquet_write")
        )
        topic = f"SparkBench{i}"
        create_topic(namesrv, args.cluster, topic)
        results["rmq_write"].append(n / timed(write_rmq(topic), "rmq_write"))
        print(
            f"run {i + 1}: parquet write {results['parquet_write'][-1]:,.0f} rows/s, "
            f"rmq write {results['rmq_write'][-1]:,.0f} rows/s",
            file=sys.stderr,
        )

    results["parquet_read"], results["rmq_read"] = [], []
    pq = spark.read.parquet(str(workdir / "parquet-0"))
    reader = spark.read.format("rmq").option("namesrv", namesrv).option("topic", "SparkBench0")
    src = reader.load()
    # Each --read-variant is read too, interleaved with the others in every run.
    variants = {}
    for spec in args.read_variant:
        name, _, opts = spec.partition(":")
        variants[f"rmq_read_{name}"] = reader.options(
            **dict(kv.split("=", 1) for kv in opts.split(","))
        ).load()
        results[f"rmq_read_{name}"] = []
    for i in range(args.runs):
        results["parquet_read"].append(n / timed(drain(pq), "parquet_read"))
        results["rmq_read"].append(n / timed(drain(src), "rmq_read"))
        for key, frame in variants.items():
            results[key].append(n / timed(drain(frame), key))
        print(
            f"read {i + 1}: parquet {results['parquet_read'][-1]:,.0f} rows/s, "
            + ", ".join(f"{k} {v[-1]:,.0f} rows/s" for k, v in results.items() if "rmq_read" in k),
            file=sys.stderr,
        )
    for frame in variants.values():
        assert frame.count() == n
    assert src.count() == n
    spark.stop()

    med = {k: statistics.median(v) for k, v in results.items()}

    def ratios(ours: str, base: str) -> list[float]:
        return [r / p for r, p in zip(results[ours], results[base], strict=True)]

    write_ratios = ratios("rmq_write", "parquet_write")
    read_ratios = ratios("rmq_read", "parquet_read")
    variant_ratios = {
        k: statistics.median(ratios(k, "parquet_read")) for k in results if "rmq_read_" in k
    }
    return {
        "rows": n,
        "body_bytes": size,
        "body_kind": args.body_kind,
        "runs": results,
        "cpu_seconds": CPU,
        "load_average": os.getloadavg(),
        "median_rows_per_s": med,
        "write_ratio_median": statistics.median(write_ratios),
        "read_ratio_median": statistics.median(read_ratios),
        "read_variant_ratio_medians": variant_ratios,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--body", type=int, default=256, help="body bytes")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--body-kind",
        choices=("hex", "padded"),
        default="hex",
        help="hex: SHA-256 hex digits (default); padded: the row number padded with 'x'",
    )
    parser.add_argument("--namesrv", help="use this cluster instead of starting a broker")
    parser.add_argument("--cluster", default="DefaultCluster")
    parser.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a line added to the broker's config (repeatable; not with --namesrv)",
    )
    parser.add_argument(
        "--read-variant",
        action="append",
        default=[],
        metavar="NAME:OPT=V[,OPT=V]",
        help="also read with these reader options, interleaved (repeatable), e.g. "
        "'batch32:pullBatchSize=32'",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    with tempfile.TemporaryDirectory(prefix="rmq-spark-bench-") as tmp:
        workdir = Path(tmp)
        if args.namesrv:
            summary = run(args, args.namesrv, workdir)
        else:
            with own_broker(workdir, args.broker_config) as namesrv:
                summary = run(args, namesrv, workdir)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        m = summary["median_rows_per_s"]
        print(
            f"{summary['rows']:,} rows x {summary['body_bytes']} B ({args.body_kind}), "
            f"medians of {args.runs}:\n"
            f"  write: rmq {m['rmq_write']:,.0f} rows/s, parquet {m['parquet_write']:,.0f} rows/s, "
            f"ratio {summary['write_ratio_median']:.2f}\n"
            f"  read:  rmq {m['rmq_read']:,.0f} rows/s, parquet {m['parquet_read']:,.0f} rows/s, "
            f"ratio {summary['read_ratio_median']:.2f}"
        )
        for k, r in summary["read_variant_ratio_medians"].items():
            print(f"  {k}: {m[k]:,.0f} rows/s, ratio {r:.2f}")


if __name__ == "__main__":
    main()
