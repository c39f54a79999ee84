"""``rmq`` (also ``python -m rmq.admin``): the admin tool, mqadmin's most used sub-commands with
mqadmin's names and flags, so RocketMQ operators' habits and scripts carry over.

Layout: :mod:`~rmq.admin.cli` parses and prints, :mod:`~rmq.admin.command` is the sub-command
registry, :mod:`~rmq.admin.commands` holds the sub-commands (one decorated function each),
:mod:`~rmq.admin.client` talks to nameservers and brokers, :mod:`rmq.fastjson` reads
Java peers' JSON, :mod:`~rmq.admin.output` formats tables, times and messages.
"""

from __future__ import annotations

from rmq.admin.cli import main

__all__ = ["main"]
