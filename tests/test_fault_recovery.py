"""Fault cases of CommitLog recovery with a real broker process (issue 13, item 1): 4 bytes
flipped inside one record in the middle of the CommitLog cost that message only, and a
CommitLog file shorter than ``mappedFileSizeCommitLog`` is opened and served.

Each test stores N messages, stops the broker cleanly, damages the store by hand, starts the
broker again and pulls every queue from offset 0."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    broker_runtime_info,
    create_topic,
    free_port,
    route_queues,
    wait_until,
)
from rmq._rmq import ClientInstance, RemotingClient, decode_messages

N = 20_000
QUEUES = 4
TOPIC = "FaultRecovery"
FILE_SIZE = 1_048_576  # several CommitLog files for N messages


def body_of(i: int) -> bytes:
    return (f"m-{i:06d}|" * 12).encode()


def index_of(body: bytes) -> int:
    return int(body[2:8])


class Broker:
    """One broker on a store that outlives its processes."""

    def __init__(self, tmp: Path, namesrv: str) -> None:
        self.tmp = tmp
        self.namesrv = namesrv
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.root = tmp / "store"
        self.conf = tmp / "broker.conf"
        self.conf.write_text(
            "brokerClusterName = FaultCluster\n"
            "brokerName = broker-fault\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {self.port}\n"
            f"storePathRootDir = {self.root}\n"
            f"mappedFileSizeCommitLog = {FILE_SIZE}\n"
            "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF
        )
        self.proc: BrokerProcess | None = None

    def start(self) -> None:
        self.proc = BrokerProcess("-c", str(self.conf), "-n", self.namesrv, cwd=self.tmp)
        self.proc.wait_for("listening on")

    def stop(self) -> str:
        assert self.proc is not None
        code = self.proc.stop()
        assert code == 0, self.proc.log
        return self.proc.log

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()

    def runtime_info(self) -> dict[str, str]:
        return broker_runtime_info(RemotingClient(), self.addr)

    def commit_log_files(self) -> list[Path]:
        return sorted((self.root / "commitlog").iterdir())


@pytest.fixture
def broker(tmp_path: Path, namesrv: tuple[subprocess.Popen[str], str]) -> Iterator[Broker]:
    b = Broker(tmp_path, namesrv[1])
    try:
        yield b
    finally:
        b.kill()


def store_messages(b: Broker) -> None:
    """N messages, round-robin over the queues (message i in queue i % 4), then a clean stop."""
    b.start()
    create_topic(b.namesrv, [b.addr], TOPIC, QUEUES)
    with rmq.Producer("pg-fault", b.namesrv) as producer:
        queues = sorted(producer.fetch_publish_message_queues(TOPIC), key=lambda q: q.queue_id)
        for start in range(0, N, 400):
            for q in queues:
                ids = range(start + q.queue_id, min(start + 400, N), QUEUES)
                producer.send_batch([rmq.Message(TOPIC, body_of(i)) for i in ids], queue=q)
    pull_all(b, expect_at_least=N)  # all dispatched before the stop
    b.stop()


def pull_all(b: Broker, expect_at_least: int = 0) -> dict[int, int]:
    """Every message of the topic by index, mapped to its queue, pulled from offset 0."""
    inst = ClientInstance(b.namesrv)
    try:
        wait_until(lambda: len(route_queues(inst, TOPIC)) == QUEUES, "the topic's route")
        mqs = route_queues(inst, TOPIC)
        seen: dict[int, int] = {}
        want = expect_at_least // QUEUES
        for mq in mqs:
            if want:
                wait_until(lambda mq=mq: inst.max_offset(mq) >= want, "dispatch")
            offset, end = 0, inst.max_offset(mq)
            while offset < end:
                r = inst.pull("cg-fault", mq, offset, 32)
                assert r.next_begin_offset > offset, (mq, offset, r.status)
                for m in r.messages:
                    i = index_of(m.body)
                    assert m.body == body_of(i) and i % QUEUES == mq.queue_id
                    assert i not in seen, f"message {i} served twice"
                    seen[i] = mq.queue_id
                offset = r.next_begin_offset
        return seen
    finally:
        inst.shutdown()


def records(path: Path) -> list[tuple[int, int]]:
    """(position, size) of each record in a CommitLog file, up to its BLANK filler or zeroes."""
    raw = path.read_bytes()
    out: list[tuple[int, int]] = []
    pos = 0
    while pos + 8 <= len(raw) and raw[pos + 4 : pos + 7] == b"\xda\xa3\x20":
        size = int.from_bytes(raw[pos : pos + 4], "big")
        out.append((pos, size))
        pos += size
    return out


def data_files(b: Broker) -> list[Path]:
    return [f for f in b.commit_log_files() if records(f)]


def test_four_flipped_bytes_in_one_record_mid_log_lose_that_message_only(broker: Broker) -> None:
    store_messages(broker)
    files = data_files(broker)
    assert len(files) >= 3, files
    # After a clean stop recovery reads the newest three files (RocketMQ's rule); damage the
    # one before the newest, in the middle of its records: later files must all survive.
    target = files[-2]
    pos, size = records(target)[len(records(target)) // 2]
    raw = bytearray(target.read_bytes())
    victim = index_of(decode_messages(bytes(raw[pos : pos + size]))[0].body)
    raw[pos + 100 : pos + 104] = bytes(b ^ 0xFF for b in raw[pos + 100 : pos + 104])
    target.write_bytes(raw)
    names_before = [f.name for f in files]

    broker.start()
    seen = pull_all(broker)
    assert len(seen) == N - 1, f"{N - len(seen)} messages lost, expected exactly 1"
    assert set(range(N)) - set(seen) == {victim}
    info = broker.runtime_info()
    assert info["commitLogDamagedRanges"] == "1"
    assert info["commitLogDamagedBytes"] == str(size)
    assert [f.name for f in data_files(broker)] == names_before, "a later file was deleted"
    log = broker.stop()
    assert f"{target} offset {pos}: {size} bytes are damaged and unreadable" in log, log
    assert "never acknowledged" not in log


def test_a_short_commit_log_file_is_extended_and_served(broker: Broker) -> None:
    store_messages(broker)
    newest = data_files(broker)[-1]
    recs = records(newest)
    # Cut the newest file inside its tenth-last record: the records from there on are gone,
    # every other message is served.
    cut_pos, _ = recs[-10]
    raw = newest.read_bytes()
    lost = {index_of(decode_messages(raw[p : p + s])[0].body) for p, s in recs[-10:]}
    with newest.open("r+b") as f:
        f.truncate(cut_pos + 20)
    assert newest.stat().st_size < FILE_SIZE

    broker.start()
    assert newest.stat().st_size == FILE_SIZE
    seen = pull_all(broker)
    assert len(seen) == N - 10
    assert set(range(N)) - set(seen) == lost
    assert broker.runtime_info()["commitLogDamagedRanges"] == "0"
    # The broker takes new messages right after the last whole record.
    with rmq.Producer("pg-fault-after", broker.namesrv) as producer:
        r = producer.send(rmq.Message(TOPIC, b"after"))
    assert int(r.offset_msg_id[-16:], 16) == int(newest.name) + cut_pos
    log = broker.stop()
    assert f"store file {newest} is {cut_pos + 20} bytes, shorter than the configured" in log, log
