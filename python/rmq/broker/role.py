"""A broker's place in its broker group (one master, brokerId 0; slaves, brokerId >= 1) and the
hand-made switches between the two (RocketMQ 4.x has no automatic failover).

What each role runs. A master delivers delayed messages (:class:`~rmq.scheduling.delay.
DelayService`), asks producers about unfinished transactions, and serves its delay offsets to
its slaves (GET_ALL_DELAY_OFFSET, 45). A slave refuses writes naming its master
(``BrokerServer.set_slave_of``), copies the master's configuration every 10 s
(:mod:`rmq.broker.slave_sync`), and follows the master's HA address that REGISTER_BROKER
answers with (unless ``haMasterAddress`` is configured).

Promotion (``rmq updateBrokerConfig -b SLAVE -k brokerRole -v SYNC_MASTER``, or ASYNC_MASTER)
keeps every byte the slave has: it writes an epoch note first, ``<storePathRootDir>/epoch.json``
(``{"epoch":N,"epochStartOffset":O,"followedEpoch":N}``: the group's new epoch and the
CommitLog max offset at promotion), switches the store (``store.set_broker_role``), registers
again as brokerId 0 and starts the master's services. The epoch is published in the broker's
runtime info (``brokerEpoch``, ``brokerEpochStartOffset``).

Rejoining. A broker that starts (or is switched) as a slave asks its master for that epoch
before it follows: when the master's epoch is one this broker never followed and its own
CommitLog reaches beyond the epoch's start, what lies beyond was never the group's (an old
master's unreplicated tail), so it is truncated (``store.truncate_commit_log``) before
following. A slave that already followed that epoch (a plain restart) resumes from its own
max offset: :func:`rejoin_truncate_offset` decides.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rmq._rmq import write_file_atomic
from rmq.broker.registration import Client
from rmq.broker.slave_sync import FIRST_SYNC_DELAY_S, SYNC_INTERVAL_S, SlaveSynchronize
from rmq.codes import RequestCode, ResponseCode
from rmq.config import BrokerConfig, BrokerRole
from rmq.errors import RemotingError, RmqError
from rmq.scheduling.delay import DelayService, format_delay_offsets, load_delay_offsets

if TYPE_CHECKING:
    from rmq._rmq import BrokerServer, MessageStore, RemotingResponse
    from rmq.broker.admin_handler import Request

__all__ = [
    "EPOCH_FILE",
    "BrokerGroupRole",
    "EpochNote",
    "GroupStore",
    "promoted_epoch",
    "rejoin_truncate_offset",
]

log = logging.getLogger("rmq.broker")

EPOCH_FILE = "epoch.json"
RUNTIME_EPOCH = "brokerEpoch"
RUNTIME_EPOCH_START = "brokerEpochStartOffset"


class GroupStore(Protocol):
    """What the role needs of ``rmq._rmq.MessageStore``'s replication methods."""

    def get_max_phy_offset(self) -> int: ...
    @property
    def ha_listen_port(self) -> int | None: ...
    def set_broker_role(self, role: str) -> None: ...
    def ha_update_master_address(self, addr: str) -> None: ...
    def truncate_commit_log(self, offset: int) -> int: ...


@dataclass(frozen=True, slots=True)
class EpochNote:
    """``epoch.json``: the epoch this broker started as master (0: never), where the CommitLog
    ended then, and the newest epoch it has followed as a slave or led."""

    epoch: int = 0
    start_offset: int = 0
    followed_epoch: int = 0

    @classmethod
    def load(cls, root: str | os.PathLike[str]) -> EpochNote:
        """The note under ``root``; the zero note when there is none. A damaged note is
        logged and read as the zero note (the rejoin check then compares against epoch 0)."""
        path = Path(root) / EPOCH_FILE
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                int(doc.get("epoch", 0)),
                int(doc.get("epochStartOffset", 0)),
                int(doc.get("followedEpoch", 0)),
            )
        except FileNotFoundError:
            return cls()
        except (ValueError, TypeError, AttributeError, OSError) as exc:
            log.error("%s is not an epoch note (%s); reading it as epoch 0", path, exc)
            return cls()

    def save(self, root: str | os.PathLike[str]) -> None:
        """Write the note (temp file, fsync, rename); ``OSError`` naming the file."""
        body = {
            "epoch": self.epoch,
            "epochStartOffset": self.start_offset,
            "followedEpoch": self.followed_epoch,
        }
        write_file_atomic(
            Path(root) / EPOCH_FILE, json.dumps(body, separators=(",", ":")).encode(), sync=True
        )


