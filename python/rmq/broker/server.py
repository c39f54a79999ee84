"""The broker process: the store, the Rust network server (send, pull, offsets, topics,
heartbeats, consumer admin), the config codes served in Python (:mod:`rmq.broker.admin_handler`),
nameserver registration, and the broker's schedules.

Python decides; Rust moves the bytes. This module wires the pieces and owns the timers:
register with every nameserver every ``registerNameServerPeriod`` ms (and at once when topics
change), persist consumer offsets every 5 s, delete CommitLog files at ``deleteWhen`` or when
the disk fills (never what a group, timer or delay level still needs), deliver delayed messages
when due (:class:`rmq.scheduling.delay.DelayService`, on a master), ask producers about
unfinished transactions every ``transactionCheckInterval`` ms
(:mod:`rmq.scheduling.transaction`). SIGTERM or SIGINT stop it cleanly: unregister, stop
serving, stop delivering and write the delay offsets, persist, flush, remove the ``abort``
file.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from rmq.admin.client import Admin
from rmq.broker.admin_handler import BrokerAdminHandler
from rmq.broker.registration import BrokerIdentity, NamesrvRegistrar
from rmq.broker.role import BrokerGroupRole
from rmq.codes import RequestCode
from rmq.config import SCHEMA, BrokerConfig, BrokerRole
from rmq.console import ConsoleServer
from rmq.errors import RmqError
from rmq.metrics_http import MetricsExporter, process_figures
from rmq.namesrv.server import NamesrvProcessor
from rmq.scheduling.delay import DelayService
from rmq.scheduling.retention import (
    DISK_SPACE_CLEAN_FORCIBLY_RATIO,
    RetentionPolicy,
    RetentionScheduler,
)
from rmq.scheduling.transaction import (
    TransactionChecker,
    TransactionCheckPolicy,
    TransactionCheckService,
)
from rmq.stop_signals import stop_on_signals

if TYPE_CHECKING:
    from rmq._rmq import BrokerServer, MessageStore, RemotingServer

__all__ = [
    "apply_runtime_config",
    "retention_policy",
    "run_broker",
    "start_embedded_namesrv",
    "transaction_check_policy",
]

log = logging.getLogger("rmq.broker")

PERSIST_INTERVAL_S = 5.0
"""RocketMQ's flushConsumerOffsetInterval."""


def retention_policy(config: BrokerConfig) -> RetentionPolicy:
    """The expired-file schedule of a broker config (whose store keys the store has accepted)."""
    forcibly = config.store.get("diskSpaceCleanForciblyRatio")
    forcibly_enable = config.store.get("cleanFileForciblyEnable", "true").lower() == "true"
    unconsumed = config.store.get("cleanUnconsumedFileForciblyEnable", "false").lower() == "true"
    return RetentionPolicy(
        delete_when=config.delete_when,
        interval_s=config.clean_resource_interval / 1000,
        disk_max_used_space_ratio=config.disk_max_used_space_ratio / 100,
        disk_space_clean_forcibly_ratio=(
            int(forcibly) / 100 if forcibly is not None else DISK_SPACE_CLEAN_FORCIBLY_RATIO
        ),
        clean_file_forcibly_enable=forcibly_enable,
        clean_unconsumed_file_forcibly_enable=unconsumed,
    )


def transaction_check_policy(config: BrokerConfig) -> TransactionCheckPolicy:
    """The transaction check-back schedule of a broker config."""
    return TransactionCheckPolicy(
        check_interval_s=config.transaction_check_interval / 1000,
        timeout_ms=config.transaction_time_out,
        check_max=config.transaction_check_max,
    )


def start_embedded_namesrv(
    port: int, config: BrokerConfig | None = None
) -> tuple[RemotingServer, NamesrvProcessor] | None:
    """Run a nameserver in this process (when no ``namesrvAddr`` is configured). With the
    broker's ``config`` it takes the broker's ``tls.server.*`` keys and ACL file, so that it
    serves the same clients and checks the same accounts as the broker."""
    from rmq._rmq import RemotingServer as Server

    processor = NamesrvProcessor()
    acl = config is not None and config.acl_enable
    try:
        server = Server(
            "0.0.0.0",
            port,
            processor,
            tls=config.tls_server if config is not None else None,
            acl_enable=acl,
            acl_file=config.acl_file_path if acl and config is not None else None,
        )
    except (RuntimeError, RmqError) as exc:
        log.error(
            "cannot start the embedded nameserver: %s. Set namesrvAddr (or -n host:port) to use "
            "a running nameserver, or free the port (--namesrv-port picks another).",
            exc,
        )
        return None
    processor.config.listen_port = int(server.local_addr.rsplit(":", 1)[1])
    log.info("embedded nameserver listening on %s", server.local_addr)
    return server, processor


