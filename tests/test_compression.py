"""Compressed bodies end to end against a real nameserver and broker: rmq's producer with
``compress_type`` ZLIB, LZ4 and ZSTD (RocketMQ 5's sysFlag bits 8..10), read back equal by a
push consumer and a pull consumer; bodies that do not decompress (corrupt, unknown type,
a bomb) are per-message errors that never cost the other messages of the pull."""

from __future__ import annotations

import logging
import time
import zlib
from collections.abc import Iterator

import pytest

import rmq
from helpers import Cluster, Collector, pull_header, push_consumer, wait_until
from rmq._rmq import RemotingClient, decompress_body
from rmq.codes import RequestCode
from rmq.errors import ClientError, ConfigError

COMPRESSED = 0x1
TYPE_BITS = {"ZLIB": 0x000, "LZ4": 0x100, "ZSTD": 0x200}


def big_body(kind: str, i: int) -> bytes:
    """Over the 4096-byte threshold, partly compressible, different per message."""
    head = f"{kind}-{i}:".encode()
    return head + bytes((j * j + i + j // 7) % 251 for j in range(5000 + 97 * i)) + head


@pytest.fixture
def remoting() -> Iterator[RemotingClient]:
    client = RemotingClient()
    try:
        yield client
    finally:
        client.close()


def raw_pull(
    client: RemotingClient, addr: str, topic: str, queue: int, count: int
) -> list[rmq.StoredMessage]:
    """The first ``count`` messages of the queue exactly as the broker stored them (the native
    decoder, no decompression). Acked messages reach their queue a moment later (dispatch is
    asynchronous), so it pulls until all ``count`` are there."""
    deadline = time.monotonic() + 10
    while True:
        resp = client.invoke(
            addr,
            RequestCode.PULL_MESSAGE,
            pull_header("raw", topic, queue, max_nums=64),
        )
        got = rmq._rmq.decode_messages(resp.body or b"") if resp.code == 0 else []
        if len(got) >= count:
            return got
        assert time.monotonic() < deadline, f"{len(got)} of {count} stored: {resp.remark}"
        time.sleep(0.05)


def test_lz4_and_zstd_bodies_round_trip_through_push_and_pull_consumers(
    cluster: Cluster, remoting: RemotingClient
) -> None:
    cluster.create_topic("Codecs", queues=1)
    sent: dict[bytes, str] = {}
    for kind in ("ZLIB", "LZ4", "ZSTD"):
        with rmq.Producer(f"pg-{kind}", cluster.namesrv, compress_type=kind.lower()) as p:
            for i in range(6):
                body = big_body(kind, i)
                p.send(rmq.Message("Codecs", body, tags=kind))
                sent[body] = kind
            p.send(rmq.Message("Codecs", f"small {kind}".encode(), tags=kind))
            sent[f"small {kind}".encode()] = "none"
    _, addr = cluster.brokers["broker-a"]
    stored = raw_pull(remoting, addr, "Codecs", 0, len(sent))
    assert len(stored) == len(sent)
    for m in stored:
        kind = m.tags or ""
        if m.body.startswith(b"small"):
            assert m.sys_flag & 0x701 == 0
            continue
        # Stored compressed, with the type's sysFlag bits and its frame format.
        assert m.sys_flag & 0x701 == COMPRESSED | TYPE_BITS[kind], (kind, hex(m.sys_flag))
        assert len(m.body) < 5000
        magic = {"ZLIB": b"\x78", "LZ4": b"\x04\x22\x4d\x18", "ZSTD": b"\x28\xb5\x2f\xfd"}[kind]
        assert m.body.startswith(magic)
        assert decompress_body(m.sys_flag, m.body) in sent

    got = Collector()
    consumer = push_consumer(cluster.namesrv, "cg-codecs", "Codecs", got)
    try:
        wait_until(lambda: len(got.bodies()) >= len(sent), "the push consumer to get everything")
    finally:
        consumer.shutdown()
    assert sorted(got.bodies()) == sorted(sent)
    for m in got.msgs:
        assert m.body_error is None
        assert not m.sys_flag & COMPRESSED  # decompressed; the type bits stay as stored

    with rmq.PullConsumer(
        "cg-codecs-pull", cluster.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    ) as c:
        c.subscribe("Codecs")
        pulled: list[bytes] = []
        while len(pulled) < len(sent):
            batch = c.poll(3000)
            assert batch, f"poll returned nothing after {len(pulled)} messages"
            pulled.extend(m.body for m in batch)
    assert sorted(pulled) == sorted(sent)


def test_unknown_compress_type_is_a_config_error(cluster: Cluster) -> None:
    producer = rmq.Producer("pg-snappy", cluster.namesrv, compress_type="snappy")
    with pytest.raises(ConfigError, match='compress_type: unknown compression type "snappy"'):
        producer.start()


def send_raw(client: RemotingClient, addr: str, topic: str, body: bytes, sys_flag: int) -> None:
    """SEND_MESSAGE_V2 with a body and sysFlag as given (what a broken producer could send)."""
    resp = client.invoke(
        addr,
        RequestCode.SEND_MESSAGE_V2,
        {
            "a": "pg-raw",
            "b": topic,
            "c": "TBW102",
            "d": "4",
            "e": "0",
            "f": str(sys_flag),
            "g": "1700000000000",
            "h": "0",
            "i": "WAIT\x01true\x02",
            "j": "0",
            "k": "false",
            "m": "false",
        },
        body,
    )
    assert resp.code == 0, resp.remark


def test_bodies_that_do_not_decompress_are_per_message_errors(
    cluster: Cluster, remoting: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.create_topic("BadBodies", queues=1)
    _, addr = cluster.brokers["broker-a"]
    # A bomb: 8 MiB of zeros, a few hundred bytes as zstd; readers stop at 4 MiB.
    with rmq.Producer(
        "pg-bomb", cluster.namesrv, compress_type="ZSTD", max_message_size=16 << 20
    ) as p:
        p.send(rmq.Message("BadBodies", bytes(8 << 20)))
    bomb = raw_pull(remoting, addr, "BadBodies", 0, 1)[0]
    assert bomb.sys_flag & 0x701 == 0x201 and len(bomb.body) < 4096
    fine = b"fine " * 2000
    good = zlib.compress(fine)
    cases: list[tuple[bytes, int, str | None]] = [
        (bomb.body, bomb.sys_flag, "decompresses to more than 4194304 bytes"),
        (good, COMPRESSED, None),
        (b"\x04\x22\x4d\x18garbage, not LZ4 blocks", COMPRESSED | 0x100, "LZ4 body"),
        (good, COMPRESSED | 0x400, "sysFlag 0x401"),
        (good[: len(good) // 2], COMPRESSED, "ZLIB body"),
        (b"plain", 0, None),
    ]
    for body, flag, _ in cases[1:]:
        send_raw(remoting, addr, "BadBodies", body, flag)

    def check(msgs: list[rmq.StoredMessage]) -> None:
        assert [m.queue_offset for m in msgs] == list(range(len(cases)))
        for m, (body, _, error) in zip(msgs, cases, strict=True):
            if error is None:
                assert m.body_error is None
                assert m.body in (fine, b"plain")
            else:
                assert m.body_error is not None and error in m.body_error, m.body_error
                assert f"BadBodies:0 queue offset {m.queue_offset}" in m.body_error
                assert m.body == body and m.sys_flag & COMPRESSED  # left as stored

    inst = rmq._rmq.ClientInstance(cluster.namesrv)
    try:
        mq = inst.fetch_subscribe_queues("BadBodies")[0]
        wait_until(lambda: inst.max_offset(mq) == len(cases), "the raw sends to be dispatched")
        check(inst.pull("g", mq, 0, 32).messages)
    finally:
        inst.shutdown()
    got = Collector()
    with caplog.at_level(logging.WARNING, logger="rmq.client"):
        consumer = push_consumer(cluster.namesrv, "cg-bad-bodies", "BadBodies", got)
        try:
            wait_until(lambda: len(got.bodies()) >= len(cases), "the push consumer")
        finally:
            consumer.shutdown()
    check(sorted(got.msgs, key=lambda m: m.queue_offset))
    # ...and said so in the log, each message by name.
    for offset in (0, 2, 3, 4):
        assert f"cg-bad-bodies: message at BadBodies:0 queue offset {offset} " in caplog.text

    # The same codec, directly (what `rmq` the admin tool shows bodies with).
    assert decompress_body(bomb.sys_flag, bomb.body, max_size=8 << 20) == bytes(8 << 20)
    with pytest.raises(ClientError, match="decompresses to more than 4194304 bytes"):
        decompress_body(bomb.sys_flag, bomb.body)
    with pytest.raises(ClientError, match="compression type 5"):
        decompress_body(0x501, good)
    assert decompress_body(0, b"as is") == b"as is"
