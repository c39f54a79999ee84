"""The Spark reader's pulls (``ClientInstance.pull_columns`` and ``read_range``) against a broker
whose caps cut every pull short: ``maxTransferCountOnMessageInMemory = 7`` and a byte cap that
holds only a few of the messages, whose bodies vary in size. The reader asks 1 024 a pull and
must still return exactly the rows of its range, each once, in order: across pull boundaries,
across the windows it sends ahead (their stride learned from the first answer), across the
Arrow batches of ``read_range``, with ranges that end in the middle of a pull, and under a tag
filter. No Spark session: these run the executor's code in the test process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pyspark", minversion="4.2")
pytest.importorskip("pyarrow")

from pyspark.sql.pandas.types import to_arrow_schema

import rmq
from helpers import TEST_STORE_CONF, BrokerProcess, create_topic, free_port
from rmq._rmq import ClientInstance
from rmq.client.message_queue import MessageQueue
from rmq.spark import reader
from rmq.spark.offsets import OffsetRange, QueueKey
from rmq.spark.options import parse_read_options

TOPIC = "ReadRange"
COUNT = 700


def body(i: int) -> bytes:
    """Bodies of 40 to 540 bytes, so that the byte cap cuts pulls at varying counts."""
    return f"m{i}-".encode().ljust(40 + (i * 37) % 500, b"z")


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, MessageQueue]]:
    """A broker granting at most 7 messages and 2 000 bytes a pull, and a one-queue topic
    holding messages 0..COUNT-1 (tags ``even``/``odd``); yields the nameserver and the queue."""
    from conftest import start_namesrv

    tmp = tmp_path_factory.mktemp("read-range")
    with start_namesrv() as (_, ns):
        port = free_port()
        conf = tmp / "broker.conf"
        conf.write_text(
            "brokerClusterName = ReadRangeCluster\nbrokerName = broker-a\n"
            f"brokerIP1 = 127.0.0.1\nlistenPort = {port}\nstorePathRootDir = {tmp / 'store'}\n"
            "mappedFileSizeCommitLog = 4194304\nregisterNameServerPeriod = 2000\n"
            "maxTransferCountOnMessageInMemory = 7\nmaxTransferBytesOnMessageInMemory = 2000\n"
            + TEST_STORE_CONF
        )
        broker = BrokerProcess("-c", str(conf), "-n", ns, cwd=Path(tmp))
        try:
            broker.wait_for("listening on")
            create_topic(ns, [f"127.0.0.1:{port}"], TOPIC, 1)
            client = ClientInstance(ns)
            (mq,) = client.fetch_subscribe_queues(TOPIC)
            client.shutdown()
            with rmq.Producer("pg-read-range", ns) as producer:
                for lo in range(0, COUNT, 50):
                    producer.send_batch(
                        [
                            rmq.Message(
                                TOPIC, body(i), tags="even" if i % 2 == 0 else "odd", keys=str(i)
                            )
                            for i in range(lo, lo + 50)
                        ],
                        queue=mq,
                    )
            yield ns, mq
        finally:
            broker.kill()


def pull(
    ns: str,
    mq: MessageQueue,
    start: int,
    end: int,
    max_rows: int,
    expression: str = "*",
    skip: list[str] | None = None,
) -> list[tuple[int, bytes, str]]:
    """Call ``pull_columns`` until ``end`` as the reader does; (offset, body, key) per row.
    ``skip`` as the reader's (records read in place) by default."""
    client = ClientInstance(ns)
    rows: list[tuple[int, bytes, str]] = []
    try:
        offset = start
        while offset < end:
            c = client.pull_columns(
                "g-read-range",
                mq,
                offset,
                end,
                max_rows,
                batch=1024,
                depth=4,
                expression=expression,
                skip_properties=reader._SKIPPED_PROPERTIES_LIST if skip is None else skip,
            )
            assert c.status == "FOUND", c.status
            assert c.num_rows <= max_rows or expression != "*"
            offsets = memoryview(c.queue_offsets).cast("q").tolist()
            ends = memoryview(c.body_offsets).cast("i").tolist()
            key_ends = memoryview(c.keys_offsets).cast("i").tolist()
            for k, off in enumerate(offsets):
                key = c.keys_data[key_ends[k] : key_ends[k + 1]].decode()
                rows.append((off, c.body_data[ends[k] : ends[k + 1]], key))
            assert c.next_offset > offset
            offset = c.next_offset
        assert offset == end
    finally:
        client.shutdown()
    return rows


