"""TLS options of every rmq client: the SDK's producers and consumers, the admin tool, the
bench and Spark take the same keywords (``tls``, ``tls_ca``, ``tls_cert``, ``tls_key``,
``tls_verify``), gathered here in one hashable value so that clients sharing a native client
instance (``rmq.client._instance``) share its TLS too.

``tls=True`` alone verifies the server against the system's CAs; ``tls_ca`` names the PEM file
of the CA(s) to trust instead; ``tls_verify=False`` trusts any server (RocketMQ's
``tls.test.mode.enable``); ``tls_cert``/``tls_key`` are the client certificate and key for
mutual TLS. As in RocketMQ, the server's certificate is checked against the CA but not against
the host name (brokers are dialled by the IP addresses the nameserver hands out). The
certificates are read, and bad ones reported (:class:`rmq.errors.ConfigError` naming the
option and file), by the native layer (``rmq_remoting::tls``).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

__all__ = ["PLAIN", "TlsOptions", "add_tls_arguments"]


@dataclass(frozen=True, slots=True)
class TlsOptions:
    """One client's TLS settings (``enabled=False``: plain TCP)."""

    enabled: bool = False
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    verify: bool = True

    @classmethod
    def of(
        cls,
        tls: bool = False,
        tls_ca: str | os.PathLike[str] | None = None,
        tls_cert: str | os.PathLike[str] | None = None,
        tls_key: str | os.PathLike[str] | None = None,
        tls_verify: bool = True,
    ) -> TlsOptions:
        """From the SDK's keywords."""

        def path(p: str | os.PathLike[str] | None) -> str | None:
            return None if p is None else os.fspath(p)

        return cls(bool(tls), path(tls_ca), path(tls_cert), path(tls_key), bool(tls_verify))

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> TlsOptions:
        """From the flags of :func:`add_tls_arguments` (a CA, cert or key implies ``--tls``)."""
        enabled = bool(args.tls or args.tls_ca or args.tls_cert or args.tls_key)
        verify = not args.tls_insecure
        return cls.of(enabled, args.tls_ca, args.tls_cert, args.tls_key, tls_verify=verify)

    def as_kwargs(self) -> dict[str, Any]:
        """The SDK's keywords (also those of ``rmq._rmq.RemotingClient`` and
        ``rmq._rmq.ClientInstance``)."""
        return {
            "tls": self.enabled,
            "tls_ca": self.ca,
            "tls_cert": self.cert,
            "tls_key": self.key,
            "tls_verify": self.verify,
        }


PLAIN = TlsOptions()
"""No TLS."""


def add_tls_arguments(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """``--tls``, ``--tls-ca``, ``--tls-cert``, ``--tls-key``, ``--tls-insecure`` (the admin
    tool's and the bench's); ``suppress`` leaves them unset (sub-commands repeating the
    top-level flags)."""

    def d(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    tls = parser.add_argument_group("TLS")
    tls.add_argument("--tls", action="store_true", default=d(False), help="connect over TLS")
    tls.add_argument(
        "--tls-ca",
        metavar="PEM",
        default=d(None),
        help="CA certificate(s) the servers are verified against (default: the system's)",
    )
    tls.add_argument(
        "--tls-cert", metavar="PEM", default=d(None), help="client certificate (mutual TLS)"
    )
    tls.add_argument("--tls-key", metavar="PEM", default=d(None), help="its private key")
    tls.add_argument(
        "--tls-insecure",
        action="store_true",
        default=d(False),
        help="trust any server certificate (RocketMQ's tls.test.mode.enable)",
    )
