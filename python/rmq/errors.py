"""The one exception tree of rmq.

Everything rmq raises on purpose is an :class:`RmqError`. The native module (``rmq._rmq``)
raises these same classes: it imports this module and calls e.g.
``rmq.errors.MessageIllegalError("topic name is too long")``, so every class takes one
positional message, plus optional ``code`` and ``remark`` keywords.

::

    RmqError
    ├── ConfigError (also a ValueError)   a bad config value; names the key and what is allowed
    ├── StoreError                         an I/O failure in the storage engine
    ├── ClientError                        the client cannot do what was asked (no broker
    │                                      address for a queue, client shut down)
    ├── RemotingError                      no connection (RemotingConnectError) or no answer
    │                                      in time (RemotingTimeoutError)
    └── BrokerResponseError                a RocketMQ response code other than SUCCESS
        ├── BrokerSystemError               1  SYSTEM_ERROR
        ├── SystemBusyError                 2  SYSTEM_BUSY
        ├── ...                                one class per ResponseCode below
        └── SubscriptionGroupNotExistError 26  SUBSCRIPTION_GROUP_NOT_EXIST

:func:`for_code` maps a response code and remark (as a broker sends them) to an instance of the
right class; codes without a class of their own give a plain :class:`BrokerResponseError`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rmq._rmq import ResponseCode

__all__ = [
    "BrokerResponseError",
    "BrokerSystemError",
    "ClientError",
    "ConfigError",
    "FlushDiskTimeoutError",
    "FlushSlaveTimeoutError",
    "MessageIllegalError",
    "NoPermissionError",
    "PullNotFoundError",
    "PullOffsetMovedError",
    "PullRetryImmediatelyError",
    "QueryNotFoundError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingTimeoutError",
    "RequestCodeNotSupportedError",
    "RmqError",
    "ServiceNotAvailableError",
    "SlaveNotAvailableError",
    "StoreError",
    "SubscriptionGroupNotExistError",
    "SubscriptionNotExistError",
    "SubscriptionNotLatestError",
    "SubscriptionParseFailedError",
    "SystemBusyError",
    "TopicExistAlreadyError",
    "TopicNotExistError",
    "TransactionFailedError",
    "VersionNotSupportedError",
    "for_code",
    "for_response",
]


class RmqError(Exception):
    """Base of every error rmq raises on purpose.

    ``code`` is the RocketMQ response code when there is one (``None`` otherwise) and
    ``remark`` the broker's own words (the message itself when not given).
    """

    code: int | None = None
    """RocketMQ response code of this error, when it has one."""

    def __init__(self, message: str = "", *, code: int | None = None, remark: str | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.remark: str = message if remark is None else remark

    @property
    def message(self) -> str:
        """The message the error was raised with."""
        return str(self.args[0]) if self.args else ""


class ConfigError(RmqError, ValueError):
    """A config key or value that cannot be used; the message names the key and the allowed
    values, e.g. ``broker.conf:3: flushDiskType = 'FAST' is not allowed; use ASYNC_FLUSH or
    SYNC_FLUSH``."""

    def __init__(
        self,
        message: str = "",
        *,
        key: str | None = None,
        code: int | None = None,
        remark: str | None = None,
    ):
        super().__init__(message, code=code, remark=remark)
        self.key: str | None = key
        """The offending key, when the error is about one key."""


class StoreError(RmqError):
    """An I/O failure in the storage engine (a file that could not be created, mapped,
    flushed, ...). Data already acknowledged is not affected by it."""


class ClientError(RmqError):
    """The client cannot do what was asked: no known address for a queue's broker, or the
    client was shut down. The message says which."""


class RemotingError(RmqError):
    """A request could not be carried out on the wire (no connection, no response)."""


class RemotingConnectError(RemotingError):
    """The connection could not be made, or closed before the response came. Check that the
    nameserver or broker is running and the address (host:port) is right."""


class RemotingTimeoutError(RemotingError):
    """No response within the timeout. The peer may be overloaded or unreachable."""


class BrokerResponseError(RmqError):
    """A broker answered with a response code other than SUCCESS (0).

    Subclasses are named after RocketMQ's ``ResponseCode`` constants; ``code_name`` is the
    constant's name.
    """

    code_name: ClassVar[str] = "UNKNOWN"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.code is not None:  # the constant's name, from the Rust table
            cls.code_name = ResponseCode(cls.code).name


class BrokerSystemError(BrokerResponseError):
    """SYSTEM_ERROR: the broker failed while handling the request."""

    code = ResponseCode.SYSTEM_ERROR


class SystemBusyError(BrokerResponseError):
    """SYSTEM_BUSY: the broker shed load (page cache busy, request queued too long)."""

    code = ResponseCode.SYSTEM_BUSY


class RequestCodeNotSupportedError(BrokerResponseError):
    """REQUEST_CODE_NOT_SUPPORTED: the peer does not serve this request code."""

    code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class TransactionFailedError(BrokerResponseError):
    """TRANSACTION_FAILED (RemotingSysResponseCode)."""

    code = ResponseCode.TRANSACTION_FAILED


class FlushDiskTimeoutError(BrokerResponseError):
    """FLUSH_DISK_TIMEOUT: stored, but not durable within syncFlushTimeout (SYNC_FLUSH)."""

    code = ResponseCode.FLUSH_DISK_TIMEOUT


class SlaveNotAvailableError(BrokerResponseError):
    """SLAVE_NOT_AVAILABLE: a SYNC_MASTER has no slave to replicate to."""

    code = ResponseCode.SLAVE_NOT_AVAILABLE


class FlushSlaveTimeoutError(BrokerResponseError):
    """FLUSH_SLAVE_TIMEOUT: a SYNC_MASTER's slave did not confirm in time."""

    code = ResponseCode.FLUSH_SLAVE_TIMEOUT


