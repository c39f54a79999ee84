"""One timer thread per consumer: delayed pulls, rebalance every 20 s, offset persistence
every 5 s, lock renewal. Jobs must be short (they issue async requests and return)."""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["Scheduler"]

log = logging.getLogger("rmq.client")


class Scheduler:
    """Runs ``fn`` after a delay, or periodically, on one daemon thread."""

    def __init__(self, name: str) -> None:
        self._heap: list[tuple[float, int, Callable[[], object]]] = []
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def call_later(self, delay_s: float, fn: Callable[[], object]) -> None:
        """Run ``fn`` once, ``delay_s`` from now."""
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), fn))
            self._cond.notify()

    def call_every(self, period_s: float, fn: Callable[[], object], first_s: float = 0) -> None:
        """Run ``fn`` every ``period_s`` (first after ``first_s``)."""

        def again() -> None:
            try:
                fn()
            finally:
                self.call_later(period_s, again)

        self.call_later(first_s or period_s, again)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    timeout = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(timeout)
                if self._stopped:
                    return
                _, _, fn = heapq.heappop(self._heap)
            try:
                fn()
            except Exception:
                log.exception("scheduled job %r failed", fn)

    def shutdown(self) -> None:
        """Drop pending jobs and stop the thread (waits for a running job)."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=10)
