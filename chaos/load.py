"""Producer load with acked-key accounting, and the final count of what the broker kept.

Every message carries a key sent once by this module (``<run>-<thread>-<seq>``, also the
start of its body). A key counts as *acked* only when its ``send`` returned ``SEND_OK``: with
SYNC_FLUSH the broker replies so only after the covering fdatasync. Sends that raised (broker
killed, connection refused, timeout) or came back with another status are *unacked*; the
message may or may not have been stored. The client's own retries may store a key twice:
those are *duplicates*, allowed by RocketMQ's at-least-once contract but counted.

:func:`drain` reads the topic back from offset 0 of every queue through a pull consumer and
:func:`tally` compares: *lost* (acked, never read back) must be 0 under SYNC_FLUSH, and no
stored message may be *served twice* (at a queue offset other than its own).
"""

from __future__ import annotations

import collections
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from chaos.cluster import TOPIC, CampaignError
from rmq import Message, MessageQueue, Producer, PullConsumer
from rmq.errors import RmqError

BODY_SIZE = 256


def body_for(key: str) -> bytes:
    head = (key + "|").encode()
    return head + b"x" * (BODY_SIZE - len(head))


@dataclass
class Load:
    """``threads`` threads sending synchronously through one :class:`rmq.Producer`."""

    namesrv: str
    run: str
    threads: int = 8
    epoch: int = 0
    """The campaign's cycle number, recorded with each ack (which crash a lost key met)."""
    acked: dict[str, int] = field(default_factory=dict)
    unacked: set[str] = field(default_factory=set)
    errors: collections.Counter[str] = field(default_factory=collections.Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)
    _producer: Producer | None = None

    def start(self) -> None:
        self._producer = Producer(
            f"chaos_{self.run}",
            self.namesrv,
            instance_name=f"chaos-{self.run}",
            send_msg_timeout=3000,
            retry_times_when_send_failed=2,
        ).start()
        for t in range(self.threads):
            w = threading.Thread(target=self._send_loop, args=(t,), daemon=True)
            w.start()
            self._workers.append(w)

    def _send_loop(self, thread: int) -> None:
        assert self._producer is not None
        seq = 0
        while not self._stop.is_set():
            key = f"{self.run}-{thread:02d}-{seq:08d}"
            seq += 1
            try:
                result = self._producer.send(Message(TOPIC, body_for(key), keys=key))
                status = result.status
            except (RmqError, OSError) as exc:
                status = type(exc).__name__
            with self._lock:
                if status == "SEND_OK":
                    self.acked[key] = self.epoch
                else:
                    self.unacked.add(key)
                    self.errors[status] += 1
            if status != "SEND_OK":
                time.sleep(0.02)  # the broker is down: do not spin

    def stop(self) -> None:
        self._stop.set()
        for w in self._workers:
            w.join(timeout=30)
        if self._producer is not None:
            self._producer.shutdown()
            self._producer = None

    def acked_count(self) -> int:
        with self._lock:
            return len(self.acked)

    def acked_keys(self) -> set[str]:
        with self._lock:
            return set(self.acked)


class JavaLoad:
    """The same load from the official Java client (4.x): ``threads`` threads of
    ``tests/compat/java``'s ``rmq.compat.KeyedLoad``, which prints one ``ok KEY`` or
    ``fail KEY REASON`` line per send; keys are ``<run>-j<thread>-<seq>``."""

    def __init__(self, namesrv: str, run: str, threads: int = 4) -> None:
        self.namesrv, self.run, self.threads = namesrv, run, threads
        self.epoch = 0
        self.acked: dict[str, int] = {}
        self.unacked: set[str] = set()
        self.errors: collections.Counter[str] = collections.Counter()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        compat = Path(__file__).resolve().parent.parent / "tests" / "compat"
        sys.path.insert(0, str(compat))
        from run_java_compat import build_jar, java_executable  # type: ignore[import-not-found]

        self._proc = subprocess.Popen(
            [java_executable(), "-Xmx256m", "-cp", str(build_jar()), "rmq.compat.KeyedLoad",
             self.namesrv, TOPIC, self.run, str(self.threads), str(BODY_SIZE)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            verdict, _, rest = line.strip().partition(" ")
            key, _, reason = rest.partition(" ")
            with self._lock:
                if verdict == "ok":
                    self.acked[key] = self.epoch
                elif verdict == "fail":
                    self.unacked.add(key)
                    self.errors[f"java {reason}"] += 1

    def stop(self) -> None:
        if self._proc is None:
            return
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=30)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._proc = None

    def acked_keys(self) -> set[str]:
        with self._lock:
            return set(self.acked)


@dataclass
class Drained:
    """Every key read back from the topic and how often (each stored copy once); bodies that
    did not match; reads of a stored message already read at another queue offset."""

    counts: collections.Counter[str]
    corrupt: int
    messages: int
    served_twice: int


def drain(namesrv: str, group: str, quiet_polls: int = 3) -> Drained:
    """Read the whole topic, every queue from its first offset, until it stays empty."""
    counts: collections.Counter[str] = collections.Counter()
    corrupt = messages = served_twice = 0
    stored: set[tuple[int, int]] = set()
    with PullConsumer(group, namesrv, pull_batch_size=32, auto_commit=False) as consumer:
        deadline = time.monotonic() + 60
        queues: list[MessageQueue] = []
        while not queues:
            try:
                queues = consumer.fetch_message_queues(TOPIC)
            except RmqError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        consumer.assign(queues)
        for mq in queues:
            consumer.seek(mq, 0)
        empty = 0
        while empty < quiet_polls:
            batch = consumer.poll(1000)
            if not batch:
                empty += 1
                continue
            empty = 0
            for m in batch:
                messages += 1
                # One stored message (one CommitLog offset) served at two queue offsets: a
                # ConsumeQueue unit that points at a record other than its own.
                if (m.queue_id, m.commit_log_offset) in stored:
                    served_twice += 1
                    continue
                stored.add((m.queue_id, m.commit_log_offset))
                key = m.body.split(b"|", 1)[0].decode(errors="replace")
                counts[key] += 1
                if m.body != body_for(key):
                    corrupt += 1
    return Drained(counts, corrupt, messages, served_twice)


@dataclass
class Tally:
    acked: int
    unacked_sends: int
    lost: int
    duplicated: int
    unacked_present: int
    corrupt: int
    served_twice: int
    messages_read: int
    lost_examples: list[str]

    def as_dict(self) -> dict[str, object]:
        return dict(self.__dict__)


def tally(acked: dict[str, int], unacked: set[str], got: Drained) -> Tally:
    present = set(got.counts)
    lost = acked.keys() - present
    strangers = present - acked.keys() - unacked
    if strangers:
        raise CampaignError(f"{len(strangers)} keys read back were never sent, e.g. {strangers}")
    return Tally(
        acked=len(acked),
        unacked_sends=len(unacked),
        lost=len(lost),
        duplicated=sum(n - 1 for n in got.counts.values() if n > 1),
        unacked_present=len(present & unacked),
        corrupt=got.corrupt,
        served_twice=got.served_twice,
        messages_read=got.messages,
        lost_examples=sorted(lost)[:10],
    )
