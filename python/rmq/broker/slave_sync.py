"""A slave's copy of its master's configuration (RocketMQ's ``SlaveSynchronize``).

Every 10 s a slave asks its master for its topics (GET_ALL_TOPIC_CONFIG, 21), subscription
groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201), consumer offsets (GET_ALL_CONSUMER_OFFSET, 43)
and delay offsets (GET_ALL_DELAY_OFFSET, 45), and takes them: topics and groups whole when the
master's data version differs from its own, delay offsets as the master's ``delayOffset.json``
text, written to its own. The master is the one the nameservers named in the last
REGISTER_BROKER answer; while none is known (the master is down) nothing is copied.

Consumer offsets go further than RocketMQ 4.x, which overwrites the slave's with the master's:
while the master is down consumers commit to the slave, and those commits must survive the
master's return. :func:`merge_offsets` keeps the further offset: an offset a consumer committed
to this slave since the last copy (it differs from what the copy left) that is ahead of the
master's is sent to the master (UPDATE_CONSUMER_OFFSET) and kept; everything else follows the
master, so a reset done on the master still wins. The baseline is taken when the copy starts:
offsets a consumer committed to the slave before a restart of the slave and never sent to the
master follow the master afterwards.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rmq import fastjson
from rmq._rmq import write_file_atomic
from rmq.broker.registration import Client
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import RmqError

if TYPE_CHECKING:
    from rmq._rmq import RemotingResponse

__all__ = [
    "SYNC_INTERVAL_S",
    "OffsetTable",
    "SlaveServer",
    "SlaveSynchronize",
    "merge_offsets",
    "parse_offset_table",
]

log = logging.getLogger("rmq.broker")

SYNC_INTERVAL_S = 10.0
"""RocketMQ's slave synchronisation period (``BrokerController.handleSlaveSynchronize``)."""
FIRST_SYNC_DELAY_S = 3.0
"""RocketMQ starts the first copy 3 s after the slave starts."""

OffsetTable = dict[tuple[str, int], int]
"""``(topic@group, queue id)`` → committed offset."""


class SlaveServer(Protocol):
    """What the copy needs of ``rmq._rmq.BrokerServer``."""

    def consumer_offsets_json(self) -> bytes: ...
    def put_all_consumer_offsets(self, body: bytes) -> None: ...
    def replace_topic_configs(self, body: bytes) -> bool: ...
    def replace_subscription_groups(self, body: bytes) -> bool: ...


def parse_offset_table(body: bytes) -> OffsetTable:
    """A ``ConsumerOffsetSerializeWrapper`` body (fastjson's bare queue-id keys accepted)."""
    doc = fastjson.loads(body)
    table = doc.get("offsetTable") if isinstance(doc, dict) else None
    if not isinstance(table, dict):
        raise ValueError("no offsetTable object")
    out: OffsetTable = {}
    for key, queues in table.items():
        if not isinstance(queues, dict):
            raise ValueError(f"offsets of {key!r} are not an object")
        for qid, offset in queues.items():
            out[(str(key), int(qid))] = int(offset)
    return out


def format_offset_table(table: Mapping[tuple[str, int], int]) -> bytes:
    """The inverse of :func:`parse_offset_table` (standard JSON)."""
    nested: dict[str, dict[str, int]] = {}
    for (key, qid), offset in sorted(table.items()):
        nested.setdefault(key, {})[str(qid)] = offset
    return json.dumps({"offsetTable": nested}, separators=(",", ":")).encode()


def merge_offsets(
    master: Mapping[tuple[str, int], int],
    local: Mapping[tuple[str, int], int],
    synced: Mapping[tuple[str, int], int],
) -> tuple[OffsetTable, OffsetTable]:
    """Decide one copy of consumer offsets: ``(take, push)``.

    ``synced`` is what the previous copy left in the slave's table; an entry of ``local`` that
    differs from it was committed by a consumer since. Such an entry ahead of the master's
    (or unknown to the master) goes into ``push`` (send it to the master, keep it); every
    other entry of ``master`` goes into ``take`` (the slave follows the master).
    """
    push: OffsetTable = {}
    for key, offset in local.items():
        committed_here = synced.get(key) != offset
        if committed_here and offset > master.get(key, -1):
            push[key] = offset
    take = {key: offset for key, offset in master.items() if key not in push}
    return take, push


def _ok(resp: RemotingResponse, what: str, master: str) -> bytes:
    if resp.code != ResponseCode.SUCCESS:
        raise RmqError(f"master {master} answered {what} with code {resp.code}: {resp.remark}")
    return resp.body or b""


