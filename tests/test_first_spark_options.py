"""Options of the Spark source and sink at parity with Spark's Kafka connector (issue 17 item
5), parsed without Spark or a broker: ``subscribePattern``/``assign``, the timestamp options,
``minOffsetsPerTrigger``/``maxTriggerDelay``, ``fetchOffset.*`` retries, and the README's
option table checked against the options the code accepts. End to end: test_first_spark.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rmq.errors import ConfigError, RemotingConnectError, TopicNotExistError
from rmq.spark.offsets import Retry
from rmq.spark.options import (
    READ_OPTIONS,
    WRITE_OPTIONS,
    parse_duration_ms,
    parse_read_options,
)

NS = {"namesrv": "127.0.0.1:9876"}
README = Path(__file__).resolve().parent.parent / "README.md"


def spark_option_table() -> list[str]:
    """The option names in the first column of the README's Spark option table."""
    text = README.read_text()
    section = text[text.index("\n## Spark\n") :]
    section = section[: section.index("\n## ", 5)]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows, "the README's Spark section has no option table"
    names: list[str] = []
    for row in rows:
        names.extend(re.findall(r"`([^`]+)`", row.split("|")[1]))
    return names


def test_readme_option_table_lists_exactly_the_options_the_code_accepts() -> None:
    names = spark_option_table()
    assert len(names) == len(set(names)), f"options listed twice: {names}"
    assert set(names) == READ_OPTIONS | WRITE_OPTIONS, (
        f"in the README but not the code: {sorted(set(names) - READ_OPTIONS - WRITE_OPTIONS)}; "
        f"in the code but not the README: {sorted(READ_OPTIONS | WRITE_OPTIONS - set(names))}"
    )


