"""Latency and throughput recording for the load generators.

Every thread that completes operations (a sending thread, the client's callback thread, a
consume thread) records into its own :class:`Recorder`, found by thread id, so the hot path
takes no lock and shares no counter: a recorder has exactly one writer. Readers (the
once-a-second progress line, the final summary) add the recorders up; in CPython reading
another thread's ints is safe, and a progress line that is one operation behind is harmless.

Latencies go into a log-linear bucketed histogram (HdrHistogram's layout, in microseconds):
values below 128 µs are exact, larger ones fall into buckets 1/64 of their power of two wide,
so a percentile is within 1.6 % of the true value while memory stays fixed however long the
run is. The maximum is tracked exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Histogram", "LatencySummary", "Recorder", "RecorderSet", "Totals"]

_SUB_BITS = 7
_HALF = 1 << (_SUB_BITS - 1)  # 64 sub-buckets per power of two above the exact range
_EXACT = 1 << _SUB_BITS  # values below this many µs get a bucket each
_MAX_SHIFT = 40  # up to 2**47 µs (~4.5 years): anything longer is clamped
_N_BUCKETS = _HALF * (_MAX_SHIFT + 2)


def bucket_index(value_us: int) -> int:
    """The bucket of ``value_us`` (negative values count as 0)."""
    if value_us < _EXACT:
        return value_us if value_us > 0 else 0
    shift = value_us.bit_length() - _SUB_BITS
    if shift > _MAX_SHIFT:
        return _N_BUCKETS - 1
    return _HALF * shift + (value_us >> shift)


def bucket_bounds(index: int) -> tuple[int, int]:
    """``[low, high)`` in µs of the values that fall into bucket ``index``."""
    if index < _EXACT:
        return index, index + 1
    shift = index // _HALF - 1
    low = (index - _HALF * shift) << shift
    return low, low + (1 << shift)


class Histogram:
    """Counts of latencies (µs) by bucket, plus exact count, sum, min and max."""

    __slots__ = ("buckets", "count", "max_us", "min_us", "total_us")

    def __init__(self) -> None:
        self.buckets: list[int] = [0] * _N_BUCKETS
        self.count = 0
        self.total_us = 0
        self.max_us = 0
        self.min_us = -1

    def record(self, value_us: int) -> None:
        self.buckets[bucket_index(value_us)] += 1
        self.count += 1
        self.total_us += value_us
        if value_us > self.max_us:
            self.max_us = value_us
        if value_us < self.min_us or self.min_us < 0:
            self.min_us = value_us

    def merge(self, other: Histogram) -> None:
        mine = self.buckets
        for i, n in enumerate(other.buckets):
            if n:
                mine[i] += n
        self.count += other.count
        self.total_us += other.total_us
        self.max_us = max(self.max_us, other.max_us)
        if other.min_us >= 0 and (self.min_us < 0 or other.min_us < self.min_us):
            self.min_us = other.min_us

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile (0-100) in µs: the lower bound of the bucket holding that
        rank (at most 1/64 below the true value), kept within the exact min and max. 0.0 when
        empty."""
        if self.count == 0:
            return 0.0
        rank = max(1, -(-int(q * self.count * 1000) // 100_000))  # ceil(q% of count), >= 1
        if rank >= self.count:
            return float(self.max_us)
        seen = 0
        for i, n in enumerate(self.buckets):
            seen += n
            if seen >= rank:
                low, _ = bucket_bounds(i)
                return float(min(max(low, self.min_us), self.max_us))
        return float(self.max_us)

    def summary(self) -> LatencySummary:
        return LatencySummary(
            count=self.count,
            avg_ms=self.total_us / self.count / 1000 if self.count else 0.0,
            min_ms=max(self.min_us, 0) / 1000,
            p50_ms=self.percentile(50) / 1000,
            p90_ms=self.percentile(90) / 1000,
            p99_ms=self.percentile(99) / 1000,
            p999_ms=self.percentile(99.9) / 1000,
            max_ms=self.max_us / 1000,
        )


@dataclass(frozen=True)
class LatencySummary:
    """Latency figures in milliseconds."""

    count: int
    avg_ms: float
    min_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    p999_ms: float
    max_ms: float

    def as_dict(self) -> dict[str, float]:
        return {
            "avg": round(self.avg_ms, 4),
            "min": round(self.min_ms, 4),
            "p50": round(self.p50_ms, 4),
            "p90": round(self.p90_ms, 4),
            "p99": round(self.p99_ms, 4),
            "p999": round(self.p999_ms, 4),
            "max": round(self.max_ms, 4),
        }


class Recorder:
    """One thread's counters. ``ok`` counts messages, ``requests`` the operations they went
    in (a batch of 32 is one request and 32 messages); ``histograms[0]`` holds the latency of
    each request (producers) or message (consumers); a consumer keeps more, one per kind of
    latency it measures. ``window_max_us`` is the largest latency since the progress line
    last took it (a racy reset: at worst one value is left out of one progress line)."""

    __slots__ = ("errors", "histograms", "ok", "requests", "window_max_us")

    def __init__(self, n_histograms: int) -> None:
        self.ok = 0
        self.requests = 0
        self.errors: dict[str, int] = {}
        self.histograms = [Histogram() for _ in range(n_histograms)]
        self.window_max_us = 0

    def success(self, messages: int, latency_us: int) -> None:
        self.ok += messages
        self.requests += 1
        self.histograms[0].record(latency_us)
        if latency_us > self.window_max_us:
            self.window_max_us = latency_us

    def failure(self, messages: int, error: str) -> None:
        self.errors[error] = self.errors.get(error, 0) + messages


@dataclass(frozen=True)
class Totals:
    """The recorders added up at one moment."""

    ok: int
    requests: int
    failures: int
    errors: Mapping[str, int]
    latency_total_us: int
    window_max_us: int

    def outcome(self, elapsed: float, message_size: int) -> dict[str, Any]:
        """The summary fields of a run that took ``elapsed`` seconds sending ``message_size``
        byte messages: elapsed_s, sent, requests, failures, errors, tps and mib_per_s."""
        return {
            "elapsed_s": round(elapsed, 3),
            "sent": self.ok,
            "requests": self.requests,
            "failures": self.failures,
            "errors": dict(sorted(self.errors.items())),
            "tps": round(self.ok / elapsed, 1) if elapsed > 0 else 0.0,
            "mib_per_s": round(self.ok * message_size / elapsed / 2**20, 3) if elapsed else 0.0,
        }


class RecorderSet:
    """The recorders of every thread of a run; :meth:`local` is the calling thread's.

    Keyed by OS thread id, not a ``threading.local``: the client's native callback thread
    gets a fresh Python thread state for each callback, so a thread-local would hand it a new
    recorder every time."""

    def __init__(self, n_histograms: int = 1) -> None:
        self._n = n_histograms
        self._lock = threading.Lock()  # taken once per thread, when its recorder is created
        self._by_thread: dict[int, Recorder] = {}

    def local(self) -> Recorder:
        rec = self._by_thread.get(threading.get_ident())
        if rec is None:
            with self._lock:
                rec = self._by_thread.setdefault(threading.get_ident(), Recorder(self._n))
        return rec

    def recorders(self) -> list[Recorder]:
        with self._lock:
            return list(self._by_thread.values())

    def totals(self, take_window_max: bool = False) -> Totals:
        ok = requests = latency = window_max = 0
        errors: dict[str, int] = {}
        for rec in self.recorders():
            ok += rec.ok
            requests += rec.requests
            latency += rec.histograms[0].total_us
            for name, n in list(rec.errors.items()):
                errors[name] = errors.get(name, 0) + n
            if take_window_max:
                window_max = max(window_max, rec.window_max_us)
                rec.window_max_us = 0
        return Totals(ok, requests, sum(errors.values()), errors, latency, window_max)

    def merged(self, which: int = 0) -> Histogram:
        """Histogram ``which`` of every recorder, merged (read it when the writers are done)."""
        return merge(rec.histograms[which] for rec in self.recorders())


def merge(histograms: Iterable[Histogram]) -> Histogram:
    out = Histogram()
    for h in histograms:
        out.merge(h)
    return out
