"""Re-capture the conformance corpus: real clients against Apache RocketMQ 4.9.7, recorded.

    .venv/bin/python tests/corpus/capture.py [--family java,go,node,cpp] [--keep DIR]

For each flow it starts a fresh Apache nameserver and broker (tests/compat/apache_broker) and
two recording TCP proxies, one in front of each. Clients are pointed at the nameserver's proxy;
the proxy rewrites the broker's address in the nameserver's answers (routes, cluster info) to the
broker proxy's, so every client connection to the broker goes through it too. Each proxy parses
the frames in both directions and pairs requests with Apache's responses by opaque; at the end
the flow is written to ``tests/corpus/<family>/<flow>.jsonl`` in the format ``vectors.py``
describes (events in the order Apache answered them).

The flows: the Java 4.9.8 client's CompatCheck (produce, admin, push and lite-pull consume) and
AdminCheck (orderly, DLQ, stats, connections, reset, broker config) from tests/compat/java; the
Go client's check (tests/compat/go: sync/async/batch sends, tag filter, orderly, retry, delay);
ali-ons's check (tests/compat/node); and the C++-core frames, which are hand-written from
rocketmq-client-cpp's source (no C++-core client can be built here) and sent by
``cpp_frames.py`` as such a client would.

Needs what the compatibility tests need (JDK + Maven, Go, Node + npm) and a built rmq in .venv
(only for its frame-free helpers: the RemotingClient used to create topics and the message
decoder used to summarize pull bodies). Not part of ``make test``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
COMPAT = HERE.parent / "compat"
sys.path[:0] = [str(HERE), str(COMPAT), str(COMPAT / "apache_broker")]

from apache_rocketmq import ApacheRocketMQ  # noqa: E402
from compat_common import create_topics  # noqa: E402
from vectors import Frame, FrameError, b64, read_frame, response_summary  # noqa: E402

CLIENT_TIMEOUT_S = 300


class Recorder:
    """Everything the proxies saw, with a monotonic time for each event."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.next_conn = 0
        self.events: list[dict[str, Any]] = []
        self.pending: dict[tuple[int, int], dict[str, Any]] = {}
        self.server_requests: dict[tuple[int, int], dict[str, Any]] = {}

    def new_conn(self) -> int:
        with self.lock:
            self.next_conn += 1
            return self.next_conn

    def from_client(self, conn: int, server: str, frame: Frame) -> None:
        header = frame.header
        now = time.monotonic()
        with self.lock:
            if frame.is_response:  # the client answering a request of the server
                event = self.server_requests.pop((conn, int(header["opaque"])), None)
                if event is not None:
                    event["reply"] = {
                        "header": frame.header_raw.decode(),
                        "body": b64(frame.body),
                    }
                return
            event = {
                "kind": "request",
                "conn": conn,
                "server": server,
                "code": int(header["code"]),
                "oneway": frame.is_oneway,
                "header": frame.header_raw.decode(),
                "body": b64(frame.body),
                "response": None,
                "_t": now,
            }
            self.events.append(event)
            if not frame.is_oneway:
                self.pending[(conn, int(header["opaque"]))] = event

    def from_server(self, conn: int, frame: Frame) -> None:
        header = frame.header
        now = time.monotonic()
        with self.lock:
            if not frame.is_response:
                event = {
                    "kind": "server-request",
                    "conn": conn,
                    "code": int(header["code"]),
                    "reply": None,
                    "_t": now,
                }
                self.events.append(event)
                self.server_requests[(conn, int(header["opaque"]))] = event
                return
            request = self.pending.pop((conn, int(header["opaque"])), None)
            if request is None:
                return
            request["response"] = response_summary(request["code"], frame)
            request["_t"] = now  # replayed in the order Apache answered

    def closed(self, conn: int) -> None:
        with self.lock:
            self.events.append({"kind": "close", "conn": conn, "_t": time.monotonic()})

    def ordered(self) -> list[dict[str, Any]]:
        with self.lock:
            events = sorted(self.events, key=lambda e: e["_t"])
        out = []
        for e in events:
            if e["kind"] == "request" and e["response"] is None and not e["oneway"]:
                continue  # never answered (a long poll cut short by shutdown): nothing to compare
            out.append({k: v for k, v in e.items() if k != "_t"})
        return out


class Proxy:
    """A recording TCP proxy: listens on 127.0.0.1, forwards to ``upstream``.
    ``rewrite`` maps a server frame's body before it is forwarded (route rewriting)."""

    def __init__(
        self,
        name: str,
        upstream: str,
        recorder: Recorder,
        rewrite: Callable[[bytes], bytes] | None = None,
    ) -> None:
        self.name = name
        self.upstream = upstream
        self.recorder = recorder
        self.rewrite = rewrite
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.addr = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            host, port = self.upstream.rsplit(":", 1)
            server = socket.create_connection((host, int(port)))
            conn = self.recorder.new_conn()
            threading.Thread(
                target=self._pump, args=(client, server, conn, True), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(server, client, conn, False), daemon=True
            ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, conn: int, from_client: bool) -> None:
        try:
            while True:
                frame = read_frame(src)
                if frame is None:
                    break
                if from_client:
                    self.recorder.from_client(conn, self.name, frame)
                else:
                    if self.rewrite is not None and frame.is_response:
                        frame = Frame(frame.header_raw, self.rewrite(frame.body), frame.serialize)
                    self.recorder.from_server(conn, frame)
                dst.sendall(frame.encode())
        except (OSError, FrameError):
            pass
        finally:
            if from_client and not self.closing:
                self.recorder.closed(conn)
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.closing = True
        self.listener.close()