def promoted_epoch(note: EpochNote, max_offset: int) -> EpochNote:
    """The note of a broker becoming master now, at CommitLog max offset ``max_offset``."""
    epoch = max(note.epoch, note.followed_epoch) + 1
    return EpochNote(epoch, max_offset, epoch)


def rejoin_truncate_offset(
    note: EpochNote, master_epoch: int, master_start: int, own_max: int
) -> int | None:
    """Where a broker about to follow a master of epoch ``master_epoch`` (which began at
    ``master_start``) must cut its CommitLog, or None to keep it whole: only when it never
    followed that epoch and holds bytes beyond the epoch's start."""
    if master_epoch > max(note.epoch, note.followed_epoch) and own_max > master_start:
        return master_start
    return None


def _response(code: int, remark: str | None = None, body: bytes | None = None) -> RemotingResponse:
    from rmq._rmq import RemotingResponse

    return RemotingResponse(code, remark, None, body)


class BrokerGroupRole:
    """Runs the services of this broker's role and switches roles (see the module docs).

    ``set_broker_id(id, ha_server_addr)`` re-registers under another brokerId (and, from a
    new master, the HA address its store now listens on; None keeps the registered one);
    ``transactions`` makes a transaction check service (one per master period).
    """

    def __init__(
        self,
        config: BrokerConfig,
        *,
        store: MessageStore,
        server: BrokerServer,
        client: Client,
        set_broker_id: Callable[[int, str | None], None],
        transactions: Callable[[], _Service],
        delay: Callable[[], DelayService],
        sync_interval_s: float = SYNC_INTERVAL_S,
    ) -> None:
        self._store: GroupStore = store
        self._server = server
        self._client = client
        self._set_broker_id = set_broker_id
        self._new_transactions = transactions
        self._new_delay = delay
        self._root = config.store_path_root_dir
        self._host = config.broker_ip1
        self._config_dir = os.path.join(self._root, "config")
        self._ha_master_configured = config.store.get("haMasterAddress", "")
        self.role = config.broker_role
        self._lock = threading.RLock()
        self._master_addr = ""
        self._following = ""
        self._delay: DelayService | None = None
        self._transactions: _Service | None = None
        self.sync = SlaveSynchronize(
            client,
            server,
            lambda: self._master_addr,
            self._config_dir,
            interval_s=sync_interval_s,
            first_delay_s=min(sync_interval_s, FIRST_SYNC_DELAY_S),
        )

    @property
    def is_slave(self) -> bool:
        return self.role is BrokerRole.SLAVE

    @property
    def delay(self) -> DelayService | None:
        return self._delay

    def start(self) -> None:
        """Start the services of the configured role (after the first registration)."""
        with self._lock:
            if self.is_slave:
                self._server.set_slave_of(self._master_addr)
                self.sync.start()
            else:
                self._server.set_slave_of(None)
                self._publish_epoch(EpochNote.load(self._root))
                self._start_master_services()

    def stop_checks(self) -> None:
        """Stop the copy and the transaction checks (before the server stops serving)."""
        with self._lock:
            self.sync.stop()
            if self._transactions is not None:
                self._transactions.stop()
                self._transactions = None

    def stop(self) -> None:
        """Stop everything; delivery of delayed messages last (after the server)."""
        with self._lock:
            self.sync.stop()
            self._stop_master_services()

    # ---- the master's services --------------------------------------------------------------

    def _start_master_services(self) -> None:
        if self._delay is None:
            self._delay = self._new_delay()
            self._delay.start()
        if self._transactions is None:
            self._transactions = self._new_transactions()
            self._transactions.start()

    def _stop_master_services(self) -> None:
        if self._transactions is not None:
            self._transactions.stop()
            self._transactions = None
        if self._delay is not None:
            self._delay.stop()
            self._delay = None

    def _publish_epoch(self, note: EpochNote) -> None:
        epoch = str(note.epoch) if note.epoch else None
        start = str(note.start_offset) if note.epoch else None
        self._server.set_runtime_info(RUNTIME_EPOCH, epoch)
        self._server.set_runtime_info(RUNTIME_EPOCH_START, start)

    def serve_delay_offsets(self, request: Request) -> RemotingResponse:
        """GET_ALL_DELAY_OFFSET (45): ``DelayOffsetSerializeWrapper`` as fastjson writes it."""
        del request
        delay = self._delay
        if delay is not None:
            table = delay.offsets
        else:
            table = load_delay_offsets(Path(self._config_dir) / "delayOffset.json")
        return _response(ResponseCode.SUCCESS, None, format_delay_offsets(table).encode())

    # ---- following the master ---------------------------------------------------------------

    def on_registered(self, master_addr: str, ha_server_addr: str) -> None:
        """A nameserver answered REGISTER_BROKER: remember the master; point the HA client at
        it when it changed (after the rejoin check)."""
        with self._lock:
            if not self.is_slave:
                return
            if master_addr:
                self._master_addr = master_addr
                self._server.set_slave_of(master_addr)
            ha = self._ha_master_configured or ha_server_addr
            if master_addr and ha and ha != self._following:
                self._follow(master_addr, ha)

    def _master_epoch(self, master_addr: str) -> tuple[int, int]:
        resp = self._client.invoke(master_addr, RequestCode.GET_BROKER_RUNTIME_INFO, None, None)
        if resp.code != ResponseCode.SUCCESS:
            raise RmqError(f"master {master_addr} refused GET_BROKER_RUNTIME_INFO: {resp.remark}")
        table: Mapping[str, str] = (json.loads(resp.body or b"{}").get("table")) or {}
        return int(table.get(RUNTIME_EPOCH, 0)), int(table.get(RUNTIME_EPOCH_START, 0))

    def _follow(self, master_addr: str, ha_addr: str) -> None:
        try:
            epoch, start = self._master_epoch(master_addr)
        except (RmqError, RemotingError, ValueError) as exc:
            log.warning(
                "cannot read the epoch of master %s (%s); following it after the next registration",
                master_addr,
                exc,
            )
            return
        note = EpochNote.load(self._root)
        own_max = self._store.get_max_phy_offset()
        cut = rejoin_truncate_offset(note, epoch, start, own_max)
        try:
            if cut is not None:
                log.warning(
                    "rejoining as a slave of epoch %d (started at CommitLog offset %d): this "
                    "store holds %d bytes beyond it that the group never had; truncating them",
                    epoch,
                    start,
                    own_max - cut,
                )
                # A store configured with haMasterAddress follows from its open: stop first
                # (the store refuses to truncate while following).
                self._store.ha_update_master_address("")
                self._store.truncate_commit_log(cut)
            if epoch > note.followed_epoch:
                EpochNote(note.epoch, note.start_offset, epoch).save(self._root)
            self._store.ha_update_master_address(ha_addr)
        except (RmqError, OSError, AttributeError) as exc:
            log.error("cannot follow master %s at %s: %s", master_addr, ha_addr, exc)
            return
        self._following = ha_addr
        log.info(
            "following master %s (HA %s, epoch %d) from CommitLog offset %d",
            master_addr,
            ha_addr,
            epoch,
            self._store.get_max_phy_offset(),
        )

    # ---- switching by hand ------------------------------------------------------------------

    def switch(self, role: BrokerRole, broker_id: int) -> None:
        """Become ``role`` with ``broker_id`` (an accepted UPDATE_BROKER_CONFIG of brokerRole
        or brokerId). Raises ``RmqError`` or ``OSError`` when a step fails."""
        with self._lock:
            if role is self.role:
                if broker_id != 0 and self.is_slave:
                    self._set_broker_id(broker_id, None)
                return
            if role is BrokerRole.SLAVE:
                self._demote(broker_id)
            else:
                self._promote(role)

    def _promote(self, role: BrokerRole) -> None:
        self.sync.stop()
        note = promoted_epoch(EpochNote.load(self._root), self._store.get_max_phy_offset())
        note.save(self._root)  # before the first write of the new epoch
        self._store.set_broker_role(role.value)
        self.role = role
        self._following = ""
        self._server.set_slave_of(None)
        self._publish_epoch(note)
        self._start_master_services()
        port = self._store.ha_listen_port
        host = f"[{self._host}]" if ":" in self._host else self._host
        self._set_broker_id(0, f"{host}:{port}" if port else None)
        log.warning(
            "promoted to %s: epoch %d starts at CommitLog offset %d; registered as brokerId 0",
            role.value,
            note.epoch,
            note.start_offset,
        )

    def _demote(self, broker_id: int) -> None:
        self._stop_master_services()
        self._store.set_broker_role(BrokerRole.SLAVE.value)
        self.role = BrokerRole.SLAVE
        self._master_addr = ""
        self._server.set_slave_of("")
        self._publish_epoch(EpochNote())
        self._set_broker_id(broker_id, None)
        self.sync.start()
        log.warning(
            "now a slave (brokerId %d): following the master the nameservers name", broker_id
        )


class _Service(Protocol):
    def start(self) -> None: ...
    def stop(self) -> None: ...
