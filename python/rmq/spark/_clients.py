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
from rmq.client.producer import Producer
from rmq.tls import PLAIN, TlsOptions

__all__ = ["client", "producer"]

_lock = threading.Lock()
_clients: dict[tuple[str, str, TlsOptions], ClientInstance] = {}
_producers: dict[tuple[str, str, str, int, int, TlsOptions], Producer] = {}


def client(namesrv: str, instance_name: str, tls: TlsOptions = PLAIN) -> ClientInstance:
    """The process's client instance for ``namesrv`` (routes, min/max offsets, pulls)."""
    key = (namesrv, instance_name, tls)
    with _lock:
        c = _clients.get(key)
        if c is None:
            c = _clients[key] = _instance.acquire(namesrv, instance_name, tls=tls)
        return c


def producer(
    namesrv: str,
    instance_name: str,
    group: str,
    send_timeout_ms: int,
    retries: int,
    tls: TlsOptions = PLAIN,
) -> Producer:
    """The process's started producer for this configuration (thread-safe)."""
    key = (namesrv, instance_name, group, send_timeout_ms, retries, tls)
    with _lock:
        p = _producers.get(key)
        if p is None:
            p = Producer(
                group,
                namesrv,
                instance_name=instance_name,
                send_msg_timeout=send_timeout_ms,
                retry_times_when_send_failed=retries,
                **tls.as_kwargs(),
            ).start()
            _producers[key] = p
        return p
