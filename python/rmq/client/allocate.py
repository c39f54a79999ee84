"""Queue allocation strategies for consumer rebalance, as RocketMQ 4.9's Java client has them.

Rebalance has no coordinator: every consumer of a clustering group fetches the group's
consumer ids and the topic's queues, and works out on its own which queues are its share. That
only works if every member runs the same function on the same inputs, so a Python consumer
in a group with Java consumers has to compute exactly what the Java client's
``AllocateMessageQueue*`` classes compute, or queues are consumed twice or not at all. This
module is that arithmetic, bit for bit (including the MD5 ring of the consistent-hash
strategy), written anew in Python.

One difference on purpose: Java's ``RebalanceImpl`` sorts both lists before it calls a
strategy; here every strategy sorts and deduplicates its inputs itself (in Java's
``String.compareTo`` order), so the result does not depend on the order or repetition of the
lists it is given. Arguments are checked as RocketMQ checks them: an empty ``current_cid``,
``mq_all`` or ``cid_all`` raises :class:`ValueError`; a ``current_cid`` that is not in
``cid_all`` gets no queues, with a warning on the ``rmq.client.rebalance`` logger. (``CONFIG``,
like RocketMQ's, checks nothing: it always gives its fixed list.)

>>> mqs = [MessageQueue("T", "broker-a", i) for i in range(8)]
>>> mine = AllocateMessageQueueAveragely().allocate("G", "c2", mqs, ["c2", "c1"])
>>> [mq.queue_id for mq in mine]
[4, 5, 6, 7]
"""

from __future__ import annotations

import hashlib
import logging
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rmq.client.message_queue import MessageQueue
from rmq.errors import ConfigError

__all__ = [
    "STRATEGY_NAMES",
    "AllocateMachineRoomNearby",
    "AllocateMessageQueueAveragely",
    "AllocateMessageQueueAveragelyByCircle",
    "AllocateMessageQueueByConfig",
    "AllocateMessageQueueByMachineRoom",
    "AllocateMessageQueueConsistentHash",
    "AllocateMessageQueueStrategy",
    "ConsistentHashRouter",
    "md5_hash",
    "strategy_by_name",
]

log = logging.getLogger("rmq.client.rebalance")

STRATEGY_NAMES: tuple[str, ...] = (
    "AVG",
    "AVG_BY_CIRCLE",
    "CONSISTENT_HASH",
    "CONFIG",
    "MACHINE_ROOM",
    "MACHINE_ROOM_NEARBY",
)
"""The names :func:`strategy_by_name` knows; ``MACHINE_ROOM_NEARBY`` also as
``MACHINE_ROOM_NEARBY-<inner name>``."""

_NEARBY = "MACHINE_ROOM_NEARBY"


def _java_key(text: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units, not code points)."""
    return text.encode("utf-16-be", "surrogatepass")


def _mq_key(mq: MessageQueue) -> tuple[bytes, bytes, int]:
    """Sort key giving Java's ``MessageQueue.compareTo`` order: topic, broker name, queue id."""
    return _java_key(mq.topic), _java_key(mq.broker_name), mq.queue_id


def _sorted_queues(mqs: Iterable[MessageQueue]) -> list[MessageQueue]:
    return sorted(set(mqs), key=_mq_key)


def _sorted_cids(cids: Iterable[str]) -> list[str]:
    return sorted(set(cids), key=_java_key)


