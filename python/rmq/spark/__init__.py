"""rmq as a Spark source and sink: the PySpark 4 Python data source ``format("rmq")``.

Spark runs its Python workers with ``spark.pyspark.python`` / ``PYSPARK_PYTHON``, by default the
``python3`` on PATH, which may not have rmq (a venv that is not activated). So importing this
package before the session starts sets ``PYSPARK_PYTHON`` to this interpreter when the user
has chosen none, and :func:`session` builds a session that way::

    import rmq.spark

    spark = rmq.spark.session()          # or SparkSession.builder...getOrCreate() after the import
    df = (spark.read.format("rmq").option("namesrv", "127.0.0.1:9876")
          .option("topic", "events").load())

Spark registers ``format("rmq")`` by itself (the ``pyspark_rmq`` module's ``DefaultSource``);
:func:`register` registers it only where that did not happen, and fails naming the fix when
the session's Python workers cannot import rmq. ``python -m rmq.spark.submit job.py`` is
``spark-submit`` with the driver and workers on this interpreter.

It needs the ``spark`` extra (``pip install rmq[spark]``: pyspark 4.2+ and pyarrow). The ``rmq``
package itself never imports pyspark; only this subpackage does.

Layout: :mod:`rmq.spark.options` (option parsing, no pyspark), :mod:`rmq.spark.offsets` (queues,
offset JSON, ranges, no pyspark), :mod:`rmq.spark.reader` (batch and stream readers),
:mod:`rmq.spark.writer` (batch and stream writers), :mod:`rmq.spark.datasource` (the
``DataSource`` class), :mod:`rmq.spark.submit` (``spark-submit`` on this interpreter).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

try:
    import pyarrow  # type: ignore[import-untyped] # noqa: F401
    import pyspark
    from pyspark import SparkContext
    from pyspark.sql import SparkSession
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("rmq.spark needs pyspark 4.2+ and pyarrow: pip install 'rmq[spark]'") from exc

from rmq.errors import ConfigError
from rmq.spark.datasource import RmqDataSource
from rmq.spark.offsets import DataLossError, behind_latest

__all__ = [
    "DataLossError",
    "RmqDataSource",
    "offsets_behind_latest",
    "register",
    "session",
    "worker_python",
]

if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 2):  # pragma: no cover
    raise ImportError(
        f"rmq.spark needs pyspark 4.2 or newer (found {pyspark.__version__}): "
        "pip install 'rmq[spark]'"
    )

PYTHON_CONF = "spark.pyspark.python"


def _pin_python() -> None:
    """Before any SparkContext: workers run this interpreter unless the user chose one."""
    if SparkContext._active_spark_context is None and not os.environ.get("PYSPARK_PYTHON"):
        os.environ["PYSPARK_PYTHON"] = sys.executable


def worker_python(spark: Any) -> str:
    """The interpreter ``spark``'s Python workers run (its ``spark.pyspark.python``, else
    ``PYSPARK_PYTHON`` as the session started with it, else ``python3``)."""
    conf = spark.sparkContext.getConf().get(PYTHON_CONF)
    return str(conf or spark.sparkContext.pythonExec or "python3")


def _check_workers(spark: Any) -> None:
    """In local mode (workers on this host), fail naming the fix when the workers' interpreter
    cannot import rmq. On a cluster the executors' interpreter is not here to ask."""
    master = str(spark.sparkContext.getConf().get("spark.master") or "local")
    exe = worker_python(spark)
    if not master.startswith("local") or os.path.realpath(exe) == os.path.realpath(sys.executable):
        return
    probe = "import importlib.util as u, sys; sys.exit(u.find_spec('pyspark_rmq') is None)"
    try:
        ok = subprocess.run([exe, "-c", probe], capture_output=True, timeout=60).returncode == 0
    except OSError:
        ok = False
    if not ok:
        raise ConfigError(
            f"Spark's Python workers run {exe!r}, which cannot import rmq, so format('rmq') "
            f"cannot work in this session. Start the session with "
            f".config('{PYTHON_CONF}', {sys.executable!r}) (or rmq.spark.session(), or import "
            f"rmq.spark before the session starts, or set PYSPARK_PYTHON={sys.executable}); "
            "with spark-submit, use python -m rmq.spark.submit or pass "
            f"--conf {PYTHON_CONF}={sys.executable}"
        )


def register(spark: Any | None = None) -> None:
    """Make ``format("rmq")`` usable in ``spark`` (default: the active session): check that
    its Python workers can import rmq, and register the source unless Spark's own lookup of
    ``pyspark_*`` modules already did (registering twice makes Spark warn that the source
    "replaced a statically registered data source")."""
    active = spark if spark is not None else SparkSession.getActiveSession()
    if active is None:
        raise RuntimeError("no active SparkSession: create one, then call rmq.spark.register()")
    _check_workers(active)
    manager = active._jsparkSession.sessionState().dataSourceManager()
    if not manager.dataSourceExists(RmqDataSource.name()):
        active.dataSource.register(RmqDataSource)


def session(conf: Mapping[str, str] | None = None, builder: Any | None = None) -> Any:
    """``builder.getOrCreate()`` (default ``SparkSession.builder``) with the settings ``conf``,
    its Python workers on this interpreter unless ``spark.pyspark.python`` or
    ``PYSPARK_PYTHON`` says otherwise, and ``format("rmq")`` registered."""
    b = builder if builder is not None else SparkSession.builder
    for key, value in (conf or {}).items():
        b = b.config(key, value)
    chosen = PYTHON_CONF in getattr(b, "_options", {}) or os.environ.get("PYSPARK_PYTHON")
    if not chosen:
        b = b.config(PYTHON_CONF, sys.executable)
    spark = b.getOrCreate()
    register(spark)
    return spark


def offsets_behind_latest(query: Any) -> dict[str, str]:
    """Kafka's ``min``/``avg``/``maxOffsetsBehindLatest`` for the last micro-batch of the
    streaming ``query`` reading rmq (or for one progress of its ``recentProgress``), from its
    progress: each rmq source's ``endOffset`` and the ``latestOffset`` it reported. Spark's
    Python data source API has no hook for a source's own metrics, so they are computed from
    the progress rather than listed in it."""
    import json

    progress = query if isinstance(query, Mapping) else query.lastProgress
    for src in (progress or {}).get("sources", []):
        end, latest = src.get("endOffset"), src.get("latestOffset")
        if not end or not latest:
            continue
        try:
            return behind_latest(
                json.loads(end) if isinstance(end, str) else end,
                json.loads(latest) if isinstance(latest, str) else latest,
            )
        except (ConfigError, ValueError):
            continue  # not an rmq source
    return {}


_pin_python()
if SparkSession.getActiveSession() is not None:
    register()
