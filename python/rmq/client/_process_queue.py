"""``ProcessQueue``: the messages pulled from one queue and not yet consumed. Its lowest
offset is what may be committed (a concurrent consumer finishes messages out of order, and
the committed offset must never pass one still in flight); its count and size drive flow
control; orderly consumption takes messages from it strictly in offset order."""

from __future__ import annotations

import threading
import time
from bisect import insort

from rmq._rmq import StoredMessage

__all__ = ["ProcessQueue"]


class ProcessQueue:
    """In-flight messages of one queue, by queue offset."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._offsets: list[int] = []
        self._msgs: dict[int, StoredMessage] = {}
        self._size = 0
        self.queue_offset_max = -1
        self.dropped = False
        # Orderly consumption: the broker lock, and messages taken but not committed.
        self.locked = False
        self.last_lock_timestamp = 0.0
        self.consume_lock = threading.Lock()
        self._consuming: dict[int, StoredMessage] = {}
        self._failed_attempts: dict[int, int] = {}
        self.consuming_scheduled = False
        # What consumerStatus reports (time.time(); 0 until it happens).
        self.last_pull_timestamp = 0.0
        self.last_consume_timestamp = 0.0

    def put(self, msgs: list[StoredMessage]) -> None:
        with self.lock:
            for m in msgs:
                if m.queue_offset in self._msgs:
                    continue
                insort(self._offsets, m.queue_offset)
                self._msgs[m.queue_offset] = m
                self._size += len(m.body)
                self.queue_offset_max = max(self.queue_offset_max, m.queue_offset)

    def remove(self, msgs: list[StoredMessage]) -> int:
        """Forget consumed ``msgs``; returns the offset that may be committed now (-1 when
        nothing was ever held)."""
        with self.lock:
            self.last_consume_timestamp = time.time()
            for m in msgs:
                if self._msgs.pop(m.queue_offset, None) is not None:
                    self._offsets.remove(m.queue_offset)
                    self._size -= len(m.body)
            if self._offsets:
                return self._offsets[0]
            return self.queue_offset_max + 1 if self.queue_offset_max >= 0 else -1

    @property
    def count(self) -> int:
        with self.lock:
            return len(self._msgs) + len(self._consuming)

    @property
    def size_bytes(self) -> int:
        with self.lock:
            return self._size

    def cached_offsets(self) -> list[int]:
        """Queue offsets of the messages held (waiting or being consumed), sorted."""
        with self.lock:
            return sorted([*self._msgs, *self._consuming])

    @property
    def max_span(self) -> int:
        with self.lock:
            return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    # ---- orderly ------------------------------------------------------------------------

    def take(self, n: int) -> list[StoredMessage]:
        """The next ``n`` messages in offset order, moved to the consuming set."""
        with self.lock:
            taken: list[StoredMessage] = []
            while self._offsets and len(taken) < n:
                off = self._offsets.pop(0)
                m = self._msgs.pop(off)
                self._consuming[off] = m
                taken.append(m)
            return taken

    def commit(self) -> int:
        """The consuming set is done; returns the next offset to commit (-1 if none)."""
        with self.lock:
            if not self._consuming:
                return -1
            self.last_consume_timestamp = time.time()
            nxt = max(self._consuming) + 1
            for off, m in self._consuming.items():
                self._size -= len(m.body)
                self._failed_attempts.pop(off, None)
            self._consuming.clear()
            return nxt

    def failed_attempt(self, queue_offset: int) -> int:
        """Count one more failed orderly attempt of the message; returns the count."""
        with self.lock:
            n = self._failed_attempts.get(queue_offset, 0) + 1
            self._failed_attempts[queue_offset] = n
            return n

    def rollback(self) -> None:
        """Put the consuming set back, to be taken again in order."""
        with self.lock:
            for off, m in self._consuming.items():
                insort(self._offsets, off)
                self._msgs[off] = m
            self._consuming.clear()

    def lock_expired(self, max_live_s: float = 30.0) -> bool:
        """Whether the broker lock may have lapsed (``REBALANCE_LOCK_MAX_LIVE_TIME``)."""
        return time.monotonic() - self.last_lock_timestamp > max_live_s
