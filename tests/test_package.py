"""The public surface of the ``rmq`` package."""

from __future__ import annotations

import pytest

import rmq


def test_every_public_name_resolves() -> None:
    for name in rmq.__all__:
        assert getattr(rmq, name) is not None, name


def test_native_classes_are_the_native_modules() -> None:
    from rmq import _rmq

    assert rmq.MessageStore is _rmq.MessageStore
    assert rmq.PutMessageResult is _rmq.PutMessageResult
    assert rmq.__version__ == _rmq.__version__


def test_unknown_attribute() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = rmq.nope  # type: ignore[attr-defined]