def embedded_namesrv_refusal(config: BrokerConfig) -> str | None:
    """Why this broker could not register with the nameserver it embeds (which serves with the
    broker's TLS mode and ACL file), or None when it can."""
    if config.tls_server_mode == "enforcing" and not config.tls_enable:
        return (
            "tls.server.mode = enforcing also holds for the embedded nameserver, and this broker "
            "would register with it in plain TCP: set tls.enable = true (and "
            "tls.client.trustCertPath), or set namesrvAddr to a separate nameserver"
        )
    if config.acl_enable and not config.inner_access_key:
        return (
            "aclEnable = true also holds for the embedded nameserver, which accepts only "
            "registrations signed by an admin account: set innerAccessKey and innerSecretKey to "
            "an admin account of the ACL file, or set namesrvAddr to a separate nameserver"
        )
    return None


def broker_keys(config: BrokerConfig) -> dict[str, str]:
    """The settings the Rust broker server takes, by RocketMQ key name: the effective value of
    every key the schema gives the Rust broker, and the broker's identity."""
    return {
        **{k: v for k, v in config.to_properties().items() if SCHEMA[k].owner == "broker"},
        "brokerName": config.broker_name,
        "brokerClusterName": config.broker_cluster_name,
        "brokerId": str(config.broker_id),
        "brokerAddr": config.store_host,
    }


def apply_runtime_config(
    old: BrokerConfig,
    new: BrokerConfig,
    *,
    server: BrokerServer,
    store: MessageStore,
    registrar: NamesrvRegistrar,
    scheduler: RetentionScheduler,
    role: BrokerGroupRole | None = None,
) -> None:
    """Make a running broker follow an accepted UPDATE_BROKER_CONFIG (see
    :data:`rmq.broker.admin_handler.RUNTIME_KEYS`)."""
    if role is not None and (new.broker_role != old.broker_role or new.broker_id != old.broker_id):
        role.switch(new.broker_role, new.broker_id)
    if new.file_reserved_time != old.file_reserved_time:
        store.set_file_reserved_time(new.file_reserved_time)
    if new.broker_permission != old.broker_permission:
        # Bumps the topic data version; the topic change listener registers at once.
        server.set_broker_permission(new.broker_permission)
    if new.register_name_server_period != old.register_name_server_period:
        registrar.period_s = new.register_name_server_period / 1000
    policy = retention_policy(new)
    if policy != scheduler.policy:
        scheduler.policy = policy


