"""Catch-up rate of a slave far behind its master, against a plain loopback socket copy of the
same CommitLog bytes measured in the same run (SPEC §8: figures are ratios to a baseline).

    .venv/bin/python benches/ha_catchup.py [--mib 256] [--runs 3]

A master store (``rmq._rmq.MessageStore``, ASYNC_MASTER, ASYNC_FLUSH, 1 GiB CommitLog files) is
filled with ``--mib`` MiB of 1 KiB messages under ``target/bench-tmp``; then, per run, an empty
SLAVE store opens with ``haMasterAddress`` pointing at the master's HA port and the time until
its CommitLog max offset and dispatch reach the master's is taken. The baseline sends the
master's CommitLog file over a 127.0.0.1 TCP connection with ``socket.sendfile`` to a reader
that writes every byte into a file (what replication does, minus the protocol, the mapped
file and dispatch). Medians of the runs are printed as a Markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import socket
import statistics
import threading
import time
from pathlib import Path

from rmq._rmq import MessageStore

TMP = Path(__file__).resolve().parent.parent / "target" / "bench-tmp" / "ha_catchup"
KEYS = {
    "mappedFileSizeCommitLog": str(1 << 30),
    "diskSpaceWarningLevelRatio": "99",
    "diskSpaceCleanForciblyRatio": "99",
    "diskMaxUsedSpaceRatio": "99",
}


def fill(master: MessageStore, mib: int) -> None:
    body = b"x" * 1024
    batch = [body] * 1000
    while master.max_phy_offset < mib << 20:
        master.put_messages("HaBench", 0, batch)


def catch_up(master: MessageStore, port: int, run: int) -> float:
    root = TMP / f"slave-{run}"
    shutil.rmtree(root, ignore_errors=True)
    keys = {**KEYS, "brokerRole": "SLAVE", "haMasterAddress": f"127.0.0.1:{port}"}
    t0 = time.perf_counter()
    slave = MessageStore(str(root), keys)
    target = master.max_phy_offset
    while slave.max_phy_offset < target or slave.dispatch_behind_bytes() > 0:
        time.sleep(0.002)
    elapsed = time.perf_counter() - t0
    slave.shutdown()
    shutil.rmtree(root, ignore_errors=True)
    return elapsed


def socket_copy(path: Path, size: int, run: int) -> float:
    out = TMP / f"copy-{run}"
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def receive() -> None:
        conn, _ = server.accept()
        with conn, out.open("wb") as f:
            left = size
            while left > 0:
                chunk = conn.recv(1 << 20)
                if not chunk:
                    break
                f.write(chunk)
                left -= len(chunk)

    t = threading.Thread(target=receive)
    t0 = time.perf_counter()
    t.start()
    with socket.create_connection(("127.0.0.1", port)) as s, path.open("rb") as f:
        s.sendfile(f, 0, size)
    t.join()
    elapsed = time.perf_counter() - t0
    server.close()
    out.unlink()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if args.mib << 20 >= int(KEYS["mappedFileSizeCommitLog"]) - (1 << 20):
        # An empty slave starts from the beginning of the master's last CommitLog file (as in
        # RocketMQ): past one file, only the last one's bytes would be copied.
        ap.error("--mib must stay below 1023 (one 1 GiB CommitLog file)")
    shutil.rmtree(TMP, ignore_errors=True)
    TMP.mkdir(parents=True)
    master = MessageStore(str(TMP / "master"), {**KEYS, "haListenPort": "0"})
    try:
        fill(master, args.mib)
        master.flush()
        port = master.ha_listen_port
        assert port is not None
        size = master.max_phy_offset
        first = next((TMP / "master" / "commitlog").iterdir())
        ha = [catch_up(master, port, r) for r in range(args.runs)]
        base = [socket_copy(first, size, r) for r in range(args.runs)]
    finally:
        master.shutdown()
    mib = size / (1 << 20)
    ha_rate, base_rate = mib / statistics.median(ha), mib / statistics.median(base)
    print(f"| {mib:.0f} MiB behind | MiB/s | ratio |")
    print("|---|---|---|")
    print(
        f"| slave catch-up (HA protocol, append, dispatch) | {ha_rate:.0f} "
        f"| {ha_rate / base_rate:.2f} |"
    )
    print(f"| loopback socket copy (sendfile → recv → write) | {base_rate:.0f} | 1.00 |")
    shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    main()
