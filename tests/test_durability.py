"""Durability: nothing acknowledged is lost to a kill -9 or a full disk, and a full disk or a
disk over the warning level gives an error that says so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmq import errors
from rmq._rmq import MessageStore

WRITER_CONFIG = {
    "mappedFileSizeCommitLog": "262144",
    "mappedFileSizeConsumeQueue": "6000",
    "maxHashSlotNum": "1024",
    "maxIndexNum": "8192",
    "diskSpaceWarningLevelRatio": "99",  # a busy shared /tmp must not refuse test writes
}

# The writer acknowledges each message on stdout only after put_message returned.
WRITER = textwrap.dedent(
    """
    import json, sys
    from rmq._rmq import MessageStore
    root, flush = sys.argv[1], sys.argv[2]
    store = MessageStore(root, {"flushDiskType": flush, **json.loads(sys.argv[3])})
    i = 0
    while True:
        body = (f"seq-{i:08d}|" * 20).encode()
        r = store.put_message("Durable", i % 4, body, {"KEYS": f"k{i}"})
        if r.status != "PUT_OK":
            print(f"NOTOK {i} {r.status}", flush=True)
        else:
            print(f"ACK {i}", flush=True)
        i += 1
    """
)


def expected_body(i: int) -> bytes:
    return (f"seq-{i:08d}|" * 20).encode()


def all_messages(store: MessageStore, queues: int) -> dict[int, bytes]:
    seen: dict[int, bytes] = {}
    for q in range(queues):
        offset = store.get_min_offset_in_queue("Durable", q)
        while True:
            r = store.get_message("Durable", q, offset, max_count=32)
            if r.status != "FOUND":
                break
            for m in r.messages:
                seq = int(m.body[4:12])
                assert m.body == expected_body(seq), f"corrupt body for seq {seq}"
                assert m.queue_id == q == seq % 4
                seen[seq] = m.body
            offset = r.next_begin_offset
    return seen


def run_writer_and_kill(root: Path, flush: str, acks_wanted: int) -> list[int]:
    acked: list[int] = []
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(root), flush, json.dumps(WRITER_CONFIG)],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for line in proc.stdout:
            kind, seq, *_ = line.split()
            assert kind == "ACK", line
            acked.append(int(seq))
            if len(acked) >= acks_wanted or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # Acks already written to the pipe before the kill count too.
        for line in proc.stdout.read().splitlines():
            kind, seq, *_ = line.split()
            if kind == "ACK":
                acked.append(int(seq))
    return acked


@pytest.mark.parametrize("flush", ["SYNC_FLUSH", "ASYNC_FLUSH"])
def test_kill_9_loses_nothing_acknowledged(tmp_path: Path, flush: str) -> None:
    acked = run_writer_and_kill(tmp_path, flush, acks_wanted=3000)
    assert len(acked) >= 3000
    assert (tmp_path / "abort").exists(), "the writer was killed, not shut down"
    with MessageStore(str(tmp_path), WRITER_CONFIG) as store:
        assert not store.last_exit_ok
        seen = all_messages(store, 4)
        missing = set(acked) - set(seen)
        assert not missing, f"{len(missing)} acknowledged messages lost, e.g. {sorted(missing)[:5]}"
        # What survived is a prefix of the send order: no holes, nothing half-written.
        assert sorted(seen) == list(range(len(seen)))
        # Keys of acknowledged messages are queryable (the index was rebuilt if needed).
        last = max(acked)
        assert [m.body for m in store.query_message("Durable", f"k{last}")] == [expected_body(last)]
        # The store carries on: the next message in queue 0 gets the next queue offset.
        nxt = store.put_message("Durable", 0, b"after-crash")
        assert nxt.queue_offset == len([s for s in seen if s % 4 == 0])


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A real 4 MiB file system, so ENOSPC and high usage are real."""
    mnt = tmp_path / "tmpfs"
    mnt.mkdir()
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, (
        f"these tests mount a small tmpfs and need root (CI runs as root): {res.stderr.strip()}"
    )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


SMALL_ON_TMPFS = {
    "mappedFileSizeCommitLog": "1048576",
    "mappedFileSizeConsumeQueue": "6000",
    "maxHashSlotNum": "64",
    "maxIndexNum": "512",
    "messageIndexEnable": "false",
}


def test_full_disk_gives_clear_error_and_keeps_acked_data(tmpfs: Path) -> None:
    root = tmpfs / "store"
    ballast = tmpfs / "ballast"
    ballast.write_bytes(b"\0" * 512 * 1024)  # space to give back once the disk is full
    acked: dict[int, int] = {}
    with MessageStore(str(root), SMALL_ON_TMPFS) as store:
        # Files are sparse: the put that finds no room for its blocks is refused (before the
        # disk is quite full: the CommitLog leaves some for the ConsumeQueues).
        with pytest.raises(errors.ServiceNotAvailableError) as info:
            for i in range(100_000):
                acked[i] = store.put_message("Durable", i % 4, expected_body(i)).wrote_offset
        message = str(info.value)
        assert "disk full" in message and "was not stored" in message, message
        assert len(acked) > 1000  # MiB-sized files went in before the disk filled
        # Every acknowledged message is in the CommitLog, intact.
        for i, offset in acked.items():
            m = store.look_message_by_offset(offset)
            assert m is not None and m.body == expected_body(i)
        # With space back, dispatch (which may have been blocked creating a ConsumeQueue
        # file) catches up by itself and every message is consumable.
        ballast.unlink()
        deadline = time.monotonic() + 10
        while store.dispatch_behind_bytes() > 0:
            assert time.monotonic() < deadline, "dispatch did not resume after space was freed"
            time.sleep(0.01)
        assert set(all_messages(store, 4)) == set(acked)
    with MessageStore(str(root), SMALL_ON_TMPFS) as store:
        assert set(all_messages(store, 4)) == set(acked)


def test_disk_over_warning_level_refuses_writes_until_space_is_freed(tmpfs: Path) -> None:
    root = tmpfs / "store"
    cfg = {**SMALL_ON_TMPFS, "cleanResourceInterval": "3600000"}
    with MessageStore(str(root), cfg) as store:
        assert store.put_message("T", 0, b"before").ok
        while store.dispatch_behind_bytes() > 0:  # its ConsumeQueue file exists now
            time.sleep(0.001)
        filler = tmpfs / "filler"
        with filler.open("wb", buffering=0) as f:  # fill the file system, give back ~2.5 %
            try:
                while True:
                    f.write(b"\0" * 65536)
            except OSError:
                pass
            f.truncate(max(0, f.tell() - 100 * 1024))
        st = os.statvfs(tmpfs)
        assert 1 - st.f_bavail / st.f_blocks > 0.90
        store.check_disk_space()
        assert not store.is_writeable()
        with pytest.raises(errors.ServiceNotAvailableError, match="disk full"):
            store.put_message("T", 0, b"refused")
        filler.unlink()
        store.check_disk_space()
        assert store.is_writeable()
        assert store.put_message("T", 0, b"after").queue_offset == 1
