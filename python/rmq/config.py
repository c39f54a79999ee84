"""Broker configuration: RocketMQ's ``broker.conf``, loaded unchanged.

A config file is a Java-properties file (``key=value``, ``key = value`` or ``key: value``;
``#`` and ``!`` comment lines; a trailing ``\\`` continues a line; Java escapes such as
``\\t`` and ``\\u0041``) with RocketMQ's key names. Values are stripped of surrounding blanks
(Java keeps trailing ones, which only ever turns a value invalid).

Every key lands in one of four places, so none is silently ignored:

* **broker keys** (:data:`BROKER_KEYS`): checked by the config schema (:data:`SCHEMA`, the
  Rust table ``rmq_common::config_schema`` that the native store and broker check with too:
  types, defaults, bounds) and typed here into :class:`BrokerConfig`;
* **store keys**: the keys the native store understands (``rmq._rmq.store_config_defaults()``,
  e.g. ``mappedFileSizeCommitLog``, ``flushIntervalCommitLog``), passed through as strings in
  :attr:`BrokerConfig.store`; the native store checks them when it opens. A broker key that the
  store also reads (``flushDiskType``, ``fileReservedTime``, ...) is passed with the value
  checked here, so both sides always agree;
* **known but unused** (:data:`KNOWN_BUT_UNUSED`): legitimate RocketMQ keys that have no effect
  in this build (Java thread pools, HA addresses before HA lands, Rust broker keys this
  process does not pass on); logged at INFO level;
* anything else: warned about (:class:`RmqConfigWarning`, and logged), with a "did you mean"
  when a known key is close.

A bad value raises :class:`rmq.errors.ConfigError` naming the file, line, key and what is
allowed::

    broker.conf:3: flushDiskType = 'FAST' is not allowed; use ASYNC_FLUSH or SYNC_FLUSH
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import ipaddress
import logging
import os
import re
import socket
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rmq.errors import ConfigError
from rmq.tls import TlsOptions

try:
    from rmq._rmq import ConfigKey, check_config_value, config_schema, write_file_atomic
except ImportError as exc:  # pragma: no cover - only without a build
    raise ImportError(
        "rmq's native module (rmq._rmq) is not built or not importable; "
        "run `make build` in the rmq repository"
    ) from exc

__all__ = [
    "BROKER_KEYS",
    "KNOWN_BUT_UNUSED",
    "REDACTED",
    "SCHEMA",
    "BrokerConfig",
    "BrokerRole",
    "FlushDiskType",
    "RmqConfigWarning",
    "check_broker_value",
    "escape_property_value",
    "format_properties",
    "is_secret_key",
    "iter_properties",
    "load_broker_config",
    "parse_properties",
    "redact_secrets",
    "schema_default",
    "suggest_key",
    "update_properties_text",
    "write_properties_update",
]

log = logging.getLogger(__name__)


class RmqConfigWarning(UserWarning):
    """A config key that rmq does not know (typo, or a feature this build lacks), or a value
    that was adjusted the way RocketMQ adjusts it."""


class BrokerRole(str, enum.Enum):
    """``brokerRole``: how a broker replicates."""

    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


class FlushDiskType(str, enum.Enum):
    """``flushDiskType``: when a put is acknowledged relative to the disk flush."""

    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


SCHEMA: Mapping[str, ConfigKey] = {key.name: key for key in config_schema("broker")}
"""Every ``broker.conf`` key of the config schema (``rmq_common::config_schema``, shared with
the native store and broker): type, default, bounds, owner, whether it can change at runtime.
Values are checked there (:func:`rmq._rmq.check_config_value`), never here."""


def schema_default(key: str) -> str:
    """The schema's default of ``key`` as text (``KeyError`` when it has none)."""
    default = SCHEMA[key].default
    if default is None:
        raise KeyError(f"{key} has no fixed default")
    return default


_NOT_PASSED_TO_STORE = frozenset({"storePathRootDir"})
"""Broker keys the store gets another way (the root dir is ``MessageStore``'s first argument)."""


# --------------------------------------------------------------------------------------------
# Java properties


