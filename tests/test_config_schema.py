"""The one config schema (``rmq_common::config_schema``, ``rmq._rmq.config_schema``): every key
the README and ``python -m rmq.broker -p`` name is in it, Python's config and the native store
and broker take their defaults and bounds from it, and a bad value gets the same words on the
Python path (with ``file:line``) and on the Rust paths."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from rmq._rmq import (
    BrokerServer,
    MessageStore,
    check_config_value,
    config_schema,
    store_config_defaults,
)
from rmq.broker.admin_handler import RUNTIME_KEYS
from rmq.config import (
    BROKER_KEYS,
    SCHEMA,
    BrokerConfig,
    BrokerRole,
    FlushDiskType,
    load_broker_config,
    parse_properties,
)
from rmq.errors import ConfigError

README = Path(__file__).resolve().parent.parent / "README.md"
SMALL_STORE = {
    "mappedFileSizeCommitLog": "1048576",
    "maxHashSlotNum": "64",
    "maxIndexNum": "256",
    "diskSpaceWarningLevelRatio": "99",
}


def readme_config_keys() -> set[str]:
    """The keys the README's Configuration section names: its ``broker.conf`` example and
    every backticked camelCase word."""
    text = README.read_text()
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    example = section.split("```properties\n", 1)[1].split("```", 1)[0]
    keys = set(parse_properties(example))
    keys |= set(re.findall(r"`([a-z]+[A-Z][A-Za-z0-9]*)`", section))
    return keys


def test_every_key_the_readme_names_is_in_the_schema() -> None:
    keys = readme_config_keys()
    assert {"brokerClusterName", "mappedFileSizeCommitLog", "brokerIP2"} <= keys  # parsed
    assert sorted(keys - set(SCHEMA)) == []


def test_the_readmes_runtime_keys_are_the_schemas() -> None:
    text = README.read_text()
    sentence = text.split("UPDATE_BROKER_CONFIG (`mqadmin updateBrokerConfig`) changes", 1)[1]
    named = set(re.findall(r"`([A-Za-z.]+)`", sentence.split("checked as", 1)[0]))
    assert named == set(RUNTIME_KEYS)
    assert set(RUNTIME_KEYS) == {key for key in BROKER_KEYS if SCHEMA[key].runtime}


def test_every_key_print_config_lists_is_in_the_schema_with_its_default(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rmq.broker", "-p"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    printed = parse_properties(done.stdout)
    assert len(printed) > 60
    assert sorted(set(printed) - set(SCHEMA)) == []
    computed = {"storePathRootDir", "namesrvAddr"}  # expanded, or None printed as ""
    for key, value in printed.items():
        default = SCHEMA[key].default
        if default is not None and key not in computed:
            assert value == default, key


def test_python_and_native_defaults_are_the_schemas() -> None:
    for key, value in store_config_defaults().items():
        assert SCHEMA[key].default == value, key
        assert SCHEMA[key].owner in ("store", "control-plane"), key
    config = BrokerConfig()
    for key, spec in BROKER_KEYS.items():
        if spec.spec.default is not None and key not in ("storePathRootDir", "namesrvAddr"):
            assert config.to_properties()[key] == spec.spec.default, key
    assert [m.value for m in BrokerRole] == SCHEMA["brokerRole"].choices
    assert [m.value for m in FlushDiskType] == SCHEMA["flushDiskType"].choices


def test_namesrv_table_has_its_own_listen_port() -> None:
    namesrv = {key.name: key for key in config_schema("namesrv")}
    assert namesrv["listenPort"].default == "9876"
    assert SCHEMA["listenPort"].default == "10911"
    assert all(key.owner == "namesrv" for key in namesrv.values())
    with pytest.raises(ValueError, match="unknown config table"):
        config_schema("nope")


def schema_message(key: str, value: str) -> str:
    with pytest.raises(ValueError) as info:
        check_config_value(key, value)
    return str(info.value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (
            "flushDiskType",
            "FAST",
            "flushDiskType = 'FAST' is not allowed; use ASYNC_FLUSH or SYNC_FLUSH",
        ),
        (
            "fileReservedTime",
            "-1",
            "fileReservedTime = '-1' is not allowed; use an integer from 0 to 876000 "
            "(hours to keep a file)",
        ),
        (
            "maxMessageSize",
            "134217729",
            "maxMessageSize = '134217729' is not allowed; use an integer from 1024 to 134217728 "
            "(bytes; a request frame is at most 16 MiB)",
        ),
        (
            "messageDelayLevel",
            "1s 5x",
            "messageDelayLevel = '1s 5x' is not allowed (level 2 ('5x') needs a unit s, m, h or d",
        ),
        (
            "diskMaxUsedSpaceRatio",
            "101",
            "diskMaxUsedSpaceRatio = '101' is not allowed; use an integer from 0 to 100 (percent)",
        ),
    ],
)
def test_a_bad_store_value_reads_the_same_on_the_python_and_the_store_path(
    tmp_path: Path, key: str, value: str, expected: str
) -> None:
    message = schema_message(key, value)
    assert message.startswith(expected)
    conf = tmp_path / "broker.conf"
    conf.write_text(f"# header\n{key} = {value}\n")
    with pytest.raises(ConfigError) as python_path:
        load_broker_config(conf, store_defaults=store_config_defaults())
    assert str(python_path.value) == f"{conf}:2: {message}"
    assert python_path.value.key == key
    with pytest.raises(ConfigError) as store_path:
        MessageStore(str(tmp_path / "store"), {**SMALL_STORE, key: value})
    assert str(store_path.value) == f"store config: {message}"


@pytest.mark.parametrize(
    ("key", "value"),
    [("brokerPermission", "5"), ("defaultTopicQueueNums", "0"), ("autoCreateTopicEnable", "yes")],
)
def test_a_bad_broker_value_reads_the_same_on_the_python_and_the_broker_path(
    tmp_path: Path, key: str, value: str
) -> None:
    message = schema_message(key, value)
    conf = tmp_path / "broker.conf"
    conf.write_text(f"{key}={value}\n")
    with pytest.raises(ConfigError) as python_path:
        load_broker_config(conf, store_defaults=store_config_defaults())
    assert str(python_path.value) == f"{conf}:1: {message}"
    with (
        MessageStore(str(tmp_path / "store"), SMALL_STORE) as store,
        pytest.raises(ConfigError) as broker_path,
    ):
        BrokerServer(store, {key: value}, "127.0.0.1", 0)
    assert str(broker_path.value) == f"broker config: {message}"


def test_values_rocketmq_clamps_are_clamped_on_both_paths(tmp_path: Path) -> None:
    assert check_config_value("diskMaxUsedSpaceRatio", "99") == (
        "95",
        "diskMaxUsedSpaceRatio = 99 is outside 10-95; using 95 (as RocketMQ does)",
    )
    conf = tmp_path / "broker.conf"
    conf.write_text("diskMaxUsedSpaceRatio=99\nfileReservedTime=0\n")
    with pytest.warns(UserWarning, match=r"broker.conf:1: diskMaxUsedSpaceRatio = 99 is outside"):
        config = load_broker_config(conf, store_defaults=store_config_defaults())
    assert config.disk_max_used_space_ratio == 95
    assert config.file_reserved_time == 0
    with MessageStore(str(tmp_path / "store"), {**SMALL_STORE, **config.store}) as store:
        assert store.file_reserved_time == 0


def test_runtime_changes_are_bounded_by_the_schema(tmp_path: Path) -> None:
    with MessageStore(str(tmp_path / "store"), SMALL_STORE) as store:
        with pytest.raises(ConfigError) as too_long:
            store.set_file_reserved_time(876_001)
        assert str(too_long.value) == schema_message("fileReservedTime", "876001")
        store.set_file_reserved_time(0)
        assert store.file_reserved_time == 0
        server = BrokerServer(store, {}, "127.0.0.1", 0)
        try:
            with pytest.raises(ConfigError) as bad:
                server.set_broker_permission(5)
            assert str(bad.value) == schema_message("brokerPermission", "5")
            server.set_broker_permission(4)
        finally:
            server.shutdown()
