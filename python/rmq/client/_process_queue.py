"""``ProcessQueue``: the messages pulled from one queue and not yet consumed. Its lowest
offset is what may be committed (a concurrent consumer finishes messages out of order, and
the committed offset must never pass one still in flight); its count and size drive flow
control; orderly consumption takes messages from it strictly in offset order.

The offsets are a deque in ascending order from which consumed offsets leave lazily: a
message leaves the dict at once and its offset when it reaches either end of the deque, so
taking a batch out costs one dict pop per message instead of a search of the whole list."""

from __future__ import annotations

import threading
import time
from collections import deque

from rmq._rmq import StoredMessage

__all__ = ["ProcessQueue"]


class ProcessQueue:
    """In-flight messages of one queue, by queue offset."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        # Ascending; may still hold offsets whose message left (skipped at the ends).
        self._offsets: deque[int] = deque()
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
            held, offsets = self._msgs, self._offsets
            in_order = True
            for m in msgs:
                off = m.queue_offset
                if off in held:
                    continue
                held[off] = m
                if in_order and (not offsets or off > offsets[-1]):
                    offsets.append(off)
                else:
                    in_order = False
                self._size += m.body_size
                if off > self.queue_offset_max:
                    self.queue_offset_max = off
            if not in_order:  # not after what is held (a rollback, a reset): rebuild
                self._offsets = deque(sorted(held))

    def _trim(self) -> None:
        """Drop offsets whose message left from both ends (call with the lock held)."""
        offsets, held = self._offsets, self._msgs
        while offsets and offsets[0] not in held:
            offsets.popleft()
        while offsets and offsets[-1] not in held:
            offsets.pop()

    def remove(self, msgs: list[StoredMessage]) -> int:
        """Forget consumed ``msgs``; returns the offset that may be committed now (-1 when
        nothing was ever held)."""
        with self.lock:
            self.last_consume_timestamp = time.time()
            held = self._msgs
            for m in msgs:
                if held.pop(m.queue_offset, None) is not None:
                    self._size -= m.body_size
            self._trim()
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
            self._trim()
            return self._offsets[-1] - self._offsets[0] if self._offsets else 0

    # ---- orderly ------------------------------------------------------------------------

    def take(self, n: int) -> list[StoredMessage]:
        """The next ``n`` messages in offset order, moved to the consuming set."""
        with self.lock:
            taken: list[StoredMessage] = []
            while self._offsets and len(taken) < n:
                off = self._offsets.popleft()
                m = self._msgs.pop(off, None)
                if m is None:  # left already
                    continue
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
                self._size -= m.body_size
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
            self._msgs.update(self._consuming)
            self._consuming.clear()
            self._offsets = deque(sorted(self._msgs))

    def lock_expired(self, max_live_s: float = 30.0) -> bool:
        """Whether the broker lock may have lapsed (``REBALANCE_LOCK_MAX_LIVE_TIME``)."""
        return time.monotonic() - self.last_lock_timestamp > max_live_s
