"""The admin tool's view of a cluster: nameservers for routes and cluster layout, brokers for
everything else, all over ``rmq._rmq.RemotingClient`` with RocketMQ's request codes.

Every failure a user can cause or meet (nothing listening, an unknown topic, a broker that
does not serve a request code) becomes an :mod:`rmq.errors` exception whose message says what
happened and what to check, so the command line can print it as one line. Responses are read
with :mod:`rmq.fastjson` (a thin face of the Rust reader), since Java peers answer in
fastjson's dialect.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmq import fastjson
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import (
    NoPermissionError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
    RmqError,
    for_code,
)
from rmq.tls import PLAIN, TlsOptions

if TYPE_CHECKING:
    from rmq._rmq import RemotingClient, RemotingResponse

__all__ = [
    "DEFAULT_NAMESRV_ADDR",
    "DEFAULT_TIMEOUT_MS",
    "MASTER_ID",
    "Admin",
    "AdminError",
    "BrokerData",
    "ClusterInfo",
    "QueueData",
    "TopicRoute",
    "resolve_addr",
]

DEFAULT_NAMESRV_ADDR = "127.0.0.1:9876"
DEFAULT_TIMEOUT_MS = 3000
MASTER_ID = 0
PERM_READ = 4
PERM_WRITE = 2
CONSUMER_NOT_ONLINE = 206
"""ResponseCode.CONSUMER_NOT_ONLINE: a group with no connected consumer."""
NAMESRV_HINT = (
    "is rmq.namesrv (or rmq.broker with its embedded nameserver) running? set -n or NAMESRV_ADDR"
)

BROKER_HINT = "is the broker running, and is the address one rmq clusterList shows?"


class AdminError(RmqError):
    """A failure of the tool's own making or finding (an unknown cluster, a topic without a
    route, a bad argument value); the message says what to check."""


@functools.cache
def _request_names() -> dict[int, str]:
    return {c.value: c.name for c in RequestCode}


@functools.cache
def _response_names() -> dict[int, str]:
    return {c.value: c.name for c in ResponseCode}


def _code_name(code: int) -> str:
    """``GET_TOPIC_STATS_INFO`` for 202 (names from the Rust protocol crate's full table)."""
    return _request_names().get(code) or f"request code {code}"


def _response_name(code: int) -> str:
    """``TOPIC_NOT_EXIST`` for 17."""
    return _response_names().get(code) or "response code"


def resolve_addr(addr: str, what: str) -> str:
    """``host:port`` with the host resolved to an IPv4 address (the transport takes IPs)."""
    host, sep, port = addr.strip().rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise AdminError(f"{what} {addr!r} is not an address like 127.0.0.1:9876")
    host = host.strip("[]")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:
            raise AdminError(f"cannot resolve the host of {what} {addr!r}: {exc}") from None
        host = str(infos[0][4][0])
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _short_reason(exc: RemotingError) -> str:
    """``connection refused`` out of ``connecting to 1.2.3.4:5: Connection refused (os error
    111)``: the address is printed by the caller already."""
    text = str(exc)
    head, sep, tail = text.partition(": ")
    if sep and (head.startswith("connecting to") or head.startswith("connection to")):
        text = tail
    text = text.split(" (os error", 1)[0].strip()
    return text[:1].lower() + text[1:] if text else type(exc).__name__


@dataclass(frozen=True, slots=True)
class BrokerData:
    """One broker name's addresses by broker id (0 = master), as routes and ClusterInfo hold
    them."""

    cluster: str
    broker_name: str
    addrs: Mapping[int, str]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> BrokerData:
        addrs = {int(k): str(v) for k, v in (d.get("brokerAddrs") or {}).items()}
        return cls(str(d.get("cluster", "")), str(d.get("brokerName", "")), addrs)

    @property
    def master_addr(self) -> str | None:
        return self.addrs.get(MASTER_ID)

    def select_addr(self) -> str | None:
        """The master, else the slave with the lowest id (RocketMQ's ``selectBrokerAddr``
        picks a random slave; the lowest id keeps output stable)."""
        if MASTER_ID in self.addrs:
            return self.addrs[MASTER_ID]
        return self.addrs[min(self.addrs)] if self.addrs else None


@dataclass(frozen=True, slots=True)
class QueueData:
    """A topic's queues on one broker name."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> QueueData:
        return cls(
            str(d.get("brokerName", "")),
            int(d.get("readQueueNums", 0)),
            int(d.get("writeQueueNums", 0)),
            int(d.get("perm", 0)),
            int(d.get("topicSysFlag", 0)),
        )


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """``TopicRouteData``: where a topic's queues are."""

    topic: str
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    raw: Mapping[str, Any]
    """The body as the nameserver sent it (for ``--json`` and ``topicRoute``)."""

    @classmethod
    def from_json(cls, topic: str, d: Mapping[str, Any]) -> TopicRoute:
        return cls(
            topic,
            tuple(
                sorted((QueueData.from_json(q) for q in d.get("queueDatas") or ()), key=_by_name)
            ),
            tuple(
                sorted((BrokerData.from_json(b) for b in d.get("brokerDatas") or ()), key=_by_name)
            ),
            d,
        )

    def broker(self, broker_name: str) -> BrokerData | None:
        return next((b for b in self.broker_datas if b.broker_name == broker_name), None)

    def read_queues(self) -> Iterator[tuple[BrokerData, int]]:
        """(broker, queue id) of every readable queue, in broker-name order (what a pull
        consumer's ``fetchSubscribeMessageQueues`` gives)."""
        for q in self.queue_datas:
            broker = self.broker(q.broker_name)
            if broker is None or not q.perm & PERM_READ:
                continue
            for queue_id in range(q.read_queue_nums):
                yield broker, queue_id


def _by_name(x: QueueData | BrokerData) -> str:
    return x.broker_name


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """``ClusterInfo``: broker names per cluster and the addresses of each broker name."""

    brokers: Mapping[str, BrokerData]
    clusters: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClusterInfo:
        brokers = {
            str(name): BrokerData.from_json(b)
            for name, b in (d.get("brokerAddrTable") or {}).items()
        }
        clusters = {
            str(c): tuple(sorted(str(n) for n in names))
            for c, names in (d.get("clusterAddrTable") or {}).items()
        }
        return cls(brokers, clusters)

    def brokers_of(self, cluster: str) -> list[BrokerData]:
        """The cluster's brokers by name; AdminError naming the known clusters if unknown."""
        if cluster not in self.clusters:
            known = ", ".join(sorted(self.clusters)) or "none"
            raise AdminError(
                f"cluster {cluster!r} is not known to the nameserver (clusters: {known}) — "
                "check -c against rmq clusterList"
            )
        return [self.brokers[n] for n in self.clusters[cluster] if n in self.brokers]

    def master_addrs(self, cluster: str) -> list[str]:
        addrs = [b.master_addr for b in self.brokers_of(cluster)]
        found = [a for a in addrs if a]
        if not found:
            raise AdminError(f"cluster {cluster!r} has no master broker registered")
        return found

    def broker_name_of(self, addr: str) -> str | None:
        for b in self.brokers.values():
            if addr in b.addrs.values():
                return b.broker_name
        return None

    def cluster_of(self, broker_name: str) -> str | None:
        for cluster, names in self.clusters.items():
            if broker_name in names:
                return cluster
        return None


class Admin:
    """Requests to nameservers and brokers with errors a person can act on.

    ``namesrv_addr`` is RocketMQ's list form, ``host:port;host:port``; queries go to the first
    nameserver that answers, changes (deleteTopic) to every one.
    """

    def __init__(
        self,
        namesrv_addr: str = DEFAULT_NAMESRV_ADDR,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
        client: RemotingClient | None = None,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        tls: TlsOptions = PLAIN,
    ) -> None:
        names = [a.strip() for a in namesrv_addr.split(";") if a.strip()]
        if not names:
            raise AdminError("no nameserver address given — set -n host:port or NAMESRV_ADDR")
        self.namesrv_addrs = [resolve_addr(a, "nameserver address") for a in names]
        self.timeout_ms = timeout_ms
        if bool(access_key) != bool(secret_key):
            missing = (
                "--secret-key (or RMQ_SECRET_KEY)"
                if access_key
                else "--access-key (or RMQ_ACCESS_KEY)"
            )
            raise AdminError(f"ACL credentials need both keys: {missing} is not set")
        self.access_key = access_key
        """The ACL account the tool signs with (None without one); SDK clients a sub-command
        starts (``rmq.Producer``...) take it and :attr:`secret_key` so they sign too."""
        self.secret_key = secret_key
        self.tls = tls
        """TLS of the tool's connections; SDK clients a sub-command starts take it too."""
        if client is None:
            from rmq._rmq import RemotingClient as Client

            client = Client(access_key=access_key, secret_key=secret_key, **tls.as_kwargs())
        self._client = client

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- transport --------------------------------------------------------------------------

    def _invoke(
        self,
        role: str,
        addr: str,
        code: int,
        ext: Mapping[str, str] | None,
        body: bytes | None,
        timeout_ms: int | None,
    ) -> RemotingResponse:
        timeout = timeout_ms or self.timeout_ms
        try:
            return self._client.invoke(addr, code, dict(ext or {}), body, timeout)
        except RemotingTimeoutError:
            raise RemotingTimeoutError(
                f"no answer from {role} {addr} to {_code_name(code)} within {timeout} ms — "
                f"is the {role} overloaded, or is {addr} the right address?"
            ) from None
        except RemotingConnectError as exc:
            hint = NAMESRV_HINT if role == "nameserver" else BROKER_HINT
            raise RemotingConnectError(
                f"cannot reach {role} {addr}: {_short_reason(exc)} — {hint}"
            ) from None

    @staticmethod
    def _check(
        role: str, addr: str, code: int, resp: RemotingResponse, accept: Iterable[int]
    ) -> RemotingResponse:
        if resp.code == ResponseCode.SUCCESS or resp.code in accept:
            return resp
        raise _response_error(role, addr, code, resp)

    def namesrv(
        self, code: int, ext: Mapping[str, str] | None = None
    ) -> tuple[str, RemotingResponse]:
        """Ask the first nameserver that answers (a refused connection moves on to the next):
        (its address, its successful answer)."""
        failures: list[RemotingError] = []
        for addr in self.namesrv_addrs:
            try:
                resp = self._invoke("nameserver", addr, code, ext, None, None)
            except RemotingError as exc:
                failures.append(exc)
                continue
            return addr, self._check("nameserver", addr, code, resp, ())
        if len(failures) == 1:
            raise failures[0]
        reasons = "; ".join(str(f).split(" — ")[0] for f in failures)
        raise RemotingConnectError(f"{reasons} — {NAMESRV_HINT}")

    def namesrv_json(self, code: int, ext: Mapping[str, str] | None = None) -> Any:
        """A nameserver request whose answer is a JSON body."""
        addr, resp = self.namesrv(code, ext)
        return _json_body(resp, "nameserver", addr, code)

    def every_namesrv(
        self, code: int, ext: Mapping[str, str] | None = None, body: bytes | None = None
    ) -> list[tuple[str, RemotingResponse]]:
        """Send a change to every nameserver (they do not share state)."""
        out = []
        for addr in self.namesrv_addrs:
            resp = self._invoke("nameserver", addr, code, ext, body, None)
            out.append((addr, self._check("nameserver", addr, code, resp, ())))
        return out

    def broker(
        self,
        addr: str,
        code: int,
        ext: Mapping[str, str] | None = None,
        body: bytes | None = None,
        *,
        accept: Iterable[int] = (),
        timeout_ms: int | None = None,
    ) -> RemotingResponse:
        """One request to the broker at ``addr``; codes outside SUCCESS and ``accept`` raise."""
        resp = self._invoke("broker", addr, code, ext, body, timeout_ms)
        return self._check("broker", addr, code, resp, accept)

    def broker_json(
        self, addr: str, code: int, ext: Mapping[str, str] | None = None, body: bytes | None = None
    ) -> Any:
        """A broker request whose answer is a JSON body."""
        return _json_body(self.broker(addr, code, ext, body), "broker", addr, code)

    # ---- nameserver queries -----------------------------------------------------------------

    def route(self, topic: str) -> TopicRoute:
        d = self.namesrv_json(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return TopicRoute.from_json(topic, d)

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo.from_json(self.namesrv_json(RequestCode.GET_BROKER_CLUSTER_INFO))

    def topic_list(self) -> list[str]:
        d = self.namesrv_json(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        return sorted(str(t) for t in d.get("topicList") or ())

    def broker_addr(self, addr: str) -> str:
        """A ``-b`` broker address, checked and resolved."""
        return resolve_addr(addr, "broker address")

    def masters(self, broker_addr: str | None, cluster: str | None) -> list[str]:
        """Where a ``-b ADDR | -c CLUSTER`` change goes: that broker, or every master of the
        cluster."""
        if broker_addr:
            return [self.broker_addr(broker_addr)]
        if not cluster:
            raise AdminError("name a broker with -b ADDR or a cluster with -c CLUSTER")
        return self.cluster_info().master_addrs(cluster.strip())


def _json_body(resp: RemotingResponse, role: str, addr: str, code: int) -> Any:
    if not resp.body:
        raise AdminError(f"{role} {addr} answered {_code_name(code)} without a body")
    try:
        return fastjson.loads(resp.body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise AdminError(
            f"{role} {addr} answered {_code_name(code)} with a body that is not JSON: {exc}"
        ) from None


_HINTS: dict[int, str] = {
    ResponseCode.TOPIC_NOT_EXIST: (
        "check the topic name (rmq topicList), or create the topic with "
        "rmq updateTopic -t TOPIC -c CLUSTER"
    ),
    ResponseCode.NO_PERMISSION: (
        "check the broker's brokerPermission and the topic's perm (rmq topicRoute); with ACL "
        "on, the account (--access-key/--secret-key or RMQ_ACCESS_KEY/RMQ_SECRET_KEY) and its "
        "permissions in plain_acl.yml"
    ),
    # SUBSCRIPTION_GROUP_NOT_EXIST
    26: "create the group with rmq updateSubGroup -g GROUP -c CLUSTER",
    CONSUMER_NOT_ONLINE: "start a consumer of the group, or check the group name",
}


# REQUEST_CODE_NOT_SUPPORTED most often means the address is the other kind of process: a
# nameserver serves no broker codes and a broker no nameserver codes.
_NOT_SUPPORTED_HINTS = {
    "nameserver": (
        "is {addr} a nameserver? -n takes nameserver addresses (port 9876 by default), not a "
        "broker's; if it is one, it does not serve this request"
    ),
    "broker": (
        "is {addr} a broker? -b takes a broker's address (port 10911 by default), not a "
        "nameserver's; if it is one, it does not serve this request (an older RocketMQ, or "
        "one rmq does not serve yet)"
    ),
}


def _response_error(role: str, addr: str, code: int, resp: RemotingResponse) -> RmqError:
    """The :mod:`rmq.errors` class of the response code, with a message a person can act on."""
    remark = (resp.remark or "").replace("\n", " ").strip()
    cls = type(for_code(resp.code, remark))
    name = _response_name(resp.code)
    text = f"{_code_name(code)} to {role} {addr} failed: {name} ({resp.code})"
    if remark:
        text += f": {remark}"
    # An Apache broker's ACL refusal is a SYSTEM_ERROR that rmq.errors classes as
    # NoPermissionError: it gets NO_PERMISSION's hint.
    hint = _HINTS.get(ResponseCode.NO_PERMISSION if cls is NoPermissionError else resp.code)
    if resp.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        hint = _NOT_SUPPORTED_HINTS.get(role)
    if hint and not ("updateTopic" in hint and "updateTopic" in remark):
        text += " — " + hint.format(role=role, addr=addr)
    return cls(text, code=resp.code, remark=remark)
