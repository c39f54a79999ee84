"""benches/vs_apache's own correctness (not its figures): medians of the rounds and rmq ÷ Apache
ratios (report.py), the /proc readings (systems.py) and run.py's options. No broker starts here;
the bench itself runs with ``make bench-vs-apache``."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "benches" / "vs_apache"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"vs_apache_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


report = _load("report")


def _run(system: str, rnd: int, rate: float, cpu_s: float, p99: float, **kw: object) -> object:
    return report.Run(
        scenario=str(kw.get("scenario", "sync 32 threads")),
        system=system,
        round=rnd,
        msgs_per_s=rate,
        messages=int(rate * 10),
        seconds=10.0,
        cpu_s=cpu_s,
        peak_rss_mib=100.0 if system == "rmq" else 400.0,
        anon_rss_mib=50.0 if system == "rmq" else 1000.0,
        load=(1.0, 1.0, 1.0),
        latency_ms={"p50": 1.0, "p99": p99, "p99.9": p99 * 2, "max": p99 * 3},
        failure_reasons=dict(kw.get("reasons", {})),  # type: ignore[call-overload]
    )


def test_ratios_are_of_the_medians_of_interleaved_rounds() -> None:
    runs = [
        _run("rmq", 1, 20_000, 2.0, 4.0),
        _run("apache", 1, 10_000, 10.0, 8.0),
        _run("rmq", 2, 30_000, 3.0, 6.0),
        _run("apache", 2, 10_000, 10.0, 8.0),
        _run("rmq", 3, 100_000, 1.0, 100.0),  # an outlier the median ignores
    ]
    (row,) = report.ratio_rows(runs, [])
    # rmq's median 30 000 msg/s against 10 000; CPU per 100 k: rmq's runs give 1.0, 1.0 and
    # 0.1 s (median 1.0), Apache's 10 s; p99 median 6 ms against 8 ms.
    assert row == ["sync 32 threads", "3.00", "0.10", "0.75", "0.75", "0.25", "0.05"]


def test_a_scenario_one_system_lacks_shows_a_dash_not_an_error() -> None:
    runs = [_run("rmq", 1, 20_000, 2.0, 4.0)]
    (row,) = report.ratio_rows(runs, [])
    assert row[1:3] == ["—", "—"] and row[-1] == "—"
    assert math.isnan(report.scenario_medians(runs, "sync 32 threads", "apache")["msgs_per_s"])


def test_start_up_row_and_failure_reasons_are_reported() -> None:
    busy = "code N [TIMEOUT_CLEAN_QUEUE]broker busy"
    runs = [
        _run("rmq", 1, 20_000, 2.0, 4.0),
        _run("apache", 1, 10_000, 10.0, 8.0, reasons={busy: 190}),
    ]
    startups = [report.Startup("rmq", 1, 0.5, 40.0), report.Startup("apache", 1, 5.0, 400.0)]
    rows = report.ratio_rows(runs, startups)
    assert rows[-1][0] == "start to first send; idle RSS"
    assert rows[-1][1] == "0.10" and rows[-1][5] == "0.10"
    assert report.failure_lines(runs) == [f"- sync 32 threads, apache, round 1: 190 x `{busy}`"]
    table = report.markdown_table(report.RATIO_HEADER, rows)
    assert table.splitlines()[1] == "|---|---:|---:|---:|---:|---:|---:|"


def test_proc_readings_of_a_live_process() -> None:
    systems = _load("systems")
    pid = os.getpid()
    assert systems.cpu_seconds([pid]) > 0
    rss = systems.rss_mib([pid])
    assert 1 < rss <= systems.rss_mib([pid], peak=True)


def test_quick_and_full_defaults() -> None:
    run = _load("run")
    quick = run.parse_args(["--quick"])
    full = run.parse_args([])
    assert (quick.rounds, full.rounds) == (1, 2)
    assert quick.duration < full.duration and quick.drain_messages < full.drain_messages
    assert run.parse_args(["--quick", "--rounds", "3"]).rounds == 3


def test_big_body_runs_report_mib_per_second() -> None:
    big = report.Run(
        scenario="sync 8 threads, 1 MiB",
        system="rmq",
        round=1,
        msgs_per_s=300.0,
        messages=3000,
        seconds=10.0,
        cpu_s=3.0,
        peak_rss_mib=100.0,
        load=(1.0, 1.0, 1.0),
        body_bytes=2**20,
    )
    assert big.mib_per_s == 300.0
    assert _run("rmq", 1, 2048, 1.0, 1.0).mib_per_s == 2.0  # type: ignore[attr-defined]
    (rmq_row, apache_row) = report.detail_rows([big], [])
    column = report.DETAIL_HEADER.index("MiB/s")
    assert rmq_row[column] == "300.0" and apache_row[column] == "—"
    assert len(rmq_row) == len(report.DETAIL_HEADER)


def test_scenario_selection_and_big_drain_sizes() -> None:
    run = _load("run")
    full = run.parse_args([])
    assert (full.small, full.big) == (True, True)
    only_big = run.parse_args(["--quick", "--scenarios", "big"])
    assert (only_big.small, only_big.big) == (False, True)
    assert run.parse_args(["--scenarios", "small"]).big is False
    assert only_big.big_duration < full.big_duration
    # The same bytes of each size are preloaded: 1 GiB is 16 384 bodies of 64 KiB, 1 024 of
    # 1 MiB; a quick run's 128 MiB is 2 048 and 128.
    sizes = [size for _, size in run.BIG_SCENARIOS.values()]
    assert [run.big_drain_messages(full, s) for s in sizes] == [16_384, 1024]
    assert [run.big_drain_messages(only_big, s) for s in sizes] == [2048, 128]


def test_the_generators_cpu_per_message_is_a_median_beside_the_brokers() -> None:
    runs = [_run("rmq", 1, 1000.0, 1.0, 2.0), _run("rmq", 2, 1000.0, 1.0, 2.0)]
    runs[0].client_cpu_s, runs[1].client_cpu_s = 3.0, 5.0  # type: ignore[attr-defined]
    m = report.scenario_medians(runs, "sync 32 threads", "rmq")
    assert m["client_cpu_per_100k"] == 4.0 / 10_000 * 100_000  # 10 000 messages a run
    assert "client CPU s / 100 k" in report.DETAIL_HEADER
