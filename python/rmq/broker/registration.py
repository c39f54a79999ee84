"""Keeping the nameservers informed: REGISTER_BROKER to every nameserver every
``registerNameServerPeriod`` ms (30 s, clamped to 10-60 s), at once when topics change (and,
like RocketMQ's ``registerBrokerAll`` on a topic change, before the request that changed them
is answered: see :meth:`NamesrvRegistrar.trigger_and_wait`), and
UNREGISTER_BROKER at a clean shutdown (RocketMQ's ``BrokerOuterAPI``). A nameserver that
cannot be reached is logged and retried next period; the others are still served."""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from rmq.codes import RequestCode, ResponseCode
from rmq.errors import RemotingError

if TYPE_CHECKING:
    from rmq._rmq import RemotingResponse

__all__ = ["BrokerIdentity", "Client", "NamesrvRegistrar"]

log = logging.getLogger("rmq.broker")


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """The header fields that name a broker to a nameserver."""

    cluster_name: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_server_addr: str

    def header(self) -> dict[str, str]:
        return {
            "clusterName": self.cluster_name,
            "brokerName": self.broker_name,
            "brokerId": str(self.broker_id),
            "brokerAddr": self.broker_addr,
        }


class Client(Protocol):
    """What the registrar needs of ``rmq._rmq.RemotingClient``."""

    def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout_ms: int = 3000,
    ) -> RemotingResponse: ...


class NamesrvRegistrar:
    """Registers one broker with a list of nameservers, periodically, on a daemon thread.

    ``register_body`` returns the current RegisterBrokerBody JSON (topic configs and their data
    version); ``client`` is an ``rmq._rmq.RemotingClient`` (or anything with ``invoke``).
    """

    def __init__(
        self,
        client: Client,
        namesrv_addrs: Sequence[str],
        identity: BrokerIdentity,
        register_body: Callable[[], bytes],
        period_s: float = 30.0,
        timeout_ms: int = 3000,
        on_result: Callable[[str, str], None] | None = None,
    ) -> None:
        self._client = client
        self._addrs = list(namesrv_addrs)
        self._identity = identity
        self._body = register_body
        self._period_s = period_s
        self._timeout_ms = timeout_ms
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rmq-register", daemon=True)
        # Rounds asked for by trigger_and_wait and rounds done (each counts the requests it
        # covered), under _done.
        self._done = threading.Condition()
        self._requested = 0
        self._completed = 0
        self.master_addr = ""
        self.ha_server_addr = ""
        # Called with (masterAddr, haServerAddr) after every accepted registration: a slave
        # learns its master there (rmq.broker.role).
        self._on_result = on_result

    @property
    def identity(self) -> BrokerIdentity:
        return self._identity

    def set_broker_id(self, broker_id: int, ha_server_addr: str | None = None) -> None:
        """Register under ``broker_id`` (and ``ha_server_addr`` when given) from now on (a
        role switch), at once. The nameservers drop this address's entry under its old id
        (RocketMQ's rule)."""
        ha = self._identity.ha_server_addr if ha_server_addr is None else ha_server_addr
        self._identity = dataclasses.replace(self._identity, broker_id=broker_id, ha_server_addr=ha)
        self.trigger()

    def register_all(self) -> int:
        """Register with every nameserver now; returns how many accepted."""
        header = {
            **self._identity.header(),
            "haServerAddr": self._identity.ha_server_addr,
            "compressed": "false",
            "bodyCrc32": "0",
        }
        body = self._body()
        ok = 0
        for addr in self._addrs:
            try:
                resp = self._client.invoke(
                    addr, RequestCode.REGISTER_BROKER, header, body, self._timeout_ms
                )
            except RemotingError as exc:
                log.warning("cannot register with nameserver %s: %s (retrying later)", addr, exc)
                continue
            if resp.code != ResponseCode.SUCCESS:
                log.warning("nameserver %s refused registration: %s", addr, resp.remark)
                continue
            self.master_addr = resp.ext_fields.get("masterAddr", "")
            self.ha_server_addr = resp.ext_fields.get("haServerAddr", "")
            ok += 1
            if self._on_result is not None:
                try:
                    self._on_result(self.master_addr, self.ha_server_addr)
                except Exception:
                    log.exception("handling the registration answer of %s failed", addr)
        return ok

    def unregister_all(self) -> None:
        """Tell every nameserver this broker is going away."""
        for addr in self._addrs:
            try:
                self._client.invoke(
                    addr, RequestCode.UNREGISTER_BROKER, self._identity.header(), None, 3000
                )
            except RemotingError as exc:
                log.warning("cannot unregister from nameserver %s: %s", addr, exc)

    @property
    def period_s(self) -> float:
        """Seconds between registrations."""
        return self._period_s

    @period_s.setter
    def period_s(self, value: float) -> None:
        """Takes effect after the current wait (a change of ``registerNameServerPeriod``)."""
        if value <= 0:
            raise ValueError(f"period_s must be > 0, not {value}")
        self._period_s = value

    def trigger(self) -> None:
        """Register again now (topic configs changed)."""
        self._wake.set()

    def trigger_and_wait(self, timeout_s: float | None = None) -> bool:
        """Register again now and wait until a round that started after this call has
        finished; whether it did within ``timeout_s`` (default: two request timeouts).

        RocketMQ's broker registers with the nameservers before it answers the request that
        created a topic (UPDATE_AND_CREATE_TOPIC, auto-creation on send or send-back), so a
        client that asks a nameserver for the route right afterwards finds it; the Go client's
        push consumer, for one, refuses to start otherwise. Before :meth:`start` (and after
        :meth:`stop`) this only asks for a round and returns False.
        """
        if not self._thread.is_alive() or self._stop.is_set():
            self.trigger()
            return False
        if timeout_s is None:
            timeout_s = 2 * self._timeout_ms / 1000
        with self._done:
            self._requested += 1
            target = self._requested
        self._wake.set()
        with self._done:
            return self._done.wait_for(
                lambda: self._completed >= target or self._stop.is_set(), timeout_s
            )

    def start(self) -> None:
        self.register_all()
        self._thread.start()

    def stop(self, unregister: bool = True) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(10)
        if unregister:
            self.unregister_all()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._period_s)
            self._wake.clear()
            if self._stop.is_set():
                break
            with self._done:
                covers = self._requested
            try:
                self.register_all()
            except Exception:
                log.exception("registration round failed; retrying in %.0f s", self._period_s)
            with self._done:
                self._completed = covers
                self._done.notify_all()
        with self._done:
            self._done.notify_all()
