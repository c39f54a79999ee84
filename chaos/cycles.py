"""Crash cycles under load: kill -9 of the broker, or a power loss through the FUSE layer.

One phase is: a nameserver, a broker (its store on the real disk, or under the mount of
:mod:`chaos.powerloss_fs`), the topic, producer threads sending unique keys without pause;
then N times: let the load run a random 1.5 to 5 s, crash, restart the broker on what
survived. The producers never stop: sends fail while the broker is down and carry on after.
At the end the load stops, the whole topic is read back through consumers and counted
(:mod:`chaos.load`), and after a clean stop the CommitLog is walked record by record
(:mod:`chaos.walk`), which tells an acked message lost from the log from one that is in the
log but no ConsumeQueue unit reaches.

A crash is either ``kill9`` (SIGKILL of the broker; the kernel keeps its page cache, so even
unsynced writes survive) or ``powerloss`` (SIGKILL of the FUSE daemon, then of the broker,
then the dead mount is detached: only what was fsynced, fdatasynced or msynced survives).
"""

from __future__ import annotations

import collections
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.cluster import Broker, CampaignError, Namesrv, PowerLossMount
from chaos.load import Load, drain, tally
from chaos.walk import commitlog_keys

LOAD_SECONDS = (1.5, 5.0)


def run(
    name: str,
    work: Path,
    flush: str,
    crash: str,
    cycles: int,
    threads: int,
    seed: int,
    progress: Callable[[str], None],
    extra: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one phase; returns its figures (``error`` set when a step could not be done)."""
    if crash not in ("kill9", "powerloss"):
        raise ValueError(f"crash must be kill9 or powerloss, not {crash!r}")
    rng = random.Random(seed)
    work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "phase": name,
        "flush": flush,
        "crash": crash,
        "cycles_planned": cycles,
        "seed": seed,
        "threads": threads,
        "store_config": extra or {},
    }
    ns = Namesrv(work)
    fs = None
    if crash == "powerloss":
        fs = PowerLossMount(work / "disk", work / "mnt", work / "fuse.log")
        fs.mount()
        store = work / "mnt" / "store"
    else:
        store = work / "store"
    broker = Broker(work, store, ns.addr, flush, extra or {})
    load = Load(ns.addr, run=name, threads=threads)
    restarts: list[float] = []
    per_cycle_acked: list[int] = []
    started = time.monotonic()
    load_seconds = 0.0
    try:
        broker.start()
        broker.create_topic()
        load.start()
        for c in range(cycles):
            up = rng.uniform(*LOAD_SECONDS)
            time.sleep(up)
            load_seconds += up
            if fs is not None:
                fs.power_loss()
            broker.kill9()
            if fs is not None:
                fs.unmount()
                fs.mount()
            load.epoch = c + 1
            acked_now = load.acked_count()
            per_cycle_acked.append(acked_now - sum(per_cycle_acked))
            try:
                restarts.append(broker.start())
            except CampaignError as exc:
                raise CampaignError(
                    f"the broker did not start again after {crash} {c + 1}/{cycles}: {exc}"
                ) from exc
            progress(
                f"{name}: cycle {c + 1}/{cycles}: {crash} after {up:.1f} s of load, "
                f"{acked_now} acked so far, restart took {restarts[-1]:.1f} s"
            )
        time.sleep(1.0)
        load_seconds += 1.0
        load.stop()
        progress(f"{name}: load stopped; reading the topic back")
        got = drain(ns.addr, f"chaos_check_{name}")
        t = tally(load.acked, load.unacked, got)
        # A clean stop (everything synced), then the CommitLog itself, record by record.
        broker.stop()
        if fs is not None:
            fs.unmount()
            store = work / "disk" / "store"
        progress(f"{name}: walking the CommitLog record by record")
        in_log = commitlog_keys(store, extra or {})
        acked_in_log = sum(1 for k in load.acked if k in in_log)
        gone_by_cycle = collections.Counter(load.acked[k] for k in load.acked if k not in in_log)
        lost_by_cycle = collections.Counter(
            load.acked[k] for k in load.acked if k not in got.counts
        )
        result.update(t.as_dict())
        result.update(
            cycles=len(restarts),
            restart_seconds_max=round(max(restarts, default=0.0), 2),
            restart_seconds_mean=round(sum(restarts) / max(1, len(restarts)), 2),
            acked_per_cycle_mean=round(sum(per_cycle_acked) / max(1, len(per_cycle_acked))),
            acked_per_second=round(t.acked / max(load_seconds, 1e-9)),
            lost_per_crash_max=max(lost_by_cycle.values(), default=0),
            lost_by_crash={str(k): v for k, v in sorted(lost_by_cycle.items())},
            acked_lost_from_commitlog=t.acked - acked_in_log,
            lost_from_commitlog_per_crash_max=max(gone_by_cycle.values(), default=0),
            lost_from_commitlog_by_crash={str(k): v for k, v in sorted(gone_by_cycle.items())},
            acked_in_commitlog_unreachable=sum(
                1 for k in load.acked if k in in_log and k not in got.counts
            ),
            send_errors=dict(load.errors.most_common()),
            # Not counted: errors of the moment between the FUSE daemon's death and the
            # broker's (ENOTCONN, ECONNABORTED from the dead mount).
            broker_error_lines=sum(
                "os error 107" not in ln and "os error 103" not in ln
                for ln in broker.log_lines(r"\bERROR\b|panicked")
            ),
        )
        progress(
            f"{name}: {t.acked} acked, {t.lost} lost, {t.duplicated} duplicated, "
            f"{t.unacked_present} unacked but present, {t.corrupt} corrupt, "
            f"{t.served_twice} served at a second queue offset"
        )
    except CampaignError as exc:
        result["error"] = str(exc)
        result["cycles"] = len(restarts)
        progress(f"{name}: FAILED after {len(restarts)} cycles: {str(exc)[:2000]}")
    finally:
        load.stop()
        if fs is not None:
            fs.power_loss()
        broker.kill9()
        if fs is not None:
            fs.unmount()
        ns.stop()
        result["seconds"] = round(time.monotonic() - started, 1)
        result["broker_log"] = str(broker.log)
    return result
