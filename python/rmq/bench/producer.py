"""``python -m rmq.bench producer``: sends as fast as the client allows and measures it.

The counterpart of RocketMQ's ``org.apache.rocketmq.example.benchmark.Producer``: N threads
share one producer and send a fixed body (random alphanumerics, compression off) to one
topic, synchronously, in batches, asynchronously under an in-flight limit, or one-way; each
completion is timed on the thread that sees it. A run ends after ``duration_s``, after
``count`` messages, or on Ctrl-C, and always reports what it did.
"""

from __future__ import annotations

import os
import random
import string
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rmq._rmq import BENCHMARK_TOPIC
from rmq.bench.stats import LatencySummary, RecorderSet
from rmq.errors import RemotingError
from rmq.tls import PLAIN, TlsOptions

__all__ = ["ProducerOptions", "run_producer", "split_count"]

_NO_COMPRESSION = 2**31 - 1


@dataclass(frozen=True)
class ProducerOptions:
    namesrv: str
    topic: str = BENCHMARK_TOPIC
    group: str = "benchmark_producer"
    threads: int = 64
    message_size: int = 128
    batch_size: int = 0
    """Messages per SEND_BATCH_MESSAGE request; 0 or 1 means single sends."""
    mode: str = "sync"
    """``sync``, ``async`` or ``oneway``."""
    in_flight: int = 1000
    """Async sends outstanding at most (across threads)."""
    tag_count: int = 0
    """Distinct tags to rotate through (0 = no tag)."""
    keys: bool = False
    rate: int = 0
    """Messages per second at most, across threads (0: as fast as the client allows)."""
    duration_s: float | None = None
    count: int | None = None
    send_timeout_ms: int = 3000
    progress: bool = True
    access_key: str | None = None
    """ACL account the producer signs with (with ``secret_key``)."""
    secret_key: str | None = field(default=None, repr=False)
    tls: TlsOptions = PLAIN

    @property
    def batch(self) -> int:
        return self.batch_size if self.batch_size > 1 else 1


def split_count(count: int, threads: int) -> list[int]:
    """``count`` messages shared out over ``threads`` (the first ones take the remainder)."""
    base, extra = divmod(count, threads)
    return [base + (1 if i < extra else 0) for i in range(threads)]


class _Pacer:
    """Spaces sends out to ``rate`` messages per second across all threads. A sender that fell
    behind catches up by at most 100 ms worth of messages, not in one burst."""

    def __init__(self, rate: int) -> None:
        self.interval = 1.0 / rate
        self.next = time.monotonic()
        self.lock = threading.Lock()

    def wait(self, n: int, stop: threading.Event) -> None:
        with self.lock:
            due = self.next = max(self.next, time.monotonic() - 0.1)
            self.next += n * self.interval
        delay = due - time.monotonic()
        if delay > 0:
            stop.wait(delay)


def _error_name(error: BaseException) -> str:
    return type(error).__name__


