"""The transaction check-back's decisions (``rmq.scheduling.transaction``) over a real store, with
a recording stand-in for the broker server: which halves are checked, skipped, left for later or
discarded, and how the progress moves."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq._rmq import MessageStore
from rmq.scheduling.transaction import (
    CHECK_MAX_TIME_TOPIC,
    CID_SYS_RMQ_TRANS,
    HALF_TOPIC,
    OP_TOPIC,
    TransactionChecker,
    TransactionCheckPolicy,
)

HOUR_MS = 3_600_000


class FakeServer:
    """Producer connections, offsets and topics as the broker server keeps them; records checks."""

    def __init__(self) -> None:
        self.connections: dict[str, list[tuple[int, str, str]]] = {}
        self.dead: set[int] = set()
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.checks: list[tuple[int, int]] = []
        self.topics: list[str] = []
        self.persisted = 0

    def producer_connections(self, group: str) -> list[tuple[int, str, str]]:
        return list(self.connections.get(group, []))

    def check_transaction_state(self, connection_id: int, commit_log_offset: int) -> bool:
        if connection_id in self.dead:
            return False
        self.checks.append((connection_id, commit_log_offset))
        return True

    def query_consumer_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self.offsets.get((group, topic, queue_id), -1)

    def commit_consumer_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.offsets[(group, topic, queue_id)] = offset

    def create_topic_if_absent(self, topic: str, queue_nums: int = 1, perm: int = 6) -> None:
        self.topics.append(topic)

    def persist(self) -> None:
        self.persisted += 1


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    config = {
        "mappedFileSizeCommitLog": "1048576",
        "mappedFileSizeConsumeQueue": "6000",
        "maxHashSlotNum": "64",
        "maxIndexNum": "256",
        "diskSpaceWarningLevelRatio": "99",  # a busy shared /tmp must not refuse test writes
    }
    with MessageStore(str(tmp_path), config) as s:
        yield s


def half(store: MessageStore, uniq: str, born: int, **props: str) -> int:
    """Store a half message as the broker does; returns its queue offset."""
    p = {
        "UNIQ_KEY": uniq,
        "PGROUP": "pg",
        "TRAN_MSG": "true",
        "REAL_TOPIC": "T",
        "REAL_QID": "1",
        **props,
    }
    return store.put_message(HALF_TOPIC, 0, uniq.encode(), p, born_timestamp=born).queue_offset


def op(store: MessageStore, half_offset: int) -> None:
    store.put_message(OP_TOPIC, 0, str(half_offset).encode(), {"TAGS": "d"})


def dispatched(store: MessageStore, topic: str, n: int) -> None:
    deadline = time.monotonic() + 5
    while store.get_max_offset_in_queue(topic, 0) < n:
        assert time.monotonic() < deadline, f"{topic} not dispatched"
        time.sleep(0.005)


def checker(store: MessageStore, server: FakeServer, **policy: int) -> TransactionChecker:
    # The real clock: a round must see the copies it stores as fresh (stored after it began).
    return TransactionChecker(store, server, TransactionCheckPolicy(**policy))


def minute_ago() -> int:
    return time.time_ns() // 1_000_000 - 60_000


def test_old_halves_without_op_records_are_checked_and_restored(store: MessageStore) -> None:
    server = FakeServer()
    server.connections["pg"] = [(1, "c1", "a1"), (2, "c2", "a2")]
    born = minute_ago()
    for i in range(4):
        half(store, f"U{i}", born)
    op(store, 1)  # U1 was committed or rolled back
    dispatched(store, HALF_TOPIC, 4)
    dispatched(store, OP_TOPIC, 1)

    r = checker(store, server).check_once()
    assert r.checked == ["U0", "U2", "U3"] and r.discarded == [] and r.unasked == []
    # Each checked half was stored again, with its count, and the copy was asked about, in turn
    # over the group's connections.
    dispatched(store, HALF_TOPIC, 7)
    copies = store.get_message(HALF_TOPIC, 0, 4, 32).messages
    assert [m.msg_id for m in copies] == ["U0", "U2", "U3"]
    assert {m.properties["TRANSACTION_CHECK_TIMES"] for m in copies} == {"1"}
    assert [off for _, off in server.checks] == [m.commit_log_offset for m in copies]
    assert [conn for conn, _ in server.checks] == [1, 2, 1]
    assert r.half_offset == 4 and r.op_offset == 1
    assert server.offsets[(CID_SYS_RMQ_TRANS, HALF_TOPIC, 0)] == 4
    assert server.persisted == 1

    # Next round: the copies are checked again (count 2), except the one now ended.
    op(store, 5)  # U2's copy
    dispatched(store, OP_TOPIC, 2)
    r = checker(store, server).check_once()
    assert r.checked == ["U0", "U3"]
    dispatched(store, HALF_TOPIC, 9)
    again = store.get_message(HALF_TOPIC, 0, 7, 32).messages
    assert [m.properties["TRANSACTION_CHECK_TIMES"] for m in again] == ["2", "2"]
    assert r.half_offset == 7 and r.op_offset == 2


def test_young_halves_wait_and_so_does_everything_after_them(store: MessageStore) -> None:
    server = FakeServer()
    server.connections["pg"] = [(1, "c1", "a1")]
    now = time.time_ns() // 1_000_000
    half(store, "old", now - 10_000)
    half(store, "young", now)
    half(store, "old-behind", now - 10_000)
    dispatched(store, HALF_TOPIC, 3)
    r = checker(store, server, timeout_ms=6000).check_once()
    assert r.checked == ["old"] and r.half_offset == 1


def test_a_dead_connection_is_skipped_and_no_producer_is_reported(store: MessageStore) -> None:
    server = FakeServer()
    server.connections["pg"] = [(1, "c1", "a1"), (2, "c2", "a2")]
    server.dead = {1}
    born = minute_ago()
    half(store, "A", born)
    half(store, "B", born, PGROUP="gone")
    dispatched(store, HALF_TOPIC, 2)
    r = checker(store, server).check_once()
    assert r.checked == ["A"] and r.unasked == ["B"]
    assert [conn for conn, _ in server.checks] == [2]


def test_checked_too_often_or_expired_is_discarded(store: MessageStore) -> None:
    server = FakeServer()
    server.connections["pg"] = [(1, "c1", "a1")]
    born = minute_ago()
    half(store, "max", born, TRANSACTION_CHECK_TIMES="3")
    half(store, "expired", born - 100 * HOUR_MS)  # fileReservedTime is 72 h
    half(store, "fine", born, TRANSACTION_CHECK_TIMES="2")
    dispatched(store, HALF_TOPIC, 3)
    r = checker(store, server, check_max=3).check_once()
    assert r.discarded == ["max", "expired"] and r.checked == ["fine"]
    dispatched(store, CHECK_MAX_TIME_TOPIC, 2)
    kept = store.get_message(CHECK_MAX_TIME_TOPIC, 0, 0, 32).messages
    assert [m.msg_id for m in kept] == ["max", "expired"]
    assert server.topics == [CHECK_MAX_TIME_TOPIC] * 2


def test_check_immunity_postpones_a_half(store: MessageStore) -> None:
    server = FakeServer()
    server.connections["pg"] = [(1, "c1", "a1")]
    off = half(store, "immune", minute_ago(), CHECK_IMMUNITY_TIME_IN_SECONDS="3600")
    dispatched(store, HALF_TOPIC, 1)
    r = checker(store, server).check_once()
    # Within its immunity: stored again (remembering where it started), not asked about.
    assert r.checked == [] and r.half_offset == 1
    dispatched(store, HALF_TOPIC, 2)
    copy = store.get_message(HALF_TOPIC, 0, 1, 1).messages[0]
    assert copy.properties["TRAN_PREPARED_QUEUE_OFFSET"] == str(off)
    # Once its original is ended, the copy is done: neither copied again nor checked.
    op(store, off)
    dispatched(store, OP_TOPIC, 1)
    r = checker(store, server).check_once()
    assert r.checked == [] and r.half_offset == 2 and server.checks == []
    assert store.get_max_offset_in_queue(HALF_TOPIC, 0) == 2
    assert r.op_offset == 1


def test_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="check_max"):
        TransactionCheckPolicy(check_max=0)
    with pytest.raises(ValueError, match="check_interval_s"):
        TransactionCheckPolicy(check_interval_s=0)
