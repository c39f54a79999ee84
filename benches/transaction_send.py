"""Transactional send throughput against plain send, through the Python SDK, in the same run.

Starts one real broker process (``python -m rmq.broker`` with its embedded nameserver, a fresh
store under ``target/bench-tmp``), then, for each round, sends ``--messages`` messages of
``--body`` bytes from ``--threads`` threads with ``rmq.Producer.send`` and as many with
``rmq.TransactionProducer.send_message_in_transaction`` (the local transaction commits at
once: half message, local transaction, END_TRANSACTION oneway, then the broker's re-put and op
record). The two alternate (plain first in odd rounds), so both see the same machine. Prints
each round and the medians; at the end, checks that every committed message reached its topic.

    .venv/bin/python benches/transaction_send.py [--rounds 3] [--messages 5000] [--threads 8]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import rmq
from rmq._rmq import ClientInstance

TOPIC = "BenchTx"
QUEUES = 4
ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_broker(work: Path) -> tuple[subprocess.Popen[str], str]:
    conf = work / "broker.conf"
    conf.write_text(
        "brokerClusterName = BenchCluster\n"
        "brokerName = bench-a\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {free_port()}\n"
        f"storePathRootDir = {work / 'store'}\n"
        f"defaultTopicQueueNums = {QUEUES}\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rmq.broker", "-c", str(conf), "--namesrv-port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    namesrv = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"embedded nameserver listening on \S+:(\d+)", line)
        if m:
            namesrv = f"127.0.0.1:{m.group(1)}"
        if "listening on" in line and "broker" in line and namesrv:
            threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep draining
            return proc, namesrv
    proc.kill()
    raise SystemExit("the broker did not start")


def timed(send: Callable[[int], object], n: int, threads: int) -> float:
    """Messages per second of ``n`` calls of ``send(i)`` spread over ``threads`` threads."""
    started = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(send, range(n), chunksize=64):
            pass
    return n / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--body", type=int, default=1024)
    args = parser.parse_args()

    base = ROOT / "target" / "bench-tmp"
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=base, prefix="tx-"))
    proc, namesrv = start_broker(work)
    body = b"x" * args.body
    commit = rmq.LocalTransactionState.COMMIT_MESSAGE
    try:
        plain = rmq.Producer("bench-plain", namesrv).start()
        tx = rmq.TransactionProducer(
            "bench-tx",
            namesrv,
            execute_local_transaction=lambda msg, arg: commit,
            check_local_transaction=lambda msg: commit,
        ).start()

        def send_plain(i: int) -> object:
            return plain.send(rmq.Message(TOPIC, body, tags="plain"))

        def send_tx(i: int) -> object:
            r = tx.send_message_in_transaction(rmq.Message(TOPIC, body, tags="tx"))
            assert r.local_transaction_state is commit
            return r

        warm = 500
        timed(send_plain, warm, args.threads)
        timed(send_tx, warm, args.threads)
        rows: list[tuple[float, float]] = []
        for r in range(args.rounds):
            if r % 2 == 0:
                p = timed(send_plain, args.messages, args.threads)
                t = timed(send_tx, args.messages, args.threads)
            else:
                t = timed(send_tx, args.messages, args.threads)
                p = timed(send_plain, args.messages, args.threads)
            rows.append((p, t))
            print(
                f"round {r + 1}: plain {p:,.0f} msg/s, transactional {t:,.0f} msg/s, "
                f"ratio {t / p:.2f}",
                flush=True,
            )
        plain.shutdown()
        tx.shutdown()

        expected = 2 * (warm + args.rounds * args.messages)
        inst = ClientInstance(namesrv)
        try:
            deadline = time.monotonic() + 30
            while True:
                stored = sum(inst.max_offset(q) for q in inst.fetch_subscribe_queues(TOPIC))
                if stored == expected or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        finally:
            inst.shutdown()
        p_med = statistics.median(p for p, _ in rows)
        t_med = statistics.median(t for _, t in rows)
        print(
            f"median of {args.rounds}: plain {p_med:,.0f} msg/s, transactional {t_med:,.0f} "
            f"msg/s, ratio {t_med / p_med:.2f} ({args.messages} messages of {args.body} B, "
            f"{args.threads} threads, {os.cpu_count()} CPUs)"
        )
        print(f"messages in {TOPIC}: {stored} of {expected} expected")
        return 0 if stored == expected else 1
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