class _Run:
    def __init__(self, opts: ProducerOptions, producer: Any, stop: threading.Event) -> None:
        from rmq.client.message import Message

        self.opts = opts
        self.producer = producer
        self.stop = stop
        self.recorders = RecorderSet(1)
        self.message_cls = Message
        rng = random.Random()
        alphabet = (string.ascii_letters + string.digits).encode()
        self.body = bytes(rng.choice(alphabet) for _ in range(opts.message_size))
        self.slots = threading.BoundedSemaphore(max(1, opts.in_flight))
        self.first_error: str | None = None
        """The text of the first failed send (a refusal's remark says what to fix)."""
        self.pid = os.getpid()
        self.pacer = _Pacer(opts.rate) if opts.rate > 0 else None

    def _message(self, worker: int, seq: int) -> Any:
        o = self.opts
        return self.message_cls(
            o.topic,
            self.body,
            tags=f"tag{seq % o.tag_count}" if o.tag_count > 0 else None,
            keys=f"{self.pid}-{worker}-{seq}" if o.keys else None,
        )

    def worker(self, index: int, quota: int | None) -> None:
        o, stop, producer = self.opts, self.stop, self.producer
        rec = self.recorders.local()
        clock = time.perf_counter_ns
        batch = o.batch
        seq = 0
        while not stop.is_set() and (quota is None or seq < quota):
            n = batch if quota is None else min(batch, quota - seq)
            if o.mode == "async":
                if not self.slots.acquire(timeout=0.1):
                    continue
                if self.pacer is not None:
                    self.pacer.wait(1, stop)
                msg = self._message(index, seq)
                seq += 1
                self._send_async(msg)
                continue
            if self.pacer is not None:
                self.pacer.wait(n, stop)
            msgs = [self._message(index, seq + i) for i in range(n)]
            seq += n
            t0 = clock()
            try:
                if o.mode == "oneway":
                    producer.send_oneway(msgs[0])
                    status = "SEND_OK"
                elif batch > 1:
                    results = producer.send_batch(msgs)
                    bad = [r.status for r in results if r.status != "SEND_OK"]
                    status = bad[0] if bad else "SEND_OK"
                else:
                    status = producer.send(msgs[0]).status
            except Exception as exc:
                rec.failure(n, _error_name(exc))
                self._note(exc)
                if isinstance(exc, RemotingError):
                    stop.wait(1.0)  # the broker or its route is gone: do not spin on it
                continue
            if status == "SEND_OK":
                rec.success(n, (clock() - t0) // 1000)
            else:
                rec.failure(n, status)

    def _send_async(self, msg: Any) -> None:
        clock = time.perf_counter_ns
        recorders, slots = self.recorders, self.slots
        t0 = clock()

        def done(result: Any, error: BaseException | None) -> None:
            rec = recorders.local()  # the client's callback thread has its own
            try:
                if error is not None:
                    rec.failure(1, _error_name(error))
                    self._note(error)
                elif result is not None and result.status != "SEND_OK":
                    rec.failure(1, str(result.status))
                else:
                    rec.success(1, (clock() - t0) // 1000)
            finally:
                slots.release()

        try:
            self.producer.send_async(msg, callback=done)
        except Exception as exc:
            slots.release()
            self.recorders.local().failure(1, _error_name(exc))

    def _note(self, error: BaseException) -> None:
        if self.first_error is None:  # a race only picks which of two first errors is kept
            self.first_error = " ".join(f"{_error_name(error)}: {error}".split())

    def drain(self, timeout_s: float) -> bool:
        """Wait for every async send to complete; False when some did not within the time."""
        if self.opts.mode != "async":
            return True
        deadline = time.monotonic() + timeout_s
        taken = 0
        try:
            while taken < max(1, self.opts.in_flight):
                if not self.slots.acquire(timeout=max(0.0, deadline - time.monotonic())):
                    return False
                taken += 1
            return True
        finally:
            for _ in range(taken):
                self.slots.release()


def run_producer(opts: ProducerOptions) -> tuple[dict[str, Any], dict[str, LatencySummary]]:
    """Run the benchmark; returns the summary and the RT figures. Raises the client's error
    when the topic's route cannot be fetched before any send (nameserver down, no broker).
    A KeyboardInterrupt ends the run early; the summary then says ``interrupted``."""
    from rmq.bench._report import Progress, start_workers, wait_workers
    from rmq.client.producer import Producer

    producer = Producer(
        opts.group,
        opts.namesrv,
        instance_name=f"bench-producer-{os.getpid()}-{time.time_ns()}",
        send_msg_timeout=opts.send_timeout_ms,
        compress_msg_body_over_howmuch=_NO_COMPRESSION,
        access_key=opts.access_key,
        secret_key=opts.secret_key,
        **opts.tls.as_kwargs(),
    )
    producer.start()
    try:
        # Fails fast, with the client's explanation, when nothing can be sent at all.
        queues = producer.fetch_publish_message_queues(opts.topic)
        stop = threading.Event()
        run = _Run(opts, producer, stop)
        quotas: list[int | None] = (
            [None] * opts.threads
            if opts.count is None
            else list(split_count(opts.count, opts.threads))
        )
        threads = [
            threading.Thread(
                target=run.worker, args=(i, q), name=f"rmq-bench-send-{i}", daemon=True
            )
            for i, q in enumerate(quotas)
            if q is None or q > 0
        ]
        label = "Send" if opts.mode != "oneway" else "Send (oneway)"
        progress = Progress(run.recorders, label) if opts.progress else None
        interrupted = drained = False
        start = start_workers(threads, progress)
        try:
            wait_workers(threads, start, opts.duration_s)
            stop.set()
            for t in threads:
                t.join()
            drained = run.drain(opts.send_timeout_ms / 1000 + 1.0)
        except KeyboardInterrupt:
            interrupted = True
            stop.set()
            for t in threads:
                t.join(timeout=opts.send_timeout_ms / 1000 + 1.0)
            drained = run.drain(opts.send_timeout_ms / 1000 + 1.0)
        elapsed = time.perf_counter() - start
        if progress is not None:
            progress.stop()
    finally:
        producer.shutdown()

    totals = run.recorders.totals()
    rt = run.recorders.merged(0).summary()
    summary: dict[str, Any] = {
        "role": "producer",
        "topic": opts.topic,
        "queues": len(queues),
        "mode": opts.mode,
        "batch_size": opts.batch,
        "threads": len(threads),
        "message_size": opts.message_size,
        **totals.outcome(elapsed, opts.message_size),
        "interrupted": interrupted,
    }
    if run.first_error is not None:
        summary["first_error"] = run.first_error
    if opts.rate > 0:
        summary["rate_limit"] = opts.rate
    if opts.mode == "async":
        summary["in_flight"] = opts.in_flight
        summary["unfinished_async"] = not drained
    return summary, {"rt": rt}