@pytest.mark.parametrize(
    ("start", "end", "max_rows"),
    [(0, COUNT, 8192), (0, COUNT, 10), (3, 652, 64), (5, 6, 8192), (13, 99, 7)],
)
def test_pulls_cut_short_by_the_broker_return_each_row_once(
    capped: tuple[str, MessageQueue], start: int, end: int, max_rows: int
) -> None:
    ns, mq = capped
    rows = pull(ns, mq, start, end, max_rows)
    assert [r[0] for r in rows] == list(range(start, end))
    assert all(b == body(i) and k == str(i) for i, b, k in rows)


@pytest.mark.parametrize("skip", [None, []])
def test_a_tag_filter_returns_exactly_the_matching_rows(
    capped: tuple[str, MessageQueue], skip: list[str] | None
) -> None:
    ns, mq = capped
    rows = pull(ns, mq, 1, 601, 64, expression="odd", skip=skip)
    assert [r[0] for r in rows] == list(range(1, 601, 2))
    assert all(b == body(i) for i, b, _ in rows)


def test_records_read_in_place_give_the_rows_decoded_messages_give(
    capped: tuple[str, MessageQueue],
) -> None:
    """With MIN_OFFSET and MAX_OFFSET skipped (the reader's list) records are read in place;
    without, each goes through the client's decoding: every column is the same but those two
    properties."""
    ns, mq = capped
    client = ClientInstance(ns)
    try:
        skipped = [p for p in reader._SKIPPED_PROPERTIES_LIST if "OFFSET" not in p]
        fast, slow = (
            client.pull_columns("g-read-range", mq, 0, COUNT, COUNT, batch=1024, skip_properties=s)
            for s in (reader._SKIPPED_PROPERTIES_LIST, skipped)
        )
    finally:
        client.shutdown()
    assert fast.num_rows == slow.num_rows == COUNT
    schema = to_arrow_schema(reader.SCHEMA, timezone="UTC")
    queue = QueueKey(TOPIC, "broker-a", mq.queue_id)
    got, want = (reader._record_batch(c, queue, schema).to_pylist() for c in (fast, slow))
    offsets = {rmq._rmq.PROPERTY_MIN_OFFSET, rmq._rmq.PROPERTY_MAX_OFFSET}
    assert all(offsets <= {k for k, _ in row["properties"]} for row in want)
    for row in want:
        row["properties"] = [(k, v) for k, v in row["properties"] if k not in offsets]
    assert got == want
    assert [r["keys"] for r in got] == [str(i) for i in range(COUNT)]
    assert len({r["msg_id"] for r in got}) == COUNT


@pytest.mark.parametrize("pull_batch_size", ["1024", "32", "3"])
def test_read_range_yields_the_range_across_arrow_batches(
    capped: tuple[str, MessageQueue], monkeypatch: pytest.MonkeyPatch, pull_batch_size: str
) -> None:
    ns, mq = capped
    monkeypatch.setattr(reader, "ROWS_PER_ARROW_BATCH", 100)  # several batches per range
    opts = parse_read_options(
        {"namesrv": ns, "topic": TOPIC, "pullBatchSize": pull_batch_size}, streaming=False
    )
    rng = OffsetRange(QueueKey(TOPIC, "broker-a", mq.queue_id), 2, 655)
    batches = list(reader.read_range(opts, rng, "read"))
    assert len(batches) > 6
    offsets = [o for b in batches for o in b.column("queue_offset").to_pylist()]
    assert offsets == list(range(2, 655))
    bodies = [bytes(v) for b in batches for v in b.column("body").to_pylist()]
    assert bodies == [body(i) for i in range(2, 655)]
