"""Where a consumer group's progress lives: on the brokers for clustering
(``RemoteBrokerOffsetStore``: committed with UPDATE_CONSUMER_OFFSET), in a local file for
broadcasting (``LocalFileOffsetStore``: every consumer has its own progress). Both keep the
offsets in memory and persist every ``persist_consumer_offset_interval`` (5 s) and on shutdown.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path

from rmq._rmq import ClientInstance, write_file_atomic
from rmq.client.message_queue import MessageQueue

__all__ = [
    "LocalFileOffsetStore",
    "OffsetStore",
    "RemoteBrokerOffsetStore",
    "parse_offset_table",
]

log = logging.getLogger("rmq.client")

# A fastjson Map<MessageQueue, Long>: object keys, which json.loads cannot read.
_MQ_ENTRY = re.compile(
    r'\{"brokerName":"((?:[^"\\]|\\.)*)","queueId":(-?\d+),"topic":"((?:[^"\\]|\\.)*)"\}'
    r"\s*:\s*(-?\d+)"
)


def parse_offset_table(text: str) -> dict[MessageQueue, int]:
    """Read the ``offsetTable`` of a fastjson body (ResetOffsetBody, offsets.json)."""
    return {
        MessageQueue(topic, broker, int(qid)): int(offset)
        for broker, qid, topic, offset in _MQ_ENTRY.findall(text)
    }


class OffsetStore(ABC):
    """Offsets of one group, by queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._table: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool = False) -> None:
        """Remember ``offset`` as the next offset to consume of ``mq``."""
        with self._lock:
            if increase_only and self._table.get(mq, -1) >= offset:
                return
            self._table[mq] = offset

    def read_memory(self, mq: MessageQueue) -> int:
        """The in-memory offset, or -1."""
        with self._lock:
            return self._table.get(mq, -1)

    @abstractmethod
    def read_store(self, mq: MessageQueue) -> int:
        """The persisted offset (remembered in memory too), or -1 when there is none."""

    @abstractmethod
    def persist_all(self, mqs: Iterable[MessageQueue], wait: bool = False) -> None:
        """Persist the offsets of ``mqs`` (``wait``: until the broker confirmed)."""

    def remove(self, mq: MessageQueue) -> None:
        """Forget ``mq`` (no longer ours)."""
        with self._lock:
            self._table.pop(mq, None)

    def snapshot(self) -> dict[MessageQueue, int]:
        """A copy of the in-memory table."""
        with self._lock:
            return dict(self._table)


class RemoteBrokerOffsetStore(OffsetStore):
    """Clustering: offsets committed to each queue's broker."""

    def __init__(self, instance: ClientInstance, group: str) -> None:
        super().__init__()
        self._instance = instance
        self._group = group

    def read_store(self, mq: MessageQueue) -> int:
        offset = self._instance.query_consumer_offset(self._group, mq)
        if offset is None:
            return -1
        self.update(mq, offset)
        return offset

    def persist_all(self, mqs: Iterable[MessageQueue], wait: bool = False) -> None:
        table = self.snapshot()
        for mq in mqs:
            offset = table.get(mq)
            if offset is None or offset < 0:
                continue
            try:
                self._instance.update_consumer_offset(self._group, mq, offset, oneway=not wait)
            except Exception as exc:  # a broker down must not stop the others' commits
                log.warning("committing offset %d of %s for %s: %s", offset, mq, self._group, exc)


def default_offset_dir() -> Path:
    """``rocketmq.client.localOffsetStoreDir``, or ``~/.rocketmq_offsets`` as RocketMQ."""
    configured = os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR")
    return Path(configured) if configured else Path.home() / ".rocketmq_offsets"


class LocalFileOffsetStore(OffsetStore):
    """Broadcasting: offsets in ``<dir>/<client id>/<group>/offsets.json``, written atomically
    (:func:`rmq._rmq.write_file_atomic`: temp file + rename, previous version kept as
    ``offsets.json.bak``)."""

    def __init__(self, client_id: str, group: str, directory: Path | None = None) -> None:
        super().__init__()
        self.path = (directory or default_offset_dir()) / client_id / group / "offsets.json"
        self._loaded = self._load()

    def _load(self) -> dict[MessageQueue, int]:
        for candidate in (self.path, self.path.with_name("offsets.json.bak")):
            try:
                return parse_offset_table(candidate.read_text())
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("reading offsets from %s: %s", candidate, exc)
        return {}

    def read_store(self, mq: MessageQueue) -> int:
        offset = self._loaded.get(mq, -1)
        if offset >= 0:
            self.update(mq, offset)
        return offset

    def persist_all(self, mqs: Iterable[MessageQueue], wait: bool = False) -> None:
        del wait  # the file is written before this returns
        table = self.snapshot()
        keep = {mq: table[mq] for mq in mqs if mq in table}
        # Queues not assigned now keep their last persisted offsets.
        merged = {**self._loaded, **keep}
        entries = ",".join(
            json.dumps(
                {"brokerName": mq.broker_name, "queueId": mq.queue_id, "topic": mq.topic},
                separators=(",", ":"),
            )
            + f":{offset}"
            for mq, offset in sorted(merged.items())
        )
        text = '{"offsetTable":{' + entries + "}}"
        write_file_atomic(self.path, text.encode(), backup=True)
        self._loaded = merged
