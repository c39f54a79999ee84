"""A process serving remoting requests through a Python handler exits cleanly while requests
and connections keep arriving: the I/O runtime's workers never attach to an interpreter that
is finalizing or gone (once, about one exit in five panicked with "The Python interpreter is
not initialized" on a worker that took the GIL just to clone the handler)."""

from __future__ import annotations

import subprocess
import sys
import threading

from rmq import errors
from rmq._rmq import RemotingClient

# Serves until it has answered enough requests, then lets the interpreter exit with the
# server still listening and its connections open.
SERVER = """
import threading
from rmq._rmq import RemotingResponse, RemotingServer

class Handler:
    def __init__(self):
        self.lock = threading.Lock()
        self.answered = 0
        self.enough = threading.Event()

    def handle(self, request):
        with self.lock:
            self.answered += 1
            if self.answered >= 200:
                self.enough.set()
        return RemotingResponse(0, None, {"n": str(self.answered)})

    def on_close(self, connection_id):
        pass

handler = Handler()
server = RemotingServer("127.0.0.1", 0, handler)
print(server.local_addr, flush=True)
handler.enough.wait()
"""

EXITS = 12
CLIENTS = 4


def hammer(addr: str, stop: threading.Event) -> None:
    """Requests on a kept connection, and connections opened and closed, until `stop`."""
    kept = RemotingClient()
    while not stop.is_set():
        try:
            kept.invoke(addr, 105, {"topic": "T"}, None, 1000)
            once = RemotingClient()
            once.invoke_oneway(addr, 105, {"topic": "T"}, None, 1000)
            once.close()
        except errors.RemotingError:
            pass
    kept.close()


def serve_and_exit_under_load() -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    addr = proc.stdout.readline().strip()
    assert addr, proc.communicate()[1]
    stop = threading.Event()
    clients = [threading.Thread(target=hammer, args=(addr, stop)) for _ in range(CLIENTS)]
    for c in clients:
        c.start()
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        stop.set()
        for c in clients:
            c.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_exit_with_live_connections_is_clean() -> None:
    for i in range(EXITS):
        done = serve_and_exit_under_load()
        assert done.returncode == 0, f"exit {i}: code {done.returncode}\n{done.stderr}"
        assert "panicked" not in done.stderr, f"exit {i}:\n{done.stderr}"
        assert "not initialized" not in done.stderr, f"exit {i}:\n{done.stderr}"
        assert "Fatal Python error" not in done.stderr, f"exit {i}:\n{done.stderr}"