class MessageIllegalError(BrokerResponseError):
    """MESSAGE_ILLEGAL: bad topic name, message too large, properties too long, ..."""

    code = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailableError(BrokerResponseError):
    """SERVICE_NOT_AVAILABLE: store shut down, disk full, slave refusing writes, ..."""

    code = ResponseCode.SERVICE_NOT_AVAILABLE


class VersionNotSupportedError(BrokerResponseError):
    """VERSION_NOT_SUPPORTED: the client's protocol version is not served."""

    code = ResponseCode.VERSION_NOT_SUPPORTED


class NoPermissionError(BrokerResponseError):
    """NO_PERMISSION: the broker or topic does not allow this read or write, or ACL refused
    the request (no or unknown accessKey, a bad signature, a missing permission); the message
    carries the broker's remark. An Apache 4.x broker's ACL refusal (SYSTEM_ERROR with an
    AclException remark) raises this class too, with ``code`` 1."""

    code = ResponseCode.NO_PERMISSION


class TopicNotExistError(BrokerResponseError):
    """TOPIC_NOT_EXIST: no route or config for the topic."""

    code = ResponseCode.TOPIC_NOT_EXIST


class TopicExistAlreadyError(BrokerResponseError):
    """TOPIC_EXIST_ALREADY."""

    code = ResponseCode.TOPIC_EXIST_ALREADY


class PullNotFoundError(BrokerResponseError):
    """PULL_NOT_FOUND: no new message at that offset (yet)."""

    code = ResponseCode.PULL_NOT_FOUND


class PullRetryImmediatelyError(BrokerResponseError):
    """PULL_RETRY_IMMEDIATELY: nothing matched the filter; pull again from the next offset."""

    code = ResponseCode.PULL_RETRY_IMMEDIATELY


class PullOffsetMovedError(BrokerResponseError):
    """PULL_OFFSET_MOVED: the requested offset is outside the queue's range."""

    code = ResponseCode.PULL_OFFSET_MOVED


