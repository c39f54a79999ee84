"""When to delete CommitLog files: RocketMQ's CleanCommitLogService, decided in Python.

The store knows *which* files may go; this module decides *when* to ask, every
``cleanResourceInterval`` ms:

* at an hour listed in ``deleteWhen`` (``"04"``, or several hours such as ``"04;10"``, in local
  time, as RocketMQ's ``UtilAll.isItTimeToDo``): files older than ``fileReservedTime``;
* at any hour when the CommitLog's partition is fuller than ``diskMaxUsedSpaceRatio`` (75 %);
* and then *forcibly* (unexpired files too, oldest first) above 85 %
  (RocketMQ's ``diskSpaceCleanForciblyRatio``).

Unlike RocketMQ, no pass deletes past the store's *retention floor*: expiry keeps pending
timers and undelivered delay-level messages, and forced deletion also keeps every message a
subscription group has not consumed (``cleanUnconsumedFileForciblyEnable=true`` restores
RocketMQ's forced deletion, which ignores them). When nothing more can go, the store refuses
writes above ``diskSpaceWarningLevelRatio`` until space is freed, and reads go on.

Each decision is logged once: what was deleted (files, offsets, why), and what holds deletion
back (which group and queue), once per holder rather than every check.

:func:`is_time_to_delete` and :func:`decide` are pure; :func:`run_once` applies one decision;
:class:`RetentionScheduler` is the thread that runs it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from rmq.scheduling._periodic import PeriodicService

__all__ = [
    "DISK_SPACE_CLEAN_FORCIBLY_RATIO",
    "Decision",
    "RetentionLog",
    "RetentionPolicy",
    "RetentionScheduler",
    "decide",
    "is_time_to_delete",
    "parse_delete_when",
    "run_once",
]

log = logging.getLogger(__name__)

DISK_SPACE_CLEAN_FORCIBLY_RATIO = 0.85
"""Above this used fraction even unexpired files are deleted (RocketMQ's default)."""


def parse_delete_when(value: str) -> frozenset[int]:
    """The hours of day (0-23) that a ``deleteWhen`` value names.

    ``"04"`` → ``{4}``; ``"04;10"`` → ``{4, 10}``; blanks around hours and a trailing ``;`` are
    tolerated. Raises ``ValueError`` for anything else (empty, not a number, out of range). The
    parser is the config schema's (``rmq_common::config_schema::parse_delete_when``), the one
    that checks the config value.
    """
    from rmq._rmq import parse_delete_when as native

    return frozenset(native(value))


def is_time_to_delete(now: datetime, delete_when: str) -> bool:
    """Whether ``now`` (local time) falls in an hour listed by ``delete_when``."""
    return now.hour in parse_delete_when(delete_when)


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    """The config keys that steer deletion, in the units the scheduler uses."""

    delete_when: str = "04"
    """``deleteWhen``: hours of day (``;``-separated) at which expired files are deleted."""
    interval_s: float = 10.0
    """``cleanResourceInterval`` in seconds: how often to check."""
    disk_max_used_space_ratio: float = 0.75
    """``diskMaxUsedSpaceRatio`` / 100: above it, delete expired files at any hour."""
    disk_space_clean_forcibly_ratio: float = DISK_SPACE_CLEAN_FORCIBLY_RATIO
    """Above it, delete unexpired files too."""
    clean_file_forcibly_enable: bool = True
    """``cleanFileForciblyEnable``: whether unexpired files may be deleted at all."""
    clean_unconsumed_file_forcibly_enable: bool = False
    """``cleanUnconsumedFileForciblyEnable``: whether forced deletion may drop messages not
    consumed or delivered yet, as RocketMQ does (the store applies it; here it words the log)."""

    def __post_init__(self) -> None:
        parse_delete_when(self.delete_when)
        if self.interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, not {self.interval_s}")


@dataclass(frozen=True, slots=True)
class Decision:
    """What one check decided: whether to ask the store to delete, and how."""

    delete: bool
    force: bool
    reason: str
    """``"time"`` (a deleteWhen hour), ``"disk"`` (above the used-space ratio), ``"none"``."""


def decide(now: datetime, disk_used_ratio: float, policy: RetentionPolicy) -> Decision:
    """RocketMQ's ``timeup || spacefull`` test, with ``force`` when the disk is nearly full.

    A negative ratio means the store could not measure the disk; like RocketMQ, that counts as
    full (delete expired files) but never forces.
    """
    if disk_used_ratio < 0 or disk_used_ratio > policy.disk_max_used_space_ratio:
        force = (
            policy.clean_file_forcibly_enable
            and disk_used_ratio > policy.disk_space_clean_forcibly_ratio
        )
        return Decision(delete=True, force=force, reason="disk")
    if is_time_to_delete(now, policy.delete_when):
        return Decision(delete=True, force=False, reason="time")
    return Decision(delete=False, force=False, reason="none")


class CleanReport(Protocol):
    """What :meth:`rmq._rmq.MessageStore.clean_commit_log` returns."""

    @property
    def deleted(self) -> list[tuple[str, int, int, str]]: ...

    @property
    def held(self) -> tuple[int, str, str] | None: ...


class ExpiringStore(Protocol):
    """The part of :class:`rmq._rmq.MessageStore` that retention uses."""

    def clean_commit_log(self, force: bool = False) -> CleanReport: ...

    def disk_used_ratio(self) -> float: ...

    def check_disk_space(self) -> None: ...


@dataclass(slots=True)
class RetentionLog:
    """What was last said about a hold, so each is logged once rather than every check."""

    held_by: str | None = None


def _why(decision: Decision, ratio: float, policy: RetentionPolicy) -> str:
    if decision.reason == "time":
        return f"deleteWhen hour ({policy.delete_when})"
    if decision.force:
        return (
            f"disk {ratio:.1%} used, over diskSpaceCleanForciblyRatio "
            f"{policy.disk_space_clean_forcibly_ratio:.0%}"
        )
    return (
        f"disk {ratio:.1%} used, over diskMaxUsedSpaceRatio {policy.disk_max_used_space_ratio:.0%}"
    )


def _log_deleted(report: CleanReport, why: str) -> None:
    files = report.deleted
    counts = {r: sum(1 for *_, reason in files if reason == r) for r in ("expired", "forced")}
    kinds = ", ".join(f"{n} {r}" for r, n in counts.items() if n)
    names = files[0][0] if len(files) == 1 else f"{files[0][0]} to {files[-1][0]}"
    (log.warning if counts["forced"] else log.info)(
        "deleted %d CommitLog file(s) (%s): %s, offsets [%d, %d); %s",
        len(files),
        kinds,
        names,
        files[0][1],
        files[-1][2],
        why,
    )


def _log_held(
    report: CleanReport, decision: Decision, why: str, policy: RetentionPolicy, memo: RetentionLog
) -> None:
    if report.held is None:
        memo.held_by = None
        return
    offset, holder, detail = report.held
    if memo.held_by == holder:
        return
    memo.held_by = holder
    if decision.force and not policy.clean_unconsumed_file_forcibly_enable:
        log.error(
            "%s, but CommitLog deletion stops at offset %d: %s still needs it (%s). Messages "
            "not consumed or delivered yet are kept, so writes are refused above "
            "diskSpaceWarningLevelRatio until space is freed: free space on that disk, let "
            "the group consume (add consumers), or set cleanUnconsumedFileForciblyEnable=true "
            "to delete unconsumed messages as RocketMQ does",
            why,
            offset,
            holder,
            detail,
        )
    else:
        log.info(
            "expired CommitLog files kept from offset %d: %s still needs them (%s)",
            offset,
            holder,
            detail,
        )


def run_once(
    store: ExpiringStore,
    policy: RetentionPolicy,
    now: datetime,
    memo: RetentionLog | None = None,
) -> int:
    """One check: decide, and delete when due. Returns the number of files deleted.

    ``memo`` remembers which hold was last logged (the scheduler keeps one), so a disk that
    stays full is reported once per holder.
    """
    memo = memo if memo is not None else RetentionLog()
    ratio = store.disk_used_ratio()
    decision = decide(now, ratio, policy)
    if not decision.delete:
        memo.held_by = None
        return 0
    report = store.clean_commit_log(force=decision.force)
    why = _why(decision, ratio, policy)
    if report.deleted:
        _log_deleted(report, why)
        # Re-apply the store's disk-full guard now, so refused writes resume at once.
        store.check_disk_space()
    _log_held(report, decision, why, policy, memo)
    return len(report.deleted)


class RetentionScheduler(PeriodicService):
    """A daemon thread that calls :func:`run_once` every ``policy.interval_s`` seconds.

    The first check happens one interval after :meth:`start`. A failing check is logged and the
    next one runs as usual (as RocketMQ's scheduled executor does).
    """

    _what = "expired-file check"

    def __init__(
        self,
        store: ExpiringStore,
        policy: RetentionPolicy,
        *,
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        super().__init__("rmq-retention")
        self._store = store
        self._policy = policy
        self._clock = clock
        self._memo = RetentionLog()

    @property
    def policy(self) -> RetentionPolicy:
        """The policy the next check applies."""
        return self._policy

    @policy.setter
    def policy(self, policy: RetentionPolicy) -> None:
        """Replace the policy (a config change at runtime); the next check uses it."""
        self._policy = policy

    def _interval_s(self) -> float:
        return self._policy.interval_s

    def _round(self) -> None:
        run_once(self._store, self._policy, self._clock(), self._memo)
