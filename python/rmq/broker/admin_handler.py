"""The broker request codes Python serves: the broker's configuration.

The Rust server (``rmq._rmq.BrokerServer``) serves the data plane and hands every request code
it does not know to :class:`BrokerAdminHandler`:

* GET_BROKER_CONFIG (26): every setting in effect (broker and store keys) as Java-properties
  text, one ``key=value`` line each, and the config's data version as the ``version`` ext field
  (RocketMQ's DataVersion JSON, ``{"counter":1,"timestamp":1700000000000}``), which moves on
  with every accepted update.
* UPDATE_BROKER_CONFIG (25): a Java-properties body. Every key is checked as the config file's
  keys are (:func:`rmq.config.check_broker_value`); only :data:`RUNTIME_KEYS` may change while
  the broker runs. A request with anything else changes nothing and says which key is wrong and
  what is allowed: NO_PERMISSION (16) for a key that needs a restart (RocketMQ's answer for keys
  it will not update), SYSTEM_ERROR (1) for an unknown key or a bad value. Accepted values are
  written to the broker's config file when it was started with ``-c`` (temp file + rename, other
  lines kept), then applied through the handler's listener.
* codes other broker modules add with :meth:`BrokerAdminHandler.add_handler`
  (GET_ALL_DELAY_OFFSET, 45: :mod:`rmq.broker.role`);
* anything else: REQUEST_CODE_NOT_SUPPORTED (3).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from rmq.codes import RequestCode, ResponseCode
from rmq.config import (
    BROKER_KEYS,
    KNOWN_BUT_UNUSED,
    SCHEMA,
    BrokerConfig,
    check_broker_value,
    format_properties,
    iter_properties,
    redact_secrets,
    suggest_key,
    write_properties_update,
)
from rmq.errors import ConfigError

if TYPE_CHECKING:
    from rmq._rmq import RemotingResponse

__all__ = ["RUNTIME_KEYS", "BrokerAdminHandler", "ConfigListener", "DataVersion", "Request"]

log = logging.getLogger("rmq.broker")

RUNTIME_KEYS: tuple[str, ...] = tuple(sorted(key for key in BROKER_KEYS if SCHEMA[key].runtime))
"""Broker keys UPDATE_BROKER_CONFIG may change while the broker runs (the config schema's
``runtime`` keys that this process reads): the broker permission
(sends and pulls check it at once; the nameservers learn it at the next registration, which
follows immediately), the registration period, and when and which expired files are deleted.
Every other key is read once at start-up."""

_ALLOWED = "keys that can change while the broker runs: " + ", ".join(RUNTIME_KEYS)


class Request(Protocol):
    """What the handler reads of ``rmq._rmq.RemotingRequest``."""

    @property
    def code(self) -> int: ...

    @property
    def body(self) -> bytes | None: ...

    @property
    def peer(self) -> str: ...


ConfigListener = Callable[[BrokerConfig, BrokerConfig], None]
"""Called with ``(old, new)`` after an update was accepted, to apply it to the running broker."""


@dataclass(frozen=True, slots=True)
class DataVersion:
    """RocketMQ's ``DataVersion`` of the config: bumped on every accepted update."""

    counter: int = 0
    timestamp: int = dataclasses.field(default_factory=lambda: int(time.time() * 1000))

    def next(self) -> DataVersion:
        return DataVersion(self.counter + 1, int(time.time() * 1000))

    def to_json(self) -> str:
        """As fastjson writes it (properties sorted, no blanks)."""
        return json.dumps(
            {"counter": self.counter, "timestamp": self.timestamp}, separators=(",", ":")
        )


def _response(
    code: int,
    remark: str | None = None,
    ext_fields: Mapping[str, str] | None = None,
    body: bytes | None = None,
) -> RemotingResponse:
    from rmq._rmq import RemotingResponse

    return RemotingResponse(code, remark, ext_fields, body)


