"""SIGTERM stops a server even when it arrives while the main thread holds the stop event's
lock (inside ``Event.wait``): setting the event from the handler itself would wait for that
lock forever, which hung a nameserver told to stop right after it started."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

from rmq.stop_signals import stop_on_signals


def test_a_signal_while_the_events_lock_is_held_still_stops() -> None:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    stop = threading.Event()
    try:
        stop_on_signals(stop, logging.getLogger("rmq.test"))
        with stop._cond:  # type: ignore[attr-defined]  # what Event.wait holds between checks
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.1)  # the handler runs here, on this thread, with the lock held
            assert not stop.is_set()
        assert stop.wait(5), "the event was set once the lock was let go"
    finally:
        for s, handler in saved.items():
            signal.signal(s, handler)
