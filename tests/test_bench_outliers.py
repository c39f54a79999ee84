"""benches/vs_apache/outliers.py's own arithmetic: the ``perf sched timehist`` lines it reads
and the broker put-time buckets it prints. It runs no broker and times nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parent.parent / "benches" / "vs_apache"

TIMEHIST = """\
           time    cpu  task name                       wait time  sch delay   run time
                        [tid/pid]                          (msec)     (msec)     (msec)
--------------- ------  ------------------------------  ---------  ---------  ---------
   78985.263404 [0000]  rmq-io[101/100]                     0.000      0.500      0.010
   78985.263457 [0000]  rmq-io[102/100]                     1.000     12.250      0.053
   78985.263521 [0001]  send-3[201/200]                     0.000      2.000      0.100
   78985.263550 [0000]  java[200]                           0.000      0.000      0.092
   78985.263571 [0000]  kworker/0:1H-kb[44]                 0.000     40.000      0.021
   78985.263600 [0001]  <idle>                              0.000      0.000      0.030
"""


def _outliers() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("vs_apache_outliers", BENCH / "outliers.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_delays_are_grouped_by_process_and_counted_over_thresholds() -> None:
    o = _outliers()
    d = o.parse_timehist(TIMEHIST, {"broker": {100}, "generator": {200}})
    assert (d["broker"].wakeups, d["broker"].over_1ms, d["broker"].over_10ms) == (2, 1, 1)
    assert d["broker"].max_ms == 12.25
    assert (d["generator"].wakeups, d["generator"].over_1ms, d["generator"].max_ms) == (2, 1, 2.0)
    assert d["other"].max_ms == 40.0 and d["other"].wakeups == 1  # <idle> has no tid
    assert d["broker"].cell() == "12.2 ms (1 > 10 ms, 1 > 1 ms)"


def test_put_time_buckets_keep_only_the_filled_ones() -> None:
    o = _outliers()
    dist = "[<=0ms]:220211 [0~10ms]:4 [10~50ms]:27 [50~100ms]:0 [10s~]:0"
    assert o.nonzero_buckets(dist) == "[<=0ms]:220211 [0~10ms]:4 [10~50ms]:27"
    assert o.nonzero_buckets("null") == "—"
    assert o.nonzero_buckets("") == "—"
