"""Broker memory per idle connection and per stalled partial frame.

The limits live in ``crates/rmq-remoting/src/budget.rs`` (queued reply bytes, requests in
flight) and ``crates/rmq-remoting/src/server.rs`` (connection limit, idle timeout, frame stall
timeout). This phase measures what they cost a real broker process: its resident set
(``VmRSS`` of ``/proc/PID/status``) before and after opening N idle TCP connections, then
before and after M connections that each send the first bytes of a 16 MiB frame and stop.
A partial frame should hold only the bytes that arrived, not the 16 MiB it announces; after
the stall timeout the broker closes those connections, which this phase checks too.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from chaos.cluster import Broker, Namesrv

# RocketMQ's frame limit (Netty's LengthFieldBasedFrameDecoder(16777216, ...)): the length
# field counts the bytes after itself.
FRAME_BYTES = 16 * 1024 * 1024
STALL_TIMEOUT_S = 30  # crates/rmq-remoting/src/server.rs, ServerConfig::frame_stall_timeout


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _settled_rss(pid: int, seconds: float = 2.0) -> int:
    """RSS once the broker has had ``seconds`` to take in what was just done."""
    time.sleep(seconds)
    return rss_bytes(pid)


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _closed_by_peer(s: socket.socket) -> bool:
    """Whether the broker closed ``s`` (a readable socket with nothing to read), at once."""
    s.setblocking(False)  # with a timeout set, recv would first wait for it
    try:
        return s.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def run(
    work: Path,
    idle_connections: int,
    stalled_frames: int,
    sent_per_frame: int,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    ns = Namesrv(work)
    broker = Broker(work, work / "store", ns.addr, "ASYNC_FLUSH", {})
    opened: list[socket.socket] = []
    try:
        broker.start()
        base = _settled_rss(broker.pid, 3.0)
        progress(f"memory: broker RSS at rest {base / 2**20:.1f} MiB")
        for i in range(idle_connections):
            opened.append(_connect(broker.port))
            if (i + 1) % 500 == 0:
                progress(f"memory: {i + 1}/{idle_connections} idle connections open")
        idle_rss = _settled_rss(broker.pid)
        idle_alive = sum(not _closed_by_peer(s) for s in opened)
        per_idle = (idle_rss - base) / idle_connections
        progress(
            f"memory: {idle_connections} idle connections: RSS +{(idle_rss - base) / 2**20:.1f}"
            f" MiB, {per_idle / 1024:.1f} KiB each; {idle_alive} still open"
        )
        for s in opened:
            s.close()
        opened.clear()
        before_frames = _settled_rss(broker.pid, 3.0)
        head = struct.pack(">II", FRAME_BYTES - 4, 200)  # length, then JSON header length
        chunk = head + b"\x7b" * (sent_per_frame - len(head))
        for _ in range(stalled_frames):
            s = _connect(broker.port)
            s.sendall(chunk)
            opened.append(s)
        frames_rss = _settled_rss(broker.pid)
        per_frame = (frames_rss - before_frames) / stalled_frames
        progress(
            f"memory: {stalled_frames} stalled {FRAME_BYTES >> 20} MiB frames "
            f"({sent_per_frame} bytes sent each): RSS "
            f"+{(frames_rss - before_frames) / 2**20:.1f} MiB, {per_frame / 1024:.1f} KiB each"
        )
        progress(f"memory: waiting {STALL_TIMEOUT_S + 5} s for the frame stall timeout")
        time.sleep(STALL_TIMEOUT_S + 5)
        closed = sum(_closed_by_peer(s) for s in opened)
        after_timeout = rss_bytes(broker.pid)
        progress(f"memory: after the stall timeout {closed}/{stalled_frames} closed by the broker")
        return {
            "rss_at_rest_bytes": base,
            "idle_connections": idle_connections,
            "idle_connections_still_open": idle_alive,
            "rss_with_idle_connections_bytes": idle_rss,
            "bytes_per_idle_connection": round(per_idle),
            "stalled_frames": stalled_frames,
            "frame_announced_bytes": FRAME_BYTES,
            "frame_sent_bytes": sent_per_frame,
            "rss_before_stalled_frames_bytes": before_frames,
            "rss_with_stalled_frames_bytes": frames_rss,
            "bytes_per_stalled_frame": round(per_frame),
            "stalled_closed_by_broker_after_timeout": closed,
            "rss_after_stall_timeout_bytes": after_timeout,
            "stall_log_lines": len(broker.log_lines("a frame stalled")),
        }
    finally:
        for s in opened:
            s.close()
        broker.kill9()
        ns.stop()
