"""Disk pressure from another process's file (issue 13, the disk-policy row): a real broker on
a small tmpfs holds messages a subscription group has consumed in part; another file fills the
disk. Retention may delete what the group consumed, never what it has not: every unconsumed
message stays readable, sends are refused with a remark saying what to do while the disk is
full, pulls and offset commits go on, and sends work again once the other file is gone.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

import rmq
from helpers import (
    BrokerProcess,
    broker_runtime_info,
    create_topic,
    free_port,
    pull_header,
    send_v2_header,
    small_filesystem,
    update_offset_header,
    wait_until,
)
from rmq._rmq import RemotingClient, decode_messages
from rmq.codes import RequestCode, ResponseCode
from rmq.errors import RmqError

TOPIC = "DiskTopic"
GROUP = "disk-group"
QUEUES = 4
MESSAGES = 16_000
BODY = 1000
MIB = 1 << 20


def body(i: int) -> bytes:
    return b"%08d" % i + b"." * (BODY - 8)


def fill(path: Path) -> None:
    """Append to ``path`` until the filesystem has no room left (another process's file)."""
    chunk = b"\0" * (64 << 10)
    with path.open("ab") as f:
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass


def pull_all(client: RemotingClient, addr: str, queue_id: int, start: int, end: int) -> list[int]:
    """The message numbers of ``queue_id`` from queue offset ``start`` to ``end``."""
    got: list[int] = []
    offset = start
    while offset < end:
        header = pull_header(GROUP, TOPIC, queue_id, max_nums=32)
        header["queueOffset"] = str(offset)
        r = client.invoke(addr, RequestCode.PULL_MESSAGE, header)
        assert r.code == ResponseCode.SUCCESS, (queue_id, offset, r.code, r.remark)
        assert r.body is not None
        got.extend(int(m.body[:8]) for m in decode_messages(r.body))
        offset = int(r.ext_fields["nextBeginOffset"])
    return got


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_filesystem(tmp_path, 40) as mnt:
        yield mnt


def test_a_full_disk_keeps_unconsumed_messages_and_refuses_writes_until_freed(
    tmp_path: Path, disk: Path, namesrv: tuple[subprocess.Popen[str], str]
) -> None:
    port = free_port()
    addr = f"127.0.0.1:{port}"
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerName = broker-disk\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {disk / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n"
        "mappedFileSizeConsumeQueue = 120000\n"
        "messageIndexEnable = false\n"
        "cleanResourceInterval = 200\n"
        "deleteCommitLogFilesInterval = 0\n"
        "destroyMapedFileIntervalForcibly = 1000\n"
        "fileReservedTime = 72\n"
    )
    proc = BrokerProcess("-c", str(conf), "-n", namesrv[1], cwd=tmp_path)
    client = RemotingClient()
    try:
        proc.wait_for("listening on")
        create_topic(namesrv[1], [addr], TOPIC, QUEUES)
        with rmq.Producer("disk-producer", namesrv[1]) as producer:
            for start in range(0, MESSAGES, 200):
                producer.send_batch(
                    [rmq.Message(TOPIC, body(i)) for i in range(start, start + 200)]
                )
        maxes = [0] * QUEUES

        def dispatched() -> bool:
            for q in range(QUEUES):
                h = {"topic": TOPIC, "queueId": str(q)}
                maxes[q] = int(
                    client.invoke(addr, RequestCode.GET_MAX_OFFSET, h).ext_fields["offset"]
                )
            return sum(maxes) == MESSAGES

        wait_until(dispatched, "every message in its ConsumeQueue")
        # The group has consumed the first half of each queue.
        committed = [m // 2 for m in maxes]
        for q, offset in enumerate(committed):
            ext = update_offset_header(GROUP, TOPIC, q, offset)
            r = client.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext)
            assert r.code == ResponseCode.SUCCESS, r.remark
        unconsumed = {q: pull_all(client, addr, q, committed[q], maxes[q]) for q in range(QUEUES)}
        assert sum(len(v) for v in unconsumed.values()) == MESSAGES // 2
        info = broker_runtime_info(client, addr)
        assert info["commitLogMinOffset"] == "0"
        assert float(info["commitLogDiskRatio"]) < 0.75

        # Another process fills the disk: retention forces deletion, of consumed files only.
        filler = disk / "other-process.data"
        fill(filler)
        deleted = proc.wait_for("CommitLog file(s) (")
        assert "forced): 00000000000000000000 to " in deleted, deleted
        line = proc.wait_for("but CommitLog deletion stops at offset")
        assert f"subscription group {GROUP} on {TOPIC}/" in line, line
        assert "cleanUnconsumedFileForciblyEnable=true" in line, line
        floor = int(line.split("stops at offset ")[1].split(":")[0])
        # What was freed, the other process takes too: the disk stays full.
        fill(filler)
        wait_until(
            lambda: broker_runtime_info(client, addr)["diskFull"] == "true", "writes refused"
        )
        min_offset = int(broker_runtime_info(client, addr)["commitLogMinOffset"])
        files_deleted = min_offset // MIB
        assert min_offset == floor // MIB * MIB, (min_offset, floor)
        assert files_deleted >= 5, f"only {files_deleted} consumed files were deleted"

        # Every message the group has not consumed is still readable, and only those.
        after = {q: pull_all(client, addr, q, committed[q], maxes[q]) for q in range(QUEUES)}
        assert after == unconsumed
        assert sum(len(v) for v in after.values()) == MESSAGES // 2

        # Sends are refused with a remark that says what happened and what to do.
        header = send_v2_header("disk-producer", TOPIC, "", "", 0)
        r = client.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, b"refused")
        assert r.code == ResponseCode.SERVICE_NOT_AVAILABLE, (r.code, r.remark)
        for part in (
            "disk full",
            "over diskSpaceWarningLevelRatio (90 %)",
            f"subscription group {GROUP} on {TOPIC}/",
            "free space on that disk",
            "add consumers",
            "cleanUnconsumedFileForciblyEnable=true",
        ):
            assert part in (r.remark or ""), (part, r.remark)
        with (
            rmq.Producer("disk-producer-2", namesrv[1], retry_times_when_send_failed=0) as p,
            pytest.raises(RmqError, match="cleanUnconsumedFileForciblyEnable"),
        ):
            p.send(rmq.Message(TOPIC, b"refused too"))

        # Consumption goes on: offsets are committed and read back while writes are refused.
        for q in range(QUEUES):
            ext = update_offset_header(GROUP, TOPIC, q, maxes[q])
            assert client.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, ext).code == 0
            h = {"consumerGroup": GROUP, "topic": TOPIC, "queueId": str(q)}
            r = client.invoke(addr, RequestCode.QUERY_CONSUMER_OFFSET, h)
            assert r.ext_fields["offset"] == str(maxes[q])

        # The other file goes: writes resume.
        filler.unlink()
        wait_until(
            lambda: broker_runtime_info(client, addr)["diskFull"] == "false", "writes accepted"
        )
        r = client.invoke(addr, RequestCode.SEND_MESSAGE_V2, header, body(MESSAGES))
        assert r.code == ResponseCode.SUCCESS, r.remark
        assert r.ext_fields["queueOffset"] == str(maxes[0])
    finally:
        client.close()
        proc.kill()
