"""The nameserver's configuration keys (RocketMQ's ``NamesrvConfig`` and ``NettyServerConfig``
as ``namesrv.conf`` spells them) and what GET_NAMESRV_CONFIG (319) / UPDATE_NAMESRV_CONFIG (318)
report and change (``mqadmin getNamesrvConfig`` / ``updateNamesrvConfig``).

rmq's nameserver acts on ``listenPort``, the ``tls.server.*`` keys (TLS on its port, read at
start-up and never reported back), the ACL keys (``aclEnable``, ``aclFilePath``) and the
metrics keys (``metricsExporterType``, ``metricsPromExporterHost``/``Port``), both read at
start-up, reported, not changeable while it runs, and ``kvConfigPath`` (where the KV config is
kept); the other keys are accepted so that RocketMQ
config files and admin tools work, kept, and reported back, but change nothing. The answer to
GET_NAMESRV_CONFIG is ``key=value`` lines: ``listenPort`` (the port actually bound) and every
key set in the config file or by UPDATE_NAMESRV_CONFIG. Updates live in memory until the
nameserver stops, as RocketMQ's do unless its ``configStorePath`` file is kept.

The keys and their types are the config schema's (``rmq._rmq.config_schema("namesrv")``, the
Rust table ``rmq_common::config_schema::NAMESRV_KEYS``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from rmq._rmq import config_schema
from rmq.config import format_properties

__all__ = [
    "ACCEPTED_UNUSED_KEYS",
    "ACL_KEYS",
    "KNOWN_KEYS",
    "KV_KEYS",
    "METRICS_KEYS",
    "PATH_KEYS",
    "TLS_KEYS",
    "NamesrvConfig",
    "NamesrvConfigError",
]

_SCHEMA = {key.name: key for key in config_schema("namesrv")}
TLS_KEYS = frozenset(name for name in _SCHEMA if name.startswith("tls."))
"""``tls.server.mode``, ``tls.server.certPath``, ...: handed to ``rmq._rmq.RemotingServer``."""
KNOWN_KEYS = frozenset({"listenPort"}) | TLS_KEYS
PATH_KEYS = frozenset(name for name, key in _SCHEMA.items() if key.kind == "path")
_BOOL_KEYS = frozenset(name for name, key in _SCHEMA.items() if key.kind == "bool")
_INT_KEYS = frozenset(
    name for name, key in _SCHEMA.items() if key.kind == "int" and name not in KNOWN_KEYS
)
ACL_KEYS = frozenset({"aclEnable", "aclFilePath"})
"""Read at start-up (the ACL check in front of the handler), reported, not changeable."""
METRICS_KEYS = frozenset(name for name in _SCHEMA if name.startswith("metrics"))
"""``metricsExporterType``, ``metricsPromExporterHost``/``Port``: read at start-up (the
Prometheus exporter, ``rmq.metrics_http``), reported, not changeable."""
KV_KEYS = frozenset({"kvConfigPath"})
"""Where the KV config is kept (``rmq.namesrv.kv_config``): read at start-up, reported."""
ACCEPTED_UNUSED_KEYS = frozenset(_SCHEMA) - KNOWN_KEYS - ACL_KEYS - METRICS_KEYS - KV_KEYS
"""Keys RocketMQ's nameserver has that this one accepts, reports and ignores."""


class NamesrvConfigError(ValueError):
    """An update names a key that cannot change, is unknown, or has a bad value. ``path_key``
    is true for the config-path keys, which RocketMQ refuses with NO_PERMISSION."""

    def __init__(self, message: str, *, path_key: bool = False) -> None:
        super().__init__(message)
        self.path_key = path_key


def _check(key: str, value: str) -> None:
    if key in PATH_KEYS:
        raise NamesrvConfigError("Can not update config path", path_key=True)
    if key in TLS_KEYS:
        raise NamesrvConfigError(
            f"{key} cannot change while the nameserver runs: set it in namesrv.conf and restart"
        )
    if key == "aclEnable" or key in METRICS_KEYS:
        raise NamesrvConfigError(
            f"{key} cannot change while the nameserver runs: set it in namesrv.conf and restart"
        )
    if key == "listenPort":
        raise NamesrvConfigError(
            "listenPort cannot change while the nameserver runs: set it in namesrv.conf "
            "(or -p) and restart"
        )
    if key not in ACCEPTED_UNUSED_KEYS:  # kvConfigPath is a path key, refused above
        allowed = ", ".join(sorted(ACCEPTED_UNUSED_KEYS - PATH_KEYS))
        raise NamesrvConfigError(f"unknown nameserver config key {key!r}; known keys: {allowed}")
    if key in _BOOL_KEYS and value not in ("true", "false"):
        raise NamesrvConfigError(f"{key} = {value!r} is not a boolean; use true or false")
    if key in _INT_KEYS and not value.lstrip("-").isdigit():
        raise NamesrvConfigError(f"{key} = {value!r} is not an integer")


class NamesrvConfig:
    """The keys a nameserver was configured with, plus later updates (thread-safe)."""

    def __init__(self, listen_port: int = 0, values: Mapping[str, str] | None = None) -> None:
        self._lock = threading.Lock()
        self.listen_port = listen_port
        self._values = {k: v for k, v in (values or {}).items() if k not in KNOWN_KEYS}

    def format(self) -> str:
        """The GET_NAMESRV_CONFIG body: ``key=value`` lines, sorted."""
        with self._lock:
            return format_properties({**self._values, "listenPort": str(self.listen_port)})

    def update(self, updates: Mapping[str, str]) -> None:
        """Apply UPDATE_NAMESRV_CONFIG: all keys or none.

        :raises NamesrvConfigError: a key cannot change, is unknown or has a bad value.
        """
        for key, value in updates.items():
            _check(key, value)
        with self._lock:
            self._values.update(updates)
