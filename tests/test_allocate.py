"""Queue allocation strategies: exact RocketMQ 4.9 results, argument checks, invariants.

The tables were worked out by hand from the Java algorithms; the CONSISTENT_HASH table was
also checked against rocketmq-client 4.9.8's own ``AllocateMessageQueueConsistentHash``, and
the ring is recomputed here independently with hashlib.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmq.client.allocate import (
    STRATEGY_NAMES,
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
    ConsistentHashRouter,
    md5_hash,
    strategy_by_name,
)
from rmq.client.message_queue import MessageQueue
from rmq.errors import ConfigError

GROUP = "CG"


def queues(n: int, broker: str = "broker-a", topic: str = "TopicTest") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(n)]


def consumers(n: int) -> list[str]:
    return [f"cid-{i:02d}" for i in range(n)]


def shares(
    strategy: AllocateMessageQueueStrategy,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
) -> dict[str, list[MessageQueue]]:
    """Every consumer's share, as each consumer of the group computes it for itself."""
    return {cid: strategy.allocate(GROUP, cid, mq_all, cid_all) for cid in set(cid_all)}


def assert_each_queue_once(
    by_cid: dict[str, list[MessageQueue]], expected: Sequence[MessageQueue]
) -> None:
    flat = [mq for share in by_cid.values() for mq in share]
    assert sorted(flat) == sorted(set(expected))


def room_of(name: str) -> str:
    return name.split("@")[0]


def nearby(inner: AllocateMessageQueueStrategy) -> AllocateMachineRoomNearby:
    return AllocateMachineRoomNearby(
        inner,
        broker_room=lambda mq: room_of(mq.broker_name),
        consumer_room=room_of,
    )


# --- AVG and AVG_BY_CIRCLE ------------------------------------------------------------------