def run_broker(
    config: BrokerConfig,
    embedded_namesrv_port: int = 9876,
    *,
    config_path: str | None = None,
    console: tuple[str, int] | None = None,
) -> int:
    """Run until SIGTERM or SIGINT; return the exit status: 0 once the store closed cleanly
    (even if a config file could not be written then: its previous version is kept and the
    error is logged), 1 when the store's final flush failed or it could not start.

    ``config_path`` is the file ``config`` was loaded from: UPDATE_BROKER_CONFIG writes accepted
    changes back to it. ``console`` is (host, port) of the web console to serve alongside
    (:func:`start_console`), None for none.
    """
    from rmq._rmq import BrokerServer, MessageStore, RemotingClient, store_config_defaults

    stopping = threading.Event()

    stop_on_signals(stopping, log)

    namesrv_addrs = list(config.namesrv_addrs)
    embedded = None
    if not namesrv_addrs:
        refusal = embedded_namesrv_refusal(config)
        if refusal:
            log.error("%s", refusal)
            return 1
        embedded = start_embedded_namesrv(embedded_namesrv_port, config)
        if embedded is None:
            return 1
        namesrv_addrs = [f"127.0.0.1:{embedded[0].local_addr.rsplit(':', 1)[1]}"]

    root = config.store_path_root_dir
    try:
        store_keys = dict(config.store)
        # As Apache's BrokerStartup: the HA port is listenPort + 1 unless broker.conf sets it.
        store_keys.setdefault(
            "haListenPort", str(config.listen_port + 1 if config.listen_port < 65535 else 0)
        )
        store = MessageStore(
            root, store_keys, store_host=config.store_host, ha_tls=config.tls_settings
        )
    except RmqError as exc:
        log.error("cannot open the store at %s: %s", root, exc)
        if embedded is not None:
            embedded[0].shutdown()
        return 1
    admin = BrokerAdminHandler(
        config, config_path=config_path, store_defaults=store_config_defaults()
    )
    try:
        # Everything the broker itself asks (registration, a slave's copy from its master)
        # goes through this one client: signed with innerAccessKey/innerSecretKey when set,
        # over TLS with tls.enable (tls.client.*).
        client = RemotingClient(
            access_key=config.inner_access_key or None,
            secret_key=config.inner_secret_key or None,
            **config.tls_client.as_kwargs(),
        )
        server = BrokerServer(store, broker_keys(config), "0.0.0.0", config.listen_port, admin)
    except (RmqError, RuntimeError) as exc:
        log.error("%s", exc)
        store.shutdown()
        if embedded is not None:
            embedded[0].shutdown()
        return 1

    exporter: MetricsExporter | None = None
    if config.metrics_exporter_type == "PROM":
        try:
            exporter = broker_metrics_exporter(config, server)
        except RmqError as exc:
            log.error("%s", exc)
            server.shutdown()
            store.shutdown()
            if embedded is not None:
                embedded[0].shutdown()
            return 1

    web_console = None
    if console is not None:
        try:
            web_console = start_console(config, namesrv_addrs, *console)
        except RmqError as exc:
            log.error("%s", exc)
            if exporter is not None:
                exporter.shutdown()
            server.shutdown()
            store.shutdown()
            if embedded is not None:
                embedded[0].shutdown()
            return 1

    identity = BrokerIdentity(
        cluster_name=config.broker_cluster_name,
        broker_name=config.broker_name,
        broker_id=config.broker_id,
        broker_addr=config.store_host,
        ha_server_addr=f"{config.broker_ip1}:{store.ha_listen_port or config.listen_port + 1}",
    )
    # RocketMQ runs its ScheduleMessageService and transaction checks on masters only (a
    # slave's store takes no puts); the role starts and stops them (rmq.broker.role).
    role = BrokerGroupRole(
        config,
        store=store,
        server=server,
        client=client,
        set_broker_id=lambda broker_id, ha: registrar.set_broker_id(broker_id, ha),
        transactions=lambda: TransactionCheckService(
            TransactionChecker(store, server, transaction_check_policy(admin.config))
        ),
        delay=lambda: DelayService(
            store,
            os.path.join(root, "config"),
            persist_interval_s=config.flush_delay_offset_interval / 1000,
        ),
    )
    if config.broker_role is BrokerRole.SLAVE:
        server.set_slave_of("")  # refuse writes before the first registration answers
    admin.add_handler(RequestCode.GET_ALL_DELAY_OFFSET, role.serve_delay_offsets)
    registrar = NamesrvRegistrar(
        client,
        namesrv_addrs,
        identity,
        server.register_body,
        period_s=config.register_name_server_period / 1000,
        on_result=role.on_registered,
    )
    server.set_topic_change_listener(registrar.trigger_and_wait)
    scheduler = RetentionScheduler(store, retention_policy(config))
    admin.set_listener(
        lambda old, new: apply_runtime_config(
            old,
            new,
            server=server,
            store=store,
            registrar=registrar,
            scheduler=scheduler,
            role=role,
        )
    )
    try:
        # Registered before the start-up line: "listening on" means clients can route to it.
        registrar.start()
        log.info(
            "broker %r (cluster %s, %s, %s): listening on %s as %s, nameservers %s; "
            "store open at %s, last exit clean: %s, transient store pool: %s",
            config.broker_name,
            config.broker_cluster_name,
            config.broker_role.value,
            config.flush_disk_type.value,
            server.local_addr,
            config.store_host,
            ";".join(namesrv_addrs),
            store.root_dir,
            "yes" if store.last_exit_ok else "no (recovered from an unclean exit)",
            "on" if store.transient_store_pool_active else "off",
        )
        scheduler.start()
        role.start()
        ticks = 0
        persist_failures = PersistFailures()
        while not stopping.wait(1.0):
            ticks += 1
            if ticks % int(PERSIST_INTERVAL_S) == 0:
                try:
                    server.persist()
                    persist_failures.ok()
                except RmqError as exc:
                    persist_failures.failed(exc)
            if embedded is not None and ticks % 5 == 0:
                embedded[1].routes.scan_not_active_broker()
    finally:
        if web_console is not None:
            web_console[0].shutdown()
            web_console[1].close()
        if exporter is not None:
            exporter.shutdown()
        registrar.stop(unregister=True)
        scheduler.stop()
        role.stop_checks()
        try:
            server.shutdown()
        except RmqError as exc:
            # The file named keeps its previous version (written at most PERSIST_INTERVAL_S
            # earlier): consumers may get the messages of those seconds again, nothing else.
            log.error(
                "shutdown: could not persist the broker state (%s); the previous version of "
                "that file is kept, so the offsets committed in the last %d s may be consumed "
                "again after the restart",
                exc,
                int(PERSIST_INTERVAL_S),
            )
        # After the server: sends that were still being answered are parked by now; the
        # delay offsets written here are what the next start continues from.
        role.stop()
        clean = True
        try:
            store.shutdown()
        except RmqError as exc:
            clean = False
            log.error(
                "shutdown: the store did not close cleanly (%s); the next start recovers", exc
            )
        if embedded is not None:
            embedded[0].shutdown()
    log.info("shutdown complete" if clean else "shutdown complete, store not closed cleanly")
    # The exit status says whether the *store* closed cleanly: 1 when its final flush failed
    # (the next start runs crash recovery). A config file that could not be written (a full
    # disk) does not make it 1: the previous version is kept, nothing stored is lost, and the
    # error line above names the file.
    return 0 if clean else 1


