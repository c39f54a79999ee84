"""What many test files need: a broker process, a free port, topic creation over the wire,
the request headers several tests spell out, waiting for a condition, and a listener that
records what it got.

One copy here instead of one per test file; test files import from ``helpers`` (``tests/`` is on
``sys.path`` because pytest loads ``tests/conftest.py`` from it)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import rmq
from rmq._rmq import ClientInstance, RemotingClient, StoredMessage
from rmq.codes import RequestCode
from rmq.errors import RmqError

sys.path.insert(0, str(Path(__file__).parent / "compat"))
from compat_common import create_topic_header

sys.path.insert(0, str(Path(__file__).parent.parent))  # the repository: chaos.walk
from chaos.walk import commit_log_digest

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0

# Store keys every test broker adds: small ConsumeQueue and IndexFile files (the defaults, 6 MB
# per queue and 420 MB per index, are sparse but map that much each) and the disk guards at 99 %,
# so a busy shared disk does not make the test's own writes be refused.
TEST_STORE_CONF = (
    "mappedFileSizeConsumeQueue = 6000\n"
    "maxHashSlotNum = 5000\n"
    "maxIndexNum = 20000\n"
    "diskSpaceWarningLevelRatio = 99\n"
    "diskSpaceCleanForciblyRatio = 99\n"
)


@contextlib.contextmanager
def small_filesystem(parent: Path, size_mib: int) -> Iterator[Path]:
    """A tmpfs of ``size_mib`` MiB mounted on a new folder under ``parent``, unmounted after.

    For the fault tests that need a disk that really fills (ENOSPC, the disk-usage ratio): a
    test must not fill the machine's own disk. Mounting needs root, which this project's
    machines and CI run as; anything else fails here with the reason.
    """
    mnt = parent / f"tmpfs-{size_mib}m"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(
            f"could not mount a {size_mib} MiB tmpfs on {mnt} (uid {os.getuid()}): "
            f"{done.stderr.strip()}; the fault tests need root to create a small filesystem"
        )
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def write_broker_conf(
    work: Path,
    port: int,
    extra: str = "",
    *,
    name: str = "broker-a",
    cluster: str = "DefaultCluster",
) -> Path:
    """``work/broker.conf`` for a test broker: ``name`` in ``cluster`` on 127.0.0.1:``port``,
    its store in ``work/store`` with small files (:data:`TEST_STORE_CONF`), then ``extra``."""
    conf = work / "broker.conf"
    conf.write_text(
        f"brokerClusterName = {cluster}\n"
        f"brokerName = {name}\n"
        "brokerIP1 = 127.0.0.1\n"
        f"listenPort = {port}\n"
        f"storePathRootDir = {work / 'store'}\n"
        "mappedFileSizeCommitLog = 16777216\n" + TEST_STORE_CONF + extra
    )
    return conf


def free_port() -> int:
    """A port nothing listens on now (the broker binds it moments later)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class BrokerProcess:
    """A broker subprocess whose stderr is collected line by line on a thread."""

    def __init__(self, *args: str, cwd: Path) -> None:
        # Run from a directory other than the repository: the installed package must be found.
        # Without -n the broker runs an embedded nameserver: give it a free port.
        explicit = {"-n", "--namesrv", "--namesrv-port"} & set(args)
        extra = () if explicit else ("--namesrv-port", "0")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rmq.broker", *args, *extra],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, text: str, timeout: float = START_TIMEOUT_S) -> str:
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no {text!r} within {timeout} s; stderr so far:\n{self.log}")
            try:
                line = self._queue.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(
                    f"broker exited ({self.proc.wait()}) before {text!r}; stderr:\n{self.log}"
                )
            self.lines.append(line)
            if text in line:
                return line

    def stop(self, sig: signal.Signals = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        return self.finish()

    def finish(self) -> int:
        code = self.proc.wait(timeout=STOP_TIMEOUT_S)
        self._reader.join(timeout=STOP_TIMEOUT_S)
        while not self._queue.empty():
            line = self._queue.get()
            if line is not None:
                self.lines.append(line)
        self._close_pipes()
        return code

    def _close_pipes(self) -> None:
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None and not self._reader.is_alive():
                pipe.close()

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.finish()


class Cluster:
    """A nameserver and brokers started on demand."""

    def __init__(self, tmp: Path, ns_addr: str) -> None:
        self.tmp = tmp
        self.namesrv = ns_addr
        self.brokers: dict[str, tuple[BrokerProcess, str]] = {}

    def start_broker(self, name: str) -> str:
        port = free_port()
        conf = self.tmp / f"{name}.conf"
        conf.write_text(
            "brokerClusterName = ClientCluster\n"
            f"brokerName = {name}\n"
            "brokerIP1 = 127.0.0.1\n"
            f"listenPort = {port}\n"
            f"storePathRootDir = {self.tmp / name}\n"
            "mappedFileSizeCommitLog = 4194304\n"
            "registerNameServerPeriod = 2000\n" + TEST_STORE_CONF
        )
        proc = BrokerProcess("-c", str(conf), "-n", self.namesrv, cwd=self.tmp)
        proc.wait_for("listening on")
        addr = f"127.0.0.1:{port}"
        self.brokers[name] = (proc, addr)
        return addr

    def create_topic(self, topic: str, queues: int = 4, order: bool = False) -> None:
        """Create ``topic`` on every broker and wait until the nameserver routes it."""
        addrs = [addr for _, addr in self.brokers.values()]
        create_topic(self.namesrv, addrs, topic, queues, order)

    def stop(self) -> None:
        for proc, _ in self.brokers.values():
            proc.kill()


def wait_until(cond: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Poll ``cond`` every 50 ms until it is true; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def wait_commit_logs_agree(
    stores: tuple[Path, Path], end: int, file_size: int, timeout: float = 10.0
) -> tuple[str, str]:
    """SHA-256 of the CommitLog bytes ``[0, end)`` in two store roots, polled until they agree
    or ``timeout`` s pass: a running rmq broker writes its newest bytes to the file within its
    append window's step (10 ms), while its readers see them at once."""

    def digests() -> tuple[str, str]:
        a, b = (commit_log_digest(s / "commitlog", end, file_size) for s in stores)
        return a, b

    deadline = time.monotonic() + timeout
    while len(set(found := digests())) > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


class Collector:
    """A concurrent listener that records what it got."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.msgs: list[StoredMessage] = []

    def __call__(self, msgs: list[StoredMessage]) -> None:
        with self.lock:
            self.msgs.extend(msgs)

    def bodies(self) -> list[bytes]:
        with self.lock:
            return [m.body for m in self.msgs]

    def snapshot(self) -> list[StoredMessage]:
        with self.lock:
            return list(self.msgs)

    def count(self) -> int:
        with self.lock:
            return len(self.msgs)


def route_queues(inst: ClientInstance, topic: str) -> list[rmq.MessageQueue]:
    """The queues the nameserver routes for ``topic``; none while it has no route."""
    try:
        return inst.fetch_subscribe_queues(topic)
    except RmqError:
        return []


# Consumer settings that make a client test quick: rebalance every second, offsets persisted
# every half second.
FAST = {"rebalance_interval_ms": 1000, "persist_consumer_offset_interval": 500}


def push_consumer(
    namesrv: str,
    group: str,
    topic: str,
    listener: Callable[[list[StoredMessage]], object],
    expression: str = "*",
    **kwargs: object,
) -> rmq.PushConsumer:
    """A started concurrent push consumer of ``topic`` from the first offset, with
    :data:`FAST` settings (``kwargs`` override them)."""
    options: dict[str, object] = {**FAST, "consume_from_where": "CONSUME_FROM_FIRST_OFFSET"}
    options.update(kwargs)
    c = rmq.PushConsumer(group, namesrv, **options)  # type: ignore[arg-type]
    c.subscribe(topic, expression)
    c.register_message_listener_concurrently(listener)  # type: ignore[arg-type]
    return c.start()


def create_topic(
    namesrv: str, broker_addrs: Iterable[str], topic: str, queues: int = 4, order: bool = False
) -> None:
    """Create ``topic`` on every broker of ``broker_addrs`` and wait until the nameserver
    routes all its queues."""
    addrs = list(broker_addrs)
    client = RemotingClient()
    try:
        for addr in addrs:
            header = create_topic_header(topic, queues, order)
            resp = client.invoke(addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
            assert resp.code == 0, resp.remark
    finally:
        client.close()
    inst = ClientInstance(namesrv)
    try:
        wait_until(
            lambda: len(route_queues(inst, topic)) == queues * len(addrs), f"route of {topic}"
        )
    finally:
        inst.shutdown()


def send_v2_header(
    producer_group: str, topic: str, tags: str, keys: str, queue_id: int = 0
) -> dict[str, str]:
    """SEND_MESSAGE_V2's short-named header as the Java producer sends it."""
    return {
        "a": producer_group,
        "b": topic,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": str(int(time.time() * 1000)),
        "h": "0",
        "i": f"TAGS\x01{tags}\x02KEYS\x01{keys}\x02",
        "j": "0",
        "k": "false",
        "m": "false",
    }


def update_offset_header(group: str, topic: str, queue_id: int, offset: int) -> dict[str, str]:
    """UPDATE_CONSUMER_OFFSET's header."""
    return {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "commitOffset": str(offset),
    }


def broker_runtime_info(client: RemotingClient, addr: str) -> dict[str, str]:
    """The broker's GET_BROKER_RUNTIME_INFO table (what ``rmq brokerStatus`` prints)."""
    resp = client.invoke(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert resp.code == 0, f"GET_BROKER_RUNTIME_INFO {addr}: {resp.code} {resp.remark}"
    table: dict[str, str] = json.loads(resp.body or b"{}")["table"]
    return table


def commit_log_max_offset(client: RemotingClient, addr: str) -> int:
    return int(broker_runtime_info(client, addr)["commitLogMaxOffset"])


def pull_header(
    group: str, topic: str, queue_id: int = 0, max_nums: int = 32, sys_flag: int = 4
) -> dict[str, str]:
    """PULL_MESSAGE's header for a raw pull from offset 0 with subscription ``*`` (sys flag 4:
    the subscription is in the request), no suspension and no offset commit."""
    return {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": "0",
        "maxMsgNums": str(max_nums),
        "sysFlag": str(sys_flag),
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
    }
