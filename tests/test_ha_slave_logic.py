"""The slave's decisions without processes: which consumer offsets win a copy, when a rejoining
broker truncates, the epoch note, role switches through UPDATE_BROKER_CONFIG's key rules, the
copy's requests to its master, and the nameserver's group tables."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from rmq._rmq import RemotingResponse
from rmq.broker.admin_handler import BrokerAdminHandler
from rmq.broker.role import EpochNote, promoted_epoch, rejoin_truncate_offset
from rmq.broker.slave_sync import SlaveSynchronize, merge_offsets, parse_offset_table
from rmq.codes import RequestCode, ResponseCode
from rmq.config import BrokerConfig, BrokerRole
from rmq.namesrv.route_info import RouteInfoManager

K = ("T@G", 0)
K1 = ("T@G", 1)


def test_a_consumer_commit_ahead_of_the_master_is_pushed_and_kept() -> None:
    # The master was down: a consumer moved queue 0 from 10 to 25 on the slave.
    take, push = merge_offsets(master={K: 10, K1: 7}, local={K: 25, K1: 7}, synced={K: 10, K1: 7})
    assert push == {K: 25}
    assert take == {K1: 7}


def test_a_reset_on_the_master_wins_over_an_untouched_slave_offset() -> None:
    take, push = merge_offsets(master={K: 3}, local={K: 25}, synced={K: 25})
    assert push == {}
    assert take == {K: 3}


def test_a_slave_commit_behind_the_master_follows_the_master() -> None:
    take, push = merge_offsets(master={K: 40}, local={K: 25}, synced={K: 10})
    assert (take, push) == ({K: 40}, {})


def test_an_offset_the_master_never_saw_is_pushed() -> None:
    take, push = merge_offsets(master={}, local={K: 5}, synced={})
    assert (take, push) == ({}, {K: 5})


def test_offset_tables_in_fastjson_form_parse() -> None:
    assert parse_offset_table(b'{"offsetTable":{"T@G":{0:5,1:7}}}') == {K: 5, K1: 7}


def test_rejoin_truncates_only_beyond_a_new_epoch() -> None:
    old_master = EpochNote(epoch=0, start_offset=0, followed_epoch=0)
    # The slave was promoted at 1000 (epoch 1); the old master wrote up to 1300 meanwhile.
    assert rejoin_truncate_offset(old_master, 1, 1000, 1300) == 1000
    # Nothing beyond the epoch's start: nothing to cut.
    assert rejoin_truncate_offset(old_master, 1, 1000, 900) is None
    # A plain restart of a slave that already followed epoch 1 keeps its bytes.
    follower = EpochNote(0, 0, followed_epoch=1)
    assert rejoin_truncate_offset(follower, 1, 1000, 5000) is None
    # A master never promoted (epoch 0): never truncate.
    assert rejoin_truncate_offset(EpochNote(), 0, 0, 5000) is None


def test_promotion_moves_the_epoch_past_everything_seen(tmp_path: Path) -> None:
    note = promoted_epoch(EpochNote(epoch=1, start_offset=100, followed_epoch=3), 4096)
    assert note == EpochNote(4, 4096, 4)
    note.save(tmp_path)
    assert json.loads((tmp_path / "epoch.json").read_text()) == {
        "epoch": 4,
        "epochStartOffset": 4096,
        "followedEpoch": 4,
    }
    assert EpochNote.load(tmp_path) == note
    (tmp_path / "epoch.json").write_text("not json")
    assert EpochNote.load(tmp_path) == EpochNote()


class FakeClient:
    def __init__(self, bodies: Mapping[int, bytes]) -> None:
        self.bodies = dict(bodies)
        self.calls: list[tuple[str, int, dict[str, str]]] = []

    def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout_ms: int = 3000,
    ) -> RemotingResponse:
        self.calls.append((addr, code, dict(ext_fields or {})))
        if code == RequestCode.UPDATE_CONSUMER_OFFSET:
            return RemotingResponse(ResponseCode.SUCCESS, None, None, None)
        return RemotingResponse(ResponseCode.SUCCESS, None, None, self.bodies[code])


class FakeServer:
    def __init__(self, offsets: bytes) -> None:
        self.offsets = offsets
        self.put: list[bytes] = []
        self.topics: list[bytes] = []
        self.groups: list[bytes] = []

    def consumer_offsets_json(self) -> bytes:
        return self.offsets

    def put_all_consumer_offsets(self, body: bytes) -> None:
        self.put.append(body)

    def replace_topic_configs(self, body: bytes) -> bool:
        self.topics.append(body)
        return True

    def replace_subscription_groups(self, body: bytes) -> bool:
        self.groups.append(body)
        return True


def test_one_copy_asks_the_master_and_pushes_the_slaves_commits(tmp_path: Path) -> None:
    master_offsets = b'{"offsetTable":{"T@G":{0:10,1:7}}}'
    client = FakeClient(
        {
            RequestCode.GET_ALL_TOPIC_CONFIG: b'{"topicConfigTable":{}}',
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: b'{"subscriptionGroupTable":{}}',
            RequestCode.GET_ALL_CONSUMER_OFFSET: master_offsets,
            RequestCode.GET_ALL_DELAY_OFFSET: b'{"offsetTable":{1:3}}',
        }
    )
    server = FakeServer(master_offsets)
    master = ""
    sync = SlaveSynchronize(client, server, lambda: master, tmp_path)
    assert sync.sync_all() is False and client.calls == []  # no master known: nothing asked
    master = "10.0.0.1:10911"
    assert sync.sync_all() is True
    assert (tmp_path / "delayOffset.json").read_bytes() == b'{"offsetTable":{1:3}}'
    assert len(server.topics) == 1 and len(server.groups) == 1
    assert parse_offset_table(server.put[-1]) == {K: 10, K1: 7}
    # The master goes away; a consumer commits queue 0 to 30 on the slave; it comes back.
    server.offsets = b'{"offsetTable":{"T@G":{"0":30,"1":7}}}'
    client.calls.clear()
    assert sync.sync_all() is True
    pushed = [c for c in client.calls if c[1] == RequestCode.UPDATE_CONSUMER_OFFSET]
    assert pushed == [
        (
            master,
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "G", "topic": "T", "queueId": "0", "commitOffset": "30"},
        )
    ]
    assert parse_offset_table(server.put[-1]) == {K1: 7}  # queue 0 kept at 30


def handler(tmp_path: Path, role: BrokerRole, broker_id: int) -> BrokerAdminHandler:
    config = BrokerConfig(broker_role=role, broker_id=broker_id, store={"brokerRole": role.value})
    return BrokerAdminHandler(config, config_path=None, store_defaults={"brokerRole": "x"})


def test_promotion_by_update_broker_config_makes_the_broker_id_zero(tmp_path: Path) -> None:
    h = handler(tmp_path, BrokerRole.SLAVE, 1)
    seen: list[tuple[BrokerRole, int]] = []
    h.set_listener(lambda old, new: seen.append((new.broker_role, new.broker_id)))
    r = h.update_broker_config(b"brokerRole=SYNC_MASTER\n")
    assert r.code == ResponseCode.SUCCESS, r.remark
    assert seen == [(BrokerRole.SYNC_MASTER, 0)]
    assert h.config.store["brokerRole"] == "SYNC_MASTER"
    r = h.update_broker_config(b"brokerRole=SLAVE\n")
    assert r.code == ResponseCode.SUCCESS and seen[-1] == (BrokerRole.SLAVE, 1)


def test_role_and_id_combinations_a_group_cannot_have_are_refused(tmp_path: Path) -> None:
    h = handler(tmp_path, BrokerRole.ASYNC_MASTER, 0)
    r = h.update_broker_config(b"brokerId=2\n")
    assert r.code == ResponseCode.SYSTEM_ERROR and "a master's brokerId is 0" in (r.remark or "")
    s = handler(tmp_path, BrokerRole.SLAVE, 1)
    r = s.update_broker_config(b"brokerId=0\n")
    assert r.code == ResponseCode.SYSTEM_ERROR and "promote" in (r.remark or "")
    assert s.config.broker_id == 1


def register(m: RouteInfoManager, addr: str, bid: int) -> tuple[str, str]:
    wrapper = {
        "topicConfigTable": {"T": {"topicName": "T", "readQueueNums": 4, "writeQueueNums": 4}},
        "dataVersion": {"counter": 1, "timestamp": 1},
    }
    r = m.register_broker(
        cluster_name="C",
        broker_addr=addr,
        broker_name="broker-a",
        broker_id=bid,
        ha_server_addr=addr.replace(":10911", ":10912"),
        topic_config_wrapper=wrapper,
    )
    return r.master_addr, r.ha_server_addr


def test_a_slave_registering_before_its_master_learns_it_at_the_next_registration() -> None:
    m = RouteInfoManager()
    assert register(m, "10.0.0.2:10911", 1) == ("", "")
    assert m.pick_topic_route_data("T") is None  # a slave's topics make no route
    assert register(m, "10.0.0.1:10911", 0) == ("", "")
    assert register(m, "10.0.0.2:10911", 1) == ("10.0.0.1:10911", "10.0.0.1:10912")
    route = m.pick_topic_route_data("T")
    assert route is not None
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.1:10911", "1": "10.0.0.2:10911"}


def test_the_master_leaving_keeps_the_slave_and_the_route() -> None:
    m = RouteInfoManager()
    register(m, "10.0.0.1:10911", 0)
    register(m, "10.0.0.2:10911", 1)
    m.unregister_broker(
        cluster_name="C", broker_addr="10.0.0.1:10911", broker_name="broker-a", broker_id=0
    )
    route = m.pick_topic_route_data("T")
    assert route is not None and route["brokerDatas"][0]["brokerAddrs"] == {"1": "10.0.0.2:10911"}
    assert register(m, "10.0.0.2:10911", 1) == ("", "")  # no master: nothing to follow


def test_a_promoted_slave_replaces_its_own_entry_under_id_zero() -> None:
    m = RouteInfoManager()
    register(m, "10.0.0.1:10911", 0)
    register(m, "10.0.0.2:10911", 1)
    m.unregister_broker(
        cluster_name="C", broker_addr="10.0.0.1:10911", broker_name="broker-a", broker_id=0
    )
    register(m, "10.0.0.2:10911", 0)  # promoted: same address, id 0
    route = m.pick_topic_route_data("T")
    assert route is not None and route["brokerDatas"][0]["brokerAddrs"] == {"0": "10.0.0.2:10911"}
    # The old master rejoins as a slave and is told the new master.
    assert register(m, "10.0.0.1:10911", 1) == ("10.0.0.2:10911", "10.0.0.2:10912")


def test_an_expired_master_leaves_the_slave_routed() -> None:
    now = [1000.0]
    m = RouteInfoManager(clock=lambda: now[0])
    register(m, "10.0.0.1:10911", 0)
    now[0] += 100
    register(m, "10.0.0.2:10911", 1)
    now[0] += 30  # the master silent for 130 s, the slave for 30 s
    assert m.scan_not_active_broker() == ["10.0.0.1:10911"]
    route = m.pick_topic_route_data("T")
    assert route is not None and route["brokerDatas"][0]["brokerAddrs"] == {"1": "10.0.0.2:10911"}


def test_the_shipped_slave_conf_is_a_slave_of_make_runs_broker() -> None:
    import warnings

    from rmq.config import load_broker_config

    conf = Path(__file__).parent.parent / "examples" / "broker-slave.conf"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown key
        c = load_broker_config(conf)
    master = load_broker_config(None)
    assert (c.broker_role, c.broker_id) == (BrokerRole.SLAVE, 1)
    assert c.broker_name == master.broker_name and c.listen_port != master.listen_port
    assert list(c.namesrv_addrs) == ["127.0.0.1:9876"]
    assert c.store_path_root_dir != master.store_path_root_dir


def test_commits_made_after_a_slave_restart_before_the_first_copy_are_kept(
    tmp_path: Path,
) -> None:
    client = FakeClient(
        {
            RequestCode.GET_ALL_TOPIC_CONFIG: b"{}",
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: b"{}",
            RequestCode.GET_ALL_CONSUMER_OFFSET: b'{"offsetTable":{"T@G":{0:10}}}',
            RequestCode.GET_ALL_DELAY_OFFSET: b"",
        }
    )
    server = FakeServer(b'{"offsetTable":{"T@G":{0:10}}}')
    master = ""
    sync = SlaveSynchronize(client, server, lambda: master, tmp_path, first_delay_s=3600)
    sync.start()  # the baseline: 10
    sync.stop()
    server.offsets = b'{"offsetTable":{"T@G":{0:14}}}'  # a consumer, master still down
    master = "10.0.0.1:10911"
    assert sync.sync_all()
    assert [
        c[2]["commitOffset"] for c in client.calls if c[1] == RequestCode.UPDATE_CONSUMER_OFFSET
    ] == ["14"]
