"""The nameserver's routing state (RocketMQ's ``RouteInfoManager``), as plain Python.

Brokers register every 30 s with their topic configs; clients ask for a topic's route
(``TopicRouteData``), the cluster layout or the topic list. A broker that has not registered
for 120 s, or whose connection closed, is forgotten with its queues. Everything here is pure
state; its bodies are built by ``rmq-protocol``'s route types (``TopicRouteData``,
``ClusterInfo``, ``TopicList``, through ``rmq._rmq``), so field names and layout are written
once, in Rust, and the wire layer only moves bytes.

Thread-safety: one lock guards all tables (reads are cheap and rare compared to the 30 s
registration cadence), as RocketMQ's read-write lock does.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rmq._rmq import cluster_info_json, topic_list_json, topic_route_data_json
from rmq.namesrv.kv_config import KvConfigManager

__all__ = [
    "BROKER_CHANNEL_EXPIRED_MS",
    "MASTER_ID",
    "BrokerLiveInfo",
    "RegisterResult",
    "RouteInfoManager",
    "TopicQueueConfig",
]

log = logging.getLogger("rmq.namesrv")

BROKER_CHANNEL_EXPIRED_MS = 120_000
"""A broker silent for this long is removed (RocketMQ's BROKER_CHANNEL_EXPIRED_TIME)."""
MASTER_ID = 0
PERM_READ = 4
PERM_WRITE = 2
# TopicSysFlag bits.
TOPIC_SYS_FLAG_UNIT = 1
TOPIC_SYS_FLAG_UNIT_SUB = 2
ORDER_TOPIC_CONFIG_NAMESPACE = "ORDER_TOPIC_CONFIG"


@dataclass(frozen=True, slots=True)
class TopicQueueConfig:
    """A topic as one broker serves it (the parts of ``TopicConfig`` that routing needs)."""

    topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> TopicQueueConfig:
        return cls(
            topic=str(d.get("topicName", name)),
            read_queue_nums=int(d.get("readQueueNums", 0)),
            write_queue_nums=int(d.get("writeQueueNums", 0)),
            perm=int(d.get("perm", PERM_READ | PERM_WRITE)),
            topic_sys_flag=int(d.get("topicSysFlag", 0)),
        )


def check_topic_config_wrapper(wrapper: object) -> None:
    """Refuse a REGISTER_BROKER ``topicConfigSerializeWrapper`` the route table cannot hold:
    not an object, a topic entry that is not one, a field that is no integer, or a queue count
    outside ``0..MAX_QUEUE_NUMS`` (a route claiming 100 000 000 queues made every producer of
    the topic allocate until it died), or a topic name RocketMQ's ``TopicValidator`` refuses.
    Raises ``ValueError`` naming the topic and the field."""
    from rmq._rmq import MAX_QUEUE_NUMS, validate_topic_name

    if wrapper is None:
        return
    if not isinstance(wrapper, Mapping):
        raise ValueError("topicConfigSerializeWrapper is not a JSON object")
    version = wrapper.get("dataVersion")
    if version is not None and not isinstance(version, Mapping):
        raise ValueError("topicConfigSerializeWrapper.dataVersion is not a JSON object")
    table = wrapper.get("topicConfigTable") or {}
    if not isinstance(table, Mapping):
        raise ValueError("topicConfigSerializeWrapper.topicConfigTable is not a JSON object")
    for name, cfg in table.items():
        if not isinstance(cfg, Mapping):
            raise ValueError(f"topic {name!r}: its config is not a JSON object")
        try:
            validate_topic_name(str(name))
            if "topicName" in cfg:
                validate_topic_name(str(cfg["topicName"]))
        except ValueError as exc:
            raise ValueError(f"topic {str(name)[:200]!r}: {exc}") from None
        try:
            q = TopicQueueConfig.from_json(name, cfg)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"topic {name!r}: a field is not an integer ({exc})") from None
        for key, n in (
            ("readQueueNums", q.read_queue_nums),
            ("writeQueueNums", q.write_queue_nums),
        ):
            if not 0 <= n <= MAX_QUEUE_NUMS:
                raise ValueError(
                    f"topic {name!r}: {key} = {n} is out of range (0 to {MAX_QUEUE_NUMS})"
                )