AVG_TABLE = [
    # (queues, consumers, queue ids of each consumer in sorted order)
    (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
    (10, 4, [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]),
    (7, 2, [[0, 1, 2, 3], [4, 5, 6]]),
    (4, 4, [[0], [1], [2], [3]]),
    (3, 5, [[0], [1], [2], [], []]),
    (1, 1, [[0]]),
    (6, 1, [[0, 1, 2, 3, 4, 5]]),
    (9, 3, [[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
]

AVG_BY_CIRCLE_TABLE = [
    (8, 3, [[0, 3, 6], [1, 4, 7], [2, 5]]),
    (10, 4, [[0, 4, 8], [1, 5, 9], [2, 6], [3, 7]]),
    (7, 2, [[0, 2, 4, 6], [1, 3, 5]]),
    (3, 5, [[0], [1], [2], [], []]),
    (1, 1, [[0]]),
]


@pytest.mark.parametrize(
    ("strategy", "n_queues", "n_consumers", "expected"),
    [(AllocateMessageQueueAveragely(), *row) for row in AVG_TABLE]
    + [(AllocateMessageQueueAveragelyByCircle(), *row) for row in AVG_BY_CIRCLE_TABLE],
)
def test_avg_tables(
    strategy: AllocateMessageQueueStrategy,
    n_queues: int,
    n_consumers: int,
    expected: list[list[int]],
) -> None:
    mq_all, cid_all = queues(n_queues), consumers(n_consumers)
    # Given reversed, as Java's RebalanceImpl would never pass them: the strategy sorts.
    got = [
        [mq.queue_id for mq in strategy.allocate(GROUP, cid, mq_all[::-1], cid_all[::-1])]
        for cid in cid_all
    ]
    assert got == expected


def test_queues_sort_by_topic_then_broker_then_queue_id() -> None:
    mq_all = [
        MessageQueue("B", "broker-a", 0),
        MessageQueue("A", "broker-b", 0),
        MessageQueue("A", "broker-a", 10),
        MessageQueue("A", "broker-a", 2),
    ]
    got = AllocateMessageQueueAveragely().allocate(GROUP, "c1", mq_all, ["c2", "c1"])
    assert got == [MessageQueue("A", "broker-a", 2), MessageQueue("A", "broker-a", 10)]


def test_sorting_is_javas_utf16_order() -> None:
    # Java's String.compareTo compares UTF-16 code units: U+1F600 (surrogates D83D DE00)
    # sorts before U+FF21, the reverse of code point order.
    emoji, fullwidth_a = "\U0001f600", "\uff21"
    avg = AllocateMessageQueueAveragely()
    mq_all = queues(2)
    assert avg.allocate(GROUP, emoji, mq_all, [fullwidth_a, emoji]) == [mq_all[0]]
    mixed = [MessageQueue(fullwidth_a, "b", 0), MessageQueue(emoji, "b", 0)]
    assert avg.allocate(GROUP, "c1", mixed, ["c1", "c2"]) == [mixed[1]]


def test_duplicates_are_ignored() -> None:
    mq_all, cid_all = queues(4), consumers(2)
    avg = AllocateMessageQueueAveragely()
    got = avg.allocate(GROUP, cid_all[1], mq_all + mq_all[:3], cid_all + cid_all[1:])
    assert got == mq_all[2:]


# --- CONSISTENT_HASH --------------------------------------------------------------------------


def ref_hash(key: str) -> int:
    return int(hashlib.md5(key.encode()).hexdigest()[:8], 16)


def ref_owner(mq: MessageQueue, cid_all: Sequence[str], virtual_nodes: int = 10) -> str:
    """The consumer that RocketMQ's MD5 ring gives ``mq`` to, by brute force."""
    points = {ref_hash(f"{cid}-{i}"): cid for cid in set(cid_all) for i in range(virtual_nodes)}
    assert len(points) == len(set(cid_all)) * virtual_nodes, "hash collision in test data"
    key = ref_hash(
        f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"
    )
    at_or_after = [p for p in points if p >= key]
    return points[min(at_or_after) if at_or_after else min(points)]


def test_md5_hash_is_first_four_digest_bytes_big_endian() -> None:
    assert md5_hash("") == 0xD41D8CD9  # md5("") = d41d8cd98f00b204...
    assert md5_hash("abc") == 0x90015098  # md5("abc") = 900150983cd24fb0...
    assert md5_hash("é") == int.from_bytes(hashlib.md5(b"\xc3\xa9").digest()[:4], "big")
    assert md5_hash("\ud800") == md5_hash("?")  # a lone surrogate, as Java's getBytes()
    for key in ("192.168.0.1@1001-0", "cid-7-9", "MessageQueue [topic=T, brokerName=b, queueId=0]"):
        assert md5_hash(key) == ref_hash(key)
        assert 0 <= md5_hash(key) < 2**32


CID3 = ["192.168.0.1@1001", "192.168.0.2@1002", "192.168.0.3@1003"]
AB8 = queues(4, "broker-a") + queues(4, "broker-b")


def ab(*names: str) -> list[MessageQueue]:
    """``"a2"`` is queue 2 of broker-a."""
    return [MessageQueue("TopicTest", f"broker-{n[0]}", int(n[1:])) for n in names]


# Checked against rocketmq-client 4.9.8 (AllocateMessageQueueConsistentHash).
CONSISTENT_HASH_TABLE = [
    (10, CID3, [ab("a2", "b0", "b1"), [], ab("a0", "a1", "a3", "b2", "b3")]),
    (1, CID3, [[], ab("b0"), ab("a0", "a1", "a2", "a3", "b1", "b2", "b3")]),
    (10, CID3[:2], [ab("a1", "a2", "b0", "b1", "b3"), ab("a0", "a3", "b2")]),
    (10, CID3[:1], [AB8]),
]


@pytest.mark.parametrize(("virtual_nodes", "cid_all", "expected"), CONSISTENT_HASH_TABLE)
def test_consistent_hash_table(
    virtual_nodes: int, cid_all: list[str], expected: list[list[MessageQueue]]
) -> None:
    strategy = AllocateMessageQueueConsistentHash(virtual_nodes)
    got = [strategy.allocate(GROUP, cid, AB8[::-1], cid_all[::-1]) for cid in cid_all]
    assert got == expected
    for cid, share in zip(cid_all, got, strict=True):
        assert all(ref_owner(mq, cid_all, virtual_nodes) == cid for mq in share)


@pytest.mark.parametrize("n_consumers", [2, 3, 5, 8])
def test_consistent_hash_matches_independent_ring(n_consumers: int) -> None:
    mq_all = queues(16, "broker-a") + queues(16, "broker-b") + queues(8, "broker-a", "Other")
    cid_all = consumers(n_consumers)
    by_cid = shares(AllocateMessageQueueConsistentHash(), mq_all, cid_all)
    assert by_cid == {
        cid: sorted(mq for mq in mq_all if ref_owner(mq, cid_all) == cid) for cid in cid_all
    }


def test_consistent_hash_without_virtual_nodes_allocates_nothing() -> None:
    strategy = AllocateMessageQueueConsistentHash(0)
    assert strategy.allocate(GROUP, "c1", queues(4), ["c1"]) == []


def test_consistent_hash_custom_hash_function() -> None:
    # Every point and key hashes to 0: the last point put on the ring wins (TreeMap.put).
    strategy = AllocateMessageQueueConsistentHash(3, hash_function=lambda key: 0)
    assert strategy.allocate(GROUP, "b", queues(3), ["b", "a"]) == queues(3)
    assert strategy.allocate(GROUP, "a", queues(3), ["b", "a"]) == []


def test_consistent_hash_rejects_negative_virtual_node_count() -> None:
    with pytest.raises(ValueError, match="virtual_node_count -1"):
        AllocateMessageQueueConsistentHash(-1)


def test_router_ring_semantics() -> None:
    points = {"a-0": 100, "a-1": 300, "b-0": 200, "b-1": 400}
    router = ConsistentHashRouter(
        ["a", "b"], 2, lambda key: points[key] if key in points else int(key)
    )
    assert len(router) == 4
    assert [router.route(str(h)) for h in (0, 100, 101, 200, 250, 300, 400, 401)] == [
        "a",  # at or after 0: 100
        "a",  # exactly on a point
        "b",
        "b",
        "a",
        "a",
        "b",
        "a",  # past the last point: wraps round to the first
    ]
    assert ConsistentHashRouter(["a"], 0).route("x") is None
    with pytest.raises(ValueError, match="illegal virtual node count"):
        ConsistentHashRouter(["a"], -1)


def test_router_numbers_repeated_nodes_on() -> None:
    seen: list[str] = []

    def record(key: str) -> int:
        seen.append(key)
        return len(seen)

    ConsistentHashRouter(["a", "b", "a"], 2, record)
    assert seen == ["a-0", "a-1", "b-0", "b-1", "a-2", "a-3"]


# --- MACHINE_ROOM and MACHINE_ROOM_NEARBY ----------------------------------------------------


def test_machine_room_table() -> None:
    mq_all = [
        *queues(4, "r1@b1"),
        *queues(4, "r2@b2"),
        *queues(2, "r3@b3"),  # room not consumed here
        *queues(1, "bad"),  # no room
        *queues(1, "a@b@c"),  # three parts
    ]
    strategy = AllocateMessageQueueByMachineRoom({"r1", "r2"})
    # 8 eligible queues, 3 consumers: 2 contiguous each, the 2 left over to the first two.
    got = shares(strategy, mq_all[::-1], ["c2", "c0", "c1"])
    assert got == {
        "c0": [*queues(4, "r1@b1")[0:2], queues(4, "r2@b2")[2]],
        "c1": [*queues(4, "r1@b1")[2:4], queues(4, "r2@b2")[3]],
        "c2": queues(4, "r2@b2")[0:2],
    }


def test_machine_room_splits_broker_names_like_java() -> None:
    # Java's "x".split("@") drops trailing empty strings: "r1@x@" is room r1, "r1@" and
    # "r1@@" have one part, "@r1" is room "".
    mq_all = [MessageQueue("T", name, 0) for name in ("r1@", "r1@x@", "@r1", "r1@@")]
    mq_all += queues(2, "r1@y")
    strategy = AllocateMessageQueueByMachineRoom(["r1"])
    assert shares(strategy, mq_all, ["c0", "c1"]) == {
        "c0": [MessageQueue("T", "r1@x@", 0), MessageQueue("TopicTest", "r1@y", 1)],
        "c1": [MessageQueue("TopicTest", "r1@y", 0)],
    }


def test_machine_room_with_no_eligible_queue() -> None:
    strategy = AllocateMessageQueueByMachineRoom({"r9"})
    assert strategy.allocate(GROUP, "c0", queues(3, "r1@b"), ["c0"]) == []


def test_machine_room_wants_a_collection_of_rooms() -> None:
    with pytest.raises(TypeError, match="not the str"):
        AllocateMessageQueueByMachineRoom("r1")


NEARBY_QUEUES = queues(4, "r1@b") + queues(3, "r2@b")


def in_room(room: str, *ids: int) -> list[MessageQueue]:
    return [MessageQueue("TopicTest", f"{room}@b", i) for i in ids]


@pytest.mark.parametrize(
    ("inner", "cid_all", "expected"),
    [
        # r1's queues stay in r1 (one consumer there); r2 has no consumer, so its queues are
        # shared by the whole group; r3 has consumers but no brokers.
        (
            AllocateMessageQueueAveragely(),
            ["r1@a", "r3@a", "r3@b"],
            {
                "r1@a": [*queues(4, "r1@b"), queues(3, "r2@b")[0]],
                "r3@a": [queues(3, "r2@b")[1]],
                "r3@b": [queues(3, "r2@b")[2]],
            },
        ),
        (
            AllocateMessageQueueAveragelyByCircle(),
            ["r1@a", "r1@b", "r3@a"],
            {
                "r1@a": [*in_room("r1", 0, 2), *in_room("r2", 0)],
                "r1@b": [*in_room("r1", 1, 3), *in_room("r2", 1)],
                "r3@a": in_room("r2", 2),
            },
        ),
    ],
)
def test_machine_room_nearby_table(
    inner: AllocateMessageQueueStrategy,
    cid_all: list[str],
    expected: dict[str, list[MessageQueue]],
) -> None:
    strategy = nearby(inner)
    assert strategy.name == f"MACHINE_ROOM_NEARBY-{inner.name}"
    assert shares(strategy, NEARBY_QUEUES[::-1], cid_all[::-1]) == expected


def test_machine_room_nearby_needs_a_room_for_everything() -> None:
    strategy = nearby(AllocateMessageQueueAveragely())
    with pytest.raises(ValueError, match="machine room is empty for MessageQueue"):
        strategy.allocate(GROUP, "r1@a", [MessageQueue("T", "@b", 0)], ["r1@a"])
    with pytest.raises(ValueError, match="machine room is empty for consumer id @a"):
        strategy.allocate(GROUP, "r1@a", queues(1, "r1@b"), ["r1@a", "@a"])


# --- CONFIG -----------------------------------------------------------------------------------


def test_config_returns_its_fixed_list() -> None:
    fixed = [MessageQueue("T", "b", 3), MessageQueue("T", "a", 1), MessageQueue("T", "b", 3)]
    strategy = AllocateMessageQueueByConfig(fixed)
    assert strategy.name == "CONFIG"
    expected = [MessageQueue("T", "a", 1), MessageQueue("T", "b", 3)]
    assert strategy.allocate(GROUP, "c1", queues(8), consumers(3)) == expected
    # Like RocketMQ's, it neither checks nor reads its arguments.
    assert strategy.allocate("", "", [], []) == expected
    got = strategy.allocate(GROUP, "c1", [], [])
    got.clear()
    assert strategy.message_queues == expected


def test_config_wants_message_queues() -> None:
    with pytest.raises(TypeError, match="MessageQueue objects"):
        AllocateMessageQueueByConfig(["T"])  # type: ignore[list-item]


# --- argument checks ---------------------------------------------------------------------------

CHECKED: list[AllocateMessageQueueStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
    AllocateMessageQueueByMachineRoom({"r1"}),
    nearby(AllocateMessageQueueAveragely()),
]


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.name)
@pytest.mark.parametrize(
    ("current", "mq_all", "cid_all", "message"),
    [
        ("", queues(1, "r1@b"), ["r1@a"], "current_cid is empty"),
        ("r1@a", [], ["r1@a"], "mq_all is empty"),
        ("r1@a", queues(1, "r1@b"), [], "cid_all is empty"),
    ],
)
def test_empty_arguments_are_rejected(
    strategy: AllocateMessageQueueStrategy,
    current: str,
    mq_all: list[MessageQueue],
    cid_all: list[str],
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        strategy.allocate(GROUP, current, mq_all, cid_all)


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.name)
def test_consumer_outside_the_group_gets_nothing_and_a_warning(
    strategy: AllocateMessageQueueStrategy, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="rmq.client.rebalance"):
        got = strategy.allocate(GROUP, "r1@stranger", queues(4, "r1@b"), ["r1@a", "r1@b"])
    assert got == []
    [record] = caplog.records
    assert record.name == "rmq.client.rebalance"
    assert record.levelno == logging.WARNING
    text = record.getMessage()
    assert GROUP in text
    assert "r1@stranger" in text
    assert "not in the group's consumer list" in text


def test_cid_all_must_not_be_a_string() -> None:
    with pytest.raises(TypeError, match="not a str"):
        AllocateMessageQueueAveragely().allocate(GROUP, "c", queues(1), "c")


# --- names and strategy_by_name ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kwargs", "cls"),
    [
        ("AVG", {}, AllocateMessageQueueAveragely),
        ("AVG_BY_CIRCLE", {}, AllocateMessageQueueAveragelyByCircle),
        ("CONSISTENT_HASH", {}, AllocateMessageQueueConsistentHash),
        ("CONSISTENT_HASH", {"virtual_node_count": 3}, AllocateMessageQueueConsistentHash),
        ("CONFIG", {"message_queues": queues(2)}, AllocateMessageQueueByConfig),
        ("MACHINE_ROOM", {"consumer_idcs": ["r1"]}, AllocateMessageQueueByMachineRoom),
    ],
)
def test_strategy_by_name(name: str, kwargs: dict[str, object], cls: type[object]) -> None:
    strategy = strategy_by_name(name, **kwargs)
    assert isinstance(strategy, cls)
    assert strategy.name == name
    assert name in STRATEGY_NAMES


def test_strategy_by_name_options_reach_the_strategy() -> None:
    strategy = strategy_by_name("CONSISTENT_HASH", virtual_node_count=3)
    assert isinstance(strategy, AllocateMessageQueueConsistentHash)
    assert strategy.virtual_node_count == 3
    assert AllocateMessageQueueConsistentHash().virtual_node_count == 10


def test_strategy_by_name_nearby() -> None:
    rooms: dict[str, Callable[..., str]] = {
        "broker_room": lambda mq: room_of(mq.broker_name),
        "consumer_room": room_of,
    }
    by_suffix = strategy_by_name(
        "MACHINE_ROOM_NEARBY-CONSISTENT_HASH", virtual_node_count=4, **rooms
    )
    assert isinstance(by_suffix, AllocateMachineRoomNearby)
    assert by_suffix.name == "MACHINE_ROOM_NEARBY-CONSISTENT_HASH"
    assert isinstance(by_suffix.inner, AllocateMessageQueueConsistentHash)
    assert by_suffix.inner.virtual_node_count == 4
    for inner in ("AVG_BY_CIRCLE", AllocateMessageQueueAveragelyByCircle()):
        by_option = strategy_by_name("MACHINE_ROOM_NEARBY", inner=inner, **rooms)
        assert by_option.name == "MACHINE_ROOM_NEARBY-AVG_BY_CIRCLE"


@pytest.mark.parametrize(
    ("name", "kwargs", "message"),
    [
        ("avg", {}, "unknown allocate message queue strategy 'avg'; use one of AVG, "),
        ("ROUND_ROBIN", {}, "AVG_BY_CIRCLE, CONSISTENT_HASH, CONFIG, MACHINE_ROOM"),
        ("ROUND_ROBIN", {}, "MACHINE_ROOM_NEARBY-<one of these>"),
        ("MACHINE_ROOM_NEARBY-FOO", {"broker_room": str, "consumer_room": str}, "'FOO'"),
        ("CONFIG", {}, "CONFIG needs option\\(s\\) message_queues"),
        ("MACHINE_ROOM", {}, "needs option\\(s\\) consumer_idcs"),
        ("AVG", {"virtual_node_count": 3}, "AVG has no option\\(s\\) virtual_node_count; its"),
        ("CONSISTENT_HASH", {"virtual_node_count": -1}, "illegal virtual_node_count -1"),
        ("CONSISTENT_HASH", {"virtual_node_count": "10"}, "must be an int"),
        ("MACHINE_ROOM", {"consumer_idcs": "r1"}, "not the str 'r1'"),
        ("MACHINE_ROOM_NEARBY-AVG", {}, "needs option\\(s\\) broker_room, consumer_room"),
        ("MACHINE_ROOM_NEARBY", {"broker_room": str, "consumer_room": str}, "inner"),
        (
            "MACHINE_ROOM_NEARBY-AVG",
            {"broker_room": str, "consumer_room": str, "inner": "AVG"},
            "drop the inner option",
        ),
        (
            "MACHINE_ROOM_NEARBY",
            {"broker_room": str, "consumer_room": str, "inner": 3},
            "inner must be an AllocateMessageQueueStrategy",
        ),
    ],
)
def test_strategy_by_name_errors(name: str, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        strategy_by_name(name, **kwargs)
    assert isinstance(info.value, ValueError)


# --- properties ---------------------------------------------------------------------------------

ROOMS = ["r1", "r2", "r3", "\U0001f600"]
names = st.text(st.characters(codec="utf-8", exclude_characters="@"), min_size=1, max_size=6)
plain_queue = st.builds(
    MessageQueue,
    st.sampled_from(["TopicTest", "%RETRY%CG", "\uff21", "\U0001f600"]),
    st.sampled_from(["broker-a", "broker-b", "b\u00e9", "\U0001f600"]),
    st.integers(0, 15),
)
room_queue = st.builds(
    MessageQueue,
    st.sampled_from(["TopicTest", "Other"]),
    st.builds(lambda room, name: f"{room}@{name}", st.sampled_from(ROOMS), names),
    st.integers(0, 7),
)
plain_cids = st.lists(names, min_size=1, max_size=10)
room_cids = st.lists(
    st.builds(lambda room, name: f"{room}@{name}", st.sampled_from(ROOMS), names),
    min_size=1,
    max_size=10,
)
partitioning = st.sampled_from(
    [
        AllocateMessageQueueAveragely(),
        AllocateMessageQueueAveragelyByCircle(),
        AllocateMessageQueueConsistentHash(),
        AllocateMessageQueueConsistentHash(1),
        AllocateMessageQueueConsistentHash(3),
    ]
)


@given(partitioning, st.lists(plain_queue, min_size=1, max_size=40), plain_cids)
def test_every_queue_goes_to_exactly_one_consumer(
    strategy: AllocateMessageQueueStrategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    assert_each_queue_once(shares(strategy, mq_all, cid_all), mq_all)


@given(st.lists(room_queue, min_size=1, max_size=40), plain_cids)
def test_machine_room_shares_every_queue_when_every_room_is_consumed(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    strategy = AllocateMessageQueueByMachineRoom({room_of(mq.broker_name) for mq in mq_all})
    assert_each_queue_once(shares(strategy, mq_all, cid_all), mq_all)


@given(
    st.lists(room_queue, min_size=1, max_size=40),
    plain_cids,
    st.sets(st.sampled_from(ROOMS)),
)
def test_machine_room_shares_exactly_the_queues_of_its_rooms(
    mq_all: list[MessageQueue], cid_all: list[str], idcs: set[str]
) -> None:
    strategy = AllocateMessageQueueByMachineRoom(idcs)
    eligible = [mq for mq in mq_all if room_of(mq.broker_name) in idcs]
    assert_each_queue_once(shares(strategy, mq_all, cid_all), eligible)


@given(partitioning, st.lists(room_queue, min_size=1, max_size=40), room_cids)
def test_machine_room_nearby_shares_every_queue(
    inner: AllocateMessageQueueStrategy, mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    by_cid = shares(nearby(inner), mq_all, cid_all)
    assert_each_queue_once(by_cid, mq_all)
    consumer_rooms = {room_of(cid) for cid in cid_all}
    for cid, share in by_cid.items():
        for mq in share:
            room = room_of(mq.broker_name)
            assert room == room_of(cid) or room not in consumer_rooms


EVERY_STRATEGY: list[AllocateMessageQueueStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
    AllocateMessageQueueByMachineRoom({"r1", "r3"}),
    nearby(AllocateMessageQueueAveragely()),
    nearby(AllocateMessageQueueConsistentHash()),
]


@given(
    st.sampled_from(EVERY_STRATEGY),
    st.lists(room_queue, min_size=1, max_size=30),
    room_cids,
    st.data(),
)
def test_results_do_not_depend_on_input_order_or_repeats(
    strategy: AllocateMessageQueueStrategy,
    mq_all: list[MessageQueue],
    cid_all: list[str],
    data: st.DataObject,
) -> None:
    mq_again = data.draw(st.permutations(mq_all + data.draw(st.lists(st.sampled_from(mq_all)))))
    cid_again = data.draw(st.permutations(cid_all + data.draw(st.lists(st.sampled_from(cid_all)))))
    assert shares(strategy, mq_again, cid_again) == shares(strategy, mq_all, cid_all)


@given(st.lists(plain_queue, min_size=1, max_size=60), plain_cids)
def test_avg_loads_differ_by_at_most_one_and_blocks_are_contiguous(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    by_cid = shares(AllocateMessageQueueAveragely(), mq_all, cid_all)
    loads = [len(share) for share in by_cid.values()]
    assert max(loads) - min(loads) <= 1
    ordered = [
        mq for cid in sorted(by_cid, key=lambda c: c.encode("utf-16-be")) for mq in by_cid[cid]
    ]
    assert len(ordered) == len(set(mq_all))
    assert ordered == sorted(
        set(mq_all),
        key=lambda mq: (
            mq.topic.encode("utf-16-be"),
            mq.broker_name.encode("utf-16-be"),
            mq.queue_id,
        ),
    )


@given(st.lists(plain_queue, min_size=1, max_size=40), st.lists(names, min_size=1, max_size=8))
def test_consistent_hash_agrees_with_the_independent_ring(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    by_cid = shares(AllocateMessageQueueConsistentHash(), mq_all, cid_all)
    for cid, share in by_cid.items():
        assert set(share) == {mq for mq in mq_all if ref_owner(mq, cid_all) == cid}


@given(
    st.lists(plain_queue, min_size=1, max_size=40),
    st.lists(names, min_size=2, max_size=8, unique=True),
)
def test_consistent_hash_moves_only_the_leaving_consumers_queues(
    mq_all: list[MessageQueue], cid_all: list[str]
) -> None:
    strategy = AllocateMessageQueueConsistentHash()
    before = shares(strategy, mq_all, cid_all)
    leaving = sorted(set(cid_all))[0]
    after = shares(strategy, mq_all, [cid for cid in cid_all if cid != leaving])
    for cid, share in after.items():
        assert set(before[cid]) <= set(share)
