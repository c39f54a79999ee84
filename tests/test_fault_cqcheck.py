"""Issue 13, item 2, end to end: a broker whose ConsumeQueue file was damaged while it was
stopped rebuilds the queue from the CommitLog on a clean start, so its max offset is right and
every queue offset serves its own message (the issue's row: max offset wrong, and pulling
offset 100 returned the message stored at queue offset 14 999)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    broker_runtime_info,
    free_port,
    send_v2_header,
    wait_until,
)
from rmq._rmq import RemotingClient, decode_messages
from rmq.codes import RequestCode, ResponseCode

TOPIC = "CqCheck"
MESSAGES = 15_000
UNIT = 20  # bytes per ConsumeQueue unit


def start(tmp: Path, port: int, namesrv: str) -> BrokerProcess:
    conf = tmp / "broker.conf"
    # The default ConsumeQueue file (300 000 units), as in the issue: one file holds the queue.
    store_conf = "".join(
        line + "\n"
        for line in TEST_STORE_CONF.splitlines()
        if not line.startswith("mappedFileSizeConsumeQueue")
    )
    conf.write_text(
        "brokerClusterName = CqCluster\n"
        "brokerName = broker-cq\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {tmp / 'store'}\n"
        "mappedFileSizeCommitLog = 4194304\n" + store_conf
    )
    proc = BrokerProcess("-c", str(conf), "-n", namesrv, cwd=tmp)
    proc.wait_for("listening on")
    return proc


def max_offset(client: RemotingClient, addr: str) -> int:
    r = client.invoke(addr, RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"})
    return int(r.ext_fields["offset"]) if r.code == ResponseCode.SUCCESS else -1


def pull_one(client: RemotingClient, addr: str, offset: int) -> tuple[int, bytes]:
    """(queue offset, body) of the message a pull of one from ``offset`` returns."""
    header = {
        "consumerGroup": "cq-group",
        "topic": TOPIC,
        "queueId": "0",
        "queueOffset": str(offset),
        "maxMsgNums": "1",
        "sysFlag": "4",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
    }
    r = client.invoke(addr, RequestCode.PULL_MESSAGE, header)
    assert r.code == ResponseCode.SUCCESS and r.body is not None, (offset, r.code, r.remark)
    (m,) = decode_messages(r.body)
    return m.queue_offset, m.body


def body(i: int) -> bytes:
    return f"cq-{i:05d}".encode()


def shift(units: bytes) -> bytes:
    """Units 100..14 998 cut out, the rest moved up, the file's length kept with zeros."""
    kept = units[: 100 * UNIT] + units[14_999 * UNIT : MESSAGES * UNIT]
    return kept + b"\0" * (len(units) - len(kept))


def overwrite(units: bytes) -> bytes:
    """Unit 100 replaced by unit 14 999."""
    return units[: 100 * UNIT] + units[14_999 * UNIT : 15_000 * UNIT] + units[101 * UNIT :]


@pytest.mark.parametrize("damage", [shift, overwrite], ids=["shifted", "overwritten"])
def test_a_damaged_consume_queue_is_rebuilt_on_a_clean_start(
    tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str], damage: Callable[[bytes], bytes]
) -> None:
    ns = namesrv[1]
    port = free_port()
    addr = f"127.0.0.1:{port}"
    client = RemotingClient()
    proc = start(tmp_path, port, ns)
    try:

        def send(i: int) -> str:
            header = send_v2_header("cq-producer", TOPIC, f"t{i % 3}", f"k{i}", queue_id=0)
            r = client.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body(i))
            assert r.code == ResponseCode.SUCCESS, r.remark
            return r.ext_fields["queueOffset"]

        assert send(0) == "0"  # creates the topic
        with ThreadPoolExecutor(8) as pool:
            offsets = sorted(int(o) for o in pool.map(send, range(1, MESSAGES)))
        assert offsets == list(range(1, MESSAGES))
        wait_until(lambda: max_offset(client, addr) == MESSAGES, f"{MESSAGES} messages dispatched")
        # Offsets follow arrival, not i: remember which body each offset holds.
        stored = {o: pull_one(client, addr, o)[1] for o in (100, 14_999)}
        assert proc.stop(signal.SIGTERM) == 0, proc.log
    finally:
        proc.kill()

    (cq_file,) = (tmp_path / "store" / "consumequeue" / TOPIC / "0").iterdir()
    units = cq_file.read_bytes()
    cq_file.write_bytes(damage(units))

    proc = start(tmp_path, port, ns)
    try:
        assert max_offset(client, addr) == MESSAGES
        # Each sampled offset returns the message stored at it, never another.
        assert pull_one(client, addr, 100) == (100, stored[100])
        assert pull_one(client, addr, 14_999) == (14_999, stored[14_999])
        sample = [0, 1, 99, 101, 102, 5_000, 7_777, 14_000, 14_998]
        got = [pull_one(client, addr, o)[0] for o in sample]
        assert got == sample
        # The rebuilt queue's units are the undamaged file's, byte for byte.
        assert cq_file.read_bytes()[: MESSAGES * UNIT] == units[: MESSAGES * UNIT]
        table = broker_runtime_info(client, addr)
        assert table["consumeQueueRebuiltAtStart"] == "1", table
        assert f"ConsumeQueue {TOPIC}/0 is damaged" in proc.log
        assert proc.stop(signal.SIGTERM) == 0, proc.log
    finally:
        proc.kill()
        client.close()
