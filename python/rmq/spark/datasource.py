"""The ``rmq`` Python data source: the class Spark registers and asks for readers and writers.

Every factory checks its options (and, for writers, the DataFrame's schema) on the driver, so a
bad option fails the query at once with a message naming it, not later inside a task.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from rmq.errors import ConfigError
from rmq.spark.options import parse_read_options, parse_write_options
from rmq.spark.reader import SCHEMA, RmqReader, RmqStreamReader, check_read_schema
from rmq.spark.writer import RmqStreamWriter, RmqWriter, check_write_schema

__all__ = ["RmqDataSource"]


def _no_overwrite(overwrite: bool) -> None:
    if overwrite:
        raise ConfigError(
            "rmq topics are append-only: use mode('append') (df.write) or "
            "outputMode('append') (df.writeStream)"
        )


class RmqDataSource(DataSource):
    """``format("rmq")``: RocketMQ topics on rmq (or Apache RocketMQ) brokers."""

    @classmethod
    def name(cls) -> str:
        return "rmq"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> RmqReader:
        check_read_schema(schema)
        return RmqReader(parse_read_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> RmqStreamReader:
        check_read_schema(schema)
        return RmqStreamReader(parse_read_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> RmqWriter:
        _no_overwrite(overwrite)
        opts = parse_write_options(self.options, streaming=False)
        check_write_schema(schema, opts)
        return RmqWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> RmqStreamWriter:
        _no_overwrite(overwrite)
        opts = parse_write_options(self.options, streaming=True)
        check_write_schema(schema, opts)
        return RmqStreamWriter(opts)
