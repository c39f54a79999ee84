"""rmq's web console: cluster, brokers, topics, consumer groups, producers, message search
and live TPS charts in a browser, served by the Python package itself.

``python -m rmq.console -n NAMESRV`` runs it alone (:mod:`rmq.console.cli`); ``python -m
rmq.broker --console-port PORT`` runs it inside a broker against the broker's nameservers.
The figures are the admin tool's (:mod:`rmq.console.api`), the page is static files shipped
in the wheel (``static/``), and the HTTP side is the standard library's
(:mod:`rmq.console.server`).
"""

from __future__ import annotations

from rmq.console.server import ConsoleServer

__all__ = ["ConsoleServer"]