@dataclass(slots=True)
class BrokerLiveInfo:
    last_update_ms: int
    data_version: dict[str, Any]
    connection: object | None
    ha_server_addr: str


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """What REGISTER_BROKER answers: the master's addresses (for a slave) and KV config."""

    ha_server_addr: str
    master_addr: str
    kv_table: dict[str, str] = field(default_factory=dict)


def _queue_data(broker_name: str, q: TopicQueueConfig) -> tuple[str, int, int, int, int]:
    """A ``QueueData`` as ``topic_route_data_json`` takes it."""
    return (broker_name, q.perm, q.read_queue_nums, q.write_queue_nums, q.topic_sys_flag)


class RouteInfoManager:
    """Route tables, keyed like RocketMQ's: topic → queue data per broker name, broker name →
    addresses per broker id, cluster → broker names, broker address → liveness."""

    def __init__(
        self, clock: Callable[[], float] = time.time, kv: KvConfigManager | None = None
    ) -> None:
        self._lock = threading.RLock()
        self._clock = clock
        self.topic_queue_table: dict[str, dict[str, TopicQueueConfig]] = {}
        self.broker_addr_table: dict[str, dict[str, Any]] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.kv = kv or KvConfigManager()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # ---- registration -------------------------------------------------------------------

    def register_broker(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: Mapping[str, Any] | None,
        connection: object | None = None,
    ) -> RegisterResult:
        """Record a broker's registration (REGISTER_BROKER, every 30 s per broker)."""
        with self._lock:
            self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
            data = self.broker_addr_table.setdefault(
                broker_name,
                {"cluster": cluster_name, "brokerName": broker_name, "brokerAddrs": {}},
            )
            addrs: dict[int, str] = data["brokerAddrs"]
            # One address serves one role: drop the address if it moved to another id.
            for bid, addr in list(addrs.items()):
                if addr == broker_addr and bid != broker_id:
                    del addrs[bid]
            first_time = addrs.get(broker_id) != broker_addr
            addrs[broker_id] = broker_addr

            version = dict((topic_config_wrapper or {}).get("dataVersion") or {})
            if topic_config_wrapper is not None and broker_id == MASTER_ID:
                live = self.broker_live_table.get(broker_addr)
                changed = live is None or live.data_version != version
                if changed or first_time:
                    table = topic_config_wrapper.get("topicConfigTable") or {}
                    self._replace_broker_topics(broker_name, table)
            previous = self.broker_live_table.get(broker_addr)
            self.broker_live_table[broker_addr] = BrokerLiveInfo(
                last_update_ms=self._now_ms(),
                data_version=version,
                connection=connection,
                ha_server_addr=ha_server_addr,
            )
            if previous is None:
                log.info(
                    "new broker registered: %s %s (id %d) cluster %s",
                    broker_name,
                    broker_addr,
                    broker_id,
                    cluster_name,
                )
            master_addr = ""
            master_ha = ""
            if broker_id != MASTER_ID:
                master_addr = addrs.get(MASTER_ID, "")
                master_live = self.broker_live_table.get(master_addr)
                master_ha = master_live.ha_server_addr if master_live else ""
            return RegisterResult(
                ha_server_addr=master_ha,
                master_addr=master_addr,
                kv_table=self.kv.namespace(ORDER_TOPIC_CONFIG_NAMESPACE) or {},
            )

    def _replace_broker_topics(self, broker_name: str, table: Mapping[str, Any]) -> None:
        new = {name: TopicQueueConfig.from_json(name, cfg) for name, cfg in table.items()}
        for topic in list(self.topic_queue_table):
            if topic not in new:
                self.topic_queue_table[topic].pop(broker_name, None)
                if not self.topic_queue_table[topic]:
                    del self.topic_queue_table[topic]
        for name, q in new.items():
            self.topic_queue_table.setdefault(name, {})[broker_name] = q

    def unregister_broker(
        self, *, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """Forget one broker instance (UNREGISTER_BROKER, at its clean shutdown)."""
        with self._lock:
            self.broker_live_table.pop(broker_addr, None)
            data = self.broker_addr_table.get(broker_name)
            removed_all = True
            if data is not None:
                data["brokerAddrs"].pop(broker_id, None)
                removed_all = not data["brokerAddrs"]
                if removed_all:
                    del self.broker_addr_table[broker_name]
            if removed_all:
                names = self.cluster_addr_table.get(cluster_name)
                if names is not None:
                    names.discard(broker_name)
                    if not names:
                        del self.cluster_addr_table[cluster_name]
                self._remove_broker_topics(broker_name)
            log.info("broker unregistered: %s %s (id %d)", broker_name, broker_addr, broker_id)

    def _remove_broker_topics(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            self.topic_queue_table[topic].pop(broker_name, None)
            if not self.topic_queue_table[topic]:
                del self.topic_queue_table[topic]

    def _forget_addr(self, broker_addr: str, reason: str) -> bool:
        """Remove every trace of a broker address (expired or disconnected)."""
        if self.broker_live_table.pop(broker_addr, None) is None:
            return False
        for name, data in list(self.broker_addr_table.items()):
            addrs: dict[int, str] = data["brokerAddrs"]
            for bid, addr in list(addrs.items()):
                if addr == broker_addr:
                    del addrs[bid]
            if not addrs:
                del self.broker_addr_table[name]
                for cluster, names in list(self.cluster_addr_table.items()):
                    names.discard(name)
                    if not names:
                        del self.cluster_addr_table[cluster]
                self._remove_broker_topics(name)
        log.warning("broker %s removed: %s", broker_addr, reason)
        return True

    def sizes(self) -> tuple[int, int, int]:
        """Live brokers, topics and clusters in the table (the nameserver's metrics)."""
        with self._lock:
            return (
                len(self.broker_live_table),
                len(self.topic_queue_table),
                len(self.cluster_addr_table),
            )

    def scan_not_active_broker(self) -> list[str]:
        """Drop brokers silent for 120 s (run every few seconds). Returns their addresses."""
        now = self._now_ms()
        with self._lock:
            expired = [
                addr
                for addr, live in self.broker_live_table.items()
                if now - live.last_update_ms > BROKER_CHANNEL_EXPIRED_MS
            ]
            for addr in expired:
                self._forget_addr(
                    addr, f"no registration for {BROKER_CHANNEL_EXPIRED_MS // 1000} s"
                )
        return expired

    def on_connection_closed(self, connection: object) -> list[str]:
        """Forget brokers whose registering connection closed (at once, not after 120 s)."""
        with self._lock:
            gone = [
                a for a, live in self.broker_live_table.items() if live.connection == connection
            ]
            for addr in gone:
                self._forget_addr(addr, "its connection closed")
        return gone

    # ---- queries ------------------------------------------------------------------------

    def pick_topic_route_data(self, topic: str) -> dict[str, Any] | None:
        """``TopicRouteData`` of a topic as RocketMQ serialises it, or None if unknown."""
        with self._lock:
            brokers = self.topic_queue_table.get(topic)
            if not brokers:
                return None
            queue_datas = [_queue_data(name, q) for name, q in sorted(brokers.items())]
            broker_datas = [
                _broker_data(self.broker_addr_table[name])
                for name in sorted(brokers)
                if name in self.broker_addr_table
            ]
            if not broker_datas:
                return None
            order_conf = self.kv.get(ORDER_TOPIC_CONFIG_NAMESPACE, topic)
            return _body(topic_route_data_json(broker_datas, queue_datas, order_conf or None))

    def cluster_info(self) -> dict[str, Any]:
        """``ClusterInfo``: broker name → BrokerData, cluster → broker names."""
        with self._lock:
            brokers = [_broker_data(data) for data in self.broker_addr_table.values()]
            return _body(cluster_info_json(brokers, self.cluster_addr_table))

    def topic_list(self) -> dict[str, Any]:
        """``TopicList`` of every topic with a route."""
        with self._lock:
            return topic_list_body(self.topic_queue_table)

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Drop write permission of a broker's queues (before taking it down). Returns how many
        topics the broker serves (RocketMQ's ``wipeTopicCount``)."""
        return self._set_write_perm(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Undo :meth:`wipe_write_perm_of_broker`: every queue of the broker becomes read and
        write (``PERM_READ | PERM_WRITE``, as RocketMQ sets it, dropping the inherit bit).
        Returns how many topics the broker serves (``addTopicCount``)."""
        return self._set_write_perm(broker_name, lambda perm: PERM_READ | PERM_WRITE)

    def _set_write_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        with self._lock:
            n = 0
            for brokers in self.topic_queue_table.values():
                q = brokers.get(broker_name)
                if q is not None:
                    brokers[broker_name] = dataclasses.replace(q, perm=change(q.perm))
                    n += 1
            return n

    def topics_by_cluster(self, cluster: str) -> list[str] | None:
        """Topics served by a broker of ``cluster`` (GET_TOPICS_BY_CLUSTER); None for an
        unknown cluster."""
        with self._lock:
            names = self.cluster_addr_table.get(cluster)
            if names is None:
                return None
            return sorted(
                topic
                for topic, brokers in self.topic_queue_table.items()
                if names.intersection(brokers)
            )

    def system_topic_list(self) -> dict[str, Any]:
        """RocketMQ's ``getSystemTopicList``: every cluster name and broker name (each is a
        topic on its brokers when clusterTopicEnable / brokerTopicEnable are on), with the
        address of one broker in ``brokerAddr``."""
        with self._lock:
            topics: set[str] = set()
            for cluster, names in self.cluster_addr_table.items():
                topics.add(cluster)
                topics.update(names)
            broker_addr = None
            for data in self.broker_addr_table.values():
                addrs: dict[int, str] = data["brokerAddrs"]
                if addrs:
                    broker_addr = addrs[min(addrs)]
                    break
            return topic_list_body(topics, broker_addr)

    def topics_with_sys_flag(
        self, *, unit: bool | None = None, unit_sub: bool | None = None
    ) -> list[str]:
        """Topics whose ``topicSysFlag`` has (True) or lacks (False) the unit bit (1) and the
        unit-subscription bit (2), on any broker (GET_UNIT_TOPIC_LIST 311,
        GET_HAS_UNIT_SUB_TOPIC_LIST 312, GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST 313)."""

        def matches(flag: int) -> bool:
            return (unit is None or bool(flag & TOPIC_SYS_FLAG_UNIT) == unit) and (
                unit_sub is None or bool(flag & TOPIC_SYS_FLAG_UNIT_SUB) == unit_sub
            )

        with self._lock:
            return sorted(
                topic
                for topic, brokers in self.topic_queue_table.items()
                if any(matches(q.topic_sys_flag) for q in brokers.values())
            )

    def delete_topic(self, topic: str) -> bool:
        with self._lock:
            return self.topic_queue_table.pop(topic, None) is not None

    # ---- KV config ----------------------------------------------------------------------

    def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        self.kv.put(namespace, key, value)

    def get_kv_config(self, namespace: str, key: str) -> str | None:
        return self.kv.get(namespace, key)

    def delete_kv_config(self, namespace: str, key: str) -> None:
        self.kv.delete(namespace, key)

    def kv_list_by_namespace(self, namespace: str) -> dict[str, str] | None:
        return self.kv.namespace(namespace)

    # ---- data version (QUERY_DATA_VERSION) ------------------------------------------------

    def broker_data_version(self, broker_addr: str) -> dict[str, Any] | None:
        """The DataVersion the broker at ``broker_addr`` last registered, None if unknown
        (RocketMQ's ``queryBrokerTopicConfig``)."""
        with self._lock:
            live = self.broker_live_table.get(broker_addr)
            return dict(live.data_version) if live is not None else None

    def check_data_version(self, broker_addr: str, version: Mapping[str, Any]) -> bool:
        """Whether ``version`` differs from the broker's registered one (or the broker is
        unknown): it must register again. When unchanged, the query counts as a sign of life
        (RocketMQ's ``isBrokerTopicConfigChanged`` + ``updateBrokerInfoUpdateTimestamp``)."""
        with self._lock:
            live = self.broker_live_table.get(broker_addr)
            if live is None or live.data_version != dict(version):
                return True
            live.last_update_ms = self._now_ms()
            return False


def _broker_data(data: Mapping[str, Any]) -> tuple[str, str, dict[int, str]]:
    """A ``BrokerData`` as the ``rmq._rmq`` body builders take it."""
    return (data["cluster"], data["brokerName"], dict(data["brokerAddrs"]))


def _body(text: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(text)
    return body


def topic_list_body(topics: Iterable[str], broker_addr: str | None = None) -> dict[str, Any]:
    """A ``TopicList`` body (sorted topic names, and the broker they came from if any)."""
    return _body(topic_list_json(set(topics), broker_addr))


def to_json_bytes(body: Mapping[str, Any] | Iterable[Any]) -> bytes:
    """Compact JSON as RocketMQ clients parse it."""
    return json.dumps(body, separators=(",", ":")).encode()
