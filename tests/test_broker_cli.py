"""``python -m rmq.broker`` as a real process. Needs `make build`."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import STOP_TIMEOUT_S, TEST_STORE_CONF, BrokerProcess, free_port
from rmq.config import load_broker_config

BANNER = "store open at"


@pytest.fixture
def broker_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "brokerClusterName = TestCluster\n"
        "brokerName = broker-test\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {free_port()}\n"
        f"storePathRootDir = {tmp_path / 'store'}\n"
        "mappedFileSizeCommitLog = 1048576\n" + TEST_STORE_CONF
    )
    return conf


@pytest.fixture
def run_broker(tmp_path: Path) -> Iterator[type[BrokerProcess]]:
    started: list[BrokerProcess] = []

    class Tracked(BrokerProcess):
        def __init__(self, *args: str, cwd: Path = tmp_path) -> None:
            super().__init__(*args, cwd=cwd)
            started.append(self)

    yield Tracked
    for broker in started:
        broker.kill()


def test_start_and_clean_shutdown_on_sigterm(
    run_broker: type[BrokerProcess], broker_conf: Path, tmp_path: Path
) -> None:
    broker = run_broker("-c", str(broker_conf))
    banner = broker.wait_for(BANNER)
    store = tmp_path / "store"
    assert str(store) in banner
    assert "broker-test" in banner
    assert "listening on" in banner
    assert (store / "abort").exists(), "a running store holds the abort file"

    assert broker.stop(signal.SIGTERM) == 0, broker.log
    assert "shutdown complete" in broker.log
    assert (store / "checkpoint").is_file()
    assert (store / "commitlog").is_dir()
    assert not (store / "abort").exists()


def test_sigint_also_shuts_down_cleanly(
    run_broker: type[BrokerProcess], broker_conf: Path, tmp_path: Path
) -> None:
    broker = run_broker("-c", str(broker_conf))
    broker.wait_for(BANNER)
    assert broker.stop(signal.SIGINT) == 0, broker.log
    assert "shutdown complete" in broker.log
    assert not (tmp_path / "store" / "abort").exists()


def test_restart_after_kill_reports_unclean_exit(
    run_broker: type[BrokerProcess], broker_conf: Path, tmp_path: Path
) -> None:
    first = run_broker("-c", str(broker_conf))
    assert "last exit clean: yes" in first.wait_for(BANNER)
    first.proc.kill()
    first.finish()
    assert (tmp_path / "store" / "abort").exists()

    second = run_broker("-c", str(broker_conf))
    assert "last exit clean: no" in second.wait_for(BANNER)
    assert second.stop() == 0, second.log

    third = run_broker("-c", str(broker_conf))
    assert "last exit clean: yes" in third.wait_for(BANNER)
    assert third.stop() == 0, third.log


def test_bad_value_stops_start_up_naming_the_key(
    run_broker: type[BrokerProcess], broker_conf: Path, tmp_path: Path
) -> None:
    broker_conf.write_text(broker_conf.read_text() + "flushDiskType = FAST\n")
    broker = run_broker("-c", str(broker_conf))
    assert broker.finish() != 0
    assert "flushDiskType = 'FAST' is not allowed; use ASYNC_FLUSH or SYNC_FLUSH" in broker.log
    assert not (tmp_path / "store").exists(), "nothing is created before the config is valid"


def test_bad_namesrv_option_names_the_key(
    run_broker: type[BrokerProcess], broker_conf: Path
) -> None:
    broker = run_broker("-c", str(broker_conf), "-n", "localhost")
    assert broker.finish() != 0
    assert "command line: namesrvAddr = 'localhost' is not allowed" in broker.log


def test_bad_store_value_stops_start_up_naming_the_key(
    run_broker: type[BrokerProcess], broker_conf: Path
) -> None:
    broker_conf.write_text(broker_conf.read_text() + "transientStorePoolEnable = maybe\n")
    broker = run_broker("-c", str(broker_conf))
    assert broker.finish() != 0
    assert "transientStorePoolEnable" in broker.log


def test_unknown_key_is_logged_once(run_broker: type[BrokerProcess], broker_conf: Path) -> None:
    broker_conf.write_text(broker_conf.read_text() + "noSuchKey = 1\n")
    broker = run_broker("-c", str(broker_conf))
    broker.wait_for(BANNER)
    assert broker.stop() == 0, broker.log
    assert broker.log.count("unknown key 'noSuchKey'") == 1


def test_print_config_loads_back(broker_conf: Path, tmp_path: Path) -> None:
    from rmq._rmq import store_config_defaults

    done = subprocess.run(
        [sys.executable, "-m", "rmq.broker", "-c", str(broker_conf), "-p"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=STOP_TIMEOUT_S,
        check=True,
    )
    printed = tmp_path / "printed.conf"
    printed.write_text(done.stdout)
    defaults = store_config_defaults()
    original = load_broker_config(broker_conf, store_defaults=defaults)
    again = load_broker_config(printed, store_defaults=defaults)
    assert again.to_properties() == original.to_properties()
    assert again.store["mappedFileSizeCommitLog"] == "1048576"
    assert not (tmp_path / "store").exists(), "--print-config opens nothing"


def test_help(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rmq.broker", "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=STOP_TIMEOUT_S,
        check=True,
    )
    for option in ("--config", "--namesrv", "--print-config"):
        assert option in done.stdout


def test_embedded_nameserver_answers_and_busy_port_is_a_clear_error(
    run_broker: type[BrokerProcess], broker_conf: Path
) -> None:
    import re

    from rmq._rmq import RemotingClient
    from rmq.codes import RequestCode, ResponseCode

    broker = run_broker("-c", str(broker_conf))
    line = broker.wait_for("embedded nameserver listening on")
    match = re.search(r"listening on [0-9.]+:(\d+)", line)
    assert match
    addr = f"127.0.0.1:{match.group(1)}"
    broker.wait_for(BANNER)
    resp = RemotingClient().invoke(addr, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert resp.code == ResponseCode.SUCCESS
    # A second broker asked to use the same port says what to do instead.
    other_conf = broker_conf.with_name("other.conf")
    other_conf.write_text(broker_conf.read_text().replace("/store\n", "/store-other\n"))
    second = run_broker("-c", str(other_conf), "--namesrv-port", match.group(1))
    message = second.wait_for("cannot start the embedded nameserver")
    assert "Set namesrvAddr" in message
    assert second.proc.wait(STOP_TIMEOUT_S) == 1
    broker.proc.send_signal(signal.SIGTERM)
    assert broker.proc.wait(STOP_TIMEOUT_S) == 0
