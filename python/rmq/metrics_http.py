"""The Prometheus exporter's HTTP side (``metricsExporterType = PROM``): ``GET /metrics`` on
``metricsPromExporterHost:metricsPromExporterPort`` answers with the text a ``scrape`` callable
returns (for the broker, ``rmq._rmq.broker_metrics_text``: counters kept in Rust, encoded by
``rmq_broker::metrics``).

Why the standard library's ``ThreadingHTTPServer``: a scrape is one small request every few
seconds, so the server's speed does not matter; the Python process already owns the ports,
the ``tls.server.*`` settings and the nameserver; and no HTTP stack has to be built into the
extension. With ``tls.server.mode`` other than ``disabled`` the port serves HTTPS with the
same certificate, key, key password and client-certificate settings as the remoting port.
"""

from __future__ import annotations

import logging
import resource
import ssl
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from rmq.errors import ConfigError

__all__ = ["CONTENT_TYPE", "MetricsExporter", "process_figures", "tls_context"]

log = logging.getLogger(__name__)

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
"""What ``prometheus-client``'s text encoder writes (OpenMetrics 1.0)."""

_PAGE_SIZE = resource.getpagesize()


def process_figures() -> tuple[float, int]:
    """This process's CPU seconds (user + system) and resident bytes."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            resident = int(f.read().split()[1]) * _PAGE_SIZE
    except (OSError, IndexError, ValueError):
        resident = usage.ru_maxrss * 1024
    return usage.ru_utime + usage.ru_stime, resident


def tls_context(settings: Mapping[str, str]) -> ssl.SSLContext | None:
    """The server context of the ``tls.server.*`` keys, ``None`` when TLS is disabled."""
    if settings.get("tls.server.mode", "disabled") == "disabled":
        return None
    cert = settings.get("tls.server.certPath", "")
    key = settings.get("tls.server.keyPath", "")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        ctx.load_cert_chain(cert, key or None, settings.get("tls.server.keyPassword") or None)
        auth = settings.get("tls.server.need.client.auth", "none")
        if settings.get("tls.server.authClient") == "true":
            auth = "require"
        if auth != "none":
            ctx.verify_mode = ssl.CERT_REQUIRED if auth == "require" else ssl.CERT_OPTIONAL
            ctx.load_verify_locations(settings.get("tls.server.trustCertPath") or None)
    except (OSError, ssl.SSLError, ValueError) as exc:
        raise ConfigError(
            f"the metrics exporter cannot use tls.server.certPath {cert!r} / keyPath {key!r}: "
            f"{exc}; fix the tls.server.* keys or set tls.server.mode = disabled"
        ) from exc
    return ctx


class MetricsExporter:
    """``GET /metrics`` served from a daemon thread until :meth:`shutdown`."""

    def __init__(
        self,
        scrape: Callable[[], str],
        host: str,
        port: int,
        *,
        tls: Mapping[str, str] | None = None,
    ) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self.send_error(404, "only /metrics is served here")
                    return
                body = scrape().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                log.debug("metrics %s: " + format, self.address_string(), *args)

        ctx = tls_context(tls or {})
        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise ConfigError(
                f"the metrics exporter cannot listen on {host}:{port}: {exc.strerror or exc} "
                "(another process uses metricsPromExporterPort? pick a free port, or 0 for any)"
            ) from exc
        if ctx is not None:
            # The handshake runs in the request's thread (on its first read), not in the
            # accepting one, so a slow client holds up no one else.
            self._server.socket = ctx.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._server.daemon_threads = True
        self.scheme = "https" if ctx is not None else "http"
        self.port: int = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-exporter", daemon=True
        )
        self._thread.start()
        log.info("Prometheus metrics on %s://%s:%d/metrics", self.scheme, host, self.port)

    def shutdown(self) -> None:
        """Stop serving and close the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
