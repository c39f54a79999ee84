"""The nameserver's KV config (RocketMQ's ``KVConfigManager``): namespace → key → value,
set by PUT_KV_CONFIG / DELETE_KV_CONFIG (``mqadmin updateKvConfig`` / ``deleteKvConfig``),
read by GET_KV_CONFIG / GET_KVLIST_BY_NAMESPACE and by routes (``ORDER_TOPIC_CONFIG``).

The table is kept in ``kvConfigPath`` (default ``~/namesrv/kvConfig.json``, as RocketMQ) in
RocketMQ's JSON, ``{"configTable":{namespace:{key:value}}}``, so a file written by a Java
nameserver loads here and the other way round. It is loaded at start and rewritten
atomically (:func:`rmq._rmq.write_file_atomic`) after every change; a file that does not
parse refuses the start (:class:`KvConfigError`) rather than be overwritten by the next put.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from rmq._rmq import write_file_atomic

__all__ = ["KV_CONFIG_PATH_ENV", "KvConfigError", "KvConfigManager", "default_kv_config_path"]

log = logging.getLogger("rmq.namesrv")

KV_CONFIG_PATH_ENV = "RMQ_KV_CONFIG_PATH"
"""Overrides the default ``kvConfigPath`` (``-``: keep the table in memory only; the test
suite sets it so that its nameservers share no file)."""


def default_kv_config_path() -> Path | None:
    """``$RMQ_KV_CONFIG_PATH`` if set (None for ``-``), else ``~/namesrv/kvConfig.json``."""
    env = os.environ.get(KV_CONFIG_PATH_ENV)
    if env is not None:
        return None if env == "-" else Path(env)
    return Path.home() / "namesrv" / "kvConfig.json"


class KvConfigError(Exception):
    """The KV config file cannot be read or parsed; the message names the file and the fix."""


def _parse(path: Path, text: str) -> dict[str, dict[str, str]]:
    def bad(reason: str) -> KvConfigError:
        return KvConfigError(
            f"the nameserver KV config file {path} is corrupt ({reason}); it must be "
            '{"configTable":{"NAMESPACE":{"KEY":"VALUE"}}}. Fix it, or move it away to start '
            "with an empty KV config (set kvConfigPath to use another file)"
        )

    if not text.strip():
        return {}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise bad(f"not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise bad("not a JSON object")
    table = doc.get("configTable") or {}
    if not isinstance(table, dict):
        raise bad("configTable is not an object")
    out: dict[str, dict[str, str]] = {}
    for ns, entries in table.items():
        if not isinstance(entries, dict) or not all(isinstance(v, str) for v in entries.values()):
            raise bad(f"namespace {ns!r} is not an object of string values")
        if entries:
            out[ns] = dict(entries)
    return out


class KvConfigManager:
    """The KV table, persisted to ``path`` (None: memory only). Thread-safe."""

    def __init__(self, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self.path = path
        self._table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the file, if there is one.

        :raises KvConfigError: it cannot be read or does not parse.
        """
        if self.path is None:
            return
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except (OSError, UnicodeDecodeError) as exc:
            raise KvConfigError(
                f"cannot read the nameserver KV config file {self.path}: {exc}; fix its "
                "permissions or set kvConfigPath to another file"
            ) from None
        table = _parse(self.path, text)
        with self._lock:
            self._table = table
        log.info(
            "KV config loaded from %s: %d namespace(s), %d key(s)",
            self.path,
            len(table),
            sum(len(t) for t in table.values()),
        )

    def _persist(self) -> None:
        """Write the table (caller holds the lock). A failed write is logged: the change
        stays in memory and the file keeps its previous content."""
        if self.path is None:
            return
        body = json.dumps({"configTable": self._table}, indent=1, sort_keys=True).encode()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_file_atomic(self.path, body)
        except OSError as exc:
            log.error("KV config not saved: %s", exc)

    def put(self, namespace: str, key: str, value: str) -> None:
        with self._lock:
            self._table.setdefault(namespace, {})[key] = value
            self._persist()
        log.info("KV config put: %s %s = %s", namespace, key, value)

    def get(self, namespace: str, key: str) -> str | None:
        with self._lock:
            return self._table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        with self._lock:
            table = self._table.get(namespace)
            if table is None or key not in table:
                return
            del table[key]
            if not table:
                del self._table[namespace]
            self._persist()
        log.info("KV config deleted: %s %s", namespace, key)

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace's table, None when it has no key."""
        with self._lock:
            table = self._table.get(namespace)
            return dict(table) if table is not None else None