class BrokerAdminHandler:
    """Serves GET_BROKER_CONFIG and UPDATE_BROKER_CONFIG for one broker (see the module docs).

    ``config`` is the configuration the broker started with, ``config_path`` its ``-c`` file
    (None: updates are not persisted), ``store_defaults`` the native store's keys with their
    defaults (``rmq._rmq.store_config_defaults()``). Thread-safe: the server calls
    :meth:`handle` from worker threads.
    """

    def __init__(
        self,
        config: BrokerConfig,
        *,
        config_path: str | os.PathLike[str] | None,
        store_defaults: Mapping[str, str],
        listener: ConfigListener | None = None,
    ) -> None:
        self._config = config
        self._path = os.fspath(config_path) if config_path is not None else None
        self._store_defaults = dict(store_defaults)
        self._listener = listener
        self._version = DataVersion()
        self._lock = threading.Lock()
        self._extra: dict[int, Callable[[Request], RemotingResponse]] = {}

    @property
    def config(self) -> BrokerConfig:
        """The configuration in effect now."""
        return self._config

    @property
    def data_version(self) -> DataVersion:
        return self._version

    def set_listener(self, listener: ConfigListener | None) -> None:
        """Set the hook that applies accepted updates to the running broker."""
        self._listener = listener

    def add_handler(self, code: int, serve: Callable[[Request], RemotingResponse]) -> None:
        """Serve request ``code`` with ``serve`` (a code another broker module owns, such as
        GET_ALL_DELAY_OFFSET)."""
        self._extra[code] = serve

    def handle(self, request: Request) -> RemotingResponse:
        serve = self._extra.get(request.code)
        if serve is not None:
            return serve(request)
        if request.code == RequestCode.GET_BROKER_CONFIG:
            return self.get_broker_config()
        if request.code == RequestCode.UPDATE_BROKER_CONFIG:
            return self.update_broker_config(request.body, request.peer)
        return _response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
            f"request code {request.code} is not supported by this broker",
        )

    def get_broker_config(self) -> RemotingResponse:
        """26: the settings in effect as properties text, and the data version."""
        with self._lock:
            text = format_properties(
                redact_secrets(self._config.all_properties(self._store_defaults))
            )
            version = self._version.to_json()
        return _response(ResponseCode.SUCCESS, None, {"version": version}, text.encode("utf-8"))

    def update_broker_config(self, body: bytes | None, peer: str = "?") -> RemotingResponse:
        """25: check every key of the properties ``body``; apply all of them or none."""
        if not body:
            return _response(ResponseCode.SUCCESS)  # RocketMQ: nothing to do
        try:
            entries = list(iter_properties(body.decode("utf-8"), "UPDATE_BROKER_CONFIG body"))
        except UnicodeDecodeError:
            return _response(ResponseCode.SYSTEM_ERROR, "the body is not UTF-8 properties text")
        except ConfigError as exc:
            return _response(ResponseCode.SYSTEM_ERROR, str(exc))
        with self._lock:
            return self._update(entries, peer)

    def _update(self, entries: list[tuple[str, str, int]], peer: str) -> RemotingResponse:
        values: dict[str, Any] = {}
        problems: list[str] = []
        restart: list[str] = []
        notes: list[str] = []
        for key, raw, _ in entries:
            if key in RUNTIME_KEYS:
                try:
                    value, note = check_broker_value(key, raw, "UPDATE_BROKER_CONFIG")
                except ConfigError as exc:
                    problems.append(str(exc))
                    continue
                values[key] = value
                if note:
                    notes.append(note)
            elif key in BROKER_KEYS or key in self._store_defaults or key in KNOWN_BUT_UNUSED:
                restart.append(key)
            else:
                problems.append(
                    f"unknown key {key!r}{suggest_key(key, self._store_defaults)} "
                    "(the key names are broker.conf's)"
                )
        problems.extend(_broker_group_rule(values, self._config))
        if problems or restart:
            parts = list(problems)
            if restart:
                parts.append(
                    ", ".join(sorted(set(restart)))
                    + " cannot change while the broker runs: set it in the broker's config file "
                    "and restart the broker"
                )
            remark = "; ".join(parts) + f". Nothing was changed ({_ALLOWED})"
            code = ResponseCode.SYSTEM_ERROR if problems else ResponseCode.NO_PERMISSION
            log.warning("UPDATE_BROKER_CONFIG from %s refused: %s", peer, remark)
            return _response(code, remark)

        old = self._config
        changes = {BROKER_KEYS[key].attr: value for key, value in values.items()}
        new = dataclasses.replace(old, **changes)
        texts = {key: new.to_properties()[key] for key in values}
        store = dict(new.store)
        store.update({key: text for key, text in texts.items() if key in store})
        new = dataclasses.replace(new, store=store)
        if self._path is not None:
            try:
                write_properties_update(self._path, texts)
            except OSError as exc:
                remark = (
                    f"cannot write the broker's config file {self._path}: {exc.strerror or exc}; "
                    "nothing was changed"
                )
                log.error("UPDATE_BROKER_CONFIG from %s: %s", peer, remark)
                return _response(ResponseCode.SYSTEM_ERROR, remark)
        self._config = new
        self._version = self._version.next()
        log.info(
            "broker config updated by %s: %s%s",
            peer,
            ", ".join(f"{key}={text}" for key, text in redact_secrets(texts).items()),
            f" (saved to {self._path})" if self._path else " (not saved: no config file)",
        )
        for note in notes:
            log.warning("UPDATE_BROKER_CONFIG: %s", note)
        if self._listener is not None:
            try:
                self._listener(old, new)
            except Exception as exc:
                log.exception("applying the updated broker config failed")
                return _response(
                    ResponseCode.SYSTEM_ERROR,
                    f"the new values were saved but applying them failed: {exc}",
                )
        return _response(ResponseCode.SUCCESS, "; ".join(notes) or None)


def _broker_group_rule(values: dict[str, Any], config: BrokerConfig) -> list[str]:
    """brokerRole and brokerId change together, as a broker group needs them: a master's
    brokerId becomes 0, a slave's at least 1 (1 when it was 0). Returns the problems of a
    combination that cannot be made right (a master asked for a brokerId other than 0)."""
    from rmq.config import BrokerRole

    role = values.get("brokerRole", config.broker_role)
    role = BrokerRole(role) if not isinstance(role, BrokerRole) else role
    if "brokerRole" in values:
        if role is BrokerRole.SLAVE:
            if values.get("brokerId", config.broker_id) == 0:
                values["brokerId"] = 1
        else:
            if values.get("brokerId", 0) != 0:
                return [
                    f"brokerId = {values['brokerId']} with brokerRole = {role.value}: a "
                    "master's brokerId is 0"
                ]
            values["brokerId"] = 0
    elif "brokerId" in values:
        if role is BrokerRole.SLAVE and values["brokerId"] == 0:
            return [
                "brokerId = 0 is the master's: promote a slave with brokerRole = "
                "SYNC_MASTER or ASYNC_MASTER (its brokerId becomes 0)"
            ]
        if role is not BrokerRole.SLAVE and values["brokerId"] != 0:
            return [
                f"brokerId = {values['brokerId']} on a {role.value}: a master's brokerId "
                "is 0 (make it a slave with brokerRole = SLAVE)"
            ]
    return []
