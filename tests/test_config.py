"""broker.conf parsing and validation (rmq.config, which checks values through the native config
schema, rmq._rmq.config_schema; the store key list is a stand-in)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from rmq.config import (
    KNOWN_BUT_UNUSED,
    BrokerConfig,
    BrokerRole,
    FlushDiskType,
    RmqConfigWarning,
    check_broker_value,
    iter_properties,
    load_broker_config,
    parse_properties,
    update_properties_text,
    write_properties_update,
)
from rmq.errors import ConfigError, RmqError

# A stand-in for rmq._rmq.store_config_defaults(): a short, fixed store key list.
STORE_DEFAULTS = {
    "mappedFileSizeCommitLog": "1073741824",
    "flushIntervalCommitLog": "500",
    "transientStorePoolEnable": "false",
    "flushDiskType": "ASYNC_FLUSH",
    "fileReservedTime": "72",
    "storePathRootDir": "~/store",
    "haListenPort": "10912",
}


def write_conf(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "broker.conf"
    path.write_text(text)
    return path


def load(tmp_path: Path, text: str, **overrides: str) -> BrokerConfig:
    return load_broker_config(write_conf(tmp_path, text), overrides, store_defaults=STORE_DEFAULTS)


# ---- Java properties ---------------------------------------------------------------------------


def test_properties_comments_blanks_and_separators() -> None:
    text = (
        "# a comment\n"
        "! another comment\n"
        "\n"
        "   \n"
        "brokerName=broker-a\n"
        "brokerClusterName = DefaultCluster\n"
        "  listenPort:10911\n"
        "deleteWhen 04\n"
        "flushDiskType\t=\tSYNC_FLUSH   \n"
        "empty=\n"
        "bare\n"
    )
    assert parse_properties(text) == {
        "brokerName": "broker-a",
        "brokerClusterName": "DefaultCluster",
        "listenPort": "10911",
        "deleteWhen": "04",
        "flushDiskType": "SYNC_FLUSH",
        "empty": "",
        "bare": "",
    }


def test_properties_continuation_lines() -> None:
    text = "namesrvAddr=127.0.0.1:9876;\\\n    127.0.0.2:9876\nnext=1\n"
    entries = list(iter_properties(text))
    assert entries == [("namesrvAddr", "127.0.0.1:9876;127.0.0.2:9876", 1), ("next", "1", 3)]


def test_properties_even_backslashes_do_not_continue() -> None:
    assert parse_properties("path=C:\\\\\nnext=1\n") == {"path": "C:\\", "next": "1"}


def test_properties_continuation_at_end_of_file() -> None:
    assert parse_properties("key=value\\") == {"key": "value"}


def test_properties_escapes_crlf_and_last_value_wins() -> None:
    text = "a\\=b=1\r\nu=\\u0041\\tB\r\nk=first\rk=second"
    assert parse_properties(text) == {"a=b": "1", "u": "A\tB", "k": "second"}


def test_properties_malformed_unicode_escape() -> None:
    with pytest.raises(ConfigError, match=r"broker.conf:2: malformed \\uxxxx escape"):
        parse_properties("a=1\nb=\\u12G4\n", "broker.conf")


# ---- defaults ---------------------------------------------------------------------------------


def test_defaults_are_rocketmqs() -> None:
    config = load_broker_config(None, store_defaults=STORE_DEFAULTS)
    assert config.broker_cluster_name == "DefaultCluster"
    assert config.broker_name == (socket.gethostname() or "DEFAULT_BROKER")
    assert config.broker_id == 0
    assert config.listen_port == 10911
    assert config.namesrv_addr is None
    assert config.namesrv_addrs == ()
    assert config.store_path_root_dir == os.path.abspath(os.path.expanduser("~/store"))
    assert config.broker_role is BrokerRole.ASYNC_MASTER
    assert config.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert config.delete_when == "04"
    assert config.file_reserved_time == 72
    assert config.auto_create_topic_enable is True
    assert config.default_topic_queue_nums == 8
    assert config.max_message_size == 4194304
    assert config.broker_permission == 6
    assert config.register_name_server_period == 30000
    assert config.clean_resource_interval == 10000
    assert config.disk_max_used_space_ratio == 75
    # Broker keys the store reads too are handed over, so both sides use one value.
    assert config.store == {"flushDiskType": "ASYNC_FLUSH", "fileReservedTime": "72"}


def test_default_broker_ip_is_an_address() -> None:
    import ipaddress

    ipaddress.ip_address(BrokerConfig().broker_ip1)


def test_full_rocketmq_broker_conf(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """
        brokerClusterName = DefaultCluster
        brokerName = broker-a
        brokerId = 0
        deleteWhen = 04;16
        fileReservedTime = 48
        brokerRole = SYNC_MASTER
        flushDiskType = SYNC_FLUSH
        brokerIP1 = 10.0.0.7
        listenPort = 10921
        namesrvAddr = 10.0.0.1:9876;10.0.0.2:9876
        storePathRootDir = ~/rmq-store
        autoCreateTopicEnable = False
        mappedFileSizeCommitLog = 1048576
        transientStorePoolEnable = true
        brokerIP2 = 10.0.0.7
        haListenPort = 10922
        """,
    )
    assert config.broker_name == "broker-a"
    assert config.delete_when == "04;16"
    assert config.file_reserved_time == 48
    assert config.broker_role is BrokerRole.SYNC_MASTER
    assert config.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert config.store_host == "10.0.0.7:10921"
    assert config.namesrv_addrs == ("10.0.0.1:9876", "10.0.0.2:9876")
    assert config.store_path_root_dir == os.path.expanduser("~/rmq-store")
    assert config.auto_create_topic_enable is False
    assert config.store == {
        "mappedFileSizeCommitLog": "1048576",
        "transientStorePoolEnable": "true",
        "flushDiskType": "SYNC_FLUSH",
        "fileReservedTime": "48",
        "haListenPort": "10922",
    }


def test_store_values_pass_through_untouched(tmp_path: Path) -> None:
    # The native store checks store keys; Python must not reinterpret them.
    config = load(tmp_path, "flushIntervalCommitLog = not-a-number\n")
    assert config.store["flushIntervalCommitLog"] == "not-a-number"


def test_overrides_win_over_the_file(tmp_path: Path) -> None:
    config = load(tmp_path, "namesrvAddr=10.0.0.1:9876\n", namesrvAddr="127.0.0.1:9876")
    assert config.namesrv_addr == "127.0.0.1:9876"


def test_ipv6_store_host(tmp_path: Path) -> None:
    assert load(tmp_path, "brokerIP1=::1\n").store_host == "[::1]:10911"


def test_booleans_are_case_insensitive(tmp_path: Path) -> None:
    assert load(tmp_path, "autoCreateTopicEnable=TRUE\n").auto_create_topic_enable is True
    assert load(tmp_path, "autoCreateTopicEnable=fAlSe\n").auto_create_topic_enable is False


def test_to_properties_round_trip(tmp_path: Path) -> None:
    config = load(tmp_path, "brokerName=b\nnamesrvAddr=127.0.0.1:9876\nbrokerPermission=4\n")
    text = "\n".join(f"{k}={v}" for k, v in config.to_properties().items())
    again = load_broker_config(write_conf(tmp_path, text), store_defaults=STORE_DEFAULTS)
    assert again == config


# ---- validation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [
        ("flushDiskType", "FAST", "use ASYNC_FLUSH or SYNC_FLUSH"),
        ("flushDiskType", "sync_flush", "use ASYNC_FLUSH or SYNC_FLUSH"),
        ("brokerRole", "MASTER", "use ASYNC_MASTER, SYNC_MASTER or SLAVE"),
        ("listenPort", "0", "use an integer from 1 to 65535"),
        ("listenPort", "http", "use an integer from 1 to 65535"),
        ("defaultTopicQueueNums", "0", "use an integer from 1 to 1024"),
        ("defaultTopicQueueNums", "1025", "use an integer from 1 to 1024"),
        # RocketMQ takes fileReservedTime = 0 (files expire at once), so does the schema.
        ("fileReservedTime", "-1", "use an integer from 0 to 876000"),
        ("fileReservedTime", "876001", "use an integer from 0 to 876000"),
        ("brokerId", "-1", "use an integer >= 0"),
        ("autoCreateTopicEnable", "yes", "use true or false"),
        ("autoCreateTopicEnable", "1", "use true or false"),
        ("deleteWhen", "24", "use one or more hours 00-23 separated by ';'"),
        ("deleteWhen", "4am", "use one or more hours 00-23 separated by ';'"),
        ("deleteWhen", "", "use one or more hours 00-23 separated by ';'"),
        ("brokerIP1", "broker.example", "use an IPv4 or IPv6 address"),
        ("namesrvAddr", "127.0.0.1", "use host:port items separated by ';'"),
        ("namesrvAddr", "127.0.0.1:99999", "use host:port items separated by ';'"),
        ("brokerPermission", "7", "use 6 (read and write), 4 (read only) or 2 (write only)"),
        ("maxMessageSize", "1023", "use an integer from 1024 to 134217728"),
        ("brokerName", "", "use a non-empty name"),
        ("cleanResourceInterval", "9", "use an integer from 10 to 3600000"),
        ("diskMaxUsedSpaceRatio", "75.5", "use an integer from 0 to 100"),
    ],
)
def test_bad_value_names_file_line_key_and_allowed_values(
    tmp_path: Path, key: str, value: str, allowed: str
) -> None:
    path = write_conf(tmp_path, f"# header\n{key} = {value}\n")
    with pytest.raises(ConfigError) as info:
        load_broker_config(path, store_defaults=STORE_DEFAULTS)
    message = str(info.value)
    assert message == f"{path}:2: {key} = {value!r} is not allowed; " + message.split("; ", 1)[1]
    assert allowed in message
    assert info.value.key == key
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, RmqError)


def test_bad_override_is_blamed_on_the_command_line() -> None:
    with pytest.raises(ConfigError, match=r"^command line: namesrvAddr = 'nowhere' is not"):
        load_broker_config(None, {"namesrvAddr": "nowhere"}, store_defaults=STORE_DEFAULTS)


def test_missing_file() -> None:
    with pytest.raises(ConfigError, match=r"/no/such/broker.conf: cannot read config file"):
        load_broker_config("/no/such/broker.conf", store_defaults=STORE_DEFAULTS)


def test_slave_needs_a_positive_broker_id(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"brokerId = 0 is not allowed with brokerRole = SLAVE"):
        load(tmp_path, "brokerRole=SLAVE\n")
    assert load(tmp_path, "brokerRole=SLAVE\nbrokerId=2\n").broker_id == 2


def test_master_broker_id_is_reset_to_zero_with_a_warning(tmp_path: Path) -> None:
    with pytest.warns(RmqConfigWarning, match=r"broker.conf:1: brokerId = 3 is ignored"):
        config = load(tmp_path, "brokerId=3\n")
    assert config.broker_id == 0


@pytest.mark.parametrize(("given", "used"), [("1000", 10000), ("30000", 30000), ("120000", 60000)])
def test_register_name_server_period_is_clamped(tmp_path: Path, given: str, used: int) -> None:
    text = f"registerNameServerPeriod={given}\n"
    if given == str(used):
        config = load(tmp_path, text)
    else:
        with pytest.warns(RmqConfigWarning, match="registerNameServerPeriod.*outside 10000-60000"):
            config = load(tmp_path, text)
    assert config.register_name_server_period == used


def test_disk_max_used_space_ratio_is_clamped(tmp_path: Path) -> None:
    with pytest.warns(RmqConfigWarning, match=r"diskMaxUsedSpaceRatio = 99 is outside 10-95"):
        assert load(tmp_path, "diskMaxUsedSpaceRatio=99\n").disk_max_used_space_ratio == 95


# ---- unknown and unused keys --------------------------------------------------------------------


def test_unknown_key_warns_and_logs(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with pytest.warns(RmqConfigWarning, match=r"broker.conf:1: unknown key 'noSuchKey' is ignored"):
        load(tmp_path, "noSuchKey=1\n")
    assert "unknown key 'noSuchKey'" in caplog.text


def test_unknown_key_suggests_a_close_known_key(tmp_path: Path) -> None:
    with pytest.warns(RmqConfigWarning, match=r"did you mean 'flushDiskType'\?"):
        load(tmp_path, "flushDiskTyp=ASYNC_FLUSH\n")
    with pytest.warns(RmqConfigWarning, match=r"did you mean 'mappedFileSizeCommitLog'\?"):
        load(tmp_path, "mappedfilesizecommitlog=1048576\n")


def test_known_but_unused_keys_do_not_warn(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("INFO", logger="rmq.config")
    # filterwarnings = error: any warning here fails the test.
    config = load(tmp_path, "brokerIP2=10.0.0.8\nnamesrvAddr=\n")
    assert config.namesrv_addr is None
    assert "accepted but not used by this build: brokerIP2" in caplog.text
    assert "brokerIP2" in KNOWN_BUT_UNUSED
    assert "haListenPort" not in KNOWN_BUT_UNUSED  # the store's HA port since replication


def test_duplicate_key_warns(tmp_path: Path) -> None:
    with pytest.warns(RmqConfigWarning, match=r"brokerName is set again \(first on line 1\)"):
        config = load(tmp_path, "brokerName=a\nbrokerName=b\n")
    assert config.broker_name == "b"


def test_update_properties_text_keeps_the_rest_of_the_file() -> None:
    text = (
        "# broker.conf\r\n"
        "brokerName = broker-a\r\n"
        "brokerPermission=6\r\n"
        "! a comment\r\n"
        "deleteWhen = 04;\\\r\n"
        "  16\r\n"
        "brokerPermission: 6\r\n"
    )
    out = update_properties_text(
        text, {"brokerPermission": "4", "deleteWhen": "05", "newKey": "a\\b"}
    )
    assert out == (
        "# broker.conf\r\n"
        "brokerName = broker-a\r\n"
        "brokerPermission=4\r\n"
        "! a comment\r\n"
        "deleteWhen=05\r\n"
        "brokerPermission=4\r\n"
        "newKey=a\\\\b\n"
    )
    parsed = parse_properties(out)
    assert (parsed["brokerPermission"], parsed["deleteWhen"], parsed["newKey"]) == (
        "4",
        "05",
        "a\\b",
    )
    # A file without a final newline gets one before the appended keys.
    assert update_properties_text("a=1", {"b": "2"}) == "a=1\nb=2\n"
    assert update_properties_text("", {"b": " lead"}) == "b=\\ lead\n"


def test_check_broker_value_names_the_key_and_clamps() -> None:
    assert check_broker_value("brokerPermission", "4") == (4, None)
    with pytest.raises(ConfigError, match=r"brokerPermission = '5' is not allowed; use 6"):
        check_broker_value("brokerPermission", "5", "here")
    value, note = check_broker_value("registerNameServerPeriod", "5000")
    assert value == 10_000 and note and "using 10000" in note
    with pytest.raises(ConfigError, match="not a broker key"):
        check_broker_value("flushIntervalCommitLog", "5")


def test_write_properties_update_is_atomic_and_keeps_the_mode(tmp_path: Path) -> None:
    conf = write_conf(tmp_path, "# keep me\nbrokerPermission = 6\n")
    conf.chmod(0o640)
    write_properties_update(conf, {"brokerPermission": "2"})
    assert conf.read_text() == "# keep me\nbrokerPermission=2\n"
    assert conf.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broker.conf"]
    with pytest.raises(OSError):
        write_properties_update(tmp_path / "missing.conf", {"a": "b"})
