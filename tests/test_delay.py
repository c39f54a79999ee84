"""Delay levels in the broker process (rmq.scheduling.delay): the level table and the
``delayOffset.json`` format, and the DelayService's due-checks over a real store in this
process, driven through its clock (no sleeping for the delays themselves)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rmq._rmq import MessageStore
from rmq.errors import ConfigError
from rmq.scheduling import delay as delay_mod
from rmq.scheduling.delay import (
    SCHEDULE_TOPIC,
    DelayService,
    format_delay_offsets,
    load_delay_offsets,
    parse_delay_levels,
    parse_delay_offsets,
    write_delay_offsets,
)

CONFIG = {
    "mappedFileSizeCommitLog": "1048576",
    "maxHashSlotNum": "64",
    "maxIndexNum": "256",
    "messageDelayLevel": "1s 2s 3s",
    "diskSpaceWarningLevelRatio": "99",  # a busy shared /tmp must not refuse test writes
}


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h", None),
        ("1s", [1000]),
        ("  1s\t2m\n3h 1d ", [1000, 120_000, 10_800_000, 86_400_000]),
        ("01s", [1000]),
    ],
)
def test_parse_delay_levels(text: str, ms: list[int] | None) -> None:
    levels = parse_delay_levels(text)
    if ms is None:
        assert len(levels) == 18 and levels[2] == 10_000 and levels[-1] == 7_200_000
    else:
        assert levels == ms


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "at least one delay level"),
        ("1s 5x", "level 2 ('5x') needs a unit s, m, h or d"),
        ("1s 0s", "level 2 ('0s') needs a whole number of at least 1"),
        ("-1s", "level 1 ('-1s') needs a whole number"),
        ("+1s", "level 1 ('+1s') needs a whole number"),
        ("1.5s", "level 1 ('1.5s')"),
        ("1S", "needs a unit"),
        ("1s,2s", "level 1 ('1s,2s')"),
        ("s", "level 1 ('s') needs a whole number"),
    ],
)
def test_parse_delay_levels_names_the_bad_level(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_delay_levels(text)


@pytest.mark.parametrize("text", ["1s 5x", "0s", "+1s", "", "1s,2s"])
def test_python_and_the_native_store_refuse_the_same_levels(text: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        parse_delay_levels(text)
    with pytest.raises(ConfigError, match="messageDelayLevel"):
        MessageStore(str(tmp_path / "s"), {**CONFIG, "messageDelayLevel": text})


def test_offset_table_is_rocketmqs_format_and_reads_back(tmp_path: Path) -> None:
    assert format_delay_offsets({2: 7, 1: 12}) == '{"offsetTable":{1:12,2:7}}'
    assert parse_delay_offsets('{"offsetTable":{1:12,2:7}}') == {1: 12, 2: 7}
    assert parse_delay_offsets('{"offsetTable":{"1":12}}') == {1: 12}
    pretty = '{\n\t"offsetTable":{\n\t\t1:12,\n\t\t18:0\n\t}\n}'
    assert parse_delay_offsets(pretty) == {1: 12, 18: 0}
    for bad in ["[]", "{}", '{"offsetTable":{1:"x"}}', "not json"]:
        with pytest.raises(ValueError):
            parse_delay_offsets(bad)

    path = tmp_path / "config" / "delayOffset.json"
    assert load_delay_offsets(path) == {}
    first = write_delay_offsets(path, {1: 3}, sync=True)
    write_delay_offsets(path, {1: 5}, sync=False, previous=first)
    assert path.read_text() == '{"offsetTable":{1:5}}'
    assert (tmp_path / "config" / "delayOffset.json.bak").read_text() == first
    assert not (tmp_path / "config" / "delayOffset.json.tmp").exists()
    assert load_delay_offsets(path) == {1: 5}
    # A damaged file: the backup is used.
    path.write_text("{garbage")
    assert load_delay_offsets(path) == {1: 3}


class Clock:
    """Wall clock plus a shift, so a test can jump to when messages are due."""

    def __init__(self) -> None:
        self.shift_s = 0.0

    def __call__(self) -> float:
        return time.time() + self.shift_s


def wait_dispatched(store: MessageStore) -> None:
    deadline = time.monotonic() + 10
    while store.dispatch_behind_bytes() > 0:
        assert time.monotonic() < deadline, "dispatch did not catch up"
        time.sleep(0.001)


def real_queue(store: MessageStore, topic: str, queue: int) -> list[bytes]:
    return [m.body for m in store.get_message(topic, queue, 0, 1000).messages]


def test_due_checks_deliver_in_order_and_progress_survives_a_restart(tmp_path: Path) -> None:
    clock = Clock()
    root = str(tmp_path / "store")
    with MessageStore(root, CONFIG) as store:
        assert store.delay_levels_ms == [1000, 2000, 3000]
        sent = []
        for i in range(5):
            r = store.put_message(
                "Real", 1, b"m%d" % i, {"DELAY": "2", "TAGS": "A", "UNIQ_KEY": f"U{i}"}
            )
            sent.append(r)
        wait_dispatched(store)
        service = DelayService(store, Path(root) / "config", clock=clock)
        service.load()
        assert service.offsets == {1: 0, 2: 0, 3: 0}
        # Nothing is due yet: the next check is when the first one is.
        wait = service.check(2)
        assert 1.0 < wait <= 2.0
        assert real_queue(store, "Real", 1) == []
        # An empty level is looked at again after half its delay.
        assert service.check(1) == pytest.approx(0.5)
        assert service.check(3) == pytest.approx(0.5)

        clock.shift_s = 2.5
        assert service.check(2) == pytest.approx(0.5)  # queue empty again
        wait_dispatched(store)
        got = store.get_message("Real", 1, 0, 100).messages
        assert [m.body for m in got] == [b"m%d" % i for i in range(5)]
        assert [m.msg_id for m in got] == [f"U{i}" for i in range(5)]
        assert all("DELAY" not in m.properties and m.tags == "A" for m in got)
        assert all(m.properties["REAL_TOPIC"] == "Real" for m in got)
        assert service.offsets[2] == 5 and service.delivered == 5
        # Written right after the delivery, in RocketMQ's format.
        offsets_file = Path(root) / "config" / "delayOffset.json"
        assert offsets_file.read_text() == '{"offsetTable":{1:0,2:5,3:0}}'

        # Two more; one delivered before a (clean) stop, one after the restart.
        store.put_message("Real", 1, b"m5", {"DELAY": "2"})
        time.sleep(0.005)
        store.put_message("Real", 1, b"m6", {"DELAY": "9"})  # level 3, the highest
        wait_dispatched(store)
        service.check(2)
        service.stop()
    assert offsets_file.read_text() == '{"offsetTable":{1:0,2:6,3:0}}'

    with MessageStore(root, CONFIG) as store:
        again = DelayService(store, Path(root) / "config", clock=clock)
        again.load()
        assert again.offsets == {1: 0, 2: 6, 3: 0}
        clock.shift_s = 10.0
        again.check(2)
        again.check(3)
        wait_dispatched(store)
        bodies = real_queue(store, "Real", 1)
        assert bodies == [b"m%d" % i for i in range(7)], "nothing lost, nothing repeated"
        again.stop()


def test_the_service_thread_delivers_and_writes_offsets_on_stop(tmp_path: Path) -> None:
    clock = Clock()
    root = str(tmp_path / "store")
    with MessageStore(root, CONFIG) as store:
        for i in range(50):
            store.put_message("T", i % 2, b"x%d" % i, {"DELAY": "1"})
        wait_dispatched(store)
        clock.shift_s = 1.5
        service = DelayService(store, Path(root) / "config", clock=clock, batch_units=16)
        service.start()
        deadline = time.monotonic() + 10
        while service.delivered < 50:
            assert time.monotonic() < deadline, f"delivered {service.delivered} of 50"
            time.sleep(0.01)
        service.stop()
        assert not service.running
        assert service.offsets[1] == 50
        assert load_delay_offsets(Path(root) / "config" / "delayOffset.json")[1] == 50
        wait_dispatched(store)
        assert len(real_queue(store, "T", 0)) + len(real_queue(store, "T", 1)) == 50


def test_a_clock_that_went_back_delivers_now_as_rocketmq(tmp_path: Path) -> None:
    clock = Clock()
    root = str(tmp_path / "store")
    with MessageStore(root, CONFIG) as store:
        store.put_message("T", 0, b"x", {"DELAY": "1"})
        wait_dispatched(store)
        service = DelayService(store, Path(root) / "config", clock=clock)
        service.load()
        clock.shift_s = -3600.0  # the delivery time is more than a delay ahead: deliver
        service.check(1)
        assert service.offsets[1] == 1


@dataclass
class FakeStore:
    """A store whose level queues and deliveries a test scripts."""

    units: dict[int, list[tuple[int, int, int]]]
    min_offset: dict[int, int] = field(default_factory=dict)
    refuse_after: int | None = None
    delivered: list[tuple[int, int, int]] = field(default_factory=list)
    delay_levels_ms: list[int] = field(default_factory=lambda: [1000, 2000])
    told: dict[int, int] | None = None

    @dataclass
    class Units:
        min_offset: int
        max_offset: int
        units: list[tuple[int, int, int]]

    @dataclass
    class Result:
        processed: int
        delivered: int
        skipped: int
        error: str | None

    def topic_queues(self) -> dict[str, list[int]]:
        return {SCHEDULE_TOPIC: sorted(q for q in range(2) if q in self.units)}

    def get_consume_queue_units(
        self, topic: str, queue_id: int, offset: int, max_count: int = 1024
    ) -> FakeStore.Units:
        queue = self.units.get(queue_id, [])
        lo = self.min_offset.get(queue_id, 0)
        picked = queue[offset - lo : offset - lo + max_count] if offset >= lo else []
        return FakeStore.Units(lo, lo + len(queue), picked)

    def set_delay_offsets(self, offsets: dict[int, int]) -> None:
        self.told = dict(offsets)

    def deliver_scheduled(self, units: list[tuple[int, int, int]]) -> FakeStore.Result:
        n = len(units)
        error = None
        if self.refuse_after is not None and n > self.refuse_after:
            n, error = self.refuse_after, "service not available: disk full"
        self.delivered.extend(units[:n])
        return FakeStore.Result(n, n, 0, error)


def test_offsets_are_corrected_and_refusals_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now_ms = int(time.time() * 1000)
    due = [(i * 100, 100, now_ms - 10) for i in range(6)]
    store = FakeStore(units={0: due}, min_offset={0: 2})
    config = tmp_path / "config"
    write_delay_offsets(config / "delayOffset.json", {1: 0, 2: 40, 7: 3}, sync=False)
    service = DelayService(store, config)
    service.load()
    # Level 1 starts at its queue's first offset; level 2 (no queue) at 0; level 7 is kept.
    assert service.offsets == {1: 2, 2: 0, 7: 3}
    assert store.told == {1: 2, 2: 0, 7: 3}, "retention keeps parked messages from there"
    assert "delay level 2: offset 40 is outside its queue" in caplog.text

    store.refuse_after = 3
    assert service.check(1) == delay_mod.RETRY_AFTER_FAILURE_S
    assert service.offsets[1] == 5, "the three delivered count"
    assert "disk full" in caplog.text
    store.refuse_after = None
    service.check(1)
    assert service.offsets[1] == 8
    assert store.delivered == due[:6]
    service.stop()
    assert load_delay_offsets(config / "delayOffset.json") == {1: 8, 2: 0, 7: 3}
