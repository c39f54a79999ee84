"""Replay the conformance corpus (tests/corpus/*/*.jsonl: frames real clients sent Apache
RocketMQ 4.9.7, with Apache's answers) against a fresh real ``rmq.namesrv`` + ``rmq.broker``
per flow, in the order Apache answered, and check rmq answers the same way: the same response
code, every ext field Apache's answer had, a body that parses to the same shape (JSON keys and
value types; for pulls, queries and views the same messages). See tests/corpus/README.md.

The requests go out byte for byte as the clients sent them, except what must follow the
server: a pull Apache answered PULL_NOT_FOUND is sent without the suspend flag (no 15 s long
poll), and commit-log offsets named in CONSUMER_SEND_MSG_BACK / VIEW_MESSAGE_BY_ID are mapped
from Apache's to rmq's (learned from earlier answers of both). Requests the server sent the
client (NOTIFY_CONSUMER_IDS_CHANGED, GET_CONSUMER_RUNNING_INFO, ...) are answered with the
client's recorded reply.
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "corpus"))
sys.path.insert(0, str(Path(__file__).parent / "compat"))
import contextlib

from compat_common import create_topics
from vectors import (
    CONSUMER_SEND_MSG_BACK,
    PULL_MESSAGE,
    PULL_NOT_FOUND,
    PULL_SUSPEND_FLAG,
    QUERY_MESSAGE,
    VIEW_MESSAGE_BY_ID,
    Frame,
    FrameError,
    compare_messages,
    compare_shapes,
    read_frame,
    response_summary,
    unb64,
)

from rmq._rmq import RemotingClient
from rmq.codes import RequestCode

CORPUS = Path(__file__).parent / "corpus"
FLOWS = sorted(CORPUS.glob("*/*.jsonl"))
CODE_NAMES = {c.value: c.name for c in RequestCode}
ANSWER_TIMEOUT_S = 20.0
JAVA_LONG_MAX = str(2**63 - 1)
# A pull that overtook its consumer's heartbeat on Apache (a new subscription version not yet
# registered, or the group not yet known) got SUBSCRIPTION_NOT_EXIST (24) or
# SUBSCRIPTION_NOT_LATEST (25). A replay in answer order has sent that heartbeat already, so rmq
# may answer as the broker would a moment later: found, or not found.
SUBSCRIPTION_RACE_CODES = {24: {24, 0, 19}, 25: {25, 0, 19}}


def load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines[0], lines[1:]


class ReplayConnection:
    """One client connection of the recording, now to rmq: requests out, answers back by
    opaque; requests from rmq answered with the client's recorded reply for that code."""

    def __init__(self, addr: str, replies: dict[int, list[dict[str, Any]]]) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.sock.settimeout(None)
        self.replies = replies
        self.answers: dict[int, queue.Queue[Frame]] = defaultdict(queue.Queue)
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        try:
            while True:
                frame = read_frame(self.sock)
                if frame is None:
                    return
                header = frame.header
                if frame.is_response:
                    self.answers[int(header["opaque"])].put(frame)
                else:
                    self._answer_server(header)
        except (OSError, FrameError):
            return

    def _answer_server(self, request: dict[str, Any]) -> None:
        recorded = self.replies.get(int(request["code"])) or []
        if not recorded or int(request.get("flag", 0)) & 2:
            return
        reply = recorded[0]
        header = json.loads(reply["header"])
        header["opaque"] = request["opaque"]
        frame = Frame(json.dumps(header).encode(), unb64(reply["body"]))
        with self.lock:
            self.sock.sendall(frame.encode())

    def call(self, header_raw: bytes, body: bytes, oneway: bool) -> Frame | None:
        opaque = int(json.loads(header_raw)["opaque"])
        # The answer's queue exists before the request leaves: were it made on first use, the
        # reader thread and this one could each make one for the same opaque (defaultdict's
        # insert is not atomic), and the answer would land in the queue this thread replaced.
        answer = self.answers[opaque]
        with self.lock:
            self.sock.sendall(Frame(header_raw, body).encode())
        if oneway:
            return None
        try:
            return answer.get(timeout=ANSWER_TIMEOUT_S)
        except queue.Empty:
            return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def adapt(event: dict[str, Any], offsets: dict[int, int]) -> bytes:
    """The request header to send: as recorded, or adjusted where rmq's state must lead."""
    raw: str = event["header"]
    code = event["code"]
    apache = event["response"] or {}
    changes: dict[str, str] = {}
    header = json.loads(raw)
    ext = header.get("extFields") or {}
    if code == PULL_MESSAGE and apache.get("code") == PULL_NOT_FOUND:
        flag = int(ext.get("sysFlag", 0))
        if flag & PULL_SUSPEND_FLAG:
            changes["sysFlag"] = flag & ~PULL_SUSPEND_FLAG
    if code in (CONSUMER_SEND_MSG_BACK, VIEW_MESSAGE_BY_ID) and "offset" in ext:
        mapped = offsets.get(int(ext["offset"]))
        if mapped is not None:
            changes["offset"] = mapped
    if code == QUERY_MESSAGE:  # the recorded time window is in the past now
        changes["beginTimestamp"] = 0
        changes["endTimestamp"] = JAVA_LONG_MAX
    if not changes:
        return raw.encode()
    for key, value in changes.items():
        # keep the client's JSON type for the field (string or number)
        ext[key] = str(value) if isinstance(ext.get(key), str) else int(value)
    header["extFields"] = ext
    return json.dumps(header, separators=(",", ":")).encode()


