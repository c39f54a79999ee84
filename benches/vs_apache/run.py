"""rmq side by side with Apache RocketMQ 4.9.7 (issue 18, item 1): the same loads against each
broker, one system at a time, interleaved (rmq, Apache, rmq, Apache ...), medians of the rounds
and rmq ÷ Apache ratios, printed and written as a markdown report.

    .venv/bin/python benches/vs_apache/run.py [--quick] [--rounds 2] [--out REPORT.md]

(``make bench-vs-apache`` builds the extension and the load generator first.) Per round and
flush type each system starts with a default store in a fresh temp dir (deleted afterwards) and
runs, with the Java load generator of benches/vs_apache/java (official 4.9.8 client):
sync sends at 32 and 128 threads and batch sends of 16 at 32 threads (ASYNC_FLUSH; the sync
sends also under SYNC_FLUSH), then a topic preloaded with --drain-messages messages is drained
by the Java push consumer and by ``python -m rmq.bench consumer --no-latency`` (each its own group,
both listeners doing nothing). Big bodies (issue 18, item 4; ASYNC_FLUSH): sync sends of 64 KiB
bodies at 32 threads and of 1 MiB bodies at 8 (uncompressed: the load generator turns the Java
client's 4 KiB compression threshold off), then --big-drain-mib MiB of each size preloaded and
drained by the Java push consumer; ``--scenarios small|big`` runs one half alone. Per run:
throughput, send latency percentiles, broker CPU seconds per 100 k messages (utime + stime from
/proc over the measured window), peak RSS (with the mapped store pages it counts) and the
anonymous RSS at the end, and the load average; per start: time from start to a
first acknowledged send and the RSS once idle.

Between sessions the bench lets the machine settle (--settle seconds after a ``sync``): a
system's stop frees the page cache of its store (17 GB for Apache after the big-body drains),
and on a VM that hands free memory back to its host the next system's first writes then stall
behind that hand-back (an rmq SYNC_FLUSH run right after 14 GB were freed: p99.9 296 ms, max
578 ms; 30 s later: 14 ms and 27 ms). Without it the system that follows the bigger teardown
pays for it.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import report
import systems
from report import Run, Startup

HERE = Path(__file__).resolve().parent
JAR = HERE / "java" / "target" / "rmq-vs-apache.jar"
MEASURE_START, MEASURE_END = "# measure start", "# measure end"
KIB = 1024
SEND_SCENARIOS = {  # name: (mode, threads, batch, body bytes)
    "sync 32 threads": ("sync", 32, 1, KIB),
    "sync 128 threads": ("sync", 128, 1, KIB),
    "batch 32 threads x 16": ("batch", 32, 16, KIB),
    # The Spark sink's shape: a task sends batches of 4 096 rows (here 256-byte bodies).
    "batch 4 threads x 4096 of 256 B": ("batch", 4, 4096, 256),
}
BIG_SCENARIOS = {  # label: (sync send threads, body bytes)
    "64 KiB": (32, 64 * KIB),
    "1 MiB": (8, 1024 * KIB),
}
QUICK_DRAIN_MIB = 128  # what --quick preloads per big body size


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.runs: list[Run] = []
        self.startups: list[Startup] = []
        self.client_home = Path(tempfile.mkdtemp(prefix="vs-apache-clients-"))

    def java(self, *argv: str) -> list[str]:
        return [
            "java",
            "-XX:+UseG1GC",
            "-XX:-UsePerfData",
            f"-Duser.home={self.client_home}",  # the client's logs/ go here
            "-jar",
            str(JAR),
            *argv,
        ]

    def measure(
        self,
        system: systems.System,
        cmd: list[str],
        timeout: float,
    ) -> tuple[
        dict[str, Any], tuple[float, float], tuple[float, float], tuple[float, float, float]
    ]:
        """Run a load generator; returns its JSON, the broker's and the generator's CPU seconds
        over the window it marks (or its whole run, when it prints no markers), the broker's
        peak RSS in that window and its anonymous RSS at the end, and the load average."""
        pids = system.pids()
        systems.reset_peak(pids)
        cpu_before = systems.cpu_seconds(pids)
        cpu_after: float | None = None
        anon: float | None = None
        doc: dict[str, Any] | None = None
        proc = subprocess.Popen(
            [*systems.apache_rocketmq.die_with_parent(), *cmd],  # gone if this process is killed
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            cwd=self.client_home,
        )
        deadline = time.monotonic() + timeout
        client_cpu = [0.0, float("nan")]
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.strip()
                if line == MEASURE_START:
                    systems.reset_peak(pids)
                    cpu_before = systems.cpu_seconds(pids)
                    client_cpu[0] = systems.cpu_seconds([proc.pid])
                elif line == MEASURE_END:
                    cpu_after = systems.cpu_seconds(pids)
                    client_cpu[1] = systems.cpu_seconds([proc.pid]) - client_cpu[0]
                    anon = systems.anon_rss_mib(pids)
                elif line.startswith("{"):
                    doc = json.loads(line)
                if time.monotonic() > deadline:
                    break
            proc.wait(max(1.0, deadline - time.monotonic()))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if cpu_after is None:
            cpu_after = systems.cpu_seconds(pids)
        if anon is None:
            anon = systems.anon_rss_mib(pids)
        if doc is None:
            raise RuntimeError(
                f"{' '.join(cmd)} printed no result (exit {proc.returncode}); broker log:\n"
                + system.log_tail()
            )
        load = os.getloadavg()
        rss = (systems.rss_mib(pids, peak=True), anon)
        return doc, (cpu_after - cpu_before, client_cpu[1]), rss, load

    def record(
        self,
        scenario: str,
        system: systems.System,
        rnd: int,
        cmd: list[str],
        timeout: float,
        parse: Callable[[dict[str, Any]], tuple[int, float, float]],
        latency: bool,
        body_bytes: int = KIB,
    ) -> None:
        doc, (cpu, client_cpu), (peak, anon), load = self.measure(system, cmd, timeout)
        messages, seconds, rate = parse(doc)
        run = Run(
            scenario=scenario,
            system=system.name,
            round=rnd,
            msgs_per_s=rate,
            messages=messages,
            seconds=seconds,
            cpu_s=cpu,
            peak_rss_mib=peak,
            anon_rss_mib=anon,
            load=load,
            latency_ms=dict(doc.get("latency_ms", {})) if latency else {},
            failures=int(doc.get("failures", 0)),
            failure_reasons=dict(doc.get("failure_reasons", {})),
            body_bytes=body_bytes,
            client_cpu_s=client_cpu,
        )
        self.runs.append(run)
        print(
            f"  {scenario:<28} {system.name:<6} {rate:>10,.0f} msg/s {run.mib_per_s:7.1f} MiB/s  "
            f"cpu {run.cpu_per_100k:5.2f} s/100k  "
            + (f"p99 {run.latency_ms.get('p99', 0):7.2f} ms  " if latency else "")
            + f"rss {peak:6.0f} MiB (anon {anon:5.0f})  fail {run.failures}  load {load[0]:.2f}",
            flush=True,
        )

    def sends(self, system: systems.System, rnd: int, flush: str) -> None:
        a = self.args
        if not a.small:
            return
        for name, (mode, threads, batch, size) in SEND_SCENARIOS.items():
            if flush == "SYNC_FLUSH" and mode == "batch":
                continue
            topic = f"VsApache{mode.capitalize()}{threads}x{batch}"
            cmd = self.java(
                mode, "-n", system.namesrv_addr, "-t", topic, "-w", str(threads),
                "-b", str(batch), "-s", str(size), "-d", str(a.duration),
                "--warmup", str(a.warmup),
            )  # fmt: skip
            scenario = name + (", SYNC_FLUSH" if flush == "SYNC_FLUSH" else "")
            timeout = a.warmup + a.duration + 120
            self.record(scenario, system, rnd, cmd, timeout, _send_figures, True, size)

    def big(self, system: systems.System, rnd: int) -> None:
        """Big bodies (item 4): sync sends of each size for --big-duration seconds, then a
        topic preloaded with --big-drain-mib MiB of them drained by the Java push consumer."""
        a = self.args
        for label, (threads, size) in BIG_SCENARIOS.items():
            topic = f"VsApacheBig{size // KIB}k"
            cmd = self.java(
                "sync", "-n", system.namesrv_addr, "-t", topic, "-w", str(threads),
                "-s", str(size), "-d", str(a.big_duration), "--warmup", str(a.warmup),
            )  # fmt: skip
            scenario = f"sync {threads} threads, {label}"
            timeout = a.warmup + a.big_duration + 120
            self.record(scenario, system, rnd, cmd, timeout, _send_figures, True, size)
        for label, (threads, size) in BIG_SCENARIOS.items():
            want = big_drain_messages(a, size)
            topic = f"VsApacheBigDrain{size // KIB}k"
            preload = self.java(
                "sync", "-n", system.namesrv_addr, "-t", topic, "-w", str(threads),
                "-s", str(size), "-c", str(want),
            )  # fmt: skip
            self.record(
                f"preload: sync {threads} threads, {label}",
                system, rnd, preload, 900, _send_figures, True, size,
            )  # fmt: skip
            n = self.runs[-1].messages
            if n < want * 0.9:
                raise RuntimeError(f"preloading {topic} stored {n} of {want} messages")
            time.sleep(2)
            java = self.java(
                "consume", "-n", system.namesrv_addr, "-t", topic, "-c", str(n),
                "-g", f"vs_apache_big_{rnd}", "--timeout", str(a.drain_timeout),
            )  # fmt: skip
            self.record(
                f"Java push consumer drain, {label}",
                system, rnd, java, a.drain_timeout + 60, _consume_figures, False, size,
            )  # fmt: skip

    def drains(self, system: systems.System, rnd: int) -> None:
        a = self.args
        if not a.small:
            return
        n = a.drain_messages
        topic = "VsApacheDrain"
        preload = self.java(
            "batch", "-n", system.namesrv_addr, "-t", topic, "-w", "16", "-b", "16",
            "-s", "1024", "-c", str(n),
        )  # fmt: skip
        self.record(
            "preload: batch 16 threads x 16", system, rnd, preload, 900, _send_figures, True
        )
        # Sends a broker refused (Apache's "[TIMEOUT_CLEAN_QUEUE] broker busy") are not
        # resent: the consumers drain what was acknowledged.
        n = self.runs[-1].messages
        if n < a.drain_messages * 0.9:
            raise RuntimeError(f"preloading {topic} stored {n} of {a.drain_messages} messages")
        time.sleep(2)  # let the broker's dispatch and flush settle before the drains
        java = self.java(
            "consume", "-n", system.namesrv_addr, "-t", topic, "-c", str(n),
            "-g", f"vs_apache_java_{rnd}", "--timeout", str(a.drain_timeout),
        )  # fmt: skip
        self.record(
            "Java push consumer drain",
            system,
            rnd,
            java,
            a.drain_timeout + 60,
            _consume_figures,
            latency=False,
        )
        # --no-latency: a listener that only counts, as the Java consumer's does nothing.
        python = [
            a.python, "-m", "rmq.bench", "consumer", "-n", system.namesrv_addr, "-t", topic,
            "-c", str(n), "-g", f"vs_apache_python_{rnd}", "--json", "-q", "--no-latency",
        ]  # fmt: skip
        self.record(
            "rmq.bench consumer drain",
            system,
            rnd,
            python,
            a.drain_timeout,
            _python_figures,
            latency=False,
        )

    def session(self, make: Callable[[], systems.System], rnd: int, flush: str) -> None:
        system = make()
        try:
            system.start()
            print(
                f"round {rnd} {flush} {system.name}: first send after {system.startup_s:.2f} s, "
                f"idle RSS {system.idle_rss_mib:.0f} MiB",
                flush=True,
            )
            if flush == "ASYNC_FLUSH":
                self.startups.append(
                    Startup(system.name, rnd, system.startup_s, system.idle_rss_mib)
                )
            self.sends(system, rnd, flush)
            if flush == "ASYNC_FLUSH":
                self.drains(system, rnd)
                if self.args.big:
                    self.big(system, rnd)
        except Exception:
            print(f"--- {system.name} logs ---\n{system.log_tail()}", file=sys.stderr)
            raise
        finally:
            system.stop()
            self.settle()

    def settle(self) -> None:
        """Flush what the stopped system left dirty and wait --settle seconds."""
        if self.args.settle > 0:
            os.sync()
            print(f"settling {self.args.settle:.0f} s", flush=True)
            time.sleep(self.args.settle)

    def run(self) -> None:
        a = self.args
        # Big bodies run under ASYNC_FLUSH only: with them alone there is no SYNC_FLUSH session.
        flushes = ("ASYNC_FLUSH", "SYNC_FLUSH") if a.small else ("ASYNC_FLUSH",)
        for rnd in range(1, a.rounds + 1):
            for flush in flushes:
                self.session(functools.partial(systems.RmqSystem, flush, a.python), rnd, flush)
                self.session(functools.partial(systems.ApacheSystem, flush), rnd, flush)

    def close(self) -> None:
        shutil.rmtree(self.client_home, ignore_errors=True)


def big_drain_messages(a: argparse.Namespace, size: int) -> int:
    """Messages of `size` bytes preloaded for a big drain: --big-drain-mib MiB of them."""
    return max(1, a.big_drain_mib * 2**20 // size)


def _send_figures(doc: dict[str, Any]) -> tuple[int, float, float]:
    return int(doc["messages"]), float(doc["seconds"]), float(doc["msgs_per_s"])


def _consume_figures(doc: dict[str, Any]) -> tuple[int, float, float]:
    if not doc.get("complete", True):
        print(f"  (incomplete drain: {doc})", flush=True)
    return int(doc["messages"]), float(doc["seconds"]), float(doc["msgs_per_s"])


def _python_figures(doc: dict[str, Any]) -> tuple[int, float, float]:
    return int(doc["consumed"]), float(doc["consume_window_s"]), float(doc["tps"])


def machine() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
    return (
        f"{os.cpu_count()} vCPUs ({cpu}), {mem_kib / 2**20:.0f} GiB RAM, "
        f"Linux {platform.release()}, {java.splitlines()[0] if java else 'java ?'}"
    )


def commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(systems.REPO), "log", "-1", "--format=%h %s"],
        capture_output=True,
        text=True,
    )
    dirty = subprocess.run(
        ["git", "-C", str(systems.REPO), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return out.stdout.strip()[:100] + (" (with uncommitted changes)" if dirty else "")


def write_report(
    bench: Bench, path: Path, command: str, started: str, minutes: float, measured: str
) -> None:
    runs, startups = bench.runs, bench.startups
    ratios = report.markdown_table(report.RATIO_HEADER, report.ratio_rows(runs, startups))
    detail = report.markdown_table(report.DETAIL_HEADER, report.detail_rows(runs, startups))
    failures = report.failure_lines(runs) or ["- none"]
    text = "\n".join(
        [
            "# rmq side by side with Apache RocketMQ 4.9.7",
            "",
            f"- date: {started} UTC, {minutes:.1f} min",
            f"- command: `{command}`",
            f"- commit measured: {measured}",
            f"- machine: {machine()}",
            f"- rounds: {bench.args.rounds} per scenario, interleaved rmq, Apache, rmq, Apache,"
            f" {bench.args.settle:.0f} s of rest after each system stops",
            f"- sends: 1 KiB bodies, {bench.args.warmup} s warm-up then {bench.args.duration} s;"
            f" drains: {bench.args.drain_messages:,} messages preloaded",
            f"- big bodies (64 KiB, 1 MiB; uncompressed, 'a'..'z' repeated):"
            f" {bench.args.warmup} s warm-up then {bench.args.big_duration} s of sync sends;"
            f" drains of {bench.args.big_drain_mib} MiB preloaded"
            + ("" if bench.args.big else " (not run: --scenarios small)"),
            "",
            "## rmq ÷ Apache (medians)",
            "",
            "Throughput above 1 and CPU, latency and RSS below 1 favour rmq. Peak RSS counts"
            " the pages of the mapped store files a broker touched (VmHWM); anon RSS (RssAnon at"
            " the end of a run) is heap and buffers alone.",
            "",
            ratios,
            "",
            "## Medians per system",
            "",
            detail,
            "",
            "## Failed sends (counted, not fatal)",
            "",
            *failures,
            "",
            "## Load average (1, 5, 15 min) at the end of each run",
            "",
            *report.load_lines(runs),
            "",
        ]
    )
    path.write_text(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run (1 round, 3 s loads): checks the bench works; its figures are not a "
        "comparison (Apache's JIT is still cold)",
    )
    p.add_argument("--rounds", type=int, help="rounds per scenario (default 2; 1 with --quick)")
    p.add_argument("--duration", type=float, help="seconds per send run (default 20; 3 quick)")
    p.add_argument("--warmup", type=float, help="warm-up seconds before each (default 3; 1)")
    p.add_argument(
        "--drain-messages", type=int, help="messages preloaded to drain (default 1 M; 20 k)"
    )
    p.add_argument("--drain-timeout", type=float, default=600.0, help="seconds per drain")
    p.add_argument(
        "--scenarios",
        choices=("all", "small", "big"),
        default="all",
        help="1 KiB bodies (small), 64 KiB and 1 MiB bodies (big) or both (default)",
    )
    p.add_argument(
        "--big-duration", type=float, help="seconds per big-body send run (default 10; 3 quick)"
    )
    p.add_argument(
        "--big-drain-mib",
        type=int,
        help=f"MiB preloaded per big body size to drain (default 1024; {QUICK_DRAIN_MIB} quick)",
    )
    p.add_argument(
        "--settle",
        type=float,
        help="seconds of rest after each system stops (default 30; 0 with --quick)",
    )
    p.add_argument("--out", type=Path, default=HERE / "REPORT.md", help="markdown report file")
    p.add_argument("--python", default=sys.executable, help="python with rmq installed")
    a = p.parse_args(argv)
    quick = a.quick
    a.rounds = a.rounds or (1 if quick else 2)
    a.duration = a.duration or (3.0 if quick else 20.0)
    a.warmup = a.warmup if a.warmup is not None else (1.0 if quick else 3.0)
    a.drain_messages = a.drain_messages or (20_000 if quick else 1_000_000)
    a.big_duration = a.big_duration or (3.0 if quick else 10.0)
    a.settle = a.settle if a.settle is not None else (0.0 if quick else 30.0)
    a.big_drain_mib = a.big_drain_mib or (QUICK_DRAIN_MIB if quick else 1024)
    a.small = a.scenarios in ("all", "small")
    a.big = a.scenarios in ("all", "big")
    return a


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not JAR.is_file():
        print(
            f"error: {JAR} is missing: build it with `mvn -q -B package` in {JAR.parent.parent} "
            "(or run `make bench-vs-apache`)",
            file=sys.stderr,
        )
        return 1
    signal.signal(signal.SIGTERM, _terminate)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    command = " ".join(["python", "benches/vs_apache/run.py", *(argv or sys.argv[1:])])
    t0 = time.monotonic()
    measured = commit()  # at the start: the tree may move on while the bench runs
    bench = Bench(args)
    status = 0
    try:
        bench.run()
    except KeyboardInterrupt:
        print("interrupted: the report holds the runs done so far", file=sys.stderr)
        status = 130
    except (RuntimeError, OSError, ValueError, KeyError, subprocess.SubprocessError) as e:
        print(f"error: {e}\nthe report holds the runs done so far", file=sys.stderr)
        status = 1
    finally:
        bench.close()
        systems.remove_work_dirs()  # what an interrupted stop() left
    if not bench.runs:
        return 1
    write_report(bench, args.out, command, started, (time.monotonic() - t0) / 60, measured)
    print("\nrmq ÷ Apache (medians):")
    print(report.text_table(report.RATIO_HEADER, report.ratio_rows(bench.runs, bench.startups)))
    print(f"\nreport: {args.out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
