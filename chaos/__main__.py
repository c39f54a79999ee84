"""``python -m chaos``: the whole campaign, with progress lines, a report, and an exit code.

Exits 0 only when the power-loss layer's self-check passed, no phase failed to run, no
acked message was lost under SYNC_FLUSH (kill -9 or power loss) nor under kill -9 at all,
no message read back was corrupt or served at a queue offset other than its own, every
acked message still in the CommitLog was reachable through its ConsumeQueue, the broker
started again after every crash, and every stalled frame was closed after the stall
timeout. ASYNC_FLUSH power losses may lose acked messages from the CommitLog: how many is
reported, not judged.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from chaos import cycles, ha, memory, report, selfcheck
from chaos.cluster import CampaignError


def _args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m chaos", description=__doc__)
    p.add_argument("--out", type=Path, default=Path("target/chaos"), help="report folder")
    p.add_argument("--kill9-cycles", type=int, default=20)
    p.add_argument("--powerloss-cycles", type=int, default=20)
    p.add_argument("--async-cycles", type=int, default=10)
    p.add_argument("--ha-cycles", type=int, default=20, help="kill -9 cycles of a SYNC_MASTER")
    p.add_argument("--threads", type=int, default=8, help="producer threads per phase")
    p.add_argument("--idle-connections", type=int, default=2000)
    p.add_argument("--stalled-frames", type=int, default=40)
    p.add_argument("--frame-sent-bytes", type=int, default=64 * 1024)
    p.add_argument("--seed", type=int, default=int(time.time()))
    p.add_argument("--keep", action="store_true", help="keep the stores of passed phases")
    return p.parse_args(argv)


def _failures(rep: dict[str, Any]) -> list[str]:
    out = []
    if not rep["selfcheck"]["ok"]:
        bad = [k for k, ok in rep["selfcheck"]["checks"].items() if not ok]
        out.append(f"the power-loss layer's self-check failed: {bad}")
    for p in rep["phases"]:
        if "error" in p:
            out.append(f"{p['phase']} could not run: {p['error'][:300]}")
            continue
        if p["lost"] and (p["flush"] == "SYNC_FLUSH" or p["crash"] == "kill9"):
            out.append(f"{p['phase']}: {p['lost']} acked messages lost, e.g. {p['lost_examples']}")
        if p["corrupt"]:
            out.append(f"{p['phase']}: {p['corrupt']} messages read back corrupt")
        if p["acked_in_commitlog_unreachable"]:
            out.append(
                f"{p['phase']}: {p['acked_in_commitlog_unreachable']} acked messages are in the "
                "CommitLog but no ConsumeQueue unit reaches them"
            )
        if p["served_twice"]:
            out.append(
                f"{p['phase']}: {p['served_twice']} reads served a stored message at a queue "
                "offset other than its own (a ConsumeQueue unit pointing at another record)"
            )
    h = rep.get("ha")
    if h is not None:
        if "error" in h:
            out.append(f"ha could not run: {h['error'][:300]}")
        else:
            if h["lost"]:
                out.append(f"ha: {h['lost']} acked messages lost, e.g. {h['lost_examples']}")
            if h["acked_missing_after_carry_on"]:
                out.append(
                    f"ha: {h['acked_missing_after_carry_on']} acked messages had not reached "
                    f"the consumer through the slave {ha.CARRY_ON_S:.0f} s after a master died"
                )
            if not h["commit_logs_identical"]:
                out.append("ha: the master's and the slave's CommitLogs differ at the end")
    if "memory_error" in rep:
        out.append(f"memory could not run: {rep['memory_error'][:300]}")
    mem = rep.get("memory")
    if mem and mem["stalled_closed_by_broker_after_timeout"] != mem["stalled_frames"]:
        out.append("memory: not every stalled frame was closed after the stall timeout")
    return out


def main(argv: list[str]) -> int:
    args = _args(argv)
    out: Path = args.out.resolve()  # children run in their own folders
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    t0 = time.monotonic()

    def progress(msg: str) -> None:
        print(f"[chaos {time.monotonic() - t0:6.0f} s] {msg}", flush=True)

    rep: dict[str, Any] = {
        "command": "make chaos" + (f" CHAOS_ARGS='{' '.join(argv)}'" if argv else ""),
        "started_utc": report.utc_now(),
        "machine": report.machine(),
        "load_start": report.load_average(),
        "load_end": "",
        "seed": args.seed,
        "phases": [],
    }
    progress(f"seed {args.seed}; work folder {work}; load average {rep['load_start']}")
    progress("power-loss layer self-check")
    try:
        rep["selfcheck"] = selfcheck.run(work / "selfcheck")
    except CampaignError as exc:
        rep["selfcheck"] = {"ok": False, "checks": {f"mount: {exc}": False}}
    progress(f"self-check: {'ok' if rep['selfcheck']['ok'] else 'FAILED'}")
    # ASYNC_FLUSH flushes one CommitLog file per flushIntervalCommitLog (500 ms) and one
    # ConsumeQueue file per flushIntervalConsumeQueue (1 s), as RocketMQ does: with the small
    # files of the other phases (1 MiB, 3000 units) at the ~15 MB/s this load reaches, both
    # flushes fall further behind every second. 16 MiB and 30 000-unit files keep them up to
    # date, so that phase measures the flush interval; the small-files phase shows what the
    # lag costs.
    big = {"mappedFileSizeCommitLog": str(16 << 20), "mappedFileSizeConsumeQueue": "600000"}
    plan: list[tuple[str, str, str, int, dict[str, str]]] = [
        ("kill9-sync", "SYNC_FLUSH", "kill9", args.kill9_cycles, {}),
        ("powerloss-sync", "SYNC_FLUSH", "powerloss", args.powerloss_cycles, {}),
        ("kill9-async", "ASYNC_FLUSH", "kill9", args.async_cycles, {}),
        ("powerloss-async", "ASYNC_FLUSH", "powerloss", args.async_cycles, big),
        ("powerloss-async-small-files", "ASYNC_FLUSH", "powerloss", args.async_cycles, {}),
    ]
    if rep["selfcheck"]["ok"]:
        for i, (name, flush, crash, n, extra) in enumerate(plan):
            if n <= 0:
                continue
            progress(f"phase {name}: {n} {crash} cycles under {flush}")
            phase = cycles.run(
                name, work / name, flush, crash, n, args.threads, args.seed + i, progress, extra
            )
            rep["phases"].append(phase)
            clean = "error" not in phase and not phase["lost"]
            if clean and not args.keep:
                shutil.rmtree(work / name / "store", ignore_errors=True)
                shutil.rmtree(work / name / "disk", ignore_errors=True)
            report.write(out, {**rep, "passed": False, "seconds": time.monotonic() - t0})
    if args.ha_cycles > 0:
        progress(f"phase ha-sync-master: {args.ha_cycles} kill -9 cycles of a SYNC_MASTER")
        rep["ha"] = ha.run(
            "ha-sync-master",
            work / "ha-sync-master",
            args.ha_cycles,
            args.threads,
            args.seed + len(plan),
            progress,
        )
        if "error" not in rep["ha"] and not rep["ha"]["lost"] and not args.keep:
            for store in ("master-store", "slave-store"):
                shutil.rmtree(work / "ha-sync-master" / store, ignore_errors=True)
        report.write(out, {**rep, "passed": False, "seconds": time.monotonic() - t0})
    if args.idle_connections > 0 or args.stalled_frames > 0:
        progress("phase memory")
        try:
            rep["memory"] = memory.run(
                work / "memory",
                max(1, args.idle_connections),
                max(1, args.stalled_frames),
                args.frame_sent_bytes,
                progress,
            )
        except CampaignError as exc:
            rep["memory_error"] = str(exc)
    rep["load_end"] = report.load_average()
    rep["seconds"] = round(time.monotonic() - t0, 1)
    rep["failures"] = _failures(rep)
    rep["passed"] = not rep["failures"]
    report.write(out, rep)
    progress(f"report: {out / 'report.json'}, {out / 'report.md'}")
    print(report.markdown(rep), flush=True)
    return 0 if rep["passed"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
