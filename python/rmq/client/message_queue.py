"""A message queue, RocketMQ's ``MessageQueue``: one queue of a topic on one broker.

Ordering (topic, broker name, queue id) is the order RocketMQ's rebalance sorts queues in,
so allocation strategies can rely on ``sorted()``.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MessageQueue"]


@dataclass(frozen=True, order=True, slots=True)
class MessageQueue:
    """``topic``'s queue ``queue_id`` on broker ``broker_name``."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return (
            f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, "
            f"queueId={self.queue_id}]"
        )