class AllocateMessageQueueStrategy(ABC):
    """How a consumer group's queues are shared among its consumers (RocketMQ's interface of the
    same name).

    :meth:`allocate` is called by every consumer of the group with its own ``current_cid`` and
    the same ``mq_all`` and ``cid_all``; it returns that consumer's share.
    """

    @property
    @abstractmethod
    def name(self) -> str:
        """RocketMQ's name of the strategy, e.g. ``"AVG"``."""

    @abstractmethod
    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """The queues of ``mq_all`` that consumer ``current_cid`` of ``cid_all`` consumes."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class _CheckedStrategy(AllocateMessageQueueStrategy):
    """A strategy that checks its arguments as RocketMQ does and works on sorted, deduplicated
    lists: :meth:`allocate` does the checks, :meth:`_share` the arithmetic."""

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        prepared = self._prepare(consumer_group, current_cid, mq_all, cid_all)
        if prepared is None:
            return []
        mqs, cids = prepared
        return self._share(consumer_group, current_cid, mqs, cids)

    @abstractmethod
    def _share(
        self, consumer_group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str]
    ) -> list[MessageQueue]:
        """``current_cid``'s share of ``mqs`` among ``cids`` (both sorted, ``current_cid`` one
        of ``cids``)."""

    def _prepare(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> tuple[list[MessageQueue], list[str]] | None:
        """Check the arguments as RocketMQ does; give both lists sorted and deduplicated, or
        ``None`` (after a warning) when ``current_cid`` is not one of ``cid_all``."""
        if not current_cid:
            raise ValueError(f"{self.name}: current_cid is empty")
        if isinstance(cid_all, str):
            raise TypeError(f"{self.name}: cid_all must be a sequence of consumer ids, not a str")
        if not mq_all:
            raise ValueError(f"{self.name}: mq_all is empty; there are no queues to allocate")
        if not cid_all:
            raise ValueError(f"{self.name}: cid_all is empty; the group has no consumers")
        cids = _sorted_cids(cid_all)
        if current_cid not in cids:
            log.warning(
                "consumer group %s: consumer %s is not in the group's consumer list %s; "
                "allocating no queues to it (%s)",
                consumer_group,
                current_cid,
                cids,
                self.name,
            )
            return None
        return _sorted_queues(mq_all), cids


class AllocateMessageQueueAveragely(_CheckedStrategy):
    """``AVG``: contiguous blocks of the sorted queues, one per consumer in sorted order, the
    first ``len(queues) % len(consumers)`` blocks one queue longer (8 queues, 3 consumers:
    3/3/2). With more consumers than queues the last consumers get nothing."""

    @property
    def name(self) -> str:
        return "AVG"

    def _share(
        self, consumer_group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str]
    ) -> list[MessageQueue]:
        index = cids.index(current_cid)
        n_queues, n_consumers = len(mqs), len(cids)
        mod = n_queues % n_consumers
        if n_queues <= n_consumers:
            size = 1
        elif index < mod:
            size = n_queues // n_consumers + 1
        else:
            size = n_queues // n_consumers
        start = index * size if index < mod else index * size + mod
        count = min(size, n_queues - start)
        return mqs[start : start + count] if count > 0 else []


class AllocateMessageQueueAveragelyByCircle(_CheckedStrategy):
    """``AVG_BY_CIRCLE``: the sorted queues dealt round-robin to the sorted consumers
    (consumer ``i`` of ``n`` gets queues ``i``, ``i + n``, ``i + 2n``, ...)."""

    @property
    def name(self) -> str:
        return "AVG_BY_CIRCLE"

    def _share(
        self, consumer_group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str]
    ) -> list[MessageQueue]:
        return mqs[cids.index(current_cid) :: len(cids)]


def md5_hash(key: str) -> int:
    """RocketMQ's default ring hash (``ConsistentHashRouter.MD5Hash``): the first four bytes of
    the MD5 digest of ``key`` in UTF-8, as an unsigned big-endian 32-bit integer.

    (Java hashes ``key.getBytes()``, in the JVM's default charset: UTF-8 on every JDK since 18
    and under a UTF-8 locale before; a lone surrogate becomes ``?`` in both. Only non-ASCII
    consumer ids, topics or broker names can tell the charsets apart.)

    >>> hex(md5_hash(""))
    '0xd41d8cd9'
    """
    digest = hashlib.md5(key.encode("utf-8", "replace"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


class ConsistentHashRouter:
    """RocketMQ's ``ConsistentHashRouter`` for nodes named by strings.

    Each node ``n`` is put on the ring ``virtual_node_count`` times, at
    ``hash_function(f"{n}-{i}")``; nodes go on in the order given, and a later virtual node
    whose hash collides with an earlier one replaces it (Java's ``TreeMap.put``). A node given
    again adds further virtual nodes, numbered on from the ones it still has on the ring.
    :meth:`route` gives the node of the first point at or after the key's hash, wrapping
    round to the first point.
    """

    def __init__(
        self,
        nodes: Iterable[str],
        virtual_node_count: int,
        hash_function: Callable[[str], int] = md5_hash,
    ) -> None:
        if virtual_node_count < 0:
            raise ValueError(f"illegal virtual node count {virtual_node_count}; use 0 or more")
        self._hash = hash_function
        ring: dict[int, str] = {}
        added: set[str] = set()
        for node in nodes:
            existing = sum(1 for v in ring.values() if v == node) if node in added else 0
            added.add(node)
            for i in range(virtual_node_count):
                ring[hash_function(f"{node}-{i + existing}")] = node
        self._points: list[int] = sorted(ring)
        self._nodes: list[str] = [ring[p] for p in self._points]

    def __len__(self) -> int:
        """The number of points (virtual nodes) on the ring."""
        return len(self._points)

    def route(self, key: str) -> str | None:
        """The node ``key`` belongs to, or ``None`` when the ring is empty."""
        if not self._points:
            return None
        i = bisect_left(self._points, self._hash(key))
        return self._nodes[i if i < len(self._points) else 0]


class AllocateMessageQueueConsistentHash(_CheckedStrategy):
    """``CONSISTENT_HASH``: the consumers on a :class:`ConsistentHashRouter` ring with
    ``virtual_node_count`` (default 10) virtual nodes each; a queue goes to the consumer its
    ``str()`` (``MessageQueue [topic=..., brokerName=..., queueId=...]``, as in Java) routes to.

    Shares are uneven, but a consumer joining or leaving moves few queues. With 0 virtual nodes
    the ring is empty and nobody gets anything, as in Java.
    """

    def __init__(
        self,
        virtual_node_count: int = 10,
        hash_function: Callable[[str], int] | None = None,
    ) -> None:
        if isinstance(virtual_node_count, bool) or not isinstance(virtual_node_count, int):
            raise TypeError(f"virtual_node_count must be an int, not {virtual_node_count!r}")
        if virtual_node_count < 0:
            raise ValueError(f"illegal virtual_node_count {virtual_node_count}; use 0 or more")
        self.virtual_node_count = virtual_node_count
        self.hash_function: Callable[[str], int] = hash_function or md5_hash

    @property
    def name(self) -> str:
        return "CONSISTENT_HASH"

    def _share(
        self, consumer_group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str]
    ) -> list[MessageQueue]:
        router = ConsistentHashRouter(cids, self.virtual_node_count, self.hash_function)
        return [mq for mq in mqs if router.route(str(mq)) == current_cid]


class AllocateMessageQueueByConfig(AllocateMessageQueueStrategy):
    """``CONFIG``: a fixed list of queues, whatever the group and its queues are.

    Like RocketMQ's, it neither checks nor looks at its arguments. The list is returned
    sorted and deduplicated (a new list each call).
    """

    def __init__(self, message_queues: Iterable[MessageQueue]) -> None:
        queues = list(message_queues)
        for mq in queues:
            if not isinstance(mq, MessageQueue):
                raise TypeError(f"message_queues must hold MessageQueue objects, not {mq!r}")
        self._queues = _sorted_queues(queues)

    @property
    def name(self) -> str:
        return "CONFIG"

    @property
    def message_queues(self) -> list[MessageQueue]:
        """The configured queues, sorted."""
        return list(self._queues)

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        return list(self._queues)


def _java_split_at(text: str) -> list[str]:
    """``text.split("@")`` as Java does it: trailing empty strings removed."""
    parts = text.split("@")
    while parts and not parts[-1]:
        parts.pop()
    return parts


class AllocateMessageQueueByMachineRoom(_CheckedStrategy):
    """``MACHINE_ROOM``: only queues of brokers named ``"<room>@<broker>"`` with ``<room>`` in
    ``consumer_idcs`` are consumed; those (sorted) are shared out as ``len // consumers``
    contiguous queues per consumer, and the ``len % consumers`` left over, one each, to the
    first consumers. Queues of other brokers are allocated to nobody.
    """

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        if isinstance(consumer_idcs, str):
            raise TypeError(
                f"consumer_idcs must be a collection of machine room names, not the str "
                f"{consumer_idcs!r}"
            )
        self.consumer_idcs: frozenset[str] = frozenset(consumer_idcs)

    @property
    def name(self) -> str:
        return "MACHINE_ROOM"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {sorted(self.consumer_idcs)}>"

    def _share(
        self, consumer_group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str]
    ) -> list[MessageQueue]:
        index = cids.index(current_cid)
        eligible = []
        for mq in mqs:
            parts = _java_split_at(mq.broker_name)
            if len(parts) == 2 and parts[0] in self.consumer_idcs:
                eligible.append(mq)
        per_consumer, rest = divmod(len(eligible), len(cids))
        start = per_consumer * index
        result = eligible[start : start + per_consumer]
        if index < rest:
            result.append(eligible[per_consumer * len(cids) + index])
        return result


class AllocateMachineRoomNearby(_CheckedStrategy):
    """``MACHINE_ROOM_NEARBY-<inner>``: queues go to consumers in their broker's machine room.

    ``broker_room(mq)`` and ``consumer_room(cid)`` say which machine room a queue's broker and
    a consumer are in (RocketMQ's ``MachineRoomResolver``; both must give a non-empty name).
    The queues of a room that has consumers are shared among that room's consumers by
    ``inner``; the queues of a room with no consumers are shared by ``inner`` among all the
    group's consumers.
    """

    def __init__(
        self,
        inner: AllocateMessageQueueStrategy,
        broker_room: Callable[[MessageQueue], str],
        consumer_room: Callable[[str], str],
    ) -> None:
        if not isinstance(inner, AllocateMessageQueueStrategy):
            raise TypeError(f"inner must be an AllocateMessageQueueStrategy, not {inner!r}")
        if not callable(broker_room) or not callable(consumer_room):
            raise TypeError("broker_room and consumer_room must be callables")
        self.inner = inner
        self.broker_room = broker_room
        self.consumer_room = consumer_room

    @property
    def name(self) -> str:
        return f"{_NEARBY}-{self.inner.name}"

    def _share(
        self, consumer_group: str, current_cid: str, mqs: list[MessageQueue], cids: list[str]
    ) -> list[MessageQueue]:
        queues_in: dict[str, list[MessageQueue]] = {}
        for mq in mqs:
            room = self.broker_room(mq)
            if not room:
                raise ValueError(f"{self.name}: machine room is empty for {mq}")
            queues_in.setdefault(room, []).append(mq)
        consumers_in: dict[str, list[str]] = {}
        room_of: dict[str, str] = {}
        for cid in cids:
            room = self.consumer_room(cid)
            if not room:
                raise ValueError(f"{self.name}: machine room is empty for consumer id {cid}")
            consumers_in.setdefault(room, []).append(cid)
            room_of[cid] = room

        result: list[MessageQueue] = []
        # 1. The queues in the current consumer's room, among the consumers of that room.
        my_room = room_of[current_cid]
        local = queues_in.pop(my_room, [])
        if local:
            result += self.inner.allocate(consumer_group, current_cid, local, consumers_in[my_room])
        # 2. The queues of rooms without consumers, among all consumers.
        for room in sorted(queues_in, key=_java_key):
            if room not in consumers_in:
                result += self.inner.allocate(consumer_group, current_cid, queues_in[room], cids)
        return result


_OPTIONS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # name: (required options, optional options)
    "AVG": (frozenset(), frozenset()),
    "AVG_BY_CIRCLE": (frozenset(), frozenset()),
    "CONSISTENT_HASH": (frozenset(), frozenset({"virtual_node_count", "hash_function"})),
    "CONFIG": (frozenset({"message_queues"}), frozenset()),
    "MACHINE_ROOM": (frozenset({"consumer_idcs"}), frozenset()),
}


def _allowed_names() -> str:
    return ", ".join([*STRATEGY_NAMES[:-1], f"{_NEARBY}-<one of these>"])


def strategy_by_name(name: str, **kwargs: Any) -> AllocateMessageQueueStrategy:
    """The strategy RocketMQ calls ``name``, built with ``kwargs``.

    ======================================  ===========================================
    name                                    options
    ======================================  ===========================================
    ``AVG``, ``AVG_BY_CIRCLE``              none
    ``CONSISTENT_HASH``                     ``virtual_node_count=10``, ``hash_function``
    ``CONFIG``                              ``message_queues`` (required)
    ``MACHINE_ROOM``                        ``consumer_idcs`` (required)
    ``MACHINE_ROOM_NEARBY-<inner name>``    ``broker_room``, ``consumer_room`` (required),
                                            plus the inner strategy's options
    ``MACHINE_ROOM_NEARBY``                 the same, and ``inner`` (a strategy or a name)
    ======================================  ===========================================

    Raises :class:`~rmq.errors.ConfigError` for an unknown name, a missing or unknown option,
    or a bad option value.

    >>> strategy_by_name("MACHINE_ROOM_NEARBY-AVG", broker_room=str, consumer_room=str).name
    'MACHINE_ROOM_NEARBY-AVG'
    """
    if name == _NEARBY or name.startswith(f"{_NEARBY}-"):
        return _nearby_by_name(name, kwargs)
    if name not in _OPTIONS:
        raise ConfigError(
            f"unknown allocate message queue strategy {name!r}; use one of {_allowed_names()}"
        )
    required, optional = _OPTIONS[name]
    missing = sorted(required - kwargs.keys())
    if missing:
        raise ConfigError(f"allocate strategy {name} needs option(s) {', '.join(missing)}")
    unknown = sorted(kwargs.keys() - required - optional)
    if unknown:
        allowed = ", ".join(sorted(required | optional)) or "none"
        raise ConfigError(
            f"allocate strategy {name} has no option(s) {', '.join(unknown)}; "
            f"its options are: {allowed}"
        )
    try:
        if name == "AVG":
            return AllocateMessageQueueAveragely()
        if name == "AVG_BY_CIRCLE":
            return AllocateMessageQueueAveragelyByCircle()
        if name == "CONSISTENT_HASH":
            return AllocateMessageQueueConsistentHash(**kwargs)
        if name == "CONFIG":
            return AllocateMessageQueueByConfig(**kwargs)
        return AllocateMessageQueueByMachineRoom(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"allocate strategy {name}: {exc}") from exc


def _nearby_by_name(name: str, kwargs: dict[str, Any]) -> AllocateMessageQueueStrategy:
    options = dict(kwargs)
    missing = [key for key in ("broker_room", "consumer_room") if key not in options]
    inner: Any
    if name == _NEARBY:
        if "inner" not in options:
            missing.append("inner")
        inner = options.pop("inner", None)
    else:
        if "inner" in options:
            raise ConfigError(
                f"allocate strategy {name} names its inner strategy; drop the inner option "
                f"or use the name {_NEARBY}"
            )
        inner = name[len(_NEARBY) + 1 :]
    if missing:
        raise ConfigError(f"allocate strategy {name} needs option(s) {', '.join(missing)}")
    broker_room = options.pop("broker_room")
    consumer_room = options.pop("consumer_room")
    if isinstance(inner, str):
        inner = strategy_by_name(inner, **options)
    elif options:
        raise ConfigError(
            f"allocate strategy {name} has no option(s) {', '.join(sorted(options))} when "
            "inner is a strategy object"
        )
    try:
        return AllocateMachineRoomNearby(inner, broker_room, consumer_room)
    except TypeError as exc:
        raise ConfigError(f"allocate strategy {name}: {exc}") from exc
