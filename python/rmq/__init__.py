"""rmq: a RocketMQ-compatible message broker.

The storage engine and the network paths are Rust (the private native module ``rmq._rmq``);
configuration, scheduling and the command-line tools are Python. The public surface is what
``__all__`` lists::

    from rmq import MessageStore, load_broker_config

    config = load_broker_config("broker.conf")
    with MessageStore(config.store_path_root_dir, config.store, config.store_host) as store:
        store.put_message("TopicTest", 0, b"hello")

The native classes are loaded on first use, so ``rmq.config`` and ``rmq.errors`` work (and
can be tested) before the extension is built; touching a native name then says how to build it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rmq.config import BrokerConfig, BrokerRole, FlushDiskType, RmqConfigWarning, load_broker_config
from rmq.errors import (
    BrokerResponseError,
    ClientError,
    ConfigError,
    FlushDiskTimeoutError,
    MessageIllegalError,
    RmqError,
    ServiceNotAvailableError,
    StoreError,
    for_code,
)

if TYPE_CHECKING:
    from rmq._rmq import (
        GetMessageResult,
        MessageStore,
        PullResult,
        PutMessageResult,
        SendResult,
        StoredMessage,
    )
    from rmq.client import (
        ConsumeConcurrentlyStatus,
        ConsumeFromWhere,
        ConsumeOrderlyStatus,
        LocalTransactionState,
        Message,
        MessageModel,
        MessageQueue,
        Producer,
        PullConsumer,
        PushConsumer,
        TransactionProducer,
        TransactionSendResult,
    )

__all__ = [
    "BrokerConfig",
    "BrokerResponseError",
    "BrokerRole",
    "ClientError",
    "ConfigError",
    "ConsumeConcurrentlyStatus",
    "ConsumeFromWhere",
    "ConsumeOrderlyStatus",
    "FlushDiskTimeoutError",
    "FlushDiskType",
    "GetMessageResult",
    "LocalTransactionState",
    "Message",
    "MessageIllegalError",
    "MessageModel",
    "MessageQueue",
    "MessageStore",
    "Producer",
    "PullConsumer",
    "PullResult",
    "PushConsumer",
    "PutMessageResult",
    "RmqConfigWarning",
    "RmqError",
    "SendResult",
    "ServiceNotAvailableError",
    "StoreError",
    "StoredMessage",
    "TransactionProducer",
    "TransactionSendResult",
    "__version__",
    "for_code",
    "load_broker_config",
]


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rmq")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


__version__: str = _package_version()

_NATIVE_EXPORTS = frozenset(
    {
        "GetMessageResult",
        "MessageStore",
        "PullResult",
        "PutMessageResult",
        "SendResult",
        "StoredMessage",
    }
)
# The client (it imports the native module too), loaded on first use as well.
_CLIENT_EXPORTS = frozenset(
    {
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
        "TransactionProducer",
        "TransactionSendResult",
    }
)


def __getattr__(name: str) -> Any:
    """Load the native classes and the client on first use (PEP 562)."""
    if name in _CLIENT_EXPORTS:
        import rmq.client

        value = getattr(rmq.client, name)
        globals()[name] = value
        return value
    if name not in _NATIVE_EXPORTS:
        raise AttributeError(f"module 'rmq' has no attribute {name!r}")
    try:
        from rmq import _rmq
    except ImportError as exc:
        raise ImportError(
            f"rmq.{name} needs rmq's native module (rmq._rmq), which is not built or not "
            "importable; run `make build` in the rmq repository"
        ) from exc
    value = getattr(_rmq, name)
    globals()[name] = value
    return value
