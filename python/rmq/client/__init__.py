"""rmq's RocketMQ client: producers and consumers over the Rust client core (``rmq._rmq``).

The public names are re-exported by :mod:`rmq`; this package holds the pieces.
"""

from __future__ import annotations

from rmq.client.allocate import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
    strategy_by_name,
)
from rmq.client.consumer import (
    ConsumeConcurrentlyStatus,
    ConsumeFromWhere,
    ConsumeOrderlyStatus,
    MessageModel,
    PushConsumer,
)
from rmq.client.message import Message
from rmq.client.message_queue import MessageQueue
from rmq.client.producer import (
    Producer,
    SendFuture,
    select_by_hash,
    select_by_sharding_key,
)
from rmq.client.pull_consumer import PullConsumer
from rmq.client.transaction import (
    LocalTransactionState,
    TransactionProducer,
    TransactionSendResult,
)

__all__ = [
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "LocalTransactionState",
    "Message",
    "MessageModel",
    "MessageQueue",
    "Producer",
    "PullConsumer",
    "PushConsumer",
    "SendFuture",
    "TransactionProducer",
    "TransactionSendResult",
    "select_by_hash",
    "select_by_sharding_key",
    "strategy_by_name",
]
