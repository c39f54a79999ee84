"""rmq's RocketMQ client: producers and consumers over the Rust client core (``rmq._rmq``)."""

from __future__ import annotations

from rmq.client.message_queue import MessageQueue

__all__ = ["MessageQueue"]
