"""ENOSPC never breaks a restart (issue 13, item 4), with a real broker process.

On a 256 MiB tmpfs with the *default* index settings (a 420 MB IndexFile, sparse) a producer
sends until the disk is full: sends are refused with a clear remark, the broker neither dies of
a SIGBUS nor logs a line per message about the index, shuts down cleanly on SIGTERM, starts
again and serves every acknowledged message. And a fresh broker holding 100 messages uses a few
MB of real disk, not the 2.5 GB the issue measured.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
from pathlib import Path

import rmq
from helpers import BrokerProcess, create_topic, free_port, small_filesystem, wait_until
from rmq._rmq import ClientInstance
from rmq.errors import RmqError

MIB = 1 << 20


def broker_conf(tmp_path: Path, store: Path) -> tuple[Path, str]:
    """A broker config with every store default but the disk guards: at 90 % (the default)
    the guard would refuse writes before the disk fills, and this test is about a disk that
    really fills."""
    port = free_port()
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClusterName = FullCluster\n"
        "brokerName = broker-full\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {store}\n"
        "diskSpaceWarningLevelRatio = 99\n"
        "diskSpaceCleanForciblyRatio = 99\n"
    )
    return conf, f"127.0.0.1:{port}"


def start(conf: Path, cwd: Path) -> tuple[BrokerProcess, str]:
    broker = BrokerProcess("-c", str(conf), cwd=cwd)
    banner = broker.wait_for("store open at")
    found = re.search(r"nameservers (\S+);", banner)
    assert found, banner
    return broker, found.group(1)


def pull_all(namesrv: str, topic: str) -> dict[str, bytes]:
    """Every message of ``topic`` by its KEYS."""
    inst = ClientInstance(namesrv)
    got: dict[str, bytes] = {}
    try:
        for mq in inst.fetch_subscribe_queues(topic):
            offset = 0
            while True:
                r = inst.pull("check", mq, offset, 32)
                if r.status != "FOUND":
                    break
                for m in r.messages:
                    assert m.keys is not None
                    got[m.keys] = m.body
                offset = r.next_begin_offset
    finally:
        inst.shutdown()
    return got


def fill_up(path: Path) -> None:
    """Write ``path`` until the file system has not one free block left."""
    with path.open("wb", buffering=0) as f:
        for size in (1 << 20, 4096):
            try:
                while True:
                    f.write(b"\xff" * size)
            except OSError:
                pass


def usage(root: Path) -> tuple[int, int]:
    """Bytes of disk (st_blocks) and apparent bytes of the files under ``root``."""
    blocks = size = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            st = os.stat(os.path.join(dirpath, name))
            blocks += st.st_blocks * 512
            size += st.st_size
    return blocks, size


def test_a_full_small_disk_refuses_sends_and_the_broker_starts_again(tmp_path: Path) -> None:
    with small_filesystem(tmp_path, 256) as mnt:
        store = mnt / "store"
        conf, addr = broker_conf(tmp_path, store)
        broker, namesrv = start(conf, tmp_path)
        create_topic(namesrv, [addr], "Full", 4)
        acked: dict[str, str] = {}
        refused: RmqError | None = None
        # Incompressible 64 KiB bodies, each with a key (so the index is written too).
        with rmq.Producer("pg-full", namesrv, retry_times_when_send_failed=0) as producer:
            for i in range(8000):
                body = os.urandom(64 << 10)
                try:
                    producer.send(rmq.Message("Full", body, keys=[f"k{i}"]))
                except RmqError as exc:
                    refused = exc
                    break
                acked[f"k{i}"] = hashlib.sha1(body).hexdigest()
            assert refused is not None, "8000 sends of 64 KiB did not fill 256 MiB"
            # Still refused, still cleanly, a moment later.
            try:
                producer.send(rmq.Message("Full", os.urandom(64 << 10), keys=["late"]))
                raise AssertionError("a send after the disk filled was accepted")
            except RmqError as exc:
                assert "disk full" in str(exc), exc
            assert "disk full" in str(refused) and "not stored" in str(refused), refused
            # Most of the 256 MiB went to messages: more than 200 MiB of them were acked.
            assert len(acked) * 64 << 10 > 200 * MIB, len(acked)
            # Then another process takes what the broker kept free, to the last byte. Small
            # sends with keys still fit the CommitLog's reserved blocks (or are refused
            # cleanly); their index pages cannot be allocated.
            fill_up(mnt / "filler")
            for i in range(200):
                try:
                    producer.send(rmq.Message("Full", b"small %d" % i, keys=[f"s{i}"]))
                    acked[f"s{i}"] = hashlib.sha1(b"small %d" % i).hexdigest()
                except RmqError as exc:
                    assert "disk full" in str(exc), exc
        assert os.statvfs(mnt).f_bavail == 0, "the disk is full"

        code = broker.stop(signal.SIGTERM)
        assert code == 0, broker.log  # -7 would be a SIGBUS
        log = broker.log
        assert "Traceback" not in log, log
        index_lines = [line for line in log.splitlines() if "index" in line.lower()]
        assert len(index_lines) <= 3, "\n".join(index_lines[:10])
        # The final persist found no space: said once per file, the old files kept.
        assert "topics.json" in log and "previous version" in log, log
        assert "shutdown complete" in log and not (store / "abort").exists(), log
        leftovers = [p for p in store.rglob("*") if p.name.endswith(".tmp")]
        assert not leftovers, leftovers

        # The disk is as full as before: the broker starts and serves every acked message.
        broker, namesrv = start(conf, tmp_path)
        try:
            wait_until(
                lambda: len(ClientInstance(namesrv).fetch_subscribe_queues("Full")) == 4,
                "the topic's route after the restart",
            )
            got = pull_all(namesrv, "Full")
            served = {key: hashlib.sha1(body).hexdigest() for key, body in got.items()}
            missing = [k for k in acked if served.get(k) != acked[k]]
            assert not missing, f"{len(missing)} of {len(acked)} acked messages not served"
            assert len(served) == len(acked), "only acked messages were stored"
        finally:
            assert broker.stop(signal.SIGTERM) == 0, broker.log


def test_a_fresh_broker_with_100_messages_uses_little_disk(tmp_path: Path) -> None:
    store = tmp_path / "store"
    conf, addr = broker_conf(tmp_path, store)
    broker, namesrv = start(conf, tmp_path)
    try:
        create_topic(namesrv, [addr], "Small", 4)
        with rmq.Producer("pg-small", namesrv) as producer:
            for i in range(100):
                producer.send(rmq.Message("Small", b"m%03d" % i * 100, keys=[f"k{i}"]))
        inst = ClientInstance(namesrv)
        try:
            queues = inst.fetch_subscribe_queues("Small")
            wait_until(lambda: sum(inst.max_offset(mq) for mq in queues) == 100, "100 dispatched")
        finally:
            inst.shutdown()
    finally:
        assert broker.stop(signal.SIGTERM) == 0, broker.log
    blocks, size = usage(store)
    # Files of the default sizes exist (a 1 GiB CommitLog file, a 420 MB index file) but are
    # sparse: the issue measured 2.5 GB of real disk for this.
    assert size > 1400 * MIB, size
    assert blocks < 100 * MIB, f"{blocks / MIB:.1f} MiB of disk for 100 messages"
    assert blocks < 16 * MIB, f"{blocks / MIB:.1f} MiB of disk for 100 messages"
