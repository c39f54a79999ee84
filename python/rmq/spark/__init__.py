"""rmq as a Spark source and sink: the PySpark 4 Python data source ``format("rmq")``.

Importing this package registers the source with the active SparkSession, if there is one;
:func:`register` registers it with any session::

    from pyspark.sql import SparkSession
    import rmq.spark

    spark = SparkSession.builder.getOrCreate()
    rmq.spark.register(spark)   # not needed when the session existed before the import
    df = (spark.read.format("rmq").option("namesrv", "127.0.0.1:9876")
          .option("topic", "events").load())

It needs the ``spark`` extra (``pip install rmq[spark]``: pyspark 4.2+ and pyarrow). The ``rmq``
package itself never imports pyspark; only this subpackage does.

Layout: :mod:`rmq.spark.options` (option parsing, no pyspark), :mod:`rmq.spark.offsets` (queues,
offset JSON, ranges, no pyspark), :mod:`rmq.spark.reader` (batch and stream readers),
:mod:`rmq.spark.writer` (batch and stream writers), :mod:`rmq.spark.datasource` (the
``DataSource`` class).
"""

from __future__ import annotations

from typing import Any

try:
    import pyarrow  # type: ignore[import-untyped] # noqa: F401
    import pyspark
    from pyspark.sql import SparkSession
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("rmq.spark needs pyspark 4.2+ and pyarrow: pip install 'rmq[spark]'") from exc

from rmq.spark.datasource import RmqDataSource
from rmq.spark.offsets import DataLossError

__all__ = ["DataLossError", "RmqDataSource", "register"]

if tuple(int(p) for p in pyspark.__version__.split(".")[:2]) < (4, 2):  # pragma: no cover
    raise ImportError(
        f"rmq.spark needs pyspark 4.2 or newer (found {pyspark.__version__}): "
        "pip install 'rmq[spark]'"
    )


def register(spark: Any | None = None) -> None:
    """Register ``format("rmq")`` with ``spark`` (default: the active session)."""
    session = spark if spark is not None else SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("no active SparkSession: create one, then call rmq.spark.register()")
    session.dataSource.register(RmqDataSource)


if SparkSession.getActiveSession() is not None:
    register()
