"""Exactly-once streaming writes (``deliveryGuarantee=exactly-once``): half messages that the
driver commits once per micro-batch.

Each task attempt of a micro-batch parks its rows as half messages (transactional batches,
which rmq's brokers accept) tagged with the batch id and a token naming the attempt, and
reports the halves it parked. Nothing is visible to consumers yet. When every task has
finished, Spark calls the sink's ``commit(batchId)`` on the driver, which

1. records the decision, the tokens of the attempts Spark accepted, in the query's checkpoint
   (``<checkpointLocation>/rmq-sink-commits/<batchId>``, written atomically and synced), then
2. commits those attempts' halves with END_TRANSACTION requests.

Halves nobody ended, those of a failed or duplicate task attempt, or those a driver that died
between 1 and 2 did not reach, are asked about by the broker (CHECK_TRANSACTION_STATE, to a
producer of the sink's transaction group: this driver). The answer comes from the record:
commit when the batch was committed with the half's token, roll back when it was committed
without it, unknown while the batch is still being written. A batch Spark replays after the
record was written (the driver died before Spark noted the commit) finds the record and rolls
its new halves back: its rows are delivered once, by the first attempt.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rmq._rmq import StoredMessage, write_file_atomic
from rmq.client._instance import Credentials
from rmq.client.transaction import LocalTransactionState, TransactionProducer
from rmq.errors import ConfigError, RmqError
from rmq.tls import PLAIN, TlsOptions

__all__ = [
    "BATCH_PROPERTY",
    "TASK_PROPERTY",
    "SinkCommitLog",
    "TransactionCoordinator",
    "coordinator",
    "decide",
    "local_checkpoint_dir",
    "transaction_group",
]

log = logging.getLogger("rmq.spark")

BATCH_PROPERTY = "RMQ_SPARK_BATCH"
"""The micro-batch id a half was written for."""
TASK_PROPERTY = "RMQ_SPARK_TASK"
"""The token of the task attempt that wrote a half."""
COMMITS_DIR = "rmq-sink-commits"
RECORDS_KEPT = 100
"""Commit records kept (Spark's ``minBatchesToRetain`` default): older batches are long done."""

Half = tuple[Any, str, str, int]
"""``(queue, offset_msg_id, msg_id, queue_offset)`` of one transactional batch send."""


def local_checkpoint_dir(raw: str) -> Path:
    """The directory ``checkpointLocation`` names, which must be local to the driver."""
    path = raw.strip()
    if path.startswith("file:"):
        path = re.sub(r"^file:(//)?", "", path)
    elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", path):
        raise ConfigError(
            "option 'deliveryGuarantee' = 'exactly-once' keeps its commit records beside the "
            f"checkpoint, on the driver's file system; checkpointLocation {raw!r} is not a "
            "local path (use a local directory, or 'at-least-once')"
        )
    return Path(path).absolute()


def transaction_group(producer_group: str, checkpoint: Path) -> str:
    """The producer group of a query's half messages: the driver answers the broker's checks
    for it. Stable across restarts of the query (it names the checkpoint)."""
    digest = hashlib.blake2b(str(checkpoint).encode(), digest_size=6).hexdigest().upper()
    return f"{producer_group}_TX_{digest}"


class SinkCommitLog:
    """The committed micro-batches of one query's sink: per batch, the task attempts whose
    halves were committed."""

    def __init__(self, checkpoint: Path) -> None:
        self.dir = checkpoint / COMMITS_DIR

    def _path(self, batch_id: int) -> Path:
        return self.dir / str(batch_id)

    def committed(self, batch_id: int) -> frozenset[str] | None:
        """The tokens batch ``batch_id`` was committed with, or None when it was not."""
        try:
            record = json.loads(self._path(batch_id).read_text())
        except FileNotFoundError:
            return None
        return frozenset(record["tasks"])

    def record(self, batch_id: int, tokens: Iterable[str], rows: int) -> None:
        """Write the record of ``batch_id`` durably (:func:`rmq._rmq.write_file_atomic`: temp
        file, fsync, rename, fsync dir)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        body = json.dumps(
            {
                "batch": batch_id,
                "tasks": sorted(tokens),
                "rows": rows,
                "committedAt": int(time.time() * 1000),
            }
        ).encode()
        write_file_atomic(self._path(batch_id), body)
        for old in self.dir.iterdir():
            if old.name.isdigit() and int(old.name) <= batch_id - RECORDS_KEPT:
                old.unlink(missing_ok=True)


def decide(commits: SinkCommitLog, properties: dict[str, str]) -> LocalTransactionState | None:
    """The answer about a half with ``properties``: commit when its batch was committed with
    its token, roll back when committed without it, unknown while the batch is not committed
    (being written, or failed). None for a message this sink did not write."""
    batch, token = properties.get(BATCH_PROPERTY), properties.get(TASK_PROPERTY)
    if batch is None or token is None or not batch.isdigit():
        return None
    tokens = commits.committed(int(batch))
    if tokens is None:
        return LocalTransactionState.UNKNOW
    if token in tokens:
        return LocalTransactionState.COMMIT_MESSAGE
    return LocalTransactionState.ROLLBACK_MESSAGE


class TransactionCoordinator:
    """The driver's side of one query's exactly-once sink: commits and rolls back
    micro-batches, and answers the brokers' checks about their halves."""

    def __init__(
        self,
        namesrv: str,
        group: str,
        checkpoint: Path,
        topic: str | None,
        creds: Credentials | None = None,
        tls: TlsOptions = PLAIN,
    ) -> None:
        self.group = group
        self.log = SinkCommitLog(checkpoint)
        self.producer = TransactionProducer(
            group,
            namesrv,
            instance_name=f"spark-tx-{group}",
            execute_local_transaction=_never_called,
            check_local_transaction=self.check,
            access_key=creds.access_key if creds else None,
            secret_key=creds.secret_key if creds else None,
            security_token=creds.security_token if creds else None,
            **tls.as_kwargs(),
        ).start()
        if topic is not None:
            # Heartbeat to the topic's brokers now, so that they can ask about halves left
            # open by an earlier run before this one sends anything.
            try:
                self.producer.fetch_publish_message_queues(topic)
                self.producer._instance.send_heartbeat()
            except RmqError as exc:
                log.warning("rmq: the route of %s is not known yet (%s)", topic, exc)

    def check(self, msg: StoredMessage) -> LocalTransactionState:
        """The broker asks about a half nobody ended."""
        state = decide(self.log, msg.properties)
        if state is None:
            log.warning(
                "rmq: a check about message %s, which this sink did not write (no %s/%s); "
                "answering UNKNOW",
                msg.msg_id,
                BATCH_PROPERTY,
                TASK_PROPERTY,
            )
            return LocalTransactionState.UNKNOW
        return state

    def commit(
        self, batch_id: int, tokens: Sequence[str], halves: Sequence[Half], rows: int
    ) -> None:
        """Commit micro-batch ``batch_id``: the attempts ``tokens`` parked ``halves``."""
        earlier = self.log.committed(batch_id)
        if earlier is not None:
            log.warning(
                "rmq: micro-batch %d was committed before (by a run that stopped before Spark "
                "noted it); its replay's %d rows are rolled back, the first attempt's stay",
                batch_id,
                rows,
            )
            self._end(batch_id, halves, LocalTransactionState.ROLLBACK_MESSAGE)
            return
        self.log.record(batch_id, tokens, rows)
        self._end(batch_id, halves, LocalTransactionState.COMMIT_MESSAGE)
        log.info("rmq: micro-batch %d committed: %d rows", batch_id, rows)

    def abort(self, batch_id: int, halves: Sequence[Half]) -> None:
        """Roll back what the finished tasks of a failed micro-batch parked."""
        self._end(batch_id, halves, LocalTransactionState.ROLLBACK_MESSAGE)

    def _end(self, batch_id: int, halves: Sequence[Half], state: LocalTransactionState) -> None:
        if not halves:
            return
        try:
            self.producer.native.end_transactions(list(halves), state.value)
        except RmqError as exc:
            # The decision is recorded: the brokers check the halves left open and get it.
            log.warning(
                "rmq: micro-batch %d: END_TRANSACTION (%s) failed for some messages (%s); the "
                "brokers will check them and get the same answer",
                batch_id,
                state.value,
                exc,
            )


def _never_called(message: Any, arg: Any) -> LocalTransactionState:
    return LocalTransactionState.UNKNOW


_lock = threading.Lock()
_coordinators: dict[tuple[str, str], TransactionCoordinator] = {}


def coordinator(
    namesrv: str,
    group: str,
    checkpoint: Path,
    topic: str | None,
    creds: Credentials | None = None,
    tls: TlsOptions = PLAIN,
) -> TransactionCoordinator:
    """The driver's coordinator of ``group`` (one per query, kept for the process's life, so
    that it answers checks about batches a stopped query left open)."""
    with _lock:
        c = _coordinators.get((namesrv, group))
        if c is None:
            c = _coordinators[(namesrv, group)] = TransactionCoordinator(
                namesrv, group, checkpoint, topic, creds, tls
            )
        return c
