"""The figures of benches/vs_apache: one :class:`Run` per scenario, system and round; medians
per scenario and system; rmq ÷ Apache ratios; the console table and the markdown report.

Kept apart from run.py (which starts processes) so that it can be checked on its own.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

SYSTEMS = ("rmq", "apache")


@dataclass
class Run:
    """One measured run of one scenario on one system."""

    scenario: str
    system: str
    round: int
    msgs_per_s: float
    messages: int
    seconds: float
    cpu_s: float
    """Broker CPU seconds (utime + stime of its processes) over the measured window."""
    peak_rss_mib: float
    load: tuple[float, float, float]
    latency_ms: dict[str, float] = field(default_factory=dict)
    anon_rss_mib: float = float("nan")
    """``RssAnon`` at the end of the window: RSS without the mapped store files' pages."""
    failures: int = 0
    failure_reasons: dict[str, int] = field(default_factory=dict)
    body_bytes: int = 1024
    client_cpu_s: float = float("nan")
    """The load generator's CPU seconds over the same window: on a machine the generator
    shares, throughput is bounded by broker plus generator CPU per message."""

    @property
    def cpu_per_100k(self) -> float:
        return self.cpu_s / self.messages * 100_000 if self.messages else float("nan")

    @property
    def client_cpu_per_100k(self) -> float:
        return self.client_cpu_s / self.messages * 100_000 if self.messages else float("nan")

    @property
    def mib_per_s(self) -> float:
        """Body bytes a second (headers and properties not counted), in MiB."""
        return self.msgs_per_s * self.body_bytes / 2**20


@dataclass
class Startup:
    system: str
    round: int
    startup_s: float
    idle_rss_mib: float


def median(values: Iterable[float]) -> float:
    vals = [v for v in values if v == v]  # drop NaN
    return statistics.median(vals) if vals else float("nan")


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def scenario_medians(runs: Sequence[Run], scenario: str, system: str) -> dict[str, float]:
    mine = [r for r in runs if r.scenario == scenario and r.system == system]
    out = {
        "msgs_per_s": median(r.msgs_per_s for r in mine),
        "mib_per_s": median(r.mib_per_s for r in mine),
        "cpu_per_100k": median(r.cpu_per_100k for r in mine),
        "client_cpu_per_100k": median(r.client_cpu_per_100k for r in mine),
        "peak_rss_mib": median(r.peak_rss_mib for r in mine),
        "anon_rss_mib": median(r.anon_rss_mib for r in mine),
        "failures": float(sum(r.failures for r in mine)),
        "runs": float(len(mine)),
    }
    for key in ("p50", "p99", "p99.9", "max"):
        out[key] = median(r.latency_ms.get(key, float("nan")) for r in mine)
    return out


def _fmt(v: float, digits: int = 2) -> str:
    return "—" if v != v else f"{v:,.{digits}f}"


def ratio_rows(runs: Sequence[Run], startups: Sequence[Startup]) -> list[list[str]]:
    """One row per scenario: rmq ÷ Apache of the medians."""
    rows = []
    for scenario in dict.fromkeys(r.scenario for r in runs):
        a = scenario_medians(runs, scenario, "rmq")
        b = scenario_medians(runs, scenario, "apache")
        rows.append(
            [
                scenario,
                _fmt(ratio(a["msgs_per_s"], b["msgs_per_s"])),
                _fmt(ratio(a["cpu_per_100k"], b["cpu_per_100k"])),
                _fmt(ratio(a["p99"], b["p99"])),
                _fmt(ratio(a["p99.9"], b["p99.9"])),
                _fmt(ratio(a["peak_rss_mib"], b["peak_rss_mib"])),
                _fmt(ratio(a["anon_rss_mib"], b["anon_rss_mib"])),
            ]
        )
    s_rmq = [s for s in startups if s.system == "rmq"]
    s_apache = [s for s in startups if s.system == "apache"]
    if s_rmq and s_apache:
        rows.append(
            [
                "start to first send; idle RSS",
                _fmt(
                    ratio(median(s.startup_s for s in s_rmq), median(s.startup_s for s in s_apache))
                ),
                "",
                "",
                "",
                _fmt(
                    ratio(
                        median(s.idle_rss_mib for s in s_rmq),
                        median(s.idle_rss_mib for s in s_apache),
                    )
                ),
                "",
            ]
        )
    return rows


RATIO_HEADER = ["scenario", "msg/s", "CPU/msg", "p99", "p99.9", "peak RSS", "anon RSS"]
DETAIL_HEADER = [
    "scenario",
    "system",
    "runs",
    "msg/s",
    "MiB/s",
    "CPU s / 100 k",
    "client CPU s / 100 k",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "peak RSS MiB",
    "anon RSS MiB",
    "failures",
]


def detail_rows(runs: Sequence[Run], startups: Sequence[Startup]) -> list[list[str]]:
    rows = []
    for scenario in dict.fromkeys(r.scenario for r in runs):
        for system in SYSTEMS:
            m = scenario_medians(runs, scenario, system)
            rows.append(
                [
                    scenario,
                    system,
                    str(int(m["runs"])),
                    _fmt(m["msgs_per_s"], 0),
                    _fmt(m["mib_per_s"], 1),
                    _fmt(m["cpu_per_100k"]),
                    _fmt(m["client_cpu_per_100k"]),
                    _fmt(m["p50"], 3),
                    _fmt(m["p99"], 3),
                    _fmt(m["p99.9"], 3),
                    _fmt(m["max"], 1),
                    _fmt(m["peak_rss_mib"], 0),
                    _fmt(m["anon_rss_mib"], 0),
                    str(int(m["failures"])),
                ]
            )
    for system in SYSTEMS:
        mine = [s for s in startups if s.system == system]
        if mine:
            rows.append(
                [
                    "start to first send (s); idle RSS",
                    system,
                    str(len(mine)),
                    _fmt(median(s.startup_s for s in mine), 2) + " s",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    _fmt(median(s.idle_rss_mib for s in mine), 0),
                    "",
                    "",
                ]
            )
    return rows


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    align = ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return "\n".join(fmt.format(*row) for row in [list(header), *rows])


def failure_lines(runs: Sequence[Run]) -> list[str]:
    lines = []
    for r in runs:
        for reason, n in sorted(r.failure_reasons.items()):
            lines.append(f"- {r.scenario}, {r.system}, round {r.round}: {n} x `{reason}`")
    return lines


def load_lines(runs: Sequence[Run]) -> list[str]:
    return [
        f"- {r.scenario}, {r.system}, round {r.round}: "
        + " ".join(f"{x:.2f}" for x in r.load)
        + f" ({r.msgs_per_s:,.0f} msg/s, {r.cpu_per_100k:.2f} CPU s / 100 k)"
        for r in runs
    ]
