"""SIGTERM and SIGINT stop a server process: the one handler the broker and the nameserver
install. The handler never sets the stop :class:`threading.Event` itself: a signal handler runs
on the main thread between two bytecodes, possibly inside ``Event.wait`` while that thread holds
the event's lock, and ``Event.set`` would then wait for that lock forever (the process hung on
SIGTERM). A short-lived thread sets it instead, once the main thread has let go."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

__all__ = ["stop_on_signals"]


def stop_on_signals(stop: threading.Event, log: logging.Logger) -> None:
    """Make SIGTERM and SIGINT set ``stop`` (logging the first one on ``log``)."""

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del frame
        if not stop.is_set():  # reads a flag, takes no lock
            log.info("%s received; shutting down", signal.Signals(signum).name)
        threading.Thread(target=stop.set, name="rmq-stop", daemon=True).start()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)
