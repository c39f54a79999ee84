"""Rust records reach Python's ``logging`` (crates/rmq-py/src/logging.rs).

A broker server runs in this process over a store in a temp dir; what its Rust code logs
must arrive at a handler on the ``rmq`` logger, under ``rmq.<crate>.<module>``, with the
Python level that matches, and only when that level is enabled. Records reach Python through
one delivery thread, in the order they were logged, so a test waits for a record it expects,
and shows that an earlier one was dropped by waiting for a later one.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq._rmq import (
    BrokerServer,
    MessageStore,
    RemotingClient,
    reset_logging_cache,
)
from rmq.codes import RequestCode, ResponseCode
from test_client import wait_until


class Recorder(logging.Handler):
    """Keeps every record it is handed."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def saying(self, text: str) -> list[logging.LogRecord]:
        return [r for r in self.records if text in r.getMessage()]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A handler on the ``rmq`` logger at INFO; the old level comes back afterwards."""
    logger = logging.getLogger("rmq")
    handler = Recorder()
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    reset_logging_cache()
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        reset_logging_cache()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerServer]:
    store = MessageStore(str(tmp_path / "store"), {"mappedFileSizeCommitLog": "1048576"})
    server = BrokerServer(store, {"brokerAddr": "127.0.0.1:10911"}, "127.0.0.1", 0)
    try:
        yield server
    finally:
        server.shutdown()
        store.shutdown()


def pull_moved_offset(broker: BrokerServer) -> None:
    """A pull at offset 5 of an empty queue: answered PULL_OFFSET_MOVED, which the broker
    logs at debug level before it answers."""
    broker.create_topic_if_absent("LogMoved", 1)
    client = RemotingClient()
    try:
        resp = client.invoke(
            broker.local_addr,
            RequestCode.PULL_MESSAGE,
            {
                "consumerGroup": "log-group",
                "topic": "LogMoved",
                "queueId": "0",
                "queueOffset": "5",
                "maxMsgNums": "32",
                "sysFlag": "4",
                "subscription": "*",
                "commitOffset": "0",
                "suspendTimeoutMillis": "0",
                "subVersion": "0",
            },
        )
    finally:
        client.close()
    assert resp.code == ResponseCode.PULL_OFFSET_MOVED, resp.remark


def send_malformed_frame(broker: BrokerServer) -> None:
    """A frame of 1 byte, shorter than any header: the server logs a warning and closes."""
    host, port = broker.local_addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"\x00\x00\x00\x01")
        assert sock.recv(16) == b""  # closed


def test_a_rust_warning_reaches_a_python_handler_as_warning(
    recorder: Recorder, broker: BrokerServer
) -> None:
    send_malformed_frame(broker)
    wait_until(lambda: recorder.saying("malformed frame") != [], "the warning")
    [warning] = recorder.saying("malformed frame")
    assert warning.levelno == logging.WARNING
    assert warning.name == "rmq.remoting.io"


def test_a_rust_debug_record_is_dropped_at_info_and_kept_at_debug(
    recorder: Recorder, broker: BrokerServer
) -> None:
    pull_moved_offset(broker)
    # The warning, logged after the debug record, arrives after it would have.
    send_malformed_frame(broker)
    wait_until(lambda: recorder.saying("malformed frame") != [], "the warning")
    assert recorder.saying("PULL_OFFSET_MOVED") == []

    logging.getLogger("rmq").setLevel(logging.DEBUG)
    reset_logging_cache()  # the INFO level seen by the first record is cached until now
    pull_moved_offset(broker)
    wait_until(lambda: recorder.saying("PULL_OFFSET_MOVED") != [], "the debug record")
    [moved] = recorder.saying("PULL_OFFSET_MOVED")
    assert moved.levelno == logging.DEBUG
    assert moved.name == "rmq.broker.processor.pull_message"
    assert "topic LogMoved queue 0 requested 5" in moved.getMessage()
