"""One native client instance per nameserver list and instance name, shared by every producer
and consumer that uses them (RocketMQ's ``MQClientManager``), and the routing of what brokers
push (NOTIFY_CONSUMER_IDS_CHANGED, RESET_CONSUMER_CLIENT_OFFSET) to the consumer it is for.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Protocol

from rmq._rmq import BrokerCallReply, ClientInstance, _stop_callbacks
from rmq.codes import ResponseCode
from rmq.tls import PLAIN, TlsOptions

__all__ = [
    "BrokerPushHandler",
    "Credentials",
    "acquire",
    "credentials",
    "default_namesrv_addr",
    "release",
]

log = logging.getLogger("rmq.client")

NOTIFY_CONSUMER_IDS_CHANGED = 40
RESET_CONSUMER_CLIENT_OFFSET = 220
CHECK_TRANSACTION_STATE = 39


class BrokerPushHandler(Protocol):
    """What a consumer (or transaction producer) registers to hear broker pushes."""

    def on_broker_request(self, code: int, ext_fields: dict[str, str], body: bytes | None) -> None:
        """A push for this group arrived."""


def default_namesrv_addr(namesrv_addr: str | None) -> str:
    """The address given, else ``$NAMESRV_ADDR``, else RocketMQ's default."""
    return namesrv_addr or os.environ.get("NAMESRV_ADDR") or "127.0.0.1:9876"


@dataclass(frozen=True)
class Credentials:
    """An ACL 1.0 account (``accessKey``/``secretKey`` of plain_acl.yml, and an optional
    security token): every request of an instance made with them is signed, as Java's
    ``AclClientRPCHook`` does. The repr never shows the secret or the token."""

    access_key: str
    secret_key: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)


def credentials(
    access_key: str | None, secret_key: str | None, security_token: str | None = None
) -> Credentials | None:
    """The credentials the SDK's keyword arguments give: None when neither key is set, a
    ValueError naming the missing one when only one is."""
    if not access_key and not secret_key:
        return None
    if not access_key or not secret_key:
        missing, given = (
            ("secret_key", "access_key") if access_key else ("access_key", "secret_key")
        )
        raise ValueError(
            f"{given} is set but {missing} is not: ACL signatures need both "
            "(the account's accessKey and secretKey from the broker's plain_acl.yml)"
        )
    return Credentials(access_key, secret_key, security_token or None)


class _Shared:
    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance
        self.users = 0
        self.handlers: dict[str, BrokerPushHandler] = {}

    def on_broker_request(self, code: int, ext_fields: dict[str, str], body: bytes | None) -> None:
        group = ext_fields.get("consumerGroup") or ext_fields.get("group") or ""
        if code == CHECK_TRANSACTION_STATE:
            group = ext_fields.get("producerGroup", group)
        handler = self.handlers.get(group)
        if handler is None:
            log.debug("broker push code %s for group %r, which has no handler here", code, group)
            return
        handler.on_broker_request(code, ext_fields, body)

    def on_broker_call(
        self, code: int, ext_fields: dict[str, str], body: bytes | None, reply: BrokerCallReply
    ) -> None:
        """A call relayed by a broker (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY),
        answered through ``reply(code, remark, body)`` by the consumer of its group."""
        group = ext_fields.get("consumerGroup", "")
        handler = self.handlers.get(group)
        if handler is None:
            reply(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer Group <{group}> not exist in this consumer",
            )
            return
        answer = getattr(handler, "on_broker_call", None)
        if answer is None:
            reply(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f"request code {code} is answered by rmq's push consumers only; "
                f"group {group} is consumed by a {type(handler).__name__}",
            )
            return
        answer(code, ext_fields, body, reply)

    @staticmethod
    def on_warning(text: str) -> None:
        log.warning("%s", text)


_lock = threading.Lock()
_shared: dict[tuple[str, str, Credentials | None, TlsOptions], _Shared] = {}


def acquire(
    namesrv_addr: str,
    instance_name: str,
    group: str | None = None,
    handler: BrokerPushHandler | None = None,
    *,
    heartbeat_broker_interval_ms: int = 30000,
    poll_name_server_interval_ms: int = 30000,
    creds: Credentials | None = None,
    tls: TlsOptions = PLAIN,
) -> ClientInstance:
    """The shared instance for ``(namesrv_addr, instance_name, creds, tls)``, created on first
    use; ``handler`` receives broker pushes for ``group``. Pair with :func:`release`. An
    instance signs with the credentials it was made with, so clients with other credentials
    get an instance of their own; the same for TLS options."""
    key = (namesrv_addr, instance_name, creds, tls)
    with _lock:
        s = _shared.get(key)
        if s is None:
            inst = ClientInstance(
                namesrv_addr,
                instance_name=instance_name,
                heartbeat_broker_interval_ms=heartbeat_broker_interval_ms,
                poll_name_server_interval_ms=poll_name_server_interval_ms,
                access_key=creds.access_key if creds else None,
                secret_key=creds.secret_key if creds else None,
                security_token=creds.security_token if creds else None,
                **tls.as_kwargs(),
            )
            s = _Shared(inst)
            inst.set_listener(s.on_broker_request, s.on_warning, s.on_broker_call)
            _shared[key] = s
        s.users += 1
        if group is not None and handler is not None:
            s.handlers[group] = handler
        return s.instance


def release(instance: ClientInstance, group: str | None = None) -> None:
    """Drop one user of ``instance``; the last one shuts it down."""
    with _lock:
        for key, s in list(_shared.items()):
            if s.instance is instance:
                if group is not None:
                    s.handlers.pop(group, None)
                s.users -= 1
                if s.users <= 0:
                    del _shared[key]
                    s.instance.shutdown()
                return


def _shutdown_all() -> None:
    with _lock:
        for s in _shared.values():
            s.instance.shutdown()
        _shared.clear()
    # Late completions (a long poll cut short) must not call into a finalizing interpreter.
    _stop_callbacks()


atexit.register(_shutdown_all)
