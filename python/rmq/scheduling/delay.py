"""Delay levels: RocketMQ's ScheduleMessageService, decided in Python.

A message sent with ``DELAY`` = *level* (``Message.delay_level``, or a consumer's send-back) is
*parked* by the store in ``SCHEDULE_TOPIC_XXXX``, queue *level* - 1, with its real topic and
queue in the ``REAL_TOPIC`` / ``REAL_QID`` properties; the unit the store's dispatch writes for
it carries its delivery time (store time + the level's delay, ``messageDelayLevel``) as tags
code. This module decides when those messages are delivered:

* one due-check per level, each with its own offset into the level's queue (the *offset
  table*); a level's queue is in delivery-time order (the store time only grows and the delay
  is fixed per level), so a check reads units from the level's offset and delivers the due
  prefix: everything up to the first unit that is not due yet, whose time says when to check
  again. A check finds the queue empty? The next one is at most half the level's delay (and
  0.5 s) later, which sees a message stored meanwhile well before it is due;
* delivery is one call into the store (:meth:`rmq._rmq.MessageStore.deliver_scheduled`,
  the GIL released), which re-puts each message into its real queue with ``DELAY`` removed
  and the id its producer got kept as ``UNIQ_KEY``;
* a delivery time further away than the level's delay (the clock went back) is taken as
  now, as RocketMQ's ``correctDeliverTimestamp`` does.

Progress is ``{storePathRootDir}/config/delayOffset.json`` in RocketMQ's format
(``{"offsetTable":{1:12,2:0}}``: fastjson's bare integer keys, which this module also reads
quoted), written through a temp file and a rename with the previous version kept as ``.bak``
(:func:`rmq._rmq.write_file_atomic`; a failed write keeps the old file and is logged):

* right after every delivery (no fsync: the write survives the broker process being killed,
  like the page cache holding the delivered messages themselves), so a broker killed with
  ``kill -9`` repeats at most the one batch whose re-put had finished but whose offset was not
  yet written (the window between the store's append and the rename, well under a
  millisecond), and loses nothing;
* with an fsync every ``flushDelayOffsetInterval`` ms (10 s) and when the service stops, so a
  clean shutdown (SIGTERM) neither repeats nor loses a delivery.

The store is told the progress too (``MessageStore.set_delay_offsets``, at load and after each
delivery): CommitLog retention keeps every parked message from there on, expiry included, since
a parked message deleted before it is due would never reach its topic.

Under ASYNC_FLUSH a machine crash (not a process kill) may lose the last delivered messages
along with any other unflushed message; under SYNC_FLUSH a delivery is durable before its offset
is written.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol

from rmq._rmq import SCHEDULE_TOPIC, write_file_atomic
from rmq.config import schema_default

__all__ = [
    "DEFAULT_DELAY_LEVELS",
    "DELAY_OFFSET_FILE",
    "SCHEDULE_TOPIC",
    "DelayService",
    "format_delay_offsets",
    "load_delay_offsets",
    "parse_delay_levels",
    "parse_delay_offsets",
    "write_delay_offsets",
]

log = logging.getLogger(__name__)

DEFAULT_DELAY_LEVELS = schema_default("messageDelayLevel")
"""RocketMQ's ``messageDelayLevel`` (the config schema's default)."""

DELAY_OFFSET_FILE = "delayOffset.json"
"""The progress file, under ``{storePathRootDir}/config``."""

FLUSH_DELAY_OFFSET_INTERVAL_S = 10.0
"""RocketMQ's ``flushDelayOffsetInterval``: how often progress is written with an fsync."""

RETRY_AFTER_FAILURE_S = 0.1
"""After the store refused a delivery (busy, disk full): try again this much later (RocketMQ's
``DELAY_FOR_A_WHILE``). The refusal is logged at most every :data:`FAILURE_LOG_INTERVAL_S`."""

FAILURE_LOG_INTERVAL_S = 10.0

MIN_CHECK_INTERVAL_S = 0.01
"""Checks of one level are at least this far apart, so messages that fall due a few
microseconds apart are delivered together rather than one check each."""

MAX_IDLE_CHECK_S = 0.5
"""An empty level is checked again after half its delay, and at least this often."""

