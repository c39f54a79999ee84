"""``ConsumePool``: the push consumer's consume threads (``consumeThreadMax`` of them).

A ``concurrent.futures.ThreadPoolExecutor`` made a Future, a work item and a semaphore
round trip for every listener call; at one message per call that was most of what the
consumer spent per message (profile in benches/RESULTS.md, "Python consumer rate"). The
consumer never reads a result back, so tasks here are ``(fn, args)`` on a deque under one
condition. Threads start as tasks arrive, one per task until ``max_workers`` run (as the Java
pool's core threads do), named ``<prefix>_<n>`` as the executor named them.

A task submitted with ``spread=False`` wakes no thread while one is already running tasks:
that one takes it next. The consumer submits so for a fast listener, whose calls under the
GIL gain nothing from more threads and lose much to them: on 2 vCPUs a do-nothing listener
drained 78 k msg/s on one consume thread and 32 k on four or twenty, each wake-up a GIL
hand-off (benches/RESULTS.md, issue 18).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
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
        self._tasks: deque[_Task] = deque()
        self._cv = threading.Condition(threading.Lock())
        self._idle = 0  # threads waiting for a task
        self._waking = 0  # of those, notified and not yet awake
        self._busy = 0  # threads running a task
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._threads: list[threading.Thread] = []
        self._shutdown = False

    def submit(self, fn: Callable[..., object], *args: Any, spread: bool = True) -> None:
        """Run ``fn(*args)`` on a consume thread; what it raises is logged. ``spread``: on a
        thread of its own if one is free; otherwise only when no thread is running tasks."""
        with self._cv:
            if self._shutdown:
                raise RuntimeError("cannot schedule new tasks after shutdown")
            self._tasks.append((fn, args))
            if not spread and self._busy + self._waking > 0:
                return
            if self._idle > self._waking:
                self._waking += 1
                self._cv.notify()
            elif len(self._threads) < self._max:
                t = threading.Thread(
                    target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
                )
                self._threads.append(t)
                self._busy += 1  # it takes a task as soon as it runs
                t.start()

    def _work(self) -> None:
        cv, tasks = self._cv, self._tasks
        while True:
            with cv:
                # Counted busy since its start or its last task: one critical section from a
                # task's end to the next one's start, so a submit never sees this thread as
                # not running between two tasks.
                self._busy -= 1
                while not tasks:
                    if self._shutdown:
                        return
                    self._idle += 1
                    cv.wait()
                    self._idle -= 1
                    if self._waking:
                        self._waking -= 1
                fn, args = tasks.popleft()
                self._busy += 1
            try:
                fn(*args)
            except Exception:
                log.exception("a consume task raised")
            del fn, args

    def shutdown(self, wait: bool = True) -> None:
        """Take no more tasks; the threads finish the tasks queued so far and end
        (``wait``: return when they have)."""
        with self._cv:
            self._shutdown = True
            threads = list(self._threads)
            self._cv.notify_all()
        if wait:
            for t in threads:
                if t is not threading.current_thread():
                    t.join()