def run(cmd: list[str], cwd: Path | None = None, ok_codes: tuple[int, ...] = (0,)) -> str:
    print("  $", " ".join(cmd), flush=True)
    proc = subprocess.run(
        cmd,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT_S,
        check=False,
    )
    last = proc.stdout.strip().splitlines()[-1:] or ["(no output)"]
    print(f"  exit {proc.returncode}: {last[0][:300]}", flush=True)
    if proc.returncode not in ok_codes:
        print(proc.stderr[-3000:], file=sys.stderr)
        raise RuntimeError(f"{cmd[0]} failed against Apache RocketMQ (exit {proc.returncode})")
    return proc.stdout


# ---- flows: each gets the nameserver proxy's and the broker proxy's address ----------------


def java_produce_consume(ns: str, broker: str, work: Path, real_broker: str) -> dict[str, Any]:
    from run_java_compat import JAR, build_jar

    build_jar()
    run(
        [
            "java",
            "-Xmx512m",
            "-jar",
            str(JAR),
            "--namesrv",
            ns,
            "--topic",
            "corpus_java",
            "--count",
            "120",
            "--timeout",
            "60",
            "--log-dir",
            str(work / "java-logs"),
        ]
    )
    return {"client": "rocketmq-client (Java) 4.9.8, CompatCheck", "topics": []}


def java_admin_orderly(ns: str, broker: str, work: Path, real_broker: str) -> dict[str, Any]:
    from run_java_compat import JAR, build_jar

    build_jar()
    args = [ns, broker, "CorpusAdminTopic", str(work / "java-admin-logs")]
    # AdminCheck expects rmq's refusal of a brokerName change by UPDATE_BROKER_CONFIG; Apache
    # 4.9.7 accepts it, so its "config" check fails here. Every other check must pass.
    out = run(
        ["java", "-Xmx512m", "-cp", str(JAR), "rmq.compat.AdminCheck", *args], ok_codes=(0, 1)
    )
    checks = json.loads(out.strip().splitlines()[-1])["checks"]
    failed = {k: v for k, v in checks.items() if v != "ok" and k != "config"}
    if failed:
        raise RuntimeError(f"AdminCheck failed against Apache RocketMQ: {failed}")
    return {"client": "rocketmq-client (Java) 4.9.8, AdminCheck", "topics": []}


def go_e2e(ns: str, broker: str, work: Path, real_broker: str) -> dict[str, Any]:
    from run_go_compat import PINNED_VERSION, build

    binary = build()
    cmd = [str(binary), "-namesrv", ns, "-broker", broker, "-prefix", "corpus_go"]
    run([*cmd, "-count", "12", "-timeout", "60s", "-log-dir", str(work / "go-logs")])
    return {"client": f"rocketmq-client-go/v2 {PINNED_VERSION}", "topics": []}


def node_e2e(ns: str, broker: str, work: Path, real_broker: str) -> dict[str, Any]:
    from run_node_compat import NODE_DIR, install, topics_for

    install()
    topics = topics_for("corpus_ons")
    create_topics(real_broker, topics)  # setup, not part of the flow
    cmd = ["node", "compat.js", "--namesrv", ns, "--prefix", "corpus_ons", "--count", "12"]
    run(cmd, cwd=NODE_DIR)
    return {"client": "ali-ons 3.12.0", "topics": topics}


def cpp_handwritten(ns: str, broker: str, work: Path, real_broker: str) -> dict[str, Any]:
    import cpp_frames

    create_topics(real_broker, cpp_frames.TOPICS)  # setup, not part of the flow
    cpp_frames.run_flow(ns, broker)
    return {
        "client": "hand-written frames in the C++ core's format (rocketmq-client-cpp "
        "2.x source, see cpp_frames.py); not captured from a running C++ client",
        "topics": cpp_frames.TOPICS,
    }


FLOWS: dict[str, dict[str, Callable[..., dict[str, Any]]]] = {
    "java": {"produce-consume": java_produce_consume, "admin-orderly": java_admin_orderly},
    "go": {"e2e": go_e2e},
    "node": {"e2e": node_e2e},
    "cpp": {"handwritten": cpp_handwritten},
}


def capture_flow(family: str, flow: str, work: Path) -> Path:
    print(f"== {family}/{flow}", flush=True)
    recorder = Recorder()
    with ApacheRocketMQ(work / "apache") as apache:
        broker_proxy = Proxy("broker", apache.broker_addr, recorder)
        real, proxied = apache.broker_addr.encode(), broker_proxy.addr.encode()
        ns_proxy = Proxy(
            "namesrv", apache.namesrv_addr, recorder, lambda b: b.replace(real, proxied)
        )
        fn = FLOWS[family][flow]
        meta = fn(ns_proxy.addr, broker_proxy.addr, work, apache.broker_addr)
        time.sleep(0.5)  # the last answers and closes
        ns_proxy.close()
        broker_proxy.close()
    events = recorder.ordered()
    out = HERE / family / f"{flow}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    head = {
        "flow": f"{family}/{flow}",
        **meta,
        "server": "Apache RocketMQ 4.9.7 (namesrv + broker, tests/compat/apache_broker)",
        "captured": time.strftime("%Y-%m-%d"),
    }
    with out.open("w") as f:
        f.write(json.dumps(head) + "\n")
        for e in events:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    print(f"   {len(events)} events -> {out.relative_to(HERE.parent.parent)}", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default=",".join(FLOWS), help="comma-separated families")
    parser.add_argument("--flow", default="", help="only this flow (name within a family)")
    parser.add_argument("--keep", type=Path, help="keep the servers' work dirs here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="rmq-corpus-"))
    try:
        for family in args.family.split(","):
            for flow in FLOWS[family]:
                if args.flow and flow != args.flow:
                    continue
                work = root / f"{family}-{flow}"
                work.mkdir(parents=True, exist_ok=True)
                capture_flow(family, flow, work)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
