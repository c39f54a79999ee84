"""``python -m rmq.bench baseline``: what the same machine does with no broker at all.

Benchmarks on a shared, noisy VM only mean something as ratios against a baseline measured
in the same run (benches/RESULTS.md's convention). This one is the floor a Python client over
loopback TCP cannot beat: N threads, one connection each, send a length-prefixed frame of
``batch * message_size`` bytes to an echo server in another process (as the broker is) and
wait for it to come back. It shares the stats and the output format with the producer, so
``tps`` here (frames * batch per second) compares directly with the producer's.
"""

from __future__ import annotations

import multiprocessing
import socket
import socketserver
import struct
import threading
import time
from dataclasses import dataclass
from typing import Any

from rmq.bench.stats import LatencySummary, RecorderSet

__all__ = ["BaselineOptions", "run_baseline"]

_LEN = struct.Struct(">I")


@dataclass(frozen=True)
class BaselineOptions:
    threads: int = 4
    message_size: int = 128
    batch_size: int = 1
    duration_s: float | None = 10.0
    count: int | None = None
    progress: bool = True


def _read_exact(sock: socket.socket, view: memoryview) -> bool:
    got = 0
    while got < len(view):
        n = sock.recv_into(view[got:])
        if n == 0:
            return False
        got += n
    return True


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head = bytearray(_LEN.size)
        buf = bytearray(1 << 16)
        while _read_exact(sock, memoryview(head)):
            (size,) = _LEN.unpack(head)
            if size > len(buf):
                buf = bytearray(size)
            body = memoryview(buf)[:size]
            if not _read_exact(sock, body):
                return
            sock.sendall(head + body)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _serve(ports: Any) -> None:
    with _Server(("127.0.0.1", 0), _Echo) as server:
        ports.put(server.server_address[1])
        server.serve_forever()


def run_baseline(opts: BaselineOptions) -> tuple[dict[str, Any], dict[str, LatencySummary]]:
    """Run the echo baseline; returns the summary and the round-trip figures."""
    from rmq.bench._report import Progress, start_workers, wait_workers

    ctx = multiprocessing.get_context("spawn")
    ports = ctx.Queue()
    server = ctx.Process(target=_serve, args=(ports,), name="rmq-bench-echo", daemon=True)
    server.start()
    recorders = RecorderSet(1)
    stop = threading.Event()
    frame_size = opts.message_size * opts.batch_size
    try:
        port = int(ports.get(timeout=30))

        def worker(quota: int | None) -> None:
            rec = recorders.local()
            frame = _LEN.pack(frame_size) + b"x" * frame_size
            reply = memoryview(bytearray(len(frame)))
            clock = time.perf_counter_ns
            with socket.create_connection(("127.0.0.1", port)) as sock:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sent = 0
                while not stop.is_set() and (quota is None or sent < quota):
                    t0 = clock()
                    sock.sendall(frame)
                    if not _read_exact(sock, reply):
                        rec.failure(opts.batch_size, "ConnectionClosed")
                        return
                    rec.success(opts.batch_size, (clock() - t0) // 1000)
                    sent += opts.batch_size

        quotas: list[int | None] = [None] * opts.threads
        if opts.count is not None:
            base, extra = divmod(opts.count, opts.threads)
            quotas = [base + (1 if i < extra else 0) for i in range(opts.threads)]
        threads = [
            threading.Thread(target=worker, args=(q,), name=f"rmq-bench-echo-{i}", daemon=True)
            for i, q in enumerate(quotas)
        ]
        progress = Progress(recorders, "Echo") if opts.progress else None
        interrupted = False
        start = start_workers(threads, progress)
        try:
            wait_workers(threads, start, opts.duration_s)
        except KeyboardInterrupt:
            interrupted = True
        stop.set()
        for t in threads:
            t.join(timeout=5)
        elapsed = time.perf_counter() - start
        if progress is not None:
            progress.stop()
    finally:
        server.terminate()
        server.join(timeout=5)

    totals = recorders.totals()
    summary: dict[str, Any] = {
        "role": "baseline",
        "what": "Python loopback TCP echo, one connection per thread, server in another process",
        "threads": opts.threads,
        "batch_size": opts.batch_size,
        "message_size": opts.message_size,
        **totals.outcome(elapsed, opts.message_size),
        "interrupted": interrupted,
    }
    return summary, {"rt": recorders.merged(0).summary()}
