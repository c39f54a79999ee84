"""Load generators for rmq, after RocketMQ's benchmark ``Producer`` and ``Consumer``.

Why a tool of its own: the client SDK is what applications use, so its throughput and
latency (not only the broker's, measured in ``benches/``) need a repeatable measurement, and
an operator needs a quick way to load a broker and read back what it took. Run it as
``python -m rmq.bench producer|consumer|baseline --help``; ``--json`` gives one machine-
readable summary per run.
"""

from __future__ import annotations

from rmq.bench.consumer import ConsumerOptions, run_consumer
from rmq.bench.producer import ProducerOptions, run_producer
from rmq.bench.stats import Histogram, LatencySummary, RecorderSet

__all__ = [
    "ConsumerOptions",
    "Histogram",
    "LatencySummary",
    "ProducerOptions",
    "RecorderSet",
    "run_consumer",
    "run_producer",
]
