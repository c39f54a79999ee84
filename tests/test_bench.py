"""``python -m rmq.bench`` against a real broker process (embedded nameserver, ephemeral ports),
plus the latency histogram it records into. Needs `make build`."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import TEST_STORE_CONF, BrokerProcess, free_port
from rmq.bench.stats import Histogram, RecorderSet, bucket_bounds, bucket_index

RUN_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def namesrv_addr(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker whose embedded nameserver is on a free port; yields that nameserver."""
    tmp = tmp_path_factory.mktemp("bench-broker")
    conf = tmp / "broker.conf"
    conf.write_text(
        "brokerClusterName = BenchCluster\n"
        "brokerName = broker-bench\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {free_port()}\n"
        f"storePathRootDir = {tmp / 'store'}\n"
        "mappedFileSizeCommitLog = 4194304\n" + TEST_STORE_CONF
    )
    ns_port = free_port()
    proc = BrokerProcess("-c", str(conf), "--namesrv-port", str(ns_port), cwd=tmp)
    try:
        proc.wait_for("new broker registered")  # the embedded nameserver has its route
        yield f"127.0.0.1:{ns_port}"
    finally:
        proc.kill()


def bench(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "rmq.bench", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    if check:
        assert done.returncode == 0, f"exit {done.returncode}; stderr:\n{done.stderr}"
    return done


def summary_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1, done.stdout  # --json: exactly one object
    doc = json.loads(lines[0])
    assert isinstance(doc, dict)
    return doc


def assert_ordered(lat: dict[str, float]) -> None:
    assert 0 <= lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"] <= lat["max"]
    assert lat["min"] <= lat["avg"] <= lat["max"]


def test_produce_then_consume_all(namesrv_addr: str) -> None:
    topic = "BenchSync"
    sent = summary_of(
        bench("producer", "-n", namesrv_addr, "-t", topic, "-w", "4", "-c", "2000", "--json")
    )
    assert sent["role"] == "producer"
    assert sent["mode"] == "sync"
    assert sent["sent"] == 2000
    assert sent["requests"] == 2000
    assert sent["failures"] == 0
    assert sent["errors"] == {}
    assert sent["tps"] > 0
    assert_ordered(sent["rt_ms"])

    done = bench("consumer", "-n", namesrv_addr, "-t", topic, "-c", "2000", "--json")
    got = summary_of(done)
    assert got["role"] == "consumer"
    assert got["consumed"] >= 2000
    assert got["tps"] > 0
    for name in ("born_to_consumed_ms", "born_to_stored_ms", "stored_to_consumed_ms"):
        assert_ordered(got[name])
    # Progress lines went to stderr, one per line (stderr is not a terminal here).
    assert "\r" not in done.stderr


def test_batch_async_and_oneway(namesrv_addr: str) -> None:
    n = namesrv_addr
    batch = summary_of(
        bench("producer", "-n", n, "-t", "BenchB", "-w", "2", "-b", "32", "-c", "1000", "--json")
    )
    assert (batch["sent"], batch["failures"], batch["batch_size"]) == (1000, 0, 32)
    assert batch["requests"] == 2 * 16  # 500 per thread: 15 batches of 32 and one of 20
    assert_ordered(batch["rt_ms"])

    asyn = summary_of(
        bench(
            "producer",
            "-n",
            n,
            "-t",
            "BenchA",
            "--async",
            "-i",
            "16",
            "-c",
            "500",
            "--tags",
            "3",
            "-k",
            "--json",
        )
    )
    assert (asyn["sent"], asyn["failures"], asyn["mode"]) == (500, 0, "async")
    assert asyn["in_flight"] == 16
    assert asyn["unfinished_async"] is False
    assert_ordered(asyn["rt_ms"])

    oneway = summary_of(
        bench("producer", "-n", n, "-t", "BenchO", "--oneway", "-w", "2", "-c", "300", "--json")
    )
    assert (oneway["sent"], oneway["failures"], oneway["mode"]) == (300, 0, "oneway")

    # What the batch run stored can be read back, tags and all.
    got = summary_of(bench("consumer", "-n", n, "-t", "BenchB", "-c", "1000", "-w", "4", "--json"))
    assert got["consumed"] >= 1000
    # A listener that only counts, in batches: the same messages, no latencies.
    counted = summary_of(
        bench(
            "consumer", "-n", n, "-t", "BenchB", "-c", "1000", "-b", "32", "--no-latency", "--json"
        )
    )
    assert counted["consumed"] >= 1000 and counted["tps"] > 0
    assert counted["born_to_consumed_ms"]["max"] == 0


@pytest.mark.parametrize("role", ["producer", "consumer"])
def test_dead_namesrv_is_one_clear_line(role: str) -> None:
    addr = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    done = bench(role, "-n", addr, "-t", "BenchDead", "-c", "10", "--json", check=False)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("rmq.bench: cannot reach the nameserver at " + addr)
    assert "check that it is running" in lines[0]
    assert time.monotonic() - started < 20


def test_consumer_of_unknown_topic_says_so(namesrv_addr: str) -> None:
    done = bench("consumer", "-n", namesrv_addr, "-t", "BenchNeverSent", "-c", "1", check=False)
    assert done.returncode == 1
    assert "'BenchNeverSent' has no route" in done.stderr
    assert "run the producer first" in done.stderr


def test_ctrl_c_prints_the_summary_of_what_ran(namesrv_addr: str) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rmq.bench",
            "producer",
            "-n",
            namesrv_addr,
            "-t",
            "BenchInt",
            "-w",
            "2",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A shell running the tests in the background may ignore SIGINT; Ctrl-C would not.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stderr is not None
    try:
        first = proc.stderr.readline()  # the first progress line: sends are under way
        assert "Send TPS" in first, first
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    doc = json.loads(out)
    assert doc["interrupted"] is True
    assert doc["sent"] > 0
    assert doc["failures"] == 0
    assert_ordered(doc["rt_ms"])


def test_bad_option_combinations_are_refused() -> None:
    done = bench("producer", "--async", "-b", "32", "-c", "1", check=False)
    assert done.returncode == 2
    assert "batches are sent synchronously" in done.stderr
    done = bench("producer", "-d", "1", "-c", "1", check=False)
    assert done.returncode == 2


def test_histogram_buckets_cover_every_value_once() -> None:
    prev_high = 0
    for i in range(bucket_index(10**12) + 1):
        low, high = bucket_bounds(i)
        assert low == prev_high, i
        assert bucket_index(low) == i and bucket_index(high - 1) == i
        assert high - low <= max(1, low // 64)  # at most 1/64 of the value wide
        prev_high = high


def test_histogram_percentiles_are_within_the_bucket_error() -> None:
    rng = random.Random(7)
    values = [int(rng.lognormvariate(6, 1.5)) for _ in range(20_000)]
    h = Histogram()
    for v in values:
        h.record(v)
    values.sort()
    for q in (50, 90, 99, 99.9):
        exact = values[max(0, -(-len(values) * int(q * 10) // 1000) - 1)]
        assert exact * (1 - 1 / 64) - 1 <= h.percentile(q) <= exact, q
    assert h.percentile(100) == values[-1] == h.max_us
    assert h.count == len(values) and h.total_us == sum(values)


def test_recorders_are_per_thread_and_add_up() -> None:
    import threading

    recs = RecorderSet(1)
    all_alive = threading.Barrier(4)  # thread ids are reused once a thread has ended

    def work() -> None:
        for i in range(1000):
            recs.local().success(2, i)
        recs.local().failure(3, "RemotingTimeoutError")
        all_alive.wait()

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(recs.recorders()) == 4
    totals = recs.totals()
    assert (totals.ok, totals.requests, totals.failures) == (8000, 4000, 12)
    assert totals.errors == {"RemotingTimeoutError": 12}
    merged = recs.merged()
    assert merged.count == 4000 and merged.max_us == 999


def test_rate_spaces_sends_out(namesrv_addr: str) -> None:
    """--rate 200 over 300 messages cannot finish in less than about 1.5 s (a lower bound:
    the pacer holds senders back; it cannot make them faster)."""
    sent = summary_of(
        bench(
            "producer",
            "-n",
            namesrv_addr,
            "-t",
            "BenchRate",
            "-w",
            "4",
            "-c",
            "300",
            "--rate",
            "200",
            "--json",
        )
    )
    assert (sent["sent"], sent["failures"], sent["rate_limit"]) == (300, 0, 200)
    assert sent["tps"] <= 200 * 1.1, sent
