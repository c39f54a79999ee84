"""When to delete expired CommitLog files: RocketMQ's CleanCommitLogService, decided in Python.

The store knows *which* files may go (older than ``fileReservedTime``, or all but the active
one when forced); this module decides *when* to ask, every ``cleanResourceInterval`` ms:

* at an hour listed in ``deleteWhen`` (``"04"``, or several hours such as ``"04;10"``, in local
  time, as RocketMQ's ``UtilAll.isItTimeToDo``);
* at any hour when the CommitLog's partition is fuller than ``diskMaxUsedSpaceRatio`` (75 %);
* and then *forcibly* (unexpired files too, oldest first) above 85 %
  (RocketMQ's ``diskSpaceCleanForciblyRatio``).

:func:`is_time_to_delete` and :func:`decide` are pure; :class:`RetentionScheduler` is the thread
that applies them to a store.
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


class ExpiringStore(Protocol):
    """The part of :class:`rmq._rmq.MessageStore` that retention uses."""

    def delete_expired_files(self, force: bool = False) -> int: ...

    def disk_used_ratio(self) -> float: ...

    def check_disk_space(self) -> None: ...


def run_once(store: ExpiringStore, policy: RetentionPolicy, now: datetime) -> int:
    """One check: decide, and delete when due. Returns the number of files deleted."""
    ratio = store.disk_used_ratio()
    decision = decide(now, ratio, policy)
    if not decision.delete:
        return 0
    if decision.reason == "disk":
        forced = (
            f", unexpired ones too (above {policy.disk_space_clean_forcibly_ratio:.0%})"
            if decision.force
            else ""
        )
        log.warning(
            "disk %.1f%% used (diskMaxUsedSpaceRatio %.0f%%): deleting expired CommitLog files%s",
            ratio * 100,
            policy.disk_max_used_space_ratio * 100,
            forced,
        )
    deleted = store.delete_expired_files(force=decision.force)
    if deleted:
        # Re-apply the store's disk-full guard now, so refused writes resume at once.
        store.check_disk_space()
        log.info(
            "deleted %d CommitLog file(s) (reason: %s, forced: %s)",
            deleted,
            decision.reason,
            decision.force,
        )
    else:
        log.debug("no CommitLog file to delete (reason: %s)", decision.reason)
    return deleted


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
        run_once(self._store, self._policy, self._clock())
