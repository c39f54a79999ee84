"""Store-only broker: the storage engine and its timed work, without the network server.

It opens :class:`rmq._rmq.MessageStore` (recovering it after an unclean exit), runs the
expired-file scheduler, and on SIGTERM/SIGINT stops the scheduler and shuts the store down
(flush, checkpoint, remove the ``abort`` file).
"""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

from rmq.config import BrokerConfig
from rmq.errors import RmqError
from rmq.namesrv.server import NamesrvProcessor
from rmq.scheduling.retention import (
    DISK_SPACE_CLEAN_FORCIBLY_RATIO,
    RetentionPolicy,
    RetentionScheduler,
)

if TYPE_CHECKING:
    from rmq._rmq import RemotingServer

__all__ = ["retention_policy", "run_store_only", "start_embedded_namesrv"]

log = logging.getLogger("rmq.broker")


def retention_policy(config: BrokerConfig) -> RetentionPolicy:
    """The expired-file schedule of a broker config (whose store keys the store has accepted)."""
    forcibly = config.store.get("diskSpaceCleanForciblyRatio")
    forcibly_enable = config.store.get("cleanFileForciblyEnable", "true").lower() == "true"
    return RetentionPolicy(
        delete_when=config.delete_when,
        interval_s=config.clean_resource_interval / 1000,
        disk_max_used_space_ratio=config.disk_max_used_space_ratio / 100,
        disk_space_clean_forcibly_ratio=(
            int(forcibly) / 100 if forcibly is not None else DISK_SPACE_CLEAN_FORCIBLY_RATIO
        ),
        clean_file_forcibly_enable=forcibly_enable,
    )


def start_embedded_namesrv(port: int) -> tuple[RemotingServer, NamesrvProcessor] | None:
    """Run a nameserver in this process (when no ``namesrvAddr`` is configured)."""
    from rmq._rmq import RemotingServer as Server

    processor = NamesrvProcessor()
    try:
        server = Server("0.0.0.0", port, processor)
    except RuntimeError as exc:
        log.error(
            "cannot start the embedded nameserver: %s. Set namesrvAddr (or -n host:port) to use "
            "a running nameserver, or free the port (--namesrv-port picks another).",
            exc,
        )
        return None
    log.info("embedded nameserver listening on %s", server.local_addr)
    return server, processor


def run_store_only(config: BrokerConfig, embedded_namesrv_port: int = 9876) -> int:
    """Run until SIGTERM or SIGINT; return the exit status (0 after a clean shutdown)."""
    from rmq._rmq import MessageStore

    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        del frame
        if stopping.is_set():
            log.info("%s received; shutdown already in progress", signal.Signals(signum).name)
            return
        log.info("%s received; shutting down", signal.Signals(signum).name)
        stopping.set()

    # Installed before the store opens: a signal during recovery still ends in a clean shutdown.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)

    embedded: tuple[RemotingServer, NamesrvProcessor] | None = None
    if not config.namesrv_addrs:
        embedded = start_embedded_namesrv(embedded_namesrv_port)
        if embedded is None:
            return 1

    root = config.store_path_root_dir
    try:
        store = MessageStore(root, dict(config.store), store_host=config.store_host)
    except RmqError as exc:
        log.error("cannot open the store at %s: %s", root, exc)
        if embedded is not None:
            embedded[0].shutdown()
        return 1

    scheduler = RetentionScheduler(store, retention_policy(config))
    try:
        log.info(
            "broker %r (cluster %s, %s, %s, store host %s): store open at %s, last exit clean: "
            "%s, transient store pool: %s; store-only mode: the network server (listenPort %d) "
            "and nameserver registration are not yet part of this build",
            config.broker_name,
            config.broker_cluster_name,
            config.broker_role.value,
            config.flush_disk_type.value,
            config.store_host,
            store.root_dir,
            "yes" if store.last_exit_ok else "no (recovered from an unclean exit)",
            "on" if store.transient_store_pool_active else "off",
            config.listen_port,
        )
        scheduler.start()
        ticks = 0
        while not stopping.wait(1.0):
            ticks += 1
            if embedded is not None and ticks % 5 == 0:
                embedded[1].routes.scan_not_active_broker()
    finally:
        scheduler.stop()
        store.shutdown()
        if embedded is not None:
            embedded[0].shutdown()
    log.info("shutdown complete")
    return 0