BATCH_UNITS = 2048
"""Units one check delivers at most; a level with more due goes again at once, after the other
levels that are due."""

FIRST_READ_UNITS = 64
"""Units a check reads first: when they are all due it reads on (up to :data:`BATCH_UNITS`), so a
level whose head is not due costs one small read."""

_BARE_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def parse_delay_levels(text: str) -> list[int]:
    """``messageDelayLevel`` (levels separated by blanks, each a whole number >= 1 with a unit
    ``s``, ``m``, ``h`` or ``d``) as milliseconds per level, level 1 first.

    This is the native parser (``rmq_common::config_schema::parse_delay_levels``), the one the
    store and the config check use, so a value refused here is refused there. Raises
    ``ValueError`` naming the first bad level.
    """
    from rmq._rmq import parse_delay_levels as native

    return native(text)


# --------------------------------------------------------------------------------------------
# delayOffset.json


def format_delay_offsets(table: Mapping[int, int]) -> str:
    """RocketMQ's ``DelayOffsetSerializeWrapper`` as fastjson writes it (bare integer keys)."""
    items = ",".join(f"{level}:{offset}" for level, offset in sorted(table.items()))
    return '{"offsetTable":{' + items + "}}"


def parse_delay_offsets(text: str) -> dict[int, int]:
    """Read :func:`format_delay_offsets`' output, or the same with quoted keys (standard JSON)
    or whitespace (pretty-printed). Raises ``ValueError`` for anything else."""
    try:
        doc = json.loads(text)
    except ValueError:
        doc = json.loads(_BARE_INT_KEY.sub(r'\1"\2"\3', text))
    table = doc.get("offsetTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise ValueError("no offsetTable object")
    out: dict[int, int] = {}
    for level, offset in table.items():
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise ValueError(f"offset of level {level} is {offset!r}, not an integer")
        out[int(level)] = offset
    return out


def load_delay_offsets(path: Path) -> dict[int, int]:
    """The offset table in ``path``, or in ``path.bak`` when ``path`` is missing or damaged;
    empty when neither exists (every level starts at 0)."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        try:
            text = candidate.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        if not text.strip():
            continue
        try:
            return parse_delay_offsets(text)
        except ValueError as exc:
            log.error("%s is not a delay offset table (%s); trying its backup", candidate, exc)
    return {}


def write_delay_offsets(
    path: Path, table: Mapping[int, int], *, sync: bool, previous: str | None = None
) -> str:
    """Write ``table`` to ``path`` as RocketMQ does (``MixAll.string2File``), through the one
    atomic replacement (:func:`rmq._rmq.write_file_atomic`): the previous version kept as
    ``.bak`` (unless ``previous``, the content last written, is the same), the new one written
    to ``.tmp`` and renamed over ``path``. With ``sync`` the new file and the directory are
    fsynced. Raises ``OSError`` naming the file (the old file is then unchanged). Returns the
    content written."""
    text = format_delay_offsets(table)
    write_file_atomic(path, text.encode("utf-8"), backup=previous != text, sync=sync)
    return text


# --------------------------------------------------------------------------------------------
# The service


class ScheduleStore(Protocol):
    """The part of :class:`rmq._rmq.MessageStore` the delay service uses."""

    @property
    def delay_levels_ms(self) -> list[int]: ...

    def get_consume_queue_units(
        self, topic: str, queue_id: int, offset: int, max_count: int = 1024
    ) -> _Units: ...

    def deliver_scheduled(self, units: Sequence[tuple[int, int, int]]) -> _Delivered: ...

    def topic_queues(self) -> dict[str, list[int]]: ...

    def set_delay_offsets(self, offsets: dict[int, int]) -> None: ...


class _Units(Protocol):
    @property
    def min_offset(self) -> int: ...
    @property
    def max_offset(self) -> int: ...
    @property
    def units(self) -> list[tuple[int, int, int]]: ...


class _Delivered(Protocol):
    @property
    def processed(self) -> int: ...
    @property
    def delivered(self) -> int: ...
    @property
    def skipped(self) -> int: ...
    @property
    def error(self) -> str | None: ...


class DelayService:
    """Delivers parked messages when due; one thread, one due-check schedule per level.

    ``store`` gives the level table (``messageDelayLevel`` as the store uses it for delivery
    times) and the data; ``config_dir`` holds ``delayOffset.json``. :meth:`start` loads the
    offsets (correcting any outside its level queue's range, as RocketMQ's
    ``correctDelayOffset``) and starts checking at once; :meth:`stop` finishes the check in
    progress and writes the offsets with an fsync.
    """

    def __init__(
        self,
        store: ScheduleStore,
        config_dir: str | os.PathLike[str],
        *,
        persist_interval_s: float = FLUSH_DELAY_OFFSET_INTERVAL_S,
        clock: Callable[[], float] = time.time,
        batch_units: int = BATCH_UNITS,
    ) -> None:
        if persist_interval_s <= 0:
            raise ValueError(f"persist_interval_s must be > 0, not {persist_interval_s}")
        if batch_units < 1:
            raise ValueError(f"batch_units must be >= 1, not {batch_units}")
        self._store = store
        self._levels_ms = list(store.delay_levels_ms)
        self.path = Path(config_dir) / DELAY_OFFSET_FILE
        self.persist_interval_s = persist_interval_s
        self._clock = clock
        self._batch = batch_units
        self._offsets: dict[int, int] = {}
        self._lock = threading.Lock()
        self._written: str | None = None
        self._synced: str | None = None
        self._delivered = 0
        self._last_failure_log = 0.0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rmq-delay", daemon=True)

    # ---- state ------------------------------------------------------------------------------

    @property
    def levels_ms(self) -> list[int]:
        """The delay of each level in ms, level 1 first."""
        return list(self._levels_ms)

    @property
    def offsets(self) -> dict[int, int]:
        """Level → next offset of its queue to deliver (a copy)."""
        with self._lock:
            return dict(self._offsets)

    @property
    def delivered(self) -> int:
        """Messages delivered since :meth:`start`."""
        return self._delivered

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    # ---- lifecycle --------------------------------------------------------------------------

    def load(self) -> None:
        """Read ``delayOffset.json`` and correct offsets outside their queue's range."""
        loaded = load_delay_offsets(self.path)
        present = set(self._store.topic_queues().get(SCHEDULE_TOPIC, []))
        offsets = dict(loaded)
        for level in range(1, len(self._levels_ms) + 1):
            offset = offsets.setdefault(level, 0)
            units = self._store.get_consume_queue_units(SCHEDULE_TOPIC, level - 1, offset, 0)
            lo, hi = (units.min_offset, units.max_offset) if level - 1 in present else (0, 0)
            fixed = min(max(offset, lo), hi)
            if fixed != offset:
                log.error(
                    "delay level %d: offset %d is outside its queue [%d, %d) of %s; using %d%s",
                    level,
                    offset,
                    lo,
                    hi,
                    SCHEDULE_TOPIC,
                    fixed,
                    " (messages below it were deleted before they were due)"
                    if fixed > offset
                    else "",
                )
                offsets[level] = fixed
        with self._lock:
            self._offsets = offsets
        # Retention keeps every parked message from these offsets on (until now it kept all).
        self._store.set_delay_offsets(offsets)
        try:
            self._written = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self._written = None
        self._synced = self._written

    def start(self) -> None:
        self.load()
        pending = {
            level: max(
                0,
                self._store.get_consume_queue_units(SCHEDULE_TOPIC, level - 1, 0, 0).max_offset
                - offset,
            )
            for level, offset in self.offsets.items()
            if level <= len(self._levels_ms)
        }
        waiting = {level: n for level, n in pending.items() if n}
        log.info(
            "delay levels %s; messages waiting per level: %s",
            " ".join(_format_ms(ms) for ms in self._levels_ms),
            waiting or "none",
        )
        self._thread.start()

    def stop(self, timeout: float | None = 30.0) -> None:
        """Finish the check in progress, stop, and write the offsets (with an fsync)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._offsets:
            self.persist(sync=True)

    def persist(self, *, sync: bool = True) -> None:
        """Write the offset table now (unchanged content is not rewritten unless ``sync`` and
        it was never fsynced)."""
        table = self.offsets
        text = format_delay_offsets(table)
        if text == self._written and (not sync or text == self._synced):
            return
        try:
            self._written = write_delay_offsets(self.path, table, sync=sync, previous=self._written)
        except OSError as exc:
            log.error("writing %s failed: %s (will retry)", self.path, exc)
            return
        if sync:
            self._synced = self._written

    # ---- checks -----------------------------------------------------------------------------

    def _run(self) -> None:
        start = time.monotonic()
        heap = [(start, level) for level in range(1, len(self._levels_ms) + 1)]
        heapq.heapify(heap)
        next_sync = start + self.persist_interval_s
        while not self._stopping.is_set():
            now = time.monotonic()
            if now >= next_sync:
                self.persist(sync=True)
                next_sync = now + self.persist_interval_s
            due_at, level = heap[0]
            if due_at > now:
                self._stopping.wait(min(due_at, next_sync) - now)
                continue
            heapq.heappop(heap)
            try:
                wait = self.check(level)
            except Exception:
                log.exception("delay level %d: check failed; retrying in 10 s", level)
                wait = 10.0
            heapq.heappush(heap, (time.monotonic() + wait, level))

    def check(self, level: int) -> float:
        """One due-check of ``level``: deliver what is due; returns the seconds until the next
        check of this level should run.

        It reads :data:`FIRST_READ_UNITS` units first (usually only the head matters) and, while
        everything read is due, up to ``batch_units`` more, then yields to the other levels."""
        delay_ms = self._levels_ms[level - 1]
        idle = min(max(delay_ms / 2000, MIN_CHECK_INTERVAL_S), MAX_IDLE_CHECK_S)
        read = min(FIRST_READ_UNITS, self._batch)
        done = 0
        while True:
            with self._lock:
                offset = self._offsets.get(level, 0)
            got = self._store.get_consume_queue_units(SCHEDULE_TOPIC, level - 1, offset, read)
            units = got.units
            if not units:
                if offset < got.min_offset:
                    log.error(
                        "delay level %d: messages from offset %d to %d were deleted before they "
                        "were due (CommitLog retention); continuing at %d",
                        level,
                        offset,
                        got.min_offset,
                        got.min_offset,
                    )
                    self._set_offset(level, got.min_offset)
                    return 0.0
                return idle
            now_ms = int(self._clock() * 1000)
            due = 0
            next_due_ms: int | None = None
            for _, _, deliver_ms in units:
                if deliver_ms > now_ms + delay_ms:
                    deliver_ms = now_ms  # the clock went back: RocketMQ delivers now
                if deliver_ms > now_ms:
                    next_due_ms = deliver_ms
                    break
                due += 1
            if due:
                result = self._store.deliver_scheduled(units if due == len(units) else units[:due])
                if result.processed:
                    self._delivered += result.delivered
                    self._set_offset(level, offset + result.processed)
                    # Right after the re-put: a kill now repeats at most this batch.
                    self.persist(sync=False)
                if result.error is not None:
                    self._log_failure(level, result.error)
                    return RETRY_AFTER_FAILURE_S
            if next_due_ms is not None:
                wait_ms = next_due_ms - int(self._clock() * 1000)
                return max(wait_ms / 1000, MIN_CHECK_INTERVAL_S)
            if len(units) < read:
                return idle  # the queue is drained
            done += len(units)
            if done >= self._batch:
                return 0.0  # more is due: again once the other levels had their turn
            read = self._batch - done

    def _set_offset(self, level: int, offset: int) -> None:
        with self._lock:
            self._offsets[level] = offset
            table = dict(self._offsets)
        # Retention may now delete what was delivered (a stale table only keeps more).
        self._store.set_delay_offsets(table)

    def _log_failure(self, level: int, error: str) -> None:
        now = time.monotonic()
        if now - self._last_failure_log >= FAILURE_LOG_INTERVAL_S:
            self._last_failure_log = now
            log.error(
                "delay level %d: delivering due messages failed: %s (retrying every %.1f s; "
                "they stay parked meanwhile)",
                level,
                error,
                RETRY_AFTER_FAILURE_S,
            )


def _format_ms(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000)):
        if ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"
