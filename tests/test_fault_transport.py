"""Issue 13's transport and broker rows, against a real broker process: what a hostile or
broken client can make it hold (its resident memory, read from /proc), idle and stalled
connections, a full connection table, sends to system topics, and the disk usage ratio.

The same properties are asserted on the transport alone, with smaller limits, in
``crates/rmq-remoting/tests/limits.rs``; here they hold for the broker as shipped.
"""

from __future__ import annotations

import contextlib
import errno
import json
import re
import resource
import select
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import (
    TEST_STORE_CONF,
    BrokerProcess,
    free_port,
    pull_header,
    send_v2_header,
    wait_until,
)
from rmq._rmq import RemotingClient, RemotingResponse
from rmq.codes import RequestCode, ResponseCode

sys.path.insert(0, str(Path(__file__).parent / "corpus"))
from vectors import Frame

MIB = 1 << 20
CLUSTER = "FaultCluster"
BROKER = "broker-fault"


@contextlib.contextmanager
def start_broker(work: Path, extra_conf: str = "") -> Iterator[tuple[BrokerProcess, str]]:
    """A broker (embedded nameserver) with ``extra_conf`` appended to its config."""
    port = free_port()
    conf = work / "broker.conf"
    conf.write_text(
        f"brokerClusterName = {CLUSTER}\n"
        f"brokerName = {BROKER}\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {work / 'store'}\n"
        "mappedFileSizeCommitLog = 16777216\n" + TEST_STORE_CONF + extra_conf
    )
    proc = BrokerProcess("-c", str(conf), cwd=work)
    try:
        proc.wait_for("): listening on")  # the broker's line, not the embedded nameserver's
        yield proc, f"127.0.0.1:{port}"
    finally:
        proc.kill()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, str]]:
    with start_broker(tmp_path_factory.mktemp("fault-transport")) as started:
        yield started


def rss(proc: BrokerProcess) -> int:
    """Resident set size of the broker process, in bytes."""
    for line in Path(f"/proc/{proc.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/<pid>/status")


def request_frame(code: int, ext: dict[str, str], opaque: int, body: bytes = b"") -> bytes:
    header = {
        "code": code,
        "extFields": ext,
        "flag": 0,
        "language": "JAVA",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": 409,
    }
    return Frame(json.dumps(header).encode(), body).encode()


def count_responses(sock: socket.socket, n: int, timeout: float = 60.0) -> int:
    """Read until ``n`` whole frames arrived (bodies skipped); the number read."""
    sock.settimeout(timeout)
    got = 0
    pending = b""
    need = 4
    in_frame = False
    while got < n:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        pending += chunk
        while len(pending) >= need:
            if not in_frame:
                need = 4 + int.from_bytes(pending[:4], "big")
                in_frame = True
            else:
                pending = pending[need:]
                need, in_frame, got = 4, False, got + 1
    return got


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the peer closed ``sock`` within ``seconds`` (EOF or reset)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(64) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def send(
    c: RemotingClient, addr: str, topic: str, body: bytes = b"x", queue_id: int = 0
) -> RemotingResponse:
    return c.invoke(
        addr,
        RequestCode.SEND_MESSAGE_V2,
        send_v2_header("fault-pg", topic, "t", "k", queue_id),
        body,
    )


