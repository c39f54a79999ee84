"""``format("rmq")`` without a registration call.

Spark 4 imports every installed module whose name starts with ``pyspark_`` when a query first
uses a Python data source, and registers its ``DefaultSource``. This module is that hook for
rmq's data source (``rmq.spark``); it needs the ``spark`` extra, like ``rmq.spark`` itself.
"""

from rmq.spark.datasource import RmqDataSource as DefaultSource

__all__ = ["DefaultSource"]
