"""The console's HTTP side: the static page (``/``, ``/static/...``) and the JSON API of
:mod:`rmq.console.api`, served by the standard library's ``ThreadingHTTPServer`` from a
daemon thread.

Why the standard library: a console serves one operator's page polling every few seconds,
so speed does not matter, and the package keeps its promise of no runtime dependencies.
The page is three files shipped inside the wheel (``static/``), with no build step and
nothing fetched from elsewhere, so it works on a closed network.

Every API answer is JSON: ``{"error": "..."}`` with a status code for failures (400 a bad
parameter, 404 nothing found, 502 a nameserver or broker that did not answer, 500 a bug,
whose traceback goes to the log only). POSTs must be ``application/json``, which a page of
another origin cannot send without a CORS preflight this server never grants, so no other
site can reset offsets through an operator's browser; a console on a loopback address
answers only requests addressed to a loopback name (no DNS rebinding). The
Content-Security-Policy allows only this origin's scripts and styles, as a second guard
against markup in user data (the page also inserts every such string as text).
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from rmq.admin.client import Admin
from rmq.console.api import GET, POST, ApiError
from rmq.errors import (
    ConfigError,
    QueryNotFoundError,
    RemotingError,
    RmqError,
    SubscriptionGroupNotExistError,
    TopicNotExistError,
)

__all__ = ["ConsoleServer"]

log = logging.getLogger(__name__)

MAX_POST_BYTES = 64 * 1024
STATIC_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _static(name: str) -> bytes | None:
    """A file of ``rmq/console/static`` (plain names only), ``None`` if there is none."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    entry = resources.files("rmq.console").joinpath("static").joinpath(name)
    return entry.read_bytes() if entry.is_file() else None


LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def _host_name(host_header: str) -> str:
    """``example.com`` of a Host header ``example.com:8080`` (``::1`` of ``[::1]:8080``)."""
    h = host_header.strip().lower()
    if h.startswith("["):
        return h[1 : h.find("]")] if "]" in h else h
    return h.rsplit(":", 1)[0] if h.count(":") == 1 else h


def _status_of(exc: RmqError) -> int:
    if isinstance(exc, RemotingError):
        return 502
    if isinstance(exc, (QueryNotFoundError, TopicNotExistError, SubscriptionGroupNotExistError)):
        return 404
    return 400 if exc.code is None else 502


class ConsoleServer:
    """The console on ``host:port`` (0: any free port, see :attr:`port`) until
    :meth:`shutdown`; ``admin`` answers every API request (it is shared by the request
    threads: its client is thread-safe)."""

    def __init__(self, admin: Admin, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.admin = admin

        class Handler(_Handler):
            console = self

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise ConfigError(
                f"the console cannot listen on {host}:{port}: {exc.strerror or exc} (another "
                "process uses the port? pick a free one, or 0 for any)"
            ) from exc
        self._server.daemon_threads = True
        self.host = host
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="rmq-console", daemon=True
        )

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def start(self) -> ConsoleServer:
        self._thread.start()
        log.info("web console on %s (nameservers %s)", self.url, ";".join(self.admin.namesrv_addrs))
        return self

    def shutdown(self) -> None:
        """Stop serving and close the port (the admin client stays open: its owner closes it)."""
        self._server.shutdown()
        self._server.server_close()
        if self._thread.is_alive():
            self._thread.join()


class _Handler(BaseHTTPRequestHandler):
    console: ConsoleServer
    server_version = "rmq-console"

    def _host_refused(self) -> bool:
        """A console on a loopback address answers only requests addressed to a loopback
        name: a page of another site that rebinds its DNS name to 127.0.0.1 is refused."""
        if self.console.host.lower() not in LOOPBACK_NAMES and not self.console.host.startswith(
            "127."
        ):
            return False
        name = _host_name(self.headers.get("Host") or "")
        if name in LOOPBACK_NAMES or name.startswith("127.") or name == self.console.host:
            return False
        self._json(403, {"error": f"Host {name!r} is not this console's: open it as localhost"})
        return True

    def do_GET(self) -> None:
        if self._host_refused():
            return
        url = urlsplit(self.path)
        if url.path.startswith("/api/"):
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            self._api(GET, url.path, query)
            return
        name = "index.html" if url.path in ("/", "/index.html") else None
        if url.path.startswith("/static/"):
            name = url.path[len("/static/") :]
        body = _static(name) if name else None
        if body is None:
            self._send(404, "text/plain; charset=utf-8", b"not found\n")
            return
        suffix = name[name.rfind(".") :] if name and "." in name else ""
        self._send(200, STATIC_TYPES.get(suffix, "application/octet-stream"), body)

    def do_POST(self) -> None:
        if self._host_refused():
            return
        url = urlsplit(self.path)
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if ctype != "application/json":
            self._json(415, {"error": "POST a JSON object (Content-Type: application/json)"})
            return
        try:
            length = int(self.headers.get("Content-Length") or "0")
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_POST_BYTES:
            self._json(400, {"error": f"the body must be 0 to {MAX_POST_BYTES} bytes"})
            return
        try:
            params = json.loads(self.rfile.read(length) or b"{}")
        except ValueError as exc:
            self._json(400, {"error": f"the body is not JSON: {exc}"})
            return
        if not isinstance(params, dict):
            self._json(400, {"error": "the body must be a JSON object"})
            return
        query = {
            str(k): "" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in params.items()
        }
        self._api(POST, url.path, query)

    def _api(self, table: dict[str, Any], path: str, query: dict[str, str]) -> None:
        handler = table.get(path)
        if handler is None:
            other = POST if table is GET else GET
            if path in other:
                self._json(405, {"error": f"{path} takes {'POST' if other is POST else 'GET'}"})
            else:
                self._json(404, {"error": f"no API {path}"})
            return
        try:
            data = handler(self.console.admin, query)
        except ApiError as exc:
            self._json(exc.status, {"error": str(exc)})
        except RmqError as exc:
            message = " ".join(str(exc).split()) or type(exc).__name__
            self._json(_status_of(exc), {"error": message})
        except Exception:
            log.exception("console: %s %s failed", self.command, self.path)
            self._json(500, {"error": "internal error of the console (see its log)"})
        else:
            self._json(200, data)

    def _json(self, status: int, data: Any) -> None:
        body = json.dumps(data, ensure_ascii=False, default=str).encode()
        self._send(status, "application/json; charset=utf-8", body)

    def _send(self, status: int, ctype: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in SECURITY_HEADERS.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("console %s: " + format, self.address_string(), *args)
