"""When expired CommitLog files are deleted (rmq.scheduling.retention); no native module."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

import pytest

from rmq.scheduling.retention import (
    Decision,
    RetentionLog,
    RetentionPolicy,
    RetentionScheduler,
    decide,
    is_time_to_delete,
    parse_delete_when,
    run_once,
)


def at(hour: int, minute: int = 0) -> datetime:
    return datetime(2025, 1, 15, hour, minute)


@pytest.mark.parametrize(
    ("value", "hours"),
    [
        ("04", {4}),
        ("4", {4}),
        ("00", {0}),
        ("23", {23}),
        ("04;10", {4, 10}),
        (" 04 ; 16 ; ", {4, 16}),
    ],
)
def test_parse_delete_when(value: str, hours: set[int]) -> None:
    assert parse_delete_when(value) == hours


@pytest.mark.parametrize("value", ["", ";", "24", "-1", "4am", "04;x", "004", "4.0"])
def test_parse_delete_when_rejects(value: str) -> None:
    with pytest.raises(ValueError):
        parse_delete_when(value)


def test_is_time_to_delete_matches_the_hour_only() -> None:
    assert is_time_to_delete(at(4, 0), "04")
    assert is_time_to_delete(at(4, 59), "04")
    assert not is_time_to_delete(at(3, 59), "04")
    assert not is_time_to_delete(at(5, 0), "04")
    assert is_time_to_delete(at(16, 30), "04;16")
    assert not is_time_to_delete(at(10, 0), "04;16")


POLICY = RetentionPolicy(delete_when="04", interval_s=10.0, disk_max_used_space_ratio=0.75)


@pytest.mark.parametrize(
    ("hour", "ratio", "expected"),
    [
        (3, 0.10, Decision(delete=False, force=False, reason="none")),
        (4, 0.10, Decision(delete=True, force=False, reason="time")),
        (3, 0.75, Decision(delete=False, force=False, reason="none")),
        (3, 0.76, Decision(delete=True, force=False, reason="disk")),
        (4, 0.80, Decision(delete=True, force=False, reason="disk")),
        (3, 0.85, Decision(delete=True, force=False, reason="disk")),
        (3, 0.86, Decision(delete=True, force=True, reason="disk")),
        (3, -1.0, Decision(delete=True, force=False, reason="disk")),
    ],
)
def test_decide(hour: int, ratio: float, expected: Decision) -> None:
    assert decide(at(hour), ratio, POLICY) == expected


def test_policy_checks_its_values() -> None:
    with pytest.raises(ValueError):
        RetentionPolicy(delete_when="25")
    with pytest.raises(ValueError):
        RetentionPolicy(interval_s=0)


class FakeStore:
    def __init__(self, ratio: float, deletes: int = 1) -> None:
        self.ratio = ratio
        self.deletes = deletes
        self.calls: list[bool] = []
        self.called = threading.Event()
        self.checks = 0
        self.held: tuple[int, str, str] | None = None

    @dataclass
    class Report:
        deleted: list[tuple[str, int, int, str]]
        held: tuple[int, str, str] | None = None

    def clean_commit_log(self, force: bool = False) -> FakeStore.Report:
        self.calls.append(force)
        self.called.set()
        size = 1 << 20
        reason = "forced" if force else "expired"
        files = [
            (f"{i * size:020d}", i * size, (i + 1) * size, reason) for i in range(self.deletes)
        ]
        return FakeStore.Report(files, self.held)

    def disk_used_ratio(self) -> float:
        return self.ratio

    def check_disk_space(self) -> None:
        self.checks += 1


def test_run_once_deletes_only_when_due() -> None:
    store = FakeStore(ratio=0.2, deletes=3)
    assert run_once(store, POLICY, at(3)) == 0
    assert store.calls == []
    assert run_once(store, POLICY, at(4)) == 3
    store.ratio = 0.9
    assert run_once(store, POLICY, at(12)) == 3
    assert store.calls == [False, True]
    assert store.checks == 2, "the disk guard is re-applied after each deletion"


def test_forced_deletion_can_be_disabled() -> None:
    store = FakeStore(ratio=0.95)
    policy = RetentionPolicy(clean_file_forcibly_enable=False)
    run_once(store, policy, at(12))
    assert store.calls == [False]


def test_scheduler_runs_and_stops() -> None:
    store = FakeStore(ratio=0.8)
    scheduler = RetentionScheduler(store, RetentionPolicy(interval_s=0.01), clock=lambda: at(12))
    scheduler.start()
    try:
        assert store.called.wait(10)
    finally:
        scheduler.stop()
    assert not scheduler.running
    assert store.calls[0] is False


def test_scheduler_survives_a_failing_check(caplog: pytest.LogCaptureFixture) -> None:
    class Failing(FakeStore):
        def disk_used_ratio(self) -> float:
            if not self.calls and not getattr(self, "failed", False):
                self.failed = True
                raise OSError("statvfs failed")
            return 0.8

    store = Failing(ratio=0.8)
    scheduler = RetentionScheduler(store, RetentionPolicy(interval_s=0.01), clock=lambda: at(12))
    scheduler.start()
    try:
        assert store.called.wait(10)
    finally:
        scheduler.stop()
    assert "expired-file check failed" in caplog.text


def test_each_decision_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level("INFO", logger="rmq.scheduling.retention")
    store = FakeStore(ratio=0.97, deletes=2)
    store.held = (2 << 20, "subscription group G on T/3", "at queue offset 17 of 40")
    scheduler_memo = RetentionLog()
    assert run_once(store, POLICY, at(12), scheduler_memo) == 2
    deleted = [r.getMessage() for r in caplog.records if "deleted" in r.getMessage()]
    assert deleted == [
        "deleted 2 CommitLog file(s) (2 forced): 00000000000000000000 to 00000000000001048576, "
        "offsets [0, 2097152); disk 97.0% used, over diskSpaceCleanForciblyRatio 85%"
    ]
    # The hold: named once, with what to do, however often the check finds it again.
    store.deletes = 0
    for _ in range(5):
        assert run_once(store, POLICY, at(12), scheduler_memo) == 0
    held = [r.getMessage() for r in caplog.records if "stops at offset" in r.getMessage()]
    assert len(held) == 1, held
    assert "subscription group G on T/3 still needs it (at queue offset 17 of 40)" in held[0]
    assert "cleanUnconsumedFileForciblyEnable=true" in held[0]
    # Once another holder is the oldest, that one is named (once).
    store.held = (3 << 20, "delay level 2 on SCHEDULE_TOPIC_XXXX/1", "at queue offset 0 of 5")
    run_once(store, POLICY, at(12), scheduler_memo)
    run_once(store, POLICY, at(12), scheduler_memo)
    held = [r.getMessage() for r in caplog.records if "stops at offset" in r.getMessage()]
    assert len(held) == 2 and "delay level 2" in held[1]
