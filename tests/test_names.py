"""Names, codes and small codecs the Python side takes from Rust (crates/rmq-py/src/names.rs):
the values are RocketMQ's, the Python modules use the Rust objects themselves, the op record
decoder and the fastjson reader behave as the broker needs, and the nameserver's bodies come
out in the field order Apache's fastjson writes (alphabetical)."""

from __future__ import annotations

import json

import pytest

from rmq import _rmq, fastjson
from rmq.namesrv.route_info import RouteInfoManager, to_json_bytes
from rmq.scheduling import delay, transaction


def test_system_topics_and_property_keys_are_rocketmqs() -> None:
    assert _rmq.AUTO_CREATE_TOPIC_KEY_TOPIC == "TBW102"
    assert _rmq.SCHEDULE_TOPIC == "SCHEDULE_TOPIC_XXXX"
    assert _rmq.TRANS_OP_HALF_TOPIC == "RMQ_SYS_TRANS_OP_HALF_TOPIC"
    assert _rmq.RETRY_GROUP_TOPIC_PREFIX == "%RETRY%"
    assert _rmq.DLQ_GROUP_TOPIC_PREFIX == "%DLQ%"
    assert _rmq.TIMER_TOPIC == "rmq_sys_wheel_timer"
    assert _rmq.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX == "UNIQ_KEY"
    assert _rmq.PROPERTY_WAIT_STORE_MSG_OK == "WAIT"
    assert _rmq.PROPERTY_REAL_QUEUE_ID == "REAL_QID"
    # The scheduling modules use the Rust names, not copies of their own.
    assert delay.SCHEDULE_TOPIC is _rmq.SCHEDULE_TOPIC
    assert transaction.OP_TOPIC is _rmq.TRANS_OP_HALF_TOPIC
    assert transaction.CID_SYS_RMQ_TRANS == "CID_RMQ_SYS_TRANS"


def test_op_records_decode_as_the_broker_writes_them() -> None:
    assert _rmq.decode_trans_op(_rmq.TRANS_OP_REMOVE_TAG, b"42") == 42
    assert _rmq.decode_trans_op("d", b"not a number") == -1  # Java's getLong
    with pytest.raises(ValueError, match='tag "x" is not the op record tag'):
        _rmq.decode_trans_op("x", b"42")
    with pytest.raises(ValueError, match="no tag is not"):
        _rmq.decode_trans_op(None, b"42")


def test_fastjson_errors_say_where_and_what() -> None:
    with pytest.raises(fastjson.FastjsonError, match=r'at byte 3 \(near "1}"\)') as e:
        fastjson.loads("{a 1}")
    assert "did not send a JSON body" in str(e.value)
    with pytest.raises(fastjson.FastjsonError, match="extra data"):
        fastjson.loads(b"{a:1} tail")
    assert fastjson.loads("{1:{'x':[1,2]}}") == {"1": {"x": [1, 2]}}
    # Nesting deeper than Python's parser can recurse (a nameserver got this as a
    # REGISTER_BROKER body and logged a RecursionError traceback): a FastjsonError.
    for deep in ("[" * 100_000 + "]" * 100_000, "{a:" * 100_000 + "1" + "}" * 100_000):
        with pytest.raises(fastjson.FastjsonError, match="nested too deeply"):
            fastjson.loads(deep)


def test_namesrv_bodies_have_apaches_field_order() -> None:
    m = RouteInfoManager()
    table = {"T": {"topicName": "T", "readQueueNums": 2, "writeQueueNums": 2, "perm": 6}}
    for name, addr in (("b", "10.0.0.2:10911"), ("a", "10.0.0.1:10911")):
        m.register_broker(
            cluster_name="C",
            broker_addr=addr,
            broker_name=name,
            broker_id=0,
            ha_server_addr="",
            topic_config_wrapper={"topicConfigTable": table, "dataVersion": {"counter": 1}},
        )
    m.put_kv_config("ORDER_TOPIC_CONFIG", "T", "a:2;b:2")
    route = to_json_bytes(m.pick_topic_route_data("T") or {})
    assert route == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"a","cluster":"C"},'
        b'{"brokerAddrs":{"0":"10.0.0.2:10911"},"brokerName":"b","cluster":"C"}],'
        b'"filterServerTable":{},"orderTopicConf":"a:2;b:2","queueDatas":['
        b'{"brokerName":"a","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2},'
        b'{"brokerName":"b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}'
    )
    system = to_json_bytes(m.system_topic_list())
    assert system.startswith(b'{"brokerAddr":"10.0.0.') and system.endswith(
        b'"topicList":["C","a","b"]}'
    )
    cluster = json.loads(to_json_bytes(m.cluster_info()))
    assert list(cluster) == ["brokerAddrTable", "clusterAddrTable"]
    assert cluster["clusterAddrTable"] == {"C": ["a", "b"]}
