"""The quick-start store: `make run`'s examples/broker-dev.conf and its slave's config.

`make run` starts the broker with examples/broker-dev.conf (small CommitLog, ConsumeQueue and
IndexFile sizes) so a broker holding a few messages takes megabytes, apparent size included;
`make run-slave`'s examples/broker-slave.conf must use the same file sizes, since a slave's
CommitLog is a byte copy of its master's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

from helpers import START_TIMEOUT_S, free_port
from rmq.config import BrokerConfig, load_broker_config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEV_CONF = EXAMPLES / "broker-dev.conf"
SIZE_KEYS = (
    "mappedFileSizeCommitLog",
    "mappedFileSizeConsumeQueue",
    "maxHashSlotNum",
    "maxIndexNum",
)


def load_quietly(path: Path) -> BrokerConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown key, no adjusted value
        return load_broker_config(path)


REPO = EXAMPLES.parent


def apparent_size(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file())


def test_the_dev_conf_has_small_files_and_the_slave_conf_the_same_sizes() -> None:
    dev, slave, default = (
        load_quietly(DEV_CONF),
        load_quietly(EXAMPLES / "broker-slave.conf"),
        load_broker_config(None),
    )
    assert int(dev.store["mappedFileSizeCommitLog"]) <= 16 * 1024 * 1024
    assert int(dev.store["mappedFileSizeConsumeQueue"]) <= 120_000
    # An IndexFile is a 40-byte header, 4 bytes a slot and 20 bytes an entry.
    index_bytes = 40 + 4 * int(dev.store["maxHashSlotNum"]) + 20 * int(dev.store["maxIndexNum"])
    assert index_bytes < 1024 * 1024
    assert {k: slave.store[k] for k in SIZE_KEYS} == {k: dev.store[k] for k in SIZE_KEYS}
    # Neither opens a ~/store written with the default (1 GiB) sizes.
    assert (
        len({dev.store_path_root_dir, slave.store_path_root_dir, default.store_path_root_dir}) == 3
    )
    assert slave.broker_name == dev.broker_name and slave.listen_port != dev.listen_port


def test_make_run_passes_the_dev_conf_and_a_users_conf_replaces_it(tmp_path: Path) -> None:
    """`make run` starts the broker with examples/broker-dev.conf; `ARGS="-c FILE"` comes after
    it, and the broker takes the last -c (FILE alone: -p prints the effective config)."""

    def run_command(*make_args: str) -> str:
        done = subprocess.run(
            ["make", "-n", "-o", "build", "run", *make_args],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.strip()

    assert run_command().endswith("-m rmq.broker -c examples/broker-dev.conf")
    mine = tmp_path / "mine.conf"
    mine.write_text(f"storePathRootDir = {tmp_path / 'mine'}\n")
    cmd = run_command(f"ARGS=-c {mine} -p")
    assert cmd.endswith(f"-c examples/broker-dev.conf -c {mine} -p")
    args = cmd.split(" -m rmq.broker ", 1)[1].split()
    printed = subprocess.run(
        [sys.executable, "-m", "rmq.broker", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert f"storePathRootDir={tmp_path / 'mine'}" in printed
    assert "mappedFileSizeCommitLog=1073741824" in printed


def test_a_dev_broker_with_a_hundred_messages_takes_megabytes(tmp_path: Path) -> None:
    """The broker `make run` starts (the dev conf, its store under $HOME), 100 messages sent:
    the store's apparent size, what `ls -l` and copies see, stays under 24 MiB (a default store
    is 1.5 GB: a 1 GiB CommitLog file and a 420 MB IndexFile)."""
    home = tmp_path / "home"
    home.mkdir()
    ns_port, port = free_port(), free_port()
    conf = tmp_path / "broker.conf"
    # The dev conf as it is, with ports free on this machine (the README's are 9876 and 10911).
    conf.write_text(DEV_CONF.read_text() + f"\nlistenPort = {port}\nbrokerIP1 = 127.0.0.1\n")
    log = tmp_path / "broker.err"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rmq.broker", "-c", str(conf), "--namesrv-port", str(ns_port)],
            cwd=tmp_path,
            env={**os.environ, "HOME": str(home)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while "store open at" not in log.read_text():
            assert proc.poll() is None, f"broker exited before listening:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"broker did not start:\n{log.read_text()}"
            time.sleep(0.05)
        send = (
            "import rmq, sys\n"
            "with rmq.Producer('p', sys.argv[1]) as p:\n"
            "    for i in range(100):\n"
            "        p.send(rmq.Message('orders', b'x' * 128, tags='created', keys=str(i)))\n"
        )
        subprocess.run(
            [sys.executable, "-c", send, f"127.0.0.1:{ns_port}"],
            check=True,
            timeout=60,
            cwd=tmp_path,
        )
    finally:
        proc.terminate()
        proc.wait(30)
    store = home / "store-dev"
    assert (store / "commitlog" / "00000000000000000000").stat().st_size == 16 * 1024 * 1024
    assert apparent_size(store) < 24 * 1024 * 1024, log.read_text()
