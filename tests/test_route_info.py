"""RouteInfoManager: registration, routes, expiry, connection loss, KV config."""

from __future__ import annotations

import json

from rmq.namesrv.route_info import (
    BROKER_CHANNEL_EXPIRED_MS,
    RouteInfoManager,
    to_json_bytes,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def wrapper(topics: dict[str, int], counter: int = 1) -> dict[str, object]:
    return {
        "topicConfigTable": {
            t: {"topicName": t, "readQueueNums": n, "writeQueueNums": n, "perm": 6}
            for t, n in topics.items()
        },
        "dataVersion": {"timestamp": 1, "counter": counter},
    }


def register(m: RouteInfoManager, name: str, addr: str, bid: int = 0, **kw: object) -> None:
    m.register_broker(
        cluster_name="DefaultCluster",
        broker_addr=addr,
        broker_name=name,
        broker_id=bid,
        ha_server_addr=addr.replace("10911", "10912"),
        topic_config_wrapper=kw.get("wrapper", wrapper({"TopicA": 4})),  # type: ignore[arg-type]
        connection=kw.get("connection"),
    )


def test_route_of_a_topic_on_two_brokers() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911", wrapper={"topicConfigTable": {}, "dataVersion": {}})
    register(m, "broker-a", "10.0.0.1:10911", wrapper=wrapper({"TopicA": 4, "TBW102": 8}, 2))
    register(m, "broker-b", "10.0.0.2:10911", wrapper=wrapper({"TopicA": 2}))
    route = m.pick_topic_route_data("TopicA")
    assert route is not None
    assert route["queueDatas"] == [
        {
            "brokerName": "broker-a",
            "perm": 6,
            "readQueueNums": 4,
            "topicSysFlag": 0,
            "writeQueueNums": 4,
        },
        {
            "brokerName": "broker-b",
            "perm": 6,
            "readQueueNums": 2,
            "topicSysFlag": 0,
            "writeQueueNums": 2,
        },
    ]
    assert route["brokerDatas"][0] == {
        "brokerAddrs": {"0": "10.0.0.1:10911"},
        "brokerName": "broker-a",
        "cluster": "DefaultCluster",
    }
    assert m.pick_topic_route_data("Nope") is None
    assert m.topic_list() == {"topicList": ["TBW102", "TopicA"]}
    assert m.cluster_info()["clusterAddrTable"] == {"DefaultCluster": ["broker-a", "broker-b"]}
    body = json.loads(to_json_bytes(route))
    assert body["brokerDatas"][1]["brokerName"] == "broker-b"


def test_slave_gets_master_addresses_and_keeps_routes() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911")
    res = m.register_broker(
        cluster_name="DefaultCluster",
        broker_addr="10.0.0.3:10911",
        broker_name="broker-a",
        broker_id=1,
        ha_server_addr="10.0.0.3:10912",
        topic_config_wrapper=wrapper({"Other": 1}),
    )
    assert res.master_addr == "10.0.0.1:10911"
    assert res.ha_server_addr == "10.0.0.1:10912"
    route = m.pick_topic_route_data("TopicA")
    assert route is not None
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911", "1": "10.0.0.3:10911"}
    assert m.pick_topic_route_data("Other") is None, "a slave's topics do not change routes"


def test_topic_removed_from_broker_disappears() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911", wrapper=wrapper({"T1": 1, "T2": 1}, 1))
    register(m, "broker-a", "10.0.0.1:10911", wrapper=wrapper({"T1": 1}, 2))
    assert m.pick_topic_route_data("T2") is None
    assert m.pick_topic_route_data("T1") is not None


def test_silent_broker_expires_after_120_s() -> None:
    clock = Clock()
    m = RouteInfoManager(clock=clock)
    register(m, "broker-a", "10.0.0.1:10911")
    clock.now += BROKER_CHANNEL_EXPIRED_MS / 1000 - 1
    assert m.scan_not_active_broker() == []
    clock.now += 2
    assert m.scan_not_active_broker() == ["10.0.0.1:10911"]
    assert m.pick_topic_route_data("TopicA") is None
    assert m.cluster_info() == {"brokerAddrTable": {}, "clusterAddrTable": {}}


def test_closed_connection_forgets_broker_at_once() -> None:
    m = RouteInfoManager()
    conn_a, conn_b = object(), object()
    register(m, "broker-a", "10.0.0.1:10911", connection=conn_a)
    register(m, "broker-b", "10.0.0.2:10911", connection=conn_b)
    assert m.on_connection_closed(conn_a) == ["10.0.0.1:10911"]
    route = m.pick_topic_route_data("TopicA")
    assert route is not None
    assert [b["brokerName"] for b in route["brokerDatas"]] == ["broker-b"]


def test_unregister_and_wipe_write_perm() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911")
    assert m.wipe_write_perm_of_broker("broker-a") == 1
    route = m.pick_topic_route_data("TopicA")
    assert route is not None and route["queueDatas"][0]["perm"] == 4
    m.unregister_broker(
        cluster_name="DefaultCluster",
        broker_addr="10.0.0.1:10911",
        broker_name="broker-a",
        broker_id=0,
    )
    assert m.pick_topic_route_data("TopicA") is None


def test_kv_config_and_order_topic_conf() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911")
    m.put_kv_config("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4")
    assert m.get_kv_config("ORDER_TOPIC_CONFIG", "TopicA") == "broker-a:4"
    route = m.pick_topic_route_data("TopicA")
    assert route is not None and route["orderTopicConf"] == "broker-a:4"
    assert m.kv_list_by_namespace("ORDER_TOPIC_CONFIG") == {"TopicA": "broker-a:4"}
    m.delete_kv_config("ORDER_TOPIC_CONFIG", "TopicA")
    assert m.kv_list_by_namespace("ORDER_TOPIC_CONFIG") is None


def test_add_write_perm_undoes_wipe_and_counts_the_brokers_topics() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911")
    register(m, "broker-b", "10.0.0.2:10911")
    assert m.add_write_perm_of_broker("nobody") == 0
    assert m.wipe_write_perm_of_broker("broker-a") == 1
    perms = lambda: {  # noqa: E731
        q["brokerName"]: q["perm"] for q in (m.pick_topic_route_data("TopicA") or {})["queueDatas"]
    }
    assert perms() == {"broker-a": 4, "broker-b": 6}
    # Every topic of the broker counts, writable or not, as in RocketMQ.
    assert m.add_write_perm_of_broker("broker-a") == 1
    assert m.add_write_perm_of_broker("broker-a") == 1
    assert perms() == {"broker-a": 6, "broker-b": 6}


def test_topics_by_cluster_system_topics_and_unit_flags() -> None:
    m = RouteInfoManager()
    register(m, "broker-a", "10.0.0.1:10911")
    unit = wrapper({"TopicA": 4}, counter=2)
    table = unit["topicConfigTable"]
    assert isinstance(table, dict)
    table["UnitTopic"] = {"topicName": "UnitTopic", "perm": 6, "topicSysFlag": 1}
    table["UnitSub"] = {"topicName": "UnitSub", "perm": 6, "topicSysFlag": 2}
    m.register_broker(
        cluster_name="DefaultCluster",
        broker_addr="10.0.0.1:10911",
        broker_name="broker-a",
        broker_id=0,
        ha_server_addr="",
        topic_config_wrapper=unit,
    )
    assert m.topics_by_cluster("DefaultCluster") == ["TopicA", "UnitSub", "UnitTopic"]
    assert m.topics_by_cluster("Elsewhere") is None
    assert m.system_topic_list() == {
        "topicList": ["DefaultCluster", "broker-a"],
        "brokerAddr": "10.0.0.1:10911",
    }
    assert m.topics_with_sys_flag(unit=True) == ["UnitTopic"]
    assert m.topics_with_sys_flag(unit_sub=True) == ["UnitSub"]
    assert m.topics_with_sys_flag(unit=False, unit_sub=True) == ["UnitSub"]