class SlaveSynchronize:
    """Copies the master's configuration into this slave every ``interval_s`` (see the
    module docs). ``master_addr`` returns the master's address ("" while unknown);
    ``config_dir`` is the slave's ``<storePathRootDir>/config``."""

    def __init__(
        self,
        client: Client,
        server: SlaveServer,
        master_addr: Callable[[], str],
        config_dir: str | os.PathLike[str],
        *,
        interval_s: float = SYNC_INTERVAL_S,
        first_delay_s: float = FIRST_SYNC_DELAY_S,
        timeout_ms: int = 3000,
    ) -> None:
        self._client = client
        self._server = server
        self._master_addr = master_addr
        self._delay_path = Path(config_dir) / "delayOffset.json"
        self._interval_s = interval_s
        self._first_delay_s = first_delay_s
        self._timeout_ms = timeout_ms
        self._synced: OffsetTable | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False

    def _invoke(
        self, master: str, code: int, what: str, header: Mapping[str, str] | None = None
    ) -> bytes:
        resp = self._client.invoke(master, code, header, None, self._timeout_ms)
        return _ok(resp, what, master)

    def sync_all(self) -> bool:
        """One copy; whether a master was known and every step worked."""
        master = self._master_addr()
        if not master:
            return False
        ok = True
        for step in (
            self.sync_topic_config,
            self.sync_consumer_offset,
            self.sync_delay_offset,
            self.sync_subscription_group_config,
        ):
            try:
                step(master)
            except (RmqError, ValueError, OSError) as exc:
                ok = False
                if not self._failing:
                    log.warning(
                        "slave sync from master %s: %s failed: %s (retrying every %.0f s)",
                        master,
                        step.__name__,
                        exc,
                        self._interval_s,
                    )
        if ok and self._failing:
            log.info("slave sync from master %s works again", master)
        self._failing = not ok
        return ok

    def sync_topic_config(self, master: str) -> None:
        body = self._invoke(master, RequestCode.GET_ALL_TOPIC_CONFIG, "GET_ALL_TOPIC_CONFIG")
        if self._server.replace_topic_configs(body):
            log.info("slave sync: took the topic configs of master %s", master)

    def sync_subscription_group_config(self, master: str) -> None:
        body = self._invoke(
            master,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
            "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
        )
        if self._server.replace_subscription_groups(body):
            log.info("slave sync: took the subscription groups of master %s", master)

    def sync_consumer_offset(self, master: str) -> None:
        body = self._invoke(master, RequestCode.GET_ALL_CONSUMER_OFFSET, "GET_ALL_CONSUMER_OFFSET")
        theirs = parse_offset_table(body)
        local = parse_offset_table(self._server.consumer_offsets_json())
        # Without a baseline (never started), nothing here is known to be a consumer's.
        synced = local if self._synced is None else self._synced
        take, push = merge_offsets(theirs, local, synced)
        for (key, qid), offset in sorted(push.items()):
            topic, _, group = key.partition("@")
            self._invoke(
                master,
                RequestCode.UPDATE_CONSUMER_OFFSET,
                "UPDATE_CONSUMER_OFFSET",
                {
                    "consumerGroup": group,
                    "topic": topic,
                    "queueId": str(qid),
                    "commitOffset": str(offset),
                },
            )
            log.info(
                "slave sync: offset %d of %s queue %d, committed here, is ahead of master %s's "
                "(%d): sent to the master",
                offset,
                key,
                qid,
                master,
                theirs.get((key, qid), -1),
            )
        self._server.put_all_consumer_offsets(format_offset_table(take))
        self._synced = {**local, **take, **push}

    def sync_delay_offset(self, master: str) -> None:
        body = self._invoke(master, RequestCode.GET_ALL_DELAY_OFFSET, "GET_ALL_DELAY_OFFSET")
        if not body.strip():
            return
        try:
            current = self._delay_path.read_bytes()
        except FileNotFoundError:
            current = None
        if current != body:
            write_file_atomic(self._delay_path, body, backup=current is not None, sync=False)

    # ---- the schedule -----------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None and self._thread.is_alive():
            return
        # What the table holds now is not a consumer's commit since the last copy; whatever
        # consumers commit from here on (the master may be down) is.
        try:
            self._synced = parse_offset_table(self._server.consumer_offsets_json())
        except ValueError as exc:
            log.error("slave sync: cannot read this broker's consumer offsets: %s", exc)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="rmq-slave-sync", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    def _run(self) -> None:
        if self._stop.wait(self._first_delay_s):
            return
        while True:
            try:
                self.sync_all()
            except Exception:
                log.exception("slave sync round failed")
            if self._stop.wait(self._interval_s):
                return