# Where rmq answers differently from Apache 4.9.7 on purpose. Each is narrow (one request
# shape, one property of one kind of message) and what rmq does instead is asserted; they are
# listed in tests/corpus/README.md ("Known differences").
UPDATE_BROKER_CONFIG = 25
NO_PERMISSION = 16
RESTART_ONLY_BROKER_KEYS = (b"brokerName=",)


def known_difference(event: dict[str, Any], rmq: dict[str, Any]) -> str | None:
    """Why rmq's answer may differ here, if it is one of the known differences and rmq
    answered as rmq is meant to; None otherwise."""
    body = unb64(event["body"])
    if (
        event["code"] == UPDATE_BROKER_CONFIG
        and any(body.startswith(k) for k in RESTART_ONLY_BROKER_KEYS)
        and rmq["code"] == NO_PERMISSION
    ):
        # Apache applies a brokerName change to the running broker; rmq refuses keys that
        # need a restart (rmq.broker.admin_handler.RUNTIME_KEYS).
        return "brokerName needs a restart in rmq"
    return None


def delivered_from_schedule(apache_msg: dict[str, Any], rmq_msg: dict[str, Any]) -> None:
    """A message re-put from SCHEDULE_TOPIC_XXXX (it has REAL_TOPIC): Apache keeps its DELAY
    property (messageTimeup clears it only after serializing the properties) where rmq's store
    drops it (its put path would park the message again), and rmq gives a message without
    UNIQ_KEY the parked record's offset id as UNIQ_KEY (so consumers see the id the producer
    got) where Apache adds none. Both are taken out of the comparison, nothing else."""
    a, r = apache_msg["properties"], rmq_msg["properties"]
    if "REAL_TOPIC" not in a or "REAL_TOPIC" not in r:
        return
    a.pop("DELAY", None)
    r.pop("DELAY", None)
    if "UNIQ_KEY" not in a:
        r.pop("UNIQ_KEY", None)


GET_MAX_OFFSET = 30
STATE_WAIT_S = 10.0


def wait_for_messages(client: RemotingClient, broker: str, event: dict[str, Any]) -> None:
    """Before a pull Apache answered with messages: wait until rmq's queue holds the first of
    them. Messages a delay or a retry re-puts arrive on the server's clock, not the
    replay's (which runs faster than the recording)."""
    if event["code"] != PULL_MESSAGE or (event["response"] or {}).get("code") != 0:
        return
    ext = json.loads(event["header"]).get("extFields") or {}
    fields = {"topic": str(ext["topic"]), "queueId": str(ext["queueId"])}
    needed = int(ext["queueOffset"]) + 1
    deadline = time.monotonic() + STATE_WAIT_S
    while time.monotonic() < deadline:
        resp = client.invoke(broker, GET_MAX_OFFSET, fields)
        if resp.code == 0 and int(resp.ext_fields.get("offset", "0")) >= needed:
            return
        time.sleep(0.02)


