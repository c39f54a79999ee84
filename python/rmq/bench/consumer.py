"""``python -m rmq.bench consumer``: consumes a topic as fast as the push consumer delivers.

The counterpart of RocketMQ's ``org.apache.rocketmq.example.benchmark.Consumer``. Each
message's timestamps give three latencies: born→stored (``store_timestamp -
born_timestamp``: the send path, producer clock against broker clock), born→consumed (the
whole path, including any backlog the message waited in) and stored→consumed (delivery
alone). A fresh group (the default) starting at the first offset drains everything the topic
holds, which is how a produce run is read back. ``latency=False`` (``--no-latency``) makes the
listener only count: the rate of the SDK itself with a listener that does nothing, as the
issue 18 figures compare against Java's push consumer (the latency figures then read 0).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from rmq._rmq import BENCHMARK_TOPIC
from rmq.bench.stats import LatencySummary, RecorderSet
from rmq.tls import PLAIN, TlsOptions

__all__ = ["ConsumerOptions", "run_consumer"]

B2C, B2S, S2C = 0, 1, 2


@dataclass(frozen=True)
class ConsumerOptions:
    namesrv: str
    topic: str = BENCHMARK_TOPIC
    group: str = ""
    """Empty: a new group per run (``benchmark_consumer_<pid>_<time>``)."""
    expression: str = "*"
    threads: int = 20
    consume_from: str = "CONSUME_FROM_FIRST_OFFSET"
    pull_batch_size: int = 32
    consume_batch_size: int = 1
    latency: bool = True
    """False: the listener only counts messages (no timestamps read, no histograms)."""
    duration_s: float | None = None
    count: int | None = None
    progress: bool = True
    access_key: str | None = None
    """ACL account the consumer signs with (with ``secret_key``)."""
    secret_key: str | None = field(default=None, repr=False)
    tls: TlsOptions = PLAIN

    def group_name(self) -> str:
        return self.group or f"benchmark_consumer_{os.getpid()}_{time.time_ns() // 1_000_000}"


class _Listener:
    def __init__(self, latency: bool = True) -> None:
        self.recorders = RecorderSet(3)
        self.latency = latency
        self.first_ns = 0
        self.last_ns = 0

    def __call__(self, msgs: list[Any]) -> None:
        if not self.latency:
            self._count(msgs)
            return
        now_ns = time.perf_counter_ns()
        now_us = time.time_ns() // 1000
        if not self.first_ns:
            self.first_ns = now_ns
        rec = self.recorders.local()
        b2s_h, s2c_h = rec.histograms[B2S], rec.histograms[S2C]
        for m in msgs:
            born_us = m.born_timestamp * 1000
            store_us = m.store_timestamp * 1000
            rec.success(1, max(0, now_us - born_us))
            b2s_h.record(max(0, store_us - born_us))
            s2c_h.record(max(0, now_us - store_us))
        self.last_ns = max(self.last_ns, time.perf_counter_ns())

    def _count(self, msgs: list[Any]) -> None:
        now_ns = time.perf_counter_ns()
        if not self.first_ns:
            self.first_ns = now_ns
        rec = self.recorders.local()
        rec.ok += len(msgs)
        rec.requests += 1
        self.last_ns = max(self.last_ns, now_ns)


def run_consumer(opts: ConsumerOptions) -> tuple[dict[str, Any], dict[str, LatencySummary]]:
    """Consume until ``count`` messages, ``duration_s`` or Ctrl-C; returns the summary and
    the latency figures. Raises the client's error when the topic's route cannot be fetched
    (nameserver down, topic never created): the push consumer itself would only log that and
    wait, which for a benchmark looks like a hang."""
    from rmq.bench._report import Progress
    from rmq.client import _instance
    from rmq.client.consumer import PushConsumer

    group = opts.group_name()
    listener = _Listener(opts.latency)
    instance_name = f"bench-consumer-{os.getpid()}-{time.time_ns()}"
    # The consumer below shares this client instance (same nameserver and instance name).
    creds = _instance.credentials(opts.access_key, opts.secret_key)
    instance = _instance.acquire(opts.namesrv, instance_name, creds=creds, tls=opts.tls)
    try:
        instance.fetch_subscribe_queues(opts.topic)
        consumer = PushConsumer(
            group,
            opts.namesrv,
            instance_name=instance_name,
            consume_from_where=opts.consume_from,
            consume_thread_max=opts.threads,
            pull_batch_size=opts.pull_batch_size,
            consume_message_batch_max_size=opts.consume_batch_size,
            access_key=opts.access_key,
            secret_key=opts.secret_key,
            **opts.tls.as_kwargs(),
        )
        consumer.subscribe(opts.topic, opts.expression)
        consumer.register_message_listener_concurrently(listener)
        progress = (
            Progress(listener.recorders, "Consume", rt_label="born->consumed")
            if opts.progress
            else None
        )
        interrupted = False
        start = time.perf_counter()
        consumer.start()
        try:
            if progress is not None:
                progress.start()
            deadline = None if opts.duration_s is None else start + opts.duration_s
            while deadline is None or time.perf_counter() < deadline:
                if opts.count is not None and listener.recorders.totals().ok >= opts.count:
                    break
                time.sleep(0.02)
        except KeyboardInterrupt:
            interrupted = True
        finally:
            consumer.shutdown()
            if progress is not None:
                progress.stop()
        elapsed = time.perf_counter() - start
    finally:
        _instance.release(instance)

    totals = listener.recorders.totals()
    window_s = (listener.last_ns - listener.first_ns) / 1e9
    if window_s <= 0:
        window_s = elapsed
    summary: dict[str, Any] = {
        "role": "consumer",
        "topic": opts.topic,
        "group": group,
        "threads": opts.threads,
        "elapsed_s": round(elapsed, 3),
        "consumed": totals.ok,
        "first_message_after_s": (
            round(listener.first_ns / 1e9 - start, 3) if listener.first_ns else None
        ),
        "consume_window_s": round(window_s, 3),
        "tps": round(totals.ok / window_s, 1) if totals.ok else 0.0,
        "interrupted": interrupted,
    }
    return summary, {
        "born_to_consumed": listener.recorders.merged(B2C).summary(),
        "born_to_stored": listener.recorders.merged(B2S).summary(),
        "stored_to_consumed": listener.recorders.merged(S2C).summary(),
    }
