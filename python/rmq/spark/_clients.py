"""Clients that outlive one Spark task.

Spark reuses its Python workers between tasks (``spark.python.worker.reuse``, on by default), so
each worker process keeps one native client instance per nameserver list and one producer per
configuration: a task then starts sending or pulling at once, with routes and connections warm.
They are shut down when the worker exits (rmq's ``atexit`` hook).
"""

from __future__ import annotations

import threading

from rmq._rmq import ClientInstance
from rmq.client import _instance
from rmq.client._instance import Credentials
from rmq.client.producer import Producer
from rmq.tls import PLAIN, TlsOptions

__all__ = ["client", "producer"]

_lock = threading.Lock()
_clients: dict[tuple[str, str, Credentials | None, TlsOptions], ClientInstance] = {}
_producers: dict[tuple[str, str, str, int, int, Credentials | None, TlsOptions], Producer] = {}


def client(
    namesrv: str,
    instance_name: str,
    creds: Credentials | None = None,
    tls: TlsOptions = PLAIN,
) -> ClientInstance:
    """The process's client instance for ``namesrv`` (routes, min/max offsets, pulls),
    signing with ``creds`` when given, over TLS with ``tls``."""
    key = (namesrv, instance_name, creds, tls)
    with _lock:
        c = _clients.get(key)
        if c is None:
            c = _clients[key] = _instance.acquire(namesrv, instance_name, creds=creds, tls=tls)
        return c


def producer(
    namesrv: str,
    instance_name: str,
    group: str,
    send_timeout_ms: int,
    retries: int,
    creds: Credentials | None = None,
    tls: TlsOptions = PLAIN,
) -> Producer:
    """The process's started producer for this configuration (thread-safe)."""
    key = (namesrv, instance_name, group, send_timeout_ms, retries, creds, tls)
    with _lock:
        p = _producers.get(key)
        if p is None:
            p = Producer(
                group,
                namesrv,
                instance_name=instance_name,
                send_msg_timeout=send_timeout_ms,
                retry_times_when_send_failed=retries,
                access_key=creds.access_key if creds else None,
                secret_key=creds.secret_key if creds else None,
                security_token=creds.security_token if creds else None,
                **tls.as_kwargs(),
            ).start()
            _producers[key] = p
        return p
