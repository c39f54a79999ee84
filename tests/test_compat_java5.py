"""The RocketMQ 5.x Java client (remoting protocol; 5.3.1 and 5.5.0 from Maven Central)
against a real ``rmq.namesrv`` and ``rmq.broker``, and compressed bodies in both directions.

The Java side (tests/compat/java5, built by run_java_compat's ``build_jar``) sends sync,
batch, ZLIB, LZ4 and ZSTD messages with ``DefaultMQProducer``; rmq's producer adds LZ4 and ZSTD
messages of its own. Then a subscribing ``DefaultLitePullConsumer`` (LITE_PULL_MESSAGE, 361),
one that assigns every queue and seeks to 0, a ``DefaultMQPushConsumer``, and one with the 5.x-only
``clientRebalance=false`` (QUERY_ASSIGNMENT, not served: the client falls back to rebalancing
itself) and ``useHeartbeatV2`` must each get every message byte for byte, and so must rmq's
push and pull consumers. Every message is a pure
function of (kind, seq), computed here and in Compat5.java alike.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import rmq

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from run_java_compat import build_java5_jar, java_executable

COUNT = 20
JAVA_KINDS = ("sync", "batch", "zlib", "lz4", "zstd")
RMQ_KINDS = {"rmq-lz4": "LZ4", "rmq-zstd": "ZSTD"}
# The compression type bits (sysFlag 8..10) each compressed kind is stored with.
TYPE_BITS = {"zlib": 0x300, "lz4": 0x100, "zstd": 0x200, "rmq-lz4": 0x100, "rmq-zstd": 0x200}


def body(kind: str, seq: int) -> bytes:
    """Compat5.body: over the 4 KiB compression threshold unless ``kind`` is sync or batch."""
    big = kind not in ("sync", "batch")
    n = 6000 + (seq * 37) % 2000 if big else 100 + (seq * 13) % 900
    return f"{kind}:{seq}:".encode() + bytes((j * j + seq + j // 7) % 251 for j in range(n))


def run_java(
    version: str, log_dir: Path, *args: str, options: Sequence[str] = ()
) -> dict[str, Any]:
    """Run Compat5 from the jar for client ``version`` (client log in ``log_dir``); its JSON
    summary, checked for ok."""
    jar = build_java5_jar(version)
    jvm = [java_executable(), "-Xmx512m", f"-Drocketmq.log.root={log_dir}", *options]
    proc = subprocess.run(
        [*jvm, "-jar", str(jar), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON summary (exit {proc.returncode}):\n{proc.stderr[-3000:]}"
    summary: dict[str, Any] = json.loads(lines[-1])
    assert proc.returncode == 0 and summary["ok"], (
        f"Java {version} {args[0]} failed (exit {proc.returncode}; client log in "
        f"{summary.get('logDir')}):\n{json.dumps(summary, indent=1)}\n{proc.stderr[-3000:]}"
    )
    return summary


def expected() -> dict[tuple[str, int], bytes]:
    return {(k, s): body(k, s) for k in (*JAVA_KINDS, *RMQ_KINDS) for s in range(COUNT)}


def check_rmq_got(got: list[rmq.StoredMessage], who: str) -> None:
    """Every expected message exactly once, byte for byte, compressed ones decompressed."""
    want = expected()
    seen: dict[tuple[str, int], int] = {}
    for m in got:
        key = (m.properties["kind"], int(m.properties["seq"]))
        assert m.body_error is None, f"{who}: {m.body_error}"
        assert m.body == want[key], f"{who}: {key} differs ({len(m.body)} bytes)"
        assert m.tags == key[0]
        if key[0] in TYPE_BITS:
            # rmq clears the compressed bit; the type bits stay as the producer set them
            # (ZLIB from rmq's own producer would be 0; from Java 5 it is 3).
            assert m.sys_flag & 0x701 == TYPE_BITS[key[0]], (who, key, hex(m.sys_flag))
        seen[key] = seen.get(key, 0) + 1
    missing = sorted(set(want) - set(seen))
    assert not missing, f"{who}: {len(missing)} missing, first {missing[:5]}"
    assert all(n == 1 for n in seen.values()), f"{who}: duplicates"


@pytest.mark.timeout(420)
@pytest.mark.parametrize(
    ("version", "falls_back_to_client_rebalance"), [("5.3.1", True), ("5.5.0", False)]
)
def test_java5_client_and_rmq_interoperate_with_lz4_and_zstd(
    rmq_cluster: tuple[str, str], version: str, falls_back_to_client_rebalance: bool, tmp_path: Path
) -> None:
    namesrv = rmq_cluster[0]
    run = f"{version.replace('.', '')}x{int(time.time() * 1000) % 10**8}"
    topic = f"J5_{run}"
    started = time.monotonic()
    produced = run_java(version, tmp_path / "java-logs", "produce", namesrv, topic, run, str(COUNT))
    assert produced["client"] == f"V{version.replace('.', '_')}"
    assert produced["sent"] == dict.fromkeys(JAVA_KINDS, COUNT)
    for kind, compress_type in RMQ_KINDS.items():
        with rmq.Producer(f"pg-{kind}-{run}", namesrv, compress_type=compress_type) as p:
            for seq in range(COUNT):
                props = {"kind": kind, "seq": str(seq)}
                p.send(rmq.Message(topic, body(kind, seq), tags=kind, properties=props))

    expect = ",".join(f"{k}:{COUNT}" for k in (*JAVA_KINDS, *RMQ_KINDS))
    wait_push5 = 90_000 if falls_back_to_client_rebalance else 5_000
    consumed = run_java(
        version,
        tmp_path / "java-logs",
        *("consume", namesrv, topic, run, expect),
        options=[f"-Dcompat5.push5WaitMs={wait_push5}"],
    )
    total = COUNT * (len(JAVA_KINDS) + len(RMQ_KINDS))
    # clientRebalance=false sends QUERY_ASSIGNMENT (400), which rmq does not serve (5.x
    # broker-side rebalancing and pop): REQUEST_CODE_NOT_SUPPORTED, which 5.3.1 answers by
    # rebalancing itself and 5.5.0 by logging the error and consuming nothing.
    refused = "request code 400 is not supported by this broker"
    client_log = (tmp_path / "java-logs" / "rocketmq_client.log").read_text(errors="replace")
    assert refused in client_log
    names = ["lite-subscribe", "lite-assign", "push"]
    if falls_back_to_client_rebalance:
        names.append("push-5x-options")
    else:
        assert consumed["push-5x-options"]["received"] == 0
    for name in names:
        got = consumed[name]
        assert (got["received"], got["duplicates"], got["missing"], got["mismatches"]) == (
            total,
            0,
            [],
            [],
        ), (name, got)
        # The type bits as the producer (Java's or rmq's) set them; 5.3.1 also keeps the
        # compressed bit after decompressing, 5.5.0 clears it.
        flags = {k: {int(f) & 0x700 for f in v.split()} for k, v in got["sysFlags"].items()}
        for kind, bits in TYPE_BITS.items():
            assert flags[kind] == {bits}, (name, kind, got["sysFlags"])
        assert flags["sync"] == flags["batch"] == {0}

    # The other direction: rmq's consumers read the Java producer's LZ4/ZSTD messages.
    pushed: list[rmq.StoredMessage] = []
    consumer = rmq.PushConsumer(
        f"cg-rmq-push-{run}", namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    )
    consumer.subscribe(topic)
    consumer.register_message_listener_concurrently(lambda msgs: pushed.extend(msgs))
    consumer.start()
    try:
        deadline = time.monotonic() + 60
        while len(pushed) < total and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        consumer.shutdown()
    check_rmq_got(pushed, "rmq PushConsumer")
    with rmq.PullConsumer(
        f"cg-rmq-pull-{run}", namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET"
    ) as pull:
        pull.subscribe(topic)
        polled: list[rmq.StoredMessage] = []
        while len(polled) < total:
            batch = pull.poll(3000)
            assert batch, f"rmq PullConsumer: nothing after {len(polled)} messages"
            polled.extend(batch)
    check_rmq_got(polled, "rmq PullConsumer")
    print(f"Java {version} interop: {time.monotonic() - started:.1f} s")