def broker_metrics_exporter(config: BrokerConfig, server: BrokerServer) -> MetricsExporter:
    """``GET /metrics`` on ``metricsPromExporterHost:metricsPromExporterPort`` (HTTPS with the
    broker's ``tls.server.*`` keys when TLS is on)."""
    from rmq._rmq import broker_metrics_text

    def scrape() -> str:
        cpu, resident = process_figures()
        return broker_metrics_text(server, cpu, resident)

    return MetricsExporter(
        scrape,
        config.metrics_prom_exporter_host,
        config.metrics_prom_exporter_port,
        tls=config.tls_server,
    )


def start_console(
    config: BrokerConfig, namesrv_addrs: list[str], host: str, port: int
) -> tuple[ConsoleServer, Admin]:
    """The web console (``--console-port``) against the broker's nameservers, signing with
    innerAccessKey/innerSecretKey and connecting over TLS as the broker's own client does."""
    admin = Admin(
        ";".join(namesrv_addrs),
        access_key=config.inner_access_key or None,
        secret_key=config.inner_secret_key or None,
        tls=config.tls_client,
    )
    try:
        return ConsoleServer(admin, host, port).start(), admin
    except RmqError:
        admin.close()
        raise


class PersistFailures:
    """The periodic persist's errors, logged once when they start, again at most every 5
    minutes while they last, and once when persisting works again (a full disk must not log
    a line every few seconds)."""

    REMIND_S = 300.0

    def __init__(self) -> None:
        self.since: float | None = None
        self.logged = 0.0
        self.count = 0

    def failed(self, exc: RmqError) -> None:
        now = time.monotonic()
        self.count += 1
        if self.since is None or now - self.logged >= self.REMIND_S:
            if self.since is None:
                self.since = now
            self.logged = now
            log.error(
                "persisting broker state failed: %s (the previous version of the file is kept; "
                "retrying every %d s, failed %d times so far)",
                exc,
                int(PERSIST_INTERVAL_S),
                self.count,
            )

    def ok(self) -> None:
        if self.since is not None:
            log.info("persisting broker state works again after %d failures", self.count)
        self.since = None
        self.count = 0
