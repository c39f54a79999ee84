"""Certificates for the TLS tests, made with ``cryptography``: one CA signing a server
certificate (for 127.0.0.1 and localhost) and a client certificate, and a second CA with a
client of its own (a certificate the first CA's servers must refuse). PEM files in a dir."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Pki:
    """The PEM files of one test PKI."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca: Path
    stranger_cert: Path
    stranger_key: Path


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _write_key(key: ec.EllipticCurvePrivateKey, path: Path) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: tuple[str, ec.EllipticCurvePrivateKey] | None,
    *,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    issuer_name, issuer_key = issuer if issuer is not None else (subject, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        builder = builder.add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        names: list[x509.GeneralName] = [x509.DNSName("localhost")]
        if server:
            names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
    return builder.sign(issuer_key, hashes.SHA256())


def make_pki(directory: Path) -> Pki:
    """Write a CA, a server and a client certificate signed by it, and a stranger's CA and
    client certificate into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for ca_name, leaves in (("ca", ("server", "client")), ("other_ca", ("stranger",))):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_cn = f"rmq test {ca_name}"
        out[ca_name] = directory / f"{ca_name}.pem"
        out[ca_name].write_bytes(
            _cert(ca_cn, ca_key, None).public_bytes(serialization.Encoding.PEM)
        )
        for leaf in leaves:
            key = ec.generate_private_key(ec.SECP256R1())
            cert = _cert(f"rmq test {leaf}", key, (ca_cn, ca_key), server=leaf == "server")
            out[f"{leaf}_cert"] = directory / f"{leaf}.pem"
            out[f"{leaf}_cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
            out[f"{leaf}_key"] = directory / f"{leaf}.key"
            _write_key(key, out[f"{leaf}_key"])
    return Pki(**out)