def test_a_client_that_never_reads_keeps_broker_memory_bounded(
    broker: tuple[BrokerProcess, str],
) -> None:
    """200 000 pulls of 32 x 4 KiB messages pipelined by a client that never reads: the
    broker stops reading it once its queued replies pass the connection's budget (before the
    fix it accepted all 200 000 and grew by 165 MB), serves others meanwhile, and answers
    every accepted pull once the client reads."""
    proc, addr = broker
    c = RemotingClient()
    for i in range(32):
        r = send(c, addr, "NoReadTopic", bytes([i]) * 4096)
        assert r.code == ResponseCode.SUCCESS, r.remark
    max_offset = {"topic": "NoReadTopic", "queueId": "0"}
    wait_until(
        lambda: c.invoke(addr, RequestCode.GET_MAX_OFFSET, max_offset).ext_fields["offset"] == "32",
        "32 messages in the ConsumeQueue",
    )
    pull = pull_header("no-read-group", "NoReadTopic", 0, max_nums=32, sys_flag=4)
    warm = c.invoke(addr, RequestCode.PULL_MESSAGE, pull)
    assert warm.code == ResponseCode.SUCCESS and len(warm.body or b"") > 32 * 4096
    base = rss(proc)
    host, port = addr.split(":")
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    s.setblocking(False)
    sent, peak = 0, base
    pending = b""
    last_progress = time.monotonic()
    while sent < 200_000 and time.monotonic() - last_progress < 1.0:
        if not pending:
            pending = request_frame(RequestCode.PULL_MESSAGE, pull, sent)
            sent += 1
        try:
            n = s.send(pending)
            pending = pending[n:]
            last_progress = time.monotonic()
        except BlockingIOError:
            select.select([], [s], [], 0.05)
        if sent % 500 == 0:
            peak = max(peak, rss(proc))
    peak = max(peak, rss(proc))
    # Others are served while this client is stalled.
    other = RemotingClient()
    r = other.invoke(addr, RequestCode.GET_MAX_OFFSET, max_offset)
    assert r.code == ResponseCode.SUCCESS and r.ext_fields["offset"] == "32"
    grew = peak - base
    assert sent < 200_000, "the broker read all 200 000 pulls from a client that reads nothing"
    assert grew < 32 * MIB, f"broker RSS grew {grew / MIB:.0f} MiB for {sent} unread pulls"
    # Everything accepted is answered once the client reads (while it finishes the frame it
    # was cut off in: the broker reads again only once the client does).
    s.setblocking(True)
    got: list[int] = []
    reader = threading.Thread(target=lambda: got.append(count_responses(s, sent)))
    reader.start()
    s.sendall(pending)
    reader.join(60)
    assert got == [sent]
    s.close()
    print(f"\nnon-reading client: {sent} pulls accepted, broker RSS +{grew / MIB:.1f} MiB")


def test_stalled_16_mib_frames_hold_only_what_arrived_and_are_closed(tmp_path: Path) -> None:
    """40 connections each send the start of a 16 MiB frame and stall: the broker holds about
    what arrived (before the fix +532 MiB) and closes them after
    ``serverChannelMaxIdleTimeSeconds``; a normal client is served throughout."""
    with start_broker(tmp_path, "serverChannelMaxIdleTimeSeconds = 2\n") as (proc, addr):
        host, port = addr.split(":")
        c = RemotingClient()
        assert c.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO).code == ResponseCode.SUCCESS
        base = rss(proc)
        start = (16 * MIB - 4).to_bytes(4, "big") + (64).to_bytes(4, "big") + b"{" * 60_000
        socks = []
        t0 = time.monotonic()
        for _ in range(40):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(start)
            socks.append(s)
        time.sleep(0.5)
        grew = rss(proc) - base
        assert grew < 32 * MIB, f"40 stalled frames grew the broker by {grew / MIB:.0f} MiB"
        r = c.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        assert r.code == ResponseCode.SUCCESS
        closed = sum(closed_within(s, max(0.1, t0 + 8 - time.monotonic())) for s in socks)
        assert closed == 40, f"only {closed} of 40 stalled connections were closed"
        proc.wait_for("a frame stalled for 2 s", 5)
        for s in socks:
            s.close()
        print(f"\n40 stalled 16 MiB frames: broker RSS +{grew / MIB:.1f} MiB")


def accepted_connections(port: int) -> int:
    """Connections to ``port`` a process has accepted: ESTABLISHED sockets in /proc/net/tcp on
    that local port that have an inode (one still in the accept queue has none)."""
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    count = 0
    for line in lines:
        f = line.split()
        if f[3] == "01" and int(f[1].split(":")[1], 16) == port and f[9] != "0":
            count += 1
    return count


def open_idle_connections(addr: str, n: int) -> list[socket.socket]:
    """``n`` connections the broker has accepted, opened 100 at a time: a burst past the listen
    backlog (128 here) leaves connections the client thinks open and the broker takes only
    after SYN-ACK retries, seconds later."""
    host, port = addr.split(":")
    base = accepted_connections(int(port))
    socks: list[socket.socket] = []
    while len(socks) < n:
        with selectors.DefaultSelector() as sel:
            for _ in range(min(100, n - len(socks))):
                s = socket.socket()
                s.setblocking(False)
                assert s.connect_ex((host, int(port))) in (0, errno.EINPROGRESS)
                socks.append(s)
                sel.register(s, selectors.EVENT_WRITE)
            while sel.get_map():
                for key, _ in sel.select(5):
                    sel.unregister(key.fileobj)
        wait_until(
            lambda: accepted_connections(int(port)) >= base + len(socks),
            f"the broker accepting {len(socks)} connections",
            timeout=20,
        )
    return socks


