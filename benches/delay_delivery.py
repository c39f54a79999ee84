"""Delivery of delayed messages: how late after its due time each message reaches its real
queue, and how fast a backlog of due messages is delivered, against the plain put rate of the
same messages measured in the same run.

    .venv/bin/python benches/delay_delivery.py [--messages 10000] [--runs 3]

Every scenario runs on a fresh store under ``target/bench-tmp`` with the broker's own delay
scheduler (:class:`rmq.scheduling.delay.DelayService`) in this process, as the broker runs it:

* ``baseline put``: the messages put without ``DELAY``, 1 000 per ``put_messages`` call;
* ``burst``: the messages put as fast as possible at one level (2 s), so all of them fall due
  within a few tens of milliseconds and the scheduler has a backlog of due messages to clear;
* ``steady``: the messages put at 5 000 msg/s at one level (1 s);
* ``4 levels``: the burst at four levels at once (each 2 s), 4 x the messages due together;
* ``broker``: a ``python -m rmq.broker`` process with ``messageDelayLevel = 2s``, the messages sent
  by the Python SDK producer (async sends, 64 in flight), the store read back after the broker
  stopped.

Lateness of a message = store time of its delivered copy - (store time of its parked record +
the level's delay), both from the store's clock (ms). Medians of ``--runs`` runs are printed as
a Markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from rmq._rmq import MessageStore
from rmq.scheduling.delay import SCHEDULE_TOPIC, DelayService

ROOT = Path(__file__).resolve().parent.parent
BODY = b"x" * 1024
BASE = {
    "mappedFileSizeCommitLog": str(256 << 20),
    "maxHashSlotNum": "500000",
    "maxIndexNum": "2000000",
}


def percentile(values: list[int], p: float) -> float:
    s = sorted(values)
    return float(s[min(len(s) - 1, round(p / 100 * (len(s) - 1)))])


def props(i: int, level: int) -> dict[str, str]:
    p = {"TAGS": "TagA", "KEYS": f"k{i}", "UNIQ_KEY": f"U{i:08d}"}
    if level:
        p["DELAY"] = str(level)
    return p


def read_all(store: MessageStore, topic: str, queue: int) -> list[object]:
    out: list[object] = []
    while True:
        got = store.get_message(topic, queue, len(out), 1024)
        if not got.messages:
            return out
        out.extend(got.messages)


def wait_dispatched(store: MessageStore) -> None:
    while store.dispatch_behind_bytes() > 0:
        time.sleep(0.001)


def baseline_put(tmp: Path, n: int) -> dict[str, float]:
    with MessageStore(str(tmp / "base"), BASE) as store:
        start = time.perf_counter()
        for lo in range(0, n, 1000):
            ids = range(lo, min(n, lo + 1000))
            store.put_messages("Plain", 0, [BODY] * len(ids), [props(i, 0) for i in ids])
        elapsed = time.perf_counter() - start
    return {"msg/s": n / elapsed}


def reput_only(tmp: Path, n: int) -> dict[str, float]:
    """The store's delivery call alone: ``n`` parked messages re-put by ``deliver_scheduled``
    (2 048 units per call, as the scheduler reads them), timed from Python."""
    config = {**BASE, "messageDelayLevel": "1h"}
    with MessageStore(str(tmp / "reput"), config) as store:
        for lo in range(0, n, 1000):
            ids = range(lo, min(n, lo + 1000))
            store.put_messages("Real", 0, [BODY] * len(ids), [props(i, 1) for i in ids])
        wait_dispatched(store)
        start = time.perf_counter()
        offset = 0
        while offset < n:
            units = store.get_consume_queue_units(SCHEDULE_TOPIC, 0, offset, 2048).units
            offset += store.deliver_scheduled(units).processed
        elapsed = time.perf_counter() - start
    return {"delivered msg/s": n / elapsed}


def delayed(
    tmp: Path,
    n: int,
    levels: str,
    level_of: Callable[[int], int],
    pace_per_s: float | None,
) -> dict[str, float]:
    """Put ``n`` delayed messages (``level_of(i)``), deliver them with the scheduler, and
    measure lateness and the delivery rate of the backlog."""
    config = {**BASE, "messageDelayLevel": levels}
    root = tmp / "delay"
    with MessageStore(str(root), config) as store:
        delay_ms = store.delay_levels_ms
        service = DelayService(store, root / "config")
        service.start()
        due: dict[str, int] = {}
        start = time.perf_counter()
        chunk = 50 if pace_per_s else 1000
        for lo in range(0, n, chunk):
            ids = range(lo, min(n, lo + chunk))
            levels = [level_of(i) for i in ids]
            results = store.put_messages(
                "Real",
                (lo // chunk) % 4,
                [BODY] * len(ids),
                [props(i, lv) for i, lv in zip(ids, levels, strict=True)],
            )
            for i, level, r in zip(ids, levels, results, strict=True):
                due[f"U{i:08d}"] = r.store_timestamp + delay_ms[level - 1]
            if pace_per_s:
                ahead = (lo + chunk) / pace_per_s - (time.perf_counter() - start)
                if ahead > 0:
                    time.sleep(ahead)
        deadline = time.monotonic() + 120
        while service.delivered < n:
            if time.monotonic() > deadline:
                raise SystemExit(f"only {service.delivered} of {n} delivered")
            time.sleep(0.01)
        service.stop()
        wait_dispatched(store)
        late: list[int] = []
        delivered_ts: list[int] = []
        for q in range(4):
            for m in read_all(store, "Real", q):
                ts = m.store_timestamp  # type: ignore[attr-defined]
                late.append(ts - due[m.msg_id])  # type: ignore[attr-defined]
                delivered_ts.append(ts)
        assert len(late) == n, len(late)
    out = {
        "p50 ms": percentile(late, 50),
        "p99 ms": percentile(late, 99),
        "max ms": float(max(late)),
        "min ms": float(min(late)),
    }
    if not pace_per_s:
        # The backlog: from the first message falling due to the last one delivered.
        span_s = max(1, max(delivered_ts) - min(due.values())) / 1000
        out["delivered msg/s"] = n / span_s
    return out


def broker_run(tmp: Path, n: int) -> dict[str, float]:
    """A broker process; the SDK producer sends ``n`` messages at level 1 (2 s)."""
    import rmq
    from rmq._rmq import RemotingClient
    from rmq.codes import RequestCode
    from rmq.config import load_broker_config
    from rmq.errors import RmqError

    sys.path.insert(0, str(ROOT / "tests"))
    from test_broker_cli import BrokerProcess, free_port  # type: ignore[import-not-found]

    port, ns_port = free_port(), free_port()
    conf = tmp / "broker.conf"
    conf.write_text(
        f"brokerName = bench\nbrokerIP1 = 127.0.0.1\nlistenPort = {port}\n"
        f"storePathRootDir = {tmp / 'store'}\nmappedFileSizeCommitLog = {256 << 20}\n"
        "messageDelayLevel = 2s\n"
    )
    broker = BrokerProcess("-c", str(conf), "--namesrv-port", str(ns_port), cwd=tmp)
    broker.wait_for("listening on")
    namesrv = f"127.0.0.1:{ns_port}"
    try:
        with rmq.Producer("bench-delay", namesrv) as producer:
            deadline = time.monotonic() + 30
            while True:
                try:
                    producer.send(rmq.Message("BenchDelay", b"warm-up"))
                    break
                except RmqError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            pending: list[Future[rmq.SendResult]] = []
            for i in range(n):
                msg = rmq.Message("BenchDelay", BODY, tags="TagA", keys=[f"k{i}"])
                msg.delay_level = 1
                pending.append(producer.send_async(msg))
                if len(pending) >= 64:
                    pending.pop(0).result(30)
            for f in pending:
                f.result(30)
        time.sleep(2.0)
        deadline = time.monotonic() + 120
        client = RemotingClient()
        try:
            while True:
                total = 0
                for q in range(8):
                    r = client.invoke(
                        f"127.0.0.1:{port}",
                        RequestCode.GET_MAX_OFFSET,
                        {"topic": "BenchDelay", "queueId": str(q)},
                    )
                    total += int(r.ext_fields.get("offset", "0")) if r.code == 0 else 0
                if total >= n + 1 or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
        finally:
            client.close()
        assert broker.stop(signal.SIGTERM) == 0, broker.log
    finally:
        broker.kill()
    config = load_broker_config(conf)
    with MessageStore(str(tmp / "store"), config.store) as store:
        parked = {m.msg_id: m.store_timestamp for m in read_all(store, SCHEDULE_TOPIC, 0)}  # type: ignore[attr-defined]
        late: list[int] = []
        for q in range(8):
            for m in read_all(store, "BenchDelay", q):
                if m.msg_id in parked:  # type: ignore[attr-defined]
                    late.append(m.store_timestamp - (parked[m.msg_id] + 2000))  # type: ignore[attr-defined]
    assert len(late) == n, (len(late), n)
    return {
        "p50 ms": percentile(late, 50),
        "p99 ms": percentile(late, 99),
        "max ms": float(max(late)),
        "min ms": float(min(late)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--skip-broker", action="store_true")
    args = parser.parse_args()
    n = args.messages
    base = ROOT / "target" / "bench-tmp"
    base.mkdir(parents=True, exist_ok=True)
    scenarios: dict[str, Callable[[Path], dict[str, float]]] = {
        "baseline put (no DELAY)": lambda t: baseline_put(t, n),
        f"re-put path: {n} parked messages through deliver_scheduled": lambda t: reput_only(t, n),
        f"burst: {n} at one level (2 s)": lambda t: delayed(t, n, "2s", lambda i: 1, None),
        f"steady: {n} at 5 000 msg/s, one level (1 s)": lambda t: delayed(
            t, n, "1s", lambda i: 1, 5000.0
        ),
        f"4 levels: {n} at each of 4 levels (2 s)": lambda t: delayed(
            t, 4 * n, "2s 2s 2s 2s", lambda i: 1 + i % 4, None
        ),
    }
    if not args.skip_broker:
        scenarios[f"broker process: {n} sent by the SDK at one level (2 s)"] = lambda t: broker_run(
            t, n
        )
    results: dict[str, list[dict[str, float]]] = {name: [] for name in scenarios}
    for run in range(args.runs):
        for name, fn in scenarios.items():
            subprocess.run(["sync"], check=False)
            tmp = Path(tempfile.mkdtemp(dir=base))
            try:
                r = fn(tmp)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            results[name].append(r)
            print(f"run {run + 1} {name}: {r}", file=sys.stderr, flush=True)
    base_rate = statistics.median(r["msg/s"] for r in results["baseline put (no DELAY)"])
    print("| scenario | lateness p50 | p99 | max | delivery rate | vs plain put |")
    print("|---|---:|---:|---:|---:|---:|")
    print(f"| baseline: plain put, same messages | | | | {base_rate / 1000:.0f} k msg/s | 1.00 |")
    for name, runs in results.items():
        if name.startswith("baseline"):
            continue
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        rate = med.get("delivered msg/s")
        rate_text = f"{rate / 1000:.0f} k msg/s" if rate else ""
        ratio = f"{rate / base_rate:.2f}" if rate else ""
        late = [f"{med[k]:.0f} ms" if k in med else "" for k in ("p50 ms", "p99 ms", "max ms")]
        print(f"| {name} | {' | '.join(late)} | {rate_text} | {ratio} |")


if __name__ == "__main__":
    main()