def test_every_listed_read_option_is_accepted_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each option the code declares is one the parser knows (no 'unknown option' warning)."""
    parse_read_options(
        {**NS, "topic": "t", **{o: "1" for o in ("fetchOffset.numRetries", "minPartitions")}},
        streaming=False,
    )
    assert "unknown option" not in caplog.text


def test_exactly_one_of_topic_subscribe_pattern_assign() -> None:
    with pytest.raises(
        ConfigError, match=r"needs option 'topic'.*exactly one of them; given: none"
    ):
        parse_read_options(NS, streaming=False)
    with pytest.raises(ConfigError, match="given: topic, subscribePattern"):
        parse_read_options({**NS, "topic": "t", "subscribePattern": "t.*"}, streaming=False)
    o = parse_read_options({**NS, "subscribePattern": "events-.*"}, streaming=True)
    assert (o.pattern, o.topics, o.assign) == ("events-.*", (), None)
    with pytest.raises(ConfigError, match="'subscribePattern' is not a regex"):
        parse_read_options({**NS, "subscribePattern": "a(b"}, streaming=True)


def test_assign_json() -> None:
    o = parse_read_options({**NS, "assign": '{"a": {"b1": [1, 0, 1]}, "c": [2]}'}, streaming=False)
    assert o.assign == {"a": {"b1": (0, 1)}, "c": (2,)}
    assert o.topics == ("a", "c")
    for bad, match in [
        ("[1]", "must be JSON like"),
        ('{"a": []}', "a must be a non-empty list"),
        ('{"a": {"b": [-1]}}', "not an integer >= 0"),
    ]:
        with pytest.raises(ConfigError, match=match):
            parse_read_options({**NS, "assign": bad}, streaming=False)
    with pytest.raises(ConfigError, match=r"names topic\(s\) \['x'\] not in option 'assign'"):
        parse_read_options(
            {**NS, "assign": '{"a": [0]}', "startingOffsets": '{"x": {"b": {"0": 1}}}'},
            streaming=False,
        )


def test_timestamp_options() -> None:
    o = parse_read_options(
        {
            **NS,
            "topic": "t",
            "startingOffsetsByTimestamp": '{"t": {"a": {"0": 1000}}}',
            "endingOffsetsByTimestamp": '{"t": {"a": {"0": 2000}}}',
            "endingTimestamp": "3000",
            "startingOffsetsByTimestampStrategy": "LATEST",
        },
        streaming=False,
    )
    assert o.starting_by_timestamp == {"t": {"a": {0: 1000}}}
    assert o.ending_by_timestamp == {"t": {"a": {0: 2000}}}
    assert (o.ending_timestamp, o.timestamp_strategy) == (3000, "latest")
    assert parse_read_options({**NS, "topic": "t"}, streaming=True).timestamp_strategy == "error"
    for opts, match in [
        ({"endingTimestamp": "1"}, "'endingTimestamp' is for batch reads"),
        ({"endingOffsetsByTimestamp": "{}"}, "'endingOffsetsByTimestamp' is for batch"),
        ({"startingOffsetsByTimestamp": "latest"}, "ms since the epoch per queue"),
        ({"startingOffsetsByTimestamp": '{"t": {"a": {"0": -1}}}'}, "must be ms since"),
        ({"startingOffsetsByTimestampStrategy": "earliest"}, "must be 'error' or 'latest'"),
    ]:
        with pytest.raises(ConfigError, match=match):
            parse_read_options({**NS, "topic": "t", **opts}, streaming=True)


def test_sub_expression() -> None:
    assert parse_read_options({**NS, "topic": "t"}, streaming=False).sub_expression == "*"
    o = parse_read_options({**NS, "topic": "t", "subExpression": " a || b "}, streaming=True)
    assert o.sub_expression == "a || b"


def test_trigger_options() -> None:
    o = parse_read_options(
        {**NS, "topic": "t", "minOffsetsPerTrigger": "10", "maxTriggerDelay": "30s"},
        streaming=True,
    )
    assert (o.min_offsets_per_trigger, o.max_trigger_delay_ms) == (10, 30_000)
    assert parse_read_options({**NS, "topic": "t"}, streaming=True).max_trigger_delay_ms == 900_000
    assert [parse_duration_ms(v, "x") for v in ("250", "250ms", "2m", "1h")] == [
        250,
        250,
        120_000,
        3_600_000,
    ]
    for opts, streaming, match in [
        ({"minOffsetsPerTrigger": "5"}, False, "'minOffsetsPerTrigger' is for streaming"),
        ({"maxTriggerDelay": "5s"}, False, "'maxTriggerDelay' is for streaming"),
        ({"maxTriggerDelay": "soon"}, True, "must be a duration like '15m'"),
        (
            {"minOffsetsPerTrigger": "5", "maxOffsetsPerTrigger": "4"},
            True,
            r"'minOffsetsPerTrigger' \(5\) is larger than 'maxOffsetsPerTrigger' \(4\)",
        ),
    ]:
        with pytest.raises(ConfigError, match=match):
            parse_read_options({**NS, "topic": "t", **opts}, streaming=streaming)


def test_fetch_offset_retries() -> None:
    o = parse_read_options(
        {**NS, "topic": "t", "fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "1"},
        streaming=False,
    )
    assert Retry.of(o) == Retry(2, 1)
    assert Retry.of(parse_read_options({**NS, "topic": "t"}, streaming=False)) == Retry(3, 10)

    calls: list[int] = []

    def flaky(fails: int) -> str:
        calls.append(1)
        if len(calls) <= fails:
            raise RemotingConnectError("connect to 127.0.0.1:1 failed")
        return "ok"

    assert Retry(2, 1)(flaky, 2) == "ok" and len(calls) == 3
    calls.clear()
    with pytest.raises(RemotingConnectError):
        Retry(1, 1)(flaky, 2)
    assert len(calls) == 2

    def missing() -> None:
        calls.append(1)
        raise TopicNotExistError("no route")

    calls.clear()
    with pytest.raises(TopicNotExistError):
        Retry(5, 1)(missing)
    assert len(calls) == 1, "a topic that does not exist is not retried"
