"""The storage engine through its Python binding: puts, pulls, queries, ids and errors."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rmq import errors
from rmq._rmq import (
    MessageStore,
    create_offset_msg_id,
    decode_offset_msg_id,
    java_string_hash,
    store_config_defaults,
)

SMALL = {
    "mappedFileSizeCommitLog": "65536",
    "mappedFileSizeConsumeQueue": "400",
    "maxHashSlotNum": "64",
    "maxIndexNum": "256",
    "diskSpaceWarningLevelRatio": "99",  # a busy shared /tmp must not refuse test writes
}


def wait_dispatched(store: MessageStore) -> None:
    deadline = time.monotonic() + 10
    while store.dispatch_behind_bytes() > 0:
        assert time.monotonic() < deadline, "dispatch did not catch up"
        time.sleep(0.001)


def test_put_get_roundtrip(tmp_path: Path) -> None:
    with MessageStore(str(tmp_path), SMALL, store_host="10.0.0.5:10911") as store:
        results = [
            store.put_message(
                "Orders",
                i % 2,
                f"body-{i}".encode(),
                {"TAGS": "TagA" if i % 3 == 0 else "TagB", "KEYS": f"order-{i}"},
                born_host="192.168.1.9:4000",
            )
            for i in range(30)
        ]
        assert all(r.ok and r.status == "PUT_OK" for r in results)
        assert [r.queue_offset for r in results[:4]] == [0, 0, 1, 1]
        wait_dispatched(store)

        got = store.get_message("Orders", 0, 0, max_count=32)
        assert got.status == "FOUND"
        assert [m.body for m in got.messages] == [f"body-{i}".encode() for i in range(0, 30, 2)]
        first = got.messages[0]
        assert first.topic == "Orders"
        assert first.queue_offset == 0
        assert first.tags == "TagA"
        assert first.keys == "order-0"
        assert first.born_host == "192.168.1.9:4000"
        assert first.store_host == "10.0.0.5:10911"
        assert first.msg_id == results[0].msg_id
        assert got.next_begin_offset == 15
        assert store.get_message("Orders", 0, 15).status == "OFFSET_OVERFLOW_ONE"
        assert store.get_message("Nope", 0, 0).status == "NO_MATCHED_LOGIC_QUEUE"

        tag_a = store.get_message("Orders", 0, 0, tags=["TagA"])
        assert [m.tags for m in tag_a.messages] == ["TagA"] * len(tag_a.messages)
        assert len(tag_a.messages) == 5  # i in 0, 6, 12, 18, 24

        hits = store.query_message("Orders", "order-7")
        assert [m.body for m in hits] == [b"body-7"]
        looked = store.look_message_by_offset(results[7].wrote_offset)
        assert looked is not None and looked.body == b"body-7"
        host, offset = decode_offset_msg_id(results[7].msg_id)
        assert (host, offset) == ("10.0.0.5:10911", results[7].wrote_offset)
        assert store.get_max_offset_in_queue("Orders", 1) == 15
        assert store.topic_queues() == {"Orders": [0, 1]}
        info = store.runtime_info()
        assert info["putMessageTimesTotal"] == "30"


def test_batch_put_is_contiguous(tmp_path: Path) -> None:
    with MessageStore(str(tmp_path), SMALL) as store:
        rs = store.put_messages("B", 3, [b"a", b"b", b"c"], [{"KEYS": "k1"}, None, {"TAGS": "x"}])
        assert [r.queue_offset for r in rs] == [0, 1, 2]
        assert rs[1].wrote_offset == rs[0].wrote_offset + rs[0].wrote_bytes
        wait_dispatched(store)
        assert [m.body for m in store.get_message("B", 3, 0).messages] == [b"a", b"b", b"c"]
        with pytest.raises(ValueError, match="one per body"):
            store.put_messages("B", 3, [b"a"], [None, None])


def test_illegal_messages_raise_the_right_classes(tmp_path: Path) -> None:
    with MessageStore(str(tmp_path), {**SMALL, "maxMessageSize": "2048"}) as store:
        with pytest.raises(errors.MessageIllegalError, match="maxMessageSize"):
            store.put_message("T", 0, b"x" * 4096)
        with pytest.raises(errors.MessageIllegalError, match="topic is empty"):
            store.put_message("", 0, b"x")
        with pytest.raises(errors.MessageIllegalError, match="32767"):
            store.put_message("T", 0, b"x", {"K": "v" * 40_000})
        assert store.put_message("T", 0, b"fine").ok
    with pytest.raises(errors.ServiceNotAvailableError, match="shut down"):
        store.put_message("T", 0, b"late")


def test_bad_config_names_key_and_allowed_values(tmp_path: Path) -> None:
    with pytest.raises(errors.ConfigError, match=r"flushDiskType.*ASYNC_FLUSH or SYNC_FLUSH"):
        MessageStore(str(tmp_path), {"flushDiskType": "FAST"})
    # 0..100 is accepted (RocketMQ clamps into 10..95, see tests/test_config_schema.py).
    with pytest.raises(errors.ConfigError, match=r"diskMaxUsedSpaceRatio = '101'.* 0 to 100"):
        MessageStore(str(tmp_path), {"diskMaxUsedSpaceRatio": "101"})
    defaults = store_config_defaults()
    assert defaults["mappedFileSizeCommitLog"] == str(1 << 30)
    assert defaults["flushDiskType"] == "ASYNC_FLUSH"


def test_second_store_on_same_dir_is_refused(tmp_path: Path) -> None:
    with (
        MessageStore(str(tmp_path), SMALL),
        pytest.raises(errors.StoreError, match="locked by another process"),
    ):
        MessageStore(str(tmp_path), SMALL)


def test_reopen_after_clean_shutdown(tmp_path: Path) -> None:
    with MessageStore(str(tmp_path), SMALL) as store:
        for i in range(100):
            store.put_message("T", 0, f"m{i}".encode() * 50)
    assert not (tmp_path / "abort").exists()
    with MessageStore(str(tmp_path), SMALL) as store:
        assert store.last_exit_ok
        assert store.get_max_offset_in_queue("T", 0) == 100
        assert store.put_message("T", 0, b"next").queue_offset == 100


def test_helpers_match_java() -> None:
    assert java_string_hash("TagA") == 2598919
    assert create_offset_msg_id("10.1.2.3:10911", 0x1234) == "0A01020300002A9F0000000000001234"
    with pytest.raises(ValueError, match=r"32 .*56"):
        decode_offset_msg_id("xyz")


def test_offset_by_time_and_transient_pool(tmp_path: Path) -> None:
    cfg = {**SMALL, "transientStorePoolEnable": "true", "transientStorePoolSize": "2"}
    with MessageStore(str(tmp_path), cfg) as store:
        assert store.transient_store_pool_active
        stamps = []
        for i in range(10):
            stamps.append(store.put_message("T", 0, b"x" * 100).store_timestamp)
            if i == 4:
                time.sleep(0.02)
        deadline = time.monotonic() + 10
        while store.get_max_offset_in_queue("T", 0) < 10:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        assert store.get_offset_in_queue_by_time("T", 0, stamps[5]) == 5
