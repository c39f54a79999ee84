"""The live progress line and the final summary, shared by the producer and the consumer.

Progress goes to stderr, once a second: rewritten in place (``\\r``) on a terminal, one line
per second otherwise (a log file or a pipe keeps every line). The summary goes to stdout, as
text or, with ``--json``, as one JSON object, so scripts can read it without scraping.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

from rmq.bench.stats import LatencySummary, RecorderSet

__all__ = ["Progress", "print_summary", "start_workers", "wait_workers"]


class Progress:
    """A daemon thread printing the last interval's TPS, average and maximum latency, and the
    running totals, every ``interval_s``."""

    def __init__(
        self,
        recorders: RecorderSet,
        label: str,
        *,
        interval_s: float = 1.0,
        stream: TextIO | None = None,
        rt_label: str = "RT",
    ) -> None:
        self._recorders = recorders
        self._label = label
        self._interval = interval_s
        self._stream = stream if stream is not None else sys.stderr
        self._tty = self._stream.isatty()
        self._rt_label = rt_label
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rmq-bench-progress", daemon=True)
        self._start = time.monotonic()
        self._wrote = False

    def start(self) -> Progress:
        self._start = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self._tty and self._wrote:
            self._stream.write("\n")
            self._stream.flush()

    def _run(self) -> None:
        prev = self._recorders.totals()
        prev_t = time.monotonic()
        while not self._stop.wait(
            self._interval - (time.monotonic() - self._start) % self._interval
        ):
            now = time.monotonic()
            cur = self._recorders.totals(take_window_max=True)
            dt = max(now - prev_t, 1e-9)
            d_ok, d_req = cur.ok - prev.ok, cur.requests - prev.requests
            avg_ms = (cur.latency_total_us - prev.latency_total_us) / d_req / 1000 if d_req else 0
            line = (
                f"[{now - self._start:6.1f}s] {self._label} TPS: {d_ok / dt:9.0f} | "
                f"avg {self._rt_label}: {avg_ms:7.3f} ms | "
                f"max {self._rt_label}: {cur.window_max_us / 1000:8.3f} ms | "
                f"total: {cur.ok} | failed: {cur.failures}"
            )
            self._stream.write(f"\r{line}\x1b[K" if self._tty else line + "\n")
            self._stream.flush()
            self._wrote = True
            prev, prev_t = cur, now


def _fmt_latency(name: str, s: LatencySummary) -> str:
    return (
        f"{name:<22} avg {s.avg_ms:.3f}  p50 {s.p50_ms:.3f}  p99 {s.p99_ms:.3f}  "
        f"p99.9 {s.p999_ms:.3f}  max {s.max_ms:.3f}  (ms)"
    )


def print_summary(
    summary: Mapping[str, Any],
    latencies: Mapping[str, LatencySummary],
    as_json: bool,
    stream: TextIO | None = None,
) -> None:
    """Write ``summary`` (plus each latency's figures under ``<name>_ms``) to stdout."""
    out = stream if stream is not None else sys.stdout
    if as_json:
        doc = dict(summary)
        for name, lat in latencies.items():
            doc[f"{name}_ms"] = lat.as_dict()
        out.write(json.dumps(doc, sort_keys=False) + "\n")
        out.flush()
        return
    lines = [
        f"[Complete] {summary.get('role', 'bench')}"
        + (" (interrupted)" if summary.get("interrupted") else "")
    ]
    for key, value in summary.items():
        if key in ("role", "interrupted"):
            continue
        if isinstance(value, Mapping):
            value = ", ".join(f"{k}: {v}" for k, v in value.items()) or "none"
        elif isinstance(value, float):
            value = f"{value:.3f}" if abs(value) < 1000 else f"{value:.0f}"
        lines.append(f"  {key:<22} {value}")
    for name, lat in latencies.items():
        lines.append("  " + _fmt_latency(name, lat))
    out.write("\n".join(lines) + "\n")
    out.flush()


def start_workers(threads: list[threading.Thread], progress: Progress | None) -> float:
    """Start the progress line, then ``threads``; returns the start time (``perf_counter``)."""
    start = time.perf_counter()
    if progress is not None:
        progress.start()
    for t in threads:
        t.start()
    return start


def wait_workers(threads: list[threading.Thread], start: float, duration_s: float | None) -> None:
    """Return when every thread has finished, or ``duration_s`` after ``start``; Ctrl-C is
    raised at once (the join has a short timeout)."""
    deadline = None if duration_s is None else start + duration_s
    while alive := [t for t in threads if t.is_alive()]:
        if deadline is not None and time.perf_counter() >= deadline:
            return
        alive[0].join(timeout=0.05)