def _trailing_backslashes(line: str) -> int:
    return len(line) - len(line.rstrip("\\"))


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str, where: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError(f"{where}: malformed \\uxxxx escape {text[i : i + 6]!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _split_key_value(line: str) -> tuple[str, str]:
    """Split a logical line at the first unescaped ``=``, ``:`` or blank, as Java does."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def iter_properties(text: str, source: str = "<string>") -> Iterator[tuple[str, str, int]]:
    """Yield ``(key, value, line_number)`` for each entry of a Java-properties text.

    ``line_number`` is where the entry starts (1-based). Values keep their inner blanks and are
    stripped at both ends.
    """
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        number = i + 1
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while _trailing_backslashes(line) % 2 == 1:
            line = line[:-1]
            if i >= len(lines):
                break
            line += lines[i].lstrip(" \t\f")
            i += 1
        key, value = _split_key_value(line)
        where = f"{source}:{number}"
        yield _unescape(key, where), _unescape(value, where).strip(), number


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """A Java-properties text as a dict (a key given twice keeps its last value, as in Java)."""
    return {key: value for key, value, _ in iter_properties(text, source)}


def escape_property_value(value: str) -> str:
    """A value as a Java-properties file must spell it to read it back unchanged."""
    escaped = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + escaped if escaped[:1] in (" ", "\t", "\f") else escaped


REDACTED = "******"
"""What config answers, dumps and log lines show for a secret's value."""


def is_secret_key(key: str) -> bool:
    """Whether ``key`` names a secret (``innerSecretKey``, ``secretKey``...,
    ``tls.server.keyPassword``, ``tls.client.keyPassword``): its value is never shown."""
    return key.endswith(("SecretKey", "secretKey", "keyPassword"))


def redact_secrets(entries: Mapping[str, str]) -> dict[str, str]:
    """``entries`` with the value of every secret key (:func:`is_secret_key`) replaced by
    :data:`REDACTED`; the one rule for GET_BROKER_CONFIG, ``--print-config``, ``rmq
    getBrokerConfig`` and log lines. An empty secret stays empty (nothing to hide)."""
    return {k: REDACTED if v and is_secret_key(k) else v for k, v in entries.items()}


def format_properties(entries: Mapping[str, str]) -> str:
    """``key=value`` lines (sorted by key) that :func:`parse_properties` reads back unchanged."""
    return "".join(f"{key}={escape_property_value(entries[key])}\n" for key in sorted(entries))


def update_properties_text(text: str, updates: Mapping[str, str]) -> str:
    """``text`` (a Java-properties file) with the keys of ``updates`` set to their values.

    Every entry of an updated key is rewritten in place as one ``key=value`` line (continuation
    lines included); comments, blank lines and other entries stay as they were. Keys the text
    does not have are appended at the end.
    """
    lines = re.split(r"(?<=\n)", text)
    if lines and lines[-1] == "":
        lines.pop()
    out: list[str] = []
    done: set[str] = set()
    i = 0
    while i < len(lines):
        first = lines[i]
        i += 1
        logical = first.rstrip("\r\n").lstrip(" \t\f")
        if not logical or logical[0] in "#!":
            out.append(first)
            continue
        consumed = [first]
        while _trailing_backslashes(logical) % 2 == 1 and i < len(lines):
            logical = logical[:-1] + lines[i].rstrip("\r\n").lstrip(" \t\f")
            consumed.append(lines[i])
            i += 1
        key = _unescape(_split_key_value(logical)[0], "<update>")
        if key in updates:
            ending = "\r\n" if first.endswith("\r\n") else "\n"
            out.append(f"{key}={escape_property_value(updates[key])}{ending}")
            done.add(key)
        else:
            out.extend(consumed)
    missing = [key for key in updates if key not in done]
    if missing:
        if out and not out[-1].endswith("\n"):
            out.append("\n")
        out.extend(f"{key}={escape_property_value(updates[key])}\n" for key in missing)
    return "".join(out)


def write_properties_update(path: str | os.PathLike[str], updates: Mapping[str, str]) -> None:
    """Set ``updates`` in the properties file at ``path`` (see :func:`update_properties_text`),
    atomically (:func:`rmq._rmq.write_file_atomic`): the new text goes to a temporary file in
    the same directory, is flushed to disk and renamed over the old one (keeping its
    permissions), so a crash leaves either the old or the new file, and a failed write the old
    one.

    Raises :class:`OSError` when the file cannot be read or replaced.
    """
    target = os.fspath(path)
    with open(target, "rb") as fh:
        data = fh.read()
    try:
        encoding, text = "utf-8", data.decode("utf-8")
    except UnicodeDecodeError:
        encoding, text = "latin-1", data.decode("latin-1")
    new = update_properties_text(text, updates).encode(encoding, errors="backslashreplace")
    write_file_atomic(target, new)


# --------------------------------------------------------------------------------------------
# Values


_ENUMS: dict[str, type[BrokerRole] | type[FlushDiskType]] = {
    "brokerRole": BrokerRole,
    "flushDiskType": FlushDiskType,
}


def _typed(key: str, text: str) -> Any:
    """A value the schema accepted (canonical text) as :class:`BrokerConfig` holds it."""
    kind = SCHEMA[key].kind
    if kind == "int":
        return int(text)
    if kind == "bool":
        return text == "true"
    if kind == "enum" and key in _ENUMS:
        return _ENUMS[key](text)
    if kind == "path":
        return os.path.abspath(os.path.expanduser(text))
    if kind == "host-port-list":
        return text or None
    return text


def _default(key: str) -> Any:
    return _typed(key, schema_default(key))


@dataclass(frozen=True, slots=True)
class _Key:
    """A broker key :class:`BrokerConfig` reads: its field and its schema entry."""

    attr: str
    spec: ConfigKey

    @property
    def allowed(self) -> str:
        return self.spec.allowed


# --------------------------------------------------------------------------------------------
# BrokerConfig


def _default_broker_name() -> str:
    """RocketMQ's default brokerName: the local host name."""
    return socket.gethostname() or "DEFAULT_BROKER"


def _default_broker_ip() -> str:
    """RocketMQ's default brokerIP1: this host's first non-loopback IPv4 address.

    Asks the kernel which source address it would route an outside address from (a UDP
    ``connect`` sends nothing), then the addresses of the host name, then 127.0.0.1.
    """
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.254.254.254", 1))
            address = str(probe.getsockname()[0])
        if not ipaddress.ip_address(address).is_loopback:
            return address
    except OSError:
        pass
    try:
        infos = socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
    except OSError:
        infos = []
    for info in infos:
        address = str(info[4][0])
        if not ipaddress.ip_address(address).is_loopback:
            return address
    return "127.0.0.1"


@dataclass(frozen=True, slots=True)
class BrokerConfig:
    """A broker's effective configuration. Each field documents its ``broker.conf`` key;
    defaults are the config schema's (RocketMQ's). Build it with :func:`load_broker_config`,
    which checks values through the schema."""

    broker_cluster_name: str = _default("brokerClusterName")
    """``brokerClusterName``: the cluster this broker registers under."""
    broker_name: str = field(default_factory=_default_broker_name)
    """``brokerName``: shared by a master and its slaves (default: the host name)."""
    broker_id: int = _default("brokerId")
    """``brokerId``: 0 for a master, >= 1 for a slave."""
    broker_ip1: str = field(default_factory=_default_broker_ip)
    """``brokerIP1``: the address clients and message ids use (default: first non-loopback
    IPv4 address)."""
    listen_port: int = _default("listenPort")
    """``listenPort``: the remoting port; the HA port is listenPort + 1."""
    namesrv_addr: str | None = _default("namesrvAddr")
    """``namesrvAddr``: ``host:port;host:port``; None runs an embedded nameserver."""
    store_path_root_dir: str = field(default_factory=lambda: _default("storePathRootDir"))
    """``storePathRootDir``: the store root (``~`` expanded, made absolute)."""
    inner_access_key: str = _default("innerAccessKey")
    """``innerAccessKey``: the ACL account the broker signs its own requests with
    (registration, a slave's copy from its master); empty: unsigned."""
    inner_secret_key: str = field(default=_default("innerSecretKey"), repr=False)
    """``innerSecretKey``: its secret (never shown: see :func:`redact_secrets`)."""
    broker_role: BrokerRole = field(default_factory=lambda: _default("brokerRole"))
    """``brokerRole``."""
    flush_disk_type: FlushDiskType = field(default_factory=lambda: _default("flushDiskType"))
    """``flushDiskType``."""
    delete_when: str = _default("deleteWhen")
    """``deleteWhen``: hours of day (``;``-separated, local time) to delete expired files."""
    file_reserved_time: int = _default("fileReservedTime")
    """``fileReservedTime``: hours a CommitLog file is kept."""
    auto_create_topic_enable: bool = _default("autoCreateTopicEnable")
    """``autoCreateTopicEnable``: create unknown topics on first send."""
    auto_create_subscription_group: bool = _default("autoCreateSubscriptionGroup")
    """``autoCreateSubscriptionGroup``: create unknown subscription groups on first use."""
    long_polling_enable: bool = _default("longPollingEnable")
    """``longPollingEnable``: hold pulls up to the client's suspend timeout."""
    short_polling_time_mills: int = _default("shortPollingTimeMills")
    """``shortPollingTimeMills``: hold time (ms) of a pull when long polling is off."""
    transfer_msg_by_heap: bool = _default("transferMsgByHeap")
    """``transferMsgByHeap``: copy pull bodies instead of sending them from the mapped file."""
    region_id: str = _default("regionId")
    """``regionId``: returned in send responses (``MSG_REGION``)."""
    trace_on: bool = _default("traceOn")
    """``traceOn``: returned in send responses (``TRACE_ON``); false asks tracing clients not
    to trace their sends."""
    channel_expired_timeout: int = _default("channelExpiredTimeout")
    """``channelExpiredTimeout``: clients silent this long (ms) are dropped."""
    default_topic_queue_nums: int = _default("defaultTopicQueueNums")
    """``defaultTopicQueueNums``: queues of an auto-created topic."""
    max_message_size: int = _default("maxMessageSize")
    """``maxMessageSize``: largest body (or batch) accepted, in bytes."""
    broker_permission: int = _default("brokerPermission")
    """``brokerPermission``: 6 read+write, 4 read only, 2 write only."""
    register_name_server_period: int = _default("registerNameServerPeriod")
    """``registerNameServerPeriod``: ms between registrations (clamped to 10 000-60 000)."""
    clean_resource_interval: int = _default("cleanResourceInterval")
    """``cleanResourceInterval``: ms between expired-file checks."""
    disk_max_used_space_ratio: int = _default("diskMaxUsedSpaceRatio")
    """``diskMaxUsedSpaceRatio``: percent of the disk above which expired files go at once
    (clamped to 10-95, as RocketMQ does)."""
    message_delay_level: str = _default("messageDelayLevel")
    """``messageDelayLevel``: the delay of each level (1 first), blank-separated, each a whole
    number >= 1 with a unit ``s``, ``m``, ``h`` or ``d``."""
    flush_delay_offset_interval: int = _default("flushDelayOffsetInterval")
    """``flushDelayOffsetInterval``: ms between fsynced writes of ``config/delayOffset.json``
    (it is also written, without fsync, after every delivery)."""
    transaction_time_out: int = _default("transactionTimeOut")
    """``transactionTimeOut``: ms a half message waits for its producer's END_TRANSACTION
    before the broker asks (CHECK_TRANSACTION_STATE)."""
    transaction_check_max: int = _default("transactionCheckMax")
    """``transactionCheckMax``: checks of one half message before it is discarded."""
    transaction_check_interval: int = _default("transactionCheckInterval")
    """``transactionCheckInterval``: ms between two rounds of transaction checks."""
    reject_transaction_message: bool = _default("rejectTransactionMessage")
    """``rejectTransactionMessage``: refuse half messages (NO_PERMISSION)."""
    rebalance_lock_max_live_time: int = _default("rocketmq.broker.rebalance.lockMaxLiveTime")
    """``rocketmq.broker.rebalance.lockMaxLiveTime`` (a JVM system property in RocketMQ): ms a
    queue lock of an orderly consumer lasts without renewal (clients renew every 20 s)."""
    server_channel_max_idle_time_seconds: int = _default("serverChannelMaxIdleTimeSeconds")
    """``serverChannelMaxIdleTimeSeconds``: seconds without traffic either way after which a
    client connection is closed (0: never). Clients heartbeat every 30 s."""
    cluster_topic_enable: bool = _default("clusterTopicEnable")
    """``clusterTopicEnable``: the topic named after the cluster is readable and writable
    (otherwise sends to it are NO_PERMISSION, as in RocketMQ)."""
    broker_topic_enable: bool = _default("brokerTopicEnable")
    """``brokerTopicEnable``: the topic named after the broker is readable and writable."""
    trace_topic_enable: bool = _default("traceTopicEnable")
    """``traceTopicEnable``: create the message trace topic (``msgTraceTopicName``) at start."""
    msg_trace_topic_name: str = _default("msgTraceTopicName")
    """``msgTraceTopicName``: the message trace topic (``RMQ_SYS_TRACE_TOPIC``)."""
    slave_read_enable: bool = _default("slaveReadEnable")
    """``slaveReadEnable``: a pull whose data is cold on the master (beyond
    ``accessMessageInMemoryMaxRatio`` of RAM) suggests the subscription group's
    ``whichBrokerWhenConsumeSlowly`` (a slave) to the consumer."""
    acl_enable: bool = _default("aclEnable")
    """``aclEnable``: check every request against the ACL file (RocketMQ ACL 1.0)."""
    acl_file_path: str | None = None
    """``aclFilePath``: the ACL file (default ``$ROCKETMQ_HOME/conf/plain_acl.yml``)."""
    metrics_exporter_type: str = _default("metricsExporterType")
    """``metricsExporterType``: PROM serves Prometheus metrics (``rmq.metrics_http``)."""
    metrics_prom_exporter_host: str = _default("metricsPromExporterHost")
    """``metricsPromExporterHost``: the address the Prometheus exporter listens on."""
    metrics_prom_exporter_port: int = _default("metricsPromExporterPort")
    """``metricsPromExporterPort``: the Prometheus exporter's port (0: any free port)."""
    tls_server_mode: str = _default("tls.server.mode")
    """``tls.server.mode``: TLS on the broker's ports: disabled, permissive or enforcing."""
    tls_server_cert_path: str = _default("tls.server.certPath")
    """``tls.server.certPath``: PEM certificate chain of the broker's ports."""
    tls_server_key_path: str = _default("tls.server.keyPath")
    """``tls.server.keyPath``: PEM private key of ``tls.server.certPath``."""
    tls_server_key_password: str = _default("tls.server.keyPassword")
    """``tls.server.keyPassword``: password of an encrypted PKCS#8 key."""
    tls_server_need_client_auth: str = _default("tls.server.need.client.auth")
    """``tls.server.need.client.auth``: mutual TLS: none, optional or require."""
    tls_server_auth_client: bool = _default("tls.server.authClient")
    """``tls.server.authClient``: true = ``tls.server.need.client.auth`` require."""
    tls_server_trust_cert_path: str = _default("tls.server.trustCertPath")
    """``tls.server.trustCertPath``: CAs of client certificates (mutual TLS)."""
    tls_enable: bool = _default("tls.enable")
    """``tls.enable``: the broker's own connections (registration, slave sync) use TLS."""
    tls_client_trust_cert_path: str = _default("tls.client.trustCertPath")
    """``tls.client.trustCertPath``: CAs the servers' certificates are checked against."""
    tls_client_cert_path: str = _default("tls.client.certPath")
    """``tls.client.certPath``: the broker's client certificate (mutual TLS)."""
    tls_client_key_path: str = _default("tls.client.keyPath")
    """``tls.client.keyPath``: its private key."""
    tls_client_key_password: str = _default("tls.client.keyPassword")
    """``tls.client.keyPassword``: password of an encrypted PKCS#8 key."""
    tls_client_auth_server: bool = _default("tls.client.authServer")
    """``tls.client.authServer``: verify the servers (system CAs without a trust file)."""
    tls_test_mode_enable: bool = _default("tls.test.mode.enable")
    """``tls.test.mode.enable``: trust any server (RocketMQ's test mode)."""
    store: dict[str, str] = field(default_factory=dict)
    """Store keys for ``rmq._rmq.MessageStore``, as strings (checked by the native store)."""

    @property
    def namesrv_addrs(self) -> tuple[str, ...]:
        """``namesrvAddr`` split into ``host:port`` items (empty: embedded nameserver)."""
        return tuple(self.namesrv_addr.split(";")) if self.namesrv_addr else ()

    @property
    def tls_settings(self) -> dict[str, str]:
        """Every ``tls.*`` key (the store's HA port takes both sides: ``MessageStore``'s
        ``ha_tls``)."""
        return {key: text for key, text in self.to_properties().items() if key.startswith("tls.")}

    @property
    def tls_server(self) -> dict[str, str]:
        """The ``tls.server.*`` keys for the Rust server (``rmq_remoting::tls::ServerTls``)."""
        return {k: v for k, v in self.tls_settings.items() if k.startswith("tls.server.")}

    @property
    def tls_client(self) -> TlsOptions:
        """The broker's own connections' TLS (``tls.enable``, ``tls.client.*``), read as
        ``rmq_remoting::tls::ClientTls::from_settings`` reads them: the server is verified
        when a trust file is set or ``tls.client.authServer`` is true, unless
        ``tls.test.mode.enable`` is true."""
        ca = self.tls_client_trust_cert_path or None
        return TlsOptions(
            enabled=self.tls_enable,
            ca=ca,
            cert=self.tls_client_cert_path or None,
            key=self.tls_client_key_path or None,
            verify=not self.tls_test_mode_enable
            and (self.tls_client_auth_server or ca is not None),
        )

    @property
    def store_host(self) -> str:
        """``brokerIP1:listenPort``, the address written into every stored message."""
        if ":" in self.broker_ip1:
            return f"[{self.broker_ip1}]:{self.listen_port}"
        return f"{self.broker_ip1}:{self.listen_port}"

    def to_properties(self) -> dict[str, str]:
        """The broker keys with their effective values, as ``broker.conf`` strings."""
        out: dict[str, str] = {}
        for key, spec in BROKER_KEYS.items():
            value = getattr(self, spec.attr)
            if value is None and spec.spec.kind == "path":
                continue  # unset, with a default worked out where it is used (aclFilePath)
            out[key] = _to_text(value)
        return out

    def all_properties(self, store_defaults: Mapping[str, str]) -> dict[str, str]:
        """Every setting in effect, broker and store keys, as ``broker.conf`` strings:
        ``store_defaults`` (``rmq._rmq.store_config_defaults()``), overridden by the store keys
        given, overridden by the broker keys; and two keys of RocketMQ's that rmq has no setting
        for but tools read back (Apache mqadmin's ``exportConfigs`` fails without them):
        ``useTLS`` (NettyClientConfig's, i.e. ``tls.enable``) and ``filterServerNums`` (0: rmq
        runs no filter servers)."""
        read_back = {"useTLS": _to_text(self.tls_enable), "filterServerNums": "0"}
        return {**store_defaults, **self.store, **read_back, **self.to_properties()}


def _to_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


_FIELDS: dict[str, str] = {
    "brokerClusterName": "broker_cluster_name",
    "brokerName": "broker_name",
    "brokerId": "broker_id",
    "brokerIP1": "broker_ip1",
    "listenPort": "listen_port",
    "namesrvAddr": "namesrv_addr",
    "storePathRootDir": "store_path_root_dir",
    "innerAccessKey": "inner_access_key",
    "innerSecretKey": "inner_secret_key",
    "brokerRole": "broker_role",
    "flushDiskType": "flush_disk_type",
    "deleteWhen": "delete_when",
    "fileReservedTime": "file_reserved_time",
    "autoCreateTopicEnable": "auto_create_topic_enable",
    "defaultTopicQueueNums": "default_topic_queue_nums",
    "maxMessageSize": "max_message_size",
    "brokerPermission": "broker_permission",
    "registerNameServerPeriod": "register_name_server_period",
    "cleanResourceInterval": "clean_resource_interval",
    "diskMaxUsedSpaceRatio": "disk_max_used_space_ratio",
    "messageDelayLevel": "message_delay_level",
    "flushDelayOffsetInterval": "flush_delay_offset_interval",
    "transactionTimeOut": "transaction_time_out",
    "transactionCheckMax": "transaction_check_max",
    "transactionCheckInterval": "transaction_check_interval",
    "rejectTransactionMessage": "reject_transaction_message",
    "rocketmq.broker.rebalance.lockMaxLiveTime": "rebalance_lock_max_live_time",
    "serverChannelMaxIdleTimeSeconds": "server_channel_max_idle_time_seconds",
    "clusterTopicEnable": "cluster_topic_enable",
    "brokerTopicEnable": "broker_topic_enable",
    "traceTopicEnable": "trace_topic_enable",
    "msgTraceTopicName": "msg_trace_topic_name",
    "slaveReadEnable": "slave_read_enable",
    "autoCreateSubscriptionGroup": "auto_create_subscription_group",
    "longPollingEnable": "long_polling_enable",
    "shortPollingTimeMills": "short_polling_time_mills",
    "transferMsgByHeap": "transfer_msg_by_heap",
    "regionId": "region_id",
    "traceOn": "trace_on",
    "channelExpiredTimeout": "channel_expired_timeout",
    "aclEnable": "acl_enable",
    "aclFilePath": "acl_file_path",
    "metricsExporterType": "metrics_exporter_type",
    "metricsPromExporterHost": "metrics_prom_exporter_host",
    "metricsPromExporterPort": "metrics_prom_exporter_port",
    "tls.server.mode": "tls_server_mode",
    "tls.server.certPath": "tls_server_cert_path",
    "tls.server.keyPath": "tls_server_key_path",
    "tls.server.keyPassword": "tls_server_key_password",
    "tls.server.need.client.auth": "tls_server_need_client_auth",
    "tls.server.authClient": "tls_server_auth_client",
    "tls.server.trustCertPath": "tls_server_trust_cert_path",
    "tls.enable": "tls_enable",
    "tls.client.trustCertPath": "tls_client_trust_cert_path",
    "tls.client.certPath": "tls_client_cert_path",
    "tls.client.keyPath": "tls_client_key_path",
    "tls.client.keyPassword": "tls_client_key_password",
    "tls.client.authServer": "tls_client_auth_server",
    "tls.test.mode.enable": "tls_test_mode_enable",
}

BROKER_KEYS: dict[str, _Key] = {key: _Key(attr, SCHEMA[key]) for key, attr in _FIELDS.items()}
"""Every key :class:`BrokerConfig` reads: RocketMQ key → field and schema entry."""

KNOWN_BUT_UNUSED: frozenset[str] = frozenset(
    key
    for key, spec in SCHEMA.items()
    if spec.owner == "unused"
    or (spec.owner == "broker" and key not in BROKER_KEYS and key != "brokerAddr")
)
"""Legitimate RocketMQ keys that this build accepts without a warning but does not act on yet
(they are logged at INFO level): the schema's ``unused`` keys (Java thread pools, ...) and
any Rust broker key :class:`BrokerConfig` has no field for (none today).
Keys whose absence would change what a user gets (store paths, ACLs, ...) are deliberately
*not* here: those are warned about. ``brokerAddr`` is not a RocketMQ key (the control plane
sets it from ``brokerIP1:listenPort``)."""


# --------------------------------------------------------------------------------------------
# Loading


def _warn(message: str) -> None:
    log.warning("%s", message)
    warnings.warn(message, RmqConfigWarning, stacklevel=3)


def _native_store_defaults() -> dict[str, str]:
    try:
        from rmq._rmq import store_config_defaults
    except ImportError as exc:
        raise ImportError(
            "rmq's native module (rmq._rmq) is not built or not importable; "
            "run `make build` in the rmq repository"
        ) from exc
    return store_config_defaults()


def _read_text(path: str | os.PathLike[str]) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ConfigError(f"{os.fspath(path)}: cannot read config file: {exc.strerror}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # Java's Properties.load(InputStream) reads ISO-8859-1.
        return data.decode("latin-1")


def load_broker_config(
    path: str | os.PathLike[str] | None,
    overrides: Mapping[str, str] | None = None,
    *,
    store_defaults: Mapping[str, str] | None = None,
) -> BrokerConfig:
    """Load a broker config from a ``broker.conf`` file (``None``: defaults only).

    ``overrides`` are applied after the file, as RocketMQ applies command-line options
    (``-n`` → ``namesrvAddr``). ``store_defaults`` is the native store's key list
    (``rmq._rmq.store_config_defaults()`` when not given).

    Raises :class:`~rmq.errors.ConfigError` for an unreadable file or a bad value; warns with
    :class:`RmqConfigWarning` (and logs) for unknown keys.
    """
    entries: list[tuple[str, str, str]] = []  # (key, value, where)
    if path is not None:
        source = os.fspath(path)
        seen: dict[str, int] = {}
        for key, value, number in iter_properties(_read_text(path), source):
            if key in seen:
                _warn(
                    f"{source}:{number}: {key} is set again (first on line {seen[key]}); "
                    "the last value wins"
                )
            seen[key] = number
            entries.append((key, value, f"{source}:{number}"))
    for key, value in (overrides or {}).items():
        entries.append((key, value.strip(), "command line"))

    store_keys = _native_store_defaults() if store_defaults is None else store_defaults
    values: dict[str, Any] = {}
    raw_store: dict[str, str] = {}
    given: dict[str, str] = {}  # broker key -> where it was last set
    clamped: dict[str, str] = {}  # broker key -> how its last value was clamped
    unused: list[str] = []
    for key, raw, where in entries:
        spec = BROKER_KEYS.get(key)
        if spec is not None:
            values[spec.attr], note = _parse_value(key, raw, where)
            given[key] = where
            clamped.pop(key, None)
            if note is not None:
                clamped[key] = note
        elif key in store_keys:
            raw_store[key] = raw
        elif key in KNOWN_BUT_UNUSED:
            unused.append(key)
        else:
            _warn(f"{where}: unknown key {key!r} is ignored{suggest_key(key, store_keys)}")
    if unused:
        log.info("accepted but not used by this build: %s", ", ".join(sorted(set(unused))))

    # RocketMQ clamps some values instead of refusing them; so does the schema, and rmq warns.
    for key, note in clamped.items():
        _warn(f"{given[key]}: {note}")

    config = BrokerConfig(**values)
    if bool(config.inner_access_key) != bool(config.inner_secret_key):
        have, missing = (
            ("innerAccessKey", "innerSecretKey")
            if config.inner_access_key
            else ("innerSecretKey", "innerAccessKey")
        )
        raise ConfigError(
            f"{given[have]}: {have} is set but {missing} is not; the broker signs its own "
            "requests only with both (an admin account of the brokers' plain_acl.yml)",
            key=missing,
        )
    if config.broker_role is BrokerRole.SLAVE and config.broker_id < 1:
        where = given.get("brokerId") or given.get("brokerRole", "defaults")
        raise ConfigError(
            f"{where}: brokerId = {config.broker_id} is not allowed with brokerRole = SLAVE; "
            "use an integer >= 1",
            key="brokerId",
        )
    if config.broker_role is not BrokerRole.SLAVE and config.broker_id != 0:
        _warn(
            f"{given['brokerId']}: brokerId = {config.broker_id} is ignored for a "
            f"{config.broker_role.value}; a master's brokerId is 0 (as in RocketMQ)"
        )
        config = dataclasses.replace(config, broker_id=0)

    # Broker keys the store reads too get the value checked here, so both sides agree.
    store = dict(raw_store)
    for key, text in config.to_properties().items():
        if key in store_keys and key not in _NOT_PASSED_TO_STORE:
            store[key] = text
    return dataclasses.replace(config, store=store)


def _parse_value(key: str, raw: str, where: str) -> tuple[Any, str | None]:
    """``raw`` checked by the config schema: the typed value and the clamp note (or None)."""
    try:
        text, note = check_config_value(key, raw)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}", key=key) from None
    return _typed(key, text), note


def check_broker_value(key: str, raw: str, where: str = "<string>") -> tuple[Any, str | None]:
    """Check one broker key's text value as :func:`load_broker_config` does.

    Returns ``(value, note)``: the value to use (typed; clamped where RocketMQ clamps) and, when
    it was clamped, a note saying so (else None). Raises :class:`~rmq.errors.ConfigError`
    naming ``where``, the key and what is allowed, also for a key that is not in
    :data:`BROKER_KEYS`.
    """
    if key not in BROKER_KEYS:
        raise ConfigError(f"{where}: {key} is not a broker key", key=key)
    return _parse_value(key, raw, where)


def suggest_key(key: str, store_keys: Mapping[str, str]) -> str:
    """`` (did you mean 'x'?)`` for the known key closest to a misspelt one, or ``""``."""
    known = [*BROKER_KEYS, *store_keys, *KNOWN_BUT_UNUSED]
    by_lower = {name.lower(): name for name in known}
    match = by_lower.get(key.lower())
    if match is None:
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
        match = close[0] if close else None
    return f" (did you mean {match!r}?)" if match else ""
