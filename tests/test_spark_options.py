"""The Spark source's option parsing and offset arithmetic (rmq.spark.options, rmq.spark.offsets):
pure functions, no Spark and no broker. The end-to-end behaviour is in test_spark.py."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from rmq.client.transaction import LocalTransactionState
from rmq.errors import ConfigError
from rmq.spark.offsets import (
    DataLossError,
    OffsetRange,
    QueueKey,
    check_data_loss,
    from_json,
    rate_limit,
    split_ranges,
    to_json,
)
from rmq.spark.options import parse_offset_spec, parse_read_options, parse_write_options
from rmq.spark.transactions import (
    RECORDS_KEPT,
    SinkCommitLog,
    decide,
    local_checkpoint_dir,
    transaction_group,
)

NS = {"namesrv": "127.0.0.1:9876"}
QA0, QA1, QB0 = QueueKey("t", "a", 0), QueueKey("t", "a", 1), QueueKey("t", "b", 0)


def test_read_defaults_follow_the_kafka_source() -> None:
    batch = parse_read_options({**NS, "topic": "t"}, streaming=False)
    stream = parse_read_options({**NS, "TOPIC": "t"}, streaming=True)  # case-insensitive
    assert (batch.starting_offsets, batch.ending_offsets) == ("earliest", "latest")
    assert stream.starting_offsets == "latest"
    assert batch.fail_on_data_loss and batch.pull_batch_size == 1024
    assert parse_read_options({**NS, "topic": "a, b"}, streaming=False).topics == ("a", "b")


def test_offset_json() -> None:
    spec = parse_offset_spec('{"t": {"a": {"0": 5, "1": -2}, "b": {"0": -1}}}', "startingOffsets")
    assert spec == {"t": {"a": {0: 5, 1: -2}, "b": {0: -1}}}
    assert parse_offset_spec(" Latest ", "x") == "latest"
    with pytest.raises(ConfigError, match="-2 \\(earliest\\) is not allowed"):
        parse_offset_spec('{"t": {"a": {"0": -2}}}', "endingOffsets", allow_earliest=False)
    with pytest.raises(ConfigError, match="offset -3 of t/a/0 must be an integer >= 0"):
        parse_offset_spec('{"t": {"a": {"0": -3}}}', "startingOffsets")
    with pytest.raises(ConfigError, match="queue id 'x' of t/a is not an integer"):
        parse_offset_spec('{"t": {"a": {"x": 1}}}', "startingOffsets")


@pytest.mark.parametrize(
    ("options", "streaming", "match"),
    [
        ({"topic": "t", "endingOffsets": "latest"}, True, "'endingOffsets' is for batch"),
        ({"topic": "t", "maxOffsetsPerTrigger": "0"}, True, "must be an integer >= 1, not 0"),
        ({"topic": "t,t"}, False, "names a topic twice"),
        ({"topic": "t", "startingTimestamp": "yesterday"}, False, "'startingTimestamp' must be"),
    ],
)
def test_bad_read_options(options: dict[str, str], streaming: bool, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_read_options({**NS, **options}, streaming=streaming)


def test_write_options() -> None:
    w = parse_write_options({**NS, "topic": "t", "batchSize": "100"}, streaming=False)
    assert (w.topic, w.batch_size, w.delivery_guarantee) == ("t", 100, "at-least-once")
    with pytest.raises(ConfigError, match="'deliveryGuarantee' must be"):
        parse_write_options({**NS, "deliveryGuarantee": "maybe"}, streaming=True)
    with pytest.raises(ConfigError, match=r"is for df\.writeStream"):
        parse_write_options({**NS, "deliveryGuarantee": "exactly-once"}, streaming=False)
    with pytest.raises(ConfigError, match="needs option 'namesrv'"):
        parse_write_options({"topic": "t"}, streaming=False)
    with pytest.raises(ConfigError, match="set option 'checkpointLocation'"):
        parse_write_options({**NS, "deliveryGuarantee": "exactly-once"}, streaming=True)
    exactly = {**NS, "deliveryGuarantee": "exactly-once", "checkpointLocation": "file:///tmp/c"}
    w = parse_write_options(exactly, streaming=True)
    assert (w.delivery_guarantee, w.checkpoint_location) == ("exactly-once", "file:///tmp/c")
    assert str(local_checkpoint_dir(w.checkpoint_location)) == "/tmp/c"
    with pytest.raises(ConfigError, match="not a local path"):
        local_checkpoint_dir("s3a://bucket/checkpoint")


def test_json_round_trip_is_the_documented_format() -> None:
    offsets = {QA0: 3, QA1: 4, QB0: 0}
    doc = to_json(offsets)
    assert doc == {"t": {"a": {"0": 3, "1": 4}, "b": {"0": 0}}}
    assert from_json(doc) == offsets
    with pytest.raises(ConfigError, match="not an rmq offset"):
        from_json({"t": [1, 2]})


def test_data_loss() -> None:
    assert check_data_loss(QA0, 10, 5, True, "read") == 10
    assert check_data_loss(QA0, 2, 5, False, "read") == 5
    with pytest.raises(DataLossError, match=r"offsets \[2, 5\) of queue t/a/0 .* 3 message"):
        check_data_loss(QA0, 2, 5, True, "read")


def test_min_partitions_splits_big_queues() -> None:
    ranges = [OffsetRange(QA0, 0, 100), OffsetRange(QA1, 0, 10), OffsetRange(QB0, 5, 5)]
    assert split_ranges(ranges, None) == ranges[:2]  # empty ranges dropped
    parts = split_ranges(ranges, 6)
    assert len(parts) >= 6
    for q in (QA0, QA1):  # contiguous, covering exactly the original range
        mine = sorted(p for p in parts if p.queue == q)
        assert mine[0].start == 0 and all(a.end == b.start for a, b in pairwise(mine))
    assert sum(p.size for p in parts) == 110


def test_rate_limit_shares_by_backlog() -> None:
    start = {QA0: 0, QA1: 0, QB0: 50}
    latest = {QA0: 300, QA1: 100, QB0: 50}
    assert rate_limit(start, latest, 1000) == latest  # under the limit: everything
    end = rate_limit(start, latest, 100)
    assert sum(end[q] - start[q] for q in latest) == 100
    assert end == {QA0: 75, QA1: 25, QB0: 50}
    end = rate_limit(start, {QA0: 2, QA1: 2, QB0: 50}, 3)  # rounding still moves on
    assert sum(end[q] - start[q] for q in latest) == 3


def test_sink_commit_records_decide_the_checks(tmp_path: Path) -> None:
    """Exactly-once: a half of a committed batch is committed when its task attempt was
    accepted, rolled back when not; a half of a batch not committed stays open."""
    log = SinkCommitLog(tmp_path)
    assert log.committed(0) is None
    assert decide(log, {"RMQ_SPARK_BATCH": "0", "RMQ_SPARK_TASK": "a"}) is (
        LocalTransactionState.UNKNOW
    )
    log.record(0, ["a", "b"], rows=10)
    assert log.committed(0) == {"a", "b"}
    half = {"RMQ_SPARK_BATCH": "0", "RMQ_SPARK_TASK": "a"}
    assert decide(log, half) is LocalTransactionState.COMMIT_MESSAGE
    half["RMQ_SPARK_TASK"] = "failed-attempt"
    assert decide(log, half) is LocalTransactionState.ROLLBACK_MESSAGE
    assert decide(log, {"UNIQ_KEY": "x"}) is None
    assert [p.name for p in (tmp_path / "rmq-sink-commits").iterdir()] == ["0"]  # no temp left
    log.record(RECORDS_KEPT, ["c"], rows=1)  # old records are pruned
    assert log.committed(0) is None and log.committed(RECORDS_KEPT) == {"c"}
    group = transaction_group("writer", tmp_path)
    assert group == transaction_group("writer", tmp_path) != transaction_group("writer", Path("/x"))
    assert group.startswith("writer_TX_")
