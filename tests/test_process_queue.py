"""``ProcessQueue`` keeps the offset a push consumer may commit exact while its offsets leave
lazily: the lowest offset still in flight, however batches finish, and the queue order that
orderly consumption takes, rolls back and commits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from rmq._rmq import StoredMessage
from rmq.client._process_queue import ProcessQueue


@dataclass(frozen=True)
class Msg:
    """What ProcessQueue reads of a message."""

    queue_offset: int
    body_size: int = 10


def msgs(*offsets: int) -> list[StoredMessage]:
    return [cast(StoredMessage, Msg(o)) for o in offsets]


def test_the_commit_offset_is_the_lowest_in_flight_whatever_finishes_first() -> None:
    pq = ProcessQueue()
    pq.put(msgs(0, 1, 2, 3, 4, 5))
    assert (pq.count, pq.size_bytes, pq.max_span) == (6, 60, 5)
    assert pq.remove(msgs(3, 4)) == 0
    assert pq.remove(msgs(1)) == 0
    assert pq.max_span == 5
    assert pq.remove(msgs(0)) == 2
    assert pq.remove(msgs(5)) == 2
    assert pq.max_span == 0 and pq.cached_offsets() == [2]
    pq.put(msgs(6, 7))
    assert pq.cached_offsets() == [2, 6, 7] and pq.max_span == 5
    assert pq.remove(msgs(2)) == 6
    assert pq.remove(msgs(6, 7)) == 8  # empty: one past the highest ever held
    assert (pq.count, pq.size_bytes) == (0, 0)
    assert pq.remove(msgs(7)) == 8  # removing twice changes nothing


def test_messages_put_again_or_out_of_order_keep_one_place() -> None:
    pq = ProcessQueue()
    pq.put(msgs(10, 11, 12))
    pq.put(msgs(11, 12, 13))  # a pull repeated: only 13 is new
    assert pq.count == 4 and pq.size_bytes == 40
    pq.remove(msgs(10, 11))
    pq.put(msgs(11, 5))  # below what is held (a reset): still ordered
    assert pq.cached_offsets() == [5, 11, 12, 13]
    assert pq.remove(msgs(5)) == 11
    assert pq.remove(msgs(11, 12)) == 13


def test_orderly_take_rollback_commit_follow_the_queue_order() -> None:
    pq = ProcessQueue()
    pq.put(msgs(0, 1, 2, 3, 4))
    first = pq.take(2)
    assert [m.queue_offset for m in first] == [0, 1]
    pq.rollback()
    assert [m.queue_offset for m in pq.take(3)] == [0, 1, 2]
    assert pq.commit() == 3
    assert [m.queue_offset for m in pq.take(10)] == [3, 4]
    assert pq.count == 2 and pq.commit() == 5
    assert pq.count == 0 and pq.size_bytes == 0 and pq.commit() == -1