class QueryNotFoundError(BrokerResponseError):
    """QUERY_NOT_FOUND: no message matched the query."""

    code = ResponseCode.QUERY_NOT_FOUND


class SubscriptionParseFailedError(BrokerResponseError):
    """SUBSCRIPTION_PARSE_FAILED: the subscription expression could not be parsed."""

    code = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class SubscriptionNotExistError(BrokerResponseError):
    """SUBSCRIPTION_NOT_EXIST: the consumer group has no subscription to the topic."""

    code = ResponseCode.SUBSCRIPTION_NOT_EXIST


class SubscriptionNotLatestError(BrokerResponseError):
    """SUBSCRIPTION_NOT_LATEST: the broker holds a newer subscription version."""

    code = ResponseCode.SUBSCRIPTION_NOT_LATEST


class SubscriptionGroupNotExistError(BrokerResponseError):
    """SUBSCRIPTION_GROUP_NOT_EXIST: the consumer group is unknown and not auto-created."""

    code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


_BY_CODE: dict[int, type[BrokerResponseError]] = {
    cls.code: cls
    for cls in (
        BrokerSystemError,
        SystemBusyError,
        RequestCodeNotSupportedError,
        TransactionFailedError,
        FlushDiskTimeoutError,
        SlaveNotAvailableError,
        FlushSlaveTimeoutError,
        MessageIllegalError,
        ServiceNotAvailableError,
        VersionNotSupportedError,
        NoPermissionError,
        TopicNotExistError,
        TopicExistAlreadyError,
        PullNotFoundError,
        PullRetryImmediatelyError,
        PullOffsetMovedError,
        QueryNotFoundError,
        SubscriptionParseFailedError,
        SubscriptionNotExistError,
        SubscriptionNotLatestError,
        SubscriptionGroupNotExistError,
    )
    if cls.code is not None
}


APACHE_ACL_REFUSAL = "org.apache.rocketmq.acl.common.AclException"
"""How Apache RocketMQ 4.x's remarks start when its ACL refuses a request: it answers
SYSTEM_ERROR (1) with the exception's text, where rmq answers NO_PERMISSION (16)."""


def _class_for(code: int, remark: str) -> type[BrokerResponseError]:
    """The class of a response: by code, except that an Apache broker's ACL refusal (a
    SYSTEM_ERROR whose remark is an AclException) is a :class:`NoPermissionError` too, so
    callers catch one class whichever broker refused. The instance keeps the real code."""
    if code == ResponseCode.SYSTEM_ERROR and remark.startswith(APACHE_ACL_REFUSAL):
        return NoPermissionError
    return _BY_CODE.get(code, BrokerResponseError)


def for_code(code: int, remark: str | None = "") -> BrokerResponseError:
    """The error for a broker's response ``code`` and ``remark``.

    Codes with a class of their own give that class; any other non-zero code gives a plain
    :class:`BrokerResponseError` carrying the code. The message is the remark, or the code's
    name when the broker sent no remark.

    >>> err = for_code(13, "the message body size over max value, MAX: 4194304")
    >>> type(err).__name__, err.code
    ('MessageIllegalError', 13)

    Raises ``ValueError`` for 0 (SUCCESS), which is not an error.
    """
    if code == 0:
        raise ValueError("response code 0 is SUCCESS, not an error")
    cls = _class_for(code, remark or "")
    name = cls.code_name if cls is not BrokerResponseError else "response code"
    text = remark or f"{name} ({code})"
    return cls(text, code=code, remark=remark or "")


def for_response(code: int, message: str, remark: str) -> BrokerResponseError:
    """Like :func:`for_code`, with the client's own ``message`` (which names the peer) and the
    broker's ``remark`` kept apart."""
    if code == 0:
        raise ValueError("response code 0 is SUCCESS, not an error")
    return _class_for(code, remark)(message, code=code, remark=remark)