def compare(code: int, apache: dict[str, Any], rmq: dict[str, Any]) -> list[str]:
    if code == PULL_MESSAGE and rmq["code"] in SUBSCRIPTION_RACE_CODES.get(apache["code"], ()):
        return []
    if apache["code"] != rmq["code"]:
        return [f"response code: Apache {apache['code']}, rmq {rmq['code']}"]
    problems = []
    missing = sorted(set(apache["extFields"]) - set(rmq["extFields"]))
    if missing:
        problems.append(f"ext fields missing in rmq's answer: {missing}")
    a_body, r_body = apache["body"], rmq["body"]
    if a_body is None:
        return problems
    if r_body is None:
        return [*problems, f"Apache answered with a body ({next(iter(a_body))}), rmq without"]
    kind = next(iter(a_body))
    if kind not in r_body:
        return [*problems, f"body: Apache's is {kind}, rmq's {next(iter(r_body))}"]
    if kind == "messages":
        for a, r in zip(a_body[kind], r_body[kind], strict=False):
            delivered_from_schedule(a, r)
        return problems + compare_messages(a_body[kind], r_body[kind])
    if kind == "json":
        return problems + compare_shapes(a_body[kind], r_body[kind])
    return problems


def replay(path: Path, ns_addr: str, broker_addr: str) -> tuple[int, list[str]]:
    head, events = load(path)
    if head.get("topics"):
        create_topics(broker_addr, head["topics"])
    addrs = {"namesrv": ns_addr, "broker": broker_addr}
    replies: dict[int, dict[int, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if e["kind"] == "server-request" and e.get("reply"):
            replies[e["conn"]][e["code"]].append(e["reply"])
    conns: dict[int, ReplayConnection] = {}
    offsets: dict[int, int] = {}
    side = RemotingClient()
    problems: list[str] = []
    compared = 0
    try:
        for i, e in enumerate(events, start=2):  # line numbers in the file
            conn = e["conn"]
            if e["kind"] == "close":
                if conn in conns:
                    conns.pop(conn).close()
                continue
            if e["kind"] != "request":
                continue
            if conn not in conns:
                conns[conn] = ReplayConnection(addrs[e["server"]], replies[conn])
            if e["server"] == "broker":
                wait_for_messages(side, broker_addr, e)
            header = adapt(e, offsets)
            answer = conns[conn].call(header, unb64(e["body"]), e["oneway"])
            if e["oneway"]:
                continue
            name = f"line {i}: {CODE_NAMES.get(e['code'], e['code'])} ({e['code']})"
            if answer is None:
                problems.append(f"{name}: no answer from rmq in {ANSWER_TIMEOUT_S:.0f} s")
                continue
            try:
                summary = response_summary(e["code"], answer)
            except (FrameError, ValueError) as exc:
                problems.append(f"{name}: unreadable answer: {exc}")
                continue
            apache = e["response"]
            for a, r in zip(apache.get("_offsets", []), summary.get("_offsets", []), strict=False):
                offsets[a] = r
            compared += 1
            if known_difference(e, summary) is not None:
                continue
            problems += [f"{name}: {p}" for p in compare(e["code"], apache, summary)]
    finally:
        for c in conns.values():
            c.close()
        side.close()
    return compared, problems


@pytest.mark.timeout(240)
@pytest.mark.parametrize("flow", FLOWS, ids=[f"{p.parent.name}/{p.stem}" for p in FLOWS])
def test_corpus_replay_matches_apache(flow: Path, rmq_cluster: tuple[str, str]) -> None:
    ns_addr, broker_addr = rmq_cluster
    compared, problems = replay(flow, ns_addr, broker_addr)
    assert compared > 0
    assert not problems, f"{len(problems)} of {compared} answers differ from Apache's:\n" + (
        "\n".join(problems[:40])
    )


def test_corpus_covers_every_family() -> None:
    """Each client family has vectors, and together they cover the flows the corpus is for."""
    families = {p.parent.name for p in FLOWS}
    assert families >= {"java", "go", "node", "cpp"}
    codes = set()
    for path in FLOWS:
        _, events = load(path)
        codes |= {e["code"] for e in events if e["kind"] == "request" and e["response"]}
    names = {CODE_NAMES[c] for c in codes}
    assert names >= {
        "SEND_MESSAGE",
        "SEND_MESSAGE_V2",
        "SEND_BATCH_MESSAGE",
        "PULL_MESSAGE",
        "HEART_BEAT",
        "LOCK_BATCH_MQ",
        "CONSUMER_SEND_MSG_BACK",
        "UPDATE_AND_CREATE_TOPIC",
        "GET_ROUTEINFO_BY_TOPIC",
    }
