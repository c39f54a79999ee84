"""``ConsumePool``: the push consumer's consume threads (``consumeThreadMax`` of them).

A ``concurrent.futures.ThreadPoolExecutor`` made a Future, a work item and a semaphore
round trip for every listener call; at one message per call that was most of what the
consumer spent per message (profile in benches/RESULTS.md, "Python consumer rate"). The
consumer never reads a result back, so tasks here are ``(fn, args)`` on a C
``queue.SimpleQueue``: one put, one get. Threads start as tasks arrive, one per task until
``max_workers`` run (as the Java pool's core threads do), named ``<prefix>_<n>`` as the
executor named them.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ConsumePool"]

log = logging.getLogger("rmq.client")

_Task = tuple[Callable[..., object], tuple[Any, ...]]


class ConsumePool:
    """A fixed-size pool of consume threads for fire-and-forget tasks."""

    def __init__(self, max_workers: int, thread_name_prefix: str) -> None:
        if max_workers < 1:
            raise ValueError(f"consume_thread_max must be at least 1, not {max_workers}")
        self._tasks: queue.SimpleQueue[_Task | None] = queue.SimpleQueue()
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()
        self._shutdown = False

    def submit(self, fn: Callable[..., object], *args: Any) -> None:
        """Run ``fn(*args)`` on a consume thread; what it raises is logged."""
        if self._shutdown:
            raise RuntimeError("cannot schedule new tasks after shutdown")
        self._tasks.put((fn, args))
        if len(self._threads) < self._max:
            self._start_thread()

    def _start_thread(self) -> None:
        with self._start_lock:
            if len(self._threads) >= self._max or self._shutdown:
                return
            t = threading.Thread(
                target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
            )
            self._threads.append(t)
            t.start()

    def _work(self) -> None:
        get = self._tasks.get
        while True:
            task = get()
            if task is None:
                return
            fn, args = task
            try:
                fn(*args)
            except Exception:
                log.exception("a consume task raised")
            del task, fn, args

    def shutdown(self, wait: bool = True) -> None:
        """Take no more tasks; the threads finish the tasks queued so far and end
        (``wait``: return when they have)."""
        with self._start_lock:
            self._shutdown = True
            threads = list(self._threads)
        for _ in threads:
            self._tasks.put(None)
        if wait:
            for t in threads:
                if t is not threading.current_thread():
                    t.join()
