"""The exception tree (rmq.errors) and the response-code registry."""

from __future__ import annotations

import pickle

import pytest

from rmq import errors
from rmq.errors import (
    BrokerResponseError,
    ConfigError,
    MessageIllegalError,
    PullNotFoundError,
    RmqError,
    StoreError,
    for_code,
)

# RocketMQ's ResponseCode / RemotingSysResponseCode values.
EXPECTED = {
    1: "BrokerSystemError",
    2: "SystemBusyError",
    3: "RequestCodeNotSupportedError",
    4: "TransactionFailedError",
    10: "FlushDiskTimeoutError",
    11: "SlaveNotAvailableError",
    12: "FlushSlaveTimeoutError",
    13: "MessageIllegalError",
    14: "ServiceNotAvailableError",
    15: "VersionNotSupportedError",
    16: "NoPermissionError",
    17: "TopicNotExistError",
    18: "TopicExistAlreadyError",
    19: "PullNotFoundError",
    20: "PullRetryImmediatelyError",
    21: "PullOffsetMovedError",
    22: "QueryNotFoundError",
    23: "SubscriptionParseFailedError",
    24: "SubscriptionNotExistError",
    25: "SubscriptionNotLatestError",
    26: "SubscriptionGroupNotExistError",
}


@pytest.mark.parametrize(("code", "name"), sorted(EXPECTED.items()))
def test_for_code_maps_each_response_code(code: int, name: str) -> None:
    err = for_code(code, "why")
    assert type(err).__name__ == name
    assert type(err) is getattr(errors, name)
    assert err.code == code
    assert err.remark == "why"
    assert str(err) == "why"
    assert isinstance(err, BrokerResponseError)


def test_for_code_unknown_code_and_empty_remark() -> None:
    err = for_code(999, "")
    assert type(err) is BrokerResponseError
    assert err.code == 999
    assert str(err) == "response code (999)"
    assert str(for_code(19, "")) == "PULL_NOT_FOUND (19)"


def test_for_code_refuses_success() -> None:
    with pytest.raises(ValueError, match="SUCCESS"):
        for_code(0, "")


def test_every_class_takes_one_positional_message() -> None:
    # The native module raises e.g. rmq.errors.MessageIllegalError("topic too long").
    for name in errors.__all__:
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, RmqError):
            err = cls("boom")
            assert str(err) == "boom"
            assert err.message == "boom"
            assert err.remark == "boom"


def test_class_codes_and_keyword_overrides() -> None:
    assert MessageIllegalError("x").code == 13
    assert StoreError("x").code is None
    assert RmqError("x", code=7, remark="r").code == 7
    assert ConfigError("x", key="listenPort").key == "listenPort"


def test_tree_shape() -> None:
    assert issubclass(ConfigError, ValueError)
    assert issubclass(ConfigError, RmqError)
    assert issubclass(StoreError, RmqError)
    assert not issubclass(StoreError, BrokerResponseError)
    assert issubclass(PullNotFoundError, BrokerResponseError)


def test_errors_pickle_with_their_attributes() -> None:
    err = pickle.loads(pickle.dumps(for_code(13, "too large")))
    assert type(err) is MessageIllegalError
    assert (str(err), err.code, err.remark) == ("too large", 13, "too large")
    cfg = pickle.loads(pickle.dumps(ConfigError("bad", key="brokerId")))
    assert cfg.key == "brokerId"
