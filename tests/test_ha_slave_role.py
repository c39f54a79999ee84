"""BrokerGroupRole with a stand-in store, server and master: promotion writes the epoch note
before switching and starts the master's services; a broker joining a master of a newer epoch
truncates what lies beyond the epoch's start once, a plain restart does not; haMasterAddress
overrides the registration answer; haStatus reads GET_BROKER_HA_STATUS over the wire."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rmq._rmq import RemotingResponse, RemotingServer
from rmq.admin.cli import main
from rmq.broker.role import BrokerGroupRole, EpochNote
from rmq.codes import RequestCode, ResponseCode
from rmq.config import BrokerConfig, BrokerRole

MASTER = "10.0.0.1:10911"
MASTER_HA = "10.0.0.1:10912"


class FakeStore:
    def __init__(self, max_offset: int) -> None:
        self.max_offset = max_offset
        self.calls: list[tuple[str, object]] = []

    def get_max_phy_offset(self) -> int:
        return self.max_offset

    @property
    def ha_listen_port(self) -> int | None:
        return 10912 if ("set_broker_role", "SYNC_MASTER") in self.calls else None

    def set_broker_role(self, role: str) -> None:
        self.calls.append(("set_broker_role", role))

    def ha_update_master_address(self, addr: str) -> None:
        self.calls.append(("ha_update_master_address", addr))

    def truncate_commit_log(self, offset: int) -> int:
        self.calls.append(("truncate_commit_log", offset))
        self.max_offset = offset
        return offset


class FakeServer:
    def __init__(self) -> None:
        self.slave_of: str | None = "unset"
        self.runtime: dict[str, str] = {}

    def set_slave_of(self, master: str | None) -> None:
        self.slave_of = master

    def consumer_offsets_json(self) -> bytes:
        return b'{"offsetTable":{}}'

    def set_runtime_info(self, key: str, value: str | None) -> None:
        if value is None:
            self.runtime.pop(key, None)
        else:
            self.runtime[key] = value


class FakeMaster:
    """Answers GET_BROKER_RUNTIME_INFO with an epoch."""

    def __init__(self, epoch: int, start: int) -> None:
        self.table = {"brokerEpoch": str(epoch), "brokerEpochStartOffset": str(start)}

    def invoke(
        self,
        addr: str,
        code: int,
        ext_fields: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout_ms: int = 3000,
    ) -> RemotingResponse:
        assert code == RequestCode.GET_BROKER_RUNTIME_INFO
        return RemotingResponse(0, None, None, json.dumps({"table": self.table}).encode())


class FakeService:
    def __init__(self, log: list[str], name: str) -> None:
        self.log = log
        self.name = name

    def start(self) -> None:
        self.log.append(f"{self.name} start")

    def stop(self, timeout: float | None = 30.0) -> None:
        self.log.append(f"{self.name} stop")


def make_role(
    tmp: Path, role: BrokerRole, store: FakeStore, client: FakeMaster, **store_conf: str
) -> tuple[BrokerGroupRole, FakeServer, list[object]]:
    server = FakeServer()
    events: list[object] = []
    config = BrokerConfig(
        broker_ip1="127.0.0.1",
        broker_role=role,
        broker_id=0 if role is not BrokerRole.SLAVE else 1,
        store_path_root_dir=str(tmp),
        store={"brokerRole": role.value, **store_conf},
    )
    r = BrokerGroupRole(
        config,
        store=store,  # type: ignore[arg-type]
        server=server,  # type: ignore[arg-type]
        client=client,
        set_broker_id=lambda i, ha: events.append(("broker_id", i, ha)),
        transactions=lambda: FakeService(events, "transactions"),  # type: ignore[arg-type,return-value]
        delay=lambda: FakeService(events, "delay"),  # type: ignore[arg-type,return-value]
    )
    return r, server, events


def test_promotion_notes_the_epoch_then_switches_and_starts_the_master(tmp_path: Path) -> None:
    store = FakeStore(4096)
    role, server, events = make_role(tmp_path, BrokerRole.SLAVE, store, FakeMaster(0, 0))
    role.on_registered(MASTER, MASTER_HA)
    assert server.slave_of == MASTER
    role.switch(BrokerRole.SYNC_MASTER, 0)
    assert EpochNote.load(tmp_path) == EpochNote(1, 4096, 1)
    assert ("set_broker_role", "SYNC_MASTER") in store.calls
    assert server.slave_of is None
    assert server.runtime == {"brokerEpoch": "1", "brokerEpochStartOffset": "4096"}
    assert events == ["delay start", "transactions start", ("broker_id", 0, "127.0.0.1:10912")]
    # Back to slave: the master's services stop, the epoch keys go.
    role.switch(BrokerRole.SLAVE, 1)
    assert events[-3:] == ["transactions stop", "delay stop", ("broker_id", 1, None)]
    assert server.slave_of == "" and server.runtime == {}
    role.stop()


def test_the_old_master_truncates_beyond_the_new_epoch_once(tmp_path: Path) -> None:
    store = FakeStore(1300)
    role, _, _ = make_role(tmp_path, BrokerRole.SLAVE, store, FakeMaster(1, 1000))
    role.on_registered(MASTER, MASTER_HA)
    assert store.calls == [
        ("ha_update_master_address", ""),
        ("truncate_commit_log", 1000),
        ("ha_update_master_address", MASTER_HA),
    ]
    assert EpochNote.load(tmp_path).followed_epoch == 1
    role.on_registered(MASTER, MASTER_HA)  # the same master again: nothing to do
    assert len(store.calls) == 3
    # It restarts as a slave with more bytes (copied since): no truncation this time.
    store2 = FakeStore(5000)
    again, _, _ = make_role(tmp_path, BrokerRole.SLAVE, store2, FakeMaster(1, 1000))
    again.on_registered(MASTER, MASTER_HA)
    assert store2.calls == [("ha_update_master_address", MASTER_HA)]


def test_ha_master_address_overrides_the_registration_answer(tmp_path: Path) -> None:
    store = FakeStore(0)
    role, _, _ = make_role(
        tmp_path, BrokerRole.SLAVE, store, FakeMaster(0, 0), haMasterAddress="10.9.9.9:10912"
    )
    role.on_registered(MASTER, MASTER_HA)
    assert store.calls == [("ha_update_master_address", "10.9.9.9:10912")]


def test_a_master_publishes_its_epoch_at_start(tmp_path: Path) -> None:
    EpochNote(2, 777, 2).save(tmp_path)
    role, server, events = make_role(
        tmp_path, BrokerRole.ASYNC_MASTER, FakeStore(0), FakeMaster(0, 0)
    )
    role.start()
    assert server.runtime == {"brokerEpoch": "2", "brokerEpochStartOffset": "777"}
    assert server.slave_of is None and events == ["delay start", "transactions start"]
    role.stop()


HA_INFO: dict[str, Any] = {
    "master": True,
    "masterCommitLogMaxOffset": 5000,
    "inSyncSlaveNums": 1,
    "haConnectionInfo": [
        {
            "addr": "10.0.0.2:40000",
            "slaveAckOffset": 5000,
            "diff": 0,
            "inSync": True,
            "transferredByteInSecond": 2048,
            "transferFromWhere": 0,
        },
        {
            "addr": "10.0.0.3:40000",
            "slaveAckOffset": 1000,
            "diff": 4000,
            "inSync": False,
            "transferredByteInSecond": 0,
            "transferFromWhere": 0,
        },
    ],
    "haClientRuntimeInfo": {},
}


class HaBroker:
    def handle(self, request: Any) -> RemotingResponse:
        if request.code == RequestCode.GET_BROKER_HA_STATUS:
            return RemotingResponse(0, None, None, json.dumps(HA_INFO).encode())
        return RemotingResponse(ResponseCode.SYSTEM_ERROR, "no message there", None, None)


@pytest.fixture
def ha_broker() -> Iterator[str]:
    server = RemotingServer("127.0.0.1", 0, HaBroker())
    try:
        yield server.local_addr
    finally:
        server.shutdown()


def test_ha_status_shows_each_slaves_offset_and_lag(
    ha_broker: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["-n", "127.0.0.1:1", "haStatus", "-b", ha_broker]) == 0
    out = capsys.readouterr().out
    assert "#MasterCommitLogMaxOffset: 5000" in out and "#InSyncSlaveNum: 1" in out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("10.")}
    assert rows["10.0.0.2:40000"][1:4] == ["5000", "0", "0"]  # caught up: no lag
    assert rows["10.0.0.3:40000"][1:4] == ["1000", "4000", "-"]  # lag time unknown here
    assert rows["10.0.0.3:40000"][-2:] == ["Fall", "Behind"]
    assert main(["-n", "127.0.0.1:1", "--json", "haStatus", "-b", ha_broker]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["lagMs"] for c in doc["haConnectionInfo"]] == [0, None]