def test_10000_idle_connections_do_not_lock_a_real_client_out(tmp_path: Path) -> None:
    """With its 10 000 connections (the limit) taken by idle sockets, the broker still admits
    a real client by closing exactly one connection, one of the longest idle (before: every
    client was refused)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = 10_500
    assert hard >= need, f"RLIMIT_NOFILE hard limit {hard} < {need}: raise it (ulimit -Hn)"
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, need), hard))
    socks: list[socket.socket] = []
    try:
        with start_broker(tmp_path) as (proc, addr):
            base = rss(proc)
            socks = open_idle_connections(addr, 10_000)
            per_conn = (rss(proc) - base) / 10_000
            c = RemotingClient()
            r = send(c, addr, "AfterFloodTopic")
            assert r.code == ResponseCode.SUCCESS, r.remark
            proc.wait_for("10000 connections open (the limit): closing the one from", 5)
            with selectors.DefaultSelector() as sel:
                for s in socks:
                    sel.register(s, selectors.EVENT_READ)
                index = {s.fileno(): i for i, s in enumerate(socks)}
                closed = sorted(index[key.fd] for key, _ in sel.select(2))
            assert len(closed) == 1 and closed[0] < 100, f"closed: {closed[:10]}"
            assert per_conn < 64 * 1024, f"{per_conn:.0f} bytes of RSS per idle connection"
            print(f"\n10 000 idle connections: {per_conn / 1024:.1f} KiB of broker RSS each")
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_sends_to_system_topics_and_cluster_and_broker_names_answer_as_apache_497(
    broker: tuple[BrokerProcess, str], tmp_path: Path
) -> None:
    """Apache 4.9.7 (TopicValidator, AbstractSendMessageProcessor.msgCheck, TopicConfigManager):
    TBW102 is SYSTEM_ERROR "reserved words"; SELF_TEST_TOPIC and OFFSET_MOVED_EVENT are in
    NOT_ALLOWED_SEND_TOPIC_SET (NO_PERMISSION "forbidden"); the cluster-name and broker-name
    topics are system topics that are writable while clusterTopicEnable / brokerTopicEnable
    (default true) and NO_PERMISSION otherwise."""
    _, addr = broker
    c = RemotingClient()
    expected = [
        (
            "TBW102",
            ResponseCode.SYSTEM_ERROR,
            "the topic[TBW102] is conflict with system reserved words.",
        ),
        (
            "OFFSET_MOVED_EVENT",
            ResponseCode.NO_PERMISSION,
            "Sending message to topic[OFFSET_MOVED_EVENT] is forbidden.",
        ),
        (
            "SELF_TEST_TOPIC",
            ResponseCode.NO_PERMISSION,
            "Sending message to topic[SELF_TEST_TOPIC] is forbidden.",
        ),
        (CLUSTER, ResponseCode.SUCCESS, None),
        (BROKER, ResponseCode.SUCCESS, None),
    ]
    for topic, code, remark in expected:
        r = send(c, addr, topic)
        assert (r.code, r.remark if remark else None) == (code, remark), topic
    off = tmp_path / "off"
    off.mkdir()
    with start_broker(off, "clusterTopicEnable = false\nbrokerTopicEnable = false\n") as (_, addr2):
        for topic in (CLUSTER, BROKER):
            r = send(c, addr2, topic)
            assert r.code == ResponseCode.NO_PERMISSION, (topic, r.remark)
            assert r.remark == f"the topic[{topic}] sending message is forbidden"


def test_disk_usage_ratio_is_dfs(broker: tuple[BrokerProcess, str]) -> None:
    """commitLogDiskRatio is used / (used + available), what df's Use% shows (before it was
    (blocks - bavail) / blocks: 81 % where df showed 48 %)."""
    proc, addr = broker
    r = RemotingClient().invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    ratio = float(json.loads(r.body or b"")["table"]["commitLogDiskRatio"])
    m = re.search(r"store open at (\S+),", proc.log)
    assert m, proc.log
    store = m.group(1)
    out = subprocess.run(
        ["df", "--output=pcent", store], capture_output=True, text=True, check=True
    )
    pcent = float(out.stdout.splitlines()[1].strip().rstrip("%"))
    # df rounds Use% up to a whole percent; other writers move it a little meanwhile.
    assert abs(ratio * 100 - pcent) <= 2, f"commitLogDiskRatio {ratio}, df {pcent} %"
