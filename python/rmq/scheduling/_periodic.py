"""The daemon thread behind the broker's periodic jobs (retention, transaction checks): one
round every interval, the first one interval after :meth:`start`; a failing round is logged
and the next one runs as usual, as RocketMQ's scheduled executors do."""

from __future__ import annotations

import logging
import threading


class PeriodicService:
    """Runs :meth:`_round` every :meth:`_interval_s` seconds on a daemon thread."""

    _what = "a periodic job"
    """Names the job in the log line of a failed round."""

    def __init__(self, thread_name: str) -> None:
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=thread_name, daemon=True)

    def _interval_s(self) -> float:
        raise NotImplementedError

    def _round(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Ask the thread to stop and wait for a round in progress to finish."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval_s()):
            try:
                self._round()
            except Exception:
                logging.getLogger(type(self).__module__).exception(
                    "%s failed; retrying in %.1f s", self._what, self._interval_s()
                )
